"""Every dense or grouped ConvTranspose of rank 1-3 as implicit GEMMs, one per (group, stride phase), in one
dispatch (templates/conv-transpose-phase-gemm.wgsl.jinja), after a cached pass that packs the weights.

Per stride phase the outputs form a dense sub-grid that exactly the phase's taps reach, so the GEMM has no
zero multiplies and no per-output tap search: rows = batch x the phase's sub-grid, cols = out-channels of
the group, reduction = in-channels x the phase's taps. Stride 1 is one phase with every tap and a 1x1
kernel one tap, so this one kernel serves what a phase GEMM, an implicit stride-1 GEMM and a 1x1 GEMM do,
in every rank.

The tile shape is the GPU's business: big tiles (128 x 128, 8 x 8 per invocation) where the GEMM has
rows and columns to fill a GPU several times, smaller ones where it does not, and a reduction split among
slices of the workgroup (ks) where even small tiles leave the GPU idle but the reduction is long.
"""
from __future__ import annotations

import math

from .. import tuning_tables
from ..launch import Launch, Refusal, dispatch, grid
from .base import (DTYPE_BYTES, WORKGROUP_MEMORY, WORKGROUP_STORAGE, Tunable, Variant, axis_uniforms,
                   phase_rows, phase_taps, workgroup_refusal)

NAME = "phase_gemm"
TEMPLATE = "conv-transpose-phase-gemm.wgsl.jinja"
PACK = "conv-transpose-weight-pack.wgsl.jinja"
SHARED = ("_phase-gemm.wgsl.jinja", "_phase-axis.wgsl.jinja")  # included by both GEMM templates
PACK_WORKGROUP = 256
INVOCATIONS = "maxComputeInvocationsPerWorkgroup"
PARAMS = ("tm", "tn", "rm", "rn", "tk", "ks")

# Tile shapes (tm, tn, rm, rn, tk, ks), from a sweep of every combination of tm, tn in {64, 128}, rm in {4, 8},
# rn 8, tk in {8, 16} over bench.json's `large` tier on an H200 (docs/h200/large/): 8x8 register blocks won
# everywhere; columns sized to the out-channels (64 wide up to 64 of them: wider tiles idled half their
# invocations, 1.5-2x slower); 128 x 128 with short steps when that still makes 256 workgroups, else 64 x 128
# with long steps (within 10% of the best on every case). An output too small to fill the GPU even so, with
# a long reduction (a DCGAN head: 4096 in-channels x taps), splits the reduction among 8 slices of the
# workgroup: 0.08 ms against 0.20 unsplit. Software adapters run few, small invocations best (SwiftShader
# compiles each unrolled multiply, and runs a workgroup's invocations as fibers on a few cores).
_GPU_NARROW = (128, 64, 8, 8, 16, 1)
_GPU_WIDE = (128, 128, 8, 8, 8, 1)
_GPU_WIDE_FEW = (64, 128, 8, 8, 16, 1)
_GPU_SPLIT = (16, 32, 4, 4, 8, 8)
_CPU_SHAPE = (32, 32, 4, 4, 8, 1)
FILL = 256  # workgroups for the largest tiles: about two per multiprocessor of a large GPU (an H200 has 132)
SPLIT_BELOW = 64  # workgroups under which a long reduction is split
SPLIT_DEPTH = 1024  # reduction length from which splitting it among slices pays


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def workgroup_count(geom, t: dict) -> int:
    return (geom.group * math.prod(geom.strides) * _ceil(phase_rows(geom), t["tm"])
            * _ceil(geom.out_per_group, t["tn"]))


def default_tiles(geom, caps) -> dict:
    if caps.is_software:
        return dict(zip(PARAMS, _CPU_SHAPE))
    if geom.out_per_group <= 64:
        t = dict(zip(PARAMS, _GPU_NARROW))
    else:
        t = dict(zip(PARAMS, _GPU_WIDE))
        if workgroup_count(geom, t) < FILL:
            t = dict(zip(PARAMS, _GPU_WIDE_FEW))
    split = dict(zip(PARAMS, _GPU_SPLIT))
    if (workgroup_count(geom, t) < SPLIT_BELOW and geom.in_per_group * phase_taps(geom) >= SPLIT_DEPTH
            and tiles_refusal(split, geom, caps) is None):
        return split
    return t


def _threads(t: dict) -> int:
    return (t["tm"] // t["rm"]) * (t["tn"] // t["rn"]) * t["ks"]


def workgroup_bytes(t: dict) -> int:
    steps = 2 * t["tk"] * t["ks"]  # double-buffered reduction steps of every slice
    return 4 * steps * (t["tm"] + t["tn"]) + (4 * t["ks"] * t["tm"] * t["tn"] if t["ks"] > 1 else 0)


def tiles_refusal(t: dict, geom, caps) -> str | None:
    """Why a tile shape breaks the template's invariants or the device's limits (None when it is usable)."""
    if any(not isinstance(t.get(k), int) or t[k] < 1 for k in PARAMS):
        return "tile sizes must be positive integers"
    if t["tm"] % t["rm"] or t["tn"] % t["rn"]:
        return "register blocks must divide the tile"
    if t["rn"] % 4:
        return "rn must be a multiple of 4 (columns are read as vec4)"
    threads = _threads(t)
    if threads > caps.limit(INVOCATIONS) or threads > caps.limit("maxComputeWorkgroupSizeX"):
        return f"{threads} invocations per workgroup exceed the device's limit"
    if threads % t["tm"] and t["tm"] % threads:
        return "the invocation count must divide or be a multiple of tm"
    if threads > t["tm"] and (t["tk"] * t["ks"]) % (threads // t["tm"]):
        return "tk * ks must be a multiple of invocations / tm"
    if workgroup_bytes(t) > caps.limit(WORKGROUP_STORAGE):
        return "the tiles exceed the device's workgroup memory"
    return None


TUNABLE = Tunable(default_tiles, tiles_refusal)


def configure(geom, caps) -> Launch | Refusal:
    t = tuning_tables.choose(NAME, geom, caps, TUNABLE)
    return gemm_launch(TEMPLATE, geom, caps, t, t["tm"], t["tn"], t["tk"] * t["ks"], workgroup_bytes(t), t)


def gemm_launch(template: str, geom, caps, params: dict, tm: int, tn: int, step: int, need: int,
            tiles: dict) -> Launch | Refusal:
    """The weight pack and the GEMM of a tm x tn tile reducing `step` in-channels per step."""
    refusal = workgroup_refusal(need, caps)
    if refusal:
        return refusal
    max_dim = caps.limit("maxComputeWorkgroupsPerDimension")
    kernel_size = math.prod(geom.kernel)
    m4 = _ceil(geom.out_per_group, 4)
    packed_vec4s = geom.group * kernel_size * geom.in_per_group * m4
    shapes = [("in_channels", geom.in_channels), ("out_channels", geom.out_channels),
              ("in_per_group", geom.in_per_group), ("out_per_group", geom.out_per_group),
              ("kernel_size", kernel_size), ("m4", m4)]
    pack = dispatch(PACK, {"dtype": geom.dtype, "workgroup_size": PACK_WORKGROUP}, ("w",), ("wp",),
                    [("packed_vec4s", packed_vec4s)] + shapes, grid(_ceil(packed_vec4s, PACK_WORKGROUP), max_dim))

    row_tiles, col_tiles = _ceil(phase_rows(geom), tm), _ceil(geom.out_per_group, tn)
    phases = math.prod(geom.strides)
    tiles_total = geom.group * phases * row_tiles * col_tiles
    uniforms = ([("batch", geom.batch)] + shapes
                + [("in_size", math.prod(geom.in_spatial)), ("out_size", math.prod(geom.out_spatial)),
                   ("c_chunks", _ceil(geom.in_per_group, step)), ("phases", phases),
                   ("row_tiles", row_tiles), ("col_tiles", col_tiles), ("tiles", tiles_total)]
                + axis_uniforms(geom))
    reads = ("x", "wp", "b") if geom.has_bias else ("x", "wp")
    gemm = dispatch(template, {"rank": geom.rank, "dtype": geom.dtype, "has_bias": geom.has_bias} | params,
                    reads, ("y",), uniforms, grid(tiles_total, max_dim))
    return Launch("", "", (gemm,), weight_passes=(pack,),
                  prepared={"wp": packed_vec4s * 4 * DTYPE_BYTES[geom.dtype]}, tiles=tiles, workgroup_bytes=need)


PORTABLE = Variant(
    name=NAME, templates=(PACK, TEMPLATE, *SHARED),
    summary="rank 1-3, dense or grouped, any stride: one implicit GEMM per (group, stride phase) in one "
            "dispatch (rows = batch x the phase's output sub-grid, cols = out-channels, reduction = "
            "in-channels x the phase's taps; stride 1 and 1x1 kernels included), weights packed once, "
            "double-buffered tiles, register blocks up to 8x8, the reduction split inside the workgroup "
            "where outputs are few",
    conditions={"input": "nonempty", "finite_data": True},
    configure=configure, tunable=TUNABLE, requires=WORKGROUP_MEMORY)


VARIANTS = (PORTABLE,)
