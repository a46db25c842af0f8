"""Every dense or grouped ConvTranspose of rank 1-3 as implicit GEMMs, one per (group, stride phase), in one
dispatch (templates/conv-transpose-phase-gemm.wgsl.jinja), after a cached pass that packs the weights.

Per stride phase the outputs form a dense sub-grid that exactly the phase's taps reach, so the GEMM has no
zero multiplies and no per-output tap search: rows = batch x the phase's sub-grid, cols = out-channels of
the group, reduction = in-channels x the phase's taps. Stride 1 is one phase with every tap and a 1x1
kernel one tap, so this one kernel serves what a phase GEMM, an implicit stride-1 GEMM and a 1x1 GEMM do,
in every rank.

float32 at stride 1 on GPUs (cl): x is first repacked channels-last (templates/conv-transpose-x-channels-last.wgsl.jinja,
`channels_last_pass`, which phase_gemm_sgmat's cl shares), so that a GEMM row's in-channels are consecutive vec4s,
and the GEMM runs in the structure of the fastest f32 GEMM measured through WGSL
(templates/conv-transpose-phase-gemm-vec4.wgsl.jinja; docs/ceiling.md F-128x128-8x8-k8). Elsewhere on GPUs float32
runs that structure on A gathered from NCHW x (rv) where the reduction is long or y leaves as vectors.

The tile shape is the GPU's business: big tiles (128 x 128, 8 x 8 per invocation) where the GEMM has
rows and columns to fill a GPU several times, smaller ones where it does not, and a long reduction split
where even small tiles leave the GPU idle: among slices of the workgroup (ks) where the outputs are a few
rows, else across kz workgroups (split-K), whose f32 partial sums a second, elementwise pass adds up
(templates/conv-transpose-split-sum.wgsl.jinja): a second dispatch, but kz times the workgroups, each
walking 1/kz of the reduction.
"""
from __future__ import annotations

import math

from ..plan import Plan, Refusal, dispatch, grid
from .base import (DTYPE_BYTES, INVOCATIONS_LIMIT, WORKGROUP_MEMORY, WORKGROUP_STORAGE, Configuration, Tunable,
                   Variant, axis_uniforms, below, ceil_div, channels_last_pays, fitted_width, max_phase_taps,
                   padded_depth, phase_rows, reaches, split_structure, workgroup_count, workgroup_memory_refusal)
from .base import rules as variant_rules
from .gemm import MAX_INDEX

NAME = "phase_gemm"
TEMPLATE = "conv-transpose-phase-gemm.wgsl.jinja"
# The GEMM in the vector structure of the fastest f32 GEMM (rv, or cl: on A from x repacked channels-last, xc, a
# scratch buffer that a pass before it fills).
VEC4 = "conv-transpose-phase-gemm-vec4.wgsl.jinja"
X_CHANNELS_LAST = "conv-transpose-x-channels-last.wgsl.jinja"
X_PACK_PIXELS, X_PACK_VECTORS = 32, 8  # the repack's workgroup tile: pixels x 16-byte vectors of xc
XC_VIEW = {"float32": "array<vec4<f32>>", "float16": "array<vec4<u32>>"}  # 4 f32 or 8 f16 in-channels a vector
PACK = "conv-transpose-weight-pack.wgsl.jinja"
SPLIT_SUM = "conv-transpose-split-sum.wgsl.jinja"
SHARED = ("_phase-gemm.wgsl.jinja", "_phase-axis.wgsl.jinja")  # included by both GEMM templates
PACK_WORKGROUP = 256
SUM_WORKGROUP = 256
PARAMS = ("tm", "tn", "rm", "rn", "tk", "ks", "kz")
# The cl, rv, ri and direct switches (0 or 1) are params only where they are on: plans that leave them off stay as they
# were before they existed (tools/plan_digest.py compares them).
CL = "cl"
RV = "rv"  # the vector structure on A gathered from x (cl, when on, runs it on xc instead, whatever rv says)
# direct: each reduction step loads straight into workgroup memory, in WGSL loops: on in software adapters' defaults
# (no load latency to hide; unrolled loads compile slowly there), off on GPUs (docs/decisions.md#phase-gemm-direct).
# ri: in the vector template a staged vector of A holds 4 rows tm/rm apart, so that a warp's scalar stores of a column
# land on consecutive rows of y; on for rv's 1D and one-tap-a-phase GEMMs (docs/decisions.md#phase-gemm-ri).
RI = "ri"
DIRECT = "direct"  # the gathering kernel's: cl and rv run the vector template whatever it says
PARTS_BYTES = 4  # the split-K partial sums are f32 whatever the storage dtype: summed again before rounding

# The GPU rules below read thresholds (upper case here; NEUTRAL's lower case keys in code) that an adapter's table
# measures (`thresholds`, app/tuning_tables.py; the H200's: tuning/nvidia-unknown-nvidia_h200.json). An adapter with
# no table runs its class's (a GPU: the H200's); where no table of the class has them, NEUTRAL: 64 x 128 tiles (or
# the narrow ones), unsplit, A gathered (docs/decisions.md#neutral-defaults).
# GPU tiles (tm, tn, rm, rn, tk, ks, kz): 8 x 8 register blocks, 64 columns up to 64 out-channels, 128 x 128 at
# step 8 where that makes FILL workgroups, else 64 x 128 at step 16 (docs/decisions.md#phase-gemm-tiles).
# Under SPLIT_BELOW workgroups a reduction of SPLIT_DEPTH or more splits among slices of the workgroup (_GPU_SPLIT),
# and slices of SPLIT_ACROSS_MIN_STEPS steps or more also across workgroups (docs/decisions.md#phase-gemm-slices).
# Software adapters run few, small invocations best (_CPU_SHAPE).
_GPU_NARROW = (128, 64, 8, 8, 16, 1, 1)
_FEW_RM = 4  # 4 x 8 blocks: twice the invocations of 8 x 8 on the same tile, where invocations are few (below)
# Narrow GEMMs (out_per_group <= 64) left unsplit: 4 x 8 blocks (_FEW_RM), columns as wide as the out-channels
# rounded up to 32 or 64, at step 16, or 8 on 32 columns (docs/decisions.md#phase-gemm-narrow).
_GPU_NARROWEST = (32, 8)  # tn where out_per_group fits in it, and its step
# Past 64 out-channels the wide tiles take 64 columns where 128 would compute more (wide_columns: 192 out-channels
# make three 64-column tiles, not two of 128) (docs/decisions.md#phase-gemm-wide-columns).
_GPU_WIDE = (128, 128, 8, 8, 8, 1, 1)
_GPU_WIDE_FEW = (64, 128, 8, 8, 16, 1, 1)
_GPU_SPLIT = (16, 32, 4, 4, 8, 8, 1)
_GPU_SPLIT_SLICES_WITH_KZ = 4
_CPU_SHAPE = (32, 32, 4, 4, 8, 1, 1)
# Split-K across workgroups: a GEMM under SPLIT_BELOW workgroups, SPLIT_K_DEPTH deep and SPLIT_K_MIN_ROWS tall a
# phase, runs _GPU_DEEP tiles over the smallest kz of SPLIT_K_CHOICES that makes FILL workgroups, keeping
# SPLIT_K_MIN_STEPS steps a split (docs/decisions.md#phase-gemm-split-k). Fewer rows keep the slices above.
_GPU_DEEP = (64, 64, 8, 8, 16, 1, 1)
SPLIT_K_DEPTH = 512
SPLIT_K_CHOICES = (2, 4, 8, 16)
SPLIT_K_MIN_STEPS = 8
# Split-K needs a few row tiles per phase (docs/decisions.md#phase-gemm-split-k).
SPLIT_K_MIN_ROWS = 4 * _GPU_DEEP[0]
# cl where base.channels_last_pays and the choices above leave the GEMM unsplit: 8 x 8 blocks at step 16, 128 x 128
# tiles where they make FILL workgroups, else those split across the smallest kz that makes FILL_INVOCATIONS
# (invocations count, not workgroups), else 64 rows (docs/decisions.md#phase-gemm-cl).
_CL_BLOCK = (8, 8, 16)  # rm, rn, tk
# rv on the gathering tiles, float32, where its vector reads pay for the stores' runs of 4 rows: y leaves as vectors
# (vector_y), or each workgroup reduces RV_MIN_DEPTH or more products an output (docs/decisions.md#phase-gemm-rv).
# rv's tiles are the gathering kernel's, but 64 rows where that takes 128 x 128 in 2D and 3D: twice the workgroups
# of half the invocations (docs/decisions.md#phase-gemm-rv-rows).
_RV_WIDE_ROWS = 64
# rv's tiles under FILL_INVOCATIONS take 4 x 8 blocks (_FEW_RM), then split across workgroups as cl's do, as far as
# each split still reduces RV_MIN_DEPTH products an output (docs/decisions.md#phase-gemm-rv-fill).
# The thresholds, by key: fill (FILL: workgroups that fill the GPU), split_below, split_depth,
# split_across_min_steps, fill_invocations, rv_min_depth; channels_last and rv switch those structures on. None: the
# rule that reads it is off.
NEUTRAL = {"fill": None, "split_below": None, "split_depth": None, "split_across_min_steps": None,
           "fill_invocations": None, "rv_min_depth": None, "channels_last": False, "rv": False}


def rules(caps) -> dict:
    """The thresholds of the GPU rules on this adapter: its table's or its class's, over NEUTRAL."""
    return variant_rules(NAME, caps, NEUTRAL)


def split_k(geom, caps, tm: int, tn: int, step: int, target: int | None = None, min_depth: int = 0) -> int:
    """The kz that tm x tn tiles reducing `step` in-channels per step split a GEMM too small for the GPU into:
    the smallest that makes `target` workgroups (FILL where None; the rule above; 1 where it is shallow, has few
    rows, no kz keeps SPLIT_K_MIN_STEPS steps per split and fits the device, a split would reduce fewer than
    min_depth products an output, or this adapter measured no FILL)."""
    target = rules(caps)["fill"] if target is None else target
    depth = geom.in_per_group * max_phase_taps(geom)
    if target is None or depth < SPLIT_K_DEPTH or phase_rows(geom) < SPLIT_K_MIN_ROWS:
        return 1
    workgroups = workgroup_count(geom, {"tm": tm, "tn": tn})
    fits = _kz_fits(geom, caps, {"tk": step, "ks": 1})
    kz = next((kz for kz in fits if workgroups * kz >= target), fits[-1] if fits else 1)
    return kz if depth // kz >= min_depth else 1


def _kz_fits(geom, caps, t: dict) -> list[int]:
    """The kz of SPLIT_K_CHOICES that keep SPLIT_K_MIN_STEPS reduction steps per slice of t (t["ks"] slices
    a workgroup at t["tk"] in-channels a step) and whose partial sums fit the device."""
    return [kz for kz in SPLIT_K_CHOICES
            if _steps(geom, t) // (kz * t["ks"]) >= SPLIT_K_MIN_STEPS and parts_refusal(kz, geom, caps) is None]


def default_tiles(geom, caps) -> dict:
    if caps.is_software:  # kz 1: SwiftShader has no idle multiprocessors to fill, only a second pass to pay
        return dict(zip(PARAMS, _CPU_SHAPE)) | {DIRECT: 1}
    r = rules(caps)
    t = _gathering_defaults(geom, caps, r)
    # cl replaces the gathering kernel's tiles only where those run: where they do not fit the device (default
    # limits' 16 KiB of workgroup memory), another variant was measured to take the request, not cl.
    if (r["channels_last"] and t["ks"] == 1 and t["kz"] == 1 and channels_last_pays(geom)
            and tiles_refusal(t, geom, caps) is None and (cl := _channels_last_defaults(geom, caps, r)) is not None):
        return cl
    if r["rv"] and rows_as_vectors_pay(geom, t, r):
        rv = t | {RV: 1} | ({"tm": _RV_WIDE_ROWS} if (t["tm"], t["tn"]) == _GPU_WIDE[:2] and geom.rank > 1 else {})
        if rv["kz"] == 1 and below(workgroup_count(geom, rv) * _threads(rv), r["fill_invocations"]):
            rv["rm"] = _FEW_RM
        if rv["kz"] == 1 and (split := _split_to_fill(geom, caps, rv, r, r["rv_min_depth"] or 0)) is not None:
            rv = split
        if (geom.rank == 1 or max_phase_taps(geom) == 1) and not vector_y(geom):
            rv[RI] = 1
        if tiles_refusal(rv, geom, caps) is None:
            return rv
    return t


def rows_as_vectors_pay(geom, t: dict, r: dict) -> bool:
    """Whether rv beats the gathering kernel on t's tiles (the rule above, with the thresholds `r`)."""
    depth = geom.in_per_group * max_phase_taps(geom) // t["kz"]
    return geom.dtype == "float32" and t["ks"] == 1 and (vector_y(geom) or reaches(depth, r["rv_min_depth"]))


def _channels_last_defaults(geom, caps, r: dict) -> dict | None:
    """cl's tiles for this request (the rule above), or None where cl cannot run it."""
    rm, rn, tk = _CL_BLOCK
    tn = wide_columns(geom)
    tm = 128 if reaches(workgroup_count(geom, {"tm": 128, "tn": tn}), r["fill"]) else 64
    t = {"tm": tm, "tn": tn, "rm": rm, "rn": rn, "tk": tk, "ks": 1, "kz": 1, CL: 1}
    if tm == 64 and (split := _split_to_fill(geom, caps, t | {"tm": 128}, r)) is not None:
        t = split
    return t if tiles_refusal(t, geom, caps) is None else None


def _split_to_fill(geom, caps, t: dict, r: dict, min_depth: int = 0) -> dict | None:
    """t (cl's 128-row tiles, or rv's) split across the smallest kz that makes FILL_INVOCATIONS, where the GEMM
    has the rows and reduction that split_k asks for and each split keeps min_depth products an output; None
    where it has not, no kz fits, or this adapter measured no FILL_INVOCATIONS."""
    depth = geom.in_per_group * max_phase_taps(geom)
    fill = r["fill_invocations"]
    if fill is None or depth < SPLIT_K_DEPTH or phase_rows(geom) < SPLIT_K_MIN_ROWS:
        return None
    invocations = workgroup_count(geom, t) * _threads(t)
    if invocations >= fill:  # measured only where they fall short: 64 rows, as before
        return None
    kz = next((kz for kz in _kz_fits(geom, caps, t) if invocations * kz >= fill), None)
    return None if kz is None or depth // kz < min_depth else t | {"kz": kz}


def _gathering_defaults(geom, caps, r: dict | None = None) -> dict:
    r = rules(caps) if r is None else r
    narrow = geom.out_per_group <= _GPU_NARROW[1]
    if narrow:
        t = dict(zip(PARAMS, _GPU_NARROW))
    else:
        # Devices that refuse the 64 x 128 tiles (default limits' 16 KiB of workgroup memory) keep the 128 columns
        # the other variants were measured against there.
        fits = tiles_refusal(dict(zip(PARAMS, _GPU_WIDE_FEW)), geom, caps) is None
        columns = {"tn": wide_columns(geom) if fits else _GPU_WIDE[1]}
        t = dict(zip(PARAMS, _GPU_WIDE)) | columns
        if not reaches(workgroup_count(geom, t), r["fill"]):
            t = dict(zip(PARAMS, _GPU_WIDE_FEW)) | columns
    if below(workgroup_count(geom, t), r["split_below"]):
        deep = dict(zip(PARAMS, _GPU_DEEP)) | {"tn": min(_GPU_DEEP[1], 8 * ceil_div(geom.out_per_group, 8))}
        deep["kz"] = split_k(geom, caps, deep["tm"], deep["tn"], deep["tk"], r["fill"])
        if deep["kz"] > 1 and tiles_refusal(deep, geom, caps) is None:
            return deep
    split = dict(zip(PARAMS, _GPU_SPLIT))
    if (below(workgroup_count(geom, t), r["split_below"])
            and reaches(geom.in_per_group * max_phase_taps(geom), r["split_depth"])
            and tiles_refusal(split, geom, caps) is None):
        if not reaches(_steps(geom, split) // split["ks"], r["split_across_min_steps"]):
            return split
        across = split | {"ks": _GPU_SPLIT_SLICES_WITH_KZ}
        across["kz"] = _split_k_of_slices(geom, caps, across, r["fill"])
        return across if across["kz"] > 1 and tiles_refusal(across, geom, caps) is None else split
    # Where the tiles above do not fit the device (default limits' 16 KiB of workgroup memory), other variants were
    # measured to take the request: the narrow tiles, which would fit, change nothing there.
    return _narrow_unsplit(geom) if narrow and tiles_refusal(t, geom, caps) is None else t


def wide_columns(geom) -> int:
    """The columns of the wide tiles (the rule above): 128, or 64 where those compute fewer columns."""
    return fitted_width(geom.out_per_group, (_GPU_WIDE[1], _GPU_NARROW[1]))


def _narrow_unsplit(geom) -> dict:
    """The unsplit tiles of a narrow GEMM (the rule above)."""
    t = dict(zip(PARAMS, _GPU_NARROW)) | {"rm": _FEW_RM}
    if geom.out_per_group <= _GPU_NARROWEST[0]:
        t["tn"], t["tk"] = _GPU_NARROWEST
    return t


def _split_k_of_slices(geom, caps, t: dict, fill: int | None) -> int:
    """The kz that splits t's workgroups (each reducing in t["ks"] slices) into `fill` or more, keeping
    SPLIT_K_MIN_STEPS reduction steps per slice; 1 where they already fill the GPU, no kz fits or `fill` is None."""
    workgroups = workgroup_count(geom, t)
    return next((kz for kz in _kz_fits(geom, caps, t) if reaches(workgroups * kz, fill)), 1)


def _steps(geom, t: dict) -> int:
    """Reduction steps of the longest phase at t's step (in-channels per step)."""
    return max_phase_taps(geom) * ceil_div(geom.in_per_group, t["tk"])


def _threads(t: dict) -> int:
    return (t["tm"] // t["rm"]) * (t["tn"] // t["rn"]) * t["ks"]


def x_row_vectors(geom) -> int:
    """cl: 16-byte vectors per pixel of xc, every group's in-channels rounded up to a vector (4 f32 or 8 f16)."""
    return geom.group * ceil_div(geom.in_per_group, 16 // DTYPE_BYTES[geom.dtype])


def xc_vectors(geom) -> int:
    """cl: 16-byte vectors in xc, every pixel of every image."""
    return geom.batch * math.prod(geom.in_spatial) * x_row_vectors(geom)


def channels_last_pass(geom, caps) -> tuple:
    """cl's pass that repacks x into xc (xc[n][pixel][group][16-byte vectors of in-channels]) before the GEMM,
    the uniforms the GEMM needs to read xc (xc_vecs: a group's vectors, xc_row: a pixel's), and xc's bytes."""
    row = x_row_vectors(geom)
    xc = [("xc_vecs", ceil_div(geom.in_per_group, 16 // DTYPE_BYTES[geom.dtype])), ("xc_row", row)]
    in_size = math.prod(geom.in_spatial)
    u_tiles, pix_tiles = ceil_div(row, X_PACK_VECTORS), ceil_div(in_size, X_PACK_PIXELS)
    tiles = geom.batch * pix_tiles * u_tiles
    repack = dispatch(X_CHANNELS_LAST, {"dtype": geom.dtype, "pix": X_PACK_PIXELS, "vecs": X_PACK_VECTORS},
                      ("x",), ("xc",),
                      [("tiles", tiles), ("u_tiles", u_tiles), ("pix_tiles", pix_tiles), ("in_size", in_size),
                       ("in_channels", geom.in_channels), ("in_per_group", geom.in_per_group), *xc],
                      grid(tiles, caps.limit("maxComputeWorkgroupsPerDimension")), {"xc": XC_VIEW[geom.dtype]},
                      invocations=X_PACK_PIXELS * X_PACK_VECTORS)
    return repack, xc, xc_vectors(geom) * 16


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
    if threads > caps.limit(INVOCATIONS_LIMIT) or threads > caps.limit("maxComputeWorkgroupSizeX"):
        return f"{threads} invocations per workgroup exceed the device's limit"
    if t.get(CL, 0) not in (0, 1):
        return "cl (A from x repacked channels-last) must be 0 or 1"
    if t.get(RV, 0) not in (0, 1):
        return "rv (the vector structure on A gathered from x) must be 0 or 1"
    if t.get(RI, 0) not in (0, 1):
        return "ri (the vector structure's rows interleaved) must be 0 or 1"
    if t.get(DIRECT, 0) not in (0, 1):
        return "direct (loads straight into workgroup memory) must be 0 or 1"
    if t.get(CL):  # cl runs the vector structure on xc whatever rv says (rv is on by default where A is gathered)
        why = _channels_last_refusal(t, geom, caps)
    elif t.get(RV) and geom.dtype != "float32":
        why = "rv stages A and B as vec4s of f32: float32 only"
    elif t.get(RV) and (t["ks"] != 1 or t["rm"] % 4):
        why = "rv needs ks 1 (no split inside the workgroup) and rm a multiple of 4 (runs of 4 rows)"
    elif threads % t["tm"] and t["tm"] % threads:
        why = "the invocation count must divide or be a multiple of tm"
    elif threads > t["tm"] and (t["tk"] * t["ks"]) % (threads // t["tm"]):
        why = "tk * ks must be a multiple of invocations / tm"
    else:
        why = None
    if why:
        return why
    if workgroup_bytes(t) > caps.limit(WORKGROUP_STORAGE):
        return "the tiles exceed the device's workgroup memory"
    return parts_refusal(t["kz"], geom, caps)


def _channels_last_refusal(t: dict, geom, caps) -> str | None:
    """Why cl cannot run these tiles on this request (None when it can): xc holds f32 vec4s of in-channels,
    each invocation owns runs of 4 rows by vec4 columns, and every invocation loads the same vectors of a
    step (the same one of an A row's tk/4) as every other."""
    if geom.dtype != "float32":
        return "cl repacks x as vec4s of f32 in-channels: float32 only"
    if t["ks"] != 1:
        return "cl does not split the reduction inside the workgroup: ks must be 1"
    if t["rm"] % 4 or t["tk"] % 4:
        return "cl needs rm and tk multiples of 4 (runs of 4 rows, vec4s of 4 in-channels)"
    threads, k4 = _threads(t), t["tk"] // 4
    if threads % k4 or (t["tm"] * k4) % threads or (t["tk"] * t["tn"] // 4) % threads:
        return "cl needs every invocation to load the same number of A and B vectors of a step"
    vectors = xc_vectors(geom)
    limit = min(caps.limit("maxStorageBufferBindingSize"), caps.limit("maxBufferSize"))
    if vectors * 16 > limit:
        return f"cl's channels-last copy of x needs {vectors * 16} bytes, over this device's storage buffer limit"
    if vectors > MAX_INDEX:
        return "cl's channels-last copy of x is past i32 indexing"
    return None


def parts_refusal(kz: int, geom, caps) -> str | None:
    """Why kz split-K partial outputs do not fit this device (None when they do, or kz is 1: no buffer)."""
    if kz == 1:
        return None
    elements = kz * geom.y_size
    limit = min(caps.limit("maxStorageBufferBindingSize"), caps.limit("maxBufferSize"))
    if elements * PARTS_BYTES > limit:
        return (f"kz {kz} needs a partial-sum buffer of {elements * PARTS_BYTES} bytes, over this device's storage "
                f"buffer limit of {limit} bytes")
    if elements > MAX_INDEX:
        return f"kz {kz} needs a partial-sum buffer of {elements} elements, past i32 indexing"
    return None


STRUCTURES = {
    "gather": "the gathering kernel: A gathered from x as scalars, B as vec4s",
    "slices": "the gathering kernel with the reduction split among ks slices of the workgroup",
    "rv": "the vector structure (16-byte staging of A and B) on A gathered from x",
    "cl": "the vector structure on A from x repacked channels-last by a pass before the GEMM",
}


def structure(t: dict) -> str:
    return split_structure("cl" if t.get(CL) else "rv" if t.get(RV) else "slices" if t.get("ks", 1) > 1 else "gather", t)


def _gpus_only(geom, caps) -> str | None:
    # Software adapters compile GPU tiles' unrolled loads for seconds each (docs/decisions.md#phase-gemm-direct).
    return "a GPU configuration: software adapters compile its unrolled loads slowly" if caps.is_software else None


def _configuration(name: str, shape: tuple, switches: dict, valid: str) -> Configuration:
    return Configuration(name, structure(dict(zip(PARAMS, shape)) | switches),
                         dict(zip(PARAMS, shape)) | {CL: 0, RV: 0, RI: 0} | switches, valid,
                         (lambda geom, caps: None) if switches.get(DIRECT) else _gpus_only)


# The finite set the planner's alternatives and the autotuner try beside a request's defaults (which pick among
# their shapes by the rules above).
CONFIGURATIONS = (
    _configuration("narrow", _GPU_NARROW, {}, "GPUs; up to 64 out-channels a group"),
    _configuration("wide", _GPU_WIDE, {}, "GPUs; GEMMs whose 128 x 128 tiles fill the GPU"),
    _configuration("wide-few", _GPU_WIDE_FEW, {}, "GPUs; GEMMs of too few rows for 128 x 128 tiles"),
    _configuration("slices", _GPU_SPLIT, {}, "GPUs; few outputs with a long reduction"),
    _configuration("deep-split-k", _GPU_DEEP, {"kz": 4}, "GPUs; many rows, a long reduction, few workgroups"),
    _configuration("cl", (128, 128, *_CL_BLOCK, 1, 1), {CL: 1}, "float32, 16-byte channel runs of x"),
    _configuration("rv", _GPU_WIDE_FEW, {RV: 1}, "float32, a long reduction or y stored as vectors"),
    _configuration("cpu", _CPU_SHAPE, {DIRECT: 1}, "software adapters"),
)

TUNABLE = Tunable(default_tiles, tiles_refusal, structure, STRUCTURES, CONFIGURATIONS)


def configure(geom, caps, t: dict) -> Plan | Refusal:
    if not t.get(CL) and not t.get(RV):
        return gemm_plan(TEMPLATE, geom, caps, t, t["tm"], t["tn"], t["tk"] * t["ks"], workgroup_bytes(t), t,
                         _threads(t))
    yv = vector_y(geom)
    params = {k: t[k] for k in ("tm", "tn", "rm", "rn", "tk", "kz")} | {"xc": t.get(CL, 0), "yv": int(yv),
                                                                       "ri": t.get(RI, 0)}
    return gemm_plan(VEC4, geom, caps, params, t["tm"], t["tn"], t["tk"], workgroup_bytes(t), t, _threads(t),
                     channels_last=bool(t.get(CL)), out_vec4=yv)


def vector_y(geom) -> bool:
    """Whether a GEMM's runs of 4 rows are 4 consecutive pixels of y (cl's and phase_gemm_sgmat's vs y stores):
    one phase (every stride 1), whose rows are y's pixels in order, in images of a multiple of 4 pixels."""
    return all(s == 1 for s in geom.strides) and math.prod(geom.out_spatial) % 4 == 0


def weight_pack(geom, caps) -> tuple:
    """The cached pass that packs w into [group][tap][in][out] vec4 rows (wp), the vec4s it writes, and the
    channel and kernel sizes (uniform fields) it shares with the GEMMs that read wp."""
    kernel_size = math.prod(geom.kernel)
    m4 = ceil_div(geom.out_per_group, 4)
    packed_vec4s = geom.group * kernel_size * geom.in_per_group * m4
    shapes = [("in_channels", geom.in_channels), ("out_channels", geom.out_channels),
              ("in_per_group", geom.in_per_group), ("out_per_group", geom.out_per_group),
              ("kernel_size", kernel_size), ("m4", m4)]
    pack = dispatch(PACK, {"dtype": geom.dtype, "workgroup_size": PACK_WORKGROUP}, ("w",), ("wp",),
                    [("packed_vec4s", packed_vec4s)] + shapes,
                    grid(ceil_div(packed_vec4s, PACK_WORKGROUP), caps.limit("maxComputeWorkgroupsPerDimension")))
    return pack, packed_vec4s, shapes


def gemm_plan(template: str, geom, caps, params: dict, tm: int, tn: int, step: int, need: int,
                tiles: dict, invocations: int, wp_view: str | None = None, wp_tail: int = 0,
                x_view: str | None = None, channels_last: bool = False, out_vec4: bool = False) -> Plan | Refusal:
    """The weight pack and the GEMM of a tm x tn tile (a workgroup of `invocations`) reducing `step` in-channels
    per step; with tiles["kz"] > 1, the GEMM's kz partial sums (no bias) into `parts` and the pass that adds them
    up into y. The GEMM may bind wp as `wp_view` (the pack writes vec4 rows whatever the view), allocated `wp_tail`
    elements longer than the pack writes, and x as `x_view`; with `channels_last` it reads A from xc instead, which
    channels_last_pass fills before it; with `out_vec4` it writes y (or parts) as vec4s."""
    refusal = workgroup_memory_refusal(need, caps)
    if refusal:
        return Refusal(refusal)
    max_dim = caps.limit("maxComputeWorkgroupsPerDimension")
    pack, packed_vec4s, shapes = weight_pack(geom, caps)
    repack, xc_uniforms, scratch = None, [], {}
    a_source, a_view = "x", x_view
    if channels_last:
        repack, xc_uniforms, scratch["xc"] = channels_last_pass(geom, caps)
        a_source, a_view = "xc", XC_VIEW[geom.dtype]
    row_tiles, col_tiles = ceil_div(phase_rows(geom), tm), ceil_div(geom.out_per_group, tn)
    phases = math.prod(geom.strides)
    split_tiles = geom.group * phases * row_tiles * col_tiles
    kz = tiles["kz"]
    out_size = math.prod(geom.out_spatial)
    uniforms = ([("batch", geom.batch)] + shapes
                + [("in_size", math.prod(geom.in_spatial)), ("out_size", out_size),
                   ("c_chunks", ceil_div(geom.in_per_group, step)), ("phases", phases),
                   ("row_tiles", row_tiles), ("col_tiles", col_tiles), ("tiles", split_tiles * kz)]
                + ([("split_tiles", split_tiles), ("splits", kz), ("y_size", geom.y_size)] if kz > 1 else [])
                + axis_uniforms(geom) + xc_uniforms)
    prepared = {"wp": (packed_vec4s * 4 + wp_tail) * DTYPE_BYTES[geom.dtype]}
    has_bias = geom.has_bias and kz == 1  # split: the sum pass adds the bias once, not each partial
    gemm = dispatch(template, {"rank": geom.rank, "dtype": geom.dtype, "has_bias": has_bias} | params,
                    (a_source, "wp", "b") if has_bias else (a_source, "wp"), ("y",) if kz == 1 else ("parts",), uniforms,
                    grid(split_tiles * kz, max_dim),
                    {n: v for n, v in (("wp", wp_view), (a_source, a_view), ("y", "array<vec4<T>>" if out_vec4 else None),
                                       ("parts", "array<vec4<f32>>" if out_vec4 else None)) if v} or None,
                    invocations)
    first = (repack,) if repack else ()
    work = {"tile_outputs": tm * tn, "tile_depth": padded_depth(geom.in_per_group, step, max_phase_taps(geom), kz)}
    if kz == 1:
        return Plan((*first, gemm), scratch=scratch, weight_passes=(pack,), prepared=prepared, tiles=tiles,
                    workgroup_bytes=need, **work)
    vec = 4 if geom.y_size % 4 == 0 else 1  # vec4 loads and stores where y divides into them
    items = geom.y_size // vec
    total = dispatch(SPLIT_SUM, {"dtype": geom.dtype, "has_bias": geom.has_bias, "vec": vec,
                                 "workgroup_size": SUM_WORKGROUP},
                     ("parts", "b") if geom.has_bias else ("parts",), ("y",),
                     [("items", items), ("splits", kz), ("out_size", out_size), ("out_channels", geom.out_channels)],
                     grid(ceil_div(items, SUM_WORKGROUP), max_dim),
                     {"parts": "array<vec4<f32>>", "y": "array<vec4<T>>"} if vec == 4 else None)
    return Plan((*first, gemm, total), scratch={"parts": kz * geom.y_size * PARTS_BYTES} | scratch,
                weight_passes=(pack,), prepared=prepared, tiles=tiles, workgroup_bytes=need, **work)


PORTABLE = Variant(
    name=NAME, templates=(PACK, TEMPLATE, VEC4, X_CHANNELS_LAST, SPLIT_SUM, *SHARED),
    summary="rank 1-3, dense or grouped, any stride: one implicit GEMM per (group, stride phase) in one "
            "dispatch (rows = batch x the phase's output sub-grid, cols = out-channels, reduction = "
            "in-channels x the phase's taps; stride 1 and 1x1 kernels included), weights packed once, "
            "double-buffered tiles, register blocks up to 8x8, the reduction split inside the workgroup "
            "where outputs are few, or across workgroups (summed by a second pass) where rows are many but "
            "workgroups few; float32 at stride 1 on GPUs reads A from x repacked channels-last (cl), as vec4s",
    conditions={"input": "nonempty", "finite_data": True},
    configure=configure, tunable=TUNABLE, requires=WORKGROUP_MEMORY)


VARIANTS = (PORTABLE,)
