"""Every variant forced on every test.json case it covers, in headless Chromium on real WebGPU.

A variant whose WebGPU feature the device lacks must refuse every case (the gate is what is tested
there); every other variant must pass all the cases it covers, and cover at least 15 of them.

test.json (18 MB) goes into the page once and is parsed there once (the bridge's load_cases, as the case
runner does); each variant then runs every case in one page call (the runner's run_case_at in a loop in
the page), not one call per case: 532 calls and a reload of the file per variant cost 5 s each here.
"""
import json
import re
from pathlib import Path

import pytest

from app.host.case_runner import page_python
from app.variants import VARIANTS
from tests.browser_session import run_python

pytestmark = pytest.mark.browser
TEST_JSON = Path(__file__).resolve().parent.parent / "test.json"
CASE_NAMES = [case["name"] for case in json.loads(TEST_JSON.read_text())["cases"]]
MIN_COVERED = 15
RUN_EVERY_CASE = """
import json
from app import bridge
json.dumps([await bridge.run_case_at(i, {variant!r}) for i in range({count})])
"""


@pytest.fixture(scope="module")
def device_features(page):
    return set(page.evaluate("async () => (await window.getKernel('webgpu-kernels/ai.onnx.ConvTranspose')).device().features"))


@pytest.fixture(scope="module")
def loaded(page):
    assert page_python(page)("load_cases", TEST_JSON.read_text()) == CASE_NAMES


def forced_results(page, variant: str) -> list[dict]:
    results = json.loads(run_python(page, RUN_EVERY_CASE.format(variant=variant, count=len(CASE_NAMES))))
    assert [r["name"] for r in results] == CASE_NAMES  # test.json as loaded above, every case once
    return results


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_forced_variant(page, loaded, device_features, variant):
    results = forced_results(page, variant)
    failed = [r for r in results if r["status"] == "FAIL"]
    passed = [r for r in results if r["status"] == "PASS"]
    assert not failed, failed[:3]
    missing = [f for f in VARIANTS[variant].features if f not in device_features]
    if missing:
        refusals = [r for r in results if r["status"] == "SKIP" and not r["detail"].startswith("refused:")]
        assert not passed and all(re.search("needs (the )?device feature", r["detail"]) for r in refusals)
    else:
        assert len(passed) >= MIN_COVERED, f"{variant} covers only {len(passed)} cases of test.json"
        assert all(r["variant"] in (variant, "none (empty output)") for r in passed)
