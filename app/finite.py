"""The finite-data policy, Python side, in one place.

Some kernels multiply zeros padded into their tiles (absent taps, positions outside x): IEEE arithmetic
turns a NaN or an Inf of the other factor into a NaN that the real products would not produce. So:
- a request is finite when x and w hold only finite values (`INPUTS`; b is added once per output, any
  value is exact there): numpy inputs are checked here (`all_finite`), GPU-resident ones are taken at their
  `GpuTensor.finite` flag, as their data is not read back (`request_finite`);
- a variant that declares the `finite_data` condition (app/variants/base.py CONDITIONS) covers only finite
  requests; `policy` gives its plan (app/plan.py Plan) whether it is exact only on finite data and which
  inputs the GPU must scan for NaN or Inf during a call on CPU data (the executor flags a hit, and the JS
  front reruns the call as non-finite, on a variant exact on any data);
- a request's finiteness is part of its geometry (`ConvGeometry.finite_data`, set by `marked`) and so of
  every cache key.
"""
from __future__ import annotations

from dataclasses import replace

from .lazy_numpy import np
from .tensors import GpuTensor

INPUTS = ("x", "w")  # the inputs whose NaN or Inf a padding-multiplying kernel would spread
CONDITION = "finite_data"  # the coverage condition of variants exact only on finite data


def all_finite(arrays: dict[str, np.ndarray]) -> bool:
    """Whether the host arrays among INPUTS hold only finite numbers."""
    return all(bool(np.isfinite(arrays[name]).all()) for name in INPUTS if name in arrays)


def request_finite(arrays: dict) -> bool:
    """Whether a request's inputs (numpy arrays or GpuTensors) count as finite."""
    resident = all(a.finite for n, a in arrays.items() if isinstance(a, GpuTensor) and n in INPUTS)
    return resident and all_finite({n: a for n, a in arrays.items() if not isinstance(a, GpuTensor)})


def marked(geom, finite: bool):
    """The geometry with the request's finiteness (geometries start finite)."""
    return geom if finite else replace(geom, finite_data=False)


def policy(conditions: dict, unsafe: tuple[str, ...]) -> tuple[bool, tuple[str, ...]]:
    """(exact only on finite data, inputs to scan before a call on CPU data) of a variant that declares
    `conditions` and would turn a NaN or Inf of `unsafe` into wrong values."""
    finite_only = bool(conditions.get(CONDITION))
    return finite_only, tuple(unsafe) if finite_only else ()
