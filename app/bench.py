"""Benchmark cases (bench.json's format) run on the current device: pure Python, runs in Pyodide.

Per case: the planner's choice (or each covering variant, for side-by-side tables), GPU time from
timestamp-query where the device has it (else wall time around submit-and-read), warm-up then median
and min of N runs, and GFLOP/s counting only the multiply-adds that land in the output.
"""
from __future__ import annotations

import json
import statistics

import numpy as np

from .errors import ConvTransposeError
from .kernel import validate
from .split import Unfittable
from .timing import time_call
from .variants import VARIANTS


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
                   repeats: int = 1) -> list[dict]:
    """Rows for one case: the planner's choice when `variants` is None, else each listed variant that covers it.
    repeats > 1: each run submits the plan that many times back to back on resident buffers (real GPUs).
    The case is validated once and each variant planned once (the plan that decides coverage is the one run)."""
    attributes = case["attributes"]
    geom, arrays = validate(**make_inputs(case), **attributes)
    flops = 2 * geom.multiply_adds()
    rows = []
    for variant in variants or [None]:
        try:
            pieces = kernel.pieces(geom, variant)
        except ConvTransposeError as exc:
            if variant is None or isinstance(exc, Unfittable):
                raise
            continue  # the forced variant does not cover the case
        if repeats > 1:
            timing = await _time_resident(kernel, geom, arrays, variant, runs, warmup, repeats,
                                          pieces[0][1] if len(pieces) == 1 else None)
        else:
            timing = await time_call(lambda: kernel.call(geom, arrays, attributes, variant, pieces=pieces),
                                     warmup=warmup, runs=runs)
        rows.append({"case": case["name"], "tier": case["tier"], "forced": variant is not None, **timing,
                     "gflops": flops / (timing["median_ms"] * 1e6) if timing["median_ms"] > 0 else None,
                     "flop": flops})
    return rows


async def time_plan(kernel, geom, arrays, variant=None, runs=5, warmup=1, repeats=1, plan=None):
    """(plan, [(wall ms, GPU ms or None)] per run): the plan (the caller's, else planned here) launched once,
    timed with its inputs on the GPU and y left there (web/executor.mjs Launch.time), then destroyed."""
    gpu = await kernel.gpu.current()
    plan = plan if plan is not None else kernel.plan(geom, variant)
    launch = await gpu.launch(plan, geom)
    try:
        return plan, await gpu.time_launch(launch, arrays, warmup=warmup, runs=runs, repeats=repeats)
    finally:
        launch.destroy()


async def _time_resident(kernel, geom, arrays, variant, runs, warmup, repeats=1, plan=None) -> dict:
    """time_plan's samples summarised: GPU time from timestamp-query where every run has it, else wall."""
    plan, samples = await time_plan(kernel, geom, arrays, variant, runs, warmup, repeats, plan)
    walls = [wall for wall, _ in samples]
    timed = all(gpu is not None for _, gpu in samples)
    times = [gpu for _, gpu in samples] if timed else walls
    return {"variant": plan.variant, "median_ms": statistics.median(times), "min_ms": min(times),
            "wall_median_ms": statistics.median(walls), "wall_min_ms": min(walls), "repeats": repeats,
            "source": "timestamp-query" if timed else "wall"}


def all_variants() -> list[str]:
    return list(VARIANTS)
