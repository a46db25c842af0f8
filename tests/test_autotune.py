"""Autotuning on first use (app/autotune.py): the candidates the cost model ranks first across variants, the stored choice's checks
(CPython), and the whole path in the page: getKernel({autotune}) times the candidates on a signature's first
call, remembers the fastest in IndexedDB or the caller's store, and a stale or broken stored choice is ignored
with a warning (SwiftShader)."""
import json
import warnings

import numpy as np
import pytest

from app import autotune, planner, tuning_tables
from app.kernel import validate
from app.reference import conv_transpose_reference
from app.shapes import infer
from tests.async_helper import run_coroutine
from tools.wgsl.matrix import devices

KERNEL_ID = "webgpu-kernels/ai.onnx.ConvTranspose"
DEVICES = devices()
DCGAN = infer([1, 4, 8, 8], [4, 4, 3, 3], None, {"strides": [2, 2]}, {"x": "float32", "w": "float32"})
PROJ = infer([1, 512, 128, 128], [512, 256, 1, 1], None, {}, {"x": "float16", "w": "float16"})


@pytest.mark.parametrize("device, geom", [("swiftshader", DCGAN), ("h200", PROJ), ("h200", DCGAN)])
def test_nominees_are_the_best_predicted_candidates_across_variants(device, geom):
    caps = DEVICES[device]
    found = autotune.nominees(geom, caps)
    ranked = planner.ranked(geom, caps, grid=autotune.GRID_PER_VARIANT)
    assert found == [(c.variant, c.params) for c, _, _ in ranked[:autotune.MAX_NOMINEES]]
    assert [ms for _, _, ms in ranked] == sorted(ms for _, _, ms in ranked)
    assert len({v for v, _ in found}) >= 2, "the search spans variants, not the tiles of one"
    assert 2 <= len(found) <= autotune.MAX_NOMINEES and len({json.dumps(n, sort_keys=True) for n in found}) == len(found)
    for variant, params in found:  # each a plan the planner makes when forced: a tested variant, exact
        assert planner.plan(geom, caps, variant, params).variant == variant


def test_candidates_with_grid_entries_take_the_tables_measured_params_the_variant_accepts():
    caps = DEVICES["h200"]
    grid = [(c, p) for c, p in planner.candidates(PROJ, caps, grid=2) if c.origin == "grid"]
    assert grid, "the H200 table's measured tiles give a tunable variant extra candidates"
    for candidate, got in grid:
        assert planner.VARIANTS[candidate.variant].tunable.refusal(candidate.params, PROJ, caps) is None
        assert got.tiles == candidate.params


def _entry(**changes):
    caps = DEVICES["swiftshader"]
    return json.dumps({"format": autotune.FORMAT, "variant": "nchw2d_gather", "params": None,
                       "adapter": tuning_tables.adapter_key(caps), "revision": "r1"} | changes)


@pytest.mark.parametrize("text, warning", [
    ("{not json", "unreadable"),
    (json.dumps({"variant": 3}), "unreadable"),
    (_entry(revision="r0"), "another adapter or package revision"),
    (_entry(adapter={"vendor": "nvidia"}), "another adapter or package revision"),
    (_entry(variant="ncdhw3d_gather"), "no longer covers"),
    (_entry(variant="nchw2d_phase_gemm_tiled", params={"tile_m": 7}), "no longer covers"),
])
def test_a_stale_or_broken_stored_choice_is_ignored_with_a_warning(text, warning):
    with pytest.warns(UserWarning, match=warning):
        assert autotune.stored_choice(text, DCGAN, DEVICES["swiftshader"], "r1", None) is None


def test_a_valid_stored_choice_is_taken_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        choice = autotune.stored_choice(_entry(), DCGAN, DEVICES["swiftshader"], "r1", None)
    assert (choice.variant, choice.params, choice.source) == ("nchw2d_gather", None, "store")
    assert autotune.stored_choice(None, DCGAN, DEVICES["swiftshader"], "r1", None) is None


@pytest.mark.parametrize("device, kernels", [("swiftshader", {"col2im_gemm_vec4", "ncl1d_col2im"}),
                                             ("h200", {"phase_gemm"})])
def test_every_nominee_s_stored_entry_is_read_back_as_the_stored_choice(device, kernels):
    """What autotune writes for any candidate it may pick, a later kernel takes silently and plans the same tiles
    with. A candidate carries its plan's tiles: `col2im_gemm_vec4`'s with the splits it runs, `ncl1d_col2im`'s (no
    Tunable) with its fixed tiles, `phase_gemm`'s with switches its defaults leave unnamed; stored as they were, the
    first two read back as not the variant's params and every later kernel searched again."""
    caps = DEVICES[device]
    layers = [((1, 8, 6, 6), (8, 8, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
              ((1, 64, 8, 8), (64, 8, 2, 2), {"strides": [2, 2]}), ((2, 32, 16), (32, 16, 4), {"strides": [2]})]
    seen = set()
    for x, w, attrs in layers:
        geom = infer(x, w, None, attrs, {"x": "float32", "w": "float32"})
        for variant, params in autotune.nominees(geom, caps, None):
            text = autotune.entry_text(autotune.Choice(variant, params, "search"), geom, caps, "r1")
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                choice = autotune.stored_choice(text, geom, caps, "r1", None)
            assert (choice.variant, choice.source) == (variant, "store"), text
            assert planner.plan(geom, caps, variant, choice.params).tiles == (params or {}), text
            seen.add(variant)
    assert kernels <= seen, seen


def test_the_key_names_the_geometry_that_decides_a_plan():
    other = infer([1, 4, 8, 8], [4, 4, 3, 3], None, {"strides": [2, 2], "pads": [1, 1, 1, 1]},
                  {"x": "float32", "w": "float32"})
    assert autotune.key(DCGAN) == autotune.key(infer([1, 4, 8, 8], [4, 4, 3, 3], None, {"strides": [2, 2]},
                                                      {"x": "float32", "w": "float32"}))
    assert autotune.key(DCGAN) != autotune.key(other)


def test_memory_store_round_trip():
    store = autotune.MemoryStore()
    run_coroutine(store.set("k", "v"))
    assert run_coroutine(store.get("k")) == "v" and run_coroutine(store.get("other")) is None


CALL = """async ([x, w, attrs, storeItems, budgetMs]) => {
    const items = new Map(Object.entries(storeItems ?? {}));
    const store = storeItems === null ? undefined
        : { async get(k) { return items.get(k) ?? null; }, async set(k, v) { items.set(k, v); } };
    const warned = [];
    const warn = console.warn;
    const kernel = await window.getKernel("webgpu-kernels/ai.onnx.ConvTranspose",
                                          {version: 1, autotune: store ? {store, budgetMs} : true});
    const inputs = {x: {data: new Float32Array(x.data), shape: x.shape}, w: {data: new Float32Array(w.data), shape: w.shape}, ...attrs};
    const t0 = performance.now();
    const first = await kernel(inputs);
    const firstMs = performance.now() - t0;
    const again = await kernel(inputs);
    return { y: Array.from(first.y.data), shape: first.y.shape, meta: first.meta, again: again.meta, firstMs,
             items: Object.fromEntries(items) };
}"""


def _call(page, x, w, attrs, items=None, budget_ms=None):
    return page.evaluate(CALL, [{"data": x.ravel().tolist(), "shape": list(x.shape)},
                                {"data": w.ravel().tolist(), "shape": list(w.shape)}, attrs, items, budget_ms])


@pytest.mark.browser
def test_first_call_times_the_candidates_keeps_the_fastest_and_stores_it(page):
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (1, 8, 6, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, (8, 8, 3, 3)).astype(np.float32)
    attrs = {"strides": [2, 2], "pads": [1, 1, 1, 1]}
    out = _call(page, x, w, attrs, items={}, budget_ms=5000)
    want = conv_transpose_reference(validate(x, w, **attrs)[0], x, w)
    np.testing.assert_allclose(np.array(out["y"]).reshape(want.shape), want, atol=1e-5, rtol=1e-4)
    assert "autotuned on this adapter: the fastest of" in out["meta"]["reason"], out["meta"]
    assert out["again"]["variant"] == out["meta"]["variant"]
    [(key, text)] = out["items"].items()
    stored = json.loads(text)
    assert stored["variant"] == out["meta"]["variant"] and len(stored["times"]) >= 2
    assert min(stored["times"], key=lambda t: t["ms"])["variant"] == stored["variant"]
    # A second kernel with the same store takes the stored choice without searching.
    again = _call(page, x, w, attrs, items=out["items"], budget_ms=5000)
    assert "stored choice" in again["meta"]["reason"] and again["meta"]["variant"] == stored["variant"]
    np.testing.assert_allclose(np.array(again["y"]).reshape(want.shape), want, atol=1e-5, rtol=1e-4)
    # A broken entry is ignored (Python warns), the search runs again and overwrites it.
    broken = _call(page, x, w, attrs, items={key: "{broken"}, budget_ms=5000)
    assert "the fastest of" in broken["meta"]["reason"] and json.loads(broken["items"][key])["variant"]


@pytest.mark.browser
def test_budget_bounds_the_search_and_indexeddb_is_the_default_store(page):
    rng = np.random.default_rng(12)
    x = rng.uniform(-1, 1, (1, 4, 5, 5)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 4, 4, 4)).astype(np.float32)
    attrs = {"strides": [2, 2]}
    tight = _call(page, x, w, attrs, items={}, budget_ms=0)  # only the rules' choice is timed
    assert json.loads(next(iter(tight["items"].values())))["times"].__len__() == 1
    default = _call(page, x, w, attrs)  # the default store: IndexedDB
    assert "autotuned on this adapter" in default["meta"]["reason"]
    remembered = _call(page, x, w, attrs)  # a new kernel: IndexedDB remembers the choice
    assert "stored choice" in remembered["meta"]["reason"]
    want = conv_transpose_reference(validate(x, w, **attrs)[0], x, w)
    np.testing.assert_allclose(np.array(remembered["y"]).reshape(want.shape), want, atol=1e-5, rtol=1e-4)
