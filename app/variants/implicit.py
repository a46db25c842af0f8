"""Stride-1 ConvTranspose as an implicit GEMM: a forward convolution over the in-channel x tap reduction.

With every stride 1 the transposed convolution has no divisibility test: output o takes input
o + pad_begin - k*dilation for every tap k, so it is a dense GEMM per (batch, group) whose left operand is
gathered straight from x's windows and whose result is stored straight into y: no column matrix, no
scatter pass.
"""
from __future__ import annotations

import math

from .. import tuning_tables
from ..caps import usable_subgroup_sizes
from ..launch import Launch, Refusal, dispatch, grid
from .base import WORKGROUP_MEMORY, Tunable, Variant, io, workgroup_refusal

STRIDE1_NAME = "stride1_implicit_gemm"
PORTABLE = "conv-transpose-stride1-implicit-gemm.wgsl.jinja"
SGMAT_3D = "conv-transpose3d-implicit-sgmat.wgsl.jinja"
SGMAT_1X1 = "conv-1x1-subgroup-matrix.wgsl.jinja"
SGMAT_FEATURES = ("chromium-experimental-subgroup-matrix", "subgroups")
INVOCATIONS = "maxComputeInvocationsPerWorkgroup"
# Below 8 channels per group a tile is mostly padding and the gather kernel wins (SwiftShader: 2x at 4
# in/out channels, 10x depthwise; the GEMM wins 2x from 8 up), so the GEMM variants leave those to it.
MIN_CHANNELS = 8

# Workgroup shapes (tx, ty, rm, rn) by out-channels per group: tx*rm pixels x ty*rn out-channels per tile,
# rm x rn outputs per invocation. Narrow out-channel counts take a tall tile so the register block is not
# mostly padding. Software adapters (SwiftShader: a CPU running invocations as SIMD lanes and fibers) do
# better with fewer invocations, larger register blocks and shorter reduction steps; measured on both.
_GPU_SHAPES = {64: (16, 16, 4, 4), 32: (32, 8, 4, 4), 16: (32, 4, 4, 4), 8: (64, 2, 2, 4), 4: (64, 2, 2, 2)}
_CPU_SHAPES = {64: (16, 4, 4, 8), 32: (16, 4, 4, 8), 16: (32, 4, 4, 4), 8: (64, 2, 2, 4), 4: (64, 2, 2, 2)}
_TILE_BYTES = 16384  # WebGPU's guaranteed workgroup storage: every tile fits any device


def _default_portable_tiles(geom, caps) -> dict:
    software = caps.is_software
    shapes = _CPU_SHAPES if software else _GPU_SHAPES
    width = next((w for w in sorted(shapes) if w >= geom.out_per_group), 64)
    tx, ty, rm, rn = shapes[width]
    tm, tn, wg = tx * rm, ty * rn, tx * ty
    assert wg % tm == 0, "each invocation stages one fixed pixel"
    # Channels per reduction step: the candidate that pads in_per_group least, larger on ties (fewer barriers).
    options = [t for t in ((16, 8, 4) if software else (32, 16, 8, 4))
               if 4 * t * (tm + tn) <= _TILE_BYTES and t % (wg // tm) == 0]
    tk = min(options, key=lambda t: (-(-geom.in_per_group // t) * t, -t))
    # Unrolled staging is about 2x faster on a GPU (H200); SwiftShader compiles long unrolled shaders so
    # slowly that its GPU process can be lost, so software adapters keep loops.
    return {"tx": tx, "ty": ty, "rm": rm, "rn": rn, "tk": tk, "unroll": not software}


def portable_refusal(t: dict, geom, caps) -> str | None:
    """Why a tile shape breaks the template's invariants or the device's limits (None when it is usable)."""
    if any(not isinstance(t.get(k), int) or t[k] < 1 for k in ("tx", "ty", "rm", "rn", "tk")):
        return "tile sizes must be positive integers"
    tm, wg = t["tx"] * t["rm"], t["tx"] * t["ty"]
    if wg % tm:
        return "tx*ty must be a multiple of tx*rm (each invocation stages one fixed pixel)"
    if t["tk"] % (wg // tm):
        return "tk must be a multiple of tx*ty / (tx*rm)"
    if wg > caps.limit(INVOCATIONS) or wg > caps.limit("maxComputeWorkgroupSizeX"):
        return f"{wg} invocations per workgroup exceed the device's limit"
    if 4 * t["tk"] * (tm + t["ty"] * t["rn"]) > caps.limit("maxComputeWorkgroupStorageSize"):
        return "the tiles exceed the device's workgroup memory"
    return None


def _gemm_uniforms(geom, tm: int, tn: int) -> list[tuple[str, int]]:
    out_size, in_size = math.prod(geom.out_spatial), math.prod(geom.in_spatial)
    pixels = geom.batch * out_size
    pixel_tiles, channel_tiles = -(-pixels // tm), -(-geom.out_per_group // tn)
    fields = [("in_channels", geom.in_channels), ("out_channels", geom.out_channels),
              ("in_per_group", geom.in_per_group), ("out_per_group", geom.out_per_group),
              ("pixels", pixels), ("out_size", out_size), ("in_size", in_size), ("taps", math.prod(geom.kernel)),
              ("pixel_tiles", pixel_tiles), ("channel_tiles", channel_tiles),
              ("tiles", pixel_tiles * channel_tiles * geom.group)]
    for a, (i, o, k, d, pb) in enumerate(zip(geom.in_spatial, geom.out_spatial, geom.kernel, geom.dilations,
                                             geom.pads_begin)):
        fields += [(f"in{a}", i), (f"out{a}", o), (f"k{a}", k), (f"d{a}", d), (f"pad{a}", pb)]
    return fields


PORTABLE_TUNABLE = Tunable(_default_portable_tiles, portable_refusal)


def _configure_portable(geom, caps) -> Launch | Refusal:
    t = tuning_tables.choose(STRIDE1_NAME, geom, caps, PORTABLE_TUNABLE)
    tm, tn = t["tx"] * t["rm"], t["ty"] * t["rn"]
    need = 4 * t["tk"] * (tm + tn)
    refusal = workgroup_refusal(need, caps)
    if refusal:
        return refusal
    uniforms = _gemm_uniforms(geom, tm, tn)
    params = {"rank": geom.rank, "dtype": geom.dtype, "has_bias": geom.has_bias} | t
    workgroups = grid(dict(uniforms)["tiles"], caps.limit("maxComputeWorkgroupsPerDimension"))
    return Launch("", "", (dispatch(PORTABLE, params, *io(geom), uniforms, workgroups),), tiles=t,
                  workgroup_bytes=need)


STRIDE1_IMPLICIT_GEMM = Variant(
    name=STRIDE1_NAME, templates=(PORTABLE,),
    summary="every stride 1: implicit-gather GEMM (pixels x out-channels tiles in workgroup memory, "
            "register-blocked, reduction over in-channels x taps), any rank, dilation, pads and groups",
    conditions={"stride": 1, "min_in_per_group": MIN_CHANNELS, "min_out_per_group": MIN_CHANNELS,
                "input": "nonempty", "finite_data": True},
    configure=_configure_portable, tunable=PORTABLE_TUNABLE, requires=WORKGROUP_MEMORY)


# --- subgroup matrices -------------------------------------------------------------------------------
# The matrix shape and component type are the device's: GPUAdapterInfo.subgroupMatrixConfigs lists them
# (componentType, resultComponentType, M, N, K). Results must be f32 (the package accumulates in f32).
# The components must hold the storage type exactly: f32 storage needs f32 components (f16 components
# would round every input to 11 bits, far outside f32 tolerance); f16 storage takes f16 or f32 ones.
COMPONENTS = {"float32": ("f32",), "float16": ("f16", "f32")}
MAX_SUBGROUP_SIZE = 128  # WebGPU's bound on subgroupMaxSize: a safe workgroup multiple when the device's is unknown


def _sgmat_config(geom, caps) -> dict | None:
    """The device's best usable subgroup-matrix configuration for this dtype, or None."""
    wanted = COMPONENTS[geom.dtype]
    usable = [c for c in caps.subgroup_matrix_configs
              if c["resultComponentType"] == "f32" and c["componentType"] in wanted]
    if not usable:
        return None
    # Prefer the narrower component (f16 halves staging traffic), then the larger matrix.
    def rank(c):
        return wanted.index(c["componentType"]), -c["M"] * c["N"] * c["K"], c["M"], c["N"], c["K"]

    return min(usable, key=rank)


def _sgmat_tiles(geom, caps) -> dict | str:
    """The launch shape for this device, or why there is none."""
    config = _sgmat_config(geom, caps)
    if config is None:
        return (f"needs a subgroup-matrix configuration with {' or '.join(COMPONENTS[geom.dtype])} components and "
                f"f32 results; the device reports {list(caps.subgroup_matrix_configs)}")
    sm, sn, sk = config["M"], config["N"], config["K"]
    # The device's largest subgroup when its report is usable (app/caps.py), else WebGPU's bound on any.
    sizes = usable_subgroup_sizes(caps)
    subgroup = sizes[1] if sizes else MAX_SUBGROUP_SIZE
    if sm > subgroup:
        return f"needs subgroups of at least M = {sm} invocations, the device's largest is {subgroup}"
    # Two subgroups along pixels, each about 32 pixels (at most one subgroup's worth, so that the workgroup
    # is a multiple of the pixel tile) x up to 64 out-channels, at most 8 accumulators.
    sg_m = 2 if 2 * subgroup <= caps.limit(INVOCATIONS) else 1
    if sg_m * subgroup > caps.limit(INVOCATIONS):
        return f"needs {subgroup} invocations per workgroup, the device allows {caps.limit(INVOCATIONS)}"
    cm = max(1, min(32, subgroup) // sm)
    cn = max(1, min(-(-geom.out_per_group // sn), 64 // sn, 8 // cm))
    steps = -(-geom.in_per_group // sk)
    kt = max(1, min(steps, 4 if math.prod(geom.kernel) == 1 else 2))
    return {"comp": config["componentType"], "sm": sm, "sn": sn, "sk": sk, "sg_m": sg_m, "sg_n": 1,
            "cm": cm, "cn": cn, "kt": kt, "subgroup_size": subgroup}


def _sgmat_configure(template: str):
    def configure(geom, caps) -> Launch | Refusal:
        t = _sgmat_tiles(geom, caps)
        if isinstance(t, str):
            return Refusal(t)
        tm, tn, tk = t["sg_m"] * t["cm"] * t["sm"], t["sg_n"] * t["cn"] * t["sn"], t["kt"] * t["sk"]
        need = (tk * tm + tk * tn) * (2 if t["comp"] == "f16" else 4) + 4 * tm * tn
        refusal = workgroup_refusal(need, caps)
        if refusal:
            return refusal
        uniforms = _gemm_uniforms(geom, tm, tn)
        params = {"dtype": geom.dtype, "has_bias": geom.has_bias} | t
        workgroups = grid(dict(uniforms)["tiles"], caps.limit("maxComputeWorkgroupsPerDimension"))
        return Launch("", "", (dispatch(template, params, *io(geom), uniforms, workgroups),), tiles=t,
                      workgroup_bytes=need)

    return configure


# A usable subgroup-matrix configuration is checked by configure (features alone cannot say).
SUBGROUP_MATRIX = WORKGROUP_MEMORY | {
    "subgroup_matrix": "a configuration with f32 results and components that hold the dtype exactly "
                       "(f32 for float32; f16 or f32 for float16)"}


def _sgmat_3d(name: str, bias: bool) -> Variant:
    return Variant(
        name=name, templates=(SGMAT_3D,),
        summary="3D, every stride 1: implicit-gather GEMM on subgroup matrices (x windows and w staged in "
                "workgroup memory, matrix shape and component type from the device's configurations)"
                + (", bias fused" if bias else ""),
        conditions={"rank": [3], "stride": 1, "min_in_per_group": MIN_CHANNELS, "min_out_per_group": MIN_CHANNELS,
                    "bias": bias, "input": "nonempty", "finite_data": True},
        configure=_sgmat_configure(SGMAT_3D), features=SGMAT_FEATURES, requires=SUBGROUP_MATRIX)


CONV1X1_SGMAT = Variant(
    name="conv1x1_sgmat", templates=(SGMAT_1X1, SGMAT_3D),
    summary="1x1 kernel, stride 1, no padding, any rank: a GEMM per (batch, group) on subgroup matrices",
    conditions={"kernel": 1, "stride": 1, "no_padding": True, "min_in_per_group": MIN_CHANNELS,
                "min_out_per_group": MIN_CHANNELS, "input": "nonempty"},
    configure=_sgmat_configure(SGMAT_1X1), features=SGMAT_FEATURES, requires=SUBGROUP_MATRIX)

VARIANTS = (STRIDE1_IMPLICIT_GEMM, _sgmat_3d("ncdhw3d_implicit_sgmat", False),
            _sgmat_3d("ncdhw3d_implicit_sgmat_bias", True), CONV1X1_SGMAT)

