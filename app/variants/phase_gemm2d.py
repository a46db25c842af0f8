"""Rank-2 dense ConvTranspose with strides >= 2 as stride-phase implicit GEMMs, tiled in workgroup memory.

Each stride phase (oh % s0, ow % s1) of the output is a dense GEMM: rows = batch x the phase's output
sub-grid, cols = out-channels, reduction = in-channels x the phase's taps. No multiply by a structural zero
(unlike a zero-inserted convolution) and no per-output tap search (unlike gather); every staged value feeds a
register block of outputs. All phases run in one dispatch: the phase is part of the workgroup id (one pass
per phase measured no faster on SwiftShader, and costs a pass each).

Tile shapes (render params) depend on the adapter. SwiftShader (a CPU "fallback" adapter) runs each
4-invocation subgroup of a workgroup with barriers as its own coroutine, and loads 4 lanes at once only
when their addresses are equal or consecutive: there, few invocations with 8x8 register blocks win (about
2x over 4x4 blocks with 64-256 invocations, measured). On GPUs the usual 4x4 blocks and up to 256
invocations per workgroup apply (not measured here).
"""
from __future__ import annotations

from ..plan import Plan, Refusal, dispatch, grid
from .base import (WORKGROUP_MEMORY, WORKGROUP_STORAGE, Tunable, Variant, axis_uniforms, io, loads_split_evenly,
                   max_phase_taps, phase_rows, workgroup_memory_refusal)
TEMPLATE = "conv-transpose2d-phase-gemm-tiled.wgsl.jinja"
NAME = "nchw2d_phase_gemm_tiled"
TILE_K = 16  # reduction steps staged per barrier pair
F32_BYTES = 4  # tiles hold f32 whatever the storage dtype


def _fit(size: int, sizes: tuple[int, ...]) -> int:
    """The smallest tile edge that holds `size`, else the largest: small GEMMs waste less of a tile."""
    return next((t for t in sizes if size <= t), sizes[-1])


def default_tiles(geom, caps) -> dict:
    """Built-in render params for the tile shape. Invariants the template relies on: thread_m | tile_m,
    thread_n | tile_n, tile_n / thread_n a multiple of 4 (a subgroup of 4 shares A rows and reads 4
    consecutive B columns), and the invocation count divides or is a multiple of each tile edge."""
    rows, m = phase_rows(geom), geom.out_channels
    if caps.is_software:
        # Few out-channels get narrow tiles (down to 4 columns, one per invocation of a subgroup): for M = 3
        # that measured 1.6x faster than a 16-wide tile.
        tile_n = _fit(m, (4, 8, 16, 32, 64))
        return {"tile_m": _fit(rows, (16, 32)), "tile_n": tile_n, "tile_k": TILE_K, "thread_m": 8,
                "thread_n": min(8, tile_n // 4)}
    return {"tile_m": _fit(rows, (16, 32, 64)), "tile_n": _fit(m, (16, 32, 64)), "tile_k": TILE_K,
            "thread_m": 4, "thread_n": 4}


def tiles_refusal(t: dict, geom, caps) -> str | None:
    """Why a tile shape breaks the template's invariants or the device's limits (None when it is usable)."""
    if any(not isinstance(t.get(k), int) or t[k] < 1 for k in ("tile_m", "tile_n", "tile_k", "thread_m", "thread_n")):
        return "tile sizes must be positive integers"
    if t["tile_m"] % t["thread_m"] or t["tile_n"] % t["thread_n"]:
        return "thread blocks must divide the tile"
    if (t["tile_n"] // t["thread_n"]) % 4:
        return "tile_n / thread_n must be a multiple of 4"
    threads = (t["tile_m"] // t["thread_m"]) * (t["tile_n"] // t["thread_n"])
    if threads > caps.limit("maxComputeInvocationsPerWorkgroup") or threads > caps.limit("maxComputeWorkgroupSizeX"):
        return f"{threads} invocations per workgroup exceed the device's limit"
    if not all(loads_split_evenly(edge, threads, t["tile_k"]) for edge in (t["tile_m"], t["tile_n"])):
        return "the invocation count must divide or be a multiple of each tile edge"
    if F32_BYTES * t["tile_k"] * (t["tile_m"] + t["tile_n"]) > caps.limit(WORKGROUP_STORAGE):
        return "the tiles exceed the device's workgroup memory"
    return None


TUNABLE = Tunable(default_tiles, tiles_refusal)


def configure(geom, caps, t: dict) -> Plan | Refusal:
    need = F32_BYTES * t["tile_k"] * (t["tile_m"] + t["tile_n"])
    refusal = workgroup_memory_refusal(need, caps)
    if refusal:
        return Refusal(refusal)
    row_tiles = -(-phase_rows(geom) // t["tile_m"])
    col_tiles = -(-geom.out_channels // t["tile_n"])
    total = geom.strides[0] * geom.strides[1] * row_tiles * col_tiles
    uniforms = ([("batch", geom.batch), ("in_channels", geom.in_channels), ("out_channels", geom.out_channels)]
                + axis_uniforms(geom) + [("row_tiles", row_tiles), ("col_tiles", col_tiles), ("tiles", total)])
    params = {"dtype": geom.dtype, "has_bias": geom.has_bias} | t
    workgroups = grid(total, caps.limit("maxComputeWorkgroupsPerDimension"))
    invocations = (t["tile_m"] // t["thread_m"]) * (t["tile_n"] // t["thread_n"])
    # its last chunk of in-channels is short, not padded (the template multiplies only what it staged)
    return Plan((dispatch(TEMPLATE, params, *io(geom), uniforms, workgroups, invocations=invocations),), tiles=t,
                workgroup_bytes=need, tile_outputs=t["tile_m"] * t["tile_n"],
                tile_depth=geom.in_per_group * max_phase_taps(geom))


VARIANTS = (Variant(
    name=NAME, templates=(TEMPLATE, "_phase-axis.wgsl.jinja"),
    summary="rank-2 dense, strides >= 2: one implicit GEMM per stride phase (rows = batch x the phase's output "
            "sub-grid, cols = out-channels, reduction = in-channels x the phase's taps), all phases in one "
            "dispatch, A/B tiles in workgroup memory, a register block of outputs per invocation; any pads, "
            "output_padding, dilation; phases that no tap reaches get the bias",
    conditions={"rank": [2], "group": ["dense"], "min_stride": 2, "input": "nonempty", "finite_data": True},
    configure=configure, tunable=TUNABLE, requires=WORKGROUP_MEMORY),)
