"""Every variant forced on every test.json case it covers, in headless Chromium on real WebGPU.

A variant whose WebGPU feature the device lacks must refuse every case (the gate is what is tested
there); every other variant must pass all the cases it covers, and cover at least 15 of them.

test.json (18 MB) goes into the page once and is parsed there once (the bridge's load_cases, as the case
runner does); each variant then runs every case in one page call (the runner's run_case_at in a loop in
the page), not one call per case: 533 calls and a reload of the file per variant cost 5 s each here.
"""
import json
import re

import pytest

from app.host.case_runner import page_python
from app.variants import VARIANTS
from tests.browser_session import run_python
from tools.wgsl import credited

pytestmark = pytest.mark.browser
TEST_JSON = credited.TEST_JSON
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


# The variants this module forced (the last test checks what they compiled), recorded from `loaded` on.
FORCED: set[str] = set()


@pytest.fixture(scope="module")
def loaded(page):
    page_python(page)("record_compiles")
    assert page_python(page)("load_cases", TEST_JSON.read_text()) == CASE_NAMES


def forced_results(page, variant: str) -> list[dict]:
    results = json.loads(run_python(page, RUN_EVERY_CASE.format(variant=variant, count=len(CASE_NAMES))))
    assert [r["name"] for r in results] == CASE_NAMES  # test.json as loaded above, every case once
    return results


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_forced_variant(page, loaded, device_features, variant):
    FORCED.add(variant)
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


def test_compiles_every_shader_the_swiftshader_pass_leaves_to_it(page):
    """The SwiftShader back-end pass of tests/test_wgsl_compilers.py does not compile what the forced variants
    compile here (tools/wgsl/credited.py): the variants this module forced must have compiled every shader
    they are credited with (all of them in a whole run of the module; it runs last)."""
    compiled = set(page_python(page)("recorded_compiles"))
    missing = credited.uncompiled(credited.case_file(credited.CHROMIUM_SWIFTSHADER, sorted(FORCED)), compiled)
    assert not missing, f"{len(missing)} credited shader(s) not compiled, e.g. {sorted(missing)[:3]}"
