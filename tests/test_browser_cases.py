"""Every test.json case through the case runner's machinery, in headless Chromium on real WebGPU."""
import json
from pathlib import Path

import pytest

from app.host.case_runner import run_on_page
from tests.browser_session import assert_passed_or_gated

pytestmark = pytest.mark.browser
TEST_JSON = Path(__file__).resolve().parent.parent / "test.json"
CASE_NAMES = [case["name"] for case in json.loads(TEST_JSON.read_text())["cases"]]


@pytest.fixture(scope="module")
def results(page):
    return {r["name"]: r for r in run_on_page(page, TEST_JSON.read_text())}


@pytest.mark.parametrize("name", CASE_NAMES)
def test_case_passes(results, name):
    result = results[name]
    assert_passed_or_gated(result)
