"""What page JavaScript (web/boot.mjs) calls: plain-data conversions around the kernel and the cases.

JS objects arrive as JsProxy and are turned into Python data with their own `to_py()`; results go back
as dicts of bytes, lists and numbers, which the JS side turns into typed arrays. No `js` import here.
"""
from __future__ import annotations

import numpy as np

from . import get_kernel
from .cases import parse_case_file, run_case

INPUTS = ("x", "w", "b")
_cases: list[dict] = []


def _plain(value):
    return value.to_py() if hasattr(value, "to_py") else value


def _split(request) -> tuple[dict, str | None, dict]:
    """A JS request -> (input tensors, forced variant or None, attributes)."""
    request = _plain(request)
    inputs = {name: dict(request.pop(name)) for name in INPUTS if request.get(name) is not None}
    request.pop("b", None)
    variant = request.pop("variant", None)
    return inputs, variant, request


async def open_kernel(kernel_id: str, version: int, revision=None, limits=None):
    return await get_kernel(kernel_id, version=version, revision=revision, limits=_plain(limits))


def device_info(kernel) -> dict:
    """The adapter, its features, the limits the package plans with, and the GPU memory it holds now."""
    caps = kernel.gpu.caps
    return {"vendor": caps.vendor, "architecture": caps.architecture, "device": caps.device,
            "description": caps.description, "is_fallback": caps.is_fallback,
            "features": sorted(caps.features), "limits": dict(caps.limits), "memory": kernel.gpu.memory()}


async def call(kernel, request) -> dict:
    """request: {x: {data, shape[, dtype]}, w: ..., b?: ..., variant?: str, <attribute>: value}."""
    inputs, variant, attributes = _split(request)
    out = await kernel(**inputs, variant=variant, **attributes)
    y = out["y"]
    return {"y": {"data": y.tobytes(), "shape": list(y.shape), "dtype": str(y.dtype)}, "meta": out["meta"]}


def load_cases(text: str) -> list[str]:
    global _cases
    _cases = parse_case_file(text)
    return [case["name"] for case in _cases]


async def run_loaded_case(kernel, index: int, variant=None) -> dict:
    return await run_case(kernel, _cases[index], variant or None)


def reference(request) -> dict:
    """The float64 CPU reference for the page's "check against CPU" button."""
    from .kernel import prepare
    from .reference import conv_transpose_reference

    inputs, _, attributes = _split(request)
    geom, arrays = prepare(**inputs, **attributes)
    y = conv_transpose_reference(geom, arrays["x"], arrays["w"], arrays.get("b"))
    return {"data": y.astype(np.float64).tobytes(), "shape": list(y.shape)}


def preview(request) -> dict:
    """Output shape (or the validation error) for shapes and attributes alone: the page's live preview."""
    from .errors import ConvTransposeError
    from .shapes import infer

    request = _plain(request)
    try:
        geom = infer(request.pop("x_shape"), request.pop("w_shape"), request.pop("b_shape", None), request)
    except ConvTransposeError as exc:
        return {"error": str(exc)}
    return {"y_shape": list(geom.y_shape)}
