"""Measures the best render params per tunable variant and shape class on the current adapter.

    table = await tuner.tune(kernel, cases, progress=print)       # cases: bench.json cases (with "fill")
    tuning_tables.use_table(table)                                # use it in this session; or save it as
                                                                  # tuning/<tuning_tables.file_name(caps)>

For each case, the planner's variant (or the case's "variant"), if bench.json's tuning grids list it, runs
every candidate of its grid (the cartesian product, minus what the variant refuses, plus its built-in
defaults and its declared configurations, the same the planner's search tries). Each candidate's first call is checked against the float64 reference as a bench row is
(app/bench.py check: the whole output, or sampled points at large sizes; tolerances per dtype and reduction
length): one that fails is rejected and can never enter the table. The survivors are then timed in
interleaved rounds (one call each per round, GPU time from timestamp-query, else wall time) and compared
by median. Per (variant, shape class) the table keeps the candidate that beats the defaults by more than
MARGIN on every case of the class (app/class_choice.py: the one rule of every table writer; the best geometric
mean among several).

With `choose_variants`, every other variant that covers the case is checked and timed the same way (with
its defaults) against the planner's variant at its best candidate; per shape class the table's `choices`
name the variant that replaces the planner's choice by the same rule. The
planner then takes that variant for the class, on this adapter, before its cost model (app/planner.py).

`repeats` > 1 times each candidate as `repeats` back-to-back submissions on resident buffers
(Gpu.time_launch), which a real GPU needs: between separate calls it idles and drops its clocks, and
single sub-millisecond kernels then time 2-5x slower at random. Pure Python: runs in Pyodide (the page or
`python -m app tune`).

The flow is one way: the tuner hands the kernel each candidate as arguments (kernel.call / timing.time_plan
with `params=` for the case's variant) and measures against no table at all (`tables=[]`: the cost model and
each variant's defaults, not an older table of this adapter); the kernel plans through the planner, the
only reader of tables. Nothing is set aside and restored.
"""
from __future__ import annotations

import itertools
import json
import statistics
import time

from . import class_choice, tuning_tables
from .bench import UNTUNED, check
from .class_choice import MARGIN
from .timing import time_plan
from .contract import ROOT
from .kernel import validate
from .variants import VARIANTS



def grids(bench_text: str | None = None) -> dict:
    """bench.json's tuning grids: variant -> {param: [values]}."""
    doc = json.loads(bench_text if bench_text is not None else (ROOT / "bench.json").read_text())
    return doc["tuning"]["grids"]


def tunable_variants() -> list[str]:
    """The variants that declare a tunable tile shape (app/variants/base.py Tunable)."""
    return sorted(name for name, v in VARIANTS.items() if v.tunable is not None)


def defaults(name: str, geom, caps) -> dict:
    """The variant's built-in params for this request (what it uses without a table)."""
    return dict(VARIANTS[name].tunable.defaults(geom, caps))


def refusal(name: str, params: dict, geom, caps) -> str | None:
    """Why the variant cannot run these params for this request on this device (None when it can)."""
    return VARIANTS[name].tunable.refusal(params, geom, caps)


def candidates(variant: str, grid: dict, geom, caps) -> list[dict]:
    """The defaults first, then the variant's declared configurations (app/variants/base.py Configuration: the
    planner's search tries the same) and every grid combination (over the defaults) that it accepts, no repeats."""
    tunable = VARIANTS[variant].tunable
    base = defaults(variant, geom, caps)
    out, seen = [base], {_key(base)}
    names = sorted(grid)
    declared = [tunable.resolve(c, geom, caps) for c in tunable.configurations]
    combos = (base | dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names)))
    for params in itertools.chain((p for p in declared if p is not None), combos):
        if _key(params) not in seen and refusal(variant, params, geom, caps) is None:
            seen.add(_key(params))
            out.append(params)
    return out


def _key(params: dict) -> str:
    return json.dumps(params, sort_keys=True)


# What the tuner measures against: no table (the cost model and the variants' defaults).
NO_TABLES: list[dict] = []


async def _timed_call(kernel, variant: str, params: dict | None, geom, arrays: dict, attributes: dict,
                      repeats: int = 1, pieces=None):
    """(result of one ordinary call or None, ms) on the case's validated request: params None = the
    variant's defaults; `pieces`: the caller's plan of it."""
    if repeats > 1:
        # The untimed run first: a fresh launch's buffers are touched for the first time there (on an H200
        # that first touch made large outputs time 2-3x slower).
        _, samples, _ = await time_plan(kernel, geom, arrays, variant, warmup=1, runs=1, repeats=repeats,
                                        params=params, tables=NO_TABLES)
        wall, gpu = samples[0]
        return None, gpu if gpu is not None else wall
    start = time.perf_counter()
    out = await kernel.call(geom, arrays, attributes, variant, pieces=pieces, params=params, tables=NO_TABLES)
    wall = (time.perf_counter() - start) * 1000
    return out, (out["meta"]["gpu_ms"] if out["meta"]["gpu_ms"] is not None else wall)


async def _checked(kernel, variant, params, geom, arrays, attributes, pieces=None) -> tuple[bool, float]:
    out, _ = await _timed_call(kernel, variant, params, geom, arrays, attributes, pieces=pieces)
    verdict = check(geom, arrays, out["y"])
    return verdict["ok"], verdict["max_abs_err"]


async def _medians(kernel, entries: list[tuple[str, dict | None]], geom, arrays, attributes, runs,
                   repeats) -> list[float]:
    """Median ms per (variant, params) entry, timed in interleaved rounds: machine noise spreads alike."""
    samples = [[] for _ in entries]
    for _ in range(runs):
        for i, (variant, params) in enumerate(entries):
            samples[i].append((await _timed_call(kernel, variant, params, geom, arrays, attributes, repeats))[1])
    return [statistics.median(s) for s in samples]


async def tune_case(kernel, case: dict, grid_for: dict, runs: int = 3, progress=None, repeats: int = 1,
                    choose_variants: bool = False) -> dict | None:
    """One case: every candidate checked against the reference, then timed. None when nothing to tune.
    The case is validated once; each (variant, params) is planned once (its first call)."""
    from .bench import make_inputs
    from .errors import ConvTransposeError

    attributes = case["attributes"]
    geom, arrays = validate(**make_inputs(case), **attributes)
    variant = case.get("variant") or kernel.plan(geom, tables=NO_TABLES).variant
    tunable = variant in grid_for and variant in tunable_variants()
    if not tunable and not choose_variants:
        return None
    caps = kernel.device.caps
    passing, rejected = [], []
    grid = grid_for[variant] if tunable else {}
    for params in candidates(variant, grid, geom, caps) if tunable else [None]:
        ok, err = await _checked(kernel, variant, params, geom, arrays, attributes)
        (passing if ok else rejected).append(params if ok else {"params": params, "max_error": err})
    times = await _medians(kernel, [(variant, p) for p in passing], geom, arrays, attributes, runs, repeats)
    medians = {_key(p): t for p, t in zip(passing, times)}
    default_key = _key(passing[0]) if passing else None
    result = {"case": f"{case.get('tier', '')}/{case['name']}/{geom.dtype}", "variant": variant,
              "class": tuning_tables.shape_class(geom),
              "defaults": default_key if tunable else None, "medians": medians if tunable else {},
              "rejected": rejected, "keys": sorted(grid)}
    if choose_variants and passing:
        others = []
        for name in VARIANTS:
            if name == variant:
                continue
            try:
                pieces = kernel.pieces(geom, name, tables=NO_TABLES)
            except ConvTransposeError:
                continue
            ok, err = await _checked(kernel, name, None, geom, arrays, attributes, pieces)
            if ok:
                others.append(name)
            else:
                rejected.append({"variant": name, "max_error": err})
        best_own = min(passing, key=lambda p: medians[_key(p)])
        timed = await _medians(kernel, [(variant, best_own)] + [(n, None) for n in others], geom, arrays, attributes,
                               runs, repeats)
        result["variant_ms"] = dict(zip([variant] + others, timed))
    if progress is not None:
        line = f"{case['name']}: {variant}, {len(passing)} candidates passed, {len(rejected)} rejected"
        if tunable and medians:
            line += f"; defaults {medians[default_key]:.3f} ms, best {min(medians.values()):.3f} ms"
        if "variant_ms" in result:
            line += "; " + ", ".join(f"{n} {t:.3f}" for n, t in sorted(result["variant_ms"].items(), key=lambda kv: kv[1]))
        progress(line)
    return result


def best_variant_per_class(results: list[dict], margin: float = MARGIN) -> dict:
    """class -> entry: the variant that replaces the planner's choice (at its best candidate) on every case of that
    shape class by app/class_choice.py's rule. The planner takes it for the class before its cost model
    (app/planner.py), whatever the model would pick."""
    layers = [{"class": r["class"], "incumbent": r["variant"], "ms": r["variant_ms"], "case": r["case"]}
              for r in results if r is not None and r.get("variant_ms")]
    return {cls: {"variant": won["winner"], "params": None, "relative_time": won["relative_time"],
                  "cases": [r["case"] for r in won["layers"]],
                  "median_ms": {r["case"]: {n: round(t, 4) for n, t in r["ms"].items()} for r in won["layers"]}}
            for cls, won in class_choice.best_per_class(layers, margin=margin).items()}


def best_per_class(results: list[dict], margin: float = MARGIN) -> dict:
    """variant -> class -> entry: the candidate tiles that replace the variant's defaults on every case of the class
    by app/class_choice.py's rule, among candidates measured on every one of them. The entry's params are the
    grid's keys only."""
    grouped: dict[str, list[dict]] = {}
    for r in results:
        if r is not None and r["defaults"] is not None:
            grouped.setdefault(r["variant"], []).append(
                {"class": r["class"], "incumbent": r["defaults"], "ms": r["medians"], "result": r})
    table: dict = {}
    for variant, layers in sorted(grouped.items()):
        for cls, won in class_choice.best_per_class(layers, margin=margin).items():
            rs, best = [layer["result"] for layer in won["layers"]], won["winner"]
            # Only the grid's params and what a declared configuration changes from the defaults: the rest stay each
            # request's defaults (some follow from its shape).
            params, base = json.loads(best), json.loads(rs[0]["defaults"])
            keys = set(rs[0].get("keys") or params) | {k for k, v in params.items() if base.get(k) != v}
            table.setdefault(variant, {})[cls] = {
                "params": {k: v for k, v in params.items() if k in keys},
                "relative_time": won["relative_time"], "cases": [r["case"] for r in rs],
                "median_ms": {r["case"]: {"defaults": round(r["medians"][r["defaults"]], 4),
                                          "tuned": round(r["medians"][best], 4)} for r in rs}}
    return table


async def tune(kernel, cases: list[dict], progress=None, runs: int = 3, grid_for: dict | None = None,
               repeats: int = 1, choose_variants: bool = False) -> dict:
    """The tuning table for the current adapter (see the module docstring); `progress(text)` gets a line per case."""
    held_out = [c["name"] for c in cases if c.get("tier") in UNTUNED]
    if held_out:
        raise ValueError("the holdout and fresh tiers check that choices generalise to shapes nothing was tuned on: "
                         f"it is never tuned on ({', '.join(held_out)})")
    grid_for = grids() if grid_for is None else grid_for
    results = [await tune_case(kernel, case, grid_for, runs, progress, repeats, choose_variants) for case in cases]
    caps = kernel.device.caps
    return {"format": tuning_tables.FORMAT, "adapter": tuning_tables.adapter_key(caps), "description": caps.description,
            "made_by": "python -m app tune (app/tuner.py)", "runs": runs, "repeats": repeats, "margin": MARGIN,
            "variants": best_per_class(results), "choices": best_variant_per_class(results),
            "rejected": [{"case": r["case"], "variant": r["variant"], "candidates": r["rejected"]}
                         for r in results if r and r["rejected"]],
            "measured": [{k: r[k] for k in ("case", "variant", "class", "medians")}
                         for r in results if r]}
