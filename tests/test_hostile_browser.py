"""The in-browser part of the hostile-input suite (app/hostile.py; tests/test_hostile.py runs the rest in
CPython): hostile requests through the kernel in Pyodide on SwiftShader, each a ConvTransposeError with `field`
or a result equal to the float64 reference; hostile stored autotune entries (5,000 levels deep among them)
through a JS store, each ignored with a warning and the call right; and a JS store that throws or answers
nothing, a warning and the call right. Small on purpose: well under a minute."""
import json

import numpy as np
import pytest

from app import hostile
from app.kernel import validate
from app.reference import conv_transpose_reference

from .browser_session import run_python

pytestmark = pytest.mark.browser
SEED, COUNT = 52, 40

IN_PAGE = """
import json, numpy as np
import app
from app import hostile
from app.errors import ConvTransposeError, GpuError
from app.reference import conv_transpose_reference
kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
rows = []
for index in range(%(count)d):
    what, req = hostile.hostile_request(np.random.default_rng([%(seed)d, 1000 + index]))
    try:
        out = await kernel(req["x"], req["w"], req["b"], **req["attributes"])
    except ConvTransposeError as exc:
        rows.append({"index": index, "what": what, "error": "ConvTransposeError", "field": exc.field, "message": str(exc)})
        continue
    except Exception as exc:
        rows.append({"index": index, "what": what, "error": type(exc).__name__, "message": str(exc)[:500]})
        continue
    geom, arrays = app.kernel.validate(req["x"], req["w"], req["b"], **req["attributes"])
    want = conv_transpose_reference(geom, arrays["x"], arrays["w"], arrays.get("b"))
    got = out["y"].astype(np.float64)
    same = got.shape == want.shape and bool(np.allclose(got, want, atol=1e-4, rtol=1e-4, equal_nan=True))
    rows.append({"index": index, "what": what, "result": same})
json.dumps(rows)
"""


def test_hostile_requests_in_the_page_end_in_convtransposeerror_or_the_right_result(page):
    rows = json.loads(run_python(page, IN_PAGE % {"seed": SEED, "count": COUNT}))
    assert len(rows) == COUNT
    for row in rows:
        label = f"seed {SEED} index {1000 + row['index']} ({row['what']})"
        if "error" in row:
            assert row["error"] == "ConvTransposeError", (label, row)
            assert row["field"] is not None or row["message"].startswith(("unknown attribute", "inputs must share")), row
        else:
            assert row["result"] is True, (label, row)
    assert sum("error" in r for r in rows) > COUNT // 2


STORE_CALL = """async ([entries, behaviour]) => {
    const ID = "webgpu-kernels/ai.onnx.ConvTranspose";
    const warned = [];
    const warn = console.warn;
    const error = console.error, log = console.log;
    console.warn = (...a) => { warned.push(a.join(" ")); warn(...a); };
    console.error = (...a) => { warned.push(a.join(" ")); error(...a); };
    console.log = (...a) => { warned.push(a.join(" ")); log(...a); };
    const out = [];
    try {
      for (const text of entries) {
        const store = behaviour === "throw"
          ? { async get() { throw new Error("store broke"); }, async set() { throw new Error("store broke"); } }
          : { async get() { return text; }, async set() {} };
        const kernel = await window.getKernel(ID, {version: 1, autotune: {store, budgetMs: 50}});
        const x = {data: Float32Array.from({length: 2 * 16}, (_, i) => (i % 7) / 7), shape: [1, 2, 4, 4]};
        const w = {data: Float32Array.from({length: 2 * 3 * 9}, (_, i) => (i % 5) / 5 - 0.5), shape: [2, 3, 3, 3]};
        try {
          const r = await kernel({x, w, strides: [2, 2], pads: [1, 1, 1, 1]});
          out.push({y: Array.from(r.y.data), shape: r.y.shape, reason: r.meta.reason});
        } catch (e) {
          out.push({error: e.name, message: String(e.message).slice(0, 300)});
        }
      }
    } finally { console.warn = warn; console.error = error; console.log = log; }
    return {out, warned};
}"""


def _want():
    x = (np.arange(32) % 7 / 7).astype(np.float32).reshape(1, 2, 4, 4)
    w = (np.arange(54) % 5 / 5 - 0.5).astype(np.float32).reshape(2, 3, 3, 3)
    geom, arrays = validate(x, w, None, strides=[2, 2], pads=[1, 1, 1, 1])
    return conv_transpose_reference(geom, arrays["x"], arrays["w"], None)


def test_hostile_stored_entries_and_a_throwing_store_cost_a_warning_not_the_call(page):
    rng = np.random.default_rng([SEED, 7])
    entries = ["[" * 5000 + "]" * 5000, "null", "5", json.dumps({"format": 1, "variant": "nchw2d_gather",
                                                                   "params": {"bogus": 5}})]
    entries += [hostile.hostile_entry(rng, 1, {}, "r")[1] for _ in range(4)]
    entries = [e if isinstance(e, str) else json.dumps(e if not isinstance(e, bytes) else e.decode()) for e in entries]
    want = _want()
    for behaviour, texts in (("entries", entries), ("throw", [None])):
        result = page.evaluate(STORE_CALL, [texts, behaviour])
        for i, row in enumerate(result["out"]):
            assert "error" not in row, (behaviour, i, row)
            np.testing.assert_allclose(np.array(row["y"]).reshape(want.shape), want, atol=1e-5)
            assert "the fastest of" in row["reason"], row  # searched: the stored entry was not used
        joined = "\n".join(result["warned"])
        if behaviour == "throw":
            assert "store's get" in joined and "store broke" in joined, joined[-2000:]
        else:
            assert "nests 5000 levels deep" in joined and "Pyodide has suffered a fatal error" not in joined
