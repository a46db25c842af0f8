"""A plan: everything one call runs on the GPU, resolved in Python before any GPU work.

A variant's pure `configure(geometry, caps, params)` returns a `Plan` (its tiles, workgroup bytes,
intermediate buffers and dispatches) or a `Refusal`; `Variant.configured` (app/variants/base.py), the one
door to a variant, fills in the variant's name, the planner's reason and the finite-data policy
(app/finite.py), so that the GPU layer (app/gpu.py) needs nothing but the plan. Each `Dispatch` is declared
once, by `dispatch()`: the buffers it reads and writes (binding order) and its i32 uniforms. The same
declaration becomes the render parameters of the shared template prelude (templates/_bindings.wgsl.jinja:
the Params struct and every @binding) and the names the executor binds by (`Dispatch.bindings`), so a
shader and its bindings cannot disagree.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ConvTransposeError

# Binding types that are not an array of the storage dtype T (declared once, for every template).
BUFFER_TYPES = {
    "cols": "array<f32>",  # GEMM + col2im's column buffer: f32 whatever the storage dtype
    "data": "array<u32>",  # the non-finite check reads any input as raw words
    "flag": "atomic<u32>",  # ... and sets one flag
    "parts": "array<f32>",  # split-K GEMMs' partial outputs: f32, summed again before rounding to T
    "wp": "array<vec4<T>>",  # weights packed for the stride-phase GEMMs: vec4 rows of out-channels
    "wt": "array<vec4<f32>>",  # the grouped kernel's weights: f32 rows of taps, padded to vec4s
}


@dataclass(frozen=True)
class Dispatch:
    """One compute pass: a template rendered with `render_params`, its buffers in binding order, its grid.
    (A variant's tile `params` are one part of its passes' render_params.)"""

    template: str
    render_params: dict  # the template's arguments, the prelude's `bindings` and `uniform_fields` included
    bindings: tuple[str, ...]  # buffer names in binding order; the uniform buffer comes after them
    uniforms: tuple[tuple[str, int], ...]  # i32 fields of the Params struct, in declaration order
    workgroups: tuple[int, int, int]
    # A workgroup's invocations, as the pass declares them (what its template's @workgroup_size renders to; the
    # cost model reads it here, tests/test_plan_invocations.py holds the two equal).
    invocations: int


def bindings_params(reads, writes, uniform_fields, types: dict | None = None) -> dict:
    """The prelude's render parameters for a pass that reads `reads` and writes `writes` (binding order:
    reads, then writes, then the uniforms); `types` overrides a binding's type for this pass (a vector view
    of y for wide stores)."""
    types = BUFFER_TYPES | (types or {})
    return {"bindings": [[n, "read", types.get(n, "array<T>")] for n in reads]
                        + [[n, "read_write", types.get(n, "array<T>")] for n in writes],
            "uniform_fields": list(uniform_fields)}


def dispatch(template: str, render_params: dict, reads, writes, uniforms: list[tuple[str, int]],
             workgroups: tuple[int, int, int], types: dict | None = None, invocations: int | None = None) -> Dispatch:
    """A pass declared once: the template's bindings and Params come from the same lists the executor binds.
    `invocations`: a workgroup's, where the render params do not name them as `workgroup_size`."""
    reads, writes = tuple(reads), tuple(writes)
    if invocations is None:
        invocations = render_params["workgroup_size"]
    return Dispatch(template, render_params | bindings_params(reads, writes, [n for n, _ in uniforms], types),
                    reads + writes, tuple(uniforms), workgroups, invocations)


@dataclass(frozen=True)
class Plan:
    """What Python planned for one request: a variant's passes and buffers, with who planned them and why.
    A variant's configure gives the passes and buffers; Variant.configured fills in the rest."""

    dispatches: tuple[Dispatch, ...]
    # Intermediate buffers (name -> bytes) that live only for this call.
    scratch: dict = field(default_factory=dict)
    # Weight-side passes (reorders) that fill `prepared` buffers from w. The executor keeps their results
    # in the launch while the same constant weights come back, so they run once per weight content.
    weight_passes: tuple[Dispatch, ...] = ()
    prepared: dict = field(default_factory=dict)
    tiles: dict = field(default_factory=dict)  # the resolved shape params (forced, tuned or built-in)
    workgroup_bytes: int = 0  # workgroup memory the largest pass declares
    # The main pass as tiles, for the cost model (app/cost_model.py computed_madds): the outputs one workgroup
    # computes, tile padding included, and the multiply-adds each of them runs, its share of the reduction padded to
    # whole steps (a step of 8 in-channels reduces a depthwise layer's one in 8). 0: the model counts the layer's
    # multiply-adds and y's outputs (the grouped kernels declare none).
    tile_outputs: int = 0
    tile_depth: int = 0
    variant: str = ""
    reason: str = ""
    # The finite-data policy (app/finite.py): whether the variant is exact only on finite x and w, and the
    # inputs the GPU scans for NaN or Inf before a call on CPU data (empty when it is exact on any data).
    finite_only: bool = False
    scanned: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refusal:
    """A variant that does not cover a request on this device; `why_not` says why, in words (completes
    "it ..."). A Plan's `reason` is the other side: why the planner chose it."""

    why_not: str


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
