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
from ..caps import SUBGROUP_SIZE_BOUNDS, usable_subgroup_sizes
from ..launch import Launch, Refusal, dispatch, grid
from .base import (DTYPE_BYTES, WORKGROUP_MEMORY, WORKGROUP_STORAGE, Tunable, Variant, axis_phase,
                   axis_uniforms, workgroup_refusal)

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


def _phase_rows(geom) -> int:
    """Rows of the largest phase's GEMM: batch x its output sub-grid."""
    return geom.batch * math.prod(_ceil(o, s) for o, s in zip(geom.out_spatial, geom.strides))


def _phase_taps(geom) -> int:
    """Taps of the phase with the most (each axis: ceil(k / step))."""
    return math.prod(_ceil(k, axis_phase(s, d).step) for k, s, d in zip(geom.kernel, geom.strides, geom.dilations))


def _workgroups(geom, t: dict) -> int:
    return (geom.group * math.prod(geom.strides) * _ceil(_phase_rows(geom), t["tm"])
            * _ceil(geom.out_per_group, t["tn"]))


def default_tiles(geom, caps) -> dict:
    if caps.is_software:
        return dict(zip(PARAMS, _CPU_SHAPE))
    if geom.out_per_group <= 64:
        t = dict(zip(PARAMS, _GPU_NARROW))
    else:
        t = dict(zip(PARAMS, _GPU_WIDE))
        if _workgroups(geom, t) < FILL:
            t = dict(zip(PARAMS, _GPU_WIDE_FEW))
    split = dict(zip(PARAMS, _GPU_SPLIT))
    if (_workgroups(geom, t) < SPLIT_BELOW and geom.in_per_group * _phase_taps(geom) >= SPLIT_DEPTH
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
    return _launch(TEMPLATE, geom, caps, {**t}, t["tm"], t["tn"], t["tk"] * t["ks"], workgroup_bytes(t), t)


def _launch(template: str, geom, caps, params: dict, tm: int, tn: int, step: int, need: int,
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

    row_tiles, col_tiles = _ceil(_phase_rows(geom), tm), _ceil(geom.out_per_group, tn)
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


# --- subgroup matrices --------------------------------------------------------------------------------
# The matrix shape and component type are the device's (GPUAdapterInfo.subgroupMatrixConfigs); results must
# be f32 (the package accumulates in f32), and the components must hold the storage type exactly: f32
# storage needs f32 components (f16 would round every input to 11 bits), f16 storage takes f16 or f32.
SGMAT_NAME = "phase_gemm_sgmat"
SGMAT_TEMPLATE = "conv-transpose-phase-gemm-sgmat.wgsl.jinja"
SGMAT_FEATURES = ("chromium-experimental-subgroup-matrix", "subgroups")
COMPONENTS = {"float32": ("f32",), "float16": ("f16", "f32")}
SGMAT_PARAMS = ("sg_m", "sg_n", "cm", "cn", "kb")
MAX_SUBGROUP_SIZE = SUBGROUP_SIZE_BOUNDS[1]  # where the device's is unknown: a workgroup of whole subgroups
# (sg_m, sg_n, cm, cn, kb) for 16 x 16 matrices, from the same H200 sweep (f16): 64 x 64 tiles up to 64
# out-channels (128-wide ones were 2-2.5x slower there); wider, 128 x 128 by 4 subgroups of 4 x 4 matrices
# where that makes 256 workgroups, by 8 subgroups of 2 x 4 down to 128 workgroups, else 64 x 64.
_SGMAT_NARROW = (2, 2, 2, 2, 1)
_SGMAT_WIDE = (2, 2, 4, 4, 1)
_SGMAT_WIDE_FEW = (4, 2, 2, 4, 2)
_SGMAT_SMALL = (2, 2, 2, 2, 2)


def matrix_config(dtype: str, caps) -> dict | None:
    """The device's best subgroup-matrix configuration for this dtype, or None: the narrower component
    first (f16 halves staging), then the larger matrix."""
    wanted = COMPONENTS[dtype]
    usable = [c for c in caps.subgroup_matrix_configs
              if c["resultComponentType"] == "f32" and c["componentType"] in wanted]
    return min(usable, key=lambda c: (wanted.index(c["componentType"]), -c["M"] * c["N"] * c["K"]), default=None)


def _subgroup_size(caps) -> int:
    sizes = usable_subgroup_sizes(caps)
    return sizes[1] if sizes else MAX_SUBGROUP_SIZE


def _sgmat_tile(t: dict, config: dict) -> tuple[int, int, int]:
    """(tm, tn, reduction per step) of a shape on this matrix configuration."""
    return t["sg_m"] * t["cm"] * config["M"], t["sg_n"] * t["cn"] * config["N"], t["kb"] * config["K"]


def sgmat_bytes(t: dict, config: dict) -> int:
    tm, tn, tks = _sgmat_tile(t, config)
    comp = 2 if config["componentType"] == "f16" else 4
    return 2 * tks * (tm + tn) * comp + 4 * t["sg_m"] * t["sg_n"] * config["M"] * config["N"]


def sgmat_defaults(geom, caps) -> dict:
    config = matrix_config(geom.dtype, caps) or {"M": 16, "N": 16, "K": 16}

    def shape(values: tuple) -> tuple[dict, int]:
        t = dict(zip(SGMAT_PARAMS, values))
        tm, tn, _ = _sgmat_tile(t, config)
        return t, _workgroups(geom, {"tm": tm, "tn": tn})

    if geom.out_per_group <= 64:
        return shape(_SGMAT_NARROW)[0]
    for values, enough in ((_SGMAT_WIDE, FILL), (_SGMAT_WIDE_FEW, FILL // 2)):
        t, workgroups = shape(values)
        if workgroups >= enough:
            return t
    return shape(_SGMAT_SMALL)[0]


def sgmat_refusal(t: dict, geom, caps) -> str | None:
    """Why a shape cannot run here (None when it can): the device's matrices, limits and the staging rule."""
    if any(not isinstance(t.get(k), int) or t[k] < 1 for k in SGMAT_PARAMS):
        return "tile sizes must be positive integers"
    config = matrix_config(geom.dtype, caps)
    if config is None:
        return (f"needs a subgroup-matrix configuration with {' or '.join(COMPONENTS[geom.dtype])} components and "
                f"f32 results; the device reports {list(caps.subgroup_matrix_configs)}")
    tm, tn, tks = _sgmat_tile(t, config)
    sizes = usable_subgroup_sizes(caps)
    if sizes and sizes[0] < config["M"]:
        return f"needs subgroups of at least M = {config['M']} invocations, the device's can have {sizes[0]}"
    threads = t["sg_m"] * t["sg_n"] * _subgroup_size(caps)
    if threads > caps.limit(INVOCATIONS) or threads > caps.limit("maxComputeWorkgroupSizeX"):
        return f"{threads} invocations per workgroup exceed the device's limit"
    if tn % 4:
        return "the tile's columns must be a multiple of 4 (weights are read as vec4)"
    if threads % tm and tm % threads:
        return "the invocation count must divide or be a multiple of the tile's rows"
    if threads > tm and tks % (threads // tm):
        return "the reduction step must be a multiple of invocations / tile rows"
    if sgmat_bytes(t, config) > caps.limit(WORKGROUP_STORAGE):
        return "the tiles exceed the device's workgroup memory"
    return None


SGMAT_TUNABLE = Tunable(sgmat_defaults, sgmat_refusal)


def configure_sgmat(geom, caps) -> Launch | Refusal:
    t = tuning_tables.choose(SGMAT_NAME, geom, caps, SGMAT_TUNABLE)
    refusal = sgmat_refusal(t, geom, caps)
    if refusal:
        return Refusal(refusal)
    config = matrix_config(geom.dtype, caps)
    tm, tn, tks = _sgmat_tile(t, config)
    params = t | {"comp": config["componentType"], "sm": config["M"], "sn": config["N"], "sk": config["K"],
                  "subgroup_size": _subgroup_size(caps), "tm": tm, "tn": tn}
    return _launch(SGMAT_TEMPLATE, geom, caps, params, tm, tn, tks, sgmat_bytes(t, config), t)


SGMAT = Variant(
    name=SGMAT_NAME, templates=(PACK, SGMAT_TEMPLATE, *SHARED),
    summary="phase_gemm's GEMMs (every rank, stride, dense or grouped) on subgroup matrices: tensor cores where "
            "the device offers matrices with f32 results (f16 components for float16, f32 ones for float32)",
    conditions={"input": "nonempty", "finite_data": True},
    configure=configure_sgmat, features=SGMAT_FEATURES, tunable=SGMAT_TUNABLE,
    requires=WORKGROUP_MEMORY | {"subgroup_matrix": "a configuration with f32 results and components that hold "
                                                    "the dtype exactly (f32 for float32; f16 or f32 for float16)"})

VARIANTS = (PORTABLE, SGMAT)
