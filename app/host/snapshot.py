"""The memory snapshot a first visit starts Python from (web/runtime/boot.mjs): made in Node by
web/views/snapshot-make.mjs from the Pyodide runtime and a bundle.zip, then framed as

    MAGIC, one JSON line {"revision": sha-256 of the bundle.zip it was made from, "pyodide": version,
    "bytes": the heap's length, "modules": the package's modules it holds}, the heap gzipped

so that the boot can refuse one made for another bundle before it gunzips anything (gzip's CRC then guards the
heap, Pyodide's build id the runtime). Made once per bundle, runtime and maker, kept under build/snapshots/.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..contract import ROOT
from .assets import BUILD
from .child import NODE

MAGIC = b"convtranspose-snapshot 1\n"
MAKER = ROOT / "web" / "views" / "snapshot-make.mjs"
CACHE = BUILD / "snapshots"
KEPT = 8  # snapshots kept under CACHE, the newest


def _maker_digest(pyodide: Path) -> str:
    """What else makes a snapshot besides the bundle: the runtime and the maker script."""
    digest = hashlib.sha256((pyodide / "pyodide.asm.wasm").read_bytes())
    digest.update(MAKER.read_bytes())
    return digest.hexdigest()


def snapshot_file(pyodide: Path, bundle: bytes) -> Path | None:
    """The framed snapshot for this runtime and bundle (made now if it is not cached), or None where Node is not
    installed (`NODE`, else `node` on the PATH): the boot then starts Python from scratch."""
    node = shutil.which(NODE)
    if node is None:
        return None
    revision = hashlib.sha256(bundle).hexdigest()
    cached = CACHE / f"{revision[:24]}-{_maker_digest(pyodide)[:16]}.bin"
    if cached.is_file():
        return cached
    with tempfile.TemporaryDirectory(prefix="convtranspose-snapshot-") as work:
        (Path(work) / "bundle.zip").write_bytes(bundle)
        made = subprocess.run([node, str(MAKER), str(pyodide), str(Path(work) / "bundle.zip"), str(Path(work) / "heap")],
                              capture_output=True, text=True, timeout=300)
        if made.returncode != 0:
            raise RuntimeError(f"making the Python snapshot failed: {made.stderr.strip().splitlines()[-1:]}")
        held = json.loads(made.stdout.strip().splitlines()[-1])
        heap = (Path(work) / "heap").read_bytes()
        header = {"revision": revision, "pyodide": held["pyodide"], "bytes": len(heap), "modules": held["modules"]}
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + gzip.compress(heap, compresslevel=6, mtime=0))
        partial.replace(cached)  # whole or not at all: concurrent makers write the same bytes
    for old in sorted(CACHE.glob("*.bin"), key=lambda p: p.stat().st_mtime)[:-KEPT]:
        old.unlink(missing_ok=True)  # other sources' snapshots (7 MB each): a checkout's edits make one each
    return cached


def read_header(data: bytes) -> dict:
    """A framed snapshot's header (tests and tools; the boot reads it in JS)."""
    if not data.startswith(MAGIC):
        raise ValueError("not a convtranspose snapshot")
    return json.loads(data[len(MAGIC):data.index(b"\n", len(MAGIC))])
