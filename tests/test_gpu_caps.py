"""What a real GPU reports, as data: subgroup-matrix configurations and which variants they enable.

The configurations are the ones Dawn reported on the NVIDIA H200 (docs/results/h200-device.json): f16 and
8-bit integer matrices only, so the f32 subgroup-matrix paths must refuse there and the f16 ones pick
f16 components with f32 results."""
import json
import math
import re
from pathlib import Path

import pytest

from app.caps import DeviceCaps, matrix_configs
from app.errors import ConvTransposeError
from app.planner import candidates, plan
from app.render import render
from app.shapes import infer
from app.variants import VARIANTS, phase_gemm, phase_gemm_sgmat

H200 = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results" / "h200-device.json").read_text())
SGMAT = ("chromium-experimental-subgroup-matrix", "subgroups", "shader-f16")


def _names(geom, caps) -> list[str]:
    return [c.variant for c, _ in candidates(geom, caps)]


def h200_caps(**changes) -> DeviceCaps:
    """The H200 as its device report names it: its tuning table (tile rules' thresholds included) applies."""
    fields = dict(features=frozenset(H200["features"]), limits=H200["limits"], vendor=H200["vendor"],
                  architecture=H200["architecture"], device=H200["device"],
                  subgroup_min_size=H200["subgroup_sizes"][0], subgroup_max_size=H200["subgroup_sizes"][1],
                  subgroup_matrix_configs=matrix_configs(H200["subgroup_matrix_configs"]))
    return DeviceCaps(**(fields | changes))


class JsLike:
    """A GPUSubgroupMatrixConfig as Pyodide shows it: attributes, not keys."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


def test_matrix_configs_reads_js_objects_and_dicts_alike():
    record = {"componentType": "f16", "resultComponentType": "f32", "M": 16, "N": 8, "K": 16}
    assert matrix_configs([JsLike(**record)]) == matrix_configs([record]) == (record,)
    assert matrix_configs(None) == ()


def test_the_h200_reports_no_f32_matrices():
    assert set(SGMAT) <= set(H200["features"])
    assert {c["componentType"] for c in H200["subgroup_matrix_configs"]} == {"f16", "u8", "i8"}


SHAPES = [((1, 16, 4, 4, 4), (16, 16, 3, 3, 3), {}), ((1, 32, 8, 8), (32, 32, 1, 1), {}),
          ((1, 64, 9, 9), (64, 32, 4, 4), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
          ((2, 32, 50), (32, 16, 16), {"strides": [8], "pads": [4, 4]})]


@pytest.mark.parametrize("x, w, attrs", SHAPES)
def test_float16_takes_f16_components_with_f32_results(x, w, attrs):
    geom = infer(x, w, None, attrs, {"x": "float16", "w": "float16"})
    params = plan(geom, h200_caps(), "phase_gemm_sgmat").dispatches[-1].render_params
    assert params["comp"] == "f16"
    assert (params["sm"], params["sn"], params["sk"]) == (16, 16, 16)  # the largest f16 -> f32 shape
    assert params["subgroup_size"] == 32


@pytest.mark.parametrize("x, w, attrs", SHAPES)
def test_float32_refuses_without_f32_matrices(x, w, attrs):
    # f16 components would round every f32 input to 11 bits: not a float32 result.
    with pytest.raises(ConvTransposeError, match="f32 components"):
        plan(infer(x, w, None, attrs), h200_caps(), "phase_gemm_sgmat")


# Apple GPUs list f32 matrices too (8x8x8 with f32 components and results), and f16 ones.
APPLE_CONFIGS = [{"componentType": "f32", "resultComponentType": "f32", "M": 8, "N": 8, "K": 8},
                 {"componentType": "f16", "resultComponentType": "f16", "M": 8, "N": 8, "K": 8},
                 {"componentType": "f16", "resultComponentType": "f32", "M": 8, "N": 8, "K": 8}]


@pytest.mark.parametrize("x, w, attrs", SHAPES)
@pytest.mark.parametrize("dtype, comp", [("float32", "f32"), ("float16", "f16")])
def test_f32_matrices_serve_float32_where_the_device_has_them(x, w, attrs, dtype, comp):
    caps = h200_caps(subgroup_matrix_configs=matrix_configs(APPLE_CONFIGS))
    geom = infer(x, w, None, attrs, {"x": dtype, "w": dtype})
    params = plan(geom, caps, "phase_gemm_sgmat").dispatches[-1].render_params
    assert (params["comp"], params["sm"], params["sn"], params["sk"]) == (comp, 8, 8, 8)
    # and they cover a dense output that fills the GPU, so the planner can choose them
    big = infer((1, 64, 64, 64), (64, 64, 2, 2), None, {"strides": [2, 2]}, {"x": dtype, "w": dtype})
    assert "phase_gemm_sgmat" in _names(big, caps)


def test_matrices_cover_float16_not_float32_and_a_small_dcgan_head_splits_its_reduction():
    big = (1, 64, 64, 64), (64, 64, 2, 2), None, {"strides": [2, 2]}
    assert "phase_gemm_sgmat" in _names(infer(*big, {"x": "float16", "w": "float16"}), h200_caps())
    f32 = infer(*big)
    assert "phase_gemm_sgmat" not in _names(f32, h200_caps()) and "phase_gemm" in _names(f32, h200_caps())
    assert "f32 components" in VARIANTS["phase_gemm_sgmat"].why_not(f32, h200_caps())
    dcgan = infer((1, 1024, 4, 4), (1024, 512, 4, 4), None, {"strides": [2, 2], "pads": [1, 1, 1, 1]},
                  {"x": "float16", "w": "float16"})
    assert plan(dcgan, h200_caps(), "phase_gemm").tiles["ks"] > 1  # a split reduction fills the GPU


def test_without_the_feature_no_configuration_counts():
    caps = h200_caps(features=frozenset({"subgroups", "shader-f16"}))
    geom = infer((1, 32, 8, 8), (32, 32, 1, 1), None, {}, {"x": "float16", "w": "float16"})
    with pytest.raises(ConvTransposeError, match="chromium-experimental-subgroup-matrix"):
        plan(geom, caps, "phase_gemm_sgmat")


@pytest.mark.parametrize("x, w, attrs", SHAPES)
def test_right_matrices_come_straight_from_packed_weights_of_their_type(x, w, attrs):
    # bd: wp is bound as the matrices' component type and allocated past its last step and tile, so that
    # no matrix load leaves it.
    geom = infer(x, w, None, attrs, {"x": "float16", "w": "float16"})
    launch = plan(geom, h200_caps(), "phase_gemm_sgmat", {"bd": 1, "vs": 0, "cl": 0})
    gemm = launch.dispatches[0]
    assert launch.tiles["bd"] == 1 and ["wp", "read", "array<C>"] in gemm.render_params["bindings"]
    packed = geom.group * math.prod(geom.kernel) * geom.in_per_group * -(-geom.out_per_group // 4) * 4
    step_rows = gemm.render_params["kb"] * gemm.render_params["sk"] * -(-geom.out_per_group // 4) * 4
    assert launch.prepared["wp"] == 2 * (packed + step_rows + gemm.render_params["tn"])


def test_narrow_packed_rows_refuse_direct_right_matrices():
    # bd and vs need the same packed rows (a multiple of 16 bytes), so vs's defaults take every request bd
    # could read directly; bd stays a forced (tuned) choice, refused on rows shorter than a matrix.
    f16 = {"x": "float16", "w": "float16"}
    narrow = infer((1, 512, 128, 128), (512, 8, 1, 1), None, {}, f16)  # 8-wide wp rows: shorter than a matrix
    assert "at least a matrix's 16 columns" in phase_gemm_sgmat.tiles_refusal(
        plan(narrow, h200_caps(), "phase_gemm_sgmat").tiles | {"bd": 1, "vs": 0, "cl": 0}, narrow, h200_caps())
    assert plan(narrow, h200_caps(), "phase_gemm_sgmat", {"bd": 1, "vs": 0, "cl": 0}).tiles["bd"] == 0


F16 = {"x": "float16", "w": "float16"}
VS_SHAPES = [  # (x, w, attrs, (sg_m, sg_n, cm, cn, va, yv)) under vs's rule
    ((1, 512, 128, 128), (512, 256, 1, 1), {}, (2, 2, 4, 4, 1, 1)),  # deep, wide 1x1: 128 x 128 tiles, y as vectors
    # 128 x 128 spread over 4 x 4 subgroups: as 2 x 2 subgroups it would make 128 workgroups, 512 spread
    ((1, 1024, 32, 32), (1024, 512, 2, 2), {"strides": [2, 2]}, (4, 4, 2, 2, 1, 0)),
    ((1, 128, 256, 256), (128, 64, 2, 2), {"strides": [2, 2]}, (2, 2, 2, 2, 1, 0)),  # 128 deep: 64-row tiles
    ((1, 64, 64000), (64, 32, 4), {"strides": [2], "pads": [1, 1]}, (2, 2, 2, 1, 0, 0)),  # 32 out-channels: 32 columns
    ((1, 512, 2000), (512, 256, 16), {"strides": [8], "pads": [4, 4]}, (2, 2, 4, 4, 0, 0)),  # 1D: not spread
    # columns fitted to the out-channels (H200, sessions 15 and 19, app/variants/phase_gemm_sgmat.py): 96 take one
    # 96-column tile (`full` dac_dec4: 0.095 ms against 0.107 on 128 columns); spread tiles take 4 or 2 blocks only: 192
    # take three of 64, not two of 128 that compute 256 (`holdout` hdemucs, before the large-GEMM rule: 0.702 -> 0.659
    # ms), spread over 4 x 2
    ((1, 192, 44032), (192, 96, 4), {"strides": [2], "pads": [1, 1]}, (2, 2, 4, 3, 0, 0)),
    ((1, 384, 64, 84), (384, 192, 8, 1), {"strides": [4, 1]}, (4, 2, 2, 2, 0, 0)),
]


@pytest.mark.parametrize("x, w, attrs, want", VS_SHAPES)
def test_float16_on_f16_matrices_stages_vectors_in_one_buffer(x, w, attrs, want):
    geom = infer(x, w, (w[1],), attrs, F16)
    launch = plan(geom, h200_caps(), "phase_gemm_sgmat")
    gemm, t = launch.dispatches[-1], launch.tiles
    assert t["vs"] == 1 and t["bd"] == 0 and gemm.template == phase_gemm_sgmat.VECTOR_STAGED
    assert (t["sg_m"], t["sg_n"], t["cm"], t["cn"], t["va"], gemm.render_params["yv"]) == want
    # A comes as vectors of x where a phase reads x's pixels in order (va); these strided or 1x1 layers gather
    # it from NCHW x, not from a channels-last copy (base.channels_last_pays: stride 1 with 2+ taps only)
    assert t["cl"] == 0
    types = {name: kind for name, _, kind in gemm.render_params["bindings"]}
    assert types["wp"] == "array<vec4<u32>>"
    assert types["xc" if t["cl"] else "x"] == ("array<vec4<u32>>" if t["va"] or t["cl"] else "array<T>")
    assert types["y"] == ("array<vec4<T>>" if gemm.render_params["yv"] else "array<T>")
    # one staging buffer in parts: a part of A per subgroup row and of B per subgroup column (16-byte rows padded
    # by one vector), then a part per subgroup for one column block of its results; the shader declares as much
    pm, pn, tks = 16 * t["cm"], 16 * t["cn"], 16 * t["kb"]
    part = max(tks * (pm // 8 + 1), tks * (pn // 8 + 1), 16 * (pm // 4 + 1))
    parts = max(t["sg_m"] + t["sg_n"], t["sg_m"] * t["sg_n"])
    assert launch.workgroup_bytes == 16 * part * parts
    declared = re.search(r"var<workgroup> ws: array<array<vec4<u32>, (\d+)>, (\d+)>;", render(gemm.template, gemm.render_params))
    assert (int(declared[1]), int(declared[2])) == (part, parts)


@pytest.mark.parametrize("x, w, attrs, want", [
    # scaling.py's k4s2p1_c1024_128px and s1k3_c512_128px: 2048 and 512 workgroups of unspread 128 x 128 tiles, 4 and
    # 9 taps a phase: unspread, A from the channels-last copy at stride 2 as at stride 1 (H200, session 21)
    ((1, 1024, 128, 128), (1024, 512, 4, 4), {"strides": [2, 2], "pads": [1] * 4}, (2, 2, 4, 4, 1, 0)),
    ((1, 512, 128, 128), (512, 512, 3, 3), {"pads": [1] * 4}, (2, 2, 4, 4, 1, 0)),
    # Hybrid Demucs' decoder layer: 192 out-channels fill a 128-wide tile, 2712 workgroups: three 64-column blocks
    ((1, 384, 128, 336), (384, 192, 8, 1), {"strides": [4, 1]}, (2, 2, 4, 3, 1, 0)),
    # one tap a phase: unspread, A still read as vectors of x (va), no copy
    ((1, 512, 128, 128), (512, 256, 2, 2), {"strides": [2, 2]}, (2, 2, 4, 4, 0, 1)),
])
def test_large_gemms_keep_unspread_tiles_and_repack_x_for_phases_of_several_taps(x, w, attrs, want):
    geom = infer(x, w, None, attrs, F16)
    launch = plan(geom, h200_caps(), "phase_gemm_sgmat")
    t = launch.tiles
    assert (t["sg_m"], t["sg_n"], t["cm"], t["cn"], t["cl"], t["va"]) == want
    assert t["kz"] == 1 and t["vs"] == 1
    assert (phase_gemm.X_CHANNELS_LAST in [d.template for d in launch.dispatches]) == bool(t["cl"])


@pytest.mark.parametrize("x, w, attrs", [
    # as many workgroups, but out-channels that do not fill the 128-wide tile: `large` vocoder_64 (32) and `full`
    # dac_dec4 (96) ran 1.4x slower from the copy on the H200
    ((1, 64, 64000), (64, 32, 4), {"strides": [2], "pads": [1, 1]}),
    ((1, 192, 44032), (192, 96, 4), {"strides": [2], "pads": [1, 1]}),
    # filled tiles but 256 workgroups (`scaling` k4s2p1_c512_64px): spread, gathered
    ((1, 512, 64, 64), (512, 256, 4, 4), {"strides": [2, 2], "pads": [1] * 4}),
])
def test_gemms_short_of_large_keep_the_rules_before_it(x, w, attrs):
    geom = infer(x, w, None, attrs, F16)
    assert phase_gemm_sgmat.workgroup_count(geom, {"tm": 128, "tn": 128}) >= 256
    t = plan(geom, h200_caps(), "phase_gemm_sgmat").tiles
    assert t["cl"] == 0
    if geom.rank > 1:
        assert t["sg_m"] * t["sg_n"] > 4  # spread


def test_vs_masks_its_loads_where_it_stores_them_except_gathered_on_spread_tiles():
    # A load's value is masked where it is stored into workgroup memory, not right after the load: an instruction
    # reading it waits for it (k4s2p1_c1024_128px on the H200: 2.41 -> 1.46 ms from the copy). Gathered A on 16-subgroup
    # tiles keeps its mask at the load (13% slower deferred: twice the registers).
    k4 = {"strides": [2, 2], "pads": [1] * 4}
    large = plan(infer((1, 1024, 128, 128), (1024, 512, 4, 4), None, k4, F16), h200_caps(), "phase_gemm_sgmat")
    source = render(large.dispatches[-1].template, large.dispatches[-1].render_params)
    assert "la0 = xc[select(0, at, ok)];" in source and "lb0 = wp[select(0, (w_step + k) * w_row + b_col, ok)];" in source
    assert "= select(vec4<u32>(), la0, (ma0 & 1u) != 0u);" in source
    assert "= select(vec4<u32>(), lb0, (mb0 & 1u) != 0u);" in source
    assert "select(vec4<u32>(), xc[" not in source and "select(vec4<u32>(), wp[" not in source
    spread = plan(infer((16, 256, 16, 16), (256, 128, 4, 4), None, k4, F16), h200_caps(), "phase_gemm_sgmat")
    assert spread.tiles["sg_m"] * spread.tiles["sg_n"] == 16 and spread.tiles["cl"] == 0
    source = render(spread.dispatches[-1].template, spread.dispatches[-1].render_params)
    assert "let v0 = select(T(), x[select(0, xo0 + c * p.in_size, ok0)], ok0);" in source
    assert "select(vec4<u32>(), wp[" not in source and "(mb0 & 1u) != 0u" in source


def test_vs_spreads_only_as_far_as_the_device_takes_the_invocations():
    # `large` batch16_k4s2p1: 4 x 4 subgroups of 2 x 2 matrices on 128 x 128 (512 invocations); where a workgroup
    # holds at most 256, the spread 128 x 64 tile (4 x 2 subgroups), not the unspread shape
    geom = infer((16, 256, 16, 16), (256, 128, 4, 4), None, {"strides": [2, 2], "pads": [1, 1, 1, 1]}, F16)
    t = plan(geom, h200_caps(), "phase_gemm_sgmat").tiles
    assert (t["sg_m"], t["sg_n"], t["cm"], t["cn"]) == (4, 4, 2, 2)
    limits = {"maxComputeInvocationsPerWorkgroup": 256, "maxComputeWorkgroupSizeX": 256}
    small = h200_caps(limits=H200["limits"] | limits)
    t = plan(geom, small, "phase_gemm_sgmat").tiles
    assert (t["sg_m"], t["sg_n"], t["cm"], t["cn"], t["vs"]) == (4, 2, 2, 2, 1)


@pytest.mark.parametrize("x, w, attrs, want", [
    # `large` stride1_256_3x3: the spread 128 x 128 tile (4 x 4 subgroups of 2 x 2) makes 64 workgroups, 2304 products
    # an output, which a split in two would reduce: instead 64 x 128 tiles on 2 x 4 subgroups, 4 K-blocks a step, 128
    # workgroups unsplit (H200, session 23: 0.0601 -> 0.0546 ms)
    ((1, 256, 64, 64), (256, 256, 3, 3), {"pads": [1] * 4}, (2, 4, 4, 1, 1)),
    # `full` unet_up_k2s2: 64 workgroups of the same tile, but 512 products: a split would reduce 256 (0.027 ms unsplit
    # against 0.033 in two), so neither split nor deepened
    ((1, 512, 32, 32), (512, 256, 2, 2), {"strides": [2, 2]}, (4, 4, 2, 1, 0)),
    # `large` stride1_3d_64_3x3x3: 256 workgroups of the spread 128 x 64 tile: unsplit, A from the channels-last copy
    ((1, 64, 32, 32, 32), (64, 64, 3, 3, 3), {"pads": [1] * 6}, (4, 2, 2, 1, 1)),
])
def test_vs_deepens_a_spread_tile_of_fewer_workgroups_than_multiprocessors(x, w, attrs, want):
    geom = infer(x, w, None, attrs, F16)
    t = plan(geom, h200_caps(), "phase_gemm_sgmat").tiles
    assert (t["sg_m"], t["sg_n"], t["kb"], t["kz"], t["cl"]) == want
    assert (t["cm"], t["cn"]) == (2, 2)


@pytest.mark.parametrize("x, w, attrs, groups", [
    ((2, 24, 5, 7), (24, 16, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}, 1),  # 24 channels: 3 vectors
    ((1, 40, 9, 6), (40, 16, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}, 2),  # 20 a group: 3 vectors, 4 zeros
    ((1, 16, 6, 6, 6), (16, 8, 3, 3, 3), {"strides": [2, 2, 2]}, 1),
])
def test_cl_repacks_x_channels_last_before_the_gemm(x, w, attrs, groups):
    # cl: a pass copies x into xc[n][pixel][group][8 in-channels] (16-byte vectors, each group's channels
    # rounded up to 8 with zeros), which the GEMM reads instead of x; xc lives only for the call.
    geom = infer(x, w, None, attrs, F16)
    launch = plan(geom, h200_caps(), "phase_gemm_sgmat", {"va": 0, "cl": 1})
    repack, gemm = launch.dispatches
    assert launch.tiles["cl"] == 1 and repack.template == phase_gemm.X_CHANNELS_LAST
    vectors = groups * -(-(x[1] // groups) // 8)
    pixels = x[0] * math.prod(x[2:])
    assert launch.scratch == {"xc": pixels * vectors * 16}
    assert repack.bindings == ("x", "xc") and gemm.bindings[:2] == ("xc", "wp")
    # one workgroup per 32 pixels x 8 vectors of an image's xc: a transpose through workgroup memory
    image = math.prod(x[2:])
    assert dict(repack.uniforms)["tiles"] == x[0] * -(-image // 32) * -(-vectors // 8)
    assert dict(gemm.uniforms)["xc_row"] == vectors and dict(gemm.uniforms)["xc_vecs"] == vectors // groups
    assert ["xc", "read", "array<vec4<u32>>"] in gemm.render_params["bindings"]
    # it runs only in the vs template, and not with va's vectors of x
    assert phase_gemm_sgmat.tiles_refusal(launch.tiles | {"vs": 0}, geom, h200_caps()).startswith("cl runs in")
    natural = infer((1, 64, 8, 8), (64, 64, 2, 2), None, {"strides": [2, 2]}, F16)  # where va could run
    assert phase_gemm_sgmat.tiles_refusal(launch.tiles | {"va": 1}, natural, h200_caps()).startswith("cl loads A")


def test_vs_refuses_what_it_cannot_stage_as_vectors():
    caps = h200_caps()
    odd = infer((1, 64, 32, 32), (64, 60, 2, 2), None, {"strides": [2, 2]}, F16)  # 60-half packed rows
    t = plan(odd, caps, "phase_gemm_sgmat").tiles
    assert t["vs"] == 0
    assert "multiple of 8 out-channels" in phase_gemm_sgmat.tiles_refusal(t | {"vs": 1, "bd": 0}, odd, caps)
    geom = infer((1, 64, 32, 32), (64, 64, 2, 2), None, {"strides": [2, 2]}, F16)
    t = plan(geom, caps, "phase_gemm_sgmat").tiles
    assert t["vs"] == 1
    assert phase_gemm_sgmat.tiles_refusal(t | {"bd": 1}, geom, caps).startswith("vs stages the right matrices")
    assert plan(geom, caps, "phase_gemm_sgmat", {"bd": 1}).tiles == t  # refused: the defaults run
    # float16 on f32 matrices (no f16 -> f32 shape): vs is refused by name, the scalar-staged kernel runs
    f32_caps = h200_caps(subgroup_matrix_configs=matrix_configs(APPLE_CONFIGS[:2]))
    t = plan(geom, f32_caps, "phase_gemm_sgmat").tiles
    assert t["vs"] == 0
    assert phase_gemm_sgmat.tiles_refusal(t | {"vs": 1, "bd": 0}, geom, f32_caps).startswith(
        "vs stages 16-byte vectors of f16")


def test_f16_storage_on_f32_matrices_stages_the_right_matrices():
    # An Apple-like list without f16 -> f32 matrices: float16 inputs ride f32 matrices, which cannot read
    # wp's f16 directly, so the defaults stage B, bd is refused by name, and a table's bd is not taken.
    caps = h200_caps(subgroup_matrix_configs=matrix_configs(APPLE_CONFIGS[:2]))
    geom = infer(*SHAPES[1][:2], None, {}, {"x": "float16", "w": "float16"})
    tiles = plan(geom, caps, "phase_gemm_sgmat").tiles
    assert tiles["bd"] == 0
    refusal = phase_gemm_sgmat.tiles_refusal(tiles | {"bd": 1}, geom, caps)
    assert refusal.startswith("bd needs matrices of the storage type (f16)")
    assert plan(geom, caps, "phase_gemm_sgmat", {"bd": 1}).tiles["bd"] == 0


def test_a_rows_load_as_vectors_of_x_only_where_each_phase_reads_x_in_order():
    # va: one tap per phase reading x's pixels in order (1x1, kernel = stride, no pads), images a multiple
    # of 4 pixels, matrices of the storage type; x is then bound as vec4s.
    f16 = {"x": "float16", "w": "float16"}
    for x, w, attrs in [((1, 512, 128, 128), (512, 256, 1, 1), {}),
                        ((1, 256, 16, 16, 16), (256, 128, 2, 2, 2), {"strides": [2, 2, 2]})]:
        unstaged = {"vs": 0, "cl": 0, "sg_m": 2, "sg_n": 2, "cm": 4, "cn": 4}  # 16 subgroups' results overflow
        launch = plan(infer(x, w, None, attrs, f16), h200_caps(), "phase_gemm_sgmat", unstaged)
        assert launch.tiles["va"] == 1
        assert ["x", "read", "array<vec4<T>>"] in launch.dispatches[0].render_params["bindings"]
    padded = infer((1, 64, 32, 32), (64, 64, 3, 3), None, {"pads": [1] * 4}, f16)
    assert plan(padded, h200_caps(), "phase_gemm_sgmat").tiles["va"] == 0
    odd = infer((1, 64, 5, 5), (64, 64, 2, 2), None, {"strides": [2, 2]}, f16)  # 25 pixels an image
    tiles = plan(odd, h200_caps(), "phase_gemm_sgmat").tiles
    assert tiles["va"] == 0
    assert "multiple of 4 pixels" in phase_gemm_sgmat.tiles_refusal(tiles | {"va": 1, "vs": 0, "cl": 0}, odd, h200_caps())
    assert "multiple of 8 pixels" in phase_gemm_sgmat.tiles_refusal(tiles | {"va": 1, "vs": 1, "cl": 0}, odd, h200_caps())
    assert plan(padded, h200_caps(), "phase_gemm_sgmat", {"va": 1}).tiles["va"] == 0  # refused: the defaults run
    # float16 on f32 matrices stages converted values: va is refused by name
    caps = h200_caps(subgroup_matrix_configs=matrix_configs(APPLE_CONFIGS[:2]))
    proj = infer((1, 512, 128, 128), (512, 256, 1, 1), None, {}, f16)
    tiles = plan(proj, caps, "phase_gemm_sgmat").tiles
    assert tiles["va"] == 0
    assert phase_gemm_sgmat.tiles_refusal(tiles | {"va": 1}, proj, caps).startswith("va stages x as it is stored")


@pytest.mark.parametrize("forced, passes, guarded", [
    # 96 columns, 2 x 2 subgroups (128 invocations): 12 vectors a k row, 384 a step, three whole passes (the rule's)
    ({}, 3, False),
    # 96 columns over 4 x 2 subgroups (256 invocations): 384 vectors, the second pass half guarded (forced)
    ({"sg_m": 4, "sg_n": 2, "cm": 2, "cn": 3}, 2, True),
])
def test_vs_stages_b_rows_of_three_matrix_blocks_through_a_flat_count(forced, passes, guarded):
    geom = infer((1, 192, 44032), (192, 96, 4), None, {"strides": [2], "pads": [1, 1]}, F16)  # `full` dac_dec4
    launch = plan(geom, h200_caps(), "phase_gemm_sgmat", forced)
    assert launch.tiles["cn"] == 3 and launch.tiles["vs"] == 1 and launch.tiles["sg_m"] == forced.get("sg_m", 2)
    source = render(launch.dispatches[-1].template, launch.dispatches[-1].render_params)
    assert source.count("let b_e") == passes and f"let b_e{passes}" not in source
    assert ("if (b_e1 < 384) {" in source) == guarded
    assert "let b_k0 = b_e0 / 12;" in source and "let b_pt0 = %d + b_o0 / 6;" % launch.tiles["sg_m"] in source


def test_vs_b_rows_of_a_power_of_two_of_vectors_are_staged_whole():
    # 64 columns (8 vectors a row) on 12 subgroups: 384 invocations do not cover whole rows; the flat count was
    # measured on 3-matrix blocks only, so this shape is refused by name
    geom = infer((1, 64, 32, 32), (64, 64, 2, 2), None, {"strides": [2, 2]}, F16)
    t = {"sg_m": 6, "sg_n": 2, "cm": 1, "cn": 2, "kb": 2, "kz": 1, "bd": 0, "va": 0, "vs": 1, "cl": 0}
    assert "whole k rows of B" in (phase_gemm_sgmat.tiles_refusal(t, geom, h200_caps()) or "")
