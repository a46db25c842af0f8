"""The public API in the page: getKernel from JavaScript, app.get_kernel from Python in Pyodide."""
import numpy as np
import pytest

from app.kernel import validate
from app.reference import conv_transpose_reference
from app.variants import VARIANTS

from .browser_session import run_python

pytestmark = pytest.mark.browser
KERNEL_ID = "webgpu-kernels/ai.onnx.ConvTranspose"


def test_js_get_kernel_matches_reference(page):
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (1, 4, 5, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 3, 3, 2)).astype(np.float32)
    b = rng.uniform(-1, 1, 6).astype(np.float32)
    attrs = {"strides": [2, 3], "pads": [1, 0, 0, 1], "group": 2, "dilations": [1, 2]}
    out = page.evaluate(
        """async ([x, w, b, attrs]) => {
            const kernel = await window.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", {version: 1});
            const { y, meta } = await kernel({x: {data: new Float32Array(x.data), shape: x.shape},
                                              w: {data: w.data, shape: w.shape}, b: {data: b.data, shape: b.shape}, ...attrs});
            return { data: Array.from(y.data), shape: y.shape, isF32: y.data instanceof Float32Array, meta };
        }""",
        [{"data": t.ravel().tolist(), "shape": list(t.shape)} for t in (x, w, b)] + [attrs])
    geom, _ = validate(x, w, b, **attrs)
    want = conv_transpose_reference(geom, x, w, b)
    assert out["shape"] == list(want.shape) and out["isF32"]
    np.testing.assert_allclose(np.array(out["data"]).reshape(want.shape), want, atol=1e-5, rtol=1e-4)
    # whichever covering variant the planner chose, and the step that chose it (app/planner.py)
    assert out["meta"]["variant"] in VARIANTS and out["meta"]["reason"], out["meta"]
    assert out["meta"]["gpu_ms"] is None or out["meta"]["gpu_ms"] >= 0


def test_python_api_in_pyodide(page):
    result = run_python(page, """
import numpy as np, app
kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
rng = np.random.default_rng(3)
x = rng.standard_normal((2, 3, 4)).astype(np.float32)
w = rng.standard_normal((3, 2, 4)).astype(np.float32)
out = await kernel(x=x, w=w, b=None, strides=[2], pads=[1, 1])
dict_in = await kernel(x={"data": x.ravel().tolist(), "shape": [2, 3, 4]}, w=w, strides=[2], pads=[1, 1])
{"shape": list(out["y"].shape), "dtype": str(out["y"].dtype), "same": bool(np.array_equal(out["y"], dict_in["y"])),
 "x": x.ravel().tolist(), "w": w.ravel().tolist(), "y": out["y"].ravel().tolist(), "variant": out["meta"]["variant"]}
""")
    x = np.array(result["x"], np.float32).reshape(2, 3, 4)
    w = np.array(result["w"], np.float32).reshape(3, 2, 4)
    geom, _ = validate(x, w, strides=[2], pads=[1, 1])
    want = conv_transpose_reference(geom, x, w)
    assert result["shape"] == [2, 2, 8] and result["dtype"] == "float32" and result["same"]
    np.testing.assert_allclose(np.array(result["y"]).reshape(want.shape), want, atol=1e-5, rtol=1e-4)
    assert result["variant"] in VARIANTS


@pytest.mark.parametrize("call, message", [
    ('app.get_kernel("webgpu-kernels/ai.onnx.Conv", version=1)', "unknown kernel"),
    ('app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=2)', "contract version 1"),
    ('app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1, revision="0" * 40)', "does not match"),
])
def test_unknown_kernel_is_a_clear_error(page, call, message):
    text = run_python(page, f"""
import app
try:
    await {call}
    out = "no error"
except app.KernelNotFoundError as exc:
    out = str(exc)
out
""")
    assert message in text


def test_refusals_and_empty_outputs_do_no_gpu_work(page):
    out = run_python(page, """
import numpy as np, app
kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
before = kernel.device.gpu.executions
errors = []
for attrs in ({"group": 3}, {"strides": [0, 1]}, {"pads": [-1, 0, 0, 0]}, {"auto_pad": "SAME"}):
    try:
        await kernel(x=np.ones((1, 2, 3, 3), np.float32), w=np.ones((2, 1, 2, 2), np.float32), **attrs)
    except app.ConvTransposeError as exc:
        errors.append(str(exc))
empty = await kernel(x=np.ones((0, 2, 3), np.float32), w=np.ones((2, 4, 2), np.float32))
{"errors": errors, "executions": kernel.device.gpu.executions - before, "empty_shape": list(empty["y"].shape)}
""")
    assert len(out["errors"]) == 4
    for name, text in zip(("group", "strides", "pads", "auto_pad"), out["errors"]):
        assert f"'{name}'" in text
    assert out["executions"] == 0
    assert out["empty_shape"] == [0, 4, 4]


def test_float16_is_gated_on_shader_f16(page):
    out = run_python(page, """
import numpy as np, app
kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
x = np.linspace(-1, 1, 18, dtype=np.float16).reshape(1, 2, 9)
w = np.linspace(-1, 1, 12, dtype=np.float16).reshape(2, 2, 3)
try:
    res = await kernel(x=x, w=w, strides=[2])
    out = {"ran": True, "y": res["y"].astype(np.float64).ravel().tolist(), "dtype": str(res["y"].dtype)}
except app.ConvTransposeError as exc:
    out = {"ran": False, "error": str(exc)}
out["has_f16"] = kernel.device.caps.has("shader-f16")
out
""")
    if out["has_f16"]:
        x = np.linspace(-1, 1, 18, dtype=np.float16).reshape(1, 2, 9)
        w = np.linspace(-1, 1, 12, dtype=np.float16).reshape(2, 2, 3)
        geom, _ = validate(x.astype(np.float32), w.astype(np.float32), strides=[2])
        want = conv_transpose_reference(geom, x, w)
        assert out["ran"] and out["dtype"] == "float16"
        np.testing.assert_allclose(np.array(out["y"]).reshape(want.shape), want, atol=2e-3, rtol=2e-3)
    else:
        assert not out["ran"] and "shader-f16" in out["error"]


def test_output_past_65535_workgroups(page):
    """4.2M outputs need more than 65535 workgroups of 64 (the gather kernel's, forced): the grid folds into 2D
    and covers every element."""
    out = run_python(page, """
import numpy as np, app
from app.kernel import validate
from app.reference import conv_transpose_reference
kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
rng = np.random.default_rng(5)
x = rng.standard_normal((1, 1, 1025, 1024)).astype(np.float32)
w = rng.standard_normal((1, 1, 2, 2)).astype(np.float32)
b = np.array([0.25], np.float32)
res = await kernel(x=x, w=w, b=b, strides=[2, 2], variant="nchw2d_gather")
plan = kernel.plan(validate(x, w, b, strides=[2, 2])[0], "nchw2d_gather")
want = conv_transpose_reference(validate(x, w, b, strides=[2, 2])[0], x, w, b)
{"shape": list(res["y"].shape), "err": float(np.abs(res["y"] - want).max()),
 "grid": list(plan.dispatches[0].workgroups)}
""")
    assert out["shape"] == [1, 1, 2050, 2048]
    assert out["grid"][1] > 1 and out["grid"][0] <= 65535
    assert out["err"] < 1e-5


def test_packed_weights_are_cached_per_weight_buffer_and_numpy_weights_are_never_stale(page):
    """GEMM + col2im packs W in a weight-side pass. GPU-resident weights are packed once per buffer, however
    the calls alternate between buffers (again after kernel.forget); numpy weights are packed on every call,
    so an array changed in place is seen."""
    out = run_python(page, """
import numpy as np, app
from app.kernel import validate
from app.reference import conv_transpose_reference
kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
rng = np.random.default_rng(11)
x = rng.standard_normal((1, 8, 5, 5)).astype(np.float32)
w1 = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
w2 = w1.copy(); w2[0, 0, 0, 0] += 1.0
g1, g2 = await kernel.upload(w1), await kernel.upload(w2)
attrs = dict(strides=[2, 2], pads=[1, 1, 1, 1], variant="nchw2d_col2im")
def want(w):
    return conv_transpose_reference(validate(x, w, strides=[2, 2], pads=[1, 1, 1, 1])[0], x, w)
start = kernel.device.gpu.weight_preparations
errors, counts = [], []
for w, ref in ((g1, w1), (g1, w1), (g2, w2), (g2, w2), (g1, w1)):
    res = await kernel(x=x, w=w, **attrs)
    errors.append(float(np.abs(res["y"] - want(ref)).max()))
    counts.append(kernel.device.gpu.weight_preparations - start)
# rewritten in place on the GPU: stale until forgotten
kernel.device.gpu.device.queue.writeBuffer(g1.buffer, 0, app.gpu.to_typed(w2))
kernel.forget(g1)
errors.append(float(np.abs((await kernel(x=x, w=g1, **attrs))["y"] - want(w2)).max()))
counts.append(kernel.device.gpu.weight_preparations - start)
# numpy weights: packed every call; a change in place is seen
w3 = w1.copy()
first = await kernel(x=x, w=w3, **attrs)
w3 *= 2
second = await kernel(x=x, w=w3, **attrs)
errors += [float(np.abs(first["y"] - want(w1)).max()), float(np.abs(second["y"] - want(w3)).max())]
counts.append(kernel.device.gpu.weight_preparations - start)
for g in (g1, g2):
    g.buffer.destroy()
{"errors": errors, "counts": counts}
""")
    assert max(out["errors"]) < 1e-4, out
    # g1 packed, g1 cached, g2 packed, g2 cached, g1 still cached (a layout per buffer, not one per launch),
    # forget: packed, then two numpy calls: packed each time
    assert out["counts"] == [1, 1, 2, 2, 2, 3, 5], out


