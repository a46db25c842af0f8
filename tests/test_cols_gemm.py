"""col2im_gemm_vec4: GEMM + col2im with the column GEMM as a plain vector GEMM (templates/conv-transpose-cols-gemm-
vec4.wgsl.jinja), its reduction split across workgroups and summed by the fold. What it plans and refuses, the
splits it takes, which layers it covers, and every test.json case it covers against the expected outputs in Chromium (SwiftShader),
with small tiles and splits forced so that partial tiles and uneven splits run."""
import json

import pytest

from app.cases import parse_case_file
from app.contract import ROOT
from app.kernel import validate
from app.plan import Refusal
from app.render import render
from app.shapes import infer
from app.variants import VARIANTS, cols_gemm, gemm
from tests.browser_session import passed_with_params_forced
from tests.test_gpu_caps import h200_caps
from tools.wgsl.credited import TEST_JSON
from tools.wgsl.matrix import _geom, devices

VARIANT = VARIANTS["col2im_gemm_vec4"]


def configured(x, w, attrs=None, dtype="float32", params=None, bias=False):
    return VARIANT.configured(_geom(x, w, attrs or {}, bias, dtype), h200_caps(), forced=params)


def test_a_k3_s2_layer_is_one_gemm_of_every_tap_then_a_fold():
    # large cyclegan_up: 128 out-channels x 9 taps = 1152 rows, 64 x 64 = 4096 pixels, 256 in-channels
    plan = configured((1, 256, 64, 64), (256, 128, 3, 3), {"strides": [2, 2], "pads": [1] * 4,
                                                          "output_padding": [1, 1]}, bias=True)
    gemm_pass, fold = plan.dispatches
    assert gemm_pass.template == cols_gemm.COLS_VEC4 and fold.template == cols_gemm.COL2IM_CELLS
    uniforms = dict(gemm_pass.uniforms)
    assert (uniforms["rows"], uniforms["pixels4"], uniforms["depth"]) == (1152, 1024, 256)
    # 18 x 64 tiles of 64 x 64 fill the GPU unsplit
    assert plan.tiles["splits"] == 1 and uniforms["tiles"] == 18 * 64
    assert plan.scratch == {"cols": 1152 * 4096 * 4}
    assert not fold.render_params["split"] and fold.render_params["has_bias"]
    assert ["cols", "read_write", "array<vec4<f32>>"] in gemm_pass.render_params["bindings"]


def test_few_tiles_split_the_reduction_and_the_fold_sums_the_splits():
    # 4096 rows x 256 pixels make 256 tiles of 64 x 64 (16K invocations); 1024 in-channels split in two
    plan = configured((1, 1024, 16, 16), (1024, 256, 4, 4), {"strides": [2, 2], "pads": [1] * 4})
    gemm_pass, fold = plan.dispatches
    assert plan.tiles["splits"] == 2 and dict(gemm_pass.uniforms)["tiles"] == 2 * 256
    assert fold.render_params["split"] and dict(fold.uniforms)["splits"] == 2
    assert dict(fold.uniforms)["split_size"] == 4096 * 256
    assert plan.scratch == {"cols": 2 * 4096 * 256 * 4}
    assert "for (var s = 0; s < p.splits; s += 1)" in render(fold.template, fold.render_params)
    literal = configured((1, 1024, 16, 16), (1024, 256, 4, 4), {"strides": [2, 2], "pads": [1] * 4},
                         params={"fc": 1}).dispatches[1]
    assert literal.template == gemm.COL2IM_ENTRY[2] and dict(literal.uniforms)["splits"] == 2
    assert "for (var s = 0; s < p.splits; s += 1)" in render(literal.template, literal.render_params)


def test_the_cells_fold_lists_each_phase_with_the_taps_that_reach_it():
    # k3 s2 p1: output 2c + j, t = 2c + j + 1; phase 0 takes tap 1 from c; phase 1 taps 0 (from c + 1) and 2 (c)
    geom = infer((1, 256, 8), (256, 8, 3), None, {"strides": [2], "pads": [1, 1]}, {"x": "float32", "w": "float32"})
    assert cols_gemm.cell_phases(geom) == [{"j": [0], "taps": [[1, [0]]]},
                                           {"j": [1], "taps": [[0, [1]], [2, [0]]]}]
    # every tap of the kernel once, in 2D too
    geom = infer((1, 256, 8, 8), (256, 8, 3, 3), None, {"strides": [2, 2], "pads": [1] * 4},
                 {"x": "float32", "w": "float32"})
    assert sorted(tap for phase in cols_gemm.cell_phases(geom) for tap, _ in phase["taps"]) == list(range(9))
    # a kernel past the bound folds with literals
    big = configured((1, 256, 16), (256, 8, 80), {"strides": [8]})
    assert big.tiles["fc"] == 1 and big.dispatches[1].template == gemm.COL2IM


def test_a_split_count_that_would_leave_a_split_empty_is_lowered():
    # 64 in-channels are 4 steps of 16: 8 splits would leave 4 empty, 3 would leave one step for the last
    assert configured((1, 64, 8, 8), (64, 8, 2, 2), params={"kz": 8, "tk": 16}).tiles["splits"] == 4
    assert configured((1, 64, 8, 8), (64, 8, 2, 2), params={"kz": 3, "tk": 16}).tiles["splits"] == 2
    # shallow reductions stay whole by default
    assert configured((1, 64, 8, 8), (64, 8, 2, 2)).tiles["splits"] == 1


@pytest.mark.parametrize("x, w, dtype, words", [
    ((1, 16, 5, 5), (16, 8, 3, 3), "float32", "store as vectors (the input has 25)"),
    ((1, 16, 4, 4), (16, 8, 3, 3), "float16", "does not support dtype float16"),
])
def test_it_refuses_what_its_vectors_cannot_cover(x, w, dtype, words):
    out = configured(x, w, dtype=dtype)
    assert isinstance(out, Refusal) and words in out.why_not


@pytest.mark.parametrize("params, words", [
    ({"rm": 6}, "multiples of 4"),
    ({"tm": 60}, "multiples of 4 dividing"),
    ({"tk": 2}, "whole number per invocation"),
    ({"tm": 256, "tn": 256, "rm": 4, "rn": 4}, "too many invocations"),
    ({"kz": 0}, "positive integers"),
    ({"fc": 3}, "fc (the fold"),
])
def test_tile_shapes_the_template_cannot_take_are_refused(params, words):
    geom = infer((1, 64, 8, 8), (64, 8, 2, 2), None, {}, {"x": "float32", "w": "float32"})
    t = cols_gemm.COLS_VEC4_SHAPE | {"kz": 1} | params
    assert words in cols_gemm.cols_vec4_refusal(t, geom, h200_caps())


@pytest.mark.browser
@pytest.mark.parametrize("params, splits", [
    # 16 x 16 tiles of 4 x 4, 4 in-channels a step: most cases span several tiles, and deep ones 2-5 splits,
    # with the fold by cells (its default where the kernel fits it, literals elsewhere)
    ({"tm": 16, "tn": 16, "rm": 4, "rn": 4, "tk": 4, "kz": 8}, 40),
    # the fold's attributes as literals, 4 outputs an invocation
    ({"tm": 16, "tn": 16, "rm": 4, "rn": 4, "tk": 4, "kz": 3, "fc": 1, "fr": 4}, 40),
    # the fold's attributes as uniforms, 2 outputs an invocation
    ({"kz": 2, "tk": 8, "fc": 0, "fr": 2}, 25),
])
def test_every_case_it_covers_passes_with_small_tiles_and_splits_forced_in_chromium(page, params, splits):
    passed = passed_with_params_forced(page, "col2im_gemm_vec4", params)
    assert len(passed) >= 100, f"{params} ran {len(passed)} cases"
    # how many of them ran split (the same plans in CPython)
    cases = {c["name"]: c for c in parse_case_file(TEST_JSON.read_text())}
    split = 0
    for r in passed:
        geom, _ = validate(**cases[r["name"]]["inputs"], **cases[r["name"]]["attributes"])
        split += VARIANT.configured(geom, devices()["swiftshader"], forced=params).tiles["splits"] > 1
    assert split >= splits


def _bench_geoms(tiers, dtype="float32"):
    for case in json.loads((ROOT / "bench.json").read_text())["cases"]:
        if case["tier"] in tiers:
            yield case["name"], _geom(case["x"], case["w"], case["attributes"], case.get("bias", False), dtype)


def test_it_covers_float32_layers_as_a_gemm_and_a_fold_and_never_float16():
    from app.planner import candidates, plan
    # k3 s2 (phases of 1-4 taps); stride-1 3x3 and k16 s8 whose phase GEMMs' tiles do not fill the GPU: where it
    # was measured fastest on the H200 (docs/h200/session20/call3)
    uneven = {"cyclegan_up_k3s2p1op1", "stride1_256_3x3", "stride1_3x3", "hifigan_k16s8p4", "dcgan_batch8_k4s2p1"}
    seen = set()
    for name, geom in _bench_geoms(("small", "full", "large")):
        if name not in uneven:
            continue
        seen.add(name)
        assert "col2im_gemm_vec4" in [c.variant for c, _ in candidates(geom, h200_caps())], name
        gemm, fold = plan(geom, h200_caps(), "col2im_gemm_vec4").dispatches
        assert gemm.template == cols_gemm.COLS_VEC4 and "col2im" in fold.template
    assert seen == uneven
    for name, geom in _bench_geoms(("small", "full", "large"), "float16"):
        assert VARIANT.why_not(geom, h200_caps()) == "does not support dtype float16", name
        assert "col2im_gemm_vec4" not in [c.variant for c, _ in candidates(geom, h200_caps())]


@pytest.mark.parametrize("kernel, strides, imbalance", [
    ((3, 3), (2, 2), 16 / 9),  # phases of 1, 2, 2 and 4 taps: mean 9/4
    ((4, 4), (2, 2), 1.0),
    ((3,), (1,), 1.0),
    ((5,), (2,), 1.2),  # phases of 3 and 2 taps
])
def test_phase_imbalance_is_the_deepest_phase_over_the_mean(kernel, strides, imbalance):
    from app.variants.base import phase_imbalance
    geom = infer((1, 4) + (8,) * len(kernel), (4, 4) + kernel, None, {"strides": list(strides)},
                 {"x": "float32", "w": "float32"})
    assert phase_imbalance(geom) == pytest.approx(imbalance)

