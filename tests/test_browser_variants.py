"""Every variant forced on every test.json case it covers, in headless Chromium on real WebGPU.

A variant whose WebGPU feature the device lacks must refuse every case (the gate is what is tested
there); every other variant must pass all the cases it covers, and cover at least 15 of them.
"""
import re
from pathlib import Path

import pytest

from app.host.case_runner import run_on_page
from app.variants import VARIANTS

pytestmark = pytest.mark.browser
TEST_JSON = Path(__file__).resolve().parent.parent / "test.json"
MIN_COVERED = 15


@pytest.fixture(scope="module")
def device_features(page):
    return set(page.evaluate("async () => (await window.getKernel('webgpu-kernels/ai.onnx.ConvTranspose')).device().features"))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_forced_variant(page, device_features, variant):
    results = list(run_on_page(page, TEST_JSON.read_text(), variant))
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
