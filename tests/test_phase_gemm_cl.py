"""phase_gemm's vector structure (docs/ceiling.md's f32 GEMM): cl (float32 GEMMs on A from x repacked
channels-last) and rv (on A gathered from x): when phase_gemm's defaults take them and with which tiles, what
they refuse and why, the repack pass and the buffers it binds; and their results against test.json's expected
outputs and the float64 reference on SwiftShader (headless Chromium, and Dawn in Node), where they run only when
forced. phase_gemm is forced throughout: its own defaults are what these tests are about (which covering variant
the planner runs on a layer is its cost model's or a measurement's choice, app/planner.py)."""
import json
import math

import pytest

from app import tuning_tables
from app.planner import plan
from app.render import render
from app.shapes import infer
from app.variants import phase_gemm
from tests.browser_session import passed_with_params_forced
from tests.test_gpu_caps import H200, h200_caps
from tests.test_phase_gemm import checked_tuning

RULES = phase_gemm.rules(h200_caps())  # the H200 table's thresholds of the GPU rules

F16 = {"x": "float16", "w": "float16"}
SOFTWARE = h200_caps(architecture="swiftshader", is_fallback=True)

# bench.json's `large` stride-1 dense float32 layers: (x, w, attributes, (tm, tn, kz) of its defaults, yv)
STRIDE1 = [
    # 128 x 128 tiles make 64 workgroups, 16K invocations: split in two across workgroups
    ((1, 256, 64, 64), (256, 256, 3, 3), {"pads": [1] * 4}, (128, 128, 2), 1),
    ((1, 64, 32, 32, 32), (64, 64, 3, 3, 3), {"pads": [1] * 6}, (128, 64, 1), 1),
]
# ... and the strided or 1x1 ones, which read NCHW x (base.channels_last_pays): in the vector structure (rv) where
# the reduction is 512+ deep or y leaves as vectors (phase_gemm.rows_as_vectors_pay), else the gathering kernel
STRIDED = [
    ((1, 1024, 32, 32), (1024, 512, 2, 2), {"strides": [2, 2]}, 1),  # 1024 deep
    ((16, 256, 16, 16), (256, 128, 4, 4), {"strides": [2, 2], "pads": [1] * 4}, 1),  # 256 x 4 taps
    ((1, 512, 2000), (512, 256, 16), {"strides": [8], "pads": [4, 4]}, 1),  # 512 x 2 taps
    ((1, 64, 64000), (64, 32, 4), {"strides": [2], "pads": [1, 1]}, 0),  # 128 deep
    ((1, 256, 16, 16, 16), (256, 128, 2, 2, 2), {"strides": [2, 2, 2]}, 0),  # 256 deep
    ((1, 512, 128, 128), (512, 256, 1, 1), {}, 1),  # y as vectors
    ((1, 64, 64, 64), (64, 64, 1, 1), {}, 1),  # 64 deep, y as vectors
]


@pytest.mark.parametrize("x, w, attrs, rv", STRIDED)
def test_strided_and_1x1_float32_layers_read_nchw_x_in_the_structure_that_pays(x, w, attrs, rv):
    launch = plan(infer(x, w, [w[1]], attrs), h200_caps(), "phase_gemm")
    assert "cl" not in launch.tiles
    assert launch.tiles.get("rv", 0) == rv
    want = phase_gemm.VEC4 if rv else phase_gemm.TEMPLATE
    assert launch.dispatches[-1].template == want and launch.dispatches[-1].render_params.get("xc", 0) == 0


def test_tiles_a_table_measured_on_the_gathering_kernel_keep_it():
    # A table entry that splits the reduction in 2 slices (ks 2, which rv refuses) says rv 0: the H200 table had one
    # for this class until session 14, when the rules beat it (app/variants/phase_gemm.py)
    h200 = h200_caps(vendor="nvidia", device="nvidia-h200")
    geom = infer((1, 512, 400), (512, 256, 16), [256], {"strides": [8], "pads": [4, 4]})
    assert plan(geom, h200_caps(), "phase_gemm").tiles["rv"] == 1  # its defaults, with no table
    entry = {"params": {"ks": 2, "rm": 4, "rn": 8, "tk": 8, "tm": 64, "tn": 64, "kz": 1, "rv": 0}}
    table = {"format": tuning_tables.FORMAT, "adapter": tuning_tables.adapter_key(h200),
             "variants": {"phase_gemm": {tuning_tables.shape_class(geom): entry}}}
    launch = plan(geom, h200, "phase_gemm", tables=[table])
    assert launch.tiles["ks"] == 2 and launch.tiles["rv"] == 0
    assert [d.template for d in launch.dispatches] == [phase_gemm.TEMPLATE]
    assert "rv needs ks 1" in phase_gemm.tiles_refusal(launch.tiles | {"rv": 1}, geom, h200)


@pytest.mark.parametrize("x, w, attrs, want, yv", STRIDE1)
def test_float32_stride1_layers_on_a_gpu_repack_x_then_run_the_vec4_gemm(x, w, attrs, want, yv):
    geom = infer(x, w, [w[1]], attrs)
    launch = plan(geom, h200_caps(), "phase_gemm")
    t = launch.tiles
    assert launch.variant == "phase_gemm" and t["cl"] == 1
    assert (t["tm"], t["tn"], t["kz"]) == want and (t["rm"], t["rn"], t["tk"], t["ks"]) == (8, 8, 16, 1)
    repack, gemm, *rest = launch.dispatches
    assert repack.template == phase_gemm.X_CHANNELS_LAST and gemm.template == phase_gemm.VEC4
    assert [d.template for d in rest] == ([phase_gemm.SPLIT_SUM] if t["kz"] > 1 else [])
    # xc[n][pixel][group][4 in-channels]: one vec4 of f32 per 4 in-channels, each group's rounded up to 4
    vectors = geom.group * -(-geom.in_per_group // 4)
    pixels = x[0] * math.prod(x[2:])
    assert launch.scratch["xc"] == pixels * vectors * 16
    # one workgroup per 32 pixels x 8 vectors of xc: a transpose through workgroup memory
    u, image = dict(repack.uniforms), math.prod(x[2:])
    assert u["tiles"] == x[0] * -(-image // 32) * -(-vectors // 8) and u["in_size"] == image
    assert repack.render_params["dtype"] == "float32"
    assert dict(gemm.uniforms)["xc_row"] == vectors and dict(gemm.uniforms)["xc_vecs"] == vectors // geom.group
    types = {name: kind for name, _, kind in gemm.render_params["bindings"]}
    assert types["xc"] == "array<vec4<f32>>" and "x" not in types
    out = "parts" if t["kz"] > 1 else "y"  # the split's f32 partial sums, added up into y by the sum pass
    assert types[out] == ("array<vec4<f32>>" if out == "parts" else "array<vec4<T>>" if yv else "array<T>")
    assert gemm.render_params["yv"] == yv
    # two buffers of a step of A and B
    assert launch.workgroup_bytes == 2 * 16 * (t["tm"] + t["tn"]) * 4
    invocations = phase_gemm.workgroup_count(geom, t) * (t["tm"] // t["rm"]) * (t["tn"] // t["rn"])
    assert t["tm"] == 128 and invocations * t["kz"] >= RULES["fill_invocations"]
    assert t["kz"] == 1 or invocations * t["kz"] // 2 < RULES["fill_invocations"]  # the smallest kz that does
    source = render(gemm.template, gemm.render_params)
    assert "xc[select(0, at, ok)]" in source and "x[" not in source.replace("xc[", "")
    # loads masked where they are stored, not as they land (_phase-gemm.wgsl.jinja, declare_marks)
    assert "la0 = xc[select(0, at, ok)];" in source and "select(vec4<f32>(), la0, (ma0 & 1u) != 0u)" in source
    assert "select(vec4<f32>(), xc[" not in source and "select(vec4<f32>(), wp[" not in source


def test_tiles_128_tall_only_where_they_fill_the_gpu():
    # 128 x 128 tiles: 128 row tiles x 4 col tiles = 512 workgroups; a quarter of the pixels, 128: 64 rows
    big = infer((1, 512, 128, 128), (512, 512, 3, 3), None, {"pads": [1] * 4})
    small = infer((1, 512, 64, 64), (512, 512, 3, 3), None, {"pads": [1] * 4})
    assert phase_gemm.default_tiles(big, h200_caps())["tm"] == 128
    assert phase_gemm.workgroup_count(small, {"tm": 128, "tn": 128}) < RULES["fill"]
    assert phase_gemm.default_tiles(small, h200_caps())["tm"] == 64


def test_split_reductions_keep_the_gathering_kernel_they_were_measured_on():
    # `large` dcgan_1024: 16 rows a phase; cl has no in-workgroup split
    geom = infer((1, 1024, 4, 4), (1024, 512, 4, 4), None, {"strides": [2, 2], "pads": [1] * 4})
    t = plan(geom, h200_caps(), "phase_gemm").tiles
    assert t["ks"] > 1 and "cl" not in t
    assert "ks must be 1" in phase_gemm.tiles_refusal(t | {"cl": 1}, geom, h200_caps())
    # 32 workgroups of whole tiles: split-K on the gathering kernel; cl splits too where forced, with a sum pass
    geom = infer((1, 256, 32, 32), (256, 256, 3, 3), [256], {"pads": [1] * 4})
    t = plan(geom, h200_caps(), "phase_gemm").tiles
    assert t["kz"] > 1 and "cl" not in t
    launch = plan(geom, h200_caps(), "phase_gemm", {"cl": 1})
    repack, gemm, total = launch.dispatches
    assert gemm.template == phase_gemm.VEC4 and total.template == phase_gemm.SPLIT_SUM
    assert gemm.bindings == ("xc", "wp", "parts") and ["parts", "read_write", "array<vec4<f32>>"] in gemm.render_params["bindings"]
    assert launch.scratch == {"parts": t["kz"] * geom.y_size * 4, "xc": 1024 * 64 * 16}


@pytest.mark.parametrize("x, w, attrs, want, yv", STRIDE1)
def test_software_adapters_and_float16_keep_the_gathering_kernel(x, w, attrs, want, yv):
    # no cl key at all: their plans are the ones made before cl existed
    assert "cl" not in plan(infer(x, w, None, attrs), SOFTWARE, "phase_gemm").tiles
    assert "cl" not in plan(infer(x, w, None, attrs, F16), h200_caps(), "phase_gemm").tiles
    assert plan(infer(x, w, None, attrs), SOFTWARE, "phase_gemm").tiles == dict(
        zip(phase_gemm.PARAMS, phase_gemm._CPU_SHAPE)) | {"direct": 1}


def test_forced_cl_runs_on_software_adapters_with_their_small_tiles():
    geom = infer((2, 20, 5, 7), (20, 12, 3, 3), None, {"strides": [2, 2], "pads": [1] * 4, "group": 2})
    launch = plan(geom, SOFTWARE, "phase_gemm", {"cl": 1})
    # direct (the gathering kernel's loads, on in software defaults) stays in the tiles; cl's template ignores it
    assert launch.tiles == dict(zip(phase_gemm.PARAMS, phase_gemm._CPU_SHAPE)) | {"direct": 1, "cl": 1}
    assert "direct" not in launch.dispatches[1].render_params
    assert [d.template for d in launch.dispatches] == [phase_gemm.X_CHANNELS_LAST, phase_gemm.VEC4]
    assert launch.scratch == {"xc": 2 * 35 * 2 * 3 * 16}  # 10 channels a group: 3 vectors, 2 zeros
    # forcing it off on a GPU gives the gathering kernel with the same tiles
    t = plan(geom, h200_caps(), "phase_gemm").tiles
    off = plan(geom, h200_caps(), "phase_gemm", {"cl": 0})
    assert off.tiles == t | {"cl": 0} and off.dispatches[0].template == phase_gemm.TEMPLATE


@pytest.mark.parametrize("change, words", [
    ({"cl": 2}, "must be 0 or 1"),
    ({"ks": 2}, "ks must be 1"),
    ({"tm": 64, "rm": 2}, "rm and tk multiples of 4"),
    ({"tk": 6}, "rm and tk multiples of 4"),
    ({"tm": 32, "tn": 32, "rm": 4, "rn": 4, "tk": 4}, "the same number of A and B vectors"),  # 64 invocations, 32 A vectors
])
def test_cl_refusals_name_the_broken_invariant(change, words):
    geom = infer((1, 64, 9, 9), (64, 32, 3, 3), None, {"pads": [1] * 4})
    t = phase_gemm.default_tiles(geom, h200_caps())
    assert t["cl"] == 1
    assert words in phase_gemm.tiles_refusal(t | change, geom, h200_caps())
    assert plan(geom, h200_caps(), "phase_gemm", change).tiles == t  # refused: the defaults run


def test_cl_refuses_float16_and_copies_of_x_past_the_device():
    geom = infer((1, 64, 9, 9), (64, 32, 3, 3), None, {"pads": [1] * 4})
    t = phase_gemm.default_tiles(geom, h200_caps())
    f16 = infer((1, 64, 9, 9), (64, 32, 3, 3), None, {"pads": [1] * 4}, F16)
    assert "float32 only" in phase_gemm.tiles_refusal(t, f16, h200_caps())
    small = h200_caps(limits=H200["limits"] | {"maxStorageBufferBindingSize": 64 * 81 * 4 - 16})
    assert "storage buffer limit" in phase_gemm.tiles_refusal(t, geom, small)
    assert "cl" not in phase_gemm.default_tiles(geom, small)  # the gathering kernel still runs


def test_the_f16_repack_of_phase_gemm_sgmat_renders_the_f16_form():
    # phase_gemm_sgmat plans the same pass: the 8-halves form, x read as f16, xc bound as u32 words
    geom = infer((2, 24, 5, 7), (24, 16, 3, 3), None, {"strides": [2, 2], "pads": [1] * 4}, F16)
    repack = plan(geom, h200_caps(), "phase_gemm_sgmat", {"va": 0, "cl": 1}).dispatches[0]
    assert repack.template == phase_gemm.X_CHANNELS_LAST and repack.render_params["dtype"] == "float16"
    assert ["xc", "read_write", "array<vec4<u32>>"] in repack.render_params["bindings"]
    source = render(repack.template, repack.render_params)
    assert source.startswith("enable f16;\nalias T = f16;\n\nstruct Params {")
    assert "words[3] = pack2x16float(vec2<f32>(tile[s + 198], tile[s + 231]));" in source  # channels 6, 7


@pytest.mark.parametrize("x, w, kz, cl", [
    ((1, 256, 32, 32), (256, 256, 3, 3), 4, 0),  # `full` stride1_3x3: split 4 ways, A gathered
    ((1, 64, 32, 32, 32), (64, 64, 3, 3, 3), 1, 1),  # `large` stride1_3d_64: unsplit, A repacked channels-last
])
def test_float16_stride1_gemms_repack_x_only_where_unsplit(x, w, kz, cl):
    geom = infer(x, w, [w[1]], {"pads": [1] * 2 * (len(x) - 2)}, F16)
    launch = plan(geom, h200_caps(), "phase_gemm_sgmat")
    assert (launch.tiles["kz"], launch.tiles["cl"], launch.tiles["vs"]) == (kz, cl, 1)
    templates = [d.template for d in launch.dispatches]
    assert (phase_gemm.X_CHANNELS_LAST in templates) == bool(cl)


# Every test.json case on phase_gemm with cl (or rv) forced, in the page (SwiftShader), since SwiftShader's defaults
# leave them off; what it skips: float16 (float32 only) and the variant's own refusals, never a crash.
@pytest.mark.browser
@pytest.mark.parametrize("params", [{"cl": 1}, {"rv": 1}, {"rv": 1, "ri": 1}])
def test_every_test_json_case_passes_with_the_vector_structure_forced_in_chromium(page, params):
    passed = passed_with_params_forced(page, "phase_gemm", params)
    assert len(passed) >= 100, f"{params} ran {len(passed)} cases"


# Dawn in Node on SwiftShader: the tuner checks every candidate against the float64 reference before timing
# it (ranks 1-3, grouped, padded channels, split-K, yv's vector stores at stride 1, bias or not).
CL_CASES = [
    ("rank1_grouped", [2, 12, 9], [12, 5, 4], True, {"group": 2, "strides": [2], "pads": [1, 1]}),
    ("rank2_stride1_vectors", [2, 10, 6, 6], [10, 9, 3, 3], True, {"pads": [1, 1, 1, 1]}),
    ("rank2_dilated", [1, 40, 5, 5], [40, 8, 3, 3], False, {"pads": [1, 1, 1, 1], "dilations": [2, 1]}),
    ("rank3", [1, 9, 3, 4, 3], [9, 10, 3, 2, 3], True, {"strides": [2, 1, 3], "pads": [1, 0, 0, 0, 1, 2]}),
]
@pytest.mark.parametrize("mode", ["cl", "rv"])
def test_forced_vector_structure_matches_the_reference_in_node(node_host, mode):
    table = checked_tuning(node_host, CL_CASES, {mode: [1], "ri": [0, 1], "kz": [1, 3], "tm": [32, 64], "rm": [4, 8]}, 7)
    for m in table["measured"]:
        params = [json.loads(k) for k in m["medians"]]
        assert sum(p.get(mode, 0) for p in params) >= 4, (m["case"], params)  # its candidates ran, checked
        assert sum(p.get(mode, 0) * p.get("ri", 0) for p in params) >= 4, (m["case"], params)  # interleaved too


def test_a_case_runs_with_forced_params_or_is_skipped_where_the_variant_refuses_them(node_host):
    # `python -m app cases test.json --variant phase_gemm --params '{"rv": 1}'` (the H200 proof of rv) runs each
    # case through this bridge call
    from tests.test_browser_variants import TEST_JSON
    names = node_host.py("load_cases", TEST_JSON.read_text())
    index = names.index("implicit_c1_2d_wide")
    ran = node_host.py("run_case_at", index, "phase_gemm", {"rv": 1, "tm": 64})
    assert ran["status"] == "PASS" and ran["variant"] == "phase_gemm", ran
    skipped = node_host.py("run_case_at", index, "phase_gemm", {"rv": 1, "ks": 2})
    assert skipped["status"] == "SKIP" and "does not take" in skipped["detail"], skipped


# rv's rows interleaved (ri) where that paid on the H200 (app/variants/phase_gemm.py, session 18): 1D GEMMs and GEMMs
# of one tap a phase; not 2D ones of several taps a phase, nor where y leaves as vectors (runs of 4 rows there).
RI = [
    ((1, 512, 2000), (512, 256, 16), {"strides": [8], "pads": [4, 4]}, 1),  # `large` hifigan_512: 1D, 2 taps
    ((1, 512, 256), (512, 256, 16), {"strides": [8], "pads": [4, 4]}, 1),  # `full` hifigan_k16s8p4: split in two
    ((1, 1024, 32, 32), (1024, 512, 2, 2), {"strides": [2, 2]}, 1),  # `large` unet_1024_k2s2: one tap
    ((1, 512, 64, 64), (512, 128, 4, 4), {"group": 2, "strides": [2, 2], "pads": [1] * 4}, 0),  # g2_wide: 4 taps
    ((1, 256, 64, 64), (256, 128, 3, 3), {"strides": [2, 2], "pads": [1] * 4, "output_padding": [1, 1]}, 0),
    ((1, 512, 128, 128), (512, 256, 1, 1), {}, 0),  # y as vectors
]


@pytest.mark.parametrize("x, w, attrs, ri", RI)
def test_rv_interleaves_its_rows_on_1d_and_one_tap_gemms_whose_y_leaves_a_scalar_at_a_time(x, w, attrs, ri):
    geom = infer(x, w, None, attrs)
    launch = plan(geom, h200_caps(), "phase_gemm")
    assert launch.tiles["rv"] == 1 and launch.tiles.get("ri", 0) == ri
    gemm = next(d for d in launch.dispatches if d.template == phase_gemm.VEC4)
    assert gemm.render_params["ri"] == ri
    # the rows a warp stores: runs of 4 ("(ty + 0) * 4 + 1") or consecutive across invocations ("ty + 8")
    source = render(gemm.template, gemm.render_params)
    interleaved = "let row = row_tile * %d + ty + %d;" % (gemm.render_params["tm"], gemm.render_params["tm"] // gemm.render_params["rm"])
    assert (interleaved in source) == bool(ri and not gemm.render_params["yv"])


def test_ri_must_be_a_switch_and_does_nothing_outside_the_vector_structure():
    geom = infer((1, 64, 300), (64, 32, 4), None, {"strides": [2]})
    t = {"tm": 64, "tn": 32, "rm": 4, "rn": 8, "tk": 8, "ks": 1, "kz": 1}
    assert "must be 0 or 1" in phase_gemm.tiles_refusal(t | {"rv": 1, "ri": 2}, geom, h200_caps())
    assert phase_gemm.tiles_refusal(t | {"rv": 1, "ri": 1}, geom, h200_caps()) is None
    gathering = [phase_gemm.configure(geom, h200_caps(), t | {"ri": ri}).dispatches[-1] for ri in (0, 1)]
    assert {d.template for d in gathering} == {phase_gemm.TEMPLATE}
    assert render(gathering[0].template, gathering[0].render_params) == render(gathering[1].template, gathering[1].render_params)


@pytest.mark.parametrize("x, w, attrs, rows", [
    # `large` proj_512_1x1_128px: 2D, 64 rows (H200, session 16: 0.181 ms against 0.183 on 128)
    ((1, 512, 128, 128), (512, 256, 1, 1), {}, 64),
    # `large` hifigan_512_k16s8p4: 1D keeps 128 rows (0.325 ms against 0.332 on 64)
    ((1, 512, 2000), (512, 256, 16), {"strides": [8], "pads": [4, 4]}, 128),
])
def test_rv_takes_64_row_tiles_in_2d_and_3d_where_the_gathering_kernel_takes_128_x_128(x, w, attrs, rows):
    geom = infer(x, w, [w[1]], attrs)
    gathering = phase_gemm._gathering_defaults(geom, h200_caps())
    assert (gathering["tm"], gathering["tn"], gathering["tk"]) == (128, 128, 8)
    t = plan(geom, h200_caps(), "phase_gemm").tiles
    assert (t["tm"], t["tn"], t["tk"], t["rv"]) == (rows, 128, 8, 1)


@pytest.mark.parametrize("x, w, attrs, rm, kz", [
    # 80 workgroups of 128 invocations on 8 x 8 blocks, 2048 products an output: 4 x 8 blocks make 20K
    # invocations, split in two 40K
    ((1, 1024, 320), (1024, 512, 8), {"strides": [4], "pads": [2, 2]}, 4, 2),
    # `full` hifigan_k16s8p4, 8K invocations and 1024 products: 4 x 8 blocks and two splits (0.082 ms on the H200,
    # session 14, against 0.118 as 8 x 8 unsplit)
    ((1, 512, 256), (512, 256, 16), {"strides": [8], "pads": [4, 4]}, 4, 2),
    # `full` unet_up_k2s2, 16K invocations on 8 x 8 blocks: 4 x 8 blocks fill the GPU, and a split would leave
    # each workgroup under RV_MIN_DEPTH (512 products; 0.079 ms split in two against 0.073 unsplit, session 12)
    ((1, 512, 32, 32), (512, 256, 2, 2), {"strides": [2, 2]}, 4, 1),
    # 32K invocations fill the GPU already (`large` unet_1024_k2s2: 0.180 ms unsplit, 0.230 in two)
    ((1, 1024, 32, 32), (1024, 512, 2, 2), {"strides": [2, 2]}, 8, 1),
])
def test_rv_fills_the_gpu_with_smaller_blocks_then_splits_a_deep_reduction_across_workgroups(x, w, attrs, rm, kz):
    geom = infer(x, w, None, attrs)
    t = plan(geom, h200_caps(), "phase_gemm").tiles
    assert (t["rv"], t["rm"], t["kz"]) == (1, rm, kz)
    invocations = phase_gemm.workgroup_count(geom, t) * (t["tm"] // t["rm"]) * (t["tn"] // t["rn"])
    depth = geom.in_per_group * phase_gemm.max_phase_taps(geom)
    if kz > 1:
        assert invocations * kz >= RULES["fill_invocations"] > invocations * kz // 2
        assert depth // kz >= RULES["rv_min_depth"]
    else:
        assert invocations >= RULES["fill_invocations"] or depth // 2 < RULES["rv_min_depth"]


@pytest.mark.parametrize("x, w, attrs, tiles", [
    # `large` vocoder_64: 32 out-channels (0.074 ms on the H200, session 14, against 0.126 on 128 x 64 tiles of 8 x 8
    # blocks at step 16)
    ((1, 64, 64000), (64, 32, 4), {"strides": [2], "pads": [1, 1]}, (128, 32, 4, 8)),
    # `full` hifigan_k4s2p1_long and `large` unet_128_k2s2_256px: 64 out-channels (0.041 and 0.269 ms against 0.046
    # and 0.296)
    ((1, 128, 8192), (128, 64, 4), {"strides": [2], "pads": [1, 1]}, (128, 64, 4, 16)),
    ((1, 128, 256, 256), (128, 64, 2, 2), {"strides": [2, 2]}, (128, 64, 4, 16)),
    # 21 out-channels (an FCN head, which uniform_phase_gemm covers too, tests/test_uniform_phase.py): 32 columns
    ((1, 21, 16, 16), (21, 21, 64, 64), {"strides": [32, 32]}, (128, 32, 4, 8)),
])
def test_narrow_unsplit_gemms_take_tiles_as_wide_as_their_out_channels(x, w, attrs, tiles):
    t = plan(infer(x, w, None, attrs), h200_caps(), "phase_gemm").tiles
    assert (t["tm"], t["tn"], t["rm"], t["rn"], t["tk"], t["ks"], t["kz"]) == (*tiles[:3], 8, tiles[3], 1, 1)


def test_narrow_gemms_decide_their_splits_on_the_tiles_the_splits_were_measured_on():
    # `full` stride1_3x3x3 (64 out-channels, 1728 products): 32 workgroups of 128 x 64 tiles, under SPLIT_BELOW,
    # so split across workgroups on 64 x 64 tiles as before the narrow tiles existed
    t = plan(infer((1, 64, 16, 16, 16), (64, 64, 3, 3, 3), None, {"pads": [1] * 6}), h200_caps(), "phase_gemm",
             tables=[]).tiles
    assert (t["tm"], t["tn"], t["rm"], t["kz"]) == (64, 64, 8, 4)


@pytest.mark.parametrize("columns, want", [(192, 64), (130, 64), (320, 64), (96, 128), (256, 128), (384, 128)])
def test_wide_tiles_take_the_columns_that_compute_the_fewest(columns, want):
    # `full` depthanything_b_k2s2 (192 out-channels): 0.042 ms on 64-column tiles against 0.050 on 128 (H200,
    # session 15, docs/h200/session15/sweep-phase_gemm-float32-fit.json); `holdout` hdemucs (192) 2.467 -> 1.929 ms
    geom = infer((1, 256, 64, 64), (256, columns, 2, 2), None, {"strides": [2, 2]})
    assert plan(geom, h200_caps(), "phase_gemm", tables=[]).tiles["tn"] == want


def test_devices_refusing_the_wide_tiles_keep_the_columns_their_variants_were_measured_against():
    geom = infer((1, 192, 37, 37), (192, 192, 2, 2), None, {"strides": [2, 2]})
    small = h200_caps(limits=H200["limits"] | {"maxComputeWorkgroupStorageSize": 16384})
    assert phase_gemm.default_tiles(geom, small)["tn"] == 128
    assert phase_gemm.default_tiles(geom, h200_caps())["tn"] == 64
