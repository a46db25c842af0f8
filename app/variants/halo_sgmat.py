"""Stride-1 ConvTranspose on subgroup matrices with x staged once per chunk of in-channels as a halo
(templates/conv-transpose-stride1-halo-sgmat.wgsl.jinja): every tap's left matrices are shifted reads of
the same workgroup-memory box, where phase_gemm_sgmat gathers each x sample again for every tap.

A workgroup owns a box of outputs (tm = sg_m*cm*sm of them: tw along the last axis, th along the one
before it in 3D, the rest along the first) x tn out-channels. The box's shape is the choice that matters:
the halo it stages is the box grown by (kernel - 1) * dilation per axis, so the default is the shape with
the fewest halo pixels. The kernel and dilation are render parameters: they size the halo's workgroup
memory.
"""
from __future__ import annotations

import math

from ..plan import Plan, Refusal, dispatch, grid
from .base import (DTYPE_BYTES, WORKGROUP_MEMORY, WORKGROUP_STORAGE, Tunable, Variant, axis_uniforms, ceil_div,
                   padded_depth)
from .phase_gemm import PACK, weight_pack
from .phase_gemm_sgmat import (FEATURES, ROW_PAD_BYTES, component_bytes, direct_b_refusal, matrix_config,
                               subgroup_size, subgroups_refusal, wp_cols)

NAME = "stride1_halo_sgmat"
TEMPLATE = "conv-transpose-stride1-halo-sgmat.wgsl.jinja"
PARAMS = ("sg_m", "sg_n", "kt", "cm", "cn", "kb", "tw", "th")
# (sg_m, sg_n, kt, cm, cn, kb): 2 x 2 subgroups of 4 x 2 matrices (a 128-output x 64-out-channel tile), the taps
# dealt to 4 groups of them (512 invocations), one K-block a chunk (docs/decisions.md#halo-tiles).
_SHAPE = (2, 2, 4, 4, 2, 1)
BOX_WIDTHS = (16, 32)  # the default's choices of tw; th is a power of two


def box(t: dict, geom, config: dict) -> tuple[int, ...] | None:
    """Outputs per axis of a workgroup's box (None when tw and th do not divide the tile's rows)."""
    rows = t["sg_m"] * t["cm"] * config["M"]
    if geom.rank == 1:
        return (rows,) if t["tw"] == rows else None
    if geom.rank == 2:
        return (rows // t["tw"], t["tw"]) if rows % t["tw"] == 0 else None
    plane = t["tw"] * t["th"]
    return (rows // plane, t["th"], t["tw"]) if rows % plane == 0 else None


def halo(extent: tuple[int, ...], geom) -> tuple[int, ...]:
    return tuple(b + (k - 1) * d for b, k, d in zip(extent, geom.kernel, geom.dilations))


def workgroup_bytes(t: dict, geom, config: dict, extent: tuple[int, ...]) -> int:
    row = t["kb"] * config["K"] * component_bytes(config) + ROW_PAD_BYTES
    results = t["sg_m"] * t["sg_n"] * t["kt"] * config["M"] * config["N"]  # res_s: a matrix per subgroup
    return math.prod(halo(extent, geom)) * row + 4 * results


def _box_default(t: dict, geom, config: dict) -> dict:
    """tw and th of the box with the fewest halo pixels (ties: the wider box)."""
    rows = t["sg_m"] * t["cm"] * config["M"]
    if geom.rank == 1:
        return {"tw": rows, "th": 1}
    choices = []
    heights = [2 ** e for e in range(rows.bit_length())] if geom.rank == 3 else [1]
    for tw in BOX_WIDTHS:
        for th in heights:
            extent = box(t | {"tw": tw, "th": th}, geom, config)
            if extent:
                choices.append((math.prod(halo(extent, geom)), -tw, th))
    if not choices:
        return {"tw": config["M"], "th": 1}
    _, tw, th = min(choices)
    return {"tw": -tw, "th": th}


def default_tiles(geom, caps) -> dict:
    config = matrix_config(geom.dtype, caps) or {"M": 16, "N": 16, "K": 16, "componentType": "f16"}
    t = dict(zip(PARAMS, _SHAPE + (0, 1)))
    return t | _box_default(t, geom, config)


def tiles_refusal(t: dict, geom, caps) -> str | None:
    """Why a shape cannot run here (None when it can)."""
    if any(not isinstance(t.get(k), int) or t[k] < 1 for k in PARAMS):
        return "tile sizes must be positive integers"
    config = matrix_config(geom.dtype, caps)
    if config is None:
        return (f"needs a subgroup-matrix configuration with f32 results and components of the storage type; the "
                f"device reports {list(caps.subgroup_matrix_configs)}")
    if why := direct_b_refusal(geom, config, ""):
        return why
    if geom.rank < 3 and t["th"] != 1:
        return "th shapes 3D boxes only: it must be 1 in 1D and 2D"
    extent = box(t, geom, config)
    if extent is None:
        return ("the box must hold the tile's rows: tw (times th in 3D) must divide sg_m * cm * M"
                + ("; in 1D, tw must equal them" if geom.rank == 1 else ""))
    if t["tw"] % config["M"]:
        return f"tw must be a multiple of the matrix's M = {config['M']} (a left matrix's rows stay in one line)"
    if (t["kb"] * config["K"]) % 4:
        return "a chunk of in-channels must be a multiple of 4 (the halo is staged 4 channels at a time)"
    if why := subgroups_refusal(t["sg_m"] * t["sg_n"] * t["kt"], caps, config):
        return why
    if workgroup_bytes(t, geom, config, extent) > caps.limit(WORKGROUP_STORAGE):
        return "the halo exceeds the device's workgroup memory"
    return None


TUNABLE = Tunable(default_tiles, tiles_refusal)


def configure(geom, caps, t: dict) -> Plan | Refusal:
    refusal = tiles_refusal(t, geom, caps)
    if refusal:
        return Refusal(refusal)
    config = matrix_config(geom.dtype, caps)
    extent = box(t, geom, config)
    need = workgroup_bytes(t, geom, config, extent)
    reach = halo(extent, geom)
    strides = tuple(math.prod(reach[a + 1:]) for a in range(geom.rank))
    tn = t["sg_n"] * t["cn"] * config["N"]
    kc = t["kb"] * config["K"]
    params = {"rank": geom.rank, "dtype": geom.dtype, "has_bias": geom.has_bias} | t | {
        "comp": config["componentType"], "sm": config["M"], "sn": config["N"], "sk": config["K"],
        "subgroup_size": subgroup_size(caps), "tn": tn, "box": list(extent), "kernel": list(geom.kernel),
        "dilation": list(geom.dilations), "halo": list(reach), "halo_strides": list(strides),
        "halo_pixels": math.prod(reach)}
    pack, packed_vec4s, shapes = weight_pack(geom, caps)
    boxes = [ceil_div(o, b) for o, b in zip(geom.out_spatial, extent)]
    col_tiles = ceil_div(geom.out_per_group, tn)
    tiles = geom.batch * geom.group * math.prod(boxes) * col_tiles
    uniforms = ([("batch", geom.batch), ("groups", geom.group)] + shapes
                + [("in_size", math.prod(geom.in_spatial)), ("out_size", math.prod(geom.out_spatial)),
                   ("c_chunks", ceil_div(geom.in_per_group, kc)), ("col_tiles", col_tiles), ("tiles", tiles)]
                + [(f"boxes{a}", b) for a, b in enumerate(boxes)] + axis_uniforms(geom))
    # The last chunk's right matrices reach up to a chunk of rows and a tile of columns past the packed rows.
    tail = kc * wp_cols(geom) + tn
    prepared = {"wp": (packed_vec4s * 4 + tail) * DTYPE_BYTES[geom.dtype]}
    gemm = dispatch(TEMPLATE, params, ("x", "wp", "b") if geom.has_bias else ("x", "wp"), ("y",), uniforms,
                    grid(tiles, caps.limit("maxComputeWorkgroupsPerDimension")), {"wp": "array<C>"},
                    invocations=t["sg_m"] * t["sg_n"] * t["kt"] * subgroup_size(caps))
    return Plan((gemm,), weight_passes=(pack,), prepared=prepared, tiles=t, workgroup_bytes=need,
                tile_outputs=math.prod(extent) * tn,
                tile_depth=padded_depth(geom.in_per_group, kc, math.prod(geom.kernel)))


HALO = Variant(
    name=NAME, templates=(PACK, TEMPLATE),
    summary="stride 1, rank 1-3, dense or grouped, any kernel, dilation and pads: an implicit GEMM on subgroup "
            "matrices whose left operands are shifted reads of one halo of x per chunk of in-channels, staged "
            "channels-last in workgroup memory (x read once per chunk, not once per tap)",
    conditions={"stride": 1, "input": "nonempty", "finite_data": True},
    configure=configure, features=FEATURES, tunable=TUNABLE,
    requires=WORKGROUP_MEMORY | {"subgroup_matrix": "a configuration with f32 results and components of the "
                                                    "storage type (f16 for float16, f32 for float32)"})

VARIANTS = (HALO,)
