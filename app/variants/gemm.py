"""GEMM family: ConvTranspose as matrix products.

- conv1x1_gemm_tiled / conv1x1_gemm_tiled_reg: a 1x1 kernel with stride 1 and no padding is, per image
  and group, y = W^T x + b with W already laid out as [C, M/group]: one batched GEMM, no reorder.
- ncl1d_col2im / nchw2d_col2im / ncdhw3d_col2im: any request of rank 1-3 as GEMM + col2im (one template per
  pass, the rank a render parameter, rendered in 2D and 3D through the seed's per-rank names). A cached
  weight-side pass packs W into row panels; the GEMM writes every tap's contribution into an f32 column buffer
  cols[n, m, tap, i] = sum_c W[c, m, tap] x[n, c, i]; col2im then sums, per output, only the (tap, i) pairs
  that reach it. Every multiply-add lands in the column buffer (taps that fall into padding included), so this
  pays off when channel counts are large and the gather kernel's per-tap index work dominates. In 1D it is the
  overlap-add of an iSTFT: one output channel and a kernel of thousands of taps make a GEMM of M/group * taps
  rows, which no per-output kernel reuses as well.
"""
from __future__ import annotations

import math

from ..plan import Plan, Refusal, dispatch, grid
from .base import (BUFFERS, DTYPE_BYTES, WORKGROUP_MEMORY, Tunable, Variant, axis_uniforms, ceil_div, io,
                   padded_depth, workgroup_memory_refusal)

TILED = "conv-1x1-gemm-tiled.wgsl.jinja"
REG = "conv-1x1-gemm-tiled-reg.wgsl.jinja"
REORDER = "conv-transpose-weight-reorder.wgsl.jinja"
COL2IM = "conv-transpose-col2im.wgsl.jinja"
# What each rank renders the two through: in 2D and 3D the seed's per-rank names, thin entries that fix the
# rank and include the rank-generic template (the same WGSL).
REORDER_ENTRY = {1: REORDER, 2: "conv-transpose2d-weight-reorder.wgsl.jinja",
                 3: "conv-transpose3d-weight-reorder.wgsl.jinja"}
COL2IM_ENTRY = {1: COL2IM, 2: "conv-transpose2d-col2im.wgsl.jinja", 3: "conv-transpose3d-col2im.wgsl.jinja"}
COL2IM_NAMES = {1: "ncl1d_col2im", 2: "nchw2d_col2im", 3: "ncdhw3d_col2im"}

TILE = 16  # the plain tiled GEMM: TILE x TILE invocations, one output each, k-step TILE
# The register-blocked GEMM: wx * wy invocations, each rm x rn outputs; tiles of (wy*rm) x (wx*rn), k-step tk.
# 8 x 8 invocations of 4 x 4 outputs (32 x 32 tiles, 4 KiB of workgroup memory): a body small enough for
# SwiftShader's compiler (docs/decisions.md#gemm-register-blocks).
REG_SHAPE = {"wx": 8, "wy": 8, "rm": 4, "rn": 4, "tk": 16}
ELEMENTWISE_WORKGROUP = 256
COLS_BYTES = 4  # the column buffer is f32 for every storage dtype: col2im sums its entries again
MAX_INDEX = 2**31 - 1  # kernels index with i32
# What the 1x1 GEMMs cover: y = W^T x + b per image and group, nothing to fold.
ONE_BY_ONE = {"kernel": 1, "stride": 1, "no_padding": True, "group": ["dense", "grouped"], "input": "nonempty"}


def _tile_rows(shape: dict) -> int:
    return shape["wy"] * shape["rm"]


def _tile_cols(shape: dict) -> int:
    return shape["wx"] * shape["rn"]


def _reg_work(geom, shape: dict) -> dict:
    """The register-blocked GEMM's tiles, for the cost model (Plan.tile_outputs, tile_depth)."""
    return {"tile_outputs": _tile_rows(shape) * _tile_cols(shape),
            "tile_depth": padded_depth(geom.in_per_group, shape["tk"])}


def _invocations(shape: dict) -> int:
    return shape["wx"] * shape["wy"]


def _reg_bytes(shape: dict) -> int:
    """Workgroup memory of the register-blocked GEMM: one k-step of A and of x, as f32."""
    return (_tile_rows(shape) + _tile_cols(shape)) * shape["tk"] * 4


def _gemm_uniforms(geom, rows: int, tile_rows: int, tile_cols: int, panel_stride: int = 0):
    """The GEMM's Params: per (image, group) out[rows, pixels] = A[depth, rows]^T x[depth, pixels]."""
    pixels = math.prod(geom.in_spatial)
    row_tiles, col_tiles = ceil_div(rows, tile_rows), ceil_div(pixels, tile_cols)
    tiles = geom.batch * geom.group * row_tiles * col_tiles
    return [("in_channels", geom.in_channels), ("depth", geom.in_per_group), ("rows", rows), ("pixels", pixels),
            ("groups", geom.group), ("row_tiles", row_tiles), ("col_tiles", col_tiles), ("tiles", tiles),
            ("a_group_stride", geom.in_per_group * rows), ("a_panel_stride", panel_stride)], tiles


def _tiled(name: str, tile: int) -> Variant:
    def configure(geom, caps, _params) -> Plan | Refusal:
        need = 2 * tile * tile * 4
        refusal = workgroup_memory_refusal(need, caps)
        if refusal:
            return Refusal(refusal)
        uniforms, tiles = _gemm_uniforms(geom, geom.out_per_group, tile, tile)
        params = {"dtype": geom.dtype, "has_bias": geom.has_bias, "tile": tile}
        workgroups = grid(tiles, caps.limit("maxComputeWorkgroupsPerDimension"))
        return Plan((dispatch(TILED, params, *io(geom), uniforms, workgroups, invocations=tile * tile),),
                    tiles={"tile": tile}, workgroup_bytes=need, tile_outputs=tile * tile,
                    tile_depth=padded_depth(geom.in_per_group, tile))

    return Variant(
        name=name, templates=(TILED,),
        summary=f"1x1 kernel, stride 1, no padding: a batched GEMM y = W^T x + b with {tile}x{tile} "
                "workgroup-memory tiles, one output per invocation",
        conditions=dict(ONE_BY_ONE), configure=configure, requires=WORKGROUP_MEMORY)


def reg_refusal(shape: dict, geom, caps) -> str | None:
    """Why a register-blocked GEMM shape cannot run on this device (None when it can)."""
    if any(not isinstance(shape.get(k), int) or shape[k] < 1 for k in ("wx", "wy", "rm", "rn", "tk")):
        return "tile sizes must be positive integers"
    if shape["wx"] * shape["wy"] > caps.limit("maxComputeInvocationsPerWorkgroup"):
        return "too many invocations per workgroup for this device"
    # maxComputeWorkgroupSizeY is not among the limits the device layer raises: WebGPU's default (256) holds.
    if shape["wx"] > caps.limit("maxComputeWorkgroupSizeX") or shape["wy"] > int(caps.limits.get(
            "maxComputeWorkgroupSizeY", 256)):
        return "the workgroup is wider than this device allows"
    if _reg_bytes(shape) > caps.limit("maxComputeWorkgroupStorageSize"):
        return "the tiles exceed the device's workgroup memory"
    return None


def _tiled_reg(name: str, default_shape: dict) -> Variant:
    tunable = Tunable(lambda geom, caps: dict(default_shape), reg_refusal)

    def configure(geom, caps, shape: dict) -> Plan | Refusal:
        need = _reg_bytes(shape)
        refusal = workgroup_memory_refusal(need, caps)
        if refusal:
            return Refusal(refusal)
        uniforms, tiles = _gemm_uniforms(geom, geom.out_per_group, _tile_rows(shape), _tile_cols(shape))
        params = {"dtype": geom.dtype, "has_bias": geom.has_bias, "weights": "w", "output": "y"} | shape
        workgroups = grid(tiles, caps.limit("maxComputeWorkgroupsPerDimension"))
        return Plan((dispatch(REG, params, *io(geom), uniforms, workgroups, invocations=_invocations(shape)),),
                    tiles=shape, workgroup_bytes=need, **_reg_work(geom, shape))

    shape = default_shape
    return Variant(
        name=name, templates=(REG,),
        summary=f"1x1 kernel, stride 1, no padding: a batched GEMM y = W^T x + b with {_tile_rows(shape)}x"
                f"{_tile_cols(shape)} workgroup-memory tiles (by default; tunable per adapter), {shape['rm']}x"
                f"{shape['rn']} outputs per invocation",
        conditions=dict(ONE_BY_ONE), configure=configure, tunable=tunable, requires=WORKGROUP_MEMORY)


def _col2im_uniforms(geom, taps: int, in_size: int) -> list[tuple[str, int]]:
    return ([("y_size", geom.y_size), ("out_channels", geom.out_channels), ("taps", taps), ("in_size", in_size)]
            + axis_uniforms(geom, closed_form=True))


def col_sizes(geom, tile_rows: int, tk: int, kz: int = 1) -> dict:
    """Element counts and strides of GEMM + col2im's buffers for one request (kz: splits of the reduction,
    each with a column buffer of its own)."""
    taps, in_size = math.prod(geom.kernel), math.prod(geom.in_spatial)
    rows = geom.out_per_group * taps
    row_tiles, depth_padded = ceil_div(rows, tile_rows), ceil_div(geom.in_per_group, tk) * tk
    return {"taps": taps, "in_size": in_size, "rows": rows, "tile_rows": tile_rows, "row_tiles": row_tiles,
            "depth_padded": depth_padded, "packed": geom.group * row_tiles * depth_padded * tile_rows,
            "cols": kz * geom.batch * geom.out_channels * taps * in_size}


def buffers_refusal(geom, caps, sizes: dict) -> str | None:
    """Why this device cannot hold GEMM + col2im's intermediate buffers (`col_sizes`) for the request (None when
    it can): a refusal during selection, so the planner falls through to the next rule."""
    limit = min(caps.limit("maxStorageBufferBindingSize"), caps.limit("maxBufferSize"))
    for name, elements, nbytes in (("column", sizes["cols"], sizes["cols"] * COLS_BYTES),
                                   ("packed weight", sizes["packed"], sizes["packed"] * DTYPE_BYTES[geom.dtype])):
        if nbytes > limit:
            return (f"needs a {name} buffer of {nbytes} bytes, over this device's storage buffer limit of {limit} "
                    "bytes (the gather kernels need no intermediate buffer)")
        if elements > MAX_INDEX:
            return f"needs a {name} buffer of {elements} elements, past i32 indexing"
    return None


def weight_pack_pass(rank: int, geom, sizes: dict, max_dim: int):
    """The cached weight-side pass: W into the GEMM's zero-padded [k][row] panels (w_packed)."""
    uniforms = [("packed_size", sizes["packed"]), ("depth", geom.in_per_group), ("rows", sizes["rows"]),
                ("depth_padded", sizes["depth_padded"]), ("row_tiles", sizes["row_tiles"]),
                ("tile_rows", sizes["tile_rows"])]
    return dispatch(REORDER_ENTRY[rank], {"dtype": geom.dtype, "workgroup_size": ELEMENTWISE_WORKGROUP},
                    ("w",), ("w_packed",), uniforms, grid(ceil_div(sizes["packed"], ELEMENTWISE_WORKGROUP), max_dim))


def split_uniforms(sizes: dict, kz: int) -> list[tuple[str, int]]:
    """A fold's uniforms for the GEMM's kz column buffers (none unsplit): how many, and how far apart."""
    return [("splits", kz), ("split_size", sizes["cols"] // kz)] if kz > 1 else []


def fold_pass(rank: int, geom, sizes: dict, max_dim: int, kz: int = 1, baked: bool = False, run: int = 1):
    """col2im: every output's bias plus the column entries (of every split) that reach it; `baked`: the
    attributes as literals in the shader (a pipeline per kernel, stride, dilation and pads); `run`: outputs of
    a row an invocation folds."""
    row_runs = ceil_div(geom.out_spatial[-1], run)
    invocations = geom.y_size // geom.out_spatial[-1] * row_runs
    runs = [("row_runs", row_runs), ("fold_size", invocations)] if run > 1 else []
    axes = dict(axis_uniforms(geom, closed_form=True))
    consts = [{name: axes[f"{name}{a}"] for name in ("k", "s", "d", "pad", "step", "gcd", "inv")}
              for a in range(rank)] if baked else None
    return dispatch(COL2IM_ENTRY[rank], {"rank": rank, "dtype": geom.dtype, "has_bias": geom.has_bias,
                                         "split": kz > 1, "consts": consts, "run": run,
                                         "workgroup_size": ELEMENTWISE_WORKGROUP},
                    ("cols", "b") if geom.has_bias else ("cols",), ("y",),
                    _col2im_uniforms(geom, sizes["taps"], sizes["in_size"]) + split_uniforms(sizes, kz) + runs,
                    grid(ceil_div(invocations if run > 1 else geom.y_size, ELEMENTWISE_WORKGROUP), max_dim))


def _col2im(rank: int, name: str, shape: dict) -> Variant:
    def configure(geom, caps, _params) -> Plan | Refusal:
        need = _reg_bytes(shape)
        refusal = workgroup_memory_refusal(need, caps)
        if refusal:
            return Refusal(refusal)
        sizes = col_sizes(geom, _tile_rows(shape), shape["tk"])
        too_big = buffers_refusal(geom, caps, sizes)
        if too_big:
            return Refusal(too_big)
        max_dim = caps.limit("maxComputeWorkgroupsPerDimension")
        gemm_uniforms, tiles = _gemm_uniforms(geom, sizes["rows"], sizes["tile_rows"], _tile_cols(shape),
                                              panel_stride=sizes["depth_padded"] * sizes["tile_rows"])
        gemm = dispatch(REG, {"dtype": geom.dtype, "has_bias": False, "weights": "w_packed", "output": "cols"}
                        | shape, ("x", "w_packed"), ("cols",), gemm_uniforms, grid(tiles, max_dim),
                        invocations=_invocations(shape))
        return Plan((gemm, fold_pass(rank, geom, sizes, max_dim)), scratch={"cols": sizes["cols"] * COLS_BYTES},
                    weight_passes=(weight_pack_pass(rank, geom, sizes, max_dim),),
                    prepared={"w_packed": sizes["packed"] * DTYPE_BYTES[geom.dtype]},
                    tiles=dict(shape), workgroup_bytes=need, **_reg_work(geom, shape))

    return Variant(
        name=name,
        templates=tuple(dict.fromkeys((REORDER_ENTRY[rank], REORDER, REG, COL2IM_ENTRY[rank], COL2IM))),
        summary=f"rank-{rank} GEMM + col2im: weights packed once (cached), a register-blocked GEMM into an f32 "
                "column buffer of every tap's contribution, then a fold that sums only the taps reaching each output",
        conditions={"rank": [rank], "group": ["dense", "grouped"], "input": "nonempty"},
        configure=configure, requires=WORKGROUP_MEMORY | BUFFERS)


VARIANTS = (
    _tiled("conv1x1_gemm_tiled", TILE),
    _tiled_reg("conv1x1_gemm_tiled_reg", REG_SHAPE),
    *(_col2im(rank, name, REG_SHAPE) for rank, name in COL2IM_NAMES.items()),
)
