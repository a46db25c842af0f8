"""The callable kernel: request -> validated geometry -> plan -> GPU -> numpy result."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from . import contract, planner
from .errors import ConvTransposeError
from .shapes import ConvGeometry, infer
from .split import run_pieces, split
from .tensors import all_finite, as_array


def prepare(x, w, b=None, **attributes) -> tuple[ConvGeometry, dict[str, np.ndarray]]:
    """Validates a request (no GPU involved) and returns its geometry and the input arrays."""
    arrays = {"x": as_array("x", x), "w": as_array("w", w)}
    if b is not None:
        arrays["b"] = as_array("b", b)
    geom = infer(arrays["x"].shape, arrays["w"].shape, arrays["b"].shape if b is not None else None,
                 attributes, {name: str(arr.dtype) for name, arr in arrays.items()})
    if not all_finite(arrays):  # NaN or Inf in x or w: only variants whose every product is a real one
        geom = replace(geom, finite_data=False)
    return geom, {name: np.ascontiguousarray(arr) for name, arr in arrays.items()}


class ConvTransposeKernel:
    """`await kernel(x=..., w=..., b=None, variant=None, **attributes)` -> {"y": ndarray, "meta": {...}}."""

    def __init__(self, gpu):
        self.gpu = gpu

    def plan(self, geom: ConvGeometry, variant: str | None = None):
        missing = [f for f in contract.dtype_features()[geom.dtype] if not self.gpu.caps.has(f)]
        if missing:
            raise ConvTransposeError(f"dtype {geom.dtype} needs the device feature(s) {missing}, which this adapter lacks")
        return planner.plan(geom, self.gpu.caps, variant)

    async def __call__(self, x, w, b=None, variant: str | None = None, **attributes) -> dict:
        geom, arrays = prepare(x, w, b, **attributes)
        # Past the device's buffer or dispatch limits the request runs as pieces (app/split.py).
        pieces = split(geom, self.gpu.caps, lambda piece: self.plan(piece, variant))
        plan = pieces[0][1]
        meta = {"variant": plan.variant, "reason": plan.reason, "gpu_ms": None, "y_shape": list(geom.y_shape),
                "pieces": len(pieces)}
        if geom.y_size == 0:
            return {"y": np.zeros(geom.y_shape, dtype=geom.dtype), "meta": meta | {"variant": "none (empty output)"}}
        y, meta["gpu_ms"] = await run_pieces(self.gpu, geom, arrays, pieces)
        return {"y": y, "meta": meta}
