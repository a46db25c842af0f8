"""The cost model (app/cost_model.py): every output a main pass computes, its tiles' padding included, pays its
indexing and store (on a software adapter that is what separates a tiled GEMM that pads a depthwise layer's one channel
per group to its tile from the gather kernel); each kernel's threads pay its own overhead; a workgroup fills whole SIMD
groups and one wider than the adapter runs in turns; a tiled GEMM counts the work its workgroups run
(docs/decisions.md#cost-model)."""
import math
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
    assert gather.outputs == -(-DEPTHWISE.y_size // 64) * 64  # y's, an invocation each, to whole workgroups of 64
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
    """The GEMM variants (subgroup-matrix ones too, whose tile parameters are named otherwise) declare their tiles,
    the gather kernels their deepest output's reduction; the grouped kernels declare none."""
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
    assert {"nchw2d_gather", "ncl1d_gather"} <= declared, declared
    assert not declared & {"nchw2d_grouped_stride_phase", "ncl1d_grouped_stride_phase"}, declared


def test_the_gather_kernel_lasts_as_long_as_its_deepest_output():
    """A 1x1 input reaches a quarter of a k4 s2 d2 layer's outputs, each through one tap and all 1024 in-channels: the
    gather's workgroups run that depth, four times the layer's mean (the H100 ran it at 4.1x the split-K GEMM that
    the mean had it beat)."""
    latent = infer((1, 1024, 1, 1), (1024, 512, 4, 4), None,
                   {"strides": [2, 2], "dilations": [2, 2], "pads": [2, 2, 3, 3]}, {n: "float16" for n in "xwb"})
    plan = VARIANTS["nchw2d_gather"].configured(latent, H200)
    assert plan.tile_depth == 1024
    assert cost_model.features(plan, latent).madds == 4 * latent.multiply_adds()
    # a 16x16 input: each output of a k4 s2 layer reaches 2 x 2 taps
    wide = infer((1, 8, 16, 16), (8, 4, 4, 4), None, {"strides": [2, 2]}, {n: "float32" for n in "xwb"})
    assert VARIANTS["nchw2d_gather"].configured(wide, H200).tile_depth == 8 * 4


def _tile(invocations: int, workgroups: int):
    return cost_model.Features("phase_gemm", "float32", 1, workgroups * invocations * 1000, workgroups, invocations,
                               0, 0, workgroups * invocations)


def test_a_workgroup_fills_whole_simd_groups_and_one_wider_than_the_adapter_runs_in_turns():
    """64 lanes in SIMD groups of 4: 24 workgroups of 5 invocations take 8 lanes each (8 at once, 3 turns; counted as
    5 lanes, 12 at once and 2 turns); 10 of 128 take 2 turns each, not one at 128 lanes' rate. A model with no `simd`
    (a table fitted before it: the H200's) counts invocations as they are."""
    model = {"resident": 64, "simd": 4, "launch_ms": 0.0, "bytes_per_ms": 1e12, "invocation_ms": 0.0,
             "rates": {"phase_gemm/float32": 1.0}}
    assert cost_model.waves(_tile(5, 24), model) == 3
    assert cost_model.waves(_tile(5, 24), dict(model, simd=1)) == 2
    assert cost_model.waves(_tile(128, 10), model) == 20
    # the compute term: turns x the multiply-adds an invocation runs (1000) / its rate
    assert cost_model.predict(_tile(128, 10), model) == pytest.approx(20 * 1000)
    without = {k: v for k, v in model.items() if k != "simd"}
    assert cost_model.waves(_tile(5, 24), without) == 2 and cost_model.waves(_tile(64, 100), without) == 100


def test_the_h200_table_has_no_simd_nor_overheads_and_predicts_as_it_was_fitted():
    """Fitted before the terms existed (its runs were not kept): every kernel's overhead is 1 and its waves are
    ceil(workgroups / (resident // invocations)), as its rates were fitted under."""
    from app import tuning_tables

    model = tuning_tables.cost_model(H200)
    assert "simd" not in model and not model.get("overheads")
    geom = infer((1, 64, 16, 16), (64, 32, 4, 4), None, {"strides": [2, 2], "pads": [1] * 4})
    seen = 0
    for variant in VARIANTS.values():
        plan = variant.configured(geom, H200)
        if isinstance(plan, Refusal):
            continue
        f = cost_model.features(plan, geom)
        assert cost_model.overhead(model, f.variant, f.dtype, f.structure) == 1.0
        assert cost_model.waves(f, model) == math.ceil(f.workgroups / (model["resident"] // f.invocations))
        seen += 1
    assert seen >= 5


def test_fit_recovers_each_kernels_overhead_and_one_its_rows_cannot_show_stays_at_one(monkeypatch):
    """Rows made by a model whose gather kernel's outputs cost 3x the adapter's and whose GEMM's 0.3x: the fit finds
    each kernel's cost an output (its overhead times the adapter's; the two trade off, their product is what rows
    show). A third kernel whose rows are all arithmetic (its fixed part under 1% of each) stays at 1: the prior holds
    what its rows cannot tell."""
    truth = {"resident": 256, "simd": 1, "launch_ms": 0.05, "bytes_per_ms": 1e9, "invocation_ms": 1e-5,
             "output_ms": 1e-4, "rates": {"phase_gemm/float32": 500.0, "nchw2d_gather/float32": 50.0,
                                          "uniform_phase_gemm/float32": 5.0},
             "overheads": {"phase_gemm/float32": 0.3, "nchw2d_gather/float32": 3.0, "uniform_phase_gemm/float32": 1.0}}
    rng = random.Random(11)
    rows = []
    for _ in range(60):
        variant = rng.choice(["phase_gemm", "nchw2d_gather", "uniform_phase_gemm"])
        outputs = rng.randrange(1_000, 2_000_000)
        depth = 4096 if variant == "uniform_phase_gemm" else rng.choice([1, 8, 64, 512])
        f = cost_model.Features(variant, "float32", 1, outputs * depth, max(1, outputs // 1024), 64, 1000, 0,
                                outputs // rng.choice([1, 16]), outputs=outputs)
        rows.append((f, cost_model.predict(f, truth)))
    fitted = cost_model.fit(rows, sweeps=3)
    for key in ("nchw2d_gather/float32", "phase_gemm/float32"):
        assert fitted["overheads"][key] * fitted["output_ms"] == pytest.approx(
            truth["overheads"][key] * truth["output_ms"], rel=0.25), key
    assert fitted["overheads"]["uniform_phase_gemm/float32"] == pytest.approx(1.0, abs=0.01)
    assert cost_model._loss(rows, fitted) < 0.2
    # fitted with every overhead held at 1 (each kernel's threads cost the adapter's), the same rows fit far worse
    monkeypatch.setattr(cost_model, "OVERHEAD_RANGE", (0.0, 0.0))
    held = cost_model.fit(rows, sweeps=3)
    assert set(held["overheads"].values()) == {1.0}
    assert cost_model._loss(rows, held) > 10 * cost_model._loss(rows, fitted)
