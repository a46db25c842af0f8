"""Session-wide fixtures for the browser tests: one server, one headless Chromium page, Pyodide booted once;
one Node host (Dawn on SwiftShader, its own Pyodide booted once, about 10 s) for every test that calls one."""
import json

import pytest

from app.host.browser import app_page
from app.host.node import NodeHost
from app.host.server import start_background


@pytest.fixture(scope="session")
def app_url():
    server, url = start_background()
    yield url
    server.shutdown()


@pytest.fixture(scope="session")
def page(app_url):
    with app_page(app_url) as page:
        page.set_default_timeout(120_000)
        yield page


@pytest.fixture(scope="session")
def node_host():
    with NodeHost() as host:
        yield host


def run_python(page, code: str):
    """Runs Python (async allowed) inside the page's Pyodide; returns its last expression as plain JS data."""
    return page.evaluate(
        """async (code) => {
            const { bootApp } = await import("/web/runtime/index.mjs");
            const { pyodide } = await bootApp();
            const out = await pyodide.runPythonAsync(code);
            return out && out.toJs ? out.toJs({ dict_converter: Object.fromEntries }) : out;
        }""", code)


def assert_passed_or_gated(result: dict) -> None:
    """A case result passed, or skipped only because it is float16 on a device without shader-f16."""
    if result["status"] == "SKIP":
        assert "needs the device feature(s) ['shader-f16']" in result["detail"], result
    else:
        assert result["status"] == "PASS", result


RUN_FORCED = """
import json
from app import bridge
json.dumps([await bridge.run_case_at(i, {variant!r}, {params})
            for i, case in enumerate(bridge._cases) if not case["expected_error"]])
"""


def passed_with_params_forced(page, variant: str, params: dict) -> list[dict]:
    """Every valid test.json case with `variant` and its tile `params` forced in the page, through the case runner's
    call with params (`python -m app cases --variant V --params`). Asserts that none failed and that every case
    skipped was refused (the variant does not cover it or take the params here, or the device lacks a feature),
    never a crash; returns the passed results."""
    from app.host.case_runner import page_python
    from tools.wgsl.credited import TEST_JSON
    page_python(page)("load_cases", TEST_JSON.read_text())
    results = json.loads(run_python(page, RUN_FORCED.format(variant=variant, params=params)))
    failed = [r for r in results if r["status"] == "FAIL"]
    assert not failed, failed[:3]
    skipped = [r for r in results if r["status"] == "SKIP"]
    assert all("does not take" in r["detail"] or "does not cover" in r["detail"]
               or "needs the device feature" in r["detail"] for r in skipped), skipped[:3]
    return [r for r in results if r["status"] == "PASS"]
