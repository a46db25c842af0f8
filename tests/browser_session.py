"""Session-wide fixtures for the browser tests: one server, one headless Chromium page, Pyodide booted once;
one Node host (Dawn on SwiftShader, its own Pyodide booted once, about 10 s) for every test that calls one."""
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
