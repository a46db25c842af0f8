"""The npm package under the bundlers web developers use, each app built from the packed tarball by docs/npm.md's steps
for its bundler and nothing else (no configuration file, no plugin): Vite's dev server and `vite build`, webpack 5 and
esbuild. Each app's page runs a 1D, a 2D and a 3D call in headless Chromium, checked against the float64 reference.
One tarball and one `npm install` serve every app (each app's node_modules links to it). And a location that cannot be
the assets folder fails at once with a KernelError naming the URL and the `assets` option."""
import functools
import json
import re
import shlex
import shutil
import subprocess
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from app.host.export import PACKAGE_NAME, package_version
from tests.local_http import free_port, wait_until_served
from tests.test_npm_package import QuietHandler, check, requests, run, tarball  # noqa: F401 (tarball: a fixture)

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "node_modules" / ".bin"
DOCS = ROOT / "docs" / "npm.md"
pytestmark = pytest.mark.browser

# The app's page code: the package's import, three calls, and what a failed getKernel says.
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


def doc_lines(heading: str) -> list[str]:
    """The lines of the ```sh block under docs/npm.md's `### {heading}` section."""
    section = re.search(rf"^### {re.escape(heading)}.*?```sh\n(.*?)```", DOCS.read_text(), re.S | re.M)
    assert section, f"docs/npm.md has no ### {heading} section with a sh block"
    return [line.strip() for line in section.group(1).splitlines() if line.strip()]


def doc_steps(heading: str) -> list[list[str]]:
    return [shlex.split(line) for line in doc_lines(heading)]


def shell(heading: str, index: int) -> list[str]:
    """A copy step, run by the shell as written."""
    line = doc_lines(heading)[index]
    assert line.split("&&")[-1].split()[:2] == ["cp", "-r"], line
    return ["bash", "-c", line]


def tool(argv: list[str]) -> list[str]:
    """`npx NAME ...` as the app would run it: NAME from this repository's node_modules (pinned in package-lock.json)."""
    assert argv[0] == "npx", argv
    return [str(BIN / argv[1]), *argv[2:]]


@pytest.fixture(scope="module")
def installed(tarball, tmp_path_factory) -> Path:  # noqa: F811
    """One `npm install` of the tarball (docs' first step, offline: it has no dependencies to fetch)."""
    steps = doc_steps("esbuild")
    assert steps[0] == ["npm", "install", f"./{PACKAGE_NAME}-{package_version()}.tgz"]
    for heading in ("Vite", "webpack"):
        assert doc_steps(heading)[0] == steps[0]
    folder = tmp_path_factory.mktemp("install")
    (folder / "package.json").write_text(json.dumps({"name": "apps", "private": True, "type": "module"}))
    shutil.copyfile(tarball, folder / tarball.name)
    run([*steps[0][:2], "--offline", "--no-audit", "--no-fund", steps[0][2]], folder)
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


def test_esbuild_app(installed, tmp_path, page):
    steps = doc_steps("esbuild")
    app = new_app(tmp_path, "esbuild-app", installed, {"app.js": APP_JS})
    run(tool(steps[1]), app)
    (app / "dist" / "index.html").write_text(PAGE.format(name="esbuild", kind='type="module"', src="app.js"))
    run(shell("esbuild", 2), app)
    server, url = serve(app / "dist")
    try:
        phases = run_page(page, f"{url}index.html", seed=41)
    finally:
        server.shutdown()
    names = [p["phase"] for p in phases]
    assert names[0] == "fetch bundle.zip" and {"import pyodide.mjs", "start Python", "import the package"} <= set(names)


def test_webpack_app(installed, tmp_path, page):
    steps = doc_steps("webpack")
    app = new_app(tmp_path, "webpack-app", installed, {"src/index.js": APP_JS})
    run(tool(steps[1]), app)
    assert (app / "dist" / "main.js").is_file()
    (app / "dist" / "index.html").write_text(PAGE.format(name="webpack", kind="defer", src="main.js"))
    run(shell("webpack", 2), app)
    server, url = serve(app / "dist")
    try:
        run_page(page, f"{url}index.html", seed=42)
    finally:
        server.shutdown()


def test_vite_dev_server_and_build(installed, tmp_path, page):
    dev, build = doc_steps("Vite")[2:]
    app = new_app(tmp_path, "vite-app", installed, {
        "main.js": APP_JS, "index.html": PAGE.format(name="vite", kind='type="module"', src="/main.js")})
    run(shell("Vite", 1), app)
    port = free_port()
    server = subprocess.Popen([*tool(dev), "--port", str(port), "--strictPort", "--host", "127.0.0.1"], cwd=app,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_until_served(url, attempts=300, pause=0.2, timeout=2)
        run_page(page, url, seed=43)
    finally:
        server.terminate()
        server.wait(timeout=20)
    run(tool(build), app)
    assert (app / "dist" / PACKAGE_NAME / "bundle.zip").is_file()  # public/ copied into the build
    static, url = serve(app / "dist")
    try:
        run_page(page, url, seed=44)
    finally:
        static.shutdown()


def test_a_location_that_cannot_be_the_assets_folder_fails_at_once(installed, tmp_path, page):
    """In an esbuild app whose package folder is missing (the early start from the default fails, quietly),
    each bad `assets` gives a KernelError naming the URL and the option, within seconds."""
    app = new_app(tmp_path, "bad-assets", installed, {"app.js": APP_JS})
    run(tool(doc_steps("esbuild")[1]), app)
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
