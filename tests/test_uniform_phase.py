"""uniform_phase_gemm: every stride phase in one GEMM whose rows are out-channels x phases, where every kernel dim is a
multiple of its stride (app/variants/uniform_phase.py). Which requests it covers and with which tiles, what it
refuses, the window arithmetic the template relies on, and its results with the GPU tiles forced on SwiftShader
(its software defaults run every test.json case it covers in tests/test_browser_variants.py)."""
import itertools
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from app.planner import candidates, plan, refusal
from app.render import render
from app.shapes import infer
from app.variants import VARIANTS, uniform_phase
from tests.browser_session import passed_with_params_forced
from tests.test_gpu_caps import h200_caps
from tools.wgsl.matrix import _geom

SOFTWARE = h200_caps(architecture="swiftshader", is_fallback=True)
BENCH_JSON = Path(__file__).resolve().parents[1] / "bench.json"
BENCH = {(c["tier"], c["name"]): c for c in json.loads(BENCH_JSON.read_text())["cases"]}


def bench_geometry(tier, name, dtype="float32"):
    case = BENCH[(tier, name)]
    return _geom(case["x"], case["w"], case["attributes"], case["bias"], dtype)


# `full` layers of few out-channels and stride phases as deep as each other, where it was measured fastest on the
# H200 (docs/h200/session22/call3/ab.md): (name, its GPU tiles (tm, tn, rm, rn, tk))
UNIFORM_LAYERS = [
    ("fcn8s_upscore8_k16s8", (128, 64, 8, 4, 8)),  # 21 out-channels x 64 phases
    ("vnet_up_k2s2_c16", (128, 64, 8, 4, 8)),  # 16 x 8, 3D
    ("fsrcnn_deconv_k9s3p4", (16, 128, 2, 8, 8)),  # 1 x 9 rows: the few-rows tile
    ("dcgan_rgb_k4s2p1", (16, 128, 2, 8, 8)),  # 3 x 4
]


def _names(geom, caps) -> list[str]:
    return [c.variant for c, _ in candidates(geom, caps)]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name, tiles", UNIFORM_LAYERS)
def test_few_out_channels_with_uniform_phases_are_covered_by_one_gemm_over_every_phase(name, tiles, dtype):
    geom = bench_geometry("full", name, dtype)
    assert "uniform_phase_gemm" in _names(geom, h200_caps())
    launch = plan(geom, h200_caps(), "uniform_phase_gemm")
    assert tuple(launch.tiles[k] for k in uniform_phase.PARAMS) == tiles
    (gemm,) = launch.dispatches  # the weights are read in place: no packing pass, no scratch
    assert gemm.template == uniform_phase.TEMPLATE and not launch.weight_passes and not launch.scratch


def test_phases_of_unequal_taps_leave_a_bench_layer_to_the_other_kernels():
    geom = bench_geometry("large", "cyclegan_up_k3s2p1op1")  # k3 s2: phases of 1, 2, 2 and 4 taps
    assert "multiple of its stride" in VARIANTS["uniform_phase_gemm"].why_not(geom, h200_caps())
    names = _names(geom, h200_caps())
    assert "uniform_phase_gemm" not in names and "phase_gemm" in names


def test_software_adapters_take_its_cpu_tiles():
    for name, _ in UNIFORM_LAYERS:
        geom = bench_geometry("full", name)
        assert "uniform_phase_gemm" in _names(geom, SOFTWARE)
        forced = plan(geom, SOFTWARE, "uniform_phase_gemm")
        assert tuple(forced.tiles[k] for k in uniform_phase.PARAMS) == uniform_phase._CPU


@pytest.mark.parametrize("attrs, why", [
    ({"strides": [2, 2], "dilations": [2, 1]}, "every dilation is 1"),
    ({"strides": [2, 3]}, "multiple of its stride"),
])
def test_it_refuses_phases_of_unequal_taps(attrs, why):
    geom = infer((1, 4, 5, 5), (4, 3, 4, 4), None, attrs)
    assert why in refusal(geom, h200_caps(), "uniform_phase_gemm")


@pytest.mark.parametrize("out, s, pad", itertools.product((1, 7, 16), (1, 2, 3), (0, 1, 4, -2)))
def test_the_window_positions_cover_every_output_once(out, s, pad):
    (jo, span), = uniform_phase.window_spans(SimpleNamespace(out_spatial=(out,), strides=(s,), pads_begin=(pad,)))
    # row phase r and window position jj land at o = jj * s + r - pad: every o in [0, out) exactly once
    landed = sorted(o for jj in range(jo, jo + span) for r in range(s) if 0 <= (o := jj * s + r - pad) < out)
    assert landed == list(range(out))
    assert all(any(0 <= jj * s + r - pad < out for r in range(s)) for jj in (jo, jo + span - 1))  # no idle ends


def test_loads_are_masked_where_they_are_staged():
    launch = plan(bench_geometry("full", "fcn8s_upscore8_k16s8"), h200_caps(), "uniform_phase_gemm")
    wgsl = render(launch.dispatches[0].template, launch.dispatches[0].render_params)
    assert "la0 = w[select(0, " in wgsl and "lb0 = x[select(0, " in wgsl  # unmasked into the registers
    assert "select(0.0, f32(la0), (ma0 & 1u) != 0u)" in wgsl  # masked as staged


@pytest.mark.browser
@pytest.mark.parametrize("tiles", [uniform_phase._GPU, uniform_phase._GPU_FEW_ROWS])
def test_every_test_json_case_passes_with_the_gpu_tiles_forced_in_chromium(page, tiles):
    passed = passed_with_params_forced(page, "uniform_phase_gemm", dict(zip(uniform_phase.PARAMS, tiles)))
    assert len(passed) >= 100, f"{tiles} ran {len(passed)} cases"
