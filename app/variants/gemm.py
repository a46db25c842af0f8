"""GEMM family: ConvTranspose as matrix products.

- conv1x1_gemm_tiled / conv1x1_gemm_tiled_reg: a 1x1 kernel with stride 1 and no padding is, per image
  and group, y = W^T x + b with W already laid out as [C, M/group]: one batched GEMM, no reorder.
- nchw2d_col2im / ncdhw3d_col2im: any 2D/3D request as GEMM + col2im. A cached weight-side pass packs W
  into row panels; the GEMM writes every tap's contribution into an f32 column buffer
  cols[n, m, tap, i] = sum_c W[c, m, tap] x[n, c, i]; col2im then sums, per output, only the (tap, i)
  pairs that reach it. Every multiply-add lands in the column buffer (taps that fall into padding
  included), so this pays off when channel counts are large and the gather kernel's per-tap index work
  dominates.
"""
from __future__ import annotations

import math

from ..errors import ConvTransposeError
from ..plan import Plan, grid
from .base import DTYPE_BYTES, Variant, dispatch, io_bindings

TILED = "conv-1x1-gemm-tiled.wgsl.jinja"
REG = "conv-1x1-gemm-tiled-reg.wgsl.jinja"
REORDER = {2: "conv-transpose2d-weight-reorder.wgsl.jinja", 3: "conv-transpose3d-weight-reorder.wgsl.jinja"}
COL2IM = {2: "conv-transpose2d-col2im.wgsl.jinja", 3: "conv-transpose3d-col2im.wgsl.jinja"}
COL2IM_NAMES = {2: "nchw2d_col2im", 3: "ncdhw3d_col2im"}

TILE = 16  # the plain tiled GEMM: TILE x TILE invocations, one output each, k-step TILE
# The register-blocked GEMM: wx * wy invocations, each rm x rn outputs; tiles of (wy*rm) x (wx*rn), k-step tk.
REG_SHAPE = {"wx": 16, "wy": 16, "rm": 4, "rn": 4, "tk": 16}
COL2IM_SHAPE = REG_SHAPE
ELEMENTWISE_WORKGROUP = 256
WORKGROUP_STORAGE = "maxComputeWorkgroupStorageSize"
COLS_BYTES = 4  # the column buffer is f32 for every storage dtype: col2im sums its entries again
MAX_INDEX = 2**31 - 1  # kernels index with i32


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _tile_rows(shape: dict) -> int:
    return shape["wy"] * shape["rm"]


def _tile_cols(shape: dict) -> int:
    return shape["wx"] * shape["rn"]


def _reg_bytes(shape: dict) -> int:
    """Workgroup memory of the register-blocked GEMM: one k-step of A and of x, as f32."""
    return (_tile_rows(shape) + _tile_cols(shape)) * shape["tk"] * 4


def _gemm_uniforms(geom, rows: int, tile_rows: int, tile_cols: int, panel_stride: int = 0):
    """The GEMM's Params: per (image, group) out[rows, pixels] = A[depth, rows]^T x[depth, pixels]."""
    pixels = math.prod(geom.in_spatial)
    row_tiles, col_tiles = _ceil(rows, tile_rows), _ceil(pixels, tile_cols)
    tiles = geom.batch * geom.group * row_tiles * col_tiles
    return [("in_channels", geom.in_channels), ("depth", geom.in_per_group), ("rows", rows), ("pixels", pixels),
            ("groups", geom.group), ("row_tiles", row_tiles), ("col_tiles", col_tiles), ("tiles", tiles),
            ("a_group_stride", geom.in_per_group * rows), ("a_panel_stride", panel_stride)], tiles


def _tiled(name: str, tile: int) -> Variant:
    def plan_passes(geom, caps) -> Plan:
        uniforms, tiles = _gemm_uniforms(geom, geom.out_per_group, tile, tile)
        params = {"dtype": geom.dtype, "has_bias": geom.has_bias, "tile": tile}
        workgroups = grid(tiles, caps.limit("maxComputeWorkgroupsPerDimension"))
        return Plan("", "", (dispatch(TILED, params, io_bindings(geom), uniforms, workgroups),))

    return Variant(
        name=name, templates=(TILED,),
        summary=f"1x1 kernel, stride 1, no padding: a batched GEMM y = W^T x + b with {tile}x{tile} "
                "workgroup-memory tiles, one output per invocation",
        conditions=dict(ONE_BY_ONE), plan_passes=plan_passes, workgroup_bytes=lambda geom, caps: 2 * tile * tile * 4)


def _tiled_reg(name: str, shape: dict) -> Variant:
    def plan_passes(geom, caps) -> Plan:
        uniforms, tiles = _gemm_uniforms(geom, geom.out_per_group, _tile_rows(shape), _tile_cols(shape))
        params = {"dtype": geom.dtype, "has_bias": geom.has_bias, "weights": "w", "output": "y"} | shape
        workgroups = grid(tiles, caps.limit("maxComputeWorkgroupsPerDimension"))
        return Plan("", "", (dispatch(REG, params, io_bindings(geom), uniforms, workgroups),))

    return Variant(
        name=name, templates=(REG,),
        summary=f"1x1 kernel, stride 1, no padding: a batched GEMM y = W^T x + b with {_tile_rows(shape)}x"
                f"{_tile_cols(shape)} workgroup-memory tiles, {shape['rm']}x{shape['rn']} outputs per invocation",
        conditions=dict(ONE_BY_ONE), plan_passes=plan_passes, workgroup_bytes=lambda geom, caps: _reg_bytes(shape))


def _modular_inverse(a: int, m: int) -> int:
    return pow(a, -1, m) if m > 1 else 0


def _col2im_uniforms(geom, taps: int, in_size: int) -> list[tuple[str, int]]:
    fields = [("y_size", geom.y_size), ("out_channels", geom.out_channels), ("taps", taps), ("in_size", in_size)]
    for a, (i, o, k, s, d, pb) in enumerate(zip(geom.in_spatial, geom.out_spatial, geom.kernel, geom.strides,
                                                 geom.dilations, geom.pads_begin)):
        g = math.gcd(s, d)
        fields += [(f"in{a}", i), (f"out{a}", o), (f"k{a}", k), (f"s{a}", s), (f"d{a}", d), (f"pad{a}", pb),
                   (f"step{a}", s // g), (f"gcd{a}", g), (f"inv{a}", _modular_inverse(d // g, s // g))]
    return fields


def _check_buffer(name: str, nbytes: int, elements: int, caps) -> None:
    limit = min(caps.limit("maxStorageBufferBindingSize"), caps.limit("maxBufferSize"))
    if nbytes > limit:
        raise ConvTransposeError(
            f"GEMM + col2im needs a {name} buffer of {nbytes} bytes, over this device's storage buffer limit of "
            f"{limit} bytes; use another variant (the gather kernels need no intermediate buffer)")
    if elements > MAX_INDEX:
        raise ConvTransposeError(f"GEMM + col2im: the {name} buffer would hold {elements} elements, past i32 indexing")


def _col2im(rank: int, name: str, shape: dict) -> Variant:
    def plan_passes(geom, caps) -> Plan:
        taps, in_size = math.prod(geom.kernel), math.prod(geom.in_spatial)
        rows = geom.out_per_group * taps
        tile_rows, tk = _tile_rows(shape), shape["tk"]
        row_tiles, depth_padded = _ceil(rows, tile_rows), _ceil(geom.in_per_group, tk) * tk
        packed_size = geom.group * row_tiles * depth_padded * tile_rows
        cols_size = geom.batch * geom.out_channels * taps * in_size
        _check_buffer("column", cols_size * COLS_BYTES, cols_size, caps)
        _check_buffer("packed weight", packed_size * DTYPE_BYTES[geom.dtype], packed_size, caps)
        max_dim = caps.limit("maxComputeWorkgroupsPerDimension")

        reorder_uniforms = [("packed_size", packed_size), ("depth", geom.in_per_group), ("rows", rows),
                            ("depth_padded", depth_padded), ("row_tiles", row_tiles), ("tile_rows", tile_rows)]
        reorder = dispatch(REORDER[rank], {"dtype": geom.dtype, "workgroup_size": ELEMENTWISE_WORKGROUP},
                           ("w", "w_packed"), reorder_uniforms,
                           grid(_ceil(packed_size, ELEMENTWISE_WORKGROUP), max_dim))

        gemm_uniforms, tiles = _gemm_uniforms(geom, rows, tile_rows, _tile_cols(shape),
                                              panel_stride=depth_padded * tile_rows)
        gemm = dispatch(REG, {"dtype": geom.dtype, "has_bias": False, "weights": "w_packed", "output": "cols"}
                        | shape, ("x", "w_packed", "cols"), gemm_uniforms, grid(tiles, max_dim))

        fold = dispatch(COL2IM[rank], {"dtype": geom.dtype, "has_bias": geom.has_bias,
                                       "workgroup_size": ELEMENTWISE_WORKGROUP},
                        ("cols", "b", "y") if geom.has_bias else ("cols", "y"),
                        _col2im_uniforms(geom, taps, in_size),
                        grid(_ceil(geom.y_size, ELEMENTWISE_WORKGROUP), max_dim))

        # The packed layout depends on the panel shape, the dtype and how W splits into groups and rows.
        key = (f"{REORDER[rank]}|tile_rows={tile_rows}|tk={tk}|dtype={geom.dtype}|group={geom.group}"
               f"|w={list(geom.w_shape)}")
        return Plan("", "", (gemm, fold), scratch={"cols": cols_size * COLS_BYTES}, prepare=(reorder,),
                    prepared={"w_packed": packed_size * DTYPE_BYTES[geom.dtype]}, prepare_key=key)

    return Variant(
        name=name, templates=(REORDER[rank], REG, COL2IM[rank]),
        summary=f"rank-{rank} GEMM + col2im: weights packed once (cached), a register-blocked GEMM into an f32 "
                "column buffer of every tap's contribution, then a fold that sums only the taps reaching each output",
        conditions={"rank": [rank], "group": ["dense", "grouped"], "input": "nonempty"},
        plan_passes=plan_passes, workgroup_bytes=lambda geom, caps: _reg_bytes(shape))


ONE_BY_ONE = {"kernel": 1, "stride": 1, "no_padding": True, "group": ["dense", "grouped"], "input": "nonempty"}

VARIANTS = (
    _tiled("conv1x1_gemm_tiled", TILE),
    _tiled_reg("conv1x1_gemm_tiled_reg", REG_SHAPE),
    _col2im(2, COL2IM_NAMES[2], COL2IM_SHAPE),
    _col2im(3, COL2IM_NAMES[3], COL2IM_SHAPE),
)

# TUNING (temporary)
TUNE = {
    "r16x16_4x4_k16": {"wx": 16, "wy": 16, "rm": 4, "rn": 4, "tk": 16},
    "r16x16_4x4_k8": {"wx": 16, "wy": 16, "rm": 4, "rn": 4, "tk": 8},
    "r8x8_4x4_k16": {"wx": 8, "wy": 8, "rm": 4, "rn": 4, "tk": 16},
    "r8x8_8x8_k16": {"wx": 8, "wy": 8, "rm": 8, "rn": 8, "tk": 16},
    "r8x8_8x4_k32": {"wx": 8, "wy": 8, "rm": 8, "rn": 4, "tk": 32},
    "r4x4_8x8_k16": {"wx": 4, "wy": 4, "rm": 8, "rn": 8, "tk": 16},
    "r16x4_4x8_k16": {"wx": 4, "wy": 16, "rm": 4, "rn": 8, "tk": 16},
    "r16x8_4x4_k32": {"wx": 8, "wy": 16, "rm": 4, "rn": 4, "tk": 32},
}
VARIANTS += tuple(_tiled_reg("t1x1_" + k, v) for k, v in TUNE.items())
VARIANTS += tuple(_col2im(2, "t2d_" + k, v) for k, v in TUNE.items())
VARIANTS += tuple(_col2im(3, "t3d_" + k, v) for k, v in TUNE.items())
VARIANTS += (_tiled("t1x1_tile8", 8),)
