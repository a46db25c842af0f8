"""ONNX ConvTranspose on WebGPU, driven from Python (Pyodide in the browser, or Node with Dawn).

    kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
    out = await kernel(x=x, w=w, b=None, strides=[2, 2])   # out["y"]: numpy array, out["meta"]: variant, time
"""
from __future__ import annotations

from . import contract
from .errors import ConvTransposeError, GpuError, KernelNotFoundError

__all__ = ["get_kernel", "ConvTransposeError", "GpuError", "KernelNotFoundError"]

_gpu = None
_opening = None  # the lock that makes concurrent first calls (or calls after a loss) open one device


async def _shared_gpu():
    global _gpu, _opening
    if _opening is None:
        import asyncio

        _opening = asyncio.Lock()
    async with _opening:
        if _gpu is None or _gpu.lost_reason:
            from .gpu import Gpu  # the only import of the js layer, deferred so CPython can use the rest

            _gpu = await Gpu.open()
    return _gpu


async def get_kernel(kernel_id: str, version: int = 1, revision: str | None = None, limits: dict | None = None,
                     device=None, autotune: bool = False, autotune_store=None, autotune_budget_ms: float | None = None):
    """The kernel. `device`: the caller's GPUDevice (its features and limits are what the kernel plans with;
    GPU-resident tensors must live on it); without it, one device the package opens and shares.
    `limits` caps the device limits the package plans with (names in app.device.CAPPABLE): requests past
    them are split into pieces (app/split.py); tests use it to split tiny tensors.
    `autotune`: each signature's first call times the candidates the cost model ranks first and keeps the fastest
    (app/autotune.py), remembered in `autotune_store` (async get/set of JSON text; default: this session's
    memory, in JS IndexedDB or a JSON file), searching at most `autotune_budget_ms` per signature."""
    if kernel_id != contract.kernel_id():
        raise KernelNotFoundError(f"unknown kernel {kernel_id!r}; this package provides {contract.kernel_id()!r}")
    if version != contract.contract_version():
        raise KernelNotFoundError(
            f"kernel {kernel_id!r} has contract version {contract.contract_version()}, not {version!r}")
    if revision is not None:
        from .metadata import recorded

        if revision != recorded()["revision"]:
            raise KernelNotFoundError(
                f"revision {revision!r} does not match this package's revision {recorded()['revision']!r}")
    from .device import DeviceHandle, check_limits
    from .kernel import ConvTransposeKernel

    check_limits(limits)
    tuner = None
    if autotune:
        from .autotune import BUDGET_MS, Autotuner, MemoryStore

        tuner = Autotuner(autotune_store if autotune_store is not None else MemoryStore(),
                          BUDGET_MS if autotune_budget_ms is None else autotune_budget_ms)
    if device is not None:
        return ConvTransposeKernel(DeviceHandle(_adopted(device), None, limits), tuner)
    return ConvTransposeKernel(DeviceHandle(await _shared_gpu(), _shared_gpu, limits), tuner)


_adopted_gpus: list = []  # (GPUDevice, Gpu): kernels on the same caller device share one executor


def _adopted(device):
    from .gpu import Gpu

    for known, gpu in _adopted_gpus:
        if known == device and not gpu.lost_reason:
            return gpu
    gpu = Gpu.adopt(device)
    _adopted_gpus[:] = [(d, g) for d, g in _adopted_gpus if not g.lost_reason] + [(device, gpu)]
    return gpu
