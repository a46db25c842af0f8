"""Benchmark cases (bench.json's format) run on the current device: pure Python, runs in Pyodide.

Per case: the planner's choice (or each covering variant, for side-by-side tables), GPU time from
timestamp-query where the device has it (else wall time around submit-and-read), warm-up then median
and min of N runs, and GFLOP/s counting only the multiply-adds that land in the output.
"""
from __future__ import annotations

import json
import math
import statistics

from . import planner
from .errors import ConvTransposeError
from .kernel import validate
from .lazy_numpy import np
from .split import Unfittable
from .timing import BUSY_MS, time_call, time_plan  # noqa: F401  (BUSY_MS: tools/gpu/torch_bench.py)
from .variants import VARIANTS
from .variants.base import max_phase_taps


CANDIDATES = "candidates"  # `--variants candidates`: every (variant, tiles) the planner ranks, as trials draw them
HOLDOUT = "holdout"  # the tier kept out of tuning and calibration (app/tuner.py refuses its cases)
UNTUNED = (HOLDOUT, "fresh")  # tiers never tuned on: the holdout and the fresh layers of app/fresh.py


def load(text: str, tier: str) -> list[dict]:
    doc = json.loads(text)
    return [dict(case, fill=doc["fill"]) for case in doc["cases"] if case["tier"] == tier]


def make_inputs(case: dict) -> dict:
    fill = case["fill"]
    rng = np.random.default_rng(fill["seed"])
    dtype = case.get("dtype", "float32")
    draw = lambda shape: rng.uniform(fill["low"], fill["high"], shape).astype(dtype)  # noqa: E731
    inputs = {"x": draw(case["x"]), "w": draw(case["w"])}
    if case.get("bias"):
        inputs["b"] = draw([case["w"][1] * case["attributes"].get("group", 1)])
    return inputs


async def run_case(kernel, case: dict, variants: list[str] | None = None, runs: int = 5, warmup: int = 1,
                   repeats: int = 1, autotune: bool = False) -> list[dict]:
    """Rows for one case: the planner's choice when `variants` is None, else each listed variant that covers it.
    repeats > 1: each run submits the plan that many times back to back on resident buffers (real GPUs).
    autotune: the choice a first call with autotuning makes (app/autotune.py, searched afresh: nothing
    stored), its search's cost in the row's `autotune`.
    The case is validated once and each variant planned once (the plan that decides coverage is the one run).
    Every row's y (of the runs it timed) is checked against the reference: a fast wrong kernel cannot win."""
    attributes = case["attributes"]
    geom, arrays = validate(**make_inputs(case), **attributes)
    flops = 2 * geom.multiply_adds()
    rows = []
    choice = None
    if autotune:
        from .autotune import Autotuner, MemoryStore

        choice = await Autotuner(MemoryStore()).choose(kernel, geom)
    if variants == CANDIDATES:
        return [_row(case, True, await _time_resident(kernel, geom, arrays, plan.variant, runs, warmup, repeats, plan),
                     flops, geom, arrays) for plan in _candidate_plans(kernel, geom)]
    for variant in variants or [None]:
        params = None
        if choice is not None:
            variant, params = choice.variant, choice.params
        try:
            pieces = kernel.pieces(geom, variant, params)
        except ConvTransposeError as exc:
            if variant is None or choice is not None or isinstance(exc, Unfittable):
                raise
            continue  # the forced variant does not cover the case
        if repeats > 1:
            timing = await _time_resident(kernel, geom, arrays, variant, runs, warmup, repeats,
                                          pieces[0][1] if len(pieces) == 1 else None)
        else:
            timing = await time_call(lambda: kernel.call(geom, arrays, attributes, variant, pieces=pieces, params=params),
                                     warmup=warmup, runs=runs)
            if len(pieces) == 1:
                timing["tiles"] = pieces[0][1].tiles  # as _time_resident's rows: which of a variant's tiles ran
        if choice is not None:
            timing["autotune"] = choice.meta()
        rows.append(_row(case, variant is not None and choice is None, timing, flops, geom, arrays))
    return rows


def _row(case: dict, forced: bool, timing: dict, flops: int, geom, arrays: dict) -> dict:
    """A bench row: the timing, its GFLOP/s and its y checked against the reference (y itself dropped)."""
    y = timing.pop("y")
    return {"case": case["name"], "tier": case["tier"], "forced": forced, **timing,
            "gflops": flops / (timing["median_ms"] * 1e6) if timing["median_ms"] > 0 else None,
            "flop": flops, "check": check(geom, arrays, y)}


def tolerance(dtype: str, reduction: int) -> dict:
    """What a bench row's y may differ from the float64 reference by. Inputs are U(-1, 1), an output sums
    R products: float32 accumulation errs like sqrt(R) * eps * |partial sums| (~3e-4 at R = 16384), so
    atol 2e-6 * R is ~100x that, while a wrong tap or channel moves an output by ~0.1 or more; float16 adds
    the rounding of y (rtol) and of products (~sqrt(R) * 1.2e-4 typical)."""
    r = max(1, reduction)
    if dtype == "float16":
        return {"atol": 1e-3 + 1e-3 * math.sqrt(r), "rtol": 2e-3}
    return {"atol": max(1e-5, 2e-6 * r), "rtol": 1e-4}


def reduction(geom) -> int:
    """The most products one output sums: in-channels per group times, per axis, the taps of one stride phase
    (ceil(k / step), step = s / gcd(s, d)), not the whole kernel: an iSTFT's output sums 4 of its 4096 taps,
    and a tolerance grown with all 4096 would pass any output."""
    return geom.in_per_group * max_phase_taps(geom)


FULL_CHECK_LIMIT = 20_000_000  # multiply-adds up to which the whole output is checked; past it, SAMPLES points
SAMPLES = 512


def check(geom, arrays: dict, y: np.ndarray) -> dict:
    """{max_abs_err, checked: "all" | "N sampled", ok}: y against the float64 reference of the same inputs."""
    from .reference import conv_transpose_reference, reference_at, sample_points

    x, w, b = (arrays.get(n) for n in ("x", "w", "b"))
    if geom.multiply_adds() <= FULL_CHECK_LIMIT:
        want, got, checked = conv_transpose_reference(geom, x, w, b), y.astype(np.float64), "all"
    else:
        points = sample_points(geom, SAMPLES)
        want, got = reference_at(geom, x, w, b, points), y[tuple(points.T)].astype(np.float64)
        checked = f"{len(points)} sampled"
    tol = tolerance(geom.dtype, reduction(geom))
    err = np.abs(got - want)
    ok = bool(np.all(err <= tol["atol"] + tol["rtol"] * np.abs(want))) if want.size else True
    return {"max_abs_err": float(err.max()) if err.size else 0.0, "checked": checked, "ok": ok}


def _candidate_plans(kernel, geom) -> list:
    """Every candidate the planner ranks for a request with grid tiles (app/planner.py ranked: each kernel in its
    own tiles and in the others it would try, the pool adaptation's trials draw from), one piece each."""
    pieces = kernel.pieces(geom, None, None)
    if len(pieces) != 1:
        raise ConvTransposeError(f"--variants {CANDIDATES} times requests that run in one piece; this one runs in "
                                 f"{len(pieces)}", "variants")
    return [plan for _, plan, _ in planner.ranked(geom, kernel.device.caps, grid=planner.GRID)]


async def _time_resident(kernel, geom, arrays, variant, runs, warmup, repeats=1, plan=None) -> dict:
    """time_plan's samples summarised: GPU time from timestamp-query where every run has it, else wall."""
    plan, samples, y = await time_plan(kernel, geom, arrays, variant, runs, warmup, repeats, plan)
    walls = [wall for wall, _ in samples]
    timed = all(gpu is not None for _, gpu in samples)
    times = [gpu for _, gpu in samples] if timed else walls
    return {"variant": plan.variant, "tiles": plan.tiles, "median_ms": statistics.median(times), "min_ms": min(times),
            "wall_median_ms": statistics.median(walls), "wall_min_ms": min(walls), "repeats": repeats,
            "source": "timestamp-query" if timed else "wall", "y": y}


def all_variants() -> list[str]:
    return list(VARIANTS)


def distinct_kernels() -> list[str]:
    """Every variant but the seed's names, which run their successors' shaders (`--variants all`)."""
    return [name for name, v in VARIANTS.items() if not v.tuned_as]
