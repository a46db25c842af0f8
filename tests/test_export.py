"""`python -m app export DIR`: a static folder any web app can host. The browser test serves it from a plain
static server (python's http.server, no special headers) under a sub-path, loads a page that is not the
app's (tests/export_host/index.html), hands getKernel the page's own GPUDevice and checks results against
the float64 numpy reference."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.host.export import ENTRY, MARK, PACKAGE_NAME, export, package_version
from app.kernel import validate
from app.reference import conv_transpose_reference
from tests.local_http import free_port, wait_until_served

HOST_PAGE = Path(__file__).parent / "export_host" / "index.html"
SUB_PATH = "static/vendor/kernels/convtranspose-v1"  # where the host site puts the folder
REPORT = Path(__file__).resolve().parent.parent / "build" / "export-first-visit.json"


def test_export_writes_a_self_contained_folder(tmp_path):
    out = tmp_path / "out"
    report = export(out)
    names = set(report["files"])
    assert {ENTRY, "README.txt", "bundle.zip", "web/runtime/index.mjs", "web/runtime/boot.mjs", "pyodide/pyodide.mjs", "pyodide/pyodide.asm.wasm",
            "pyodide/pyodide-lock.json", "pyodide/python_stdlib.zip"} <= names
    lock = json.loads((out / "pyodide" / "pyodide-lock.json").read_text())
    assert {f"pyodide/{p['file_name']}" for p in lock["packages"].values()} <= names  # every package it names
    assert (out / "README.txt").read_text().startswith(MARK)
    assert 'from "./web/runtime/index.mjs"' in (out / ENTRY).read_text()
    # An npm package too (tests/test_npm_package.py packs and uses it): its entries and declarations are here,
    # and the browser entry names its own folder as the assets' (a bundle's, once bundled).
    package = json.loads((out / "package.json").read_text())
    assert package["name"] == PACKAGE_NAME and package["version"] == package_version()
    assert {t.removeprefix("./") for t in package["exports"]["."].values()} <= names
    assert {"web/runtime/node.mjs", "web/runtime/index.d.ts"} <= names
    entry = (out / ENTRY).read_text()
    # import.meta.url only through a variable (bundlers rewrite new URL("...", import.meta.url)), and the boot
    # started as the module loads
    code = [line for line in entry.splitlines() if not line.lstrip().startswith("//")]
    assert "const here = import.meta.url;" in code and not [line for line in code if "new URL(" in line]
    assert f'bootDefaults({{ ...packageAssets(here, "{ENTRY}"), early: true, plans: true }})' in entry
    assert report["first_visit"] < report["total"] - (out / "package.json").stat().st_size  # Node's files not counted
    # Again in place (an earlier export is replaced), but never over a folder that is not one.
    (out / "stale.txt").write_text("left from before")
    export(out)
    assert not (out / "stale.txt").exists()
    other = tmp_path / "site"
    other.mkdir()
    (other / "index.html").write_text("someone's page")
    with pytest.raises(FileExistsError):
        export(other)
    assert (other / "index.html").read_text() == "someone's page"


def test_export_command_line(tmp_path):
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-m", "app", "export", str(tmp_path / "k")], cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "exported to" in done.stdout and (tmp_path / "k" / ENTRY).is_file()


@pytest.fixture(scope="module")
def static_site(tmp_path_factory):
    """A plain static server (python -m http.server) over a site holding the export under a sub-path."""
    site = tmp_path_factory.mktemp("site")
    export(site / SUB_PATH)
    shutil.copyfile(HOST_PAGE, site / "index.html")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(site)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    wait_until_served(url, attempts=100, pause=0.1, timeout=1)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.browser
def test_exported_folder_runs_in_a_foreign_page_with_its_own_device(static_site, page):
    from app.host.browser import BOOT_TIMEOUT_MS

    # The session's headless Chromium (one Playwright per process), in a fresh context: its own empty cache,
    # so this is a first visit.
    context = page.context.browser.new_context()
    with context:
        host = context.new_page()
        host.set_default_timeout(BOOT_TIMEOUT_MS)
        requested, errors = [], []
        host.on("request", lambda r: requested.append(r.url))
        host.on("pageerror", lambda e: errors.append(str(e)))
        host.goto(f"{static_site}index.html?entry=/{SUB_PATH}/{ENTRY}")
        boot = host.evaluate("window.hostReady")
        assert not errors, errors
        assert boot["sameDevice"]  # the kernel runs on the page's GPUDevice, not one of its own

        rng = np.random.default_rng(15)
        requests = [
            ((1, 3, 4, 5), (3, 2, 3, 3), 2, {"strides": [2, 2], "pads": [1, 0, 1, 0], "output_padding": [1, 0]}),
            ((2, 4, 9), (4, 1, 4), 4, {"strides": [2], "pads": [1, 1], "group": 4}),
            ((1, 2, 3, 3, 2), (2, 2, 2, 2, 2), None, {"strides": [2, 1, 2]}),
        ]
        for (x_shape, w_shape, bias, attrs), resident in zip(requests * 2, [False] * 3 + [True] * 3):
            x = rng.uniform(-1, 1, x_shape).astype(np.float32)
            w = rng.uniform(-1, 1, w_shape).astype(np.float32)
            b = rng.uniform(-1, 1, bias).astype(np.float32) if bias else None
            tensors = {name: {"data": t.ravel().tolist(), "shape": list(t.shape)}
                       for name, t in (("x", x), ("w", w), ("b", b)) if t is not None}
            got = host.evaluate("([request, resident]) => window.hostRun(request, resident)",
                                [{**tensors, **attrs}, resident])
            geom, _ = validate(x, w, b, **attrs)
            want = conv_transpose_reference(geom, x, w, b)
            assert got["shape"] == list(want.shape) and got["dtype"] == "float32"
            np.testing.assert_allclose(np.array(got["y"]).reshape(want.shape), want, atol=1e-5, rtol=1e-4)

        # Self-contained: the page fetched nothing but itself and the exported folder.
        folder = f"{static_site}{SUB_PATH}/"
        assert all(u.startswith(folder) or u.startswith(f"{static_site}index.html") for u in requested), requested
        fetched = [f for f in host.evaluate("window.hostFetched()") if f["url"].startswith(folder)]
        total = sum(f["transfer"] for f in fetched)
        REPORT.parent.mkdir(exist_ok=True)
        REPORT.write_text(json.dumps({"boot_ms": boot["bootMs"], "since_navigation_ms": boot["sinceNavigationMs"],
                                      "bytes": total, "resources": fetched}, indent=1))
        print(f"\nexport first visit: {len(fetched)} resources, {total:,} bytes on the wire; "
              f"import to ready kernel {boot['bootMs'] / 1000:.1f} s")
        assert total > 10_000_000  # it did fetch the runtime (the wasm alone is about 10 MB)
