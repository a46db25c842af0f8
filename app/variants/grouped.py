"""Grouped and depthwise ConvTranspose of any rank with every stride >= 2, by stride phase, unrolled.

Kernel dims, strides, dilations and `pads mod stride` along the last axis are render parameters, so the
phase arithmetic happens here in Python, once per pipeline: which taps reach which output and from which
input offset is a constant table (`plan`), and the template emits straight-line code from it, with
no tap search, no per-tap test and no multiply by an inserted zero. Sizes come from uniforms.

An invocation owns one stride cell along every outer axis (the s outputs, one per phase, that read one
input window), `cells` consecutive ones along the next-to-last axis, and `outs` consecutive outputs along
the last axis, starting at a multiple of `outs` (a multiple of both the stride and the store width):
consecutive invocations write consecutive addresses with `vec`-wide stores. The dispatch grid has the
output's shape (chunks of the last axis, cells of the next, planes), so no invocation divides by a size.
Per input channel of its group it loads its input window once into registers (neighbouring invocations'
overlapping windows hit L1, not DRAM; with `xv`, as vectors of x's last axis) and its taps' weights (uniform
across the workgroup: a broadcast; on GPUs four at a time, laid out as f32 rows padded to vec4s by a weight
pass once per weight content), then feeds every output the window reaches, in each of its `chans` output
channels: with several channels per group the kernel is bound by load instructions, and these share them.

Out-of-range inputs load as zero, so the variant needs finite weights (see base.CONDITIONS' finite_data: a
NaN or Inf in x meets only its real taps, so the check before a call scans w alone);
kernels whose unrolled body would not fit in registers are refused (the gather kernels cover them).
"""
from __future__ import annotations

import functools
import itertools
import math

from ..plan import Plan, Refusal, dispatch, grid
from .base import Tunable, Variant, channel_uniforms

TEMPLATE = "conv-transpose-grouped-stride-phase.wgsl.jinja"
# 2D renders through the seed's names: thin entries over TEMPLATE that fix the rank, the blocked one for
# several output channels per invocation (the same WGSL).
SEED_2D = "conv-transpose2d-grouped-stride-phase.wgsl.jinja"
SEED_2D_BLOCKED = "conv-transpose2d-grouped-stride-phase-blocked.wgsl.jinja"
WEIGHT_ROWS = "conv-transpose-grouped-weight-rows.wgsl.jinja"
ROWS_WORKGROUP = 64
NAMES = {1: "ncl1d_grouped_stride_phase", 2: "nchw2d_grouped_stride_phase", 3: "ncdhw3d_grouped_stride_phase"}
VECS = (1, 2, 4, 8)  # 8: float16 only, eight halves packed into one 16-byte store
MAX_TERMS = 1024  # multiply-adds per input channel: past this the straight-line body is too long to compile well
MAX_VALUES = 160  # window + taps + accumulators, f32 each: past this the registers spill


def _axis(geom, a: int):
    return (geom.in_spatial[a], geom.out_spatial[a], geom.kernel[a], geom.strides[a], geom.dilations[a],
            geom.pads_begin[a])


def phase_tap_offsets(rel: int, k: int, s: int, d: int) -> list[tuple[int, int]]:
    """(tap, input offset) pairs reaching output t = q*s + rel from input q + offset: t - tap*d = s*(q + offset)."""
    return [(tap, (rel - tap * d) // s) for tap in range(k) if (rel - tap * d) % s == 0]


def plan(geom, outs: int, cells: int = 1) -> dict:
    """The unrolled body of `outs` outputs along the last axis and `cells` cells along the next (see _plan)."""
    return _plan(tuple(_axis(geom, a)[2:] for a in range(geom.rank)), outs, cells)


@functools.lru_cache(maxsize=4096)  # the tuner and the shader matrix ask for the same bodies many times
def _plan(axes: tuple, outs: int, cells: int) -> dict:
    """The unrolled body as render parameters, from per axis (kernel, stride, dilation, pad). Outer axes own
    one cell (outputs q*s + r - pad, r < s), the next-to-last `cells` (r < s * cells); the last axis owns
    `outs` outputs o0 + v, whose t = o0 + v + pad is q*s + (pad mod s) + v, q being the axis's base.
    `windows`: per axis, the input offsets from q that the owned outputs' taps read; `loads`: the window's
    samples (per axis an index into `windows`); `rows`: the outer axes' phases, one output row each; `accs`:
    per owned output [row, v, [[load, flat tap], ...]]; `taps`: the flat taps used."""
    rank = len(axes)
    per_axis = []
    for a, (k, s, d, pad) in enumerate(axes):
        rels = {rank - 1: [pad % s + v for v in range(outs)], rank - 2: range(s * cells)}.get(a, range(s))
        per_axis.append([phase_tap_offsets(rel, k, s, d) for rel in rels])
    windows = [sorted({off for pairs in axis for _, off in pairs}) for axis in per_axis]
    loads = list(itertools.product(*(range(len(w)) for w in windows)))
    strides = [math.prod(k for k, *_ in axes[a + 1:]) for a in range(rank)]
    accs = []
    rows = list(itertools.product(*(range(len(axis)) for axis in per_axis[:-1])))
    for r, row in enumerate(rows):
        for v, last in enumerate(per_axis[-1]):
            pairs = [per_axis[a][row[a]] for a in range(rank - 1)] + [last]
            terms = [[loads.index(tuple(windows[a].index(off) for a, (_, off) in enumerate(combo))),
                      sum(tap * strides[a] for a, (tap, _) in enumerate(combo))]
                     for combo in itertools.product(*pairs)]
            accs.append([r, v, terms])
    taps = sorted({tap for _, _, terms in accs for _, tap in terms})
    return {"windows": windows, "loads": [list(l) for l in loads], "rows": [list(r) for r in rows], "accs": accs,
            "taps": taps}


def vector_reads(body: dict, xv: int) -> dict:
    """The window's loads as vec{xv} reads of x's last axis: `vector_reads`, per outer window position and
    vector j, the vector at q + j*xv; `vector_parts`, per load, [its read, its component]."""
    last = body["windows"][-1]
    reads, parts = [], []
    for load in body["loads"]:
        j, part = divmod(last[load[-1]], xv)
        key = [load[:-1], j]
        if key not in reads:
            reads.append(key)
        parts.append([reads.index(key), part])
    return {"vector_reads": reads, "vector_parts": parts}


def x_vector(geom, outs: int) -> int:
    """The width x can be read at: the inputs a chunk advances by (outs / stride), where 2 or 4 of them
    start every chunk, and so every row, on a multiple of that width."""
    width = outs // geom.strides[-1]
    aligned = geom.in_spatial[-1] % width == 0 and (geom.pads_begin[-1] // geom.strides[-1]) % width == 0
    return width if width in (2, 4) and outs % geom.strides[-1] == 0 and aligned else 1


def body_size(geom, outs: int, cells: int, chans: int = 1) -> tuple[int, int]:
    """(multiply-adds, f32 values live) per input channel of the unrolled body."""
    body = plan(geom, outs, cells)
    return (chans * sum(len(t) for _, _, t in body["accs"]),
            len(body["loads"]) + chans * (len(body["taps"]) + len(body["accs"])))


def _widest_store(geom) -> int:
    """Outputs per 16-byte store: a vec4 of f32, or eight float16 outputs packed into a vec4<u32>."""
    return 8 if geom.dtype == "float16" else 4


def resolved(params: dict, geom) -> tuple[int, int]:
    """(vec, outs) as launched: the store width drops to the largest that divides the last axis's length
    (every row then starts aligned), and outs rounds up to a multiple of the width and the stride."""
    out_last, s_last = geom.out_spatial[-1], geom.strides[-1]
    vec = max(v for v in VECS if v <= min(params["vec"], _widest_store(geom)) and out_last % v == 0)
    unit = vec * s_last // math.gcd(vec, s_last)
    return vec, -(-params["outs"] // unit) * unit


def default_params(geom, caps) -> dict:
    # GPUs: one 16-byte store a row per invocation (a warp's store covers 512 contiguous bytes) and about 32 outputs
    # an invocation, through more stride cells of the next-to-last axis (they share window rows and index arithmetic)
    # or, with several out-channels a group, up to 4 channels first (docs/decisions.md#grouped-defaults). Software
    # adapters: fewer, longer invocations (16 outputs a row, at most 32 an invocation), as SwiftShader's tuning found.
    rows = math.prod(geom.strides[:-1])
    widest = _widest_store(geom)
    if caps.is_software:
        wanted = {"vec": 4, "outs": min(16, max(4, 32 // rows)), "workgroup_size": 64, "cells": 1, "chans": 1}
    elif geom.out_per_group > 1:
        chans = max(c for c in (1, 2, 4) if geom.out_per_group % c == 0 and (c == 1 or 4 * rows * c <= 32))
        cells = max(1, 32 // (4 * rows * chans)) if geom.rank > 1 else 1
        wanted = {"vec": 4, "outs": 4, "workgroup_size": 128, "cells": cells, "chans": chans}
    else:
        cells = max(1, 32 // (widest * rows)) if geom.rank > 1 else 1
        wanted = {"vec": widest, "outs": widest, "workgroup_size": 128, "cells": cells, "chans": 1}
    # Where the unrolled body would not fit, fewer channels and cells, then fewer outputs, then narrower stores.
    for outs in [wanted["outs"]] + [o for o in (8, 4, 1) if o < wanted["outs"]]:
        for vec in [v for v in reversed(VECS) if v <= wanted["vec"]]:
            for chans in [c for c in (4, 2, 1) if c <= wanted["chans"]]:
                for cells in range(wanted["cells"], 0, -1):
                    params = wanted | {"vec": vec, "outs": outs, "cells": cells, "chans": chans}
                    if _fits(params, geom):
                        return params | {"xv": int(_reads_vectors(geom, caps, params))}
    return wanted | {"vec": 1, "outs": 1, "cells": 1, "chans": 1, "xv": 0}


def _reads_vectors(geom, caps, params: dict) -> bool:
    # x as vectors pays for float16, whose scalar reads move 2 bytes each; float32 and software adapters read scalars
    # (docs/decisions.md#grouped-x-vectors).
    return geom.dtype == "float16" and not caps.is_software and x_vector(geom, resolved(params, geom)[1]) > 1


def _fits(params: dict, geom) -> bool:
    terms, values = body_size(geom, resolved(params, geom)[1], params["cells"], params["chans"])
    return terms <= MAX_TERMS and values <= MAX_VALUES


def params_refusal(params: dict, geom, caps) -> str | None:
    names = ("vec", "outs", "workgroup_size", "cells", "chans", "xv")
    lowest = {n: 0 if n == "xv" else 1 for n in names}
    if set(params) != set(names) or any(not isinstance(params[n], int) or params[n] < lowest[n] for n in names):
        return f"params must be the positive integers {names} (xv: 0 or 1)"
    if params["vec"] not in VECS:
        return f"vec must be one of {VECS}"
    if params["vec"] > _widest_store(geom):
        return "vec 8 packs float16 outputs; float32 stores are at most vec4"
    if geom.rank == 1 and params["cells"] != 1:
        return "cells counts stride cells of the next-to-last axis: 1D has none"
    if params["xv"] not in (0, 1):
        return "xv is a switch: 0 or 1"
    if params["xv"] and x_vector(geom, resolved(params, geom)[1]) == 1:
        return "xv reads x as vectors of outs / stride (2 or 4) inputs, which must start every chunk and row"
    if geom.out_per_group % params["chans"]:
        return f"chans {params['chans']} does not divide the {geom.out_per_group} output channels of a group"
    size = params["workgroup_size"]
    if size > caps.limit("maxComputeInvocationsPerWorkgroup") or size > caps.limit("maxComputeWorkgroupSizeX"):
        return f"{size} invocations per workgroup exceed the device's limit"
    if not _fits(params, geom):
        return f"the unrolled body exceeds {MAX_TERMS} multiply-adds or {MAX_VALUES} live values per input channel"
    return None


TUNABLE = Tunable(default_params, params_refusal)


def cell_uniforms(geom, outs: int, cells: int, chans: int = 1) -> list[tuple[str, int]]:
    """Per axis: in, out, pad, q (outer axes: the first cell, floor(pad / s); last axis: floor(pad / s), the
    base of chunk 0) and cells (outer axes: how many cells, or runs of `cells` cells on the next-to-last, reach
    the output; last axis: chunks of outs); then zs, the grid's z extent: planes of `chans` output channels
    (3D: times axis 0's cells)."""
    fields = []
    for a in range(geom.rank):
        i, o, _, s, _, pad = _axis(geom, a)
        count = (o - 1 + pad) // s - pad // s + 1 if a < geom.rank - 1 else -(-o // outs)
        if a == geom.rank - 2:
            count = -(-count // cells)
        fields += [(f"in{a}", i), (f"out{a}", o), (f"pad{a}", pad), (f"q{a}", pad // s), (f"cells{a}", count)]
    planes = geom.batch * geom.out_channels // chans
    return fields + [("zs", planes * (dict(fields)["cells0"] if geom.rank == 3 else 1))]


def workgroup_shape(size: int, chunks: int) -> tuple[int, int]:
    """(x, y) extents: x as many lanes as the last axis has chunks, up to the whole workgroup, so that short
    rows do not leave lanes idle; the rest along the next axis's cells."""
    wx = min(size, 1 << max(chunks - 1, 0).bit_length())
    return (wx, size // wx) if size % wx == 0 else (size, 1)


def entry(rank: int, chans: int) -> str:
    """The template a rank and channel block render through."""
    if rank != 2:
        return TEMPLATE
    return SEED_2D_BLOCKED if chans > 1 else SEED_2D


def configure(geom, caps, params: dict) -> Plan | Refusal:
    refusal = params_refusal(params, geom, caps)
    if refusal:
        return Refusal(refusal)
    vec, outs = resolved(params, geom)
    cells = dict(cell_uniforms(geom, outs, params["cells"], params["chans"]))
    last = geom.rank - 1
    size = params["workgroup_size"]
    wx, wy = workgroup_shape(size, cells[f"cells{last}"]) if geom.rank > 1 else (size, 1)
    limit = caps.limit("maxComputeWorkgroupsPerDimension")
    workgroups = (-(-cells[f"cells{last}"] // wx), -(-cells[f"cells{last - 1}"] // wy) if geom.rank > 1 else 1,
                  min(cells["zs"], limit))
    if max(workgroups[:2]) > limit:
        return Refusal(f"{workgroups[:2]} workgroups along x, y exceed the device's {limit} per dimension")
    # On GPUs each (channel, out-channel) row of taps is padded to whole vec4s of f32 by a weight pass, once per
    # weight content (a tap: a quarter of a load, no conversion); software adapters read w as it is
    # (docs/decisions.md#grouped-packed-weights).
    taps = math.prod(geom.kernel)
    packed_w = not caps.is_software
    row_vec4s = -(-taps // 4)
    rows = geom.in_channels * geom.out_per_group
    weight_passes, prepared = (), {}
    if packed_w:
        weight_passes = (dispatch(WEIGHT_ROWS, {"dtype": geom.dtype, "workgroup_size": ROWS_WORKGROUP},
                                  ("w",), ("wt",), [("rows", rows), ("row_vec4s", row_vec4s), ("taps", taps)],
                                  grid(-(-rows * row_vec4s // ROWS_WORKGROUP), limit)),)
        prepared = {"wt": rows * row_vec4s * 16}
    uniforms = channel_uniforms(geom) + list(cells.items())
    xv = x_vector(geom, outs) if params["xv"] else 1
    body = plan(geom, outs, params["cells"])
    render = {"dtype": geom.dtype, "has_bias": geom.has_bias, "workgroup_size": size, "wx": wx,
              "z_loop": cells["zs"] > limit, "rank": geom.rank, "strides": list(geom.strides), "vec": vec,
              "outs": outs, "cells": params["cells"], "chans": params["chans"],
              "packed_w": packed_w, "w_row": row_vec4s if packed_w else taps, "xv": xv} | body
    if xv > 1:
        render |= vector_reads(body, xv)
    types = {"y": "array<vec4<u32>>" if vec == 8 else f"array<vec{vec}<T>>"} if vec > 1 else {}
    if xv > 1:
        types["x"] = f"array<vec{xv}<T>>"
    reads = ("x", "wt" if packed_w else "w") + (("b",) if geom.has_bias else ())
    return Plan((dispatch(entry(geom.rank, params["chans"]), render, reads, ("y",), uniforms, workgroups, types),),
                  weight_passes=weight_passes, prepared=prepared,
                  tiles={"vec": vec, "outs": outs, "workgroup_size": size, "cells": params["cells"],
                         "chans": params["chans"], "xv": xv})


VARIANTS = tuple(Variant(
    name=name, templates=((SEED_2D_BLOCKED, SEED_2D) if rank == 2 else ()) + (TEMPLATE, WEIGHT_ROWS),
    summary=f"grouped/depthwise {rank}D, strides >= 2: stride phases unrolled from tables made at render time "
            "(taps and input offsets per output, no tap search); an invocation owns `chans` output channels, one "
            "stride cell per outer axis and `outs` consecutive outputs of the last axis, stored `vec` wide, its "
            "input window and taps loaded once per input channel; any dilation, pads, output_padding",
    conditions={"rank": [rank], "group": ["grouped"], "min_stride": 2, "input": "nonempty", "finite_data": True},
    # Every in-range x sample meets only its real taps; the zeros loaded outside x meet weights.
    unsafe_nonfinite=("w",),
    configure=configure, tunable=TUNABLE) for rank, name in NAMES.items())
