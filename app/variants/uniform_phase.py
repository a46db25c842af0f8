"""Every stride phase at once, as one GEMM per group, where the phases are uniform: every kernel dim a multiple of its
stride, dilation 1 (templates/conv-transpose-uniform-phase-gemm.wgsl.jinja says why that makes one GEMM).

rows = out-channels x phases (the weights, read in place: no packing pass), columns = images x input window
positions (x gathered), reduction = taps x in-channels. The other stride-phase GEMMs put the out-channels in the
columns of one GEMM per phase, which idles their tiles and scatters their stores where out-channels are few and
phases many; here the phases fill the rows, and a warp's stores of a column run along y's last axis.
"""
from __future__ import annotations

import math

from ..plan import Plan, Refusal, dispatch, grid
from .base import (INVOCATIONS_LIMIT, WORKGROUP_MEMORY, WORKGROUP_STORAGE, Tunable, Variant, ceil_div, io,
                   loads_split_evenly, padded_depth, workgroup_memory_refusal)

NAME = "uniform_phase_gemm"
TEMPLATE = "conv-transpose-uniform-phase-gemm.wgsl.jinja"
PARAMS = ("tm", "tn", "rm", "rn", "tk")
F32_BYTES = 4  # staged as f32 whatever the storage dtype
# GPU tiles (tm, tn, rm, rn, tk): 128 x 64 of 8 x 4 blocks, or 16 x 128 of 2 x 8 where every row fits 16
# (docs/decisions.md#uniform-phase-tiles).
_GPU = (128, 64, 8, 4, 8)
_GPU_FEW_ROWS = (16, 128, 2, 8, 8)
_CPU = (32, 32, 4, 4, 8)  # few invocations on software adapters, as the other GEMMs' CPU tiles
# No tuning grid in bench.json: its candidates are rendered for the software adapters too, where SwiftShader compiles
# unrolled GPU tiles too slowly; the tuner takes the defaults above (docs/decisions.md#uniform-phase-tiles).


def gemm_rows(geom) -> int:
    """The GEMM's rows: out-channels of a group x stride phases."""
    return geom.out_per_group * math.prod(geom.strides)


def default_tiles(geom, caps) -> dict:
    if caps.is_software:
        return dict(zip(PARAMS, _CPU))
    return dict(zip(PARAMS, _GPU_FEW_ROWS if gemm_rows(geom) <= _GPU_FEW_ROWS[0] else _GPU))


def _threads(t: dict) -> int:
    return (t["tm"] // t["rm"]) * (t["tn"] // t["rn"])


def workgroup_bytes(t: dict) -> int:
    return F32_BYTES * 2 * t["tk"] * (t["tm"] + t["tn"])  # double-buffered A and B steps


def tiles_refusal(t: dict, geom, caps) -> str | None:
    """Why a tile shape breaks the template's invariants or the device's limits (None when it is usable)."""
    if any(not isinstance(t.get(k), int) or t[k] < 1 for k in PARAMS):
        return "tile sizes must be positive integers"
    if t["tm"] % t["rm"] or t["tn"] % t["rn"]:
        return "register blocks must divide the tile"
    if t["rn"] % 4 or t["tn"] % 4:
        return "rn and tn must be multiples of 4 (columns are read as vec4)"
    threads = _threads(t)
    if threads > caps.limit(INVOCATIONS_LIMIT) or threads > caps.limit("maxComputeWorkgroupSizeX"):
        return f"{threads} invocations per workgroup exceed the device's limit"
    if not all(loads_split_evenly(edge, threads, t["tk"]) for edge in (t["tm"], t["tn"])):
        return "each tile edge must be a multiple of the invocation count, or divide it into a factor of tk"
    if workgroup_bytes(t) > caps.limit(WORKGROUP_STORAGE):
        return "the tiles exceed the device's workgroup memory"
    return None


TUNABLE = Tunable(default_tiles, tiles_refusal)


def window_spans(geom) -> list[tuple[int, int]]:
    """Per axis (jo, span): the input window positions jj = (o + pad) // s that some output o takes, jo the first."""
    return [(p // s, (o - 1 + p) // s - p // s + 1)
            for o, s, p in zip(geom.out_spatial, geom.strides, geom.pads_begin)]


def configure(geom, caps, t: dict) -> Plan | Refusal:
    need = workgroup_bytes(t)
    refusal = workgroup_memory_refusal(need, caps)
    if refusal:
        return Refusal(refusal)
    kernel_size, phases = math.prod(geom.kernel), math.prod(geom.strides)
    spans = window_spans(geom)
    rows, cols = gemm_rows(geom), geom.batch * math.prod(span for _, span in spans)
    row_tiles, col_tiles = ceil_div(rows, t["tm"]), ceil_div(cols, t["tn"])
    tiles = geom.group * row_tiles * col_tiles
    axes = []
    for a, (i, o, k, s, p, (jo, span)) in enumerate(zip(geom.in_spatial, geom.out_spatial, geom.kernel, geom.strides,
                                                         geom.pads_begin, spans)):
        axes += [(f"in{a}", i), (f"out{a}", o), (f"k{a}", k), (f"s{a}", s), (f"pad{a}", p), (f"taps{a}", k // s),
                 (f"jo{a}", jo), (f"span{a}", span)]
    uniforms = [("in_channels", geom.in_channels), ("out_channels", geom.out_channels),
                ("in_per_group", geom.in_per_group), ("out_per_group", geom.out_per_group),
                ("kernel_size", kernel_size), ("w_channel", geom.out_per_group * kernel_size), ("phases", phases),
                ("rows", rows), ("cols", cols), ("window", cols // geom.batch), ("taps", kernel_size // phases),
                ("c_chunks", ceil_div(geom.in_per_group, t["tk"])), ("row_tiles", row_tiles),
                ("col_tiles", col_tiles), ("tiles", tiles), ("in_size", math.prod(geom.in_spatial)),
                ("out_size", math.prod(geom.out_spatial))] + axes
    params = {"rank": geom.rank, "dtype": geom.dtype, "has_bias": geom.has_bias} | t
    gemm = dispatch(TEMPLATE, params, *io(geom), uniforms, grid(tiles, caps.limit("maxComputeWorkgroupsPerDimension")),
                    invocations=_threads(t))
    return Plan((gemm,), tiles=t, workgroup_bytes=need, tile_outputs=t["tm"] * t["tn"],
                tile_depth=padded_depth(geom.in_per_group, t["tk"], kernel_size // phases))


VARIANTS = (Variant(
    name=NAME, templates=(TEMPLATE, "_phase-gemm.wgsl.jinja"),
    summary="rank 1-3, dense or grouped, every kernel dim a multiple of its stride, no dilation: every stride "
            "phase in one GEMM per group (rows = out-channels x phases, weights read in place; columns = images x "
            "input window positions; reduction = taps x in-channels), register blocks up to 8x8, double-buffered "
            "steps, stores along y's last axis",
    conditions={"dilation": 1, "kernel_multiple_of_stride": True, "input": "nonempty", "finite_data": True},
    configure=configure, tunable=TUNABLE, requires=WORKGROUP_MEMORY),)
