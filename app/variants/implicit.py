"""Stride-1 ConvTranspose as an implicit GEMM: a forward convolution over the in-channel x tap reduction.

With every stride 1 the transposed convolution has no divisibility test: output o takes input
o + pad_begin - k*dilation for every tap k, so it is a dense GEMM per (batch, group) whose left operand is
gathered straight from x's windows and whose result is stored straight into y: no column matrix, no
scatter pass.
"""
from __future__ import annotations

import math

from ..plan import Plan, Refusal, dispatch, grid
from .base import INVOCATIONS_LIMIT, WORKGROUP_MEMORY, Tunable, Variant, io, padded_depth, workgroup_memory_refusal

STRIDE1_NAME = "stride1_implicit_gemm"
PORTABLE = "conv-transpose-stride1-implicit-gemm.wgsl.jinja"
# Below 8 channels per group a tile is mostly padding and the gather kernel wins, so the GEMM variants leave those to
# it (docs/decisions.md#implicit-min-channels).
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
    if wg > caps.limit(INVOCATIONS_LIMIT) or wg > caps.limit("maxComputeWorkgroupSizeX"):
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


def _configure_portable(geom, caps, t: dict) -> Plan | Refusal:
    tm, tn = t["tx"] * t["rm"], t["ty"] * t["rn"]
    need = 4 * t["tk"] * (tm + tn)
    refusal = workgroup_memory_refusal(need, caps)
    if refusal:
        return Refusal(refusal)
    uniforms = _gemm_uniforms(geom, tm, tn)
    params = {"rank": geom.rank, "dtype": geom.dtype, "has_bias": geom.has_bias} | t
    workgroups = grid(dict(uniforms)["tiles"], caps.limit("maxComputeWorkgroupsPerDimension"))
    return Plan((dispatch(PORTABLE, params, *io(geom), uniforms, workgroups, invocations=t["tx"] * t["ty"]),), tiles=t,
                workgroup_bytes=need, tile_outputs=tm * tn,
                tile_depth=padded_depth(geom.in_per_group, t["tk"], math.prod(geom.kernel)))


STRIDE1_IMPLICIT_GEMM = Variant(
    name=STRIDE1_NAME, templates=(PORTABLE,),
    summary="every stride 1: implicit-gather GEMM (pixels x out-channels tiles in workgroup memory, "
            "register-blocked, reduction over in-channels x taps), any rank, dilation, pads and groups",
    conditions={"stride": 1, "min_in_per_group": MIN_CHANNELS, "min_out_per_group": MIN_CHANNELS,
                "input": "nonempty", "finite_data": True},
    configure=_configure_portable, tunable=PORTABLE_TUNABLE, requires=WORKGROUP_MEMORY)


VARIANTS = (STRIDE1_IMPLICIT_GEMM,)
