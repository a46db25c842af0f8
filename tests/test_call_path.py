"""The call path from JavaScript: cached launches (no Python on a repeat call), GPU-resident tensors and
output, the caller's GPUDevice, refusals of unusable buffers before any GPU work, errors with names and
fields, constant weights, and non-finite data on a cached signature."""
import numpy as np
import pytest

from app.kernel import validate
from app.planner import candidates
from app.reference import conv_transpose_reference
from app.variants import VARIANTS
from tools.wgsl.credited import CHROMIUM_SWIFTSHADER

from .browser_session import run_python

pytestmark = pytest.mark.browser

# A variant that needs finite x and w (it multiplies padding zeros): the tests below force it where they need
# a cached plan that non-finite data must not run on (which covering variant the planner takes is its model's).
FINITE_ONLY = "nchw2d_phase_gemm_tiled"

SETUP = f'const FINITE_ONLY = "{FINITE_ONLY}";' + """
const ID = "webgpu-kernels/ai.onnx.ConvTranspose";
const rand = (n, seed) => { let s = seed; return Float32Array.from({length: n}, () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1); };
const err = async (fn) => { try { await fn(); return null; } catch (e) { return {name: e.name, message: e.message, field: e.field ?? null, traceback: !!e.pythonTraceback}; } };
"""


def js(page, body: str, arg=None):
    return page.evaluate(f"async (arg) => {{ {SETUP} {body} }}", arg)


def reference(x, w, b=None, **attrs):
    return conv_transpose_reference(validate(x, w, b, **attrs)[0], x, w, b)


def exact(x, w, **attrs) -> set[str]:
    """The variants that cover a request with these (non-finite) arrays in the page: its planner's choices."""
    names = {c.variant for c, _ in candidates(validate(x, w, **attrs)[0], CHROMIUM_SWIFTSHADER)}
    return names | {n for n, v in VARIANTS.items() if v.tuned_as in names}  # a seed name reports its successor


def test_a_chain_of_two_calls_kept_on_the_gpu_matches_the_reference(page):
    out = js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        const x = rand(1 * 4 * 5 * 5, 1), w1 = rand(4 * 6 * 3 * 3, 2), w2 = rand(6 * 2 * 2 * 2, 3), b = rand(2, 4);
        const first = await kernel({x: {data: x, shape: [1, 4, 5, 5]}, w: kernel.upload({data: w1, shape: [4, 6, 3, 3]}),
                                    strides: [2, 2], pads: [1, 1, 1, 1]}, {output: "gpu"});
        const isBuffer = typeof first.y.buffer.size === "number" && !("data" in first.y);
        const second = await kernel({x: first.y, w: {data: w2, shape: [6, 2, 2, 2]}, b: {data: b, shape: [2]}, strides: [2, 2]});
        first.y.buffer.destroy();
        return {x: Array.from(x), w1: Array.from(w1), w2: Array.from(w2), b: Array.from(b), isBuffer,
                mid: first.y.shape, y: Array.from(second.y.data), shape: second.y.shape, variants: [first.meta.variant, second.meta.variant]};
    """)
    x = np.array(out["x"], np.float32).reshape(1, 4, 5, 5)
    w1 = np.array(out["w1"], np.float32).reshape(4, 6, 3, 3)
    w2 = np.array(out["w2"], np.float32).reshape(6, 2, 2, 2)
    b = np.array(out["b"], np.float32)
    mid = reference(x, w1, strides=[2, 2], pads=[1, 1, 1, 1]).astype(np.float32)
    want = reference(mid, w2, b, strides=[2, 2])
    assert out["isBuffer"] and out["mid"] == list(mid.shape) and out["shape"] == list(want.shape)
    np.testing.assert_allclose(np.array(out["y"]).reshape(want.shape), want, atol=1e-4, rtol=1e-4)


def test_the_callers_own_device_is_used_and_its_buffers_bind(page):
    out = js(page, """
        const adapter = await navigator.gpu.requestAdapter();
        const device = await adapter.requestDevice();
        const kernel = await window.getKernel(ID, {version: 1, device});
        const x = rand(2 * 3 * 7, 5), w = rand(3 * 2 * 3, 6);
        const xBuffer = device.createBuffer({size: x.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST});
        device.queue.writeBuffer(xBuffer, 0, x);
        const { y } = await kernel({x: {buffer: xBuffer, shape: [2, 3, 7]}, w: {data: w, shape: [3, 2, 3]}, strides: [2]});
        const info = kernel.device();
        const same = kernel.gpuDevice() === device;
        device.destroy();
        return {x: Array.from(x), w: Array.from(w), y: Array.from(y.data), shape: y.shape, same, limits: info.limits};
    """)
    x = np.array(out["x"], np.float32).reshape(2, 3, 7)
    w = np.array(out["w"], np.float32).reshape(3, 2, 3)
    want = reference(x, w, strides=[2])
    assert out["same"]
    np.testing.assert_allclose(np.array(out["y"]).reshape(want.shape), want, atol=1e-5, rtol=1e-4)
    # a plain requestDevice() has the spec's default limits, and the kernel plans with what the device has
    assert out["limits"]["maxStorageBufferBindingSize"] == 134217728


def test_unusable_buffers_are_refused_before_any_gpu_work(page):
    out = js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        const device = kernel.gpuDevice();
        const w = {data: rand(2 * 2 * 3, 7), shape: [2, 2, 3]};
        const x = {data: rand(1 * 2 * 6, 8), shape: [1, 2, 6]};
        await kernel({x, w});  // the signature's launch exists: refusals below come from the cached path
        const small = device.createBuffer({size: 16, usage: GPUBufferUsage.STORAGE});
        const noStorage = device.createBuffer({size: 64, usage: GPUBufferUsage.COPY_DST});
        const otherDevice = await (await navigator.gpu.requestAdapter()).requestDevice();
        const foreign = otherDevice.createBuffer({size: 64, usage: GPUBufferUsage.STORAGE});
        const before = kernel.memory().executions;
        const results = {
            small: await err(() => kernel({x: {buffer: small, shape: [1, 2, 6]}, w})),
            noStorage: await err(() => kernel({x: {buffer: noStorage, shape: [1, 2, 6]}, w})),
            foreign: await err(() => kernel({x: {buffer: foreign, shape: [1, 2, 6]}, w})),
            shortData: await err(() => kernel({x: {data: new Float32Array(11), shape: [1, 2, 6]}, w})),
        };
        results.executions = kernel.memory().executions - before;
        results.wrongType = await err(() => kernel({x: {data: new Float64Array(12), shape: [1, 2, 6]}, w}));
        otherDevice.destroy(); small.destroy(); noStorage.destroy();
        return results;
    """)
    assert out["executions"] == 0, out
    assert out["small"]["name"] == "ConvTransposeError" and out["small"]["field"] == "x"
    assert "holds 16 bytes" in out["small"]["message"] and "needs 48" in out["small"]["message"]
    assert out["noStorage"]["field"] == "x" and "STORAGE" in out["noStorage"]["message"]
    assert out["foreign"]["field"] == "x" and "another device" in out["foreign"]["message"], out["foreign"]
    assert out["shortData"]["field"] == "x" and "has 11 values" in out["shortData"]["message"]
    # a typed array carries its dtype: a Float64Array for float32 is refused, as Python refuses a float64 array
    assert out["wrongType"]["name"] == "ConvTransposeError" and out["wrongType"]["field"] == "x"
    assert "Float64Array" in out["wrongType"]["message"], out["wrongType"]


def test_errors_reach_javascript_with_a_name_a_field_and_one_line(page):
    out = js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        const x = {data: rand(8, 1), shape: [1, 2, 4]}, w = {data: rand(12, 2), shape: [2, 2, 3]};
        return {
            strides: await err(() => kernel({x, w, strides: [0]})),
            group: await err(() => kernel({x, w, group: 3})),
            output: await err(() => kernel({x, w}, {output: "disk"})),
            missing: await err(() => kernel({w})),
            unknown: await err(() => window.getKernel("webgpu-kernels/ai.onnx.Conv", {version: 1})),
            variant: await err(() => kernel({x, w, variant: "nope"})),
        };
    """)
    for name, field in (("strides", "strides"), ("group", "group"), ("output", "output"), ("missing", "x")):
        e = out[name]
        assert e["name"] == "ConvTransposeError" and e["field"] == field, (name, e)
        assert "\n" not in e["message"] and "Traceback" not in e["message"], e
    assert out["strides"]["traceback"]  # Python's traceback travels apart from the message
    assert out["unknown"]["name"] == "KernelNotFoundError" and "unknown kernel" in out["unknown"]["message"]
    assert out["variant"]["name"] == "ConvTransposeError" and "unknown variant" in out["variant"]["message"]


def test_a_repeat_call_does_not_enter_python_and_constant_weights_follow_the_documented_rules(page):
    out = js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        const x = {data: rand(1 * 8 * 5 * 5, 3), shape: [1, 8, 5, 5]};
        const wData = rand(8 * 4 * 3 * 3, 4);
        const attrs = {strides: [2, 2], pads: [1, 1, 1, 1], variant: "nchw2d_col2im"};  // has a weight-side pass
        const first = {}, second = {};
        await kernel({x, w: {data: wData, shape: [8, 4, 3, 3], constant: true}, ...attrs}, {profile: first});
        const a = await kernel({x, w: {data: wData, shape: [8, 4, 3, 3], constant: true}, ...attrs}, {profile: second});
        wData[0] += 1;  // changed in place: a constant array stays as it was on the GPU until forgotten
        const stale = await kernel({x, w: {data: wData, shape: [8, 4, 3, 3], constant: true}, ...attrs});
        kernel.forget(wData);
        const fresh = await kernel({x, w: {data: wData, shape: [8, 4, 3, 3], constant: true}, ...attrs});
        wData[1] += 1;  // not constant: every call writes it, a change in place is always seen
        const plain = await kernel({x, w: {data: wData, shape: [8, 4, 3, 3]}, ...attrs});
        return {firstPython: !!first.python, secondPython: !!second.python, x: Array.from(x.data), w: Array.from(wData),
                a: Array.from(a.y.data), stale: Array.from(stale.y.data), fresh: Array.from(fresh.y.data),
                plain: Array.from(plain.y.data), shape: a.y.shape};
    """)
    assert out["firstPython"] and not out["secondPython"]
    x = np.array(out["x"], np.float32).reshape(1, 8, 5, 5)
    w_now = np.array(out["w"], np.float32).reshape(8, 4, 3, 3)
    w_mid = w_now.copy()
    w_mid.flat[1] -= 1
    w_orig = w_mid.copy()
    w_orig.flat[0] -= 1
    attrs = {"strides": [2, 2], "pads": [1, 1, 1, 1]}
    check = lambda got, w: np.testing.assert_allclose(  # noqa: E731
        np.array(got).reshape(out["shape"]), reference(x, w, **attrs), atol=1e-4, rtol=1e-4)
    check(out["a"], w_orig)
    check(out["stale"], w_orig)
    check(out["fresh"], w_mid)
    check(out["plain"], w_now)


def test_nonfinite_data_on_a_cached_signature_takes_an_exact_variant(page):
    out = js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        const shape = [1, 16, 4, 4], wShape = [16, 8, 3, 3], attrs = {strides: [2, 2], pads: [1, 1, 1, 1]};
        const x = rand(256, 9), w = rand(16 * 8 * 9, 10);
        const finite = await kernel({x: {data: x, shape}, w: {data: w, shape: wShape}, ...attrs});
        const forced = await kernel({x: {data: x, shape}, w: {data: w, shape: wShape}, ...attrs, variant: FINITE_ONLY});
        const wInf = w.slice(); wInf[5] = Infinity;
        const inf = await kernel({x: {data: x, shape}, w: {data: wInf, shape: wShape}, ...attrs});
        const refused = await err(() => kernel({x: {data: x, shape}, w: {data: wInf, shape: wShape}, ...attrs, variant: FINITE_ONLY}));
        return {x: Array.from(x), w: Array.from(wInf).map((v) => (v === Infinity ? "inf" : v)),
                variants: [finite.meta.variant, forced.meta.variant, inf.meta.variant], refused,
                y: Array.from(inf.y.data).map((v) => (Number.isNaN(v) ? "nan" : v === Infinity ? "inf" : v === -Infinity ? "-inf" : v)),
                shape: inf.y.shape};
    """)
    x = np.array(out["x"], np.float32).reshape(1, 16, 4, 4)
    w = np.array([np.inf if v == "inf" else v for v in out["w"]], np.float32).reshape(16, 8, 3, 3)
    want = reference(x, w, strides=[2, 2], pads=[1, 1, 1, 1])
    got = np.array([{"nan": np.nan, "inf": np.inf, "-inf": -np.inf}.get(v, v) for v in out["y"]], np.float64)
    got = got.reshape(out["shape"])
    # the planner's choice on finite data, then the finite-only kernel forced (both cached); on Inf the planner takes
    # an exact variant, and the finite-only one forced is refused by name
    assert out["variants"][1] == FINITE_ONLY and out["variants"][2] in exact(x, w, strides=[2, 2], pads=[1, 1, 1, 1])
    assert FINITE_ONLY not in exact(x, w, strides=[2, 2], pads=[1, 1, 1, 1])
    assert out["refused"]["name"] == "ConvTransposeError" and "finite" in out["refused"]["message"], out["refused"]
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], atol=1e-4, rtol=1e-4)


def test_nonfinite_x_stays_on_the_grouped_kernel_nonfinite_w_leaves_it(page):
    # The grouped kernel multiplies the zeros it loads outside x by weights, never x by a weight that is not
    # its tap: the check before a call scans w alone, so NaN and Inf in x keep the fast kernel (forced here),
    # exactly; Inf in w refuses it forced, and the planner takes an exact variant.
    out = js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        const shape = [1, 4, 5, 6], wShape = [4, 1, 4, 4], attrs = {group: 4, strides: [2, 2], pads: [1, 1, 1, 1]};
        const x = rand(120, 11), w = rand(64, 12);
        x[0] = NaN; x[37] = Infinity; x[80] = -Infinity;
        const wInf = w.slice(); wInf[3] = Infinity;
        const code = (a) => Array.from(a).map((v) => (Number.isNaN(v) ? "nan" : v === Infinity ? "inf" : v === -Infinity ? "-inf" : v));
        const grouped = "nchw2d_grouped_stride_phase";
        const xs = await kernel({x: {data: x, shape}, w: {data: w, shape: wShape}, ...attrs, variant: grouped});
        const refused = await err(() => kernel({x: {data: x, shape}, w: {data: wInf, shape: wShape}, ...attrs, variant: grouped}));
        const ws = await kernel({x: {data: x, shape}, w: {data: wInf, shape: wShape}, ...attrs});
        return {x: code(x), w: code(w), wInf: code(wInf), variants: [xs.meta.variant, ws.meta.variant], refused,
                y: [code(xs.y.data), code(ws.y.data)], shape: xs.y.shape};
    """)
    decode = lambda a: np.array([{"nan": np.nan, "inf": np.inf, "-inf": -np.inf}.get(v, v) for v in a], np.float64)  # noqa: E731
    x = decode(out["x"]).astype(np.float32).reshape(1, 4, 5, 6)
    attrs = {"group": 4, "strides": [2, 2], "pads": [1, 1, 1, 1]}
    w_inf = decode(out["wInf"]).astype(np.float32).reshape(4, 1, 4, 4)
    assert out["variants"][0] == "nchw2d_grouped_stride_phase" and out["variants"][1] in exact(x, w_inf, **attrs), out
    assert "nchw2d_grouped_stride_phase" not in exact(x, w_inf, **attrs)
    assert out["refused"]["name"] == "ConvTransposeError" and "finite" in out["refused"]["message"], out["refused"]
    for weights, got in zip((out["w"], out["wInf"]), out["y"]):
        want = reference(x, decode(weights).astype(np.float32).reshape(4, 1, 4, 4), **attrs)
        got = decode(got).reshape(out["shape"])
        assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
        assert np.isnan(want).any() and np.isinf(want).any()
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], atol=1e-4, rtol=1e-4)


def test_python_api_keeps_tensors_on_the_gpu(page):
    out = run_python(page, """
import numpy as np, app
from app.tensors import GpuTensor
from app.kernel import validate
from app.reference import conv_transpose_reference
kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
rng = np.random.default_rng(5)
x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
w1 = rng.standard_normal((3, 4, 2, 2)).astype(np.float32)
w2 = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
mid = await kernel(x=await kernel.upload(x), w=w1, strides=[2, 2], output="gpu")
end = await kernel(x=mid["y"], w=w2, pads=[1, 1, 1, 1], timing=True)
m = conv_transpose_reference(validate(x, w1, strides=[2, 2])[0], x, w1).astype(np.float32)
want = conv_transpose_reference(validate(m, w2, pads=[1, 1, 1, 1])[0], m, w2)
mid["y"].buffer.destroy()
try:
    await kernel(x=GpuTensor(mid["y"].buffer, (1, 3, 6, 6)), w=w1, output="cpu")
    refused = "ran"
except app.GpuError as exc:
    refused = str(exc)
{"is_gpu": isinstance(mid["y"], GpuTensor), "shape": list(mid["y"].shape), "err": float(np.abs(end["y"] - want).max()),
 "gpu_ms": end["meta"]["gpu_ms"], "refused": refused}
""")
    assert out["is_gpu"] and out["shape"] == [1, 4, 12, 12]
    assert out["err"] < 1e-4
    # mid's buffer was destroyed: WebGPU refuses the submission, and the call says so (no garbage y)
    assert "destroyed" in out["refused"], out


def test_a_disposed_output_buffer_is_reused_and_gpu_output_scans_cpu_data(page):
    out = js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        const shape = [1, 16, 4, 4], wShape = [16, 8, 3, 3], attrs = {strides: [2, 2], pads: [1, 1, 1, 1]};
        const x = rand(256, 11), w = rand(16 * 8 * 9, 12);
        const a = await kernel({x: {data: x, shape}, w: {data: w, shape: wShape}, ...attrs, variant: FINITE_ONLY}, {output: "gpu"});
        const first = a.y.buffer;
        a.y.dispose();
        const b = await kernel({x: {data: x, shape}, w: {data: w, shape: wShape}, ...attrs, variant: FINITE_ONLY}, {output: "gpu"});
        const reused = b.y.buffer === first;
        b.y.buffer.destroy();
        const xNan = x.slice(); xNan[3] = NaN;
        const c = await kernel({x: {data: xNan, shape}, w: {data: w, shape: wShape}, ...attrs}, {output: "gpu"});
        c.y.buffer.destroy();
        return {reused, variants: [a.meta.variant, c.meta.variant]};
    """)
    assert out["reused"]
    # x with NaN, CPU data under GPU output: scanned, so the planner takes an exact variant
    x_nan = np.zeros((1, 16, 4, 4), np.float32)
    x_nan.reshape(-1)[3] = np.nan
    nonfinite = exact(x_nan, np.zeros((16, 8, 3, 3), np.float32), strides=[2, 2], pads=[1, 1, 1, 1])
    assert out["variants"][0] == FINITE_ONLY and out["variants"][1] in nonfinite, out


def test_a_resident_repeat_of_proven_buffers_skips_the_error_scope_and_a_failure_reaches_the_next_call(page):
    out = js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        const device = kernel.gpuDevice();
        const shape = [1, 8, 5, 5], wShape = [8, 4, 3, 3], attrs = {strides: [2, 2], pads: [1, 1, 1, 1]};
        const x = kernel.upload({data: rand(200, 13), shape}), w = kernel.upload({data: rand(288, 14), shape: wShape});
        let scopes = 0, groups = 0;
        const push = device.pushErrorScope, bind = device.createBindGroup;
        device.pushErrorScope = function (filter) { scopes += 1; return push.call(this, filter); };
        device.createBindGroup = function (descriptor) { groups += 1; return bind.call(this, descriptor); };
        const counts = [];
        for (let i = 0; i < 4; i++) {
          scopes = groups = 0;
          const { y } = await kernel({x, w, ...attrs}, {output: "gpu"});
          await device.queue.onSubmittedWorkDone();
          y.dispose();  // the next call gets this buffer back: the same bind groups
          counts.push([scopes, groups]);
        }
        // a buffer never bound before is scoped again: destroyed, its submission fails, the next call says so
        const dead = kernel.upload({data: rand(200, 15), shape});
        dead.buffer.destroy();
        scopes = 0;
        const { y } = await kernel({x: dead, w, ...attrs}, {output: "gpu"});
        const deadScopes = scopes;
        await device.queue.onSubmittedWorkDone();
        await new Promise((r) => setTimeout(r, 50));
        const next = await err(() => kernel({x, w, ...attrs}, {output: "gpu"}));
        const after = await kernel({x, w, ...attrs});
        device.pushErrorScope = push; device.createBindGroup = bind;
        y.buffer.destroy(); x.buffer.destroy(); w.buffer.destroy();
        return {counts, deadScopes, next, after: after.y.shape};
    """)
    # the first call is scoped (validation and out-of-memory) and makes its bind group; the second binds a
    # new y (scoped: a new group); from then on y comes back from the pool and nothing is scoped or made
    assert out["counts"][0][0] >= 2 and out["counts"][0][1] >= 1, out
    assert out["counts"][2:] == [[0, 0], [0, 0]], out
    assert out["deadScopes"] >= 1, out
    assert out["next"]["name"] == "GpuError" and "an earlier call that kept y on the GPU failed" in out["next"]["message"], out
    assert out["after"] == [1, 4, 9, 9]


def test_into_reads_y_into_the_callers_array_and_a_wrong_one_is_refused(page):
    """`into`: y read straight into an array the caller reuses (a first and a cached call, and with NaN in x);
    wrong dtype, wrong length or a GPU output refused with the field named, nothing written. Without adaptation: its
    calls are compared bit for bit, and a candidate it timed would round differently."""
    out = js(page, """
        const kernel = await window.getKernel(ID, {version: 1, adapt: false});
        const x = rand(1 * 3 * 4 * 4, 5), w = rand(3 * 2 * 3 * 3, 6);
        const req = {x: {data: x, shape: [1, 3, 4, 4]}, w: {data: w, shape: [3, 2, 3, 3], constant: true}, strides: [2, 2]};
        const fresh = await kernel(req);
        const into = new Float32Array(fresh.y.data.length).fill(7);
        const first = await kernel(req, {into});
        const again = await kernel(req, {into});
        const equal = Array.from(fresh.y.data).every((v, i) => v === into[i]);
        const nan = Float32Array.from(x); nan[3] = NaN;
        const viaRerun = await kernel({...req, x: {data: nan, shape: [1, 3, 4, 4]}}, {into});
        const untouched = new Float32Array(4).fill(7);
        return {same: first.y.data === into && again.y.data === into && viaRerun.y.data === into,
                equal,
                nanAt: Array.from(viaRerun.y.data).some(Number.isNaN), shape: first.y.shape,
                wrongType: await err(() => kernel(req, {into: new Float64Array(fresh.y.data.length)})),
                wrongLength: await err(() => kernel(req, {into: untouched})), untouched: Array.from(untouched),
                gpu: await err(() => kernel(req, {output: "gpu", into}))};
    """)
    assert out["same"] and out["equal"] and out["nanAt"] and out["shape"] == [1, 2, 9, 9]
    for refusal, words in ((out["wrongType"], "Float32Array"), (out["wrongLength"], "holds 4 values"),
                           (out["gpu"], 'output "cpu"')):
        assert refusal["name"] == "ConvTransposeError" and refusal["field"] == "into" and words in refusal["message"], refusal
    assert out["untouched"] == [7, 7, 7, 7]


def test_a_resident_repeat_asks_webgpu_nothing_about_its_buffers_and_alternates_signatures(page):
    """A GPUBuffer's size and usage are read once (they never change): a resident repeat call reads neither
    (Dawn for Node answers each read with a native call); two signatures called in turn keep their launches."""
    out = js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        const device = kernel.gpuDevice();
        const a = {x: kernel.upload({data: rand(200, 21), shape: [1, 8, 5, 5]}), w: kernel.upload({data: rand(288, 22), shape: [8, 4, 3, 3]}),
                   strides: [2, 2], pads: [1, 1, 1, 1]};
        const b = {x: kernel.upload({data: rand(128, 23), shape: [1, 8, 4, 4]}), w: kernel.upload({data: rand(128, 24), shape: [8, 4, 2, 2]}),
                   b: kernel.upload({data: rand(4, 25), shape: [4]}), strides: [2, 2]};
        const proto = Object.getPrototypeOf(a.x.buffer);
        const size = Object.getOwnPropertyDescriptor(proto, "size"), usage = Object.getOwnPropertyDescriptor(proto, "usage");
        let reads = 0;
        const counted = (d) => ({...d, get() { reads += 1; return d.get.call(this); }});
        const call = async (req) => {
          const { y } = await kernel(req, {output: "gpu"});
          await device.queue.onSubmittedWorkDone();
          y.dispose();
        };
        for (let i = 0; i < 3; i++) { await call(a); await call(b); }  // first calls, then y from the pool
        const executions = kernel.memory().executions;  // (memory() reads the pooled buffers' sizes)
        Object.defineProperty(proto, "size", counted(size));
        Object.defineProperty(proto, "usage", counted(usage));
        try {
          for (let i = 0; i < 4; i++) { await call(a); await call(b); }
        } finally {
          Object.defineProperty(proto, "size", size);
          Object.defineProperty(proto, "usage", usage);
        }
        const ran = kernel.memory().executions - executions;
        const ys = [await kernel(a), await kernel(b)].map((r) => Array.from(r.y.data));
        // a buffer known to this kernel is still measured against each signature's need
        const tooSmall = await err(() => kernel({...a, x: {buffer: b.x.buffer, shape: a.x.shape}}, {output: "gpu"}));
        for (const t of [a.x, a.w, b.x, b.w, b.b]) t.buffer.destroy();
        const data = [[200, 21], [288, 22], [128, 23], [128, 24], [4, 25]].map(([n, seed]) => Array.from(rand(n, seed)));
        return {reads, ran, ys, tooSmall, data};
    """)
    assert out["reads"] == 0 and out["ran"] == 8, out
    assert out["tooSmall"]["name"] == "ConvTransposeError" and out["tooSmall"]["field"] == "x", out["tooSmall"]
    assert "holds 512 bytes" in out["tooSmall"]["message"], out["tooSmall"]
    xa, wa, xb, wb, bb = (np.array(d, np.float32) for d in out["data"])
    want_a = reference(xa.reshape(1, 8, 5, 5), wa.reshape(8, 4, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1])
    want_b = reference(xb.reshape(1, 8, 4, 4), wb.reshape(8, 4, 2, 2), bb, strides=[2, 2])
    np.testing.assert_allclose(np.array(out["ys"][0]).reshape(want_a.shape), want_a, atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(np.array(out["ys"][1]).reshape(want_b.shape), want_b, atol=1e-5, rtol=1e-4)

