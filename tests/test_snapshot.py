"""The memory snapshot a first visit starts Python from (app/host/snapshot.py makes it at export,
web/runtime/boot.mjs restores it): in the exported package in Node on Dawn, a first call runs from it without
numpy and without importing a module it lacks, and numpy comes with `kernel.ready`; a snapshot that is not this
bundle's, not whole, or not this Pyodide build's is refused with a warning and Python starts from scratch, with the
same result."""
import gzip
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from app.host.node import node_env
from app.host.snapshot import MAGIC, read_header
from app.snapshot import FIRST_CALL_MODULES

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "tests" / "snapshot_probe.mjs"


def visit(kernel: Path, *args) -> dict:
    done = subprocess.run(["node", str(PROBE), str(kernel), *args], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=node_env())
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def with_snapshot(kernel: Path, tmp_path: Path, snapshot: bytes) -> Path:
    """A copy of the export whose snapshot.bin is `snapshot` (Pyodide's folder linked, not copied)."""
    copy = tmp_path / "kernel"
    shutil.copytree(kernel, copy, ignore=shutil.ignore_patterns("pyodide"))
    (copy / "pyodide").symlink_to(kernel / "pyodide")
    (copy / "snapshot.bin").write_bytes(snapshot)
    return copy


def test_the_export_ships_a_snapshot_of_its_own_bundle(kernel):
    header = read_header((kernel / "snapshot.bin").read_bytes())
    assert header["revision"] == hashlib.sha256((kernel / "bundle.zip").read_bytes()).hexdigest()
    assert set(FIRST_CALL_MODULES) <= set(header["modules"]) and header["bytes"] > 2**20
    assert "snapshot.bin" in json.loads((kernel / "package.json").read_text())["files"]


def test_a_first_call_runs_from_the_snapshot_without_numpy(kernel):
    got = visit(kernel)
    assert "start Python from the snapshot" in got["phases"] and "start Python" not in got["phases"], got["phases"]
    assert not got["warnings"], got["warnings"]
    assert got["afterCall"]["numpy"] is False  # planned, rendered and dispatched without it
    assert got["numpyBeforeKernel"] is False  # loaded after the first call was planned
    held = read_header((kernel / "snapshot.bin").read_bytes())["modules"]
    assert set(got["afterCall"]["modules"]) <= set(held)  # nothing imported past what the snapshot holds
    assert got["worst"] < 1e-4  # float32 against the float64 reference (sums of 8 x 9 products of |v| <= 1)
    assert got["validate"]["field"] == "pads"  # numpy's entries work once kernel.ready has resolved


def test_an_autotuning_kernel_waits_for_numpy_before_its_first_call(kernel):
    """Autotuning times its candidates on drawn data (numpy): its first call waits for the whole boot."""
    got = visit(kernel, "autotune")
    assert "start Python from the snapshot" in got["phases"] and "load numpy" in got["phases"], got["phases"]
    assert got["numpyBeforeKernel"] is True and got["worst"] < 1e-4 and not got["warnings"], got


def reframed(kernel: Path, change) -> bytes:
    """snapshot.bin with its header and heap changed by change(header, heap) -> (header, heap)."""
    data = (kernel / "snapshot.bin").read_bytes()
    end = data.index(b"\n", len(MAGIC))
    header, heap = change(json.loads(data[len(MAGIC):end]), gzip.decompress(data[end + 1:]))
    return MAGIC + json.dumps(header).encode() + b"\n" + gzip.compress(heap, compresslevel=1)


def other_build(header, heap):
    heap = bytearray(heap)
    heap[16] ^= 0xFF  # Pyodide's build id, which it checks on restore
    return header, bytes(heap)


@pytest.mark.parametrize("make, why", [
    (lambda k: b"<!doctype html><p>a server's fallback page", "not a snapshot of this package"),
    (lambda k: reframed(k, lambda h, heap: (h | {"revision": "0" * 64}, heap)), "made from another bundle.zip"),
    (lambda k: (k / "snapshot.bin").read_bytes()[:-4096], "snapshot.bin not used"),  # truncated: gzip's end missing
    (lambda k: reframed(k, lambda h, heap: (h, heap[:-1])), "bytes where its header says"),
    (lambda k: reframed(k, other_build), "build id mismatch"),
], ids=["foreign", "other-bundle", "truncated", "short-heap", "other-pyodide-build"])
def test_a_snapshot_that_is_not_this_bundle_s_whole_heap_is_refused_and_python_starts(kernel, tmp_path, make, why):
    got = visit(with_snapshot(kernel, tmp_path, make(kernel)))
    assert any("snapshot.bin not used" in w and why in w for w in got["warnings"]), got["warnings"]
    assert "start Python" in got["phases"] and got["worst"] < 1e-4


def layer_data(seed: int, count_x: int, count_w: int):
    """tools/first_result.mjs layerData: uniform [-1, 1) from its 32-bit LCG, as float32."""
    import numpy as np

    state, values = seed, []
    for _ in range(count_x + count_w):
        state = (state * 1664525 + 1013904223) % 2**32
        values.append(state / 2**31 - 1)
    data = np.array(values, dtype=np.float32)
    return data[:count_x], data[count_x:]


@pytest.mark.firefox
def test_a_first_visit_in_firefox_starts_from_the_snapshot(kernel):
    """tools/first_result.html's page (ours, a first visit) in Firefox on lavapipe: Python from the snapshot, y
    against the float64 reference."""
    import functools
    import threading
    from http.server import ThreadingHTTPServer

    import numpy as np

    from app.host.firefox import FirefoxPage
    from app.reference import conv_transpose_reference
    from app.shapes import infer
    from tools.first_result import Handler as StaticHandler

    class Handler(StaticHandler):  # tools/first_result.py's, with the export under /kernel/ beside tools/
        def translate_path(self, path):
            if path.startswith("/kernel/"):
                return str(kernel / path[len("/kernel/"):].split("?")[0])
            return super().translate_path(path)

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(ROOT)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    page = FirefoxPage(f"{base}tools/first_result.html?who=ours&kernel={base}kernel/")
    try:
        page.set_default_timeout(300_000)
        row = page.evaluate("async () => { const r = await window.firstResult; "
                            "return { error: r.error, phases: r.phases?.map((p) => p.phase), y: r.y }; }")
    finally:
        page.close()
        server.shutdown()
    assert row.get("error") is None, row
    assert "start Python from the snapshot" in row["phases"] and "start Python" not in row["phases"], row["phases"]
    geom = infer((1, 32, 16, 16), (32, 16, 4, 4), None, {"strides": [2, 2], "pads": [1, 1, 1, 1]})
    x, w = layer_data(7, 32 * 16 * 16, 32 * 16 * 4 * 4)
    want = conv_transpose_reference(geom, x, w, None).ravel()[:len(row["y"])]
    assert np.allclose(row["y"], want, atol=1e-4), (row["y"][:4], want[:4])  # float32 sums of 64 products
