"""Predicted GPU time of a plan, from what it does: the planner ranks every covering candidate by it.

A plan's passes are its main pass (the one that does the multiply-adds) and memory-bound helper passes
(folds of a column buffer, split-K sums, a channels-last copy of x). The prediction, in ms:

    passes * launch                                  each pass's fixed cost
  + max(compute, (x + w + y bytes) / bandwidth)      the main pass: arithmetic or its own traffic, whichever is longer
  + 2 * scratch bytes / bandwidth                    intermediate buffers written once and read once
  + overhead[variant, structure, dtype] * (
      invocations * per-invocation cost              every pass's threads (a software adapter runs them one by one)
    + outputs * per-output cost)                     the main pass's outputs, tile padding included: each pays its
                                                     indexing and store (a tiled GEMM that pads a depthwise layer's
                                                     one channel a group to its 32 rows pays for 32)

    compute = waves * (multiply-adds / workgroups) / (invocations a workgroup * rate[variant, structure, dtype])
    lanes   = invocations a workgroup, rounded up to whole SIMD groups of `simd`
    waves   = ceil(workgroups / (resident // lanes))      where a workgroup's lanes fit `resident`
            = workgroups * lanes / resident               where they do not: it runs in turns

so a grid that fills the GPU runs at `resident * rate` multiply-adds a ms, a grid of a few deep
workgroups (a long reduction in few tiles) pays its whole per-workgroup depth, and a grid just past one
wave pays for two. A workgroup of 5 invocations takes 8 lanes of a SIMD 4 wide, and one of 128 invocations on an
adapter of 64 lanes (a software adapter's few cores) runs in two turns, not at 128 lanes' rate. A tiled main pass's
multiply-adds and outputs are what its variant declares it computes (Plan.tile_outputs, tile_depth): padded tiles,
and reduction steps padded to whole chunks of in-channels (a step of 8 reduces a depthwise layer's one in-channel
in 8). A workgroup's invocations are what each pass declares (app/plan.py Dispatch.invocations).
`rate` is the arithmetic efficiency per resident invocation, one per variant, shader structure (its declared
Tunable.structure: gathered or channels-last A, vector staging, split-K...) and dtype; a structure never measured
takes its variant's rate. `overhead` scales the adapter's per-invocation and per-output costs by what each kernel's
threads do besides multiply-adds (the gather kernel's tap search, the phase kernels' index arithmetic), per the same
keys, 1 where not fitted. `resident`, `launch`, `bandwidth`, `simd` and the per-invocation and per-output costs are
the adapter's (a table fitted before a term existed has none: no per-output cost, SIMD 1, overheads 1). All are
calibrated per adapter class from measured sweeps (`fit`, tools/cost_model_fit.py) and stored in the adapter's
tuning table (app/tuning_tables.py `cost_model`), with the revision they were measured at
(docs/decisions.md#cost-model).
Pure Python.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .plan import Plan
from .shapes import ConvGeometry

# Passes that move data and do no multiply-adds: folds of a column buffer, split-K sums, a channels-last x.
HELPER_PASSES = ("col2im", "split-sum", "channels-last", "nonfinite-check")
DTYPE_BYTES = {"float32": 4, "float16": 2}
# An unmeasured variant: this fraction of the slowest measured rate (docs/decisions.md#unmeasured-rate).
UNMEASURED_RATE = 0.5
MAX_RATE_OVER_MEDIAN = 20.0  # no fitted rate above 20x the adapter's median (docs/decisions.md#rate-cap)


@dataclass(frozen=True)
class Features:
    """What the model reads of a plan."""

    variant: str
    dtype: str
    passes: int
    madds: int  # multiply-adds the main pass computes: its tiles' and reduction steps' padding included
    workgroups: int  # the main pass's grid
    invocations: int  # a main-pass workgroup's invocations
    io_bytes: int  # x, w, y once each
    scratch_bytes: int
    threads: int  # invocations of every pass together: what a software adapter pays for one by one
    outputs: int = 0  # outputs the main pass computes, its tiles' padding included: each pays its indexing and store
    structure: str = ""  # the variant's shader structure (app/variants/base.py Tunable.structure); "": its only one

    @property
    def key(self) -> str:
        """The rate this plan runs at: "variant/dtype", or "variant/structure/dtype" for a variant of several."""
        return rate_key(self.variant, self.structure, self.dtype)


def rate_key(variant: str, structure: str, dtype: str) -> str:
    return f"{variant}/{structure}/{dtype}" if structure else f"{variant}/{dtype}"


def computed_madds(plan: Plan, geom: ConvGeometry, workgroups: int) -> int:
    """The main pass's multiply-adds as its variant declares its tiles (Plan.tile_outputs, tile_depth): the padding of
    its tiles and of its reduction steps included; never fewer than the multiply-adds that land in y."""
    return max(geom.multiply_adds(), workgroups * plan.tile_outputs * plan.tile_depth)


def features(plan: Plan, geom: ConvGeometry) -> Features:
    sizes = [(d, math.prod(d.workgroups), d.invocations) for d in plan.dispatches]
    main = [s for s in sizes if not any(h in s[0].template for h in HELPER_PASSES)] or sizes
    _, workgroups, threads = max(main, key=lambda s: s[1] * s[2])
    size = DTYPE_BYTES.get(geom.dtype, 4)
    return Features(plan.variant, geom.dtype, len(plan.dispatches), computed_madds(plan, geom, workgroups), workgroups,
                    threads, (geom.x_size + math.prod(geom.w_shape) + geom.y_size) * size, sum(plan.scratch.values()),
                    sum(w * i for _, w, i in sizes), max(geom.y_size, workgroups * plan.tile_outputs),
                    _structure(plan))


def _structure(plan: Plan) -> str:
    from .variants import VARIANTS

    known = VARIANTS.get(plan.variant)
    return known.structure(plan.tiles) if known is not None else ""


def family(variant: str) -> str:
    """The module a variant's kernel comes from: its ranks and flavours share their arithmetic."""
    from .variants import VARIANTS

    known = VARIANTS.get(variant)
    return known.configure.__module__ if known is not None else variant


def _per_key(table: dict, variant: str, dtype: str, structure: str, pick) -> float | None:
    """The entry of the variant's structure in this dtype; else the variant's (its entry before entries were kept per
    structure, or its structures' `pick`) in this dtype; else its own in another dtype; else its family's (another
    rank of the same kernel) in this dtype, then in any; None where none is."""
    for key in (rate_key(variant, structure, dtype), rate_key(variant, "", dtype)):
        if key in table:
            return table[key]
    for same in (lambda k: k.split("/")[0] == variant and k.endswith("/" + dtype),
                 lambda k: k.split("/")[0] == variant,
                 lambda k: family(k.split("/")[0]) == family(variant) and k.endswith("/" + dtype),
                 lambda k: family(k.split("/")[0]) == family(variant)):
        found = [r for k, r in table.items() if same(k)]
        if found:
            return pick(found)
    return None


def rate(model: dict, variant: str, dtype: str, structure: str = "") -> float:
    """The calibrated rate of the variant's structure in this dtype, else of its nearest measured kin, the slowest
    where several (`_per_key`); else UNMEASURED_RATE of the slowest."""
    rates = model["rates"]
    found = _per_key(rates, variant, dtype, structure, min)
    if found is not None:
        return found
    return UNMEASURED_RATE * min(rates.values()) if rates else 1.0


def overhead(model: dict, variant: str, dtype: str, structure: str = "") -> float:
    """The factor on the adapter's per-invocation and per-output costs for this kernel, as `rate` finds its entry
    (the largest of its kin where several); 1 where none is fitted."""
    found = _per_key(model.get("overheads") or {}, variant, dtype, structure, max)
    return 1.0 if found is None else found


def fixed_ms(f: Features, model: dict) -> float:
    """The part of a prediction no rate decides: its passes' launches, its threads and its outputs."""
    return f.passes * model["launch_ms"] + overhead(model, f.variant, f.dtype, f.structure) * (
        f.threads * model["invocation_ms"] + f.outputs * model.get("output_ms", 0.0))


def waves(f: Features, model: dict) -> float:
    """The main pass's workgroups in turns of what the adapter runs at once: whole SIMD groups of its invocations
    fill `resident` lanes; a workgroup wider than them takes several turns alone."""
    simd = model.get("simd", 1)
    lanes = -(-max(1, f.invocations) // simd) * simd
    workgroups = max(1, f.workgroups)
    slots = model["resident"] // lanes
    return math.ceil(workgroups / slots) if slots else workgroups * lanes / model["resident"]


def predict(f: Features, model: dict) -> float:
    """Predicted ms of a plan's features under an adapter's calibrated `model` ({resident, launch_ms,
    bytes_per_ms, invocation_ms, output_ms, simd, rates and overheads: {"variant[/structure]/dtype": ...}})."""
    compute = waves(f, model) * (f.madds / max(1, f.workgroups)) / (
        f.invocations * rate(model, f.variant, f.dtype, f.structure))
    return (fixed_ms(f, model)
            + max(compute, f.io_bytes / model["bytes_per_ms"]) + 2 * f.scratch_bytes / model["bytes_per_ms"])


# Calibration -------------------------------------------------------------------------------------------------


def _loss(rows: list[tuple[Features, float]], model: dict) -> float:
    return sum(math.log(predict(f, model) / ms) ** 2 for f, ms in rows)


def _golden(err, lo: float, hi: float, steps: int) -> float:
    """The argument in [lo, hi] that minimises a unimodal `err` (golden section)."""
    g = (math.sqrt(5) - 1) / 2
    a, b = lo + (1 - g) * (hi - lo), lo + g * (hi - lo)
    fa, fb = err(a), err(b)
    for _ in range(steps):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = lo + (1 - g) * (hi - lo)
            fa = err(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = err(b)
    return (lo + hi) / 2


# Each global constant's search range, as log10: resident invocations (from one: a software adapter's few cores hold
# a few SIMD groups), launch ms, bytes a ms, ms an invocation, ms an output.
RANGES = {"resident": (0.0, 6.0), "launch_ms": (-4.0, 1.5), "bytes_per_ms": (4.0, 10.0), "invocation_ms": (-12.0, -2.0),
          "output_ms": (-12.0, -2.0)}


# A kernel's overhead, as log10, and the weight of its prior at 1 (a squared log10 error added to its rows' loss): a
# key of a few rows whose fixed part barely shows keeps about 1, not whatever its rows' noise asks.
OVERHEAD_RANGE = (-1.5, 1.5)
OVERHEAD_PRIOR = 2.0  # leave-one-seed-out on SwiftShader's kept runs: docs/decisions.md#cost-model


def _with_rates(rows_by_key: dict, model: dict, steps: int = 40) -> dict:
    """The model with each key's rate and overhead fitted to its own rows, given the global constants: rate, then
    overhead, twice (each moves the other's best)."""
    model = dict(model, rates=dict(model["rates"]), overheads=dict(model["overheads"]))
    for key, rows in rows_by_key.items():
        for _ in range(2):
            def err(log_rate, key=key, rows=rows):
                return _loss(rows, dict(model, rates=dict(model["rates"], **{key: 10 ** log_rate})))
            model["rates"][key] = 10 ** _golden(err, -4.0, 8.0, steps)

            def err_overhead(log_factor, key=key, rows=rows):
                trial = dict(model, overheads=dict(model["overheads"], **{key: 10 ** log_factor}))
                return _loss(rows, trial) + OVERHEAD_PRIOR * log_factor ** 2
            model["overheads"][key] = 10 ** _golden(err_overhead, *OVERHEAD_RANGE, steps)
    return model


def _constant(name: str, log_value: float) -> float:
    # resident invocations count whole ones: rounded only after the search, a fit's 127.9 became 128 and a
    # 64-invocation workgroup's waves halved (a fitted model's own rows then predicted 2x off)
    return int(round(10 ** log_value)) if name == "resident" else 10 ** log_value


def fit(rows: list[tuple[Features, float]], sweeps: int = 8, steps: int = 30, simd: int = 1) -> dict:
    """The model that best explains measured (features, ms) rows by squared log error (a ranking's errors are
    ratios): coordinate descent over the adapter's constants in log space, each key's rate and overhead refitted to
    its own rows at every step. Eight sweeps of 30 steps: docs/decisions.md#cost-model. `simd`: the adapter's
    subgroup size, the lanes its invocations are issued in."""
    keys = sorted({f.key for f, _ in rows})
    by_key = {k: [(f, ms) for f, ms in rows if f.key == k] for k in keys}
    model = {name: _constant(name, (lo + hi) / 2) for name, (lo, hi) in RANGES.items()}
    model["simd"] = max(1, simd)
    model["rates"] = {k: 1.0 for k in keys}
    model["overheads"] = {k: 1.0 for k in keys}
    model = _with_rates(by_key, model)
    for _ in range(sweeps):
        for name, (lo, hi) in RANGES.items():
            def err(log_value, name=name):
                trial = dict(model, **{name: _constant(name, log_value)})
                return _loss(rows, _with_rates(by_key, trial, steps=steps))
            model = _with_rates(by_key, dict(model, **{name: _constant(name, _golden(err, lo, hi, steps))}))
    # A variant whose rows the fixed costs explain alone fits an unbounded rate: capped, it never predicts free arithmetic.
    cap = MAX_RATE_OVER_MEDIAN * statistics.median(model["rates"].values())
    model["rates"] = {k: min(r, cap) for k, r in model["rates"].items()}
    return model


def spearman(a: list[float], b: list[float]) -> float:
    """Rank correlation of two equally long lists (ties share their mean rank)."""
    def ranks(v):
        order = sorted(range(len(v)), key=v.__getitem__)
        out = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2
            i = j + 1
        return out
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    if n < 2:
        return float("nan")
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    var = math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
    return cov / var if var else float("nan")
