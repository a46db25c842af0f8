"""The weight cache of a kernel object (web/runtime/weight-cache.mjs): constant arrays and weight GPUBuffers keep
their GPU copy and prepared layouts by identity, however many layers share a signature; bounded by bytes,
least recently used out first; forget() drops one entry; plain arrays are written on every call. Bytes are
counted by the executor (kernel.memory())."""
import numpy as np
import pytest

from app.kernel import validate
from app.planner import candidates
from app.reference import conv_transpose_reference
from app.variants import VARIANTS
from tools.wgsl.credited import CHROMIUM_SWIFTSHADER

from .browser_session import run_python

pytestmark = pytest.mark.browser

ATTRS = {"strides": [2, 2], "pads": [1, 1, 1, 1]}
X_SHAPE, W_SHAPE = (1, 16, 4, 4), (16, 8, 3, 3)
X_BYTES, W_BYTES, B_BYTES = 4 * 256, 4 * 16 * 8 * 9, 4 * 8

# Two layers of one signature (x [1,16,4,4], w [16,8,3,3], b [8]). On nchw2d_col2im a weight-side pass packs
# w, so a layer's cached entries are w's packed layout and b's copy; nchw2d_phase_gemm_tiled binds w as it is,
# so they are w's copy and b's. Both are forced: which covering variant the planner takes is its cost model's.
SETUP = """
const ID = "webgpu-kernels/ai.onnx.ConvTranspose";
const rand = (n, seed) => { let s = seed; return Float32Array.from({length: n}, () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1); };
const shape = [1, 16, 4, 4], wShape = [16, 8, 3, 3], attrs = {strides: [2, 2], pads: [1, 1, 1, 1]};
const x = rand(256, 1), wA = rand(16 * 8 * 9, 2), wB = rand(16 * 8 * 9, 3), bA = rand(8, 4), bB = rand(8, 5);
const PACKED = "nchw2d_col2im", DIRECT = "nchw2d_phase_gemm_tiled";
const constant = (w, b, variant = PACKED) => ({x: {data: x, shape}, w: {data: w, shape: wShape, constant: true},
                                              b: {data: b, shape: [8], constant: true}, ...attrs, variant});
const COUNTERS = ["bytes_written", "weight_bytes_written", "weight_preparations", "weight_cache_hits",
                  "weight_cache_misses", "weight_cache_evictions"];
// one call, with what it changed in the counters and what the cache holds after it
const counted = async (kernel, inputs, options) => {
  const before = kernel.memory();
  const out = await kernel(inputs, options);
  const after = kernel.memory();
  const row = Object.fromEntries(COUNTERS.map((k) => [k, after[k] - before[k]]));
  row.entries = after.weight_cache_entries; row.cached = after.weight_cache_bytes; row.variant = out.meta.variant;
  row.y = out.y.data ? Array.from(out.y.data) : null;
  if (out.y.dispose) out.y.dispose();
  return row;
};
"""


def js(page, body: str):
    """Runs body after SETUP; returns its result with SETUP's data (as it was at the start) under "data"."""
    return page.evaluate(f"""async () => {{ {SETUP}
        const data = Object.fromEntries(Object.entries({{x, wA, wB, bA, bB}}).map(([k, v]) => [k, Array.from(v)]));
        return {{...(await (async () => {{ {body} }})()), data}}; }}""")


X, LAYERS = None, {}


def unpack(out):
    """SETUP's x and the two layers' (w, b), as numpy arrays, from js()'s result."""
    global X
    d = {k: np.array(v, np.float32) for k, v in out["data"].items()}
    X = d["x"].reshape(X_SHAPE)
    LAYERS.update(A=(d["wA"].reshape(W_SHAPE), d["bA"]), B=(d["wB"].reshape(W_SHAPE), d["bB"]))
    return out


def check(y, layer: str, w=None, bias=True):
    w0, b = LAYERS[layer]
    w, b = (w0 if w is None else w), (b if bias else None)
    want = conv_transpose_reference(validate(X, w, b, **ATTRS)[0], X, w, b)
    np.testing.assert_allclose(np.array(y).reshape(want.shape), want, atol=1e-4, rtol=1e-4)


def test_two_layers_of_one_signature_write_and_prepare_their_weights_once(page):
    out = unpack(js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        const rows = [], direct = [];
        for (let i = 0; i < 6; i++) rows.push(await counted(kernel, i % 2 ? constant(wB, bB) : constant(wA, bA)));
        for (let i = 0; i < 4; i++) direct.push(await counted(kernel, i % 2 ? constant(wB, bB, DIRECT) : constant(wA, bA, DIRECT)));
        // GPU-resident x and y: the repeat calls write nothing at all
        const xGpu = kernel.upload({data: x, shape});
        const resident = [];
        for (let i = 0; i < 4; i++) {
          const layer = i % 2 ? constant(wB, bB) : constant(wA, bA);
          resident.push(await counted(kernel, {...layer, x: xGpu}, {output: "gpu"}));
        }
        xGpu.buffer.destroy();
        return {rows, direct, resident, memory: kernel.memory()};
    """))
    rows, direct = out["rows"], out["direct"]
    assert {r["variant"] for r in rows} == {"nchw2d_col2im"}
    assert {r["variant"] for r in direct} == {"nchw2d_phase_gemm_tiled"}
    for i, row in enumerate(rows):
        check(row["y"], "AB"[i % 2])
        assert row["bytes_written"] == X_BYTES + (W_BYTES + B_BYTES if i < 2 else 0), (i, row)
        assert row["weight_bytes_written"] == (W_BYTES + B_BYTES if i < 2 else 0), (i, row)
        assert row["weight_preparations"] == (1 if i < 2 else 0), (i, row)
        # each layer: w's packed layout and b's copy, two lookups a call
        assert (row["weight_cache_misses"], row["weight_cache_hits"]) == ((2, 0) if i < 2 else (0, 2)), (i, row)
    assert rows[-1]["entries"] == 4
    for i, row in enumerate(direct):  # the same arrays on another plan: w's own copy joins its entry, b's is shared
        check(row["y"], "AB"[i % 2])
        assert row["weight_bytes_written"] == (W_BYTES if i < 2 else 0), (i, row)
        assert row["weight_preparations"] == 0 and row["entries"] == 4, (i, row)
    for row in out["resident"]:
        assert row["bytes_written"] == 0 and row["weight_preparations"] == 0 and row["weight_cache_hits"] == 2, row
    mem = out["memory"]
    assert mem["weight_cache_limit"] == 512 * 1024 * 1024 and mem["weight_cache_evictions"] == 0
    # b's copies, then w's for the direct variant (col2im keeps w only as its packed layout)
    assert mem["weight_cache_bytes_written"] == 2 * B_BYTES + 2 * W_BYTES
    assert mem["weight_cache_bytes"] >= 4 * W_BYTES  # two packed layouts, two copies of w (padded), two biases
    assert mem["cached_bytes"] >= mem["weight_cache_bytes"] and mem["live_bytes"] >= mem["cached_bytes"]


def test_the_byte_bound_evicts_the_least_recently_used_and_uploads_again_correctly(page):
    out = unpack(js(page, """
        const probe = await window.getKernel(ID, {version: 1});
        await probe(constant(wA, bA));
        const layer = probe.memory().weight_cache_bytes;  // one layer's entries
        const kernel = await window.getKernel(ID, {version: 1, weightCacheBytes: Math.floor(layer * 1.5)});
        const rows = [];
        for (let i = 0; i < 5; i++) rows.push(await counted(kernel, i % 2 ? constant(wB, bB) : constant(wA, bA)));
        const none = await window.getKernel(ID, {version: 1, weightCacheBytes: 0});
        const uncached = [];
        for (let i = 0; i < 3; i++) uncached.push(await counted(none, constant(wA, bA)));
        const bad = await window.getKernel(ID, {version: 1, weightCacheBytes: -1}).then(() => null, (e) => ({name: e.name, field: e.field}));
        return {layer, limit: kernel.memory().weight_cache_limit, rows, uncached, bad};
    """))
    assert out["limit"] == int(out["layer"] * 1.5)
    for i, row in enumerate(out["rows"]):
        check(row["y"], "AB"[i % 2])
        # room for one layer and a half: each call evicts the least recently used entry, the other layer's
        # packed w, and packs its own again from w written anew; both biases (32 bytes) fit beside
        assert row["weight_preparations"] == 1 and row["cached"] <= out["limit"], (i, row)
        assert row["weight_bytes_written"] == W_BYTES + (B_BYTES if i < 2 else 0), (i, row)
        assert (row["weight_cache_evictions"], row["entries"]) == ((0, 2) if i == 0 else (1, 3)), (i, row)
    for row in out["uncached"]:  # a bound of 0 keeps nothing: constant arrays are written as plain ones
        check(row["y"], "A")
        assert row["weight_bytes_written"] == W_BYTES + B_BYTES and row["entries"] == 0, row
    assert out["bad"] == {"name": "ConvTransposeError", "field": "weightCacheBytes"}


def test_a_kernel_alone_on_its_device_evicts_its_own_least_recently_used_layer(page):
    # On the caller's own device the kernel's cache is the only one: its bound is the device's. Before, the
    # bound was kept by pushing out other kernels' entries only: the first two layers stayed, the third was
    # written and packed again on every call, and no eviction was counted.
    out = unpack(js(page, """
        const probe = await window.getKernel(ID, {version: 1});
        await probe(constant(wA, bA));
        const layer = probe.memory().weight_cache_bytes;
        const device = await (await navigator.gpu.requestAdapter()).requestDevice();
        const kernel = await window.getKernel(ID, {version: 1, device, weightCacheBytes: 2 * layer});
        const wC = rand(16 * 8 * 9, 6), bC = rand(8, 7);
        const layers = {A: () => constant(wA, bA), B: () => constant(wB, bB), C: () => constant(wC, bC)};
        const rows = [];
        for (const name of "ABCABCABACAB") rows.push({name, ...(await counted(kernel, layers[name]()))});
        const memory = kernel.memory();
        device.destroy();
        return {layer, rows, memory, wC: Array.from(wC), bC: Array.from(bC)};
    """))
    LAYERS["C"] = (np.array(out["wC"], np.float32).reshape(W_SHAPE), np.array(out["bC"], np.float32))
    rows = out["rows"]
    for row in rows:
        check(row["y"], row["name"])
        assert row["cached"] <= 2 * out["layer"] and row["entries"] <= 4, row
    # (misses, hits, evictions) per call: room for two of the three layers, the least recently used goes
    miss, hit, evict = (2, 0, 0), (0, 2, 0), (2, 0, 2)
    got = [(r["weight_cache_misses"], r["weight_cache_hits"], r["weight_cache_evictions"]) for r in rows]
    # A B C A B C in turn: each call after the bound a miss that makes room; then A B A C: C pushes out B, the
    # layer used less recently than A, so A hits after it; B then pushes out C
    assert got == [miss, miss] + [evict] * 6 + [hit, evict, hit, evict], got
    assert [r["weight_preparations"] for r in rows] == [1 if g != hit else 0 for g in got]
    assert out["memory"]["weight_cache_evictions"] == 16 and out["memory"]["weight_cache_device_limit"] == 2 * out["layer"]


def test_forget_drops_one_entry_and_plain_arrays_are_written_every_call(page):
    out = unpack(js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        await kernel(constant(wA, bA));
        await kernel(constant(wB, bB));
        const held = kernel.memory().weight_cache_entries;
        wA[0] += 1;  // changed in place: seen after forget, as a new entry
        const dropped = kernel.forget(wA);
        const afterForget = kernel.memory().weight_cache_entries;
        const again = await counted(kernel, constant(wA, bA));
        const unknown = kernel.forget(new Float32Array(4));
        const plain = [];
        for (let i = 0; i < 2; i++) {
          plain.push(await counted(kernel, {x: {data: x, shape}, w: {data: wB, shape: wShape}, b: {data: bB, shape: [8]}, ...attrs,
                                            variant: PACKED}));
          wB[1] += 1;  // a plain array changed in place is seen by the next call
        }
        return {held, dropped, afterForget, again, unknown, plain};
    """))
    assert out["held"] == 4 and out["dropped"] is True and out["afterForget"] == 3 and out["unknown"] is False
    again = out["again"]
    w_a = LAYERS["A"][0].copy()
    w_a.flat[0] += np.float32(1)
    check(again["y"], "A", w_a)
    # w packed again from w written anew (the packed layout alone is kept, not w), b still cached
    assert again["weight_bytes_written"] == W_BYTES and again["weight_preparations"] == 1
    assert again["entries"] == 4
    w_b = LAYERS["B"][0].copy()
    for row in out["plain"]:
        check(row["y"], "B", w_b)
        w_b.flat[1] += np.float32(1)
        assert row["weight_bytes_written"] == W_BYTES + B_BYTES and row["weight_preparations"] == 1, row
        assert row["entries"] == 4 and row["weight_cache_hits"] == row["weight_cache_misses"] == 0, row


def test_gpu_buffer_weights_keep_their_prepared_layouts_per_buffer(page):
    out = unpack(js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        const gA = kernel.upload({data: wA, shape: wShape}), gB = kernel.upload({data: wB, shape: wShape});
        const rows = [];
        for (let i = 0; i < 4; i++) {
          const w = i % 2 ? gB : gA, b = i % 2 ? bB : bA;
          rows.push(await counted(kernel, {x: {data: x, shape}, w, b: {data: b, shape: [8], constant: true}, ...attrs,
                                         variant: PACKED}));
        }
        const held = kernel.memory().weight_cache_entries;
        kernel.forget(gA);
        rows.push(await counted(kernel, {x: {data: x, shape}, w: gA, b: {data: bA, shape: [8], constant: true}, ...attrs,
                                         variant: PACKED}));
        gA.buffer.destroy(); gB.buffer.destroy();
        return {rows, held};
    """))
    for i, row in enumerate(out["rows"]):
        check(row["y"], "AB"[i % 2])
    assert [r["weight_preparations"] for r in out["rows"]] == [1, 1, 0, 0, 1]
    assert [r["weight_bytes_written"] for r in out["rows"]] == [B_BYTES, B_BYTES, 0, 0, 0]
    assert out["held"] == 4


def test_a_constant_arrays_finite_status_follows_its_identity(page):
    # Constant arrays are scanned once on the CPU (not on the GPU every call): Inf in a constant w leaves the
    # planner only exact variants, refuses a finite-only one forced (again on the repeat: the scan is kept per
    # array), and a fix in place is seen after forget.
    out = unpack(js(page, """
        const kernel = await window.getKernel(ID, {version: 1});
        const w = wA.slice(); w[5] = Infinity;
        const layer = (variant) => ({x: {data: x, shape}, w: {data: w, shape: wShape, constant: true}, ...attrs, variant});
        const refusal = (variant) => kernel(layer(variant)).then(() => "ran", (e) => `${e.name}: ${e.message}`);
        const inf = await kernel(layer(null));
        const refused = [await refusal(DIRECT), await refusal(DIRECT)];
        const infAgain = await kernel(layer(null));
        w[5] = wA[5];
        kernel.forget(w);
        const fixed = await kernel(layer(DIRECT));
        return {variants: [inf.meta.variant, infAgain.meta.variant, fixed.meta.variant], refused,
                y: Array.from(fixed.y.data)};
    """))
    w = LAYERS["A"][0].copy()
    w.reshape(-1)[5] = np.inf
    nonfinite = validate(X, w, None, **ATTRS)[0]
    exact = {c.variant for c, _ in candidates(nonfinite, CHROMIUM_SWIFTSHADER)}
    assert "nchw2d_phase_gemm_tiled" not in exact
    chosen = out["variants"][0]
    assert out["variants"][1] == chosen and (chosen in exact or VARIANTS[chosen].tuned_as in exact), out["variants"]
    assert all(r.startswith("ConvTransposeError") and "finite" in r for r in out["refused"]), out["refused"]
    assert out["variants"][2] == "nchw2d_phase_gemm_tiled"
    check(out["y"], "A", bias=False)


def test_python_memory_reports_the_weight_cache_and_forget_drops_a_buffer(page):
    out = run_python(page, """
import numpy as np, app
kernel = await app.get_kernel("webgpu-kernels/ai.onnx.ConvTranspose", version=1)
rng = np.random.default_rng(3)
x = rng.standard_normal((1, 16, 4, 4)).astype(np.float32)
g = await kernel.upload(rng.standard_normal((16, 8, 3, 3)).astype(np.float32))
start = kernel.device.memory()
for _ in range(3):
    await kernel(x=x, w=g, strides=[2, 2], pads=[1, 1, 1, 1], variant="nchw2d_col2im")
held = kernel.device.memory()
kernel.forget(g)
after = kernel.device.memory()
g.buffer.destroy()
{"start": start, "held": held, "after": after}
""")
    start, held, after = out["start"], out["held"], out["after"]
    assert held["weight_cache_entries"] == start["weight_cache_entries"] + 1
    assert held["weight_preparations"] - start["weight_preparations"] == 1
    assert held["weight_cache_hits"] - start["weight_cache_hits"] == 2
    assert after["weight_cache_entries"] == start["weight_cache_entries"]
    assert after["weight_cache_bytes"] == start["weight_cache_bytes"] < held["weight_cache_bytes"]
    # numpy x is written every call; the GPU weights never are
    assert held["bytes_written"] - start["bytes_written"] == 3 * X_BYTES
    assert held["weight_bytes_written"] == start["weight_bytes_written"]


def test_the_pages_copy_as_code_marks_the_weights_constant(page):
    code = page.evaluate("""async () => {
        const { jsSnippet } = await import("/web/views/snippets.mjs");
        return jsSnippet({shapes: {x: [1, 2, 3], w: [2, 2, 3], b: [2]}, attrs: {strides: [2]}, variant: null,
                          source: "random", seed: 0, pasted: {}, files: {}});
    }""")
    assert "x: { data: xData, shape: [1, 2, 3] }," in code
    assert "w: { data: wData, shape: [2, 2, 3], constant: true }," in code
    assert "b: { data: bData, shape: [2], constant: true }," in code
    assert "uploaded and prepared once" in code and "kernel.forget(wData)" in code


def test_constants_given_as_numbers_are_converted_once_and_hit_by_their_source(page):
    # adapt: false: an adaptation candidate's first call writes its own weight layout (a miss that is not a conversion)
    out = unpack(js(page, """
        const kernel = await window.getKernel(ID, {version: 1, adapt: false});
        const wList = Array.from(wA), bList = Array.from(bA);
        const asList = () => ({x: {data: x, shape}, w: {data: wList, shape: wShape, constant: true},
                               b: {data: bList, shape: [8], constant: true}, ...attrs});
        const rows = [];
        for (let i = 0; i < 20; i++) rows.push(await counted(kernel, asList()));
        const f64 = await kernel({...asList(), w: {data: new Float64Array(wA), shape: wShape, constant: true}})
          .then(() => null, (e) => ({name: e.name, field: e.field, message: e.message}));
        const i32 = await kernel({...asList(), x: {data: new Int32Array(256), shape}})
          .then(() => null, (e) => ({name: e.name, field: e.field, message: e.message}));
        const f16bits = await kernel({...asList(), x: {data: new Uint16Array(256), shape}})
          .then(() => null, (e) => ({name: e.name, field: e.field}));
        const forgot = kernel.forget(wList);
        const after = await counted(kernel, asList());
        return {rows, f64, i32, f16bits, forgot, after};
    """))
    rows = out["rows"]
    for row in rows:
        check(row["y"], "A")
    assert rows[0]["weight_cache_misses"] >= 1
    # 20 calls: one entry per input, every call after the first a hit (a new converted copy each call missed)
    assert all(r["weight_cache_misses"] == 0 and r["weight_cache_hits"] >= 1 and r["weight_bytes_written"] == 0
               for r in rows[1:]), rows[1:]
    assert rows[-1]["entries"] == rows[0]["entries"]
    # the dtype rule of app/tensors.py: a typed array carries its dtype, never converted silently
    for refused, kind, field in ((out["f64"], "Float64Array", "w"), (out["i32"], "Int32Array", "x")):
        assert refused["name"] == "ConvTransposeError" and refused["field"] == field and kind in refused["message"]
    assert out["f16bits"]["field"] == "x"  # Uint16Array is float16's bits: not float32 data
    assert out["forgot"] is True and out["after"]["weight_bytes_written"] == W_BYTES
    check(out["after"]["y"], "A")


def test_non_finite_or_negative_bounds_are_refused(page):
    out = page.evaluate("""async () => {
        const ID = "webgpu-kernels/ai.onnx.ConvTranspose";
        const bad = [];
        for (const v of [Infinity, -Infinity, NaN, -1, "1", null]) {
          bad.push(await window.getKernel(ID, {version: 1, weightCacheBytes: v}).then(() => null, (e) => ({name: e.name, field: e.field})));
        }
        return bad;
    }""")
    assert out == [{"name": "ConvTransposeError", "field": "weightCacheBytes"}] * 6
