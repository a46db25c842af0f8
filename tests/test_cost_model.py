"""The cost model's per-output term (app/cost_model.py): every output a main pass computes, its tiles' padding
included, pays its indexing and store. On a software adapter that is what separates a tiled GEMM that pads a
depthwise layer's one channel per group to its tile from the gather kernel (docs/decisions.md#cost-model)."""
import random

import pytest

from app import cost_model
from app.plan import Refusal
from app.shapes import infer
from app.variants import VARIANTS
from tools.wgsl.matrix import devices

SWIFTSHADER = devices()["swiftshader"]
DEPTHWISE = infer((1, 8, 16, 16), (8, 1, 4, 4), None, {"strides": [2, 2], "group": 8})


def _features(variant: str):
    return cost_model.features(VARIANTS[variant].configured(DEPTHWISE, SWIFTSHADER), DEPTHWISE)


def test_a_tiled_kernel_counts_its_padded_outputs_and_the_gather_kernel_its_own():
    tiled, gather = _features("uniform_phase_gemm"), _features("nchw2d_gather")
    assert gather.outputs == DEPTHWISE.y_size
    # one output channel a group in a tile of tm rows: the padding is counted, as its workgroups compute it
    assert tiled.outputs >= 8 * DEPTHWISE.y_size


def test_a_model_without_the_term_predicts_as_before_and_with_it_the_padding_costs():
    model = {"resident": 64, "launch_ms": 0.01, "bytes_per_ms": 1e9, "invocation_ms": 0.0,
             "rates": {"uniform_phase_gemm/float32": 1e6, "nchw2d_gather/float32": 1e6}}
    tiled, gather = _features("uniform_phase_gemm"), _features("nchw2d_gather")
    with_term = dict(model, output_ms=1e-3)
    assert cost_model.predict(tiled, dict(model, output_ms=0.0)) == cost_model.predict(tiled, model)
    extra = cost_model.predict(tiled, with_term) - cost_model.predict(tiled, model)
    assert extra == pytest.approx(tiled.outputs * 1e-3)
    assert extra > 8 * (cost_model.predict(gather, with_term) - cost_model.predict(gather, model))


def test_fit_recovers_a_per_output_cost_from_rows_it_made(monkeypatch):
    truth = {"resident": 256, "launch_ms": 0.05, "bytes_per_ms": 1e6, "invocation_ms": 1e-6, "output_ms": 2e-4,
             "rates": {"phase_gemm/float32": 500.0, "nchw2d_gather/float32": 50.0}}
    rng = random.Random(7)
    rows = []
    for _ in range(60):
        variant = rng.choice(["phase_gemm", "nchw2d_gather"])
        outputs = rng.randrange(1_000, 2_000_000)
        # threads apart from outputs (a tiled kernel's invocation computes 16 of them): the two terms are told apart
        f = cost_model.Features(variant, "float32", 1, outputs * rng.choice([1, 8, 64, 512]), max(1, outputs // 1024),
                                64, 1000, 0, outputs // rng.choice([1, 16]), outputs=outputs)
        rows.append((f, cost_model.predict(f, truth)))
    fitted = cost_model.fit(rows)
    assert fitted["output_ms"] == pytest.approx(truth["output_ms"], rel=0.2)
    # its own rows fit back within a few percent each (rounding the resident count after the search left 1.6x a row)
    assert cost_model._loss(rows, fitted) < 0.1
    # without the term the same rows fit worse: outputs were not all the threads' or the multiply-adds' to explain
    monkeypatch.setitem(cost_model.RANGES, "output_ms", (-14.0, -13.9))
    assert cost_model._loss(rows, cost_model.fit(rows)) > 10 * cost_model._loss(rows, fitted)


H200 = devices()["h200"]


def test_a_gemm_counts_its_reduction_padded_to_whole_steps():
    """uniform_phase_gemm reduces tk in-channels a step: on a depthwise layer (one in-channel a group) every step is
    tk deep, and the model counts what the workgroups run, not the layer's multiply-adds."""
    plan = VARIANTS["uniform_phase_gemm"].configured(DEPTHWISE, H200)
    f = cost_model.features(plan, DEPTHWISE)
    taps = 4  # k4 s2: 2 x 2 taps a phase
    assert plan.tile_depth == plan.tiles["tk"] * taps
    assert f.madds == f.workgroups * plan.tiles["tm"] * plan.tiles["tn"] * plan.tiles["tk"] * taps
    dense = infer((1, 64, 16, 16), (64, 8, 4, 4), None, {"strides": [2, 2]})
    plan = VARIANTS["uniform_phase_gemm"].configured(dense, H200)
    assert plan.tile_depth == 64 * taps  # 64 in-channels: whole steps, no padding


@pytest.mark.parametrize("caps", [H200, SWIFTSHADER], ids=["h200", "swiftshader"])
def test_every_tiled_gemm_declares_its_work_and_it_covers_y(caps):
    """The GEMM variants (subgroup-matrix ones too, whose tile parameters are named otherwise) declare their tiles;
    the kernels that compute y's outputs one by one declare none."""
    shapes = [((1, 8, 16, 16), (8, 1, 4, 4), {"strides": [2, 2], "group": 8}),
              ((2, 24, 9, 7), (24, 5, 3, 4), {"strides": [2, 3], "group": 2}),
              ((1, 32, 8, 8), (32, 16, 3, 3), {"pads": [1, 1, 1, 1]}), ((1, 40, 16), (40, 3, 8), {"strides": [4]})]
    layers = [infer(x, w, None, attributes, {n: dtype for n in ("x", "w", "b")})
              for x, w, attributes in shapes for dtype in ("float32", "float16")]
    declared = set()
    for geom in layers:
        for name, variant in VARIANTS.items():
            plan = variant.configured(geom, caps)
            if isinstance(plan, Refusal):
                continue  # does not cover this layer here
            f = cost_model.features(plan, geom)
            if plan.tile_outputs:
                declared.add(variant.tuning_name)
                assert plan.tile_depth >= 1, name
                assert f.madds >= geom.multiply_adds() and f.outputs >= geom.y_size, name
            else:
                assert plan.tile_depth == 0 and f.madds == geom.multiply_adds(), name
    gemms = {"phase_gemm", "uniform_phase_gemm", "col2im_gemm_vec4", "stride1_implicit_gemm", "ncl1d_phase_tiled"}
    if caps is H200:
        gemms |= {"phase_gemm_sgmat", "stride1_halo_sgmat"}
    assert gemms <= declared, declared
    assert not declared & {"nchw2d_gather", "nchw2d_grouped_stride_phase", "ncl1d_grouped_stride_phase"}, declared
