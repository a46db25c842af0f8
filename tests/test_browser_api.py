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
    out = {"ran": False, "error": str(exc), "field": exc.field}
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
        assert not out["ran"] and "shader-f16" in out["error"] and out["field"] == "x"


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




# A request's refusal from JavaScript, by the call and by validate(): {call: {name, field, message} | {y_shape},
# validate: {} | {error, field}}. `make` is a JS function body returning the request (a fresh one per use).
REFUSAL_JS = """async (bodies) => {
    const kernel = await window.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", {version: 1});
    const x = () => ({data: new Float32Array([1, 2, 3, 4]), shape: [1, 1, 4]});
    const w = () => ({data: new Float32Array([1, -1, 0.5]), shape: [1, 1, 3]});
    const out = {};
    for (const [name, body] of Object.entries(bodies)) {
        const make = new Function("x", "w", body);
        let call;
        try {
            const { y } = await kernel(make(x, w));
            call = {y_shape: y.shape, y: Array.from(y.data)};
        } catch (e) {
            call = {name: e.name, field: e.field ?? null, message: e.message};
        }
        let validated;
        try { validated = kernel.validate(make(x, w)); } catch (e) { validated = {threw: `${e.name}: ${e.message}`}; }
        out[name] = {call, validate: validated};
    }
    out.has_f16 = (await kernel.device()).features.includes("shader-f16");
    return out;
}"""


def refusals(page, bodies: dict) -> dict:
    return page.evaluate(REFUSAL_JS, bodies)


def test_bigint_attributes_and_shapes_run_as_their_numbers(page):
    """ONNX's ints are int64, which JS decoders give as BigInt: the call and validate() take them as the Numbers they
    equal (before: the call threw a TypeError from JSON.stringify while validate() accepted)."""
    out = refusals(page, {
        "numbers": "return {x: x(), w: w(), strides: [2], group: 1, pads: [1, 0]};",
        "bigints": "return {x: x(), w: w(), strides: [2n], group: 1n, pads: [1n, 0n]};",
        "bigint64array": "return {x: x(), w: w(), strides: new BigInt64Array([2n]), pads: new Int32Array([1, 0])};",
        "bigint_shape": "return {x: {data: x().data, shape: [1n, 1n, 4n]}, w: w(), strides: [2], pads: [1, 0]};",
        "bigint_output_shape": "return {x: x(), w: w(), strides: [2n], output_shape: [1n, 1n, 9n]};",
    })
    want = out["numbers"]["call"]
    assert want["y_shape"] == [1, 1, 8], want
    for name in ("bigints", "bigint64array", "bigint_shape"):
        assert out[name] == {"call": want, "validate": {}}, (name, out[name])
    assert out["bigint_output_shape"]["call"]["y_shape"] == [1, 1, 9] and out["bigint_output_shape"]["validate"] == {}


def test_bigint_past_the_attribute_range_is_refused_alike_in_call_and_validate(page):
    out = refusals(page, {
        "past_i32": "return {x: x(), w: w(), strides: [2n ** 31n]};",
        "past_safe": "return {x: x(), w: w(), pads: [2n ** 53n + 1n, 0n]};",
        "negative": "return {x: x(), w: w(), group: -1n};",
    })
    for name, field in (("past_i32", "strides"), ("past_safe", "pads"), ("negative", "group")):
        call, validated = out[name]["call"], out[name]["validate"]
        assert call["name"] == "ConvTransposeError" and call["field"] == field, (name, call)
        assert validated == {"error": call["message"], "field": field}, (name, validated)


def test_proto_attribute_is_refused_by_name_in_call_and_validate(page):
    """An own "__proto__" key (JSON.parse, or a computed key) is an unknown attribute like any other: refused by
    name in both (before: the call set the attributes' prototype and ran without it, validate() refused it
    with no field)."""
    out = refusals(page, {
        "json_object": """return Object.assign(JSON.parse('{"__proto__": {"strides": [2]}}'), {x: x(), w: w()});""",
        "json_number": """return {...JSON.parse('{"__proto__": 3, "strides": [2]}'), x: x(), w: w()};""",
        "computed_key": """return {x: x(), w: w(), ["__proto__"]: [2]};""",
        "misspelt": "return {x: x(), w: w(), stride: [2]};",
    })
    for name, field in (("json_object", "__proto__"), ("json_number", "__proto__"), ("computed_key", "__proto__"),
                        ("misspelt", "stride")):
        call, validated = out[name]["call"], out[name]["validate"]
        assert call["name"] == "ConvTransposeError" and call["field"] == field, (name, call)
        assert f"unknown attribute(s) ['{field}']" in call["message"], (name, call)
        assert validated == {"error": call["message"], "field": field}, (name, validated)


def test_refusals_name_one_field_per_input_in_call_and_validate(page):
    """validate() names an input as the call does ("x", not "x_data"), and refusals that named nothing name the
    input or attribute at fault."""
    out = refusals(page, {
        "x_short": "return {x: {data: new Float32Array(3), shape: [1, 1, 4]}, w: w()};",
        "w_not_numbers": 'return {x: x(), w: {data: ["a", "b", "c"], shape: [1, 1, 3]}};',
        "b_length": "return {x: x(), w: w(), b: {data: new Float32Array(2), shape: [2]}};",
        "mixed_dtype": 'return {x: x(), w: {data: new Uint16Array(3), shape: [1, 1, 3], dtype: "float16"}};',
        "output_shape_past": "return {x: x(), w: w(), strides: [2], output_shape: [11]};",
        "output_shape_full_wrong_m": "return {x: x(), w: w(), strides: [2], output_shape: [1, 2, 9]};",
        "f16": 'return {x: {data: new Uint16Array(4), shape: [1, 1, 4], dtype: "float16"}, '
               'w: {data: new Uint16Array(3), shape: [1, 1, 3], dtype: "float16"}};',
    })
    for name, field in (("x_short", "x"), ("w_not_numbers", "w"), ("b_length", "b"), ("mixed_dtype", "w"),
                        ("output_shape_past", "output_shape"), ("output_shape_full_wrong_m", "output_shape")):
        call, validated = out[name]["call"], out[name]["validate"]
        assert call["name"] == "ConvTransposeError" and call["field"] == field, (name, call)
        assert validated.get("field") == field and validated.get("error"), (name, validated)
    assert "asks for 11 outputs" in out["output_shape_past"]["validate"]["error"]
    if not out["has_f16"]:  # SwiftShader: float16 is gated on shader-f16, the dtype's (x's) refusal
        assert out["f16"]["call"]["name"] == "ConvTransposeError" and "shader-f16" in out["f16"]["call"]["message"]
        assert out["f16"]["call"]["field"] == "x"
        assert out["f16"]["validate"]["field"] == "x" and "shader-f16" in out["f16"]["validate"]["error"]


def test_typed_array_of_another_type_is_refused_alike_in_call_and_validate(page):
    """A typed array carries its element type, which must be the dtype's, in validate() as in the call (before:
    validate() read an Int32Array's bytes as float32 and accepted it); float16 takes its bits or a Float16Array."""
    out = refusals(page, {
        "int32": "return {x: {data: new Int32Array([1, 2, 3, 4]), shape: [1, 1, 4]}, w: w()};",
        "float64_w": "return {x: x(), w: {data: new Float64Array([1, -1, 0.5]), shape: [1, 1, 3]}};",
        "uint8_b": "return {x: x(), w: w(), b: {data: new Uint8Array([1]), shape: [1]}};",
        "f16_bits": 'return {x: {data: new Uint16Array(4), shape: [1, 1, 4], dtype: "float16"}, '
                    'w: {data: new Uint16Array(3), shape: [1, 1, 3], dtype: "float16"}};',
        "f16_as_float32": 'return {x: {data: new Float32Array(4), shape: [1, 1, 4], dtype: "float16"}, '
                          'w: {data: new Uint16Array(3), shape: [1, 1, 3], dtype: "float16"}};',
    })
    for name, field, kind in (("int32", "x", "int32"), ("float64_w", "w", "float64"), ("uint8_b", "b", "uint8"),
                              ("f16_as_float32", "x", "float32")):
        call, validated = out[name]["call"], out[name]["validate"]
        assert call["name"] == "ConvTransposeError" and call["field"] == field, (name, call)
        assert validated.get("field") == field and kind in validated.get("error", ""), (name, validated)
    # Uint16Array is float16's own (its bits): refused only where the adapter lacks shader-f16, by that gate
    f16 = out["f16_bits"]["validate"]
    assert f16 == {} if out["has_f16"] else f16["field"] == "x" and "shader-f16" in f16["error"], f16


def test_js_only_refusals_name_their_argument(page):
    """kernel(inputs) given no object and kernel.upload() given no typed array name the argument at fault."""
    out = page.evaluate("""async () => {
        const kernel = await window.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", {version: 1});
        const fields = {};
        try { await kernel(null); } catch (e) { fields.inputs = [e.name, e.field]; }
        const uploaded = kernel.upload({data: new Float32Array(4), shape: [1, 1, 4]});
        try { kernel.upload({buffer: uploaded.buffer, shape: [1, 1, 4]}); } catch (e) { fields.upload = [e.name, e.field]; }
        return fields;
    }""")
    assert out == {"inputs": ["ConvTransposeError", "inputs"], "upload": ["ConvTransposeError", "upload"]}, out
