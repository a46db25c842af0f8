"""onnxruntime-web beside our kernel: the ONNX bytes web/views/onnx-convtranspose.mjs builds, the /ort/ route, one
small comparison end to end in the page (both ORT builds, data from the app's own Python, y checked against
the float64 reference) and ORT's 3D refusal coming back as an error
(the tuning grid's candidates against the reference: tests/test_tuning_candidates.py)."""
import base64
import json
import subprocess
import urllib.request

import numpy as np
import onnx
import onnxruntime
import pytest

from app import bench
from app.host.server import ORT_DIST, ROOT
from app.kernel import validate
from app.reference import conv_transpose_reference

FILL = {"distribution": "uniform", "low": -1.0, "high": 1.0, "seed": 0}
CASE_2D = {"name": "tiny_k3s2p1_bias", "tier": "test", "x": [1, 4, 5, 5], "w": [4, 3, 3, 3], "bias": True,
           "attributes": {"strides": [2, 2], "pads": [1, 0, 1, 0], "output_padding": [1, 0]}, "dtype": "float32",
           "fill": FILL}
CASE_3D = {"name": "tiny3d", "tier": "test", "x": [1, 2, 3, 3, 3], "w": [2, 2, 2, 2, 2], "bias": False,
           "attributes": {"strides": [2, 2, 2]}, "dtype": "float32", "fill": FILL}
MODEL_JS = """
import { convTransposeModel } from "%s";
const spec = JSON.parse(process.argv[2]);
const f32 = (b64) => new Float32Array(Uint8Array.from(Buffer.from(b64, "base64")).buffer);
const bytes = convTransposeModel({ ...spec, w_data: f32(spec.w_data), b_data: spec.b_data && f32(spec.b_data) });
process.stdout.write(Buffer.from(bytes).toString("base64"));
"""


def reference(case):
    inputs = bench.make_inputs(case)
    geom, arrays = validate(**inputs, **case["attributes"])
    return inputs, conv_transpose_reference(geom, *(arrays.get(n) for n in ("x", "w", "b")))


@pytest.mark.parametrize("attributes", [
    CASE_2D["attributes"],
    {"strides": [3, 2], "dilations": [2, 1], "group": 2, "auto_pad": "SAME_UPPER"},
    {"output_shape": [10, 9], "strides": [2, 2]},
])
def test_model_bytes_are_valid_onnx_that_computes_the_reference(tmp_path, attributes):
    case = CASE_2D | {"attributes": attributes}
    inputs, want = reference(case)
    spec = {"x": case["x"], "w": case["w"], "bias": True, "attributes": attributes,
            "w_data": base64.b64encode(inputs["w"].tobytes()).decode(),
            "b_data": base64.b64encode(inputs["b"].tobytes()).decode()}
    script = tmp_path / "model.mjs"
    script.write_text(MODEL_JS % (ROOT / "web" / "views" / "onnx-convtranspose.mjs").as_uri())
    out = subprocess.run(["node", str(script), json.dumps(spec)], capture_output=True, text=True, check=True).stdout
    model = onnx.load_from_string(base64.b64decode(out))
    onnx.checker.check_model(model, full_check=True)
    node = model.graph.node[0]
    assert node.op_type == "ConvTranspose" and list(node.input) == ["x", "w", "b"]
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"x": inputs["x"]})[0]
    # ORT's CPU provider applies output_shape/SAME pads its own way only where the spec is ambiguous; these
    # attributes are not such cases, so it must match the float64 reference.
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)


def test_ort_is_pinned_and_served_from_node_modules(app_url):
    lock = json.loads((ROOT / "package-lock.json").read_text())
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]["onnxruntime-web"]
    assert lock["packages"]["node_modules/onnxruntime-web"]["version"] == pinned
    assert json.loads((ORT_DIST.parent / "package.json").read_text())["version"] == pinned
    for path, mime in (("ort/ort.webgpu.min.mjs", "text/javascript"), ("ort/ort.min.mjs", "text/javascript"),
                       ("ort/ort-wasm-simd-threaded.jsep.wasm", "application/wasm")):
        with urllib.request.urlopen(urllib.request.Request(app_url + path, method="HEAD")) as response:
            assert response.headers["Content-Type"] == mime
            assert response.headers["Cross-Origin-Embedder-Policy"] == "require-corp"


BENCH_ORT = """async ({benchCase, ep}) => {
    const { benchOrt } = await import("/web/views/ort-bench.mjs");
    const r = await benchOrt(benchCase, { runs: 2, warmup: 1, ep });
    if (r.y) r.y = Array.from(r.y);
    return r;
}"""


@pytest.mark.browser
@pytest.mark.parametrize("ep", ["webgpu", "jsep"])
def test_one_small_ort_comparison_end_to_end(page, ep):
    _, want = reference(CASE_2D)
    r = page.evaluate(BENCH_ORT, {"benchCase": CASE_2D, "ep": ep})
    assert "error" not in r, r
    assert r["impl"] == f"onnxruntime-web 1.30.0 {ep}" and r["y_shape"] == list(want.shape)
    np.testing.assert_allclose(np.array(r["y"]).reshape(want.shape), want, atol=1e-5, rtol=1e-5)
    assert r["source"] in ("timestamp-query", "wall") and 0 < r["min_ms"] <= r["median_ms"]
    assert r["wall_median_ms"] > 0


COMPARE = """async ({benchCase}) => {
    const { compareCase } = await import("/web/views/compare.mjs");
    return await compareCase(benchCase, { runs: 2, warmup: 1 });
}"""


@pytest.mark.browser
def test_ours_beside_both_ort_builds_in_alternating_runs(page):
    """bench --against ort's unit: same data, y checked (ours against the float64 reference, each ORT build
    against ours), e2e / resident / GPU medians on both sides, our host time."""
    r = page.evaluate(COMPARE, {"benchCase": CASE_2D})
    assert r["ours"]["max_abs_diff_reference"] < 1e-5
    for ep in ("webgpu", "jsep"):
        assert "error" not in r["ort"][ep], r["ort"][ep]
        assert r["ort"][ep]["max_abs_diff_ours"] < 1e-5
        assert r["ort"][ep]["e2e_ms"] > 0 and r["ort"][ep]["resident_ms"] > 0
    assert r["ours"]["e2e_ms"] > 0 and r["ours"]["resident_ms"] > 0 and 0 < r["ours"]["host_ms"] <= r["ours"]["resident_ms"]
    assert r["ours"]["gpu_ms"] > 0 and len(r["ours"]["e2e_samples_ms"]) == 2
    # the case's twin (same signature, other weights) called in turn with it on the one kernel: after the
    # warm-up round, neither layer's constant weights are written again
    assert r["ours"]["in_turn_e2e_ms"] > 0 and r["ours"]["weight_bytes_written_in_rounds"] == 0
    # y into an array each side reuses: the same y, bit for bit, as the e2e run's new array
    for side in (r["ours"], r["ort"]["webgpu"], r["ort"]["jsep"]):
        assert side["e2e_into_ms"] > 0 and side["into_same_as_e2e"] is True, side


PREALLOCATED_CPU_OUTPUT = """async ({benchCase, ep}) => {
    const { caseInputs, loadOrt } = await import("/web/views/ort-bench.mjs");
    const { convTransposeModel } = await import("/web/views/onnx-convtranspose.mjs");
    const ort = await loadOrt(ep);
    const data = await caseInputs(benchCase);
    const model = convTransposeModel({ x: benchCase.x, w: benchCase.w, bias: true, attributes: benchCase.attributes,
                                       w_data: data.w, b_data: data.b });
    const session = await ort.InferenceSession.create(model, { executionProviders: ["webgpu"],
      extra: { session: { disable_cpu_ep_fallback: "1" } } });
    const x = new ort.Tensor("float32", data.x, benchCase.x);
    const plain = (await session.run({ x })).y;
    const mine = new ort.Tensor("float32", new Float32Array(plain.data.length).fill(7), plain.dims);
    const back = (await session.run({ x }, { y: mine })).y;
    await session.release();
    return { same: back === mine, sevens: Array.from(mine.data).every((v) => v === 7),
             computed: Array.from(plain.data).some((v) => v !== 7) };
}"""


@pytest.mark.browser
@pytest.mark.parametrize("ep", ["webgpu", "jsep"])
def test_ort_hands_a_preallocated_cpu_output_back_without_y(page, ep):
    """What docs/models.md says of e2e-into on ORT's side: a CPU tensor in run's fetches comes back as it went
    in (ORT runs into a copy in wasm memory), so the app reads y back from a GPU buffer it preallocated
    instead. Fails when an onnxruntime-web release fills the caller's array: then e2e-into should use it."""
    r = page.evaluate(PREALLOCATED_CPU_OUTPUT, {"benchCase": CASE_2D, "ep": ep})
    assert r == {"same": True, "sevens": True, "computed": True}, r


@pytest.mark.browser
def test_ort_refusing_3d_in_the_comparison_is_recorded(page):
    r = page.evaluate(COMPARE, {"benchCase": CASE_3D})
    assert r["ours"]["max_abs_diff_reference"] < 1e-5 and r["ours"]["e2e_ms"] > 0
    assert all("conv" in r["ort"][ep]["error"].lower() for ep in ("webgpu", "jsep")), r["ort"]


@pytest.mark.browser
@pytest.mark.parametrize("ep", ["webgpu", "jsep"])
def test_ort_refusing_3d_is_an_error_result_not_a_crash(page, ep):
    r = page.evaluate(BENCH_ORT, {"benchCase": CASE_3D, "ep": ep})
    assert r["source"] == "none" and "y" not in r
    assert "conv" in r["error"].lower(), r["error"]

