"""`python -m app model FILE.onnx`: every ConvTranspose layer of an ONNX file on our kernel, in headless Chromium
(default) or Node with Dawn, with the model's weights (constant), on seeded inputs of its inferred shape.

Each runnable layer is cut into a one-node model with the file's weights (app/onnx_model.py); the host reads
it with protobufjs (web/views/model-run.mjs), runs it and, with `--against ort`, times it beside
onnxruntime-web's two WebGPU builds on the same bytes. Here, in CPython, our y is checked against
onnxruntime's CPU provider on that same one-node model, within test.json's tolerances for the dtype.
`--chain` does the same for the longest chain of layers (app/onnx_model.py says what counts as one), ours
with every intermediate left on the GPU, against one onnxruntime-web session of the chain model.

Output: one line per ConvTranspose node (PASS, FAIL or SKIP with the reason), the chain's line, then
`N passed, N failed[, N skipped]`, which always comes; exit 1 on any failure, 2 for a file refused before
anything runs. Names and reasons come from the file: printed with control characters escaped. y is checked as
test.json's cases are (app/cases.py check: NaNs in the same places, infinities equal), so NaN or Inf weights
pass where our y has onnxruntime's NaNs and infinities. A layer whose x has a zero-size dim (y is its bias,
zeros, or empty) runs as a one-case file on the same host, untimed: the model page takes a 0 dim of the cut
model's input for an unknown one.

The file is untrusted (app/onnx_model.py reads external data from its folder only). Before a host starts,
every layer goes through the package's own validation (a bad attribute is a FAIL line naming it) and a
memory budget ($CONVTRANSPOSE_MODEL_BUDGET bytes, default 1 GiB: the file, its external data, and each layer's
estimated peak); a layer that fails anything is a FAIL line and the run goes on; the summary line always
comes. At most $CONVTRANSPOSE_MODEL_MAX_LAYERS layers run (default 500; the rest are one SKIP line), with a
progress line on stderr every PROGRESS_EVERY layers. The cut models live in a temporary folder that goes on
exit, on SIGTERM/SIGHUP/SIGINT, and, for one left by a process that was killed, on the next run.
"""
from __future__ import annotations

import base64
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import onnxruntime

from .. import onnx_model
from ..cases import check, printable
from .case_runner import Cases, page_python, run_cases

IN_PAGE = """async (spec) => (await import("/web/views/model-run.mjs")).runModel(spec)"""
MODEL_ROUTE = "__model__/"  # where the page fetches the cut models (Playwright answers, never the server)
MISSING_FEATURE = "needs the device feature"
BUDGET_ENV, MAX_LAYERS_ENV = "CONVTRANSPOSE_MODEL_BUDGET", "CONVTRANSPOSE_MODEL_MAX_LAYERS"
DEFAULT_BUDGET = 1 << 30
DEFAULT_MAX_LAYERS = 500
PROGRESS_EVERY = 50
TEMP_PREFIX = "model-"


def tolerance(dtype: str, reduction: int) -> dict:
    """test.json's (tools/gen_test_cases.py): float32 atol 1e-5 per product summed, float16 5e-4, clipped."""
    r = max(1, reduction)
    if dtype == "float16":
        return {"atol": min(max(5e-4 * r, 1e-3), 2e-2), "rtol": 1e-3}
    return {"atol": min(max(1e-5 * r, 1e-5), 1e-3), "rtol": 1e-4}


def reduction(layer: onnx_model.Layer) -> int:
    """Products one output sums: in-channels per group times the kernel's taps."""
    return layer.w_shape[0] // int(layer.attributes.get("group", 1)) * math.prod(layer.w_shape[2:])


def ort_cpu(model_bytes: bytes, x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def _say(text: str, file=None) -> None:
    print(printable(text), file=file or sys.stdout, flush=True)


class _NodeModels:
    def __init__(self, node, folder: Path):
        self.node, self.folder = node, folder
        self.cases = Cases(node.py)

    def run(self, name: str, spec: dict) -> dict:
        return self.node.call("model", {**spec, "model": {"path": str(self.folder / name)}})


class _PageModels:
    def __init__(self, page, url: str):
        self.page, self.url = page, url
        self.cases = Cases(page_python(page))

    def run(self, name: str, spec: dict) -> dict:
        return self.page.evaluate(IN_PAGE, {**spec, "model": {"url": self.url + MODEL_ROUTE + name}})


@contextmanager
def open_host(host: str, folder: Path):
    """Yields run(file name in `folder`, spec) -> web/views/model-run.mjs runModel's result."""
    if host == "node":
        from .node import NodeHost

        with NodeHost() as node:
            yield _NodeModels(node, folder)
        return
    from .browser import app_page
    from .server import start_background

    server, url = start_background()
    try:
        with app_page(url) as page:
            page.set_default_timeout(600_000)
            page.route(f"{url}{MODEL_ROUTE}*", lambda route: route.fulfill(
                status=200, content_type="application/octet-stream",
                body=(folder / route.request.url.rsplit("/", 1)[1]).read_bytes()))
            yield _PageModels(page, url)
    finally:
        server.shutdown()


# (key, label): e2e reads y into a new array on both sides, e2e-into into one array each side reuses
# (docs/models.md says what each side does; the chain's figure is e2e-into, as an app running its decoder)
MODES = (("e2e", "e2e"), ("e2e_into", "e2e-into"), ("resident", "resident"), ("gpu", "gpu"))


def _times(result: dict) -> str:
    """ours beside the faster ORT build, end to end and resident; ORT's refusals as 'not comparable'."""
    if "ort" not in result:
        o = result["ours"]
        return (f"ours e2e {o['e2e_ms']:.3f} ms, e2e-into {o['e2e_into_ms']:.3f} ms, "
                f"resident {o['resident_ms']:.3f} ms")
    ok = {ep: r for ep, r in result["ort"].items() if "error" not in r}
    if not ok:
        why = next(iter(result["ort"].values()))["error"]
        return f"ort: not comparable (onnxruntime-web refuses it: {why})"
    parts = []
    for mode, label in MODES:
        ours = result["ours"][f"{mode}_ms"]
        theirs = {ep: r[f"{mode}_ms"] for ep, r in ok.items() if r.get(f"{mode}_ms")}
        if ours is None or not theirs:
            continue
        ep, best = min(theirs.items(), key=lambda kv: kv[1])
        parts.append(f"{label} ours {ours:.3f} ms, ort-{ep} {best:.3f} ms ({ours / best:.2f}x)")
    return " | ".join(parts)


def _host_load(result: dict) -> str:
    """Node: how long the host waited for quiet before the timed rounds, and its CPU use during them (above
    1 core: threads besides the calls' own were busy)."""
    if result.get("cpu_cores_in_rounds") is None:
        return ""
    return (f" | host settled {result['settle_ms'] / 1000:.1f} s, "
            f"{result['cpu_cores_in_rounds']:.2f} cores in the rounds")


def _run(models, name: str, spec: dict, want: np.ndarray, tol: dict, dtype: str, label: str) -> str:
    """One model on the host, checked: returns PASS, FAIL or SKIP and prints the line."""
    try:
        result = models.run(name, spec)
    except Exception as exc:  # noqa: BLE001 - the host's error: the Node host's reply or Playwright's Error
        message = _first(exc)
        status = "SKIP" if MISSING_FEATURE in message else "FAIL"
        _say(f"{status} {label}: {message}")
        return status
    try:
        got = np.frombuffer(base64.b64decode(result["y"]), dtype=dtype).reshape(result["y_shape"])
    except (KeyError, TypeError, ValueError) as exc:
        _say(f"FAIL {label}: the host's y is unreadable ({type(exc).__name__}: {_first(exc)})")
        return "FAIL"
    ok, err, why = check(got, want, tol["atol"], tol["rtol"])
    # e2e-into times the same calls as e2e with y read elsewhere: a y that differs means it timed something else
    into_differs = [name for name, r in [("ours", result["ours"]), *((f"ort-{ep}", r) for ep, r in result.get("ort", {}).items())]
                    if r.get("into_same_as_e2e") is False]
    if into_differs:
        _say(f"FAIL {label}: e2e-into's y differs from e2e's ({', '.join(into_differs)})")
        return "FAIL"
    variants = ",".join(dict.fromkeys(result["variants"]))
    _say(f"{'PASS' if ok else 'FAIL'} {label} [{variants}] max_abs_err={err:.3g} (atol {tol['atol']:.3g})"
         + (f": {why}" if why else "") + f" | {_times(result)}{_host_load(result)}")
    return "PASS" if ok else "FAIL"


def _run_empty(models, ml, layer, x: np.ndarray, want: np.ndarray, tol: dict, dtype: str, label: str) -> str:
    """A layer whose x has a zero-size dim, as a one-case file: our kernel's y checked in the page against
    onnxruntime's (the bias broadcast, zeros, or an empty y of the layer's shape). Not timed: nothing to time."""
    def tensor(a: np.ndarray) -> dict:
        return {"shape": list(a.shape), "data": a.astype(np.float64).ravel().tolist(), "dtype": dtype}

    case = {"name": layer.name, "attributes": layer.attributes,
            "inputs": {"x": tensor(x), **{k: tensor(a) for k, a in onnx_model.weights(ml, layer, dtype).items()}},
            "expected": {"y": tensor(want)}, "tolerance": tol}
    try:
        result = next(run_cases(models.cases, json.dumps({"cases": [case]})))
    except Exception as exc:  # noqa: BLE001 - the host refused the case file: the layer's FAIL
        _say(f"FAIL {label}: {type(exc).__name__}: {_first(exc)}")
        return "FAIL"
    status = result["status"]
    if status == "PASS":
        _say(f"PASS {label} [{result['variant']}] max_abs_err={result['max_abs_err']:.3g} (atol {tol['atol']:.3g}) "
             f"| x is empty: not timed")
    else:
        _say(f"{status} {label}" + (f" [{result['variant']}]" if result["variant"] != "-" else "")
             + f": {result['detail']}")
    return status


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "")
    try:
        value = int(text) if text else default
    except ValueError:
        value = -1
    if value < 1:
        raise onnx_model.ModelError(f"${name} must be a positive integer, got {text!r}")
    return value


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def precheck(ml, layer, dtype: str, budget: int) -> str | None:
    """Why the layer cannot run (our validation's message naming the attribute or input, or the budget), or
    None. No array is made here."""
    from ..errors import ConvTransposeError

    try:
        geom = onnx_model.check(layer, ml)
    except ConvTransposeError as exc:
        return f"{exc}" + (f" (field {exc.field})" if exc.field else "")
    need = onnx_model.layer_bytes(geom, dtype)
    if need > budget:
        return (f"needs about {need / 2**20:.0f} MiB of host memory, past the budget of {budget / 2**20:.0f} MiB "
                f"(${BUDGET_ENV})")
    return None


def remove_stale_folders(base: str | None = None) -> int:
    """Removes the temporary folders of runs whose process is gone (killed before it could clean up)."""
    removed = 0
    base = base or tempfile.gettempdir()
    for entry in os.scandir(base):
        parts = entry.name.split("-")
        if not (entry.name.startswith(TEMP_PREFIX) and len(parts) >= 3 and parts[1].isdigit()) or entry.is_symlink():
            continue
        pid = int(parts[1])
        try:
            os.kill(pid, 0)
            continue  # still running
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed += 1
    return removed


@contextmanager
def signals_unwind():
    """SIGTERM and SIGHUP raise SystemExit in the main thread, so every `with` unwinds (temporary folder, host,
    server) as on Ctrl-C; the old handlers come back after."""
    def stop(signum, frame):
        raise SystemExit(128 + signum)

    old = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            old[sig] = signal.signal(sig, stop)
        except ValueError:  # not the main thread: leave them
            pass
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _layer_run(models, ml, layer, dtype: str, common: dict, tmp: Path) -> str:
    """One layer cut, run and checked; any failure of the file's data (onnx, onnxruntime, numpy) is its FAIL line."""
    label = f"{layer.name} {layer.describe()}"
    try:
        x = onnx_model.seeded_input(layer.x_shape, dtype, layer.index)
        cut = onnx_model.one_node(ml, layer, dtype).SerializeToString()
        want = ort_cpu(cut, x)
    except Exception as exc:  # noqa: BLE001 - the file's data made onnx, onnxruntime or numpy refuse: its FAIL
        _say(f"FAIL {label}: {type(exc).__name__}: {_first(exc)}")
        return "FAIL"
    if 0 in layer.x_shape:
        return _run_empty(models, ml, layer, x, want, tolerance(dtype, reduction(layer)), dtype, label)
    name = f"layer{layer.index}.onnx"
    (tmp / name).write_bytes(cut)
    return _run(models, name, {**common, "x": base64.b64encode(x.tobytes()).decode()}, want,
                tolerance(dtype, reduction(layer)), dtype, label)


def main(path: str, host: str = "browser", against: str | None = None, dtype: str = "float32",
         chain: bool = False, runs: int = 5, warmup: int = 1, settle: float = 60) -> int:
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    try:
        try:  # everything that can refuse the file does so here, before a host starts
            budget = _env_int(BUDGET_ENV, DEFAULT_BUDGET)
            max_layers = _env_int(MAX_LAYERS_ENV, DEFAULT_MAX_LAYERS)
            ml = onnx_model.read(path, budget)
            layers = onnx_model.chain(ml) if chain else []
            if chain and not layers:
                raise onnx_model.ModelError(f"{path}: --chain: no two consecutive ConvTranspose layers feed one "
                                            "another (docs/models.md)")
        except onnx_model.ModelError as exc:
            _say(str(exc), file=sys.stderr)
            return 2
        _say(f"{path}: {len(ml.layers) + len(ml.skipped)} ConvTranspose node(s), {len(ml.skipped)} skipped; "
             f"host {host}, {dtype}" + (f", against onnxruntime-web, medians of {runs} rounds" if against else ""))
        with signals_unwind():
            _run_all(ml, layers, counts, host, against, dtype, chain, runs, warmup, settle, budget, max_layers)
    finally:  # the summary comes whatever stopped the run
        print(f"{counts['PASS']} passed, {counts['FAIL']} failed"
              + (f", {counts['SKIP']} skipped" if counts["SKIP"] else ""), flush=True)
    return 1 if counts["FAIL"] else 0


def _run_all(ml, layers, counts, host, against, dtype, chain, runs, warmup, settle, budget, max_layers) -> None:
    for s in ml.skipped:
        _say(f"SKIP {s.name}: {s.reason}")
        counts["SKIP"] += 1
    ordered = sorted(ml.layers, key=lambda l: l.index)
    if len(ordered) > max_layers:
        _say(f"SKIP {len(ordered) - max_layers} layer(s) past the first {max_layers} "
             f"(${MAX_LAYERS_ENV}): {ordered[max_layers].name} onwards")
        counts["SKIP"] += len(ordered) - max_layers
        ordered = ordered[:max_layers]
    runnable = []
    for layer in ordered:
        why = precheck(ml, layer, dtype, budget)
        if why:
            _say(f"FAIL {layer.name} {layer.describe()}: {why}")
            counts["FAIL"] += 1
        else:
            runnable.append(layer)
    if chain and any(l not in runnable for l in layers):
        _say("FAIL chain: a layer of it failed its checks")
        counts["FAIL"] += 1
        chain = False
    elif chain and 0 in layers[0].x_shape:
        _say(f"SKIP chain: its x is empty [{','.join(map(str, layers[0].x_shape))}]; each layer ran alone, untimed")
        counts["SKIP"] += 1
        chain = False
    if not runnable and not chain:
        return
    common = {"runs": runs, "warmup": warmup, "against": against == "ort", "settleS": settle}
    remove_stale_folders()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}{os.getpid()}-") as tmp:
        if runnable:
            with open_host(host, Path(tmp)) as models:
                for done, layer in enumerate(runnable, 1):
                    counts[_layer_run(models, ml, layer, dtype, common, Path(tmp))] += 1
                    (Path(tmp) / f"layer{layer.index}.onnx").unlink(missing_ok=True)
                    if done % PROGRESS_EVERY == 0 and done < len(runnable):
                        _say(f"progress: {done}/{len(runnable)} layers in {time.monotonic() - started:.0f} s "
                             f"({counts['PASS']} passed, {counts['FAIL']} failed)", file=sys.stderr)
        if chain:
            _run_chain(ml, layers, counts, host, dtype, common, Path(tmp))


def _run_chain(ml, layers, counts, host, dtype, common, tmp: Path) -> None:
    # A host of its own, as an app runs its decoder: after the layer-by-layer runs (a kernel and two ORT
    # sessions each, and their garbage) the same chain in the same Node process took 10.2 ms end to
    # end on the H200 against 3.7 in a fresh one, and ORT 6.5 ms against 8.0.
    dropped = onnx_model.dropped_between(ml, layers)
    label = (f"chain {' -> '.join(l.name for l in layers)} ({len(layers)} layers"
             + (f"; {', '.join(dropped)} between them dropped" if dropped else "") + ")")
    try:
        x = onnx_model.seeded_input(layers[0].x_shape, dtype, 0)
        cut = onnx_model.chain_model(ml, layers, dtype).SerializeToString()
        want = ort_cpu(cut, x)
    except Exception as exc:  # noqa: BLE001 - as in _layer_run
        _say(f"FAIL {label}: {type(exc).__name__}: {_first(exc)}")
        counts["FAIL"] += 1
        return
    (tmp / "chain.onnx").write_bytes(cut)
    # Errors add up along the chain: its tolerance is that of all its layers' products.
    tol = tolerance(dtype, sum(reduction(l) for l in layers))
    with open_host(host, tmp) as models:
        counts[_run(models, "chain.onnx", {**common, "x": base64.b64encode(x.tobytes()).decode()}, want, tol,
                    dtype, label)] += 1
