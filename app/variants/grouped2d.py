"""Grouped and depthwise 2D ConvTranspose with every stride >= 2, by stride phase: each output pixel
visits only the taps of its phase, found in closed form per axis (no per-tap divisibility test, no
multiplies by inserted zeros). An invocation owns a "cell": the s0 x s1 output pixels (one per phase)
that share an input window. Two forms: one output channel per invocation, and a channel-blocked form
that stages the block's weights in workgroup memory and feeds each gathered input sample to the block.

Strides and dilations are render parameters (every phase-arithmetic division is then by a constant);
so is `window` (every dilation 1 and at most MAX_WINDOW_PHASES phases): the cell's phases then read one
input window together, each sample loaded once for all of them."""
from __future__ import annotations

import math

from ..launch import Launch, Refusal, dispatch, grid
from .base import (WORKGROUP_MEMORY, WORKGROUP_STORAGE, Variant, axis_phase, channel_uniforms, io,
                   workgroup_refusal)

TEMPLATE = "conv-transpose2d-grouped-stride-phase.wgsl.jinja"
BLOCKED_TEMPLATE = "conv-transpose2d-grouped-stride-phase-blocked.wgsl.jinja"
WORKGROUP = 64
BLOCKED_WORKGROUP = 64
BLOCKS = (8, 4, 2, 1)  # output channels per invocation in the blocked form, largest first
MAX_WINDOW_PHASES = 16  # s0*s1 accumulators (per block channel) live at once in the window form
WS_BYTES = 4  # workgroup memory holds f32 weights whatever the storage dtype
CONDITIONS = {"rank": [2], "group": ["grouped"], "min_stride": 2, "input": "nonempty"}


def phase_axes(geom) -> list[list[int]]:
    """Per axis [s, d, g, step, di, inv]: g = gcd(s, d), step = s/g, di = d/g, inv = di^-1 mod step (0 when
    step is 1). Baked into the shaders so the phase arithmetic divides by constants only."""
    return [[s, d, *axis_phase(s, d)] for s, d in zip(geom.strides, geom.dilations)]


def cell_uniforms(geom) -> list[tuple[str, int]]:
    """Per axis: in, out, k, pad, q (the first cell: floor(pad / s)) and cells (how many reach the output).
    Cell q holds the outputs o = q*s + r - pad, 0 <= r < s, one per phase."""
    fields = []
    for a, (i, o, k, s, pb) in enumerate(zip(geom.in_spatial, geom.out_spatial, geom.kernel, geom.strides,
                                             geom.pads_begin)):
        first, last = pb // s, (o - 1 + pb) // s
        fields += [(f"in{a}", i), (f"out{a}", o), (f"k{a}", k), (f"pad{a}", pb), (f"q{a}", first),
                   (f"cells{a}", last - first + 1)]
    return fields


def _cells(geom) -> int:
    return math.prod(dict(cell_uniforms(geom))[f"cells{a}"] for a in range(geom.rank))


def _window(geom) -> bool:
    """Whether the cell's phases share one input window (every dilation 1), read once for all s0*s1 phases;
    the phases' accumulators then live together, so only for small strides."""
    return all(d == 1 for d in geom.dilations) and math.prod(geom.strides) <= MAX_WINDOW_PHASES


def configure(geom, caps) -> Launch:
    items = geom.batch * geom.out_channels * _cells(geom)
    uniforms = channel_uniforms(geom) + cell_uniforms(geom) + [("items", items)]
    params = {"dtype": geom.dtype, "has_bias": geom.has_bias, "workgroup_size": WORKGROUP, "axes": phase_axes(geom),
              "depthwise": geom.in_per_group == 1, "window": _window(geom)}
    workgroups = grid(-(-items // WORKGROUP), caps.limit("maxComputeWorkgroupsPerDimension"))
    return Launch("", "", (dispatch(TEMPLATE, params, *io(geom), uniforms, workgroups),))


def _slab_bytes(geom, block: int) -> int:
    return geom.in_per_group * math.prod(geom.kernel) * block * WS_BYTES


def choose_block(geom, caps) -> int:
    """The largest block that wastes at most a third of the group's channels on padding and whose
    weights fit the device's workgroup memory; 1 when none fits (the variant then refuses)."""
    mg, limit = geom.out_per_group, caps.limit(WORKGROUP_STORAGE)
    for block in BLOCKS:
        waste = -(-mg // block) * block - mg
        if 3 * waste <= mg and _slab_bytes(geom, block) <= limit:
            return block
    return 1


def configure_blocked(geom, caps) -> Launch | Refusal:
    block = choose_block(geom, caps)
    need = _slab_bytes(geom, block)
    refusal = workgroup_refusal(need, caps)
    if refusal:
        return refusal
    width = min(block, 4)
    items = geom.batch * _cells(geom)
    tiles = -(-items // BLOCKED_WORKGROUP)
    blocks = -(-geom.out_per_group // block)
    uniforms = (channel_uniforms(geom) + cell_uniforms(geom)
                + [("items", items), ("group", geom.group), ("blocks", blocks), ("tiles", tiles)])
    params = {"dtype": geom.dtype, "has_bias": geom.has_bias, "workgroup_size": BLOCKED_WORKGROUP,
              "axes": phase_axes(geom), "depthwise": geom.in_per_group == 1, "window": _window(geom),
              "block": block,
              "slab": geom.in_per_group * math.prod(geom.kernel) * (block // width)}
    workgroups = grid(tiles * geom.group * blocks, caps.limit("maxComputeWorkgroupsPerDimension"))
    return Launch("", "", (dispatch(BLOCKED_TEMPLATE, params, *io(geom), uniforms, workgroups),),
                  tiles={"block": block}, workgroup_bytes=need)


def _blocked(bias: bool) -> Variant:
    return Variant(
        name="nchw2d_grouped_stride_phase_blocked" + ("_bias" if bias else ""), templates=(BLOCKED_TEMPLATE,),
        summary="grouped/depthwise 2D, strides >= 2: one invocation per cell of s0 x s1 output pixels (one per "
                "stride phase, taps in closed form) and a block of up to 8 of its group's output channels, the "
                "block's weights staged in workgroup memory; any dilation, pads, output_padding"
                + ("; with bias" if bias else "; without bias"),
        conditions=CONDITIONS | {"bias": bias}, configure=configure_blocked, requires=WORKGROUP_MEMORY)


VARIANTS = (
    Variant(
        name="nchw2d_grouped_stride_phase", templates=(TEMPLATE,),
        summary="grouped/depthwise 2D, strides >= 2: one invocation per output channel and cell of s0 x s1 output "
                "pixels (one per stride phase), each visiting only its phase's taps (first tap and step in closed "
                "form per axis; with unit dilation the phases share one input window); any dilation, pads, "
                "output_padding",
        conditions=dict(CONDITIONS), configure=configure),
    _blocked(False),
    _blocked(True),
)
