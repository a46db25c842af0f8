"""test.json at set-up: written by its generator (tools/gen_test_cases.py) where it is missing or not the
committed one, then checked against the committed digest (test.json.sha256). A checkout only: the
installed package ships neither the 18 MB file nor its generator, and runs any case file of its format.

The generator is deterministic (one seeded numpy Generator, shortest round-trip decimals), so the digest
pins the cases and their expected outputs; it takes about 10 s of CPU, and onnx and onnxruntime, which
cross-check every expected output and give the ONNX conformance cases (requirements-test.txt).
"""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from ..contract import CHECKOUT


class CaseFileSetupError(RuntimeError):
    """test.json could not be written, or is not the file its committed digest names."""


def _paths(root: Path) -> tuple[Path, Path, Path]:
    return root / "test.json", root / "test.json.sha256", root / "tools" / "gen_test_cases.py"


def committed_digest(root: Path) -> str:
    """The sha256 in test.json.sha256 (`sha256sum` format: `<hex>  test.json`)."""
    return _paths(root)[1].read_text().split()[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ensure_test_json(root: Path | None = CHECKOUT) -> Path | None:
    """test.json of the checkout at `root`, generated first unless it is there with the committed digest;
    None outside a checkout. Raises CaseFileSetupError when generation fails or writes another file."""
    if root is None:
        return None
    path, digest_file, generator = _paths(root)
    want = committed_digest(root)
    if path.is_file() and digest(path) == want:
        return path
    print("[setup] writing test.json with tools/gen_test_cases.py (about 10 s of CPU)", file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, str(generator), "--quiet", "--out", str(path)], cwd=root,
                          capture_output=True, text=True)
    if done.returncode != 0:
        missing = [m for m in ("onnx", "onnxruntime") if f"No module named '{m}'" in done.stderr]
        hint = (f": {' and '.join(missing)} missing (pip install -r requirements-test.txt)" if missing
                else "\n" + done.stderr.strip()[-2000:])
        raise CaseFileSetupError(f"tools/gen_test_cases.py failed{hint}")
    got = digest(path)
    if got != want:
        raise CaseFileSetupError(f"tools/gen_test_cases.py wrote test.json with sha256 {got}, not the committed {want} "
                             f"({digest_file.name}): the generator or what it computes with changed; if the "
                             "change is meant, commit the new digest")
    return path
