"""Stride-1 ConvTranspose as an implicit GEMM: a forward convolution over the in-channel x tap reduction.

With every stride 1 the transposed convolution has no divisibility test: output o takes input
o + pad_begin - k*dilation for every tap k, so it is a dense GEMM per (batch, group) whose left operand is
gathered straight from x's windows and whose result is stored straight into y: no column matrix, no
scatter pass.
"""
from __future__ import annotations

import math

from ..plan import Plan, grid
from .base import Variant, io_bindings
from .base import dispatch as make_dispatch

PORTABLE = "conv-transpose-stride1-implicit-gemm.wgsl.jinja"

# Workgroup shapes (tx, ty, rm, rn): tx*rm pixels x ty*rn out-channels per tile, rm x rn per invocation.
# Narrow out-channel counts take a tall tile so the register block is not mostly padding.
_SHAPES = {64: (16, 16, 4, 4), 32: (32, 8, 4, 4), 16: (32, 4, 4, 4), 8: (64, 2, 2, 4), 4: (64, 2, 2, 2)}


def _portable_tiles(geom) -> dict:
    opg = geom.out_per_group
    width = next((w for w in sorted(_SHAPES) if w >= opg), 64)
    tx, ty, rm, rn = _SHAPES[width]
    tm, wg = tx * rm, tx * ty
    # Channels per reduction step: the candidate that pads in_per_group least, larger on ties (fewer barriers).
    options = [t for t in (32, 16, 8, 4) if (t * tm) % wg == 0 and t * (tm + ty * rn) * 4 <= 16384]
    tk = min(options, key=lambda t: (-(-geom.in_per_group // t) * t, -t))
    return {"tx": tx, "ty": ty, "rm": rm, "rn": rn, "tk": tk}


def _portable_bytes(geom, caps) -> int:
    t = _portable_tiles(geom)
    return 4 * t["tk"] * (t["tx"] * t["rm"] + t["ty"] * t["rn"])


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


def _portable_plan(geom, caps) -> Plan:
    t = _portable_tiles(geom)
    uniforms = _gemm_uniforms(geom, t["tx"] * t["rm"], t["ty"] * t["rn"])
    tiles = dict(uniforms)["tiles"]
    params = {"rank": geom.rank, "dtype": geom.dtype, "has_bias": geom.has_bias} | t
    workgroups = grid(tiles, caps.limit("maxComputeWorkgroupsPerDimension"))
    return Plan("", "", (make_dispatch(PORTABLE, params, io_bindings(geom), uniforms, workgroups),))


STRIDE1_IMPLICIT_GEMM = Variant(
    name="stride1_implicit_gemm", templates=(PORTABLE,),
    summary="every stride 1: implicit-gather GEMM (pixels x out-channels tiles in workgroup memory, "
            "register-blocked, reduction over in-channels x taps), any rank, dilation, pads and groups",
    conditions={"stride": 1, "input": "nonempty"}, plan_passes=_portable_plan, workgroup_bytes=_portable_bytes)

VARIANTS = (STRIDE1_IMPLICIT_GEMM,)

# TEMPORARY tuning variants
def _tuned(name, shape, tk):
    def tiles(geom):
        tx, ty, rm, rn = shape
        return {"tx": tx, "ty": ty, "rm": rm, "rn": rn, "tk": tk}
    def plan(geom, caps):
        t = tiles(geom)
        uniforms = _gemm_uniforms(geom, t["tx"] * t["rm"], t["ty"] * t["rn"])
        params = {"rank": geom.rank, "dtype": geom.dtype, "has_bias": geom.has_bias} | t
        return Plan("", "", (make_dispatch(PORTABLE, params, io_bindings(geom), uniforms,
                                           grid(dict(uniforms)["tiles"], 65535)),))
    return Variant(name=name, templates=(PORTABLE,), summary="", conditions={"stride": 1}, plan_passes=plan)

import os
VARIANTS = VARIANTS + tuple(_tuned(f"t_{a}_{b}_{c}_{d}_{k}", (a, b, c, d), k) for a, b, c, d, k in [
    (16, 8, 4, 8, 16), (16, 8, 4, 8, 32), (16, 8, 4, 8, 8), (8, 8, 8, 4, 16), (16, 4, 4, 8, 16), (8, 16, 8, 4, 16),
    (32, 4, 2, 16, 16), (16, 8, 8, 4, 16), (32, 4, 4, 8, 16), (16, 4, 4, 4, 16), (8, 4, 8, 4, 16), (16, 2, 4, 8, 16)])
