"""The npm package (`python -m app export DIR` is one): packed with `npm pack`, then used as a web developer would:

- README.md's "Use it in your web app" block runs as written, whole, in a scratch folder (export, a new app from
  `npm init -y`, pack, install with esbuild, bundle, copy) with docs/npm.md's app.js and index.html, and the page it
  builds shows the right y in headless Chromium; the tarball it packs is the one every test here uses, and its size
  and file count are the figures README.md and docs/npm.md state;
- apps of the test's own `npm install` that tarball (offline), are bundled by esbuild with the package's assets copied
  beside the bundle, are served by a plain static server and run 1D, 2D and 3D calls (GPU-resident ones too) in
  headless Chromium and Firefox, checked against the float64 reference; the same app with its assets elsewhere
  (getKernel's `assets` option) loads them from there and nowhere else;
- a Node script with npm `webgpu` providing navigator.gpu imports getKernel with no other setup;
- TypeScript type-checks an app against the package's declarations with `tsc --strict`, and refuses wrong calls.
"""
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from app.host.export import PACKAGE_NAME, export, package_version
from app.host.node import node_env
from app.kernel import validate
from app.reference import conv_transpose_reference

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "node_modules" / ".bin"
README = ROOT / "README.md"
NPM_DOC = ROOT / "docs" / "npm.md"
MAX_TARBALL = 25_000_000  # bytes: the 25 MB
KERNEL_ID = "webgpu-kernels/ai.onnx.ConvTranspose"
REQUESTS = [  # x shape, w shape, bias length, attributes: 2D, 1D grouped, 3D
    ((1, 3, 4, 5), (3, 2, 3, 3), 2, {"strides": [2, 2], "pads": [1, 0, 1, 0], "output_padding": [1, 0]}),
    ((2, 4, 9), (4, 1, 4), 4, {"strides": [2], "pads": [1, 1], "group": 4}),
    ((1, 2, 3, 3, 2), (2, 2, 2, 2, 2), None, {"strides": [2, 1, 2]}),
]


def run(command: list, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=300, **kwargs)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def readme_block() -> str:
    """README.md's "Use it in your web app" block, as a user copies it."""
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", README.read_text(), re.S) if "npm pack" in b]
    assert len(blocks) == 1, blocks
    return blocks[0]


def readme_steps() -> dict:
    """The block's app steps: the tarball's install, the bundle and the copy."""
    lines = [line.strip() for line in readme_block().splitlines() if line.strip() and not line.startswith("#")]
    install = next(line for line in lines if line.startswith("npm install "))
    assert shlex.split(install)[2] == f"./{PACKAGE_NAME}-{package_version()}.tgz", install  # the tarball npm pack makes
    bundle = next(line for line in lines if line.startswith("npx esbuild "))
    copy = lines[-1]
    assert copy.startswith("cp ") and lines.index(bundle) == len(lines) - 2, lines
    return {"install": shlex.split(install), "bundle": shlex.split(bundle), "copy": copy}


def doc_files() -> dict:
    """docs/npm.md's app file and page, named by their first line, as every recipe there and the README use them."""
    text = NPM_DOC.read_text()
    app = re.search(r"```js\n(// app\.js\n.*?)```", text, re.S)
    page = re.search(r"```html\n(<!-- index\.html -->\n.*?)```", text, re.S)
    assert app and page, "docs/npm.md shows no app.js or index.html"
    return {"app.js": app.group(1), "index.html": page.group(1)}


def npm_env(extra_path: Path | None = None) -> dict:
    """The environment of a user's shell, less npm's audit and funding notes."""
    env = {**os.environ, "npm_config_audit": "false", "npm_config_fund": "false", "npm_config_update_notifier": "false"}
    if extra_path:
        env["PATH"] = f"{extra_path}{os.pathsep}{env['PATH']}"
    return env


def run_block(block: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """A docs block as a shell script: every line must succeed, in order (a `cd` carries to the next line)."""
    return run(["bash", "-e", "-c", block], cwd, env=env)


@pytest.fixture(scope="module")
def readme_app(tmp_path_factory) -> Path:
    """README.md's block, whole and as written, from a folder standing for the checkout (`python -m app` is this
    checkout's, through PYTHONPATH; `python` is the test's interpreter) beside which it makes ../kernel and
    ../my-app, the app holding docs/npm.md's two files. Returns my-app."""
    scratch = tmp_path_factory.mktemp("readme")
    (scratch / "bin").mkdir()
    (scratch / "bin" / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (scratch / "bin" / "python").chmod(0o755)
    (scratch / "checkout").mkdir()
    for name, text in doc_files().items():  # written before the block runs; its `mkdir -p my-app` keeps them
        (scratch / "my-app" / name).parent.mkdir(parents=True, exist_ok=True)
        (scratch / "my-app" / name).write_text(text)
    env = npm_env(scratch / "bin")
    env["PYTHONPATH"] = str(ROOT)
    run_block(readme_block(), scratch / "checkout", env)
    app = scratch / "my-app"
    assert json.loads((app / "package.json").read_text())["dependencies"][PACKAGE_NAME].startswith("file:")
    assert {p.name for p in (app / "dist").iterdir()} >= {"index.html", "app.js", PACKAGE_NAME}
    return app


@pytest.fixture(scope="module")
def tarball(readme_app) -> Path:
    """The tarball README.md's `npm pack` wrote into the app's folder."""
    path = readme_app / f"{PACKAGE_NAME}-{package_version()}.tgz"
    assert path.is_file(), sorted(p.name for p in readme_app.iterdir())
    return path


def scratch_app(folder: Path, tarball: Path) -> Path:
    """A new app folder with the tarball installed by README.md's command, less its bundler (offline here: the file
    has no dependencies to fetch; the tests bundle with this repository's esbuild)."""
    folder.mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"name": "scratch-app", "private": True, "type": "module"}))
    shutil.copyfile(tarball, folder / tarball.name)
    npm, install, package = readme_steps()["install"][:3]
    run([npm, install, "--offline", "--no-audit", "--no-fund", package], folder)
    return folder


def repo_package(app_parent: Path, name: str) -> None:
    """An npm package of this repository's node_modules (webgpu, @webgpu/types, @types/node), visible to apps
    under app_parent as an installed one would be (Node and tsc look in every parent's node_modules)."""
    link = app_parent / "node_modules" / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(ROOT / "node_modules" / name, target_is_directory=True)


def requests(seed: int):
    """(request with plain lists, float64 reference y) for REQUESTS."""
    rng = np.random.default_rng(seed)
    for x_shape, w_shape, bias, attrs in REQUESTS:
        x = rng.uniform(-1, 1, x_shape).astype(np.float32)
        w = rng.uniform(-1, 1, w_shape).astype(np.float32)
        b = rng.uniform(-1, 1, bias).astype(np.float32) if bias else None
        tensors = {name: {"data": t.ravel().tolist(), "shape": list(t.shape)}
                   for name, t in (("x", x), ("w", w), ("b", b)) if t is not None}
        geom, _ = validate(x, w, b, **attrs)
        yield {**tensors, **attrs}, conv_transpose_reference(geom, x, w, b)


def check(got: dict, want: np.ndarray) -> None:
    assert got["shape"] == list(want.shape) and got["dtype"] == "float32", got.get("shape")
    np.testing.assert_allclose(np.array(got["y"]).reshape(want.shape), want, atol=1e-5, rtol=1e-4)


def test_the_tarball_is_a_package_of_at_most_25_mb_with_verified_pyodide(tarball):
    size = tarball.stat().st_size
    print(f"\n{tarball.name}: {size:,} bytes")
    assert size <= MAX_TARBALL
    with tarfile.open(tarball) as tar:
        files = {m.name.removeprefix("package/"): m for m in tar.getmembers() if m.isfile()}
        read = lambda name: tar.extractfile(files[name]).read()  # noqa: E731
        meta = json.loads(read("package.json"))
        lock = json.loads(read("pyodide/pyodide-lock.json"))
        wheels = {p["file_name"]: p["sha256"] for p in lock["packages"].values()}
        assert {"numpy", "jinja2", "markupsafe"} <= set(lock["packages"])
        for name, digest in wheels.items():  # what Chromium enforces (SRI) holds for every wheel shipped
            assert hashlib.sha256(read(f"pyodide/{name}")).hexdigest() == digest, name
    assert meta["name"] == PACKAGE_NAME and meta["version"] == package_version() and meta["type"] == "module"
    entries = meta["exports"]["."]
    assert list(entries) == ["types", "browser", "node", "default"]  # conditions match in order: types first
    for target in [*entries.values(), meta["types"], meta["main"]]:
        assert target.removeprefix("./") in files, target
    assert {"bundle.zip", "pyodide/pyodide.mjs", "pyodide/pyodide.asm.wasm", "pyodide/python_stdlib.zip",
            "pyodide/package.json", "web/runtime/index.mjs", "web/runtime/kernel.mjs", "README.txt"} <= set(files)
    assert not [name for name in files if name.startswith(("app/", "tests/", "node_modules/"))]


class QuietHandler(SimpleHTTPRequestHandler):
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript", ".js": "text/javascript",
                      ".wasm": "application/wasm"}

    def log_message(self, *args):
        pass


# The app's own page code: README.md's import, and what the test asks of it.
APP_JS = """
import { getKernel, ConvTransposeError } from "webgpu-convtranspose";

const assets = new URLSearchParams(location.search).get("assets") ?? undefined;
let kernel;
window.appReady = (async () => {
  kernel = await getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, assets });
  return true;
})();

const cpu = (t) => t && { data: new Float32Array(t.data), shape: t.shape };

async function readBack(device, buffer, count) {
  const read = device.createBuffer({ size: count * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, 0, read, 0, count * 4);
  device.queue.submit([encoder.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const out = Array.from(new Float32Array(read.getMappedRange().slice(0)));
  read.destroy();
  return out;
}

// CPU arrays in and out; or resident: x uploaded by the kernel, w in the app's own buffer, y left on the GPU.
window.runCall = async (request, resident) => {
  const inputs = { ...request, x: cpu(request.x), w: cpu(request.w), b: cpu(request.b) };
  if (!resident) {
    const { y } = await kernel(inputs);
    return { y: Array.from(y.data), shape: y.shape, dtype: y.dtype };
  }
  const device = kernel.gpuDevice();
  const x = kernel.upload(inputs.x);
  const buffer = device.createBuffer({ size: inputs.w.data.byteLength,
                                       usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(buffer, 0, inputs.w.data);
  const { y } = await kernel({ ...inputs, x, w: { buffer, shape: inputs.w.shape } }, { output: "gpu" });
  const data = await readBack(device, y.buffer, y.shape.reduce((a, d) => a * d, 1));
  y.dispose();
  x.buffer.destroy();
  buffer.destroy();
  return { y: data, shape: y.shape, dtype: y.dtype };
};

window.refusal = async () => {
  try {
    await kernel({ x: { data: new Float32Array(18), shape: [1, 2, 3, 3] },
                   w: { data: new Float32Array(54), shape: [2, 3, 3, 3] }, group: 3 });
    return null;
  } catch (err) {
    return { isClass: err instanceof ConvTransposeError, name: err.name, field: err.field };
  }
};
"""
INDEX_HTML = '<!doctype html><meta charset="utf-8"><title>scratch app</title><script type="module" src="app.js"></script>\n'


def measured(tarball: Path) -> dict:
    """The tarball's size, its files' size unpacked, and its file count (npm pack's "total files")."""
    with tarfile.open(tarball) as tar:
        files = [m for m in tar.getmembers() if m.isfile()]
    return {"size": tarball.stat().st_size, "unpacked": sum(m.size for m in files), "files": len(files)}


def test_the_docs_state_the_tarball_s_measured_size_and_file_count(tarball):
    """README.md and docs/npm.md give the figures of the tarball README.md's block packs: MB to 0.1 MB, files exactly."""
    got = measured(tarball)
    print(f"\n{tarball.name}: {got['size']:,} bytes, {got['unpacked']:,} unpacked, {got['files']} files")
    npm_doc = re.search(r"The tarball is ([\d.]+) MB [^,]*, ([\d.]+) MB unpacked, (\d+) files", NPM_DOC.read_text())
    readme = re.search(r"\(([\d.]+) MB tarball, (\d+) files", README.read_text())
    assert npm_doc and readme, "the figures' sentences changed: update the patterns with them"
    stated = {"docs/npm.md": (float(npm_doc[1]), float(npm_doc[2]), int(npm_doc[3])),
              "README.md": (float(readme[1]), None, int(readme[2]))}
    for doc, (size, unpacked, files) in stated.items():
        assert abs(size * 1e6 - got["size"]) <= 0.1e6, (doc, size, got)
        assert unpacked is None or abs(unpacked * 1e6 - got["unpacked"]) <= 0.1e6, (doc, unpacked, got)
        assert files == got["files"], (doc, files, got)


def doc_request() -> tuple:
    """docs/npm.md's app's x, w and strides, read from its app.js."""
    app = doc_files()["app.js"]
    (x, x_shape), (w, w_shape) = re.findall(r"Float32Array\((\[[^]]*\])\), shape: (\[[^]]*\])", app)
    strides = json.loads(re.search(r"strides: (\[[^]]*\])", app)[1])
    x = np.array(json.loads(x), np.float32).reshape(json.loads(x_shape))
    w = np.array(json.loads(w), np.float32).reshape(json.loads(w_shape))
    return x, w, strides


def check_doc_page(page, url: str) -> None:
    """docs/npm.md's page at url, in a fresh context (empty cache), shows the float64 reference's y."""
    from app.host.browser import BOOT_TIMEOUT_MS

    context = page.context.browser.new_context()
    with context:
        tab = context.new_page()
        errors = []
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.goto(url)
        tab.wait_for_function("document.getElementById('out').textContent !== 'running'", timeout=BOOT_TIMEOUT_MS)
        text = tab.inner_text("#out").strip()
    assert not errors, errors
    shown = re.fullmatch(r"y (\[[\d,]+\]): ([-\d.e ]+)", text)
    assert shown, text
    x, w, strides = doc_request()
    geom, _ = validate(x, w, None, strides=strides)
    want = conv_transpose_reference(geom, x, w, None)
    assert json.loads(shown[1]) == list(want.shape), text
    np.testing.assert_allclose(np.array(shown[2].split(), float).reshape(want.shape), want, rtol=1e-6)


def serve_folder(folder: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.mark.browser
def test_the_readme_app_runs_in_chromium(readme_app, page):
    """The site README.md's block built (dist/) shows the right y."""
    server, url = serve_folder(readme_app / "dist")
    try:
        check_doc_page(page, f"{url}index.html")
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def site(tarball, tmp_path_factory):
    """A static site with the scratch app as README.md builds it: installed, bundled (esbuild from this
    repository's node_modules, as npx finds it in an app that depends on it) into dist/, the runtime copied
    into webgpu-convtranspose/ beside the page (app/); and the same bundle without the copy (cdn-app/), its page given
    ?assets=/cdn/webgpu-convtranspose/, a folder holding the package's assets."""
    root = tmp_path_factory.mktemp("site")
    source = scratch_app(root / "source", tarball)
    (source / "app.js").write_text(APP_JS)
    steps = readme_steps()
    run([BIN / "esbuild", *steps["bundle"][2:]], source)
    shutil.copytree(source / "dist", root / "www" / "cdn-app")
    (root / "www" / "cdn-app" / "index.html").write_text(INDEX_HTML)
    (source / "index.html").write_text(INDEX_HTML)
    run(["bash", "-c", steps["copy"]], source)  # the page and the package folder into dist/
    shutil.copytree(source / "dist", root / "www" / "app")
    shutil.copytree(source / "node_modules" / PACKAGE_NAME, root / "www" / "cdn" / PACKAGE_NAME)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(root / "www")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def run_app(page, seed: int) -> None:
    """The 1D, 2D and 3D requests, CPU then GPU-resident, checked; and a refusal as the package's class."""
    cases = list(requests(seed))
    for (request, want), resident in zip(cases * 2, [False] * len(cases) + [True] * len(cases)):
        check(page.evaluate("([request, resident]) => window.runCall(request, resident)", [request, resident]), want)
    assert page.evaluate("window.refusal()") == {"isClass": True, "name": "ConvTransposeError", "field": "group"}


@pytest.mark.browser
def test_bundled_app_runs_in_chromium(site, page):
    from app.host.browser import BOOT_TIMEOUT_MS

    context = page.context.browser.new_context()  # the session's Chromium, an empty cache
    with context:
        app = context.new_page()
        app.set_default_timeout(BOOT_TIMEOUT_MS)
        fetched, errors = [], []
        app.on("request", lambda r: fetched.append(r.url))
        app.on("pageerror", lambda e: errors.append(str(e)))
        app.goto(f"{site}app/index.html")
        assert app.evaluate("window.appReady") is True, errors
        run_app(app, seed=27)
        assert not errors, errors
        assert all(u.startswith(f"{site}app/") for u in fetched), fetched  # the bundle's folder, nothing else
        assets = f"{site}app/{PACKAGE_NAME}/"  # the bundled default: webgpu-convtranspose/ beside the page
        assert f"{assets}pyodide/pyodide.asm.wasm" in fetched and f"{assets}bundle.zip" in fetched


@pytest.mark.browser
def test_the_assets_option_loads_the_runtime_from_another_folder(site, page):
    from app.host.browser import BOOT_TIMEOUT_MS

    context = page.context.browser.new_context()
    with context:
        app = context.new_page()
        app.set_default_timeout(BOOT_TIMEOUT_MS)
        fetched = []
        app.on("request", lambda r: fetched.append(r.url))
        app.goto(f"{site}cdn-app/index.html?assets=/cdn/{PACKAGE_NAME}/")
        assert app.evaluate("window.appReady") is True
        request, want = next(requests(28))
        check(app.evaluate("([request, resident]) => window.runCall(request, resident)", [request, False]), want)
        cdn = f"{site}cdn/{PACKAGE_NAME}/"
        assert f"{cdn}pyodide/pyodide.asm.wasm" in fetched and f"{cdn}bundle.zip" in fetched
        assert all(u.startswith((cdn, f"{site}cdn-app/")) for u in fetched), fetched
        assert not [u for u in fetched if u.startswith(f"{site}cdn-app/") and not u.split("?")[0].endswith(
            ("index.html", "app.js"))], fetched  # nothing but the page and its bundle from the app's folder


@pytest.mark.firefox
def test_bundled_app_runs_in_firefox(site):
    from app.host.firefox import app_page

    with app_page(f"{site}app/index.html") as firefox:  # waits for window.appReady
        firefox.set_default_timeout(180_000)
        run_app(firefox, seed=29)


NODE_APP = """
import { create, globals } from "webgpu";
import { getKernel } from "webgpu-convtranspose";

Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };

const request = JSON.parse(process.argv[2]);
const tensor = (t) => t && { data: new Float32Array(t.data), shape: t.shape };
const kernel = await getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1 });
const { y, meta } = await kernel({ ...request, x: tensor(request.x), w: tensor(request.w), b: tensor(request.b) });
console.log(JSON.stringify({ y: Array.from(y.data), shape: y.shape, dtype: y.dtype, variant: meta.variant }));
await kernel.idle();  // exiting under a compile crashes Dawn (docs/npm.md#node)
process.exit(0);
"""


def test_node_imports_the_package_with_no_other_setup(tarball, tmp_path):
    repo_package(tmp_path, "webgpu")  # the app's own dependency, from this repository's node_modules
    app = scratch_app(tmp_path / "app", tarball)
    (app / "main.mjs").write_text(NODE_APP)
    request, want = next(requests(30))  # the 2D one
    done = run(["node", "main.mjs", json.dumps(request)], app, env=node_env())
    check(json.loads(done.stdout.strip().splitlines()[-1]), want)


TS_APP = """
import { getKernel, ConvTransposeError, GpuError, KernelNotFoundError, type GpuTensor, type Kernel }
  from "webgpu-convtranspose";

const adapter = await navigator.gpu.requestAdapter();
if (!adapter) throw new Error("no WebGPU adapter");
const device: GPUDevice = await adapter.requestDevice();
const kernel: Kernel = await getKernel("webgpu-kernels/ai.onnx.ConvTranspose",
                                       { version: 1, device, assets: new URL("/kernel-assets/", location.href) });

const x = new Float32Array(2 * 3 * 3);
const { y, meta } = await kernel({ x: { data: x, shape: [1, 2, 3, 3] },
                                   w: { data: [0.5, 1], shape: [2, 1, 1, 1], constant: true }, strides: [2, 2] });
const first: number = y.data[0];
const gpuMs: number | null = meta.gpu_ms;
console.log(first, gpuMs, meta.variant, y.shape.length, y.dtype === "float16");

const buffer: GPUBuffer = device.createBuffer({ size: x.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
device.queue.writeBuffer(buffer, 0, x);
const xg: GpuTensor = { buffer, shape: [1, 2, 3, 3], finite: true };
const w = kernel.upload({ data: new Float32Array(2 * 3 * 2 * 2), shape: [2, 3, 2, 2] });
const a = await kernel({ x: xg, w, pads: [0, 0, 0, 0] }, { output: "gpu" });
const b = await kernel({ x: a.y, w: { data: new Float32Array(6), shape: [3, 2, 1, 1] } }, { output: "gpu", timing: true });
const out: GPUBuffer = b.y.buffer;
out.destroy();
a.y.dispose();
kernel.forget(w);
console.log(kernel.memory().live_bytes, kernel.gpuDevice() === device);
await kernel.idle();

try {
  await kernel({ x: { data: [1, 2], shape: [1, 1, 2] }, w: { data: [1], shape: [1, 1, 1] }, group: 3 });
} catch (err) {
  if (err instanceof ConvTransposeError) console.log(err.field, err.message, err.pythonTraceback ?? "");
  else if (err instanceof GpuError || err instanceof KernelNotFoundError) console.log(err.name);
  else throw err;
}
"""
# Each line a mistake the declarations must catch (the test reads the line numbers tsc reports).
TS_WRONG = """import { getKernel } from "webgpu-convtranspose";
const kernel = await getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, asset: "/cdn/" });
await kernel({ x: { data: new Float32Array(4), shape: [1, 1, 4] } });
await kernel({ x: { data: new Float32Array(4), shape: [1, 1, 4] }, w: { data: [1], shape: [1, 1, 1] } }, { output: "disk" });
await kernel({ x: { buffer: 42, shape: [1, 1, 4] }, w: { data: [1], shape: [1, 1, 1] } });
const gpu = await kernel({ x: { data: [1], shape: [1, 1, 1] }, w: { data: [1], shape: [1, 1, 1] } }, { output: "gpu" });
console.log(gpu.y.data);
"""
TS_OPTIONS = ["--noEmit", "--strict", "--target", "ES2022", "--module", "ESNext", "--moduleResolution", "bundler",
              "--lib", "ES2022,DOM", "--types", "@webgpu/types"]


@pytest.fixture(scope="module")
def ts_app(tarball, tmp_path_factory) -> Path:
    parent = tmp_path_factory.mktemp("ts")
    repo_package(parent, "@webgpu/types")  # the app's WebGPU types; the package's merge with them
    app = scratch_app(parent / "app", tarball)
    (app / "app.ts").write_text(TS_APP)
    (app / "wrong.ts").write_text(TS_WRONG)
    return app


# TypeScript 5 and 7 (npm `typescript7`, an alias in package.json): both install a `tsc` bin, so each by its path.
TSC = {5: ROOT / "node_modules" / "typescript" / "bin" / "tsc", 7: ROOT / "node_modules" / "typescript7" / "bin" / "tsc"}
# TypeScript 7's lib.dom declares WebGPU itself, and @webgpu/types again: about 150 duplicate-declaration errors
# between those two libraries, none in ours. docs/npm.md: with TypeScript 7, leave @webgpu/types out, or keep it
# with skipLibCheck (tsc --init's default), as here.
WITH_WEBGPU_TYPES = {5: [], 7: ["--skipLibCheck"]}


def tsc(app: Path, *args, version: int = 5, options=TS_OPTIONS) -> subprocess.CompletedProcess:
    return subprocess.run([str(TSC[version]), *options, *WITH_WEBGPU_TYPES[version], *args], cwd=app,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("version", [5, 7])
def test_typescript_app_type_checks_against_the_declarations(ts_app, version):
    done = tsc(ts_app, "app.ts", version=version)
    assert done.returncode == 0, done.stdout


def test_typescript_7_without_webgpu_types_uses_its_own_lib_dom(ts_app):
    """TypeScript 7's lib.dom has WebGPU: the browser app type-checks with no @webgpu/types, every file checked (the
    app's usage flags as numbers: that lib.dom declares no GPUBufferUsage value)."""
    (ts_app / "app7.ts").write_text(TS_APP.replace("GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST", "0x80 | 0x8"))
    options = [o for o in TS_OPTIONS if o != "@webgpu/types"]
    options[options.index("--types") + 1:options.index("--types") + 1] = [""]
    done = subprocess.run([str(TSC[7]), *options, "app7.ts"], cwd=ts_app, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize("version", [5, 7])
def test_typescript_refuses_wrong_calls(ts_app, version):
    done = tsc(ts_app, "wrong.ts", version=version)
    assert done.returncode != 0
    lines = {int(line.split("(")[1].split(",")[0]) for line in done.stdout.splitlines()
             if line.startswith("wrong.ts(")}
    assert lines == {2, 3, 4, 5, 7}, done.stdout  # every mistake, and the one correct call (line 6) accepted
    assert "'asset' does not exist" in done.stdout and "Property 'w' is missing" in done.stdout, done.stdout


def test_typescript_node_app_without_webgpu_types(tarball, tmp_path):
    """A Node app with @types/node and no WebGPU types still type-checks (GPUBuffer's declared members only)."""
    repo_package(tmp_path, "@types/node")
    app = scratch_app(tmp_path / "app", tarball)
    (app / "main.ts").write_text(
        'import { getKernel, KernelError } from "webgpu-convtranspose";\n'
        'const kernel = await getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { assets: new URL("file:///srv/k/") });\n'
        'const r = await kernel({ x: { data: [1, 2, 3], shape: [1, 1, 3] }, w: { data: [1], shape: [1, 1, 1] } },'
        ' { output: "gpu" });\n'
        "const bytes: number = r.y.buffer.size;\n"
        "r.y.dispose();\n"
        "try { await getKernel(\"nope\"); } catch (e) { if (e instanceof KernelError) console.log(e.field, bytes); }\n")
    for version in TSC:
        done = subprocess.run([str(TSC[version]), "--noEmit", "--strict", "--target", "ES2022", "--module", "NodeNext",
                               "--moduleResolution", "NodeNext", "--lib", "ES2022", "--types", "node", "main.ts"],
                              cwd=app, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (version, done.stdout)
