"""The npm package under the bundlers web developers use, each recipe of docs/npm.md run as written: every ```sh block
of its section, whole, in a new folder holding only the packed tarball and docs/npm.md's app.js and index.html, from
`npm init -y`, the bundler installed from the npm registry as the recipe says. Vite's build and dev server (`npx vite`,
at the URL it prints), webpack 5 and esbuild: each page shows the float64 reference's y in headless Chromium. Then in the
same folder the recipe's own bundle command builds the test's app, whose page runs a 1D, a 2D and a 3D call, checked.
And a location that cannot be the assets folder fails at once with a KernelError naming the URL and the `assets`
option."""
import functools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from app.host.export import PACKAGE_NAME, package_version
from tests.test_npm_package import (QuietHandler, check, check_doc_page, doc_files, npm_env, readme_app,  # noqa: F401
                                    requests, run, run_block, tarball)  # readme_app, tarball: fixtures

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "node_modules" / ".bin"
DOCS = ROOT / "docs" / "npm.md"
pytestmark = pytest.mark.browser

# The test's app: the package's import, three calls, and what a failed getKernel says.
APP_JS = """
import { getKernel, KernelError, bootPhases } from "webgpu-convtranspose";

const ID = "webgpu-kernels/ai.onnx.ConvTranspose";
let kernel;
window.appReady = getKernel(ID, { version: 1 }).then((k) => { kernel = k; return true; }, (err) => String(err));
const cpu = (t) => t && { data: new Float32Array(t.data), shape: t.shape };
window.runCall = async (request) => {
  const { y } = await kernel({ ...request, x: cpu(request.x), w: cpu(request.w), b: cpu(request.b) });
  return { y: Array.from(y.data), shape: y.shape, dtype: y.dtype };
};
window.phases = () => bootPhases();
window.tryAssets = async (assets) => {
  const started = performance.now();
  try {
    await getKernel(ID, { version: 1, assets });
    return null;
  } catch (err) {
    return { kernelError: err instanceof KernelError, name: err.name, field: err.field, message: err.message,
             ms: performance.now() - started };
  }
};
"""
PAGE = '<!doctype html><meta charset="utf-8"><title>{name}</title><script {kind} src="{src}"></script>\n'


def doc_blocks(heading: str) -> list[str]:
    """The ```sh blocks of docs/npm.md's `### {heading}` section, in order."""
    section = re.search(rf"^### {re.escape(heading)}.*?(?=^##)", DOCS.read_text(), re.S | re.M)
    assert section, f"docs/npm.md has no ### {heading} section"
    blocks = re.findall(r"```sh\n(.*?)```", section.group(0), re.S)
    assert blocks, f"docs/npm.md's {heading} section has no sh block"
    return blocks


def doc_line(heading: str, starts: str) -> str:
    return next(line.strip() for block in doc_blocks(heading) for line in block.splitlines()
                if line.strip().startswith(starts))


def recipe(heading: str, tarball: Path, parent: Path) -> Path:  # noqa: F811
    """A new folder with the tarball and docs/npm.md's two files, then the section's first block, as written."""
    app = parent / heading.lower()
    app.mkdir()
    shutil.copyfile(tarball, app / tarball.name)
    for name, text in doc_files().items():
        (app / name).write_text(text)
    block = doc_blocks(heading)[0]
    assert block.splitlines()[0] == "npm init -y", block  # from a fresh package.json, as a new app has
    assert f"npm install ./{PACKAGE_NAME}-{package_version()}.tgz " in block, block  # the bundler beside the package
    run_block(block, app, npm_env())
    return app


def rebuild_with_the_test_app(app: Path, command: str) -> None:
    """The test's app in place of docs/npm.md's app.js, bundled by the recipe's own command."""
    (app / "app.js").write_text(APP_JS)
    run_block(command, app, npm_env())


@pytest.fixture(scope="module")
def installed(tarball, tmp_path_factory) -> Path:  # noqa: F811
    """One offline `npm install` of the tarball, for the apps bundled with this repository's esbuild."""
    folder = tmp_path_factory.mktemp("install")
    (folder / "package.json").write_text(json.dumps({"name": "apps", "private": True, "type": "module"}))
    shutil.copyfile(tarball, folder / tarball.name)
    run(["npm", "install", "--offline", "--no-audit", "--no-fund", f"./{tarball.name}"], folder)
    return folder / "node_modules"


def new_app(parent: Path, name: str, node_modules: Path, files: dict) -> Path:
    app = parent / name
    app.mkdir()
    (app / "node_modules").symlink_to(node_modules, target_is_directory=True)
    (app / "package.json").write_text(json.dumps({"name": name, "private": True, "type": "module"}))
    for path, text in files.items():
        (app / path).parent.mkdir(parents=True, exist_ok=True)
        (app / path).write_text(text)
    return app


def serve(folder: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def run_page(page, url: str, seed: int) -> list[dict]:
    """The app at url in a fresh context (empty cache): ready, its three calls right, nothing fetched outside its
    site; returns its start-up phases."""
    from app.host.browser import BOOT_TIMEOUT_MS

    context = page.context.browser.new_context()
    with context:
        app = context.new_page()
        app.set_default_timeout(BOOT_TIMEOUT_MS)
        errors, fetched = [], []
        app.on("pageerror", lambda e: errors.append(str(e)))
        app.on("request", lambda r: fetched.append(r.url))
        app.goto(url)
        assert app.evaluate("window.appReady") is True, errors
        for request, want in requests(seed):
            check(app.evaluate("(request) => window.runCall(request)", request), want)
        assert not errors, errors
        site = url.split("/")[2]
        assert all(u.split("/")[2] == site for u in fetched if u.startswith("http")), fetched
        assert any(u.endswith(f"/{PACKAGE_NAME}/pyodide/pyodide.asm.wasm") for u in fetched), fetched
        return app.evaluate("window.phases()")


def test_esbuild_recipe(tarball, tmp_path, page):  # noqa: F811
    app = recipe("esbuild", tarball, tmp_path)
    server, url = serve(app / "dist")
    try:
        check_doc_page(page, f"{url}index.html")
        rebuild_with_the_test_app(app, doc_line("esbuild", "npx esbuild "))
        phases = run_page(page, f"{url}index.html", seed=41)
    finally:
        server.shutdown()
    names = [p["phase"] for p in phases]
    # the recipe's copy step brings snapshot.bin along: Python starts from it, with the package imported
    assert names[0] == "fetch bundle.zip" and \
        {"import pyodide.mjs", "start Python from the snapshot", "take the package from the snapshot"} <= set(names), names


def test_webpack_recipe(tarball, tmp_path, page):  # noqa: F811
    app = recipe("webpack", tarball, tmp_path)
    assert json.loads((app / "package.json").read_text())["type"] == "module"
    server, url = serve(app / "dist")
    try:
        check_doc_page(page, f"{url}index.html")
        rebuild_with_the_test_app(app, doc_line("webpack", "npx webpack "))
        run_page(page, f"{url}index.html", seed=42)
    finally:
        server.shutdown()


def dev_server_url(server: subprocess.Popen, lines: list, timeout: float = 120) -> str:
    """The URL `npx vite` prints (Local: http://localhost:PORT/), its colours stripped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in list(lines):
            found = re.search(r"Local:\s+(http://\S+/)", re.sub(r"\x1b\[[0-9;]*m", "", line))
            if found:
                return found[1]
        assert server.poll() is None, "".join(lines)
        time.sleep(0.2)
    raise AssertionError(f"npx vite printed no URL in {timeout} s: {''.join(lines)}")


def test_vite_recipe_build_and_dev_server(tarball, tmp_path, page):  # noqa: F811
    app = recipe("Vite", tarball, tmp_path)
    assert (app / "dist" / PACKAGE_NAME / "bundle.zip").is_file()  # public/ copied into the build
    static, url = serve(app / "dist")
    try:
        check_doc_page(page, url)
    finally:
        static.shutdown()
    (dev,) = [line.strip() for line in doc_blocks("Vite")[1].splitlines() if line.strip()]
    lines: list[str] = []
    server = subprocess.Popen(shlex.split(dev), cwd=app, env=npm_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    threading.Thread(target=lambda: [lines.append(line) for line in server.stdout], daemon=True).start()
    try:
        check_doc_page(page, dev_server_url(server, lines))
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # npx and the vite it started: a group of their own
        server.wait(timeout=20)
    rebuild_with_the_test_app(app, doc_line("Vite", "npx vite build"))
    static, url = serve(app / "dist")
    try:
        run_page(page, url, seed=44)
    finally:
        static.shutdown()


def test_a_location_that_cannot_be_the_assets_folder_fails_at_once(installed, tmp_path, page):
    """In an esbuild app whose package folder is missing (the early start from the default fails, quietly),
    each bad `assets` gives a KernelError naming the URL and the option, within seconds."""
    app = new_app(tmp_path, "bad-assets", installed, {"app.js": APP_JS})
    run([BIN / "esbuild", *shlex.split(doc_line("esbuild", "npx esbuild "))[2:]], app)
    (app / "dist" / "index.html").write_text(PAGE.format(name="bad", kind='type="module"', src="app.js"))
    (app / "dist" / "not-a-zip" / "pyodide").mkdir(parents=True)
    shutil.copytree(installed / PACKAGE_NAME / "pyodide", app / "dist" / "not-a-zip" / "pyodide", dirs_exist_ok=True)
    (app / "dist" / "not-a-zip" / "bundle.zip").write_text("<!doctype html>a fallback page")
    server, url = serve(app / "dist")
    try:
        context = page.context.browser.new_context()
        with context:
            tab = context.new_page()
            tab.set_default_timeout(120_000)
            tab.goto(f"{url}index.html")
            default = tab.evaluate("window.appReady")  # the bundled default, webgpu-convtranspose/: not copied here
            assert f"{url}{PACKAGE_NAME}/" in default and "assets" in default, default
            for assets, needle in [
                ("data:text/javascript;base64,AAAA", "data: URL holds no files"),
                (f"{url}{PACKAGE_NAME}/convtranspose.mjs", "names a file, not the assets folder"),
                ("/nowhere/", f"{url}nowhere/"),  # pyodide/pyodide.mjs or bundle.zip, whichever fails first
                ("/not-a-zip/", f"{url}not-a-zip/bundle.zip: not a zip file"),
            ]:
                got = tab.evaluate("(assets) => window.tryAssets(assets)", assets)
                assert got and got["kernelError"] and got["name"] == "KernelError" and got["field"] == "assets", got
                assert needle in got["message"] and "`assets` option" in got["message"], got
                assert assets != "/nowhere/" or "HTTP 404" in got["message"], got
                assert got["ms"] < 30_000, got
    finally:
        server.shutdown()
