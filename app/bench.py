"""Benchmark cases (bench.json's format) run on the current device: pure Python, runs in Pyodide.

Per case: the planner's choice (or each covering variant, for side-by-side tables), GPU time from
timestamp-query where the device has it (else wall time around submit-and-read), warm-up then median
and min of N runs, and GFLOP/s counting only the multiply-adds that land in the output.
"""
from __future__ import annotations

import json

import numpy as np

from .errors import ConvTransposeError
from .kernel import prepare
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


async def run_case(kernel, case: dict, variants: list[str] | None = None, runs: int = 5, warmup: int = 1) -> list[dict]:
    """Rows for one case: the planner's choice when `variants` is None, else each listed variant that covers it."""
    inputs = make_inputs(case)
    geom, _ = prepare(**inputs, **case["attributes"])
    flops = 2 * geom.multiply_adds()
    rows = []
    for variant in variants or [None]:
        if variant is not None:
            try:
                kernel.plan(geom, variant)
            except ConvTransposeError:
                continue
        timing = await time_call(kernel, inputs, case["attributes"], variant, warmup=warmup, runs=runs)
        rows.append({"case": case["name"], "tier": case["tier"], "forced": variant is not None, **timing,
                     "gflops": flops / (timing["median_ms"] * 1e6) if timing["median_ms"] > 0 else None,
                     "flop": flops})
    return rows


def all_variants() -> list[str]:
    return list(VARIANTS)
