"""The seed package's variant names, kept as real variants: each is the instantiation of the successor that
took over its job, with the seed's own conditions added (rank, bias, channels) and its own summary.

A seed variant is its successor with more conditions: the same templates, tiles and configure, so that
where it applies its plan has the successor's passes and shaders exactly (only the name differs). The
planner (app/planner.py) reports the seed name in place of its successor wherever the seed's variant makes
the same plan, so meta.variant names the seed's kernel wherever it covers the request.

- ncdhw3d_implicit_sgmat(_bias): the seed's 3D stride-1 implicit GEMM on subgroup matrices staged every
  tap's x window again; stride1_halo_sgmat stages x once per chunk of in-channels as a halo and serves
  ranks 1-3. The seed's names are its rank-3 instantiation, without and with bias.
- nchw2d_grouped_stride_phase_blocked(_bias): the seed's channel-blocked 2D grouped stride-phase kernel;
  nchw2d_grouped_stride_phase with `chans` > 1 output channels per invocation took its job. The seed's
  names are that kernel where its params make channel blocks, without and with bias.
"""
from __future__ import annotations

from dataclasses import replace

from ..plan import Refusal
from . import grouped, halo_sgmat
from .base import Tunable, Variant

# What the seed's variants covered beyond their successors' conditions (the seed's metadata.json).
SEED_SGMAT = {"rank": [3], "min_in_per_group": 8, "min_out_per_group": 8}
SEED_BLOCKED = {"rank": [2]}


def _successor(module, name: str) -> Variant:
    return next(v for v in module.VARIANTS if v.name == name)


def _with_channel_blocks(configure):
    """The grouped kernel's configure, refusing the plans of one output channel per invocation: the seed's
    blocked kernel always worked on blocks of a group's channels."""
    def configure_blocked(*args):
        plan = configure(*args)
        if isinstance(plan, Refusal) or plan.tiles["chans"] > 1:
            return plan
        return Refusal("makes no channel blocks here: its params give one output channel per invocation "
                       "(chans 1: nchw2d_grouped_stride_phase)")
    return configure_blocked


def _blocking_defaults(tunable: Tunable) -> Tunable:
    """The grouped kernel's params, with a channel block where a software adapter's defaults have none.

    On GPUs the successor's defaults block wherever they pay (4 channels of a 2D cell, measured on the H200),
    and the seed's names take exactly those plans, so the planner's choice is unchanged. Software adapters'
    defaults never block (SIMD lanes of CPU threads favour fewer, longer invocations: the seed's blocked
    kernel was dropped for being slower on SwiftShader), so there, where the planner never takes the seed's
    names (the rule is for GPUs), a caller who forces one gets the smallest block that fits."""
    def defaults(geom, caps) -> dict:
        params = tunable.defaults(geom, caps)
        if params["chans"] > 1 or not caps.is_software:
            return params
        blocks = (params | {"chans": chans} for chans in (2, 4))
        return next((p for p in blocks if tunable.refusal(p, geom, caps) is None), params)
    return replace(tunable, defaults=defaults)


def _seed(successor: Variant, name: str, summary: str, conditions: dict, **changes) -> Variant:
    return replace(successor, name=name, summary=summary, conditions=successor.conditions | conditions,
                   tuned_as=successor.name, **changes)


HALO = _successor(halo_sgmat, "stride1_halo_sgmat")
GROUPED_2D = _successor(grouped, "nchw2d_grouped_stride_phase")

_SGMAT = ("3D, every stride 1, at least 8 input and 8 output channels per group: implicit GEMM on subgroup "
          "matrices (matrix shape and component type from the device's configurations), x staged in workgroup "
          "memory once per chunk of in-channels as a halo that every tap's matrices read: stride1_halo_sgmat "
          "at rank 3")
_BLOCKED = ("grouped/depthwise 2D, strides >= 2: one invocation per cell of s0 x s1 output pixels (one per stride "
            "phase, taps unrolled from tables made at render time) and a block of `chans` (2 or 4) of its group's "
            "output channels sharing every input window it loads; any dilation, pads, output_padding: "
            "nchw2d_grouped_stride_phase where its params make channel blocks")

VARIANTS = (
    _seed(HALO, "ncdhw3d_implicit_sgmat", _SGMAT + ", without bias", SEED_SGMAT | {"bias": False}),
    _seed(HALO, "ncdhw3d_implicit_sgmat_bias", _SGMAT + ", bias fused", SEED_SGMAT | {"bias": True}),
    _seed(GROUPED_2D, "nchw2d_grouped_stride_phase_blocked", _BLOCKED + "; without bias",
          SEED_BLOCKED | {"bias": False}, configure=_with_channel_blocks(GROUPED_2D.configure),
          tunable=_blocking_defaults(GROUPED_2D.tunable)),
    _seed(GROUPED_2D, "nchw2d_grouped_stride_phase_blocked_bias", _BLOCKED + "; with bias",
          SEED_BLOCKED | {"bias": True}, configure=_with_channel_blocks(GROUPED_2D.configure),
          tunable=_blocking_defaults(GROUPED_2D.tunable)),
)
