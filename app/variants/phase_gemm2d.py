"""Rank-2 dense ConvTranspose with strides >= 2 as stride-phase implicit GEMMs, tiled in workgroup memory.

Each stride phase (oh % s0, ow % s1) of the output is a dense GEMM over (in-channel x the phase's taps):
no multiply by a structural zero, unlike gather's per-output tap search, and each loaded value feeds a
register block of outputs. All phases run in one dispatch (the phase is part of the workgroup id).
"""
from __future__ import annotations

import math

from ..plan import Plan, grid
from .base import Variant, dispatch, io_bindings

TEMPLATE = "conv-transpose2d-phase-gemm-tiled.wgsl.jinja"
NAME = "nchw2d_phase_gemm_tiled"
THREAD = 4  # outputs per invocation along rows and along columns (a 4x4 register block)
TILE_K = 16  # reduction steps staged per barrier pair


def _phase_rows(geom) -> int:
    """Rows of the largest phase's GEMM: batch x its output sub-grid."""
    (o0, o1), (s0, s1) = geom.out_spatial, geom.strides
    return geom.batch * -(-o0 // s0) * -(-o1 // s1)


def _fit(size: int) -> int:
    # The smallest of 16/32/64 that holds `size`: small GEMMs waste less of a tile, large ones reuse more.
    return next((t for t in (16, 32) if size <= t), 64)


def tiles(geom) -> dict:
    """Tile sizes for a request (render params). Every combination keeps threads a multiple of both tile
    edges, so each invocation stages a fixed row of A and a fixed column of B."""
    return {"tile_m": _fit(_phase_rows(geom)), "tile_n": _fit(geom.out_channels), "tile_k": TILE_K,
            "thread_m": THREAD, "thread_n": THREAD}


def _workgroup_bytes(geom, caps) -> int:
    t = tiles(geom)
    return 4 * t["tile_k"] * (t["tile_m"] + t["tile_n"])


def _plan(geom, caps) -> Plan:
    t = tiles(geom)
    row_tiles = -(-_phase_rows(geom) // t["tile_m"])
    col_tiles = -(-geom.out_channels // t["tile_n"])
    phases = geom.strides[0] * geom.strides[1]
    total = phases * row_tiles * col_tiles
    uniforms = [("batch", geom.batch), ("in_channels", geom.in_channels), ("out_channels", geom.out_channels)]
    for a in range(2):
        s, d = geom.strides[a], geom.dilations[a]
        step = s // math.gcd(s, d)
        uniforms += [(f"in{a}", geom.in_spatial[a]), (f"out{a}", geom.out_spatial[a]), (f"k{a}", geom.kernel[a]),
                     (f"s{a}", s), (f"d{a}", d), (f"pad{a}", geom.pads_begin[a]), (f"step{a}", step)]
    uniforms += [("row_tiles", row_tiles), ("col_tiles", col_tiles), ("tiles", total)]
    params = {"dtype": geom.dtype, "has_bias": geom.has_bias} | t
    workgroups = grid(total, caps.limit("maxComputeWorkgroupsPerDimension"))
    return Plan("", "", (dispatch(TEMPLATE, params, io_bindings(geom), uniforms, workgroups),))


VARIANTS = (Variant(
    name=NAME, templates=(TEMPLATE,),
    summary="rank-2 dense, strides >= 2: one implicit GEMM per stride phase (rows = batch x the phase's output "
            "sub-grid, cols = out-channels, reduction = in-channels x the phase's taps), all phases in one "
            "dispatch, A/B tiles in workgroup memory, 4x4 outputs per invocation; any pads, output_padding, "
            "dilation; phases no tap reaches get the bias",
    conditions={"rank": [2], "group": ["dense"], "min_stride": 2, "input": "nonempty"},
    plan_passes=_plan, workgroup_bytes=_workgroup_bytes),)
