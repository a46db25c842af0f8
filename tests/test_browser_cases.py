"""Every test.json case through the case runner's machinery, in headless Chromium on real WebGPU."""
import json

import pytest

from app.host.case_runner import page_python, run_on_page
from tests.browser_session import assert_passed_or_gated
from tools.wgsl import credited

pytestmark = pytest.mark.browser
TEST_JSON = credited.TEST_JSON
CASE_NAMES = [case["name"] for case in json.loads(TEST_JSON.read_text())["cases"]]


@pytest.fixture(scope="module")
def run(page):
    """test.json's results, and the sha256 of every shader the run compiled (on Chromium's SwiftShader)."""
    page_python(page)("record_compiles")
    results = {r["name"]: r for r in run_on_page(page, TEST_JSON.read_text())}
    return results, set(page_python(page)("recorded_compiles"))


@pytest.fixture(scope="module")
def results(run):
    return run[0]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_case_passes(results, name):
    result = results[name]
    assert_passed_or_gated(result)


def test_compiles_every_shader_the_swiftshader_pass_leaves_to_it(run):
    """The SwiftShader back-end pass of tests/test_wgsl_compilers.py does not compile what this run compiles
    (tools/wgsl/credited.py): the run must compile every shader it is credited with."""
    missing = credited.uncompiled(credited.case_file(credited.CHROMIUM_SWIFTSHADER), run[1])
    assert not missing, f"{len(missing)} credited shader(s) not compiled, e.g. {sorted(missing)[:3]}"
