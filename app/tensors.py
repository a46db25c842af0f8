"""Turns the caller's inputs (numpy arrays or {"data", "shape"[, "dtype"]}) into numpy arrays."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import ConvTransposeError
from .lazy_numpy import np

DTYPES = ("float32", "float16")


@dataclass(frozen=True)
class GpuTensor:
    """A tensor that stays on the GPU: a GPUBuffer (row-major, tightly packed) with its shape and dtype.

    As an input it is bound as it is (it needs GPUBufferUsage.STORAGE and at least the shape's bytes);
    `finite=False` says it may hold NaN or Inf (GPU data is not read back to check; app/finite.py). As an output
    (`output="gpu"`) the caller owns the buffer and destroys it when done."""

    buffer: object
    shape: tuple
    dtype: str = "float32"
    finite: bool = True

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ConvTransposeError(f"GPU tensor: dtype {self.dtype!r} is not supported; allowed: {sorted(DTYPES)}")
        if not isinstance(self.shape, (list, tuple)) or any(
                isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in self.shape):
            raise ConvTransposeError(f"GPU tensor: shape must be a list of non-negative integers, got {self.shape!r}")
        object.__setattr__(self, "shape", tuple(self.shape))


def as_array(name: str, value) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, dict):
        missing = {"data", "shape"} - set(value)
        if missing:
            raise ConvTransposeError(f"input '{name}': missing {sorted(missing)}; give {{'data': [...], 'shape': [...]}}", name)
        shape = value["shape"]
        if not isinstance(shape, (list, tuple)) or any(isinstance(d, bool) or not isinstance(d, int) or d < 0
                                                       for d in shape):
            raise ConvTransposeError(f"input '{name}': shape must be a list of non-negative integers, got {shape!r}", name)
        dtype = value.get("dtype", "float32")
        if dtype not in ("float32", "float16"):
            raise ConvTransposeError(f"input '{name}': dtype {dtype!r} is not supported; allowed: ['float16', 'float32']", name)
        data = value["data"]
        if isinstance(data, np.ndarray) and data.dtype != np.dtype(dtype):
            # one rule in both languages (the JS runtime's tensors): an array carries its dtype, which must be the
            # request's; numbers of another type are never converted silently (a list of numbers is)
            raise ConvTransposeError(f"input '{name}': data is a {data.dtype} array; dtype {dtype!r} takes a {dtype} "
                                     f"array or a list of numbers (allowed: ['float16', 'float32'])", name)
        if isinstance(data, (list, tuple)) and not all(
                isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
                for v in data):
            # numpy would quietly turn None into NaN and "1" into 1.0: a wrong answer, not an error
            bad = next(v for v in data if not isinstance(v, (int, float, np.integer, np.floating))
                       or isinstance(v, (bool, np.bool_)))
            raise ConvTransposeError(f"input '{name}': data must be a flat list of numbers, found {bad!r}", name)
        try:
            flat = np.frombuffer(data, dtype=dtype) if isinstance(data, (bytes, memoryview)) else np.asarray(data, dtype=dtype)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ConvTransposeError(f"input '{name}': data is not a flat list of numbers ({exc})", name) from None
        if flat.ndim != 1:
            raise ConvTransposeError(f"input '{name}': data must be flat (row-major), got {flat.ndim} dimensions", name)
        if flat.size != math.prod(shape):
            raise ConvTransposeError(
                f"input '{name}': data has {flat.size} values but shape {list(shape)} needs {math.prod(shape)}", name)
        return flat.reshape(shape)
    raise ConvTransposeError(f"input '{name}' must be a numpy array or {{'data', 'shape'}}, got {type(value).__name__}", name)
