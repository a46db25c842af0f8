"""col2im_gemm_vec4: GEMM + col2im for real GPUs, float32 (app/variants/gemm.py has the family's shared passes: the
weight pack and the general fold). The column GEMM cols[split, n, g, m*taps + t, i] = sum_c W[c, m, t] x[n, c, i] is a
plain row-major GEMM (templates/conv-transpose-cols-gemm-vec4.wgsl.jinja: 16-byte loads of both operands, two
buffers, one barrier a step) in which every workgroup walks the same reduction, split across workgroups where the
tiles alone do not fill the GPU; the fold sums each output's taps and splits, by cells where the kernel is small
enough to be written out (templates/conv-transpose-col2im-cells.wgsl.jinja).

Against the stride-phase GEMMs it trades a column buffer of taps x input pixels x out-channels (written, then read
back by the fold) for tiles that are all equally deep and have taps / stride-phases times as many outputs to
spread: it wins where their phases are unequal (k3 s2: 1 to 4 taps) or too few rows to fill the GPU unsplit
(app/planner.py says where, with the measurements).
"""
from __future__ import annotations

import itertools
import math

from ..plan import Plan, Refusal, dispatch, grid
from .base import BUFFERS, DTYPE_BYTES, WORKGROUP_MEMORY, Tunable, Variant, ceil_div
from .gemm import (COL2IM, COL2IM_ENTRY, COLS_BYTES, ELEMENTWISE_WORKGROUP, REORDER_ENTRY, buffers_refusal, col_sizes,
                   fold_pass, split_uniforms, weight_pack_pass)

# Invocations that fill the GPU: the H200's (phase_gemm's `fill_invocations`); not yet its table's data as
# phase_gemm's are (docs/decisions.md#neutral-defaults).
FILL_INVOCATIONS = 32768


# The vector GEMM into columns: tm x tn tiles of rows x pixels, rm x rn per invocation, tk in-channels a step, the
# reduction split kz ways; fc: the fold, 0 with the attributes as uniforms, 1 as literals, 2 by cells (every tap
# written out: kernels of up to CELL_MAX_TAPS taps, strides of up to CELL_MAX_PHASES phases); fr: outputs a fold
# invocation sums (fc 0 and 1). Defaults: 64 x 64 tiles of 8 x 8 at step 8, the fold by cells where they fit; kz the
# smallest of COLS_SPLITS that makes FILL_INVOCATIONS, COLS_MIN_STEPS steps a split (docs/decisions.md#cols-gemm).
COLS_VEC4 = "conv-transpose-cols-gemm-vec4.wgsl.jinja"
COLS_VEC4_SHAPE = {"tm": 64, "tn": 64, "rm": 8, "rn": 8, "tk": 8, "fc": 2, "fr": 4}
COL2IM_CELLS = "conv-transpose-col2im-cells.wgsl.jinja"
CELL_MAX_TAPS = 64
CELL_MAX_PHASES = 64
COLS_SPLITS = (1, 2, 4, 8)
COLS_MIN_STEPS = 8


def split_count(geom, tm: int, tn: int, threads: int, step: int) -> int:
    """kz for tm x tn tiles of `threads` invocations reducing `step` in-channels a step: the smallest of COLS_SPLITS
    that makes FILL_INVOCATIONS, keeping COLS_MIN_STEPS steps a split (1 if none can)."""
    rows = geom.out_per_group * math.prod(geom.kernel)
    tiles = geom.batch * geom.group * ceil_div(rows, tm) * ceil_div(math.prod(geom.in_spatial), tn)
    steps = ceil_div(geom.in_per_group, step)
    fits = [kz for kz in COLS_SPLITS if steps // kz >= COLS_MIN_STEPS]
    return next((kz for kz in fits if tiles * threads * kz >= FILL_INVOCATIONS), fits[-1] if fits else 1)


def _cols_defaults(geom, caps) -> dict:
    t = dict(COLS_VEC4_SHAPE) | ({} if cells_fit(geom) else {"fc": 1})
    threads = (t["tm"] // t["rm"]) * (t["tn"] // t["rn"])
    return t | {"kz": split_count(geom, t["tm"], t["tn"], threads, t["tk"])}


def cells_fit(geom) -> bool:
    return math.prod(geom.kernel) <= CELL_MAX_TAPS and math.prod(geom.strides) <= CELL_MAX_PHASES


def cell_phases(geom) -> list[dict]:
    """The cells fold's body: per combination of stride phases j (one per axis), the taps that reach output
    c*s + j, each as its flat tap index and its input offsets from c, where k*d = j + pad (mod s)."""
    per_axis = [[[(k, (j + pad - k * d) // s) for k in range(size) if (j + pad - k * d) % s == 0] for j in range(s)]
                for size, s, d, pad in zip(geom.kernel, geom.strides, geom.dilations, geom.pads_begin)]
    phases = []
    for js in itertools.product(*(range(s) for s in geom.strides)):
        taps = []
        for combo in itertools.product(*(per_axis[a][j] for a, j in enumerate(js))):
            flat = 0
            for size, (k, _) in zip(geom.kernel, combo):
                flat = flat * size + k
            taps.append([flat, [offset for _, offset in combo]])
        phases.append({"j": list(js), "taps": taps})
    return phases


def cells_fold_pass(geom, sizes: dict, max_dim: int, kz: int):
    """The fold by cells: one invocation per cell of prod(strides) outputs, every tap written out."""
    cells = [ceil_div(o, s) for o, s in zip(geom.out_spatial, geom.strides)]
    count = geom.batch * geom.out_channels * math.prod(cells)
    uniforms = ([("cell_count", count), ("out_channels", geom.out_channels), ("taps", sizes["taps"]),
                 ("in_size", sizes["in_size"]), ("out_size", math.prod(geom.out_spatial))]
                + [(f"{name}{a}", v[a]) for a in range(geom.rank)
                   for name, v in (("cells", cells), ("in", geom.in_spatial), ("out", geom.out_spatial))]
                + split_uniforms(sizes, kz))
    params = {"rank": geom.rank, "dtype": geom.dtype, "has_bias": geom.has_bias, "split": kz > 1,
              "phases": cell_phases(geom), "strides": list(geom.strides), "workgroup_size": ELEMENTWISE_WORKGROUP}
    return dispatch(COL2IM_CELLS, params, ("cols", "b") if geom.has_bias else ("cols",), ("y",), uniforms,
                    grid(ceil_div(count, ELEMENTWISE_WORKGROUP), max_dim))


def cols_vec4_refusal(t: dict, geom, caps) -> str | None:
    """Why tile shape t of the vector column GEMM cannot run on this device (None when it can)."""
    if any(not isinstance(t.get(k), int) or t[k] < 1 for k in ("tm", "tn", "rm", "rn", "tk", "kz")):
        return "tile sizes must be positive integers"
    if why := fold_refusal(t, geom):
        return why
    if t["rm"] % 4 or t["rn"] % 4 or t["tm"] % t["rm"] or t["tn"] % t["rn"]:
        return "rm and rn must be multiples of 4 dividing tm and tn"
    threads = (t["tm"] // t["rm"]) * (t["tn"] // t["rn"])
    if threads > min(caps.limit("maxComputeInvocationsPerWorkgroup"), caps.limit("maxComputeWorkgroupSizeX")):
        return "too many invocations per workgroup for this device"
    if (t["tk"] * t["tm"] // 4) % threads or (t["tk"] * t["tn"] // 4) % threads:
        return "a step's vectors of A and of x must be a whole number per invocation"
    if _cols_bytes(t) > caps.limit("maxComputeWorkgroupStorageSize"):
        return "the tiles exceed the device's workgroup memory"
    return None


def _cols_bytes(t: dict) -> int:
    return 2 * t["tk"] * (t["tm"] + t["tn"]) * 4  # two buffers of a step of A and of x, f32


def fold_refusal(t: dict, geom) -> str | None:
    """Why the fold params of t cannot run for this request (None when they can)."""
    if t.get("fc") not in (0, 1, 2):
        return "fc (the fold: attributes as uniforms, as literals, by cells) is 0, 1 or 2"
    if t["fc"] == 2 and not cells_fit(geom):
        return (f"fc 2 (the fold by cells) writes every tap out: kernels of up to {CELL_MAX_TAPS} taps and strides of "
                f"up to {CELL_MAX_PHASES} phases")
    if t.get("fr") not in (1, 2, 4, 8):
        return "fr (outputs an invocation of the fold sums) is 1, 2, 4 or 8"
    return None


def _configure(geom, caps, t: dict) -> Plan | Refusal:
    """The weight pack, the column GEMM on t's tiles (split kz ways), the fold."""
    if why := cols_vec4_refusal(t, geom, caps):  # the defaults too: a device may lack what they need
        return Refusal(why)
    in_size = math.prod(geom.in_spatial)
    if in_size % 4:
        return Refusal(f"needs input pixels per channel a multiple of 4, for x's rows and the columns' rows "
                       f"to load and store as vectors (the input has {in_size})")
    tm, tk = t["tm"], t["tk"]
    total = ceil_div(geom.in_per_group, tk)
    per_split = ceil_div(total, t["kz"])
    kz = ceil_div(total, per_split)  # no split left empty
    sizes = col_sizes(geom, tm, tk, kz)
    too_big = buffers_refusal(geom, caps, sizes)
    if too_big:
        return Refusal(too_big)
    max_dim = caps.limit("maxComputeWorkgroupsPerDimension")
    images = geom.batch * geom.group
    row_tiles, col_tiles = sizes["row_tiles"], ceil_div(in_size, t["tn"])
    tiles = kz * images * row_tiles * col_tiles
    uniforms = [("in_channels", geom.in_channels), ("depth", geom.in_per_group), ("rows", sizes["rows"]),
                ("pixels4", in_size // 4), ("groups", geom.group), ("images", images), ("row_tiles", row_tiles),
                ("col_tiles", col_tiles), ("tiles", tiles), ("a_panel_vecs", sizes["depth_padded"] * tm // 4),
                ("steps", per_split), ("total_steps", total)]
    vec4 = "array<vec4<T>>"
    # kz rides along (the template does not read it) so that the shader matrix sees every tuning-grid value
    params = {k: t[k] for k in ("tm", "tn", "rm", "rn", "tk")} | {"kz": kz}
    gemm = dispatch(COLS_VEC4, params, ("x", "w_packed"), ("cols",), uniforms, grid(tiles, max_dim),
                    types={"x": vec4, "w_packed": vec4, "cols": "array<vec4<f32>>"},
                    invocations=(t["tm"] // t["rm"]) * (t["tn"] // t["rn"]))
    fold = (cells_fold_pass(geom, sizes, max_dim, kz) if t["fc"] == 2
            else fold_pass(geom.rank, geom, sizes, max_dim, kz, baked=t["fc"] == 1, run=t["fr"]))
    return Plan((gemm, fold), scratch={"cols": sizes["cols"] * COLS_BYTES},
                weight_passes=(weight_pack_pass(geom.rank, geom, sizes, max_dim),),
                prepared={"w_packed": sizes["packed"] * DTYPE_BYTES[geom.dtype]},
                tiles=t | {"splits": kz}, workgroup_bytes=_cols_bytes(t), tile_outputs=tm * t["tn"],
                tile_depth=per_split * tk)


VEC4 = Variant(
    name="col2im_gemm_vec4",
    templates=tuple(dict.fromkeys((*REORDER_ENTRY.values(), COLS_VEC4, COL2IM_CELLS, *COL2IM_ENTRY.values(), COL2IM))),
    summary="GEMM + col2im for real GPUs: weights packed once (cached), the column GEMM as a plain row-major "
            "GEMM of 16-byte loads (every workgroup the same reduction, split along it to fill the GPU), then "
            "a fold that sums each output's taps and splits",
    conditions={"rank": [1, 2, 3], "group": ["dense", "grouped"], "input": "nonempty"},
    configure=_configure, dtypes=("float32",), tunable=Tunable(_cols_defaults, cols_vec4_refusal),
    requires=WORKGROUP_MEMORY | BUFFERS)


VARIANTS = (VEC4,)
