"""The float64 reference (app/reference.py) against independent oracles, and test.json against it.

- onnxruntime's CPU provider (tools/ort_oracle.py) on 25 seeded random configurations, ranks 1-3;
- a direct per-output-element loop written from the definition, for the cases onnxruntime cannot run
  (SAME with a kernel smaller than the stride, output_padding >= stride) and negative totals;
- onnx.reference for SAME with a kernel smaller than the stride (group 1, where it is right);
- a hand-computed case, zero-size tensors, NaN / Inf propagation;
- test.json: its expected values equal the reference recomputed from its inputs, its coverage.
"""
from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from app.cases import parse_case_file
from app.errors import ConvTransposeError
from app.kernel import validate
from app.reference import conv_transpose_reference
from app.shapes import infer
from tools.ort_oracle import build_model, run_onnxruntime

ROOT = Path(__file__).resolve().parent.parent
TEST_JSON = ROOT / "test.json"


def reference(x, w, b=None, **attributes) -> np.ndarray:
    geom = infer(x.shape, w.shape, None if b is None else b.shape, attributes)
    return conv_transpose_reference(geom, x, w, b)


def assert_close(got, want, reduction: int):
    """float32 oracle vs float64 reference: the generator's tolerance (see tools/gen_test_cases.py)."""
    assert got.shape == want.shape
    atol = min(max(1e-5 * max(1, reduction), 1e-5), 1e-3)
    np.testing.assert_allclose(got.astype(np.float64), want, atol=atol, rtol=1e-4)


def naive(x, w, b=None, **attributes) -> np.ndarray:
    """ConvTranspose straight from the definition, one output element at a time (a gather, unlike the
    reference's scatter): y[n, m, o] = b[m] + sum over c in m's group, taps k, inputs i with
    i*s + k*d - pad_begin == o of x[n, c, i] * w[c, m - g*M/g, k]."""
    geom = infer(x.shape, w.shape, None if b is None else b.shape, attributes)
    y = np.zeros(geom.y_shape)
    cg, mg = geom.in_per_group, geom.out_per_group
    for n, m in itertools.product(range(geom.batch), range(geom.out_channels)):
        g = m // mg
        for o in itertools.product(*(range(d) for d in geom.out_spatial)):
            acc = 0.0 if b is None else float(b[m])
            for c in range(g * cg, (g + 1) * cg):
                for k in itertools.product(*(range(d) for d in geom.kernel)):
                    i = []
                    for oa, ka, s, d, pb, size in zip(o, k, geom.strides, geom.dilations, geom.pads_begin,
                                                      geom.in_spatial):
                        t = oa + pb - ka * d
                        if t % s or not 0 <= t // s < size:
                            break
                        i.append(t // s)
                    else:
                        acc += float(x[(n, c, *i)]) * float(w[(c, m - g * mg, *k)])
            y[(n, m, *o)] = acc
    return y


# ------------------------------------------------------------------------------- random configurations
MODES = ["pads", "SAME_UPPER", "SAME_LOWER", "VALID", "output_shape"]


def random_config(index: int):
    """Config `index`: rank 1 + index % 3, mode MODES[index % 5], everything else seeded random,
    redrawn until it is valid and inside what onnxruntime runs (output_padding < stride, SAME with
    an effective kernel >= stride)."""
    rng = np.random.default_rng(1000 + index)
    rank, mode = 1 + index % 3, MODES[index % len(MODES)]
    while True:
        group = int(rng.choice([1, 1, 2, 3]))
        cg, mg = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        if index % 7 == 3:
            cg, mg = 1, int(rng.integers(1, 3))  # depthwise
        n = int(rng.integers(1, 3))
        spatial = [int(rng.integers(1, 6 if rank < 3 else 4)) for _ in range(rank)]
        kernel = [int(rng.integers(1, 4)) for _ in range(rank)]
        strides = [int(rng.integers(1, 4)) for _ in range(rank)]
        dilations = [int(rng.integers(1, 3)) for _ in range(rank)]
        attributes = {"strides": strides, "dilations": dilations}
        if group > 1:
            attributes["group"] = group
        if mode == "pads":
            attributes["pads"] = [int(rng.integers(0, 3)) for _ in range(2 * rank)]
            attributes["output_padding"] = [int(rng.integers(0, s)) for s in strides]
        elif mode in ("SAME_UPPER", "SAME_LOWER"):
            attributes["auto_pad"] = mode
            if any((k - 1) * d + 1 < s for k, d, s in zip(kernel, dilations, strides)):
                continue  # onnxruntime clamps those (covered by test_same_kernel_smaller_than_stride)
        elif mode == "VALID":
            attributes["auto_pad"] = "VALID"
            attributes["output_padding"] = [int(rng.integers(0, s)) for s in strides]
        else:
            natural = [s * (i - 1) + (k - 1) * d + 1 for s, i, k, d in zip(strides, spatial, kernel, dilations)]
            # onnxruntime accepts targets from natural - (a lot) up to natural + stride - 1
            attributes["output_shape"] = [max(1, o + int(rng.integers(-2, s))) for o, s in zip(natural, strides)]
        x = rng.uniform(-1, 1, [n, group * cg, *spatial]).astype(np.float32)
        w = rng.uniform(-1, 1, [group * cg, mg, *kernel]).astype(np.float32)
        b = rng.uniform(-1, 1, [group * mg]).astype(np.float32) if rng.random() < 0.5 else None
        try:
            geom = infer(x.shape, w.shape, None if b is None else b.shape, attributes)
        except ConvTransposeError:
            continue
        if geom.y_size > 5000:
            continue
        return x, w, b, attributes


@pytest.mark.parametrize("index", range(25))
def test_reference_matches_onnxruntime(index):
    x, w, b, attributes = random_config(index)
    want = reference(x, w, b, **attributes)
    got = run_onnxruntime(x, w, b, attributes)
    assert_close(got, want, x.shape[1] // attributes.get("group", 1) * math.prod(w.shape[2:]))


def test_random_configs_cover_the_space():
    configs = [random_config(i) for i in range(25)]
    assert {x.ndim - 2 for x, *_ in configs} == {1, 2, 3}
    assert any(a.get("group", 1) > 1 for *_, a in configs)
    assert any(a.get("group", 1) == x.shape[1] > 1 for x, _, _, a in configs)  # depthwise
    assert any(b is not None for _, _, b, _ in configs) and any(b is None for _, _, b, _ in configs)
    assert any(max(a["strides"]) > 1 for *_, a in configs) and any(max(a["dilations"]) > 1 for *_, a in configs)
    assert any(any(a.get("output_padding", [0])) for *_, a in configs)
    assert any(x.shape[0] > 1 for x, *_ in configs)


# ----------------------------------------------------------------------------------------- hand-computed
def test_hand_computed_1d_stride2():
    # y[2i + t] += x[i] for t in 0..2: [1, 1, 1+2, 2, 2]
    y = reference(np.array([[[1.0, 2.0]]]), np.ones((1, 1, 3)), strides=[2])
    np.testing.assert_array_equal(y, [[[1, 1, 3, 2, 2]]])


def test_hand_computed_groups_and_bias():
    # group 2, one channel per group; weights differ per group: no cross-group leakage, bias per channel.
    x = np.array([[[1.0, 2.0], [10.0, 20.0]]])
    w = np.array([[[1.0, -1.0]], [[2.0, 3.0]]])
    y = reference(x, w, np.array([0.5, -0.5]), group=2)
    np.testing.assert_array_equal(y, [[[1.5, 1.5, -1.5], [19.5, 69.5, 59.5]]])


def test_hand_computed_pads_crop():
    y = reference(np.array([[[1.0, 2.0]]]), np.ones((1, 1, 3)), strides=[2], pads=[1, 2])
    np.testing.assert_array_equal(y, [[[1, 3]]])


# ------------------------------------------------ what onnxruntime cannot cross-check, and negative totals
BEYOND_ORT = [
    ("same_upper_kernel_lt_stride", (1, 2, 3), (2, 2, 2), True, {"auto_pad": "SAME_UPPER", "strides": [3]}),
    ("same_lower_kernel_lt_stride", (1, 1, 3, 2), (1, 2, 1, 2), True, {"auto_pad": "SAME_LOWER", "strides": [4, 3]}),
    ("same_grouped_kernel_lt_stride", (1, 4, 3), (4, 1, 1), True, {"auto_pad": "SAME_UPPER", "strides": [3], "group": 2}),
    ("same_3d_kernel_lt_stride", (1, 1, 2, 2, 2), (1, 2, 1, 2, 1), False,
     {"auto_pad": "SAME_UPPER", "strides": [2, 3, 3]}),
    ("output_padding_lt_dilation", (1, 2, 4), (2, 2, 3), True, {"dilations": [3], "output_padding": [2]}),
    # a negative total reaches -(stride - 1) at most (docs/decisions.md, output-shape-bound): stride 4 for -3
    ("negative_total_minus_3", (1, 2, 3), (2, 1, 3), True, {"strides": [4], "output_shape": [14]}),
    ("negative_total_same_lower_output_shape", (1, 1, 3, 3), (1, 1, 2, 2), False,
     {"strides": [3, 3], "output_shape": [10, 9], "auto_pad": "SAME_LOWER"}),
    ("zero_spatial_3d", (1, 2, 2, 0, 2), (2, 2, 2, 3, 2), True, {}),
]


@pytest.mark.parametrize("x_shape, w_shape, bias, attributes", [c[1:] for c in BEYOND_ORT],
                         ids=[c[0] for c in BEYOND_ORT])
def test_reference_matches_definition_loop(x_shape, w_shape, bias, attributes):
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, x_shape)
    w = rng.uniform(-1, 1, w_shape)
    b = rng.uniform(-1, 1, w_shape[1] * attributes.get("group", 1)) if bias else None
    np.testing.assert_allclose(reference(x, w, b, **attributes), naive(x, w, b, **attributes), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("index", range(0, 25, 4))
def test_definition_loop_matches_onnxruntime_too(index):
    """The loop above is itself an oracle: check it where onnxruntime can."""
    x, w, b, attributes = random_config(index)
    assert_close(run_onnxruntime(x, w, b, attributes), naive(x, w, b, **attributes),
                 x.shape[1] // attributes.get("group", 1) * math.prod(w.shape[2:]))


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("x_shape, w_shape, strides", [((1, 2, 3), (2, 2, 2), [3]), ((1, 1, 3, 2), (1, 2, 1, 2), [4, 3])])
def test_same_kernel_smaller_than_stride_matches_onnx_reference(auto_pad, x_shape, w_shape, strides):
    """The spec's reading (O = I*stride): onnx.reference implements it (correct for group 1)."""
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, x_shape).astype(np.float32)
    w = rng.uniform(-1, 1, w_shape).astype(np.float32)
    attributes = {"auto_pad": auto_pad, "strides": strides}
    want = reference(x, w, **attributes)
    assert want.shape[2:] == tuple(i * s for i, s in zip(x_shape[2:], strides))
    got = ReferenceEvaluator(build_model(x.shape, w.shape, None, attributes)).run(None, {"x": x, "w": w})[0]
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------------------- zero sizes, NaN and Inf
def test_zero_batch_gives_empty_y():
    y = reference(np.zeros((0, 2, 3)), np.ones((2, 3, 2)), np.ones(3), strides=[2])
    assert y.shape == (0, 3, 6) and y.size == 0


def test_zero_channels_gives_bias():
    b = np.array([1.5, -2.0, 0.25])
    y = reference(np.zeros((2, 0, 3, 2)), np.zeros((0, 3, 2, 2)), b, strides=[2, 1])
    assert y.shape == (2, 3, 6, 3)
    np.testing.assert_array_equal(y, np.broadcast_to(b.reshape(1, 3, 1, 1), y.shape))


def test_zero_spatial_input_gives_bias():
    y = reference(np.zeros((1, 2, 0, 3)), np.ones((2, 2, 3, 3)), np.array([1.0, 2.0]), strides=[1, 2])
    assert y.shape == (1, 2, 2, 7)
    np.testing.assert_array_equal(y[0, 0], 1.0)
    np.testing.assert_array_equal(y[0, 1], 2.0)


def test_unreached_positions_hold_bias():
    # output_shape 13 with natural 12: the last position is reached by no input.
    y = reference(np.ones((1, 1, 4)), np.ones((1, 1, 3)), np.array([0.5]), strides=[3], output_shape=[13])
    assert y[0, 0, -1] == 0.5 and np.all(y[0, 0, :-1] == 1.5)


def test_nan_and_inf_propagate_like_onnxruntime():
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (1, 2, 4, 4)).astype(np.float32)
    w = rng.uniform(-1, 1, (2, 2, 3, 3)).astype(np.float32)
    x[0, 0, 1, 2] = np.nan
    x[0, 1, 3, 0] = np.inf
    attributes = {"strides": [2, 2], "pads": [1, 0, 0, 1]}
    want = reference(x, w, **attributes)
    got = run_onnxruntime(x, w, None, attributes).astype(np.float64)
    assert np.isnan(want).any() and np.isinf(want).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], atol=1e-4, rtol=1e-4)


# -------------------------------------------------------------------------------------------- test.json
@pytest.fixture(scope="module")
def case_file():
    if not TEST_JSON.exists():
        pytest.fail("test.json is missing: run `python tools/gen_test_cases.py`")
    text = TEST_JSON.read_text()
    return json.loads(text), parse_case_file(text)


def test_case_file_is_strict_json(case_file):
    # The browser's JSON.parse rejects NaN / Infinity tokens.
    json.loads(TEST_JSON.read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON constant {c} in test.json"))


def test_case_file_coverage(case_file):
    doc, cases = case_file
    assert doc["op"] == "ai.onnx.ConvTranspose" and doc["version"] == 1
    assert len(cases) >= 60
    names = [c["name"] for c in cases]
    assert len(set(names)) == len(names)
    valid = [c for c in cases if not c["expected_error"]]
    errors = [c for c in cases if c["expected_error"]]
    assert len(errors) >= 15
    assert {len(c["inputs"]["x"]["shape"]) - 2 for c in valid} == {1, 2, 3}
    assert any("b" in c["inputs"] for c in valid) and any("b" not in c["inputs"] for c in valid)
    assert any(c["attributes"].get("group", 1) > 1 for c in valid)
    for mode in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        assert any(c["attributes"].get("auto_pad") == mode for c in valid), mode
    for name in ("strides", "dilations", "pads", "output_padding", "output_shape", "kernel_shape"):
        assert any(name in c["attributes"] for c in valid), name
    assert any(0 in c["inputs"]["x"]["shape"] for c in valid)
    for c in valid:
        assert math.prod(c["expected"]["shape"]) <= 24_000, c["name"]  # small enough for SwiftShader


def test_case_file_expected_values_equal_the_reference(case_file):
    _, cases = case_file
    checked = 0
    for case in cases:
        if case["expected_error"]:
            continue
        geom, arrays = validate(**case["inputs"], **case["attributes"])
        want = conv_transpose_reference(geom, arrays["x"], arrays["w"], arrays.get("b"))
        # stored as the shortest decimals that round to the float32 values: equal once read as float32
        got = np.asarray(case["expected"]["data"], dtype=np.float32).reshape(case["expected"]["shape"])
        assert got.shape == want.shape, case["name"]
        np.testing.assert_array_equal(got, want.astype(np.float32), err_msg=case["name"])
        assert case["expected"]["dtype"] == geom.dtype
        checked += 1
    assert checked >= 60


def test_case_file_errors_are_refused(case_file):
    _, cases = case_file
    for case in cases:
        if case["expected_error"]:
            with pytest.raises(ConvTransposeError):
                validate(**case["inputs"], **case["attributes"])


def test_the_gathered_reference_at_sampled_points_equals_the_scatter_reference():
    """reference_at (per output element, as a gather) against conv_transpose_reference (a scatter) on
    requests with groups, dilations, strides, asymmetric pads and output padding, in 1D, 2D and 3D."""
    from app.reference import reference_at, sample_points

    rng = np.random.default_rng(12)
    for xs, ws, attrs in [([2, 4, 7], [4, 3, 3], {"strides": [3], "pads": [1, 2], "dilations": [2]}),
                          ([1, 6, 5, 4], [6, 2, 3, 2], {"group": 3, "strides": [2, 1], "pads": [0, 1, 1, 0],
                                                         "output_padding": [1, 0]}),
                          ([1, 2, 3, 3, 2], [2, 2, 2, 3, 2], {"strides": [2, 1, 2], "pads": [1, 1, 0, 0, 1, 1]})]:
        x, w = rng.standard_normal(xs), rng.standard_normal(ws)
        b = rng.standard_normal(ws[1] * attrs.get("group", 1))
        geom, _ = validate(x.astype(np.float32), w.astype(np.float32), b.astype(np.float32), **attrs)
        want = conv_transpose_reference(geom, x, w, b)
        points = sample_points(geom, 40, seed=1)
        got = reference_at(geom, x, w, b, points)
        np.testing.assert_allclose(got, want[tuple(points.T)], rtol=1e-12, atol=1e-12)
