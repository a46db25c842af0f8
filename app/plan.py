"""A plan: what one call runs on the GPU, decided entirely before any GPU work."""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ConvTransposeError


@dataclass(frozen=True)
class Dispatch:
    """One compute pass: a template rendered with `params`, its buffers in binding order, its grid."""

    template: str
    params: dict
    bindings: tuple[str, ...]  # buffer names in binding order; the uniform buffer comes after them
    uniforms: tuple[tuple[str, int], ...]  # i32 fields of the Params struct, in declaration order
    workgroups: tuple[int, int, int]


@dataclass(frozen=True)
class Plan:
    variant: str
    reason: str
    dispatches: tuple[Dispatch, ...]
    # Intermediate buffers (name -> bytes) that live only for this call.
    scratch: dict = field(default_factory=dict)
    # Weight-side passes (reorders) that fill `prepared` buffers from w. Their results are cached on the
    # device per (prepare_key, weight content), so they run once while the same weights are reused.
    prepare: tuple[Dispatch, ...] = ()
    prepared: dict = field(default_factory=dict)
    prepare_key: str = ""


class DispatchTooLarge(ConvTransposeError):
    """A dispatch past maxComputeWorkgroupsPerDimension even folded into 2D: app/split.py cuts the request."""


def grid(workgroups: int, max_per_dim: int) -> tuple[int, int, int]:
    """Fold a 1D count of workgroups into x*y <= max_per_dim each; kernels guard the tail."""
    if workgroups <= max_per_dim:
        return (max(workgroups, 1), 1, 1)
    rows = -(-workgroups // max_per_dim)
    if rows > max_per_dim:
        raise DispatchTooLarge(f"{workgroups} workgroups do not fit the device's {max_per_dim}^2 dispatch grid")
    return (-(-workgroups // rows), rows, 1)
