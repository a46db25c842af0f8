"""The stride-phase GEMMs' launch geometry in CPython: tile defaults as the H200 sweep set them, the split
reduction (inside the workgroup and across workgroups), refusals that name the broken invariant, the sweep
helper that forces the variant, and where loads keep the step state; split-K's results against the float64
reference on SwiftShader."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.planner import plan
from app.render import render
from app.shapes import infer
from app.variants import phase_gemm, phase_gemm_sgmat
from tests.test_gpu_caps import H200, h200_caps

ROOT = Path(__file__).resolve().parents[1]

RULES = phase_gemm.rules(h200_caps())  # the H200 table's thresholds of the GPU rules


def tiles(x, w, attrs=None, caps=None):
    return plan(infer(x, w, None, attrs or {}), caps or h200_caps(), "phase_gemm").tiles


def test_narrow_out_channels_get_64_wide_tiles_wide_ones_128():
    assert tiles((1, 128, 256, 256), (128, 64, 2, 2), {"strides": [2, 2]})["tn"] == 64
    wide = tiles((1, 256, 16, 16, 16), (256, 128, 2, 2, 2), {"strides": [2, 2, 2]})
    assert (wide["tm"], wide["tn"], wide["rm"], wide["rn"]) == (128, 128, 8, 8)  # 256 workgroups
    few = tiles((1, 1024, 32, 32), (1024, 512, 2, 2), {"strides": [2, 2]})
    assert (few["tm"], few["tn"]) == (64, 128)  # 128 x 128 would make only 128 workgroups


def test_few_outputs_with_a_long_reduction_split_it_in_slices_and_across_workgroups():
    geom = infer((1, 1024, 4, 4), (1024, 512, 4, 4), None, {"strides": [2, 2], "pads": [1, 1, 1, 1]})
    launch = plan(geom, h200_caps(), "phase_gemm")
    t = launch.tiles
    assert (t["tm"], t["ks"]) == (16, 4) and t["kz"] > 1  # 64 workgroups of 16 x 32 tiles, 4 slices each
    assert phase_gemm.workgroup_count(geom, t) * t["kz"] >= RULES["fill"]
    assert phase_gemm.workgroup_count(geom, t) * t["kz"] // 2 < RULES["fill"]  # the smallest such kz
    assert len(launch.dispatches) == 2 and launch.scratch == {"parts": t["kz"] * geom.y_size * 4}
    # slices of 16 steps (a DCGAN's third layer): short already, 8 of them in one dispatch
    short = tiles((1, 256, 8, 8), (256, 128, 4, 4), {"strides": [2, 2], "pads": [1, 1, 1, 1]})
    assert (short["tm"], short["ks"], short["kz"]) == (16, 8, 1)
    # no room for the partial sums: 8 slices, one dispatch
    small = h200_caps(limits=H200["limits"] | {"maxBufferSize": 1 << 16, "maxStorageBufferBindingSize": 1 << 16})
    launch = plan(geom, small, "phase_gemm")
    assert (launch.tiles["ks"], launch.tiles["kz"]) == (8, 1)
    assert len(launch.dispatches) == 1 and len(launch.weight_passes) == 1 and not launch.scratch
    # a short reduction is not split, however few the outputs
    assert tiles((1, 16, 4, 4), (16, 16, 2, 2), {"strides": [2, 2]})["ks"] == 1


# Small, deep GEMMs the H200 timed at 2.5-2.7x cuDNN's time with too few workgroups (the split-K rule's cases).
SMALL_DEEP = [((1, 256, 32, 32), (256, 256, 3, 3), {"pads": [1] * 4}),
              ((1, 64, 16, 16, 16), (64, 64, 3, 3, 3), {"pads": [1] * 6}),
              ((8, 256, 8, 8), (256, 128, 4, 4), {"strides": [2, 2], "pads": [1] * 4})]


@pytest.mark.parametrize("x, w, attrs", SMALL_DEEP)
@pytest.mark.parametrize("bias", [False, True])
def test_many_rows_with_a_long_reduction_split_it_across_workgroups_then_sum(x, w, attrs, bias):
    geom = infer(x, w, [w[1]] if bias else None, attrs)
    launch = plan(geom, h200_caps(), "phase_gemm", tables=[])  # its defaults: the table has tiles for dcgan_batch8
    t = launch.tiles
    assert t["kz"] > 1 and t["ks"] == 1 and (t["tm"], t["tn"]) == (64, 64)
    gemm, total = launch.dispatches
    assert phase_gemm.workgroup_count(geom, t) * t["kz"] >= RULES["fill"]
    assert dict(gemm.uniforms)["tiles"] == phase_gemm.workgroup_count(geom, t) * t["kz"]
    assert gemm.bindings == ("x", "wp", "parts") and not gemm.render_params["has_bias"]  # the bias is added once
    assert total.template == phase_gemm.SPLIT_SUM
    assert total.bindings == (("parts", "b", "y") if bias else ("parts", "y"))
    assert launch.scratch == {"parts": t["kz"] * geom.y_size * 4}


def test_split_k_stops_short_of_few_steps_per_split_and_skips_short_reductions():
    # 64 in-channels x 9 taps = 36 steps of 16: 4 splits of 9 (8 would leave 4 each), short of 2 * FILL.
    geom = infer((1, 64, 32, 32), (64, 64, 3, 3), None, {"pads": [1] * 4})
    t = plan(geom, h200_caps(), "phase_gemm").tiles
    assert t["kz"] == 4 and phase_gemm.workgroup_count(geom, t) * 4 < 2 * RULES["fill"]
    # 16 x 9 = 144 multiply-adds per output: not split, however few the workgroups
    assert tiles((1, 16, 64, 64), (16, 16, 3, 3), {"pads": [1] * 4})["kz"] == 1


def test_split_k_needs_room_for_its_partial_sums():
    x, w, attrs = SMALL_DEEP[0]
    small = h200_caps(limits=H200["limits"] | {"maxStorageBufferBindingSize": 4 << 20})  # y is 1 MiB
    assert tiles(x, w, attrs, small)["kz"] == 4  # 8 splits would need 8 MiB
    assert tiles(x, w, attrs, h200_caps(limits=H200["limits"] | {"maxBufferSize": 1 << 20}))["kz"] == 1


@pytest.mark.parametrize("x, w, attrs", SMALL_DEEP)
def test_float16_matrices_split_small_deep_gemms_as_phase_gemm_does(x, w, attrs):
    geom = infer(x, w, None, attrs, {"x": "float16", "w": "float16"})
    t = phase_gemm_sgmat.default_tiles(geom, h200_caps())
    tm, tn, tks = phase_gemm_sgmat._tile(t, {"M": 16, "N": 16, "K": 16})
    assert t["kz"] == phase_gemm.split_k(geom, h200_caps(), tm, tn, tks) > 1
    launch = plan(geom, h200_caps(), "phase_gemm_sgmat")
    gemm = launch.dispatches[-2]  # after cl's repack of x, if any
    assert launch.tiles["kz"] == t["kz"] and gemm.bindings == ("xc" if t["cl"] else "x", "wp", "parts")
    assert launch.dispatches[-1].template == phase_gemm.SPLIT_SUM


def test_float16_matrices_do_not_split_a_gemm_that_fills_the_gpu():
    # `large` stride1_3d_64_3x3x3: 256 workgroups of 128 x 64 tiles; split, it ran slower on an H200.
    geom = infer((1, 64, 32, 32, 32), (64, 64, 3, 3, 3), None, {"pads": [1] * 6}, {"x": "float16", "w": "float16"})
    assert phase_gemm_sgmat.default_tiles(geom, h200_caps())["kz"] == 1


def test_software_adapters_get_small_blocks_loaded_straight_into_workgroup_memory():
    caps = h200_caps(architecture="swiftshader", is_fallback=True)
    assert tiles((1, 64, 9, 9), (64, 32, 4, 4), {"strides": [2, 2]}, caps) == dict(
        zip(phase_gemm.PARAMS, phase_gemm._CPU_SHAPE)) | {"direct": 1}
    assert all(tiles(x, w, attrs, caps)["kz"] == 1 for x, w, attrs in SMALL_DEEP)


@pytest.mark.parametrize("x, w, attrs", [((1, 64, 9, 9), (64, 32, 4, 4), {"strides": [2, 2]}), *SMALL_DEEP])
def test_gpus_stage_loads_through_registers(x, w, attrs):
    launch = plan(infer(x, w, None, attrs), h200_caps(), "phase_gemm")
    assert "direct" not in launch.tiles and all("direct" not in d.render_params for d in launch.dispatches)


@pytest.mark.parametrize("change, words", [
    ({"tn": 48, "rn": 6}, "rn must be a multiple of 4"),
    ({"tm": 100, "rm": 8}, "register blocks must divide the tile"),
    ({"tm": 128, "tn": 128, "rm": 1, "rn": 4}, "exceed the device's limit"),
    ({"tm": 128, "tn": 128, "tk": 64}, "workgroup memory"),
    ({"kz": 0}, "positive integers"),
    ({"kz": 2.0}, "positive integers"),
    ({"direct": 2}, "direct (loads straight into workgroup memory) must be 0 or 1"),
])
def test_tile_refusals_name_the_broken_invariant(change, words):
    geom = infer((1, 64, 9, 9), (64, 32, 4, 4), None, {"strides": [2, 2]})
    t = phase_gemm.default_tiles(geom, h200_caps()) | change
    assert words in phase_gemm.tiles_refusal(t, geom, h200_caps())


@pytest.mark.parametrize("limits, words", [
    ({"maxStorageBufferBindingSize": 1 << 20}, "storage buffer limit of 1048576 bytes"),
    ({"maxBufferSize": 1 << 20}, "storage buffer limit of 1048576 bytes"),
    ({"maxStorageBufferBindingSize": 1 << 40}, "past i32 indexing"),
])
@pytest.mark.parametrize("variant", [phase_gemm, phase_gemm_sgmat])
def test_split_k_refuses_partial_sums_past_the_device_or_i32(variant, limits, words):
    f16 = {"x": "float16", "w": "float16"}  # the H200's matrices are f16
    # y of 512 elements (4 KiB of kz 2 partials), of 540800 (4.3 MB) and of 2^30 (2 x 2^30: past i32)
    small = infer((1, 64, 1, 1), (64, 128, 2, 2), None, {}, f16)
    geom = (infer((1, 1, 16384, 16384), (1, 1, 2, 2), None, {"strides": [2, 2]}, f16) if "i32" in words
            else infer((1, 64, 64, 64), (64, 128, 2, 2), None, {}, f16))
    caps = h200_caps(limits=H200["limits"] | limits)
    # the same tiles on both requests: va (1x1 on the big one) would be refused on `small`'s 2x2 kernel
    t = variant.default_tiles(geom, caps) | {"kz": 2} | ({"va": 0} if variant is phase_gemm_sgmat else {})
    assert words in variant.tiles_refusal(t, geom, caps)
    assert variant.tiles_refusal(t, small, caps) is None


def test_the_sweep_helper_forces_the_variant_and_replaces_its_grid():
    grid = {"tm": [16], "ks": [1, 2]}
    out = subprocess.run([sys.executable, "tools/gpu/as_dtype.py", "float16", "--variant", "phase_gemm",
                          "--grid", json.dumps(grid)], cwd=ROOT, capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert {c["dtype"] for c in doc["cases"]} == {"float16"}
    assert {c["variant"] for c in doc["cases"]} == {"phase_gemm"}
    assert doc["tuning"]["grids"]["phase_gemm"] == grid


# Forced split-K on SwiftShader: rank 1-3, grouped, with and without bias, vec4 and scalar sums (y sizes 360
# and 1078), kz past some phases' step count (rank 1: 2 steps a phase; rank 3: 1 to 8), and stride 3 with
# kernel 2, where a phase has outputs but no taps (its partial sums must still be written: zeros).
SPLIT_K_CASES = [
    ("rank1_grouped", [2, 12, 9], [12, 5, 4], True, {"group": 2, "strides": [2], "pads": [1, 1]}),
    ("rank2_phase_without_taps", [1, 6, 4, 5], [6, 7, 2, 2], False, {"strides": [3, 3]}),
    ("rank2_deep", [1, 40, 5, 5], [40, 8, 3, 3], True, {"pads": [1, 1, 1, 1], "dilations": [2, 1]}),
    ("rank3", [1, 9, 3, 4, 3], [9, 10, 3, 2, 3], True, {"strides": [2, 1, 3], "pads": [1, 0, 0, 0, 1, 2]}),
]
SPLIT_K_GRID = {"kz": [2, 3, 4], "ks": [1, 2]}


def checked_tuning(node_host, cases: list, grid: dict, seed: int) -> dict:
    """The tuner's table for phase_gemm forced on (name, x, w, bias, attributes) cases over `grid`: it checks
    every candidate against the float64 reference before timing it, so none may be rejected."""
    fill = {"distribution": "uniform", "low": -1.0, "high": 1.0, "seed": seed}
    cases = [{"name": name, "tier": "t", "x": x, "w": w, "bias": bias, "attributes": attrs, "variant": "phase_gemm"}
             for name, x, w, bias, attrs in cases]
    doc = {"fill": fill, "cases": cases, "tuning": {"grids": {"phase_gemm": grid}}}
    table = node_host.py("tune", json.dumps(doc), "t", None, 1)["table"]
    assert table["rejected"] == []
    return table


def test_loads_through_registers_and_straight_into_workgroup_memory_both_match_on_swiftshader(node_host):
    """GPUs run the loads staged through registers (direct 0), software adapters the direct ones (whose splits
    the test below checks): both are checked here against the float64 reference."""
    grid = {"direct": [0, 1]}
    table = checked_tuning(node_host, SPLIT_K_CASES, grid, 7)
    measured = {m["case"]: {json.loads(k).get("direct", 0) for k in m["medians"]} for m in table["measured"]}
    assert measured == {f"t/{name}/float32": {0, 1} for name, *_ in SPLIT_K_CASES}


def test_forced_split_k_matches_the_reference_on_swiftshader(node_host):
    """The tuner checks every candidate of the grid (over SwiftShader's defaults, kz 1) against the float64
    reference before timing it; none may be rejected, and none refused (each is measured)."""
    table = checked_tuning(node_host, SPLIT_K_CASES, SPLIT_K_GRID, 5)
    wanted = {(1, 1)} | {(ks, kz) for ks in SPLIT_K_GRID["ks"] for kz in SPLIT_K_GRID["kz"]}
    measured = {m["case"]: {(json.loads(k)["ks"], json.loads(k)["kz"]) for k in m["medians"]}
                for m in table["measured"]}
    assert measured == {f"t/{name}/float32": wanted for name, *_ in SPLIT_K_CASES}


F16 = {"x": "float16", "w": "float16"}


WIDEST = {"sg_m": 2, "sg_n": 2, "cm": 4, "cn": 4}


@pytest.mark.parametrize("x, w, attrs, dtypes, variant, forced, decoded", [
    # phase_gemm_sgmat's widest tiles (4 x 4 result matrices a subgroup) on A gathered in 2D: `large`
    # grouped_g2_wide ran 0.150 ms with the step state against 0.085 decoding per load (H200, session 14); its
    # default tiles now spread over 4 x 4 subgroups of 2 x 2 matrices, which keep the state (0.083, session 15)
    ((1, 512, 64, 64), (512, 128, 4, 4), {"group": 2, "strides": [2, 2], "pads": [1] * 4}, F16, "phase_gemm_sgmat",
     WIDEST, True),
    ((1, 512, 64, 64), (512, 128, 4, 4), {"group": 2, "strides": [2, 2], "pads": [1] * 4}, F16, "phase_gemm_sgmat",
     None, False),
    # the same tiles in 1D (`large` hifigan_512: 0.089 -> 0.080 ms with the state), and on A loaded as vectors
    # (`large` proj_512: 0.036 -> 0.034)
    ((1, 512, 2000), (512, 256, 16), {"strides": [8], "pads": [4, 4]}, F16, "phase_gemm_sgmat", None, False),
    ((1, 512, 128, 128), (512, 256, 1, 1), {}, F16, "phase_gemm_sgmat", None, False),
    # phase_gemm, both structures (`large` dcgan_1024 0.052 -> 0.044 ms, unet3d_256 0.110 -> 0.093)
    ((1, 1024, 4, 4), (1024, 512, 4, 4), {"strides": [2, 2], "pads": [1] * 4}, None, "phase_gemm", None, False),
    ((1, 1024, 32, 32), (1024, 512, 2, 2), {"strides": [2, 2]}, None, "phase_gemm", None, False),
])
def test_loads_keep_the_step_state_but_on_the_widest_matrix_tiles_over_gathered_2d_or_3d_a(x, w, attrs, dtypes,
                                                                                          variant, forced, decoded):
    geom = infer(x, w, None, attrs, dtypes)
    launch = plan(geom, h200_caps(), variant, forced)
    assert not forced or all(launch.tiles[k] == v for k, v in forced.items())
    gemm = next(d for d in launch.dispatches if "gemm" in d.template)
    source = render(gemm.template, gemm.render_params)
    assert ("s_c0" not in source and "chunk / p.c_chunks" in source) == decoded
    assert ("s_c0 += " in source and "chunk / p.c_chunks" not in source) == (not decoded)
