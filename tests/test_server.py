"""The local server serves the app's files with the right types and headers, and nothing outside them."""
import io
import os
import urllib.error
import urllib.request
import zipfile

import pytest

from app.host.server import ROOT, start_background


@pytest.fixture(scope="module")
def url():
    server, url = start_background()
    yield url
    server.shutdown()


def fetch(url):
    try:
        with urllib.request.urlopen(url) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), b""


@pytest.mark.parametrize("path, mime", [
    ("", "text/html; charset=utf-8"), ("web/boot.mjs", "text/javascript"),
    ("pyodide/pyodide.asm.wasm", "application/wasm"), ("manifest.json", "application/json"),
])
def test_mime_types_and_isolation_headers(url, path, mime):
    status, headers, _ = fetch(url + path)
    assert status == 200 and headers["Content-Type"] == mime
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert "default-src 'self'" in headers["Content-Security-Policy"]


@pytest.mark.parametrize("path", [
    "web/../serve.py", "web/%2e%2e/serve.py", "web/%2E%2E/%2E%2E/etc/passwd", "/etc/passwd", "app/gpu.py",
    "pyodide/../downloads/pyodide-0.27.7.tgz", "web/link-out", ".git/config",
])
def test_nothing_outside_the_app_is_served(url, path):
    link = ROOT / "web" / "link-out"
    link.symlink_to("/etc/hostname")
    try:
        status, _, _ = fetch(url + path)
    finally:
        link.unlink()
    assert status == 404


def test_bundle_holds_the_python_package_templates_and_contract(url):
    status, _, body = fetch(url + "bundle.zip")
    names = set(zipfile.ZipFile(io.BytesIO(body)).namelist())
    assert {"app/__init__.py", "app/gpu.py", "manifest.json", "metadata.json",
            "templates/conv-transpose2d-nchw.wgsl.jinja"} <= names
    assert not any(n.startswith("app/host/") for n in names)
    # The per-adapter tuning tables travel with the package: the planner in Pyodide reads them.
    assert {f"tuning/{p.name}" for p in (ROOT / "tuning").glob("*.json")} <= names
    assert "tuning/google-swiftshader.json" in names
