"""stride1_halo_sgmat (app/variants/halo_sgmat.py) in CPython: what it covers, the box it picks,
what it refuses, and that its launch agrees with the rendered shader. The kernel itself runs only where
subgroup matrices exist (an H200 here: `VARIANTS=stride1_halo_sgmat bash tools/gpu/run.sh variants`, over
test.json's stride1_halo_* cases among others); SwiftShader has none."""
import math
import re

import pytest

from tools.wgsl.matrix import devices
from app.plan import Refusal
from app.planner import candidates, plan
from app.render import render
from app.shapes import infer
from app.variants import VARIANTS, halo_sgmat
from app.variants.base import tall_gemm_tiles

from .test_gpu_caps import h200_caps

HALO = VARIANTS["stride1_halo_sgmat"]
HALO_NAMES = {"stride1_halo_sgmat", "ncdhw3d_implicit_sgmat", "ncdhw3d_implicit_sgmat_bias"}  # its own and the seed's
F16 = {"x": "float16", "w": "float16"}
STRIDE1_3D = ([1, 64, 32, 32, 32], [64, 64, 3, 3, 3], {"pads": [1] * 6})  # bench.json `large` stride1_3d
STRIDE1_2D = ([1, 256, 64, 64], [256, 256, 3, 3], {"pads": [1] * 4})  # `large` stride1_256_3x3
STRIDE1_3D_WIDE = ([1, 256, 16, 16, 16], [256, 256, 3, 3, 3], {"pads": [1] * 6})  # 1M outputs, 128 tall GEMM tiles


def _geom(x, w, attrs, dtypes=F16):
    return infer(x, w, None, attrs, dtypes)


# Three stride-1 float16 shapes of 1M outputs whose stride-phase GEMM's tall tiles (128 x 64) make 128 workgroups:
# both the halo (under the seed's name at rank 3) and the stride-phase GEMM on 4 K-blocks a step, unsplit, cover them.
HALO_WON = [(STRIDE1_3D_WIDE, "ncdhw3d_implicit_sgmat"), (STRIDE1_2D, "stride1_halo_sgmat"),
            (([1, 256, 64, 64], [256, 256, 5, 5], {"pads": [2] * 4}), "stride1_halo_sgmat")]


@pytest.mark.parametrize("shape, name", HALO_WON)
def test_the_halo_and_the_deep_gemm_both_cover_the_shapes_the_halo_won(shape, name):
    geom = _geom(*shape)
    assert tall_gemm_tiles(geom) == 128
    for caps in (h200_caps(), devices()["h200"]):
        gemm = plan(geom, caps, "phase_gemm_sgmat")
        assert (gemm.tiles["kb"], gemm.tiles["kz"]) == (4, 1)
        names = [c.variant for c, _ in candidates(geom, caps)]
        assert {"phase_gemm_sgmat", "stride1_halo_sgmat", "phase_gemm"} <= set(names)
        assert plan(geom, caps, name).dispatches == plan(geom, caps, "stride1_halo_sgmat").dispatches


@pytest.mark.parametrize("x, w, attrs, dtypes, why", [
    (*STRIDE1_3D_WIDE, {"x": "float32", "w": "float32"}, "no f32 matrices on the H200"),
    ([1, 64, 32, 32], [64, 32, 4, 4], {"strides": [2, 2], "pads": [1] * 4}, F16, "stride 2"),
])
def test_the_halo_does_not_cover(x, w, attrs, dtypes, why):
    assert not HALO_NAMES & {c.variant for c, _ in candidates(_geom(x, w, attrs, dtypes), h200_caps())}, why


def test_float32_uses_f32_matrices_where_the_device_has_them():
    caps = devices()["gpu-sgmat-f32-8x8x8"]
    launch = plan(_geom(*STRIDE1_3D, {"x": "float32", "w": "float32"}), caps, "stride1_halo_sgmat")
    params = launch.dispatches[-1].render_params
    assert (params["comp"], params["sm"], params["box"][-1] % 8) == ("f32", 8, 0)


@pytest.mark.parametrize("shape, box, halo", [
    (STRIDE1_3D, [4, 2, 16], [6, 4, 18]),  # 432 halo pixels; 1 x 4 x 32 would stage 612
    (STRIDE1_2D, [8, 16], [10, 18]),  # 180; 4 x 32 would stage 204
    (([1, 16, 300], [16, 16, 5], {"dilations": [2]}), [128], [136]),
])
def test_the_default_box_stages_the_fewest_halo_pixels(shape, box, halo):
    params = plan(_geom(*shape), h200_caps(), "stride1_halo_sgmat").dispatches[-1].render_params
    assert (params["box"], params["halo"], params["halo_pixels"]) == (box, halo, math.prod(halo))
    assert math.prod(box) == params["sg_m"] * params["cm"] * params["sm"]  # the box is the tile's rows


def test_workgroup_memory_and_grid_match_the_rendered_shader():
    launch = plan(_geom(*STRIDE1_3D), h200_caps(), "stride1_halo_sgmat")
    gemm = launch.dispatches[-1]
    source = render(gemm.template, gemm.render_params)
    sizes = {"f16": 2, "f32": 4}
    source = source.replace("array<C,", f"array<{gemm.render_params['comp']},")
    declared = sum(sizes[t] * int(n) for t, n in re.findall(r"var<workgroup> \w+: array<(\w+), (\d+)>", source))
    assert declared == launch.workgroup_bytes
    uniforms = dict(gemm.uniforms)
    boxes = [uniforms[f"boxes{a}"] for a in range(3)]
    assert boxes == [8, 16, 2]  # 32 / 4, 32 / 2, 32 / 16
    assert uniforms["tiles"] == math.prod(boxes) * uniforms["col_tiles"] == gemm.workgroups[0]
    threads = re.search(r"@workgroup_size\((\d+)\)", source).group(1)
    assert int(threads) == 2 * 2 * 4 * 32  # sg_m x sg_n x kt subgroups of the H200's 32 invocations


def _refusal(shape, params, caps=None):
    geom = _geom(*shape)
    caps = caps or h200_caps()
    return halo_sgmat.tiles_refusal(halo_sgmat.default_tiles(geom, caps) | params, geom, caps)


@pytest.mark.parametrize("shape, params, words", [
    (STRIDE1_2D, {"tw": 8}, "tw must be a multiple of the matrix's M = 16"),
    (STRIDE1_3D, {"tw": 32, "th": 8}, "the box must hold the tile's rows"),
    (STRIDE1_2D, {"th": 2}, "th shapes 3D boxes only"),
    (([1, 16, 300], [16, 16, 5], {}), {"tw": 32}, "in 1D, tw must equal them"),
    (STRIDE1_3D, {"kb": 4}, "the halo exceeds the device's workgroup memory"),
    (STRIDE1_3D, {"kt": 16}, "invocations per workgroup exceed the device's limit"),
    (([1, 16, 8, 8], [16, 8, 3, 3], {}), {}, "needs packed weight rows of at least a matrix's 16 columns"),
])
def test_refusals_name_the_problem(shape, params, words):
    assert words in _refusal(shape, params)


def test_a_device_without_matrices_of_the_storage_type_is_refused():
    caps = h200_caps(subgroup_matrix_configs=())
    assert "needs a subgroup-matrix configuration" in _refusal(STRIDE1_3D, {}, caps)
    assert isinstance(HALO.configured(_geom(*STRIDE1_3D), caps), Refusal)


def test_forced_tiles_reach_the_shader():
    forced = {"kt": 2, "kb": 2, "cm": 2, "tw": 32, "th": 1}
    params = plan(_geom(*STRIDE1_3D), h200_caps(), "stride1_halo_sgmat", forced).dispatches[-1].render_params
    assert (params["kt"], params["kb"], params["box"], params["halo"]) == (2, 2, [2, 1, 32], [4, 3, 34])
