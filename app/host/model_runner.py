"""`python -m app model FILE.onnx`: every ConvTranspose layer of an ONNX file on our kernel, in headless Chromium
(default) or Node with Dawn, with the model's weights (constant), on seeded inputs of its inferred shape.

Each runnable layer is cut into a one-node model with the file's weights (app/onnx_model.py); the host reads
it with protobufjs (web/views/model-run.mjs), runs it and, with `--against ort`, times it beside
onnxruntime-web's two WebGPU builds on the same bytes. Here, in CPython, our y is checked against
onnxruntime's CPU provider on that same one-node model, within test.json's tolerances for the dtype.
`--chain` does the same for the longest chain of layers (app/onnx_model.py says what counts as one), ours
with every intermediate left on the GPU, against one onnxruntime-web session of the chain model.

Output: one line per ConvTranspose node (PASS, FAIL or SKIP with the reason), the chain's line, then
`N passed, N failed[, N skipped]`; exit 1 on any failure, 2 for a file refused before anything runs.
"""
from __future__ import annotations

import base64
import math
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import onnxruntime

from .. import onnx_model

IN_PAGE = """async (spec) => (await import("/web/views/model-run.mjs")).runModel(spec)"""
MODEL_ROUTE = "__model__/"  # where the page fetches the cut models (Playwright answers, never the server)
MISSING_FEATURE = "needs the device feature"


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


class _NodeModels:
    def __init__(self, node, folder: Path):
        self.node, self.folder = node, folder

    def run(self, name: str, spec: dict) -> dict:
        return self.node.call("model", {**spec, "model": {"path": str(self.folder / name)}})


class _PageModels:
    def __init__(self, page, url: str):
        self.page, self.url = page, url

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


def _verdict(got: np.ndarray, want: np.ndarray, tol: dict) -> tuple[bool, float]:
    want64, got64 = want.astype(np.float64), got.astype(np.float64)
    if got64.shape != want64.shape:
        return False, float("inf")
    err = np.abs(got64 - want64)
    return bool(np.all(err <= tol["atol"] + tol["rtol"] * np.abs(want64))), float(err.max()) if err.size else 0.0


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
        message = str(exc).splitlines()[0]
        status = "SKIP" if MISSING_FEATURE in message else "FAIL"
        print(f"{status} {label}: {message}", flush=True)
        return status
    got = np.frombuffer(base64.b64decode(result["y"]), dtype=dtype).reshape(result["y_shape"])
    ok, err = _verdict(got, want, tol)
    # e2e-into times the same calls as e2e with y read elsewhere: a y that differs means it timed something else
    into_differs = [name for name, r in [("ours", result["ours"]), *((f"ort-{ep}", r) for ep, r in result.get("ort", {}).items())]
                    if r.get("into_same_as_e2e") is False]
    if into_differs:
        print(f"FAIL {label}: e2e-into's y differs from e2e's ({', '.join(into_differs)})", flush=True)
        return "FAIL"
    variants = ",".join(dict.fromkeys(result["variants"]))
    print(f"{'PASS' if ok else 'FAIL'} {label} [{variants}] max_abs_err={err:.3g} (atol {tol['atol']:.3g}) "
          f"| {_times(result)}{_host_load(result)}", flush=True)
    return "PASS" if ok else "FAIL"


def main(path: str, host: str = "browser", against: str | None = None, dtype: str = "float32",
         chain: bool = False, runs: int = 5, warmup: int = 1, settle: float = 60) -> int:
    try:  # everything that can refuse the file does so here, before a host starts
        ml = onnx_model.read(path)
        layers = onnx_model.chain(ml) if chain else []
        if chain and not layers:
            raise onnx_model.ModelError(f"{path}: --chain: no two consecutive ConvTranspose layers feed one "
                                        "another (docs/models.md)")
    except onnx_model.ModelError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"{path}: {len(ml.layers) + len(ml.skipped)} ConvTranspose node(s), {len(ml.skipped)} skipped; "
          f"host {host}, {dtype}" + (f", against onnxruntime-web, medians of {runs} rounds" if against else ""),
          flush=True)
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for s in ml.skipped:
        print(f"SKIP {s.name}: {s.reason}", flush=True)
        counts["SKIP"] += 1
    common = {"runs": runs, "warmup": warmup, "against": against == "ort", "settleS": settle}
    with tempfile.TemporaryDirectory(prefix="model-") as tmp:
        with open_host(host, Path(tmp)) as models:
            for layer in sorted(ml.layers, key=lambda l: l.index):
                x = onnx_model.seeded_input(layer.x_shape, dtype, layer.index)
                cut = onnx_model.one_node(ml, layer, dtype).SerializeToString()
                name = f"layer{layer.index}.onnx"
                (Path(tmp) / name).write_bytes(cut)
                status = _run(models, name, {**common, "x": base64.b64encode(x.tobytes()).decode()}, ort_cpu(cut, x),
                              tolerance(dtype, reduction(layer)), dtype, f"{layer.name} {layer.describe()}")
                counts[status] += 1
        if chain:
            # A host of its own, as an app runs its decoder: after the layer-by-layer runs (a kernel and two ORT
            # sessions each, and their garbage) the same chain in the same Node process took 10.2 ms end to
            # end on the H200 against 3.7 in a fresh one, ORT's session 6.5 against 8.0.
            x = onnx_model.seeded_input(layers[0].x_shape, dtype, 0)
            cut = onnx_model.chain_model(ml, layers, dtype).SerializeToString()
            (Path(tmp) / "chain.onnx").write_bytes(cut)
            dropped = onnx_model.dropped_between(ml, layers)
            label = (f"chain {' -> '.join(l.name for l in layers)} ({len(layers)} layers"
                     + (f"; {', '.join(dropped)} between them dropped" if dropped else "") + ")")
            # Errors add up along the chain: its tolerance is that of all its layers' products.
            tol = tolerance(dtype, sum(reduction(l) for l in layers))
            with open_host(host, Path(tmp)) as models:
                status = _run(models, "chain.onnx", {**common, "x": base64.b64encode(x.tobytes()).decode()},
                              ort_cpu(cut, x), tol, dtype, label)
            counts[status] += 1
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed" + (f", {counts['SKIP']} skipped" if counts["SKIP"] else ""))
    return 1 if counts["FAIL"] else 0
