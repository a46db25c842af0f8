"""Seeded hostile inputs (app/hostile.py), 700+ cases in CPython: malformed requests, stored autotune entries,
caller stores, ONNX files and HTTP requests. Each must end in its documented error class or a correct result,
within a time bound, with no process left behind. A failing case names its seed and index: rerun it alone with
app.hostile's generator and np.random.default_rng([SEED, index])."""
import asyncio
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from app import autotune, hostile, planner, store_entries, tuning_tables
from app.errors import ConvTransposeError
from app.kernel import validate
from app.shapes import infer
from tests.async_helper import run_coroutine
from tests.local_http import raw_request
from tools.wgsl.matrix import devices

ROOT = Path(__file__).resolve().parents[1]
SEED = 52
CAPS = devices()["swiftshader"]
GEOM = infer([1, 4, 8, 8], [4, 4, 3, 3], None, {"strides": [2, 2]}, {"x": "float32", "w": "float32"})
BOUND_S = 2.0  # per case (a model case, built, read and run by onnxruntime: MODEL_BOUND_S)
MODEL_BOUND_S = 10.0
COUNTS = {"requests": 320, "entries": 220, "stores": 30, "models": 140, "http": 90}


def _children() -> set[int]:
    """Live child processes of this one (from /proc; zombies reaped are gone)."""
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                out.add(int(entry))
    return out


@pytest.fixture(autouse=True)
def no_process_left_behind():
    before = _children()
    yield
    deadline = time.monotonic() + 5
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _children() - before, f"processes left behind: {_children() - before}"


def _timed(label, fn, bound=BOUND_S):
    started = time.monotonic()
    out = fn()
    took = time.monotonic() - started
    assert took <= bound, f"{label}: {took:.2f} s, past the bound of {bound} s"
    return out


def test_hostile_requests_are_refused_with_convtransposeerror_or_computed():
    outcomes = {"refused": 0, "valid": 0}
    for index in range(COUNTS["requests"]):
        what, req = hostile.hostile_request(np.random.default_rng([SEED, index]))
        label = f"request seed {SEED} index {index} ({what})"

        def run():
            try:
                geom, arrays = validate(req["x"], req["w"], req["b"], **req["attributes"])
            except ConvTransposeError as exc:
                assert str(exc) and "Traceback" not in str(exc) and "\n" not in str(exc), label
                # `field` names the input or attribute at fault; None only where no single one is
                assert exc.field is not None or str(exc).startswith(("unknown attribute", "inputs must share")), \
                    f"{label}: no field on {exc}"
                return "refused"
            assert hostile.reference_ok(geom, arrays), label
            return "valid"

        try:
            outcomes[_timed(label, run)] += 1
        except ConvTransposeError:
            raise
        except AssertionError:
            raise
        except Exception as exc:  # noqa: BLE001 - the failure this test exists to find
            pytest.fail(f"{label}: {type(exc).__name__}: {exc}")
    assert outcomes["refused"] > COUNTS["requests"] // 2 and outcomes["valid"] > 10, outcomes


def test_hostile_stored_entries_are_ignored_with_a_warning_or_taken_when_valid():
    adapter, taken = tuning_tables.adapter_key(CAPS), 0
    for index in range(COUNTS["entries"]):
        what, text = hostile.hostile_entry(np.random.default_rng([SEED, index]), autotune.FORMAT, adapter, "r1")
        label = f"entry seed {SEED} index {index} ({what})"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                choice = _timed(label, lambda: autotune.stored_choice(text, GEOM, CAPS, "r1", None))
            except Exception as exc:  # noqa: BLE001
                pytest.fail(f"{label}: {type(exc).__name__}: {str(exc)[:300]}")
        if choice is None:
            assert any("autotune:" in str(w.message) for w in caught), label
        else:  # a valid entry: a known variant whose params (if any) its Tunable accepts for the request
            taken += 1
            assert choice.variant in planner.VARIANTS and choice.source == "store", label
            assert planner.plan(GEOM, CAPS, choice.variant, choice.params).variant == choice.variant, label
    assert taken < COUNTS["entries"] // 4


class _HostileStore:
    """A caller's store that misbehaves as its seed says: throws, hangs, or gives back the wrong type."""

    def __init__(self, rng):
        self.get_does = hostile._pick(rng, ["throw", "hang", "value", "value", "ok"])
        self.set_does = hostile._pick(rng, ["throw", "hang", "ok"])
        self.value = hostile._pick(rng, [5, [1], {"format": 1}, b"{}", 1.5, True, "[" * 5000])
        self.error = hostile._pick(rng, [OSError("disk"), KeyError("k"), RecursionError(), ValueError("x" * 10_000),
                                         MemoryError(), ZeroDivisionError()])

    async def get(self, key):
        return await self._do(self.get_does, self.value)

    async def set(self, key, text):
        await self._do(self.set_does, None)

    async def _do(self, action, value):
        if action == "throw":
            raise self.error
        if action == "hang":
            await asyncio.sleep(3600)
        return value if action == "value" else None


class _Kernel:
    class device:
        caps = CAPS


def test_hostile_caller_stores_cost_a_warning_never_the_call(monkeypatch):
    async def search(kernel, geom, tables=None, budget_ms=0):
        return autotune.Choice("nchw2d_gather", None, "search", 1, 1.0, (("nchw2d_gather", None, 1.0),))

    monkeypatch.setattr(autotune, "search", search)
    monkeypatch.setattr(store_entries, "STORE_TIMEOUT_S", 0.05)
    for index in range(COUNTS["stores"]):
        store = _HostileStore(np.random.default_rng([SEED, index]))
        label = f"store seed {SEED} index {index} (get {store.get_does}, set {store.set_does})"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            choice = _timed(label, lambda: run_coroutine(autotune.Autotuner(store).choose(_Kernel(), GEOM)))
        assert choice.source == "search" and choice.variant == "nchw2d_gather", label
        if "ok" not in (store.get_does, store.set_does) or store.get_does == "value":
            assert caught, label


def test_hostile_onnx_files_end_in_modelerror_or_a_line_per_layer(tmp_path):
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "tests.hostile.models", str(SEED), str(COUNTS["models"]), str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=COUNTS["models"] * MODEL_BOUND_S)
    results = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    last = results[-1]["index"] if results else None
    assert out.returncode == 0 and len(results) == COUNTS["models"], (
        f"the child died after case {last} (seed {SEED}): rc {out.returncode}\n{out.stderr[-2000:]}")
    kinds = {}
    for r in results:
        label = f"model seed {SEED} index {r['index']} {r['spec']}"
        assert r["outcome"] in ("ModelError", "layers"), f"{label}\n{r.get('traceback')}"
        assert r["seconds"] <= MODEL_BOUND_S, label
        if r["outcome"] == "ModelError":
            assert r["message"].count("\n") == 0 and "Traceback" not in r["message"], label
        else:
            assert all(line.split()[0] in ("SKIP", "FAIL", "RUNS") for line in r["lines"]), label
        kinds.setdefault(r["spec"]["kind"], set()).add(r["outcome"])
        if r["spec"]["kind"] == "external" and r["outcome"] == "layers":
            # read: the only file that can give w's bytes is weights.bin beside the model, given whole
            assert r["spec"]["location"] in ("weights.bin", "./weights.bin"), label
    assert len(kinds) >= 8 and time.monotonic() - started < COUNTS["models"] * MODEL_BOUND_S


def test_hostile_http_requests_get_a_status_and_never_a_file_outside_the_app(tmp_path):
    from app.host.server import start_background

    canary = "HOSTILE-CANARY-52"
    planted = [ROOT / "web" / ".env", ROOT / "web" / "runtime" / ".hidden.mjs"]
    for path in planted:
        path.write_text(canary)
    server, url = start_background()
    port = server.server_address[1]
    statuses = {}
    try:
        for index in range(COUNTS["http"]):
            method, path, host = hostile.hostile_http(np.random.default_rng([SEED, index]))
            label = f"http seed {SEED} index {index}: {method} {path[:60]} Host {host!r}"

            status, body = _timed(label, lambda: raw_request("127.0.0.1", port, method, path, host))
            statuses[status] = statuses.get(status, 0) + 1
            assert status in (200, 404, 405, 421, 501), label
            assert canary.encode() not in body and b"import sys" not in body and b"root:" not in body, label
            if host not in (None, "localhost", "127.0.0.1", "[::1]", "LOCALHOST"):
                assert status in (421, 405, 501), label
    finally:
        server.shutdown()
        server.server_close()
        for path in planted:
            path.unlink()
    assert statuses.get(200) and statuses.get(404) and statuses.get(421), statuses


def test_the_suite_runs_at_least_500_cases():
    assert sum(COUNTS.values()) >= 500
