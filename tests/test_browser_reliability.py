"""Robustness in the real page (Chromium, WebGPU on SwiftShader, Pyodide): requests past the device's limits
split into pieces, memory stays flat over hundreds of calls, concurrent calls, a lost device, a broken shader."""
import numpy as np
import pytest

from app.kernel import validate
from app.reference import conv_transpose_reference

from .browser_session import run_python

pytestmark = pytest.mark.browser

KERNEL = 'await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1{extra})'
CHECK = """
import numpy as np, app
from app.kernel import validate
from app.reference import conv_transpose_reference

def error(res, x, w, b, attrs):
    want = conv_transpose_reference(validate(x, w, b, **attrs)[0], x, w, b)
    return float(np.max(np.abs(res["y"] - want) / (1e-4 + np.abs(want)))) if want.size else 0.0
"""

# Each request splits along a different axis under the caps given: (x, w, bias?, attributes, caps, variant).
SPLIT_REQUESTS = [
    ("images", [4, 3, 5, 5], [3, 2, 3, 3], True, {"strides": [2, 2], "pads": [1, 1, 1, 1]},
     {"maxStorageBufferBindingSize": 1024}, None),
    ("groups", [1, 8, 4, 4], [8, 4, 3, 3], True, {"group": 4, "strides": [2, 2]},
     {"maxBufferSize": 600}, None),
    ("channels", [1, 2, 6], [2, 40, 3], False, {"strides": [2]}, {"maxStorageBufferBindingSize": 256}, None),
    ("rows", [1, 1, 12, 6], [1, 2, 3, 3], True, {"strides": [2, 1], "pads": [1, 0, 0, 1], "output_padding": [1, 0]},
     {"maxStorageBufferBindingSize": 200}, None),
    ("rows 3D", [1, 2, 6, 3, 3], [2, 2, 2, 2, 2], False, {"strides": [2, 2, 2], "dilations": [2, 1, 1]},
     {"maxStorageBufferBindingSize": 700}, None),
    ("grid", [1, 2, 40, 40], [2, 1, 2, 2], False, {"strides": [2, 2]},
     {"maxComputeWorkgroupsPerDimension": 8}, None),
    ("forced fast variant", [2, 4, 6, 6], [4, 4, 4, 4], True, {"strides": [2, 2], "pads": [1, 1, 1, 1]},
     {"maxStorageBufferBindingSize": 1200}, "nchw2d_phase_gemm_tiled"),
]


@pytest.mark.parametrize("label, x, w, bias, attrs, caps, variant", SPLIT_REQUESTS, ids=[r[0] for r in SPLIT_REQUESTS])
def test_requests_past_lowered_limits_split_and_match(page, label, x, w, bias, attrs, caps, variant):
    out = run_python(page, CHECK + f"""
kernel = {KERNEL.format(extra=", limits=" + repr(caps))}
rng = np.random.default_rng(1)
x = rng.uniform(-1, 1, {x}).astype(np.float32)
w = rng.uniform(-1, 1, {w}).astype(np.float32)
b = rng.uniform(-1, 1, {w[1]} * {attrs.get("group", 1)}).astype(np.float32) if {bias} else None
kernel.device.gpu.largest_buffer = 0
res = await kernel(x=x, w=w, b=b, variant={variant!r}, **{attrs!r})
{{"err": error(res, x, w, b, {attrs!r}), "pieces": res["meta"]["pieces"], "variant": res["meta"]["variant"],
  "largest": kernel.device.gpu.largest_buffer, "limits": kernel.device.caps.limits}}
""")
    assert out["err"] < 1e-3, out
    assert out["pieces"] > 1, out
    for name, cap in caps.items():
        assert out["limits"][name] == cap
        if name != "maxComputeWorkgroupsPerDimension":
            # every buffer bound was within the cap (readback copies of y included)
            assert out["largest"] <= cap, out
    if variant:
        assert out["variant"] == variant


@pytest.mark.parametrize("x, w, attrs, variant", [
    ([2, 20, 5, 6], [20, 1, 4, 4], {"group": 20, "strides": [2, 2], "pads": [1, 1, 1, 1]},
     "nchw2d_grouped_stride_phase"),
    # 3D: vec2 stores. Scalar stores (strides [2, 3, 2], kernel 3x2x3: 36 outputs stored one by one, each
    # guarded) make SwiftShader take 35 s of CPU to compile the looping pipeline, against 0.1 s without the loop
    # and 0.3 s for this one (docs/testing.md).
    ([2, 6, 3, 2, 3], [6, 2, 2, 2, 2], {"group": 3, "strides": [2, 2, 2]}, "ncdhw3d_grouped_stride_phase"),
], ids=["2d", "3d"])
def test_grouped_planes_past_the_grid_limit_loop_in_one_pass(page, x, w, attrs, variant):
    """The grouped kernel's grid runs z over (batch, channel) planes: where they outnumber the device's
    per-dimension limit, each invocation loops over z instead of the request splitting (the grouped kernel is
    forced: the planner may choose another covering variant)."""
    out = run_python(page, CHECK + f"""
kernel = {KERNEL.format(extra=', limits={"maxComputeWorkgroupsPerDimension": 8}')}
rng = np.random.default_rng(2)
x = rng.uniform(-1, 1, {x}).astype(np.float32)
w = rng.uniform(-1, 1, {w}).astype(np.float32)
res = await kernel(x=x, w=w, variant={variant!r}, **{attrs!r})
{{"err": error(res, x, w, None, {attrs!r}), "pieces": res["meta"]["pieces"], "variant": res["meta"]["variant"]}}
""")
    assert out["err"] < 1e-3, out
    assert out["pieces"] == 1 and out["variant"] == variant, out


def test_what_cannot_split_to_fit_is_refused_before_gpu_work(page):
    out = run_python(page, CHECK + f"""
kernel = {KERNEL.format(extra=', limits={"maxStorageBufferBindingSize": 64}')}
before = kernel.device.gpu.executions
try:
    await kernel(x=np.ones((1, 1, 3, 3), np.float32), w=np.ones((1, 1, 5, 5), np.float32))
    text = "accepted"
except app.ConvTransposeError as exc:
    text = str(exc)
{{"text": text, "executions": kernel.device.gpu.executions - before}}
""")
    assert "does not fit this device even split into pieces" in out["text"] and "'w' needs 100 bytes" in out["text"]
    assert out["executions"] == 0


def test_500_calls_with_varying_shapes_leave_gpu_memory_flat(page):
    out = run_python(page, CHECK + f"""
from app.variants import VARIANTS
kernel = {KERNEL.format(extra="")}
rng = np.random.default_rng(500)
before = kernel.device.memory()
worst, variants, peak_cached = 0.0, set(), 0
for i in range(500):
    rank = 1 + i % 3
    c, m, g = int(rng.integers(1, 4)), int(rng.integers(1, 4)), [1, 1, 2][int(rng.integers(0, 3))]
    spatial = [int(rng.integers(1, 6)) for _ in range(rank)]
    x = rng.uniform(-1, 1, [1 + i % 2, c * g] + spatial).astype(np.float32)
    w = rng.uniform(-1, 1, [c * g, m] + [int(rng.integers(1, 4)) for _ in range(rank)]).astype(np.float32)
    attrs = {{"group": g, "strides": [int(rng.integers(1, 4)) for _ in range(rank)]}}
    forced = None
    if i % 5 == 0:  # every covering variant in turn, so the fast ones and the weight cache are exercised too
        geom = validate(x, w, **attrs)[0]
        covering = [n for n, v in sorted(VARIANTS.items()) if v.why_not(geom, kernel.device.caps) is None]
        forced = covering[(i // 5) % len(covering)]
    res = await kernel(x=x, w=w, variant=forced, **attrs)
    variants.add(res["meta"]["variant"])
    worst = max(worst, error(res, x, w, None, attrs))
    mem = kernel.device.memory()
    assert mem["live_bytes"] == mem["cached_bytes"], mem  # nothing but cached launches outlives a call
    peak_cached = max(peak_cached, mem["cached_bytes"])
after = kernel.device.memory()
kernel.device.release_caches()
released = kernel.device.memory()
{{"released": released, "before": before, "after": after, "worst": worst, "variants": sorted(variants), "peak_cached": peak_cached}}
""")
    print("memory before/after 500 calls:", out["before"], out["after"], "variants:", out["variants"])
    assert out["worst"] < 1e-3
    assert out["after"]["live_bytes"] - out["after"]["cached_bytes"] == \
        out["before"]["live_bytes"] - out["before"]["cached_bytes"] == 0
    assert out["after"]["pipelines"] <= out["after"]["pipeline_cache_size"]
    assert out["after"]["launches"] <= out["after"]["launch_cache_size"]
    assert len(out["variants"]) >= 10 and out["peak_cached"] > 0
    assert out["released"]["live_bytes"] == 0 and out["released"]["pipelines"] == 0


def test_pipeline_cache_is_lru_bounded(page):
    """More distinct pipelines than the bound: the cache stays at the bound and recompiles what it dropped."""
    out = run_python(page, f"""
import numpy as np, app
from app import gpu as gpu_module
from app.kernel import ConvTransposeKernel
gpu = await gpu_module.Gpu.open()  # a device of its own: an empty cache
kernel = ConvTransposeKernel(gpu)
gpu.executor.pipelineCacheSize = 3
try:
    sizes = []
    for rank, bias in [(1, False), (1, True), (2, False), (2, True), (1, False)]:
        x, w = np.ones((1, 2) + (3,) * rank, np.float32), np.ones((2, 2) + (2,) * rank, np.float32)
        res = await kernel(x=x, w=w, b=np.ones(2, np.float32) if bias else None,
                           variant=["ncl1d_gather", "nchw2d_gather"][rank - 1])
        sizes.append(gpu.executor.pipelines.size)
finally:
    gpu.device.destroy()
{{"sizes": sizes, "y": res["y"].ravel().tolist()}}
""")
    assert out["sizes"] == [1, 2, 3, 3, 3]
    assert out["y"] == [2.0, 4.0, 4.0, 2.0] * 2


def test_python_calls_awaited_at_once_are_right_and_in_order(page):
    out = run_python(page, CHECK + f"""
import asyncio
kernel = {KERNEL.format(extra="")}
rng = np.random.default_rng(9)
requests = []
for i in range(24):
    rank = 1 + i % 3
    x = rng.uniform(-1, 1, [1, 2 + i % 2] + [3 + i % 4] * rank).astype(np.float32)
    w = rng.uniform(-1, 1, [2 + i % 2, 1 + i % 3] + [2] * rank).astype(np.float32)
    b = rng.uniform(-1, 1, 1 + i % 3).astype(np.float32) if i % 2 else None
    requests.append((x, w, b, {{"strides": [1 + i % 3] * rank}}))
results = await asyncio.gather(*(kernel(x=x, w=w, b=b, **a) for x, w, b, a in requests))
mem = kernel.device.memory()
{{"errors": [error(res, *req) for res, req in zip(results, requests)], "transient": mem["live_bytes"] - mem["cached_bytes"]}}
""")
    assert len(out["errors"]) == 24 and max(out["errors"]) < 1e-3
    assert out["transient"] == 0


def test_js_calls_awaited_at_once_are_right_and_in_order(page):
    rng = np.random.default_rng(4)
    requests = []
    for i in range(16):
        x = rng.uniform(-1, 1, (1, 2, 4 + i % 5, 3)).astype(np.float32)
        w = rng.uniform(-1, 1, (2, 1 + i % 3, 3, 2)).astype(np.float32)
        requests.append((x, w, {"strides": [1 + i % 2, 2], "pads": [i % 2, 0, 0, 1]}))
    outs = page.evaluate(
        """async (requests) => {
            const kernel = await window.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", {version: 1});
            const results = await Promise.all(requests.map(([x, w, attrs]) => kernel({x, w, ...attrs})));
            return results.map(({ y }) => ({ data: Array.from(y.data), shape: y.shape }));
        }""",
        [[{"data": x.ravel().tolist(), "shape": list(x.shape)}, {"data": w.ravel().tolist(), "shape": list(w.shape)},
          attrs] for x, w, attrs in requests])
    for (x, w, attrs), out in zip(requests, outs):
        want = conv_transpose_reference(validate(x, w, **attrs)[0], x, w)
        assert out["shape"] == list(want.shape)
        np.testing.assert_allclose(np.array(out["data"]).reshape(want.shape), want, atol=1e-5, rtol=1e-4)


def test_a_lost_device_fails_the_call_in_flight_and_the_next_call_gets_a_new_device(page):
    out = run_python(page, CHECK + f"""
import asyncio
kernel = {KERNEL.format(extra="")}
rng = np.random.default_rng(2)
x = rng.uniform(-1, 1, (1, 3, 40, 40)).astype(np.float32)
w = rng.uniform(-1, 1, (3, 4, 3, 3)).astype(np.float32)
old = kernel.device.gpu
in_flight = asyncio.ensure_future(kernel(x=x, w=w, strides=[2, 2]))
await asyncio.sleep(0)  # the call runs to its first wait on the GPU (after the submit), then the loss
old.device.destroy()
try:
    await asyncio.wait_for(in_flight, 60)
    flight = "completed"
except app.GpuError as exc:
    flight = "GpuError: " + str(exc)
except asyncio.TimeoutError:
    flight = "hang"
await asyncio.sleep(0.2)  # device.lost resolves asynchronously
lost = old.lost_reason
res = await kernel(x=x, w=w, strides=[2, 2])
{{"flight": flight, "lost": lost, "new_device": kernel.device.gpu is not old, "err": error(res, x, w, None, {{"strides": [2, 2]}}),
  "shared": (await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)).device.gpu is kernel.device.gpu}}
""")
    print("in-flight call at the loss:", out["flight"])
    assert out["flight"] != "hang"
    assert out["flight"].startswith("GpuError") and "device was lost" in out["flight"], out
    assert out["lost"] and "destroyed" in out["lost"]
    assert out["new_device"] and out["shared"] and out["err"] < 1e-3


def test_a_call_on_a_lost_device_is_a_clear_error_not_a_hang(page):
    """The raw GPU layer (no handle to reopen): a plan run on a destroyed device raises GpuError."""
    out = run_python(page, """
import asyncio, numpy as np, app
from app.gpu import Gpu
from app.kernel import validate
from app.planner import plan
gpu = await Gpu.open()
geom, arrays = validate(np.ones((1, 1, 4), np.float32), np.ones((1, 1, 2), np.float32))
p = plan(geom, gpu.caps)
gpu.device.destroy()
await asyncio.sleep(0.2)
try:
    await asyncio.wait_for(gpu.execute(p, geom, arrays), 60)
    text = "ran"
except app.GpuError as exc:
    text = str(exc)
except asyncio.TimeoutError:
    text = "hang"
text
""")
    assert "lost" in out and "destroyed" in out


def test_a_broken_shader_is_a_gpu_error_naming_the_variant(page):
    out = run_python(page, """
import numpy as np, app
from dataclasses import replace
from app.kernel import validate
from app.plan import Plan
from app.render import TEMPLATES
kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
geom, arrays = validate(np.ones((1, 1, 4), np.float32), np.ones((1, 1, 2), np.float32))
good = kernel.plan(geom)
(TEMPLATES / "_broken-for-test.wgsl.jinja").write_text("@compute @workgroup_size(1) fn main() { let x: f32 = nope; }")
broken = Plan(tuple(replace(d, template="_broken-for-test.wgsl.jinja") for d in good.dispatches),
              variant="broken_test_variant", reason="test")
try:
    await kernel.device.execute(broken, geom, arrays)
    text = "compiled"
except app.GpuError as exc:
    text = str(exc)
finally:
    (TEMPLATES / "_broken-for-test.wgsl.jinja").unlink()
after = await kernel(x=np.ones((1, 1, 4), np.float32), w=np.ones((1, 1, 2), np.float32))
{"text": text, "after": after["y"].ravel().tolist(), "live": kernel.device.memory()}
""")
    assert "variant broken_test_variant" in out["text"] and "nope" in out["text"], out
    assert out["after"] == [1.0, 2.0, 2.0, 2.0, 1.0]


def test_a_validation_error_is_a_gpu_error_naming_the_variant(page):
    """A plan whose binding count disagrees with its shader: WebGPU validation, surfaced as GpuError."""
    out = run_python(page, """
import numpy as np, app
from dataclasses import replace
from app.kernel import validate
from app.plan import Plan
kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
geom, arrays = validate(np.ones((1, 1, 4), np.float32), np.ones((1, 1, 2), np.float32))
good = kernel.plan(geom)
d = good.dispatches[0]
bad = Plan((replace(d, bindings=("y", "w", "y")),), variant="misbound_test_variant", reason="test")
before = kernel.device.memory()
try:
    await kernel.device.execute(bad, geom, arrays)
    text = "ran"
except app.GpuError as exc:
    text = str(exc)
{"text": text, "before": before, "after": kernel.device.memory()}
""")
    assert "variant misbound_test_variant" in out["text"] and "Validation" in out["text"], out
    assert out["before"]["live_bytes"] == out["after"]["live_bytes"]


NONFINITE_REQUESTS = [
    ([1, 4, 5], [4, 3, 3], {"strides": [2], "pads": [1, 0]}),
    ([2, 8, 4, 4], [8, 4, 3, 3], {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 0]}),
    ([1, 8, 4, 4], [8, 2, 4, 4], {"group": 4, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ([1, 16, 3, 3], [16, 16, 1, 1], {}),
    ([1, 16, 4, 4], [16, 8, 3, 3], {"pads": [1, 1, 1, 1]}),
    ([1, 32, 3, 3, 2], [32, 2, 2, 2, 2], {"strides": [2, 2, 1]}),
    ([1, 8, 3, 3, 3], [8, 8, 3, 3, 3], {"pads": [1, 0, 1, 1, 0, 1]}),
]


@pytest.mark.parametrize("x_shape, w_shape, attrs", NONFINITE_REQUESTS)
def test_nan_and_inf_propagate_as_ieee_says_in_every_variant(page, x_shape, w_shape, attrs):
    """NaN and +-Inf in x and w reach exactly the outputs they reach in the float64 reference (Inf*0 and
    Inf-Inf are NaN there too), under the planner's choice and every covering variant forced."""
    out = run_python(page, CHECK + f"""
from app.cases import compare
from app.variants import VARIANTS
kernel = {KERNEL.format(extra="")}
rng = np.random.default_rng(13)
x = rng.uniform(-1, 1, {x_shape}).astype(np.float32)
w = rng.uniform(-1, 1, {w_shape}).astype(np.float32)
b = rng.uniform(-1, 1, {w_shape[1]} * {attrs.get("group", 1)}).astype(np.float32)
flat = x.reshape(-1)
flat[rng.choice(flat.size, 3, replace=False)] = [np.nan, np.inf, -np.inf]
w.reshape(-1)[rng.choice(w.size, 2, replace=False)] = [np.inf, -np.inf]
geom = validate(x, w, b, **{attrs!r})[0]
assert not geom.finite_data
want = conv_transpose_reference(geom, x, w, b)
results, refused = {{}}, {{}}
for name, v in sorted(VARIANTS.items()):
    if v.why_not(geom, kernel.device.caps) is None:
        res = await kernel(x=x, w=w, b=b, variant=name, **{attrs!r})
        results[name] = compare(res["y"], want, 1e-4, 1e-4)[0]
    elif v.why_not(validate(np.nan_to_num(x), np.nan_to_num(w), b, **{attrs!r})[0], kernel.device.caps) is None:
        try:  # covers the same request with finite data: forcing it now is a clear refusal
            await kernel(x=x, w=w, b=b, variant=name, **{attrs!r})
            refused[name] = "ran"
        except app.ConvTransposeError as exc:
            refused[name] = str(exc)
chosen = await kernel(x=x, w=w, b=b, **{attrs!r})
results["planner: " + chosen["meta"]["variant"]] = compare(chosen["y"], want, 1e-4, 1e-4)[0]
{{"results": results, "refused": refused, "nan": int(np.isnan(want).sum()), "inf": int(np.isinf(want).sum()),
  "size": int(want.size)}}
""")
    assert 0 < out["nan"] < out["size"]  # the test reaches both kinds of output
    assert len(out["results"]) >= 2 and all(out["results"].values()), out
    assert all("finite" in text for text in out["refused"].values()), out
    print("exact:", sorted(out["results"]), "refused for non-finite data:", sorted(out["refused"]))
