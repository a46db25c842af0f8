"""phase_gemm's GEMMs (app/variants/phase_gemm.py: same rows, columns, reduction, packed weights, staging
and dispatch) multiplied on subgroup matrices (templates/conv-transpose-phase-gemm-sgmat.wgsl.jinja): tensor
cores on NVIDIA through Dawn's chromium-experimental-subgroup-matrix.

The matrix shape and component type are the device's (GPUAdapterInfo.subgroupMatrixConfigs); results must
be f32 (the package accumulates in f32), and the components must hold the storage type exactly: f32
storage needs f32 components (f16 would round every input to 11 bits), f16 storage takes f16 or f32.
"""
from __future__ import annotations

import math

from ..caps import SUBGROUP_SIZE_BOUNDS, usable_subgroup_sizes
from ..plan import Plan, Refusal
from .base import (INVOCATIONS_LIMIT, WORKGROUP_MEMORY, WORKGROUP_STORAGE, Configuration, Tunable, Variant,
                   channels_last_pays, computed_columns, max_phase_taps, reaches, split_structure, workgroup_count)
from .base import rules as variant_rules
from .gemm import MAX_INDEX
from .phase_gemm import (PACK, SHARED, SPLIT_K_DEPTH, SPLIT_SUM, X_CHANNELS_LAST, gemm_plan, parts_refusal, split_k,
                         vector_y, xc_vectors)

NAME = "phase_gemm_sgmat"
TEMPLATE = "conv-transpose-phase-gemm-sgmat.wgsl.jinja"
# 1x1 kernels with va render through the seed's name for them: a thin entry over TEMPLATE that fixes va.
POINTWISE = "conv-1x1-subgroup-matrix.wgsl.jinja"
# vs: the same GEMMs in the structure of docs/ceiling.md's fastest WGSL GEMM (16-byte staging vectors, one
# buffer with two barriers per step, every operand staged, result matrices leaving through the staging memory).
VECTOR_STAGED = "conv-transpose-phase-gemm-sgmat-vs.wgsl.jinja"
# cl: vs with A from x repacked channels-last once per call (phase_gemm's gemm_plan), staged [row][k].
FEATURES = ("chromium-experimental-subgroup-matrix", "subgroups")
COMPONENTS = {"float32": ("f32",), "float16": ("f16", "f32")}
STORAGE_COMPONENT = {"float32": "f32", "float16": "f16"}
PARAMS = ("sg_m", "sg_n", "cm", "cn", "kb", "kz", "bd", "va", "vs", "cl")
SWITCHES = ("bd", "va", "vs", "cl")  # 0 or 1
MAX_SUBGROUP_SIZE = SUBGROUP_SIZE_BOUNDS[1]  # where the device's is unknown: a workgroup of whole subgroups
# (sg_m, sg_n, cm, cn, kb, kz, bd, va, vs) for 16 x 16 matrices where vs is refused: 2 x 2 subgroups, the tallest tile
# that makes FILL workgroups, two K-blocks a step; bd on the tall tiles only (docs/decisions.md#sgmat-tiles).
_WIDE = (2, 2, 4, 4, 2, 1, 1, 1, 0, 0)
_TALL = (2, 2, 4, 2, 2, 1, 1, 1, 0, 0)
_SMALL = (2, 2, 2, 2, 2, 1, 0, 1, 0, 0)
# vs where it runs: 2 x 2 subgroups, two K-blocks a step, tiles no wider than the out-channels, 4 result matrices
# tall, or 2 where each output sums at most SHORT_REDUCTION products (a few steps do not cover a tile's prologue and
# write-out); short of FILL workgroups, 2 matrices wide, then split-K (docs/decisions.md#sgmat-vs).
# vs columns: one block of 2 matrices up to 32 out-channels, else 4, 3 or 2 blocks, whichever computes the fewest
# columns (the wider on a tie); spread tiles take 4 or 2 only (docs/decisions.md#sgmat-vs-columns).
# In 2D and 3D, kernels of 2+ taps, a tile's matrices are spread over more subgroups of at most VS_SPREAD x VS_SPREAD
# each (more invocations share a step's staging); they count as 2 or 4 workgroups towards FILL
# (docs/decisions.md#sgmat-spread).
VS_SPREAD = 2
# A spread tile of fewer own workgroups than SPREAD_MIN_WORKGROUPS (about one a multiprocessor) splits across
# workgroups by phase_gemm's split-K rule, each split reducing SPLIT_K_DEPTH or more
# (docs/decisions.md#sgmat-spread-split).
# Where that would split it, half the subgroup rows at DEEP_K_BLOCKS a step instead, if that alone makes
# SPREAD_MIN_WORKGROUPS: such grids wait on loads and barriers more than on multiplies (docs/decisions.md#sgmat-deep).
DEEP_K_BLOCKS = 4
VS_SUBGROUPS = (2, 2)
VS_K_BLOCKS = 2
VS_MAX_MATRICES = 4
VS_COLUMN_MATRICES = (VS_MAX_MATRICES, 3, 2)  # cn to fit where the out-channels pass one column block
VS_SPREAD_COLUMN_MATRICES = (VS_MAX_MATRICES, 2)  # the same for spread tiles: 3 was measured unspread only
# Large GEMMs (out-channels that fill the unspread 128 x 128 tiles, making LARGE_GEMM workgroups): 2 x 2 subgroups of
# 4 x 4 matrices, unspread, multi-tap phases from the channels-last copy at any stride (docs/decisions.md#sgmat-large).
# The rules' thresholds (upper case above) are an adapter's table data, as phase_gemm's are: fill (FILL),
# spread_min_workgroups, short_reduction, large_gemm; vector_staged and spread switch vs and its spread tiles on.
# An adapter with no table runs its class's (a GPU: the H200's); where no table of the class has them, NEUTRAL: 2 x 2
# subgroups of 2 x 2 matrices, A and B staged, unsplit (docs/decisions.md#neutral-defaults). None: the rule is off.
NEUTRAL = {"fill": None, "spread_min_workgroups": None, "short_reduction": None, "large_gemm": None,
           "vector_staged": False, "spread": False}


def rules(caps) -> dict:
    """The thresholds of the rules above on this adapter: its table's or its class's, over NEUTRAL."""
    return variant_rules(NAME, caps, NEUTRAL)


def matrix_config(dtype: str, caps) -> dict | None:
    """The device's best subgroup-matrix configuration for this dtype, or None: the narrower component
    first (f16 halves staging), then the larger matrix."""
    wanted = COMPONENTS[dtype]
    usable = [c for c in caps.subgroup_matrix_configs
              if c["resultComponentType"] == "f32" and c["componentType"] in wanted]
    return min(usable, key=lambda c: (wanted.index(c["componentType"]), -c["M"] * c["N"] * c["K"]), default=None)


def subgroup_size(caps) -> int:
    sizes = usable_subgroup_sizes(caps)
    return sizes[1] if sizes else MAX_SUBGROUP_SIZE


def _tile(t: dict, config: dict) -> tuple[int, int, int]:
    """(tm, tn, reduction per step) of a shape on this matrix configuration."""
    return t["sg_m"] * t["cm"] * config["M"], t["sg_n"] * t["cn"] * config["N"], t["kb"] * config["K"]


ROW_PAD_BYTES = 16  # the template pads every staged k row by this much (bank conflicts)
MATRIX_ALIGN_BYTES = 16  # Vulkan: a cooperative-matrix load's address and stride (rows of 16 f16 here)


def component_bytes(config: dict) -> int:
    return 2 if config["componentType"] == "f16" else 4


def wp_cols(geom) -> int:
    """Elements in a row of wp: the group's out-channels rounded up to 4 (the pack writes vec4 rows)."""
    return 4 * -(-geom.out_per_group // 4)


def subgroups_refusal(subgroups: int, caps, config: dict) -> str | None:
    """Why a workgroup of this many subgroups cannot multiply these matrices here (None when it can): every
    subgroup must hold a matrix's M rows, and the invocations fit the device's limits."""
    sizes = usable_subgroup_sizes(caps)
    if sizes and sizes[0] < config["M"]:
        return f"needs subgroups of at least M = {config['M']} invocations, the device's can have {sizes[0]}"
    threads = subgroups * subgroup_size(caps)
    if threads > caps.limit(INVOCATIONS_LIMIT) or threads > caps.limit("maxComputeWorkgroupSizeX"):
        return f"{threads} invocations per workgroup exceed the device's limit"
    return None


def direct_b_refusal(geom, config: dict, who: str = "bd ") -> str | None:
    """Why `who` cannot read this request's right matrices straight from wp (None when it can): the matrices must
    be of the storage type, and wp's rows a multiple of a matrix load's alignment and no shorter than the
    matrix (on an H200, shorter rows gave wrong results: 11 test.json cases with 8 or fewer out-channels
    per group)."""
    if config["componentType"] != STORAGE_COMPONENT[geom.dtype]:
        return (f"{who}needs matrices of the storage type ({STORAGE_COMPONENT[geom.dtype]}), the device's are "
                f"{config['componentType']}")
    cols = wp_cols(geom)
    if (cols * component_bytes(config)) % MATRIX_ALIGN_BYTES or cols < config["N"]:
        return (f"{who}needs packed weight rows of at least a matrix's {config['N']} columns and a multiple of "
                f"{MATRIX_ALIGN_BYTES} bytes (out-channels per group rounded up to 4)")
    return None


def _vector_a_refusal(t: dict, geom, caps, config: dict) -> str | None:
    """Why va cannot load this request's A rows as vec4s of x (None when it can): every phase must have one
    tap reading x's pixels in order, in runs of 4 that stay inside an image, in the staging type, and the
    workgroup must cover a staged k row of vec4s evenly."""
    if config["componentType"] != STORAGE_COMPONENT[geom.dtype]:
        return (f"va stages x as it is stored ({STORAGE_COMPONENT[geom.dtype]}); the device's matrices are "
                f"{config['componentType']}")
    natural = all(k == s and o == i * s
                  for k, s, o, i in zip(geom.kernel, geom.strides, geom.out_spatial, geom.in_spatial))
    if not natural or any(geom.pads_begin) or any(d != 1 for d in geom.dilations):
        return "va needs kernel = strides with no pads, dilations or extra outputs (one tap per phase)"
    if t.get("vs"):  # 16-byte vectors of 8 pixels; vs checks its own staging map
        return "va with vs needs x's images to hold a multiple of 8 pixels" if math.prod(geom.in_spatial) % 8 else None
    if math.prod(geom.in_spatial) % 4:
        return "va needs x's images to hold a multiple of 4 pixels"
    tm, _, tks = _tile(t, config)
    threads = t["sg_m"] * t["sg_n"] * subgroup_size(caps)
    if threads % (tm // 4) or tks % (threads * 4 // tm):
        return "va needs the workgroup to load whole k rows of the tile's vec4s"
    return None


def _vector_staged_refusal(t: dict, geom, caps, config: dict) -> str | None:
    """Why vs cannot run this shape on this request (None when it can): it stages f16 as 16-byte vectors,
    every operand in workgroup memory, each invocation a fixed slice of a step's k rows."""
    if geom.dtype != "float16" or config["componentType"] != "f16":
        return "vs stages 16-byte vectors of f16: it needs float16 storage on f16 matrices"
    if t["bd"]:
        return "vs stages the right matrices: bd must be 0"
    if config["M"] % 8 or config["N"] % 8:
        return "vs needs matrices of a multiple of 8 rows and columns (16-byte vectors)"
    if wp_cols(geom) % 8:
        return "vs needs packed weight rows of a multiple of 8 out-channels (16-byte vectors)"
    tm, tn, tks = _tile(t, config)
    threads = t["sg_m"] * t["sg_n"] * subgroup_size(caps)
    if t.get("cl"):
        if t["va"]:
            return "cl loads A from x repacked channels-last: va must be 0"
        if threads % (tks // 8) or tm % (threads // (tks // 8)):
            return "cl needs the workgroup to stage whole A rows of 8-channel vectors"
        if xc_vectors(geom) > MAX_INDEX:
            return "cl's channels-last copy of x is past i32 indexing"
    else:
        a_runs = tm // (8 if t["va"] else 2)  # A's vectors (va) or gathered row pairs across the tile
        if threads % a_runs or tks % (threads // a_runs):
            return "vs needs the workgroup to stage whole k rows of A"
    # B rows of a number of vectors not a power of two (3 matrix blocks: 12 vectors of 96 columns) are staged through
    # a flat count (the template's b_flat, measured on those only); the others must be staged whole, as before.
    b_oct = tn // 8
    if b_oct & (b_oct - 1) == 0 and (threads % b_oct or tks % (threads // b_oct)):
        return "vs needs the workgroup to stage whole k rows of B"
    if vector_y(geom):
        if threads % (tm // 4):
            return "vs needs the workgroup to write whole columns of the tile's 4-row vectors"
        step = threads // (tm // 4)
    else:
        step = max(1, threads // tm)
    if (t["sg_n"] * config["N"]) % step:
        return "vs needs the workgroup to write whole column blocks"
    return None


def workgroup_bytes(t: dict, config: dict) -> int:
    tm, tn, tks = _tile(t, config)
    if t.get("vs"):  # parts of 16-byte vectors: one step of each subgroup row's A and each subgroup column's
        # B, rows padded by one vector; then one column block of each subgroup's f32 results, columns padded
        pm, pn = t["cm"] * config["M"], t["cn"] * config["N"]
        a = pm * (tks // 8 + 1) if t.get("cl") else tks * (pm // 8 + 1)
        part = max(a, tks * (pn // 8 + 1), config["N"] * (pm // 4 + 1))
        return 16 * part * max(t["sg_m"] + t["sg_n"], t["sg_m"] * t["sg_n"])
    comp = component_bytes(config)
    pad = ROW_PAD_BYTES // comp
    staged = tm + pad + (0 if t["bd"] else tn + pad)  # bd: B is read from wp, not staged
    return 2 * tks * staged * comp + 4 * t["sg_m"] * t["sg_n"] * config["M"] * config["N"]


def _vector_staged_defaults(geom, caps, config: dict, r: dict) -> dict | None:
    """vs's shape for this request (the rule above, with the thresholds `r`), or None where vs cannot run it."""
    def runs(t: dict) -> bool:
        return _vector_staged_refusal(t, geom, caps, config) is None and tiles_refusal(t, geom, caps) is None

    def own_workgroups(t: dict) -> int:
        tm, tn, _ = _tile(t, config)
        return workgroup_count(geom, {"tm": tm, "tn": tn})

    spreads = r["spread"] and geom.rank > 1 and math.prod(geom.kernel) > 1
    # A large GEMM (LARGE_GEMM above) has the warps to hide its loads without spreading, and runs its multi-tap phases
    # from the channels-last copy.
    widest = {"tm": VS_SUBGROUPS[0] * VS_MAX_MATRICES * config["M"], "tn": VS_SUBGROUPS[1] * VS_MAX_MATRICES * config["N"]}
    large = geom.out_per_group >= widest["tn"] and reaches(workgroup_count(geom, widest), r["large_gemm"])
    spreads = spreads and not large

    def shape(cm: int, cn: int) -> tuple[dict | None, int]:
        """The tile of VS_SUBGROUPS subgroups of cm x cn matrices, spread over subgroups of at most VS_SPREAD x
        VS_SPREAD matrices where the rule above says and they run; and its workgroups, counted in workgroups of
        VS_SUBGROUPS (the fill rules were measured on those)."""
        base = (*VS_SUBGROUPS, cm, cn)
        spread = (VS_SUBGROUPS[0] * cm // min(cm, VS_SPREAD), VS_SUBGROUPS[1] * cn // min(cn, VS_SPREAD),
                  min(cm, VS_SPREAD), min(cn, VS_SPREAD))
        for sg_m, sg_n, cm_, cn_ in dict.fromkeys((spread, base) if spreads else (base,)):
            t = dict(zip(PARAMS, (sg_m, sg_n, cm_, cn_, VS_K_BLOCKS, 1, 0, 1, 1, 0)))
            t["va"] = int(_vector_a_refusal(t, geom, caps, config) is None)
            t["cl"] = int(not t["va"] and (channels_last_pays(geom) or large and max_phase_taps(geom) > 1))
            if runs(t):
                return t, own_workgroups(t) * sg_m * sg_n // math.prod(VS_SUBGROUPS)
        return None, 0

    def split(t: dict, target: int, min_depth: int = 0) -> dict:
        """t split across the kz workgroups of phase_gemm's rule that make `target` of them (each split reducing
        min_depth products an output, else unsplit); A gathered from x where it splits."""
        tm, tn, tks = _tile(t, config)
        t = t | {"kz": split_k(geom, caps, tm, tn, tks, target, min_depth)}
        # Split across workgroups, A gathered from x beats cl's copy, whose pass costs what it saves on a short
        # multiply (docs/decisions.md#sgmat-split-gathers).
        if t["kz"] > 1 and t["cl"] and runs(gathered := t | {"cl": 0}):
            t = gathered
        return t

    short = r["short_reduction"] is not None and geom.in_per_group * max_phase_taps(geom) <= r["short_reduction"]
    cm = 2 if short else VS_MAX_MATRICES
    block = VS_SUBGROUPS[1] * config["N"]  # a tile's columns per result matrix across its subgroups
    widths = (1,) if geom.out_per_group <= block else VS_SPREAD_COLUMN_MATRICES if spreads else VS_COLUMN_MATRICES
    fitted = sorted(widths, key=lambda c: (computed_columns(geom.out_per_group, block * c), -c))
    cn = next((c for c in fitted if shape(cm, c)[0] is not None), fitted[0])
    for cn_ in dict.fromkeys((cn, min(cn, 2))):
        t, workgroups = shape(cm, cn_)
        if t is None:
            return None
        if r["fill"] is None:
            return t
        if workgroups >= r["fill"]:
            least = r["spread_min_workgroups"]
            if reaches(own_workgroups(t), least) or least is None:
                return t
            split_t = split(t, least, SPLIT_K_DEPTH)
            deep = t | {"sg_m": t["sg_m"] // 2, "kb": DEEP_K_BLOCKS}
            if (split_t["kz"] > 1 and t["sg_m"] > VS_SUBGROUPS[0] and runs(deep)
                    and own_workgroups(deep) >= least):
                return deep
            return split_t
    t, workgroups = shape(2, min(cn, 2))
    if t is not None and workgroups < r["fill"]:
        t = split(t, r["fill"])
    return t


def default_tiles(geom, caps) -> dict:
    config = matrix_config(geom.dtype, caps) or {"M": 16, "N": 16, "K": 16, "componentType": None}
    r = rules(caps)
    if r["vector_staged"] and config["componentType"] and (staged := _vector_staged_defaults(geom, caps, config, r)):
        return staged
    direct = int(direct_b_refusal(geom, config) is None)

    def shape(values: tuple) -> tuple[dict, int]:
        t = dict(zip(PARAMS, values))
        t["bd"] &= direct
        t["va"] = int(t["va"] and _vector_a_refusal(t, geom, caps, config) is None)
        tm, tn, _ = _tile(t, config)
        return t, workgroup_count(geom, {"tm": tm, "tn": tn})

    for values in (_WIDE, _TALL) if geom.out_per_group > 64 else (_TALL,):
        t, workgroups = shape(values)
        if reaches(workgroups, r["fill"]):
            return t
    # Short of FILL workgroups even on 64 x 64 tiles, a deep reduction splits across workgroups by phase_gemm's
    # rule (docs/decisions.md#sgmat-split-k).
    t, workgroups = shape(_SMALL)
    if r["fill"] is not None and workgroups < r["fill"]:
        tm, tn, tks = _tile(t, config)
        t["kz"] = split_k(geom, caps, tm, tn, tks, r["fill"])
    return t


def tiles_refusal(t: dict, geom, caps) -> str | None:
    """Why a shape cannot run here (None when it can): the device's matrices, limits and the staging rule."""
    if any(not isinstance(t.get(k), int) or t[k] < 1 for k in PARAMS if k not in SWITCHES):
        return "tile sizes must be positive integers"
    config = matrix_config(geom.dtype, caps)
    if config is None:
        return (f"needs a subgroup-matrix configuration with {' or '.join(COMPONENTS[geom.dtype])} components and "
                f"f32 results; the device reports {list(caps.subgroup_matrix_configs)}")
    tm, tn, tks = _tile(t, config)
    if t.get("bd") not in (0, 1):
        return "bd (right matrices read straight from the packed weights) must be 0 or 1"
    if t["bd"] and (why := direct_b_refusal(geom, config)):
        return why
    if t.get("va") not in (0, 1):
        return "va (A rows loaded as vec4s of x) must be 0 or 1"
    if t["va"] and (why := _vector_a_refusal(t, geom, caps, config)):
        return why
    if t.get("cl") not in (0, 1):
        return "cl (A from x repacked channels-last) must be 0 or 1"
    if t["cl"] and not t.get("vs"):
        return "cl runs in the vs template: vs must be 1"
    if t.get("vs") not in (0, 1):
        return "vs (16-byte vector staging, one buffer, results through the staging memory) must be 0 or 1"
    if t["vs"] and (why := _vector_staged_refusal(t, geom, caps, config)):
        return why
    if why := subgroups_refusal(t["sg_m"] * t["sg_n"], caps, config):
        return why
    threads = t["sg_m"] * t["sg_n"] * subgroup_size(caps)
    if tn % 4:
        return "the tile's columns must be a multiple of 4 (weights are read as vec4)"
    if threads % tm and tm % threads:
        return "the invocation count must divide or be a multiple of the tile's rows"
    if threads > tm and tks % (threads // tm):
        return "the reduction step must be a multiple of invocations / tile rows"
    if workgroup_bytes(t, config) > caps.limit(WORKGROUP_STORAGE):
        return "the tiles exceed the device's workgroup memory"
    return parts_refusal(t["kz"], geom, caps)


STRUCTURES = {
    "staged": "A and B staged by rows (bd: B read straight from the packed weights)",
    "staged-va": "the same, A rows loaded as vec4s of x",
    "vs": "16-byte vector staging of every operand in one buffer, results through the staging memory",
    "vs-va": "vs, A loaded as vectors of x",
    "vs-cl": "vs, A from x repacked channels-last by a pass before the GEMM",
}


def structure(t: dict) -> str:
    return split_structure(("vs" if t.get("vs") else "staged") + ("-cl" if t.get("cl") else "-va" if t.get("va") else ""), t)


def _configuration(name: str, shape: tuple, valid: str) -> Configuration:
    t = dict(zip(PARAMS, shape))
    return Configuration(name, structure(t), t, valid)


# The finite set the planner's alternatives and the autotuner try beside a request's defaults; shapes in units of
# the device's matrices (sg_m, sg_n, cm, cn, kb, kz, bd, va, vs, cl); the staged ones with A gathered and B staged,
# which every request takes (the defaults turn bd and va on where they run).
CONFIGURATIONS = (
    _configuration("wide", _WIDE[:6] + (0, 0, 0, 0), "any"),
    _configuration("tall", _TALL[:6] + (0, 0, 0, 0), "any"),
    _configuration("small", _SMALL[:6] + (0, 0, 0, 0), "any"),
    _configuration("vs", (2, 2, 4, 4, 2, 1, 0, 0, 1, 0), "float16 on f16 matrices"),
    _configuration("vs-narrow", (2, 2, 4, 2, 2, 1, 0, 0, 1, 0), "float16 on f16 matrices"),
    _configuration("vs-spread", (4, 4, 2, 2, 2, 1, 0, 0, 1, 0), "float16 on f16 matrices, 2D and 3D kernels of 2+ taps"),
    _configuration("vs-cl", (2, 2, 4, 4, 2, 1, 0, 0, 1, 1), "float16 on f16 matrices, 16-byte channel runs of x"),
)

TUNABLE = Tunable(default_tiles, tiles_refusal, structure, STRUCTURES, CONFIGURATIONS)


def configure(geom, caps, t: dict) -> Plan | Refusal:
    refusal = tiles_refusal(t, geom, caps)
    if refusal:
        return Refusal(refusal)
    config = matrix_config(geom.dtype, caps)
    tm, tn, tks = _tile(t, config)
    params = t | {"comp": config["componentType"], "sm": config["M"], "sn": config["N"], "sk": config["K"],
                  "subgroup_size": subgroup_size(caps), "tm": tm, "tn": tn}
    if t["vs"]:
        return _vector_staged_plan(geom, caps, params | {"yv": int(vector_y(geom))}, t, config)
    x_view = "array<vec4<T>>" if t["va"] else None
    invocations = t["sg_m"] * t["sg_n"] * subgroup_size(caps)
    template = POINTWISE if t["va"] and all(k == 1 for k in geom.kernel) else TEMPLATE
    if not t["bd"]:
        return gemm_plan(template, geom, caps, params, tm, tn, tks, workgroup_bytes(t, config), t, invocations,
                         x_view=x_view)
    # The last step's matrices reach up to tks rows and tn columns past the packed rows.
    tail = tks * wp_cols(geom) + tn
    return gemm_plan(template, geom, caps, params, tm, tn, tks, workgroup_bytes(t, config), t, invocations,
                     wp_view="array<C>", wp_tail=tail, x_view=x_view)


def _vector_staged_plan(geom, caps, params: dict, t: dict, config: dict) -> Plan | Refusal:
    """vs: x (va) and wp bound as 16-byte vectors; with yv, y (or the split's parts) as vectors of 4 rows;
    with cl, A read from xc, which a pass before the GEMM fills from x."""
    tm, tn, tks = _tile(t, config)
    return gemm_plan(VECTOR_STAGED, geom, caps, params, tm, tn, tks, workgroup_bytes(t, config), t,
                     t["sg_m"] * t["sg_n"] * subgroup_size(caps), wp_view="array<vec4<u32>>", x_view="array<vec4<u32>>" if t["va"] else None,
                     channels_last=bool(t["cl"]), out_vec4=bool(params["yv"]))


SGMAT = Variant(
    name=NAME, templates=(PACK, POINTWISE, TEMPLATE, VECTOR_STAGED, X_CHANNELS_LAST, SPLIT_SUM, *SHARED),
    summary="phase_gemm's GEMMs (every rank, stride, dense or grouped) on subgroup matrices: tensor cores where "
            "the device offers matrices with f32 results (f16 components for float16, f32 ones for float32)",
    conditions={"input": "nonempty", "finite_data": True},
    configure=configure, features=FEATURES, tunable=TUNABLE,
    requires=WORKGROUP_MEMORY | {"subgroup_matrix": "a configuration with f32 results and components that hold "
                                                    "the dtype exactly (f32 for float32; f16 or f32 for float16)"})

VARIANTS = (SGMAT,)
