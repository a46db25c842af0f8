"""What a kernel holds instead of a raw device: the current Gpu, reopened after a loss, and the caps it
plans with, optionally capped below the device's own limits.

Lowered limits exist so that splitting (app/split.py) can be exercised with tiny tensors: WebGPU's
requestDevice raises any requiredLimits below the spec defaults (128 MiB binding, 256 MiB buffer, 65535
workgroups per dimension) back to them, so a test cannot get a device with smaller ones. Capping the limits
the package plans with is what makes every piece small; the real device's larger limits are never
relied on. No `js` import here: the opener comes from app/__init__.py.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Awaitable, Callable

from .caps import DEFAULT_LIMITS, DeviceCaps
from .errors import ConvTransposeError, GpuError

# The limits a caller may lower (get_kernel(..., limits={...})): the ones the planner splits requests for.
CAPPABLE = ("maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupsPerDimension")


def check_limits(limits) -> dict[str, int]:
    """Validates a caller's limit caps: known names, positive integers. Raises ConvTransposeError."""
    if limits is None:
        return {}
    if not isinstance(limits, dict):
        raise ConvTransposeError(f"limits must be an object of {list(CAPPABLE)} -> integer, got {limits!r}",
                                 field="limits")
    out = {}
    for name, value in limits.items():
        if name not in CAPPABLE:
            raise ConvTransposeError(f"limit {name!r} cannot be capped; cappable: {list(CAPPABLE)}", field="limits")
        minimum = 1 if name == "maxComputeWorkgroupsPerDimension" else 16
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConvTransposeError(f"limit {name!r} must be an integer >= {minimum}, got {value!r}", field="limits")
        out[name] = value
    return out


def capped(caps: DeviceCaps, limits: dict[str, int]) -> DeviceCaps:
    """The device's caps with each given limit lowered to the cap (never raised above the device's)."""
    if not limits:
        return caps
    merged = dict(caps.limits)
    for name, value in limits.items():
        merged[name] = min(int(merged.get(name, DEFAULT_LIMITS[name])), value)
    return replace(caps, limits=merged)


class DeviceHandle:
    """A kernel's device (`kernel.device`): the Gpu it runs on now (`gpu`), reopened after a loss, and the caps
    it plans with (`caps`, capped by `limits`).

    A lost device is noticed at the next call, which opens a new one (through `opener`, shared by every
    kernel) before running. Counters (executions, weight_preparations, largest_buffer) are the Gpu's:
    `kernel.device.gpu.executions`."""

    __slots__ = ("_gpu", "_opener", "limits")  # no shadow attributes: a counter set here would not be the Gpu's

    def __init__(self, gpu, opener: Callable[[], Awaitable], limits: dict[str, int] | None = None):
        self._gpu = gpu
        self._opener = opener
        self.limits = check_limits(limits)

    @property
    def gpu(self):
        """The Gpu held now (app/gpu.py); a lost one until the next `current()`."""
        return self._gpu

    @property
    def caps(self) -> DeviceCaps:
        return capped(self._gpu.caps, self.limits)

    @property
    def executor(self):
        """The executor (web/runtime/executor.mjs) of the Gpu held now: its pipelines, launches and weight caches."""
        return self._gpu.executor

    async def current(self):
        """The live Gpu, reopened when the one held was lost (never the caller's own device: that is theirs)."""
        if self._gpu.lost_reason:
            if self._opener is None:
                raise GpuError(f"the caller's WebGPU device was lost ({self._gpu.lost_reason}); "
                               "get a new kernel with a new device")
            self._gpu = await self._opener()
        return self._gpu

    async def execute(self, plan, geom, inputs):
        """One uncached run of a plan on the live Gpu (app/gpu.py Gpu.execute)."""
        return await (await self.current()).execute(plan, geom, inputs)

    def memory(self) -> dict:
        """GPU memory the package holds on this device, its cache sizes and counters (app/gpu.py Gpu.memory)."""
        return self._gpu.memory()

    def release_caches(self) -> None:
        """Drops every cached launch and pipeline on this device (app/gpu.py Gpu.release_caches)."""
        self._gpu.release_caches()
