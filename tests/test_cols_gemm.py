"""col2im_gemm_vec4: GEMM + col2im with the column GEMM as a plain vector GEMM (templates/conv-transpose-cols-gemm-
vec4.wgsl.jinja), its reduction split across workgroups and summed by the fold. What it plans and refuses, the
splits its rule takes, and every test.json case it covers against the expected outputs in Chromium (SwiftShader),
with small tiles and splits forced so that partial tiles and uneven splits run."""
import json

import pytest

from app.plan import Refusal
from app.render import render
from app.shapes import infer
from app.variants import VARIANTS, gemm
from tests.browser_session import run_python
from tests.test_gpu_caps import h200_caps

VARIANT = VARIANTS["col2im_gemm_vec4"]


def configured(x, w, attrs=None, dtype="float32", params=None, bias=False):
    b = [w[1] * (attrs or {}).get("group", 1)] if bias else None
    geom = infer(x, w, b, attrs or {}, {"x": dtype, "w": dtype} | ({"b": dtype} if bias else {}))
    return VARIANT.configured(geom, h200_caps(), forced=params)


def test_a_k3_s2_layer_is_one_gemm_of_every_tap_then_a_fold():
    # large cyclegan_up: 128 out-channels x 9 taps = 1152 rows, 64 x 64 = 4096 pixels, 256 in-channels
    plan = configured((1, 256, 64, 64), (256, 128, 3, 3), {"strides": [2, 2], "pads": [1] * 4,
                                                          "output_padding": [1, 1]}, bias=True)
    gemm_pass, fold = plan.dispatches
    assert gemm_pass.template == gemm.COLS_VEC4 and fold.template == gemm.COL2IM_ENTRY[2]
    uniforms = dict(gemm_pass.uniforms)
    assert (uniforms["rows"], uniforms["pixels4"], uniforms["depth"]) == (1152, 1024, 256)
    # 18 x 32 tiles of 64 x 128 fill the GPU unsplit
    assert plan.tiles["splits"] == 1 and uniforms["tiles"] == 18 * 32
    assert plan.scratch == {"cols": 1152 * 4096 * 4}
    assert not fold.params["split"] and fold.params["has_bias"]
    assert ["cols", "read_write", "array<vec4<f32>>"] in gemm_pass.params["bindings"]


def test_few_tiles_split_the_reduction_and_the_fold_sums_the_splits():
    # holdout-shaped pix2pix: 4096 rows x 256 pixels make 128 tiles; 1024 in-channels split in two
    plan = configured((1, 1024, 16, 16), (1024, 256, 4, 4), {"strides": [2, 2], "pads": [1] * 4})
    gemm_pass, fold = plan.dispatches
    assert plan.tiles["splits"] == 2 and dict(gemm_pass.uniforms)["tiles"] == 2 * 128
    assert fold.params["split"] and dict(fold.uniforms)["splits"] == 2
    assert dict(fold.uniforms)["split_size"] == 4096 * 256
    assert plan.scratch == {"cols": 2 * 4096 * 256 * 4}
    assert "for (var s = 0; s < p.splits; s += 1)" in render(fold.template, fold.params)


def test_a_split_count_that_would_leave_a_split_empty_is_lowered():
    # 64 in-channels are 4 steps of 16: 8 splits would leave 4 empty, 3 would leave one step for the last
    assert configured((1, 64, 8, 8), (64, 8, 2, 2), params={"kz": 8}).tiles["splits"] == 4
    assert configured((1, 64, 8, 8), (64, 8, 2, 2), params={"kz": 3}).tiles["splits"] == 2
    # shallow reductions stay whole by default
    assert configured((1, 64, 8, 8), (64, 8, 2, 2)).tiles["splits"] == 1


@pytest.mark.parametrize("x, w, dtype, words", [
    ((1, 16, 5, 5), (16, 8, 3, 3), "float32", "a multiple of 4, for x's rows and the columns' rows to load and store as vectors (the input has 25)"),
    ((1, 16, 4, 4), (16, 8, 3, 3), "float16", "does not support dtype float16"),
])
def test_it_refuses_what_its_vectors_cannot_cover(x, w, dtype, words):
    out = configured(x, w, dtype=dtype)
    assert isinstance(out, Refusal) and words in out.reason


@pytest.mark.parametrize("params, words", [
    ({"rm": 6}, "multiples of 4"),
    ({"tm": 60}, "multiples of 4 dividing"),
    ({"tk": 4}, "whole number per invocation"),
    ({"tm": 256, "tn": 256, "rm": 4, "rn": 4}, "too many invocations"),
    ({"kz": 0}, "positive integers"),
])
def test_tile_shapes_the_template_cannot_take_are_refused(params, words):
    geom = infer((1, 64, 8, 8), (64, 8, 2, 2), None, {}, {"x": "float32", "w": "float32"})
    t = gemm.COLS_VEC4_SHAPE | {"kz": 1} | params
    assert words in gemm.cols_vec4_refusal(t, geom, h200_caps())


RUN_FORCED = """
import json
from app import bridge
json.dumps([await bridge.run_case_at(i, "col2im_gemm_vec4", {params})
            for i, case in enumerate(bridge._cases) if not case["expected_error"]])
"""


@pytest.mark.browser
@pytest.mark.parametrize("params, splits", [
    # 16 x 16 tiles of 4 x 4, 4 in-channels a step: most cases span several tiles, and deep ones 2-5 splits
    ({"tm": 16, "tn": 16, "rm": 4, "rn": 4, "tk": 4, "kz": 8}, 40),
    ({"kz": 2, "tk": 8}, 25),
])
def test_every_case_it_covers_passes_with_small_tiles_and_splits_forced_in_chromium(page, params, splits):
    from tests.test_browser_variants import TEST_JSON
    from app.host.case_runner import page_python
    page_python(page)("load_cases", TEST_JSON.read_text())
    results = json.loads(run_python(page, RUN_FORCED.format(params=params)))
    failed = [r for r in results if r["status"] == "FAIL"]
    assert not failed, failed[:3]
    passed = [r for r in results if r["status"] == "PASS"]
    assert len(passed) >= 100, f"{params} ran {len(passed)} cases"
    skipped = [r for r in results if r["status"] == "SKIP"]
    assert all("does not take" in r["detail"] or "does not cover" in r["detail"]
               or "needs the device feature" in r["detail"] for r in skipped), skipped[:3]
    # how many of them ran split (the same plans in CPython)
    from app.cases import parse_case_file
    from tools.wgsl.matrix import devices
    cases = {c["name"]: c for c in parse_case_file(TEST_JSON.read_text())}
    split = 0
    for r in passed:
        ins = cases[r["name"]]["inputs"]
        geom = infer(ins["x"]["shape"], ins["w"]["shape"], ins["b"]["shape"] if "b" in ins else None,
                     cases[r["name"]]["attributes"], {k: ins[k]["dtype"] for k in ins})
        split += VARIANT.configured(geom, devices()["swiftshader"], forced=params).tiles["splits"] > 1
    assert split >= splits
