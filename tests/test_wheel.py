"""The wheel works outside the checkout: built from a copy of the sources, installed into a fresh virtual
environment, and used from a directory that is not the checkout and has a Python package of its own named `app`
(as Flask and FastAPI projects often do): the installed package is `webgpu_convtranspose`, `import app` finds the
user's, never ours. Validation, planning, rendering and the reference in CPython; `python -m webgpu_convtranspose
cases` and `bench` in headless Chromium, `serve` and `export`. The wheel is at most 3 MB (no test.json)."""
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from app.host.assets import DOWNLOADS, PINNED, ensure_pyodide_assets

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.browser
NAME = "webgpu_convtranspose"
MAX_WHEEL = 3_000_000  # bytes
# The user's own package called app, in the folder the commands run from.
USER_APP = 'WHO = "the user\'s app"\n'

SMOKE = r"""
import json, sys
from importlib import resources
import numpy as np
import app                                                     # the user's package in the working directory
import webgpu_convtranspose as pkg, webgpu_convtranspose.variants
from webgpu_convtranspose import contract, metadata
from webgpu_convtranspose.caps import DeviceCaps
from webgpu_convtranspose.kernel import validate
from webgpu_convtranspose.planner import plan
from webgpu_convtranspose.reference import conv_transpose_reference
from webgpu_convtranspose.render import render

assert app.WHO == "the user's app", app.__file__
assert sys.argv[1] in pkg.__file__, pkg.__file__             # the installed copy, not the checkout
assert contract.CHECKOUT is None
assert contract.ROOT == resources.files("webgpu_convtranspose") / "_data"
shipped = json.loads((resources.files("webgpu_convtranspose") / "_data" / "metadata.json").read_text())
assert metadata.build() == shipped                            # the installed templates are the ones described
x = np.ones((1, 2, 3, 3), np.float32); w = np.ones((2, 3, 3, 3), np.float32)
geom, _ = validate(x, w, None, strides=[2, 2])
y = conv_transpose_reference(geom, x, w, None)
assert y.shape == (1, 3, 7, 7) and y.max() == 8.0, (y.shape, y.max())
chosen = plan(geom, DeviceCaps())
wgsl = [render(d.template, d.render_params) for d in chosen.weight_passes + chosen.dispatches]
print(chosen.variant in pkg.variants.VARIANTS, all("@compute" in code for code in wgsl))
"""


def _run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert done.returncode == 0, f"{cmd}: {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _copy_sources(dest: Path) -> Path:
    """The checkout as a user would have it, minus what is built or installed here."""
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
        ".git", "build", "node_modules", "docs", "__pycache__", "*.egg-info", ".gpu", ".gl", ".pytest_cache",
        ".hypothesis", "out", "tests", "tools", ".setuptools-build"))
    return dest


def _environment(tmp: Path) -> tuple[Path, dict]:
    """A working directory outside the checkout, and an environment whose runtime cache is seeded with the
    checkout's verified downloads so the test needs no network (the installed package checks each against
    its pinned sha256 and assembles Pyodide itself)."""
    ensure_pyodide_assets()
    cache = tmp / "cache"
    (cache / "downloads").mkdir(parents=True)
    for name in PINNED:
        shutil.copyfile(DOWNLOADS / name, cache / "downloads" / name)
    work = tmp / "elsewhere"
    (work / "app").mkdir(parents=True)
    (work / "app" / "__init__.py").write_text(USER_APP)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["CONVTRANSPOSE_BUILD"] = str(cache)
    return work, env


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh virtual environment (no system site-packages) with the built wheel and its `browser` extra."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = _copy_sources(tmp / "src")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(src)], timeout=600)
    wheel = next((tmp / "dist").glob("webgpu_convtranspose-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    print(f"\n{wheel.name}: {wheel.stat().st_size:,} bytes")
    assert wheel.stat().st_size <= MAX_WHEEL
    assert {f"{NAME}/{n}" for n in ("variants/__init__.py", "host/server.py", "__main__.py", "_data/manifest.json",
            "_data/bench.json", "_data/web/runtime/boot.mjs", "_data/tuning/google-swiftshader.json")} <= set(names)
    assert not [n for n in names if n.startswith("app/") or n.endswith("test.json")]  # no top-level app, no 18 MB
    assert len([n for n in names if n.startswith(f"{NAME}/_data/templates/")]) == len(list((ROOT / "templates").glob("*.jinja")))
    # Development tools (the WGSL compiler checks, the shader matrix, the GPU probes) stay out of the wheel.
    assert not [n for n in names if "wgsl_" in n or n.startswith("tools/") or "/tools/" in n
                or n.endswith(("_probe.py", "_probe.mjs"))]
    _run([sys.executable, "-m", "venv", str(tmp / "venv")], timeout=300)
    python = tmp / "venv" / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", f"{wheel}[browser]", "-c", str(ROOT / "requirements-test.txt")],
         timeout=600)
    work, env = _environment(tmp)
    return {"python": str(python), "venv": str(tmp / "venv"), "cwd": work, "env": env}


def test_installed_package_validates_plans_renders_and_references(venv):
    done = _run([venv["python"], "-c", SMOKE, venv["venv"]], cwd=venv["cwd"], env=venv["env"], timeout=120)
    assert done.stdout.split() == ["True", "True"]


def test_installed_package_runs_a_case_file_in_chromium(venv):
    doc = json.loads((ROOT / "test.json").read_text())
    picked = [c for c in doc["cases"] if not c["name"].startswith("f16")][:4]
    picked += [next(c for c in doc["cases"] if c.get("expected_error"))]
    (venv["cwd"] / "few.json").write_text(json.dumps({**doc, "cases": picked}))
    done = _run([venv["python"], "-m", NAME, "cases", "few.json"], cwd=venv["cwd"], env=venv["env"], timeout=600)
    assert f"{len(picked)} passed, 0 failed" in done.stdout, done.stdout


def test_installed_package_runs_the_bench_runner(venv):
    doc = json.loads((ROOT / "bench.json").read_text())
    small = {**doc, "cases": [{"name": "tiny", "tier": "small", "x": [1, 4, 3, 3], "w": [4, 2, 3, 3], "bias": True,
                               "attributes": {"strides": [2, 2]}, "dtype": "float32"}]}
    (venv["cwd"] / "tiny-bench.json").write_text(json.dumps(small))
    done = _run([str(Path(venv["venv"]) / "bin" / "webgpu-convtranspose"), "bench", "--bench", "tiny-bench.json", "--runs", "2", "--warmup", "0",
                 "--out", "rows.json"], cwd=venv["cwd"], env=venv["env"], timeout=600)
    rows = json.loads((venv["cwd"] / "rows.json").read_text())
    assert [r["case"] for r in rows] == ["tiny"] and rows[0]["median_ms"] > 0, done.stdout


def test_installed_package_serves_the_app_and_exports(venv):
    proc = subprocess.Popen([venv["python"], "-m", NAME, "serve", "--port", "0"], cwd=venv["cwd"], env=venv["env"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = re.search(r"http://\S+/", proc.stdout.readline()).group(0)
        for path, needle in (("", b"<html"), ("web/runtime/index.mjs", b"getKernel"), ("manifest.json", b"ConvTranspose"),
                             ("pyodide/pyodide.mjs", b"loadPyodide")):
            with urllib.request.urlopen(url + path, timeout=30) as response:
                assert needle in response.read(), path
        with urllib.request.urlopen(url + "bundle.zip", timeout=30) as response:
            import io
            names = zipfile.ZipFile(io.BytesIO(response.read())).namelist()
        assert "app/variants/base.py" in names and "templates/conv-transpose2d-nchw.wgsl.jinja" in names
        assert not any(n.startswith(("app/host/", "app/_data/")) for n in names)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    _run([venv["python"], "-m", NAME, "export", "kernel"], cwd=venv["cwd"], env=venv["env"], timeout=300)
    assert (venv["cwd"] / "kernel" / "convtranspose.mjs").is_file()


def test_installed_commands_explain_a_missing_case_file(venv):
    done = subprocess.run([venv["python"], "-m", NAME, "cases", "test.json"], cwd=venv["cwd"], env=venv["env"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "test.json: no such case file" in done.stderr, done.stderr
    assert done.stderr.startswith(f"usage: python -m {NAME}"), done.stderr


def test_pip_install_from_a_checkout(tmp_path):
    """The README's `pip install '.[browser]'`, run in a copy of the checkout, into another fresh venv; setuptools'
    build files go to .setuptools-build/, which the checkout's .gitignore ignores, never to build/ (the Pyodide
    assets' folder)."""
    src = _copy_sources(tmp_path / "src")
    _run([sys.executable, "-m", "venv", str(tmp_path / "venv")], timeout=300)
    pip = [str(tmp_path / "venv" / "bin" / "python"), "-m", "pip"]
    _run(pip + ["install", "-q", ".[browser]", "-c", str(ROOT / "requirements-test.txt")], cwd=src, timeout=600)
    assert not (src / "build").exists(), sorted(p.name for p in (src / "build").iterdir())
    assert (src / ".setuptools-build" / "lib" / NAME / "__init__.py").is_file()
    ignored = subprocess.run(["git", "check-ignore", "-q", ".setuptools-build/lib"], cwd=ROOT)
    assert ignored.returncode == 0  # ignored in the checkout the copy was made from
    work, env = _environment(tmp_path)
    done = _run([str(tmp_path / "venv" / "bin" / "python"), "-c", SMOKE, str(tmp_path / "venv")], cwd=work,
                env=env, timeout=120)
    assert done.stdout.split() == ["True", "True"]
