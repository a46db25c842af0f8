"""Differential fuzzing in the page: seeded random valid requests on real WebGPU against the float64
reference (app/fuzz.py). The CI tier runs FUZZ_CASES cases; `pytest --fuzz-long N` (or FUZZ_LONG=N) adds a
long tier of N more. Every failure is written to build/fuzz-failures/<case>.json in test.json's format:
`python -m app cases build/fuzz-failures/<case>.json` reproduces it (add `--variant NAME` when the case
name ends in a variant's name: it failed under that forced variant)."""
import json

import pytest

from app.contract import ROOT
from app.fuzz import case_file

from .browser_session import run_python

pytestmark = pytest.mark.browser

SEED = 2026
FUZZ_CASES = 240
CHUNK = 60  # cases per page.evaluate: one round trip for many requests
FAILURES = ROOT / "build" / "fuzz-failures"


def fuzz_in_page(page, seed: int, count: int, start: int = 0, limits=None) -> dict:
    return run_python(page, f"""
import app
from app.fuzz import run_fuzz
kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1, limits={limits!r})
await run_fuzz(kernel, {seed}, {count}, start={start}, unfittable_ok={limits is not None})
""")


def run_tier(page, seed: int, total: int, limits=None) -> dict:
    summary = {"cases": 0, "calls": 0, "variants": {}, "failures": [], "split": 0, "unfittable": 0}
    for start in range(0, total, CHUNK):
        out = fuzz_in_page(page, seed, min(CHUNK, total - start), start, limits)
        summary["cases"] += out["cases"]
        summary["calls"] += out["calls"]
        summary["split"] += out["split"]
        summary["unfittable"] += out["unfittable"]
        for name, n in out["variants"].items():
            summary["variants"][name] = summary["variants"].get(name, 0) + n
        summary["failures"] += out["failures"]
    written = []
    for failure in summary["failures"]:
        FAILURES.mkdir(parents=True, exist_ok=True)
        path = FAILURES / f"{failure['case']['name']}.json"
        path.write_text(json.dumps(case_file([failure["case"]])))
        written.append(f"{path} ({failure['variant']}: {failure['detail']})")
    print(f"fuzz seed {seed}: {summary['cases']} cases, {summary['calls']} calls ({summary['split']} split into "
          f"pieces, {summary['unfittable']} refused as unfittable), variants {summary['variants']}")
    assert not written, "fuzz failures, each reproducible with `python -m app cases FILE`:\n" + "\n".join(written)
    return summary


def test_fuzz_ci_tier(page):
    summary = run_tier(page, SEED, FUZZ_CASES)
    assert summary["cases"] == FUZZ_CASES and summary["calls"] > FUZZ_CASES
    assert len(summary["variants"]) >= 8  # the planner's fast variants and the forced ones all took part


def test_fuzz_under_lowered_limits(page):
    """The same generator with the planning limits capped to 1 KiB buffers and 8 workgroups per dimension:
    many calls run as pieces and all match; the few whose one output channel's weights exceed 1 KiB are
    refused (before any GPU work), never wrong."""
    summary = run_tier(page, SEED + 2, 60, {"maxStorageBufferBindingSize": 1024,
                                            "maxComputeWorkgroupsPerDimension": 8})
    assert summary["split"] >= summary["calls"] // 3 and summary["unfittable"] <= summary["calls"] // 10


def test_fuzz_long_tier(page, request):
    count = request.config.getoption("--fuzz-long")
    if not count:
        pytest.skip("long fuzz tier: run with --fuzz-long N (or FUZZ_LONG=N)")
    run_tier(page, SEED + 1, count)
