"""app/shapes.py: validation and shape inference, in CPython (no GPU).

Every output-size path of the semantics note (natural, pads, output_shape in both forms, SAME_UPPER /
SAME_LOWER with odd totals, VALID, negative totals, SAME with a kernel smaller than the stride), the
defaults from manifest.json, and every refusal: ConvTransposeError whose message names the culprit.
"""
from __future__ import annotations

import copy

import pytest

from app import contract
from app.errors import ConvTransposeError
from app.kernel import validate
from app.shapes import ConvGeometry, infer


def geom(x, w, b=None, **attributes) -> ConvGeometry:
    return infer(x, w, b, attributes)


# ------------------------------------------------------------------------------------------ output shapes
def test_natural_1d():
    g = geom([1, 1, 3], [1, 1, 3])
    assert g.out_spatial == (5,) and g.y_shape == (1, 1, 5)
    assert g.pads_begin == (0,) and g.pads_end == (0,)


def test_natural_formula_all_terms():
    # O = s*(I-1) + op + (k-1)*d + 1 - pb - pe per axis
    g = geom([2, 4, 5, 3], [4, 3, 3, 2], group=2, strides=[2, 3], dilations=[2, 1],
             output_padding=[1, 2], pads=[1, 0, 2, 1])
    assert g.out_spatial == (2 * 4 + 1 + 2 * 2 + 1 - 1 - 2, 3 * 2 + 2 + 1 + 1 - 0 - 1)
    assert g.y_shape == (2, 6, 11, 9)
    assert (g.in_per_group, g.out_per_group, g.out_channels) == (2, 3, 6)
    assert g.pads_begin == (1, 0) and g.pads_end == (2, 1)


def test_natural_3d():
    g = geom([1, 2, 3, 4, 5], [2, 3, 2, 3, 1], strides=[1, 2, 3])
    assert g.out_spatial == (4, 9, 13) and g.rank == 3


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_defaults_when_omitted(rank):
    g = geom([1, 2] + [3] * rank, [2, 2] + [2] * rank)
    assert g.strides == (1,) * rank
    assert g.dilations == (1,) * rank
    assert g.output_padding == (0,) * rank
    assert g.pads_begin == (0,) * rank and g.pads_end == (0,) * rank
    assert g.group == 1
    assert g.out_spatial == (4,) * rank


def test_defaults_come_from_manifest(monkeypatch):
    """Change the per-axis defaults in the manifest: the geometry must follow them."""
    doc = copy.deepcopy(contract.manifest())
    doc["attributes"]["strides"]["per_axis_default"] = 2
    doc["attributes"]["dilations"]["per_axis_default"] = 3
    doc["attributes"]["group"]["default"] = 2
    monkeypatch.setattr(contract, "manifest", lambda: doc)
    g = geom([1, 2, 4], [2, 1, 2])
    assert g.strides == (2,) and g.dilations == (3,) and g.group == 2
    assert g.out_spatial == (2 * 3 + 3 + 1,)


def test_explicit_pads_asymmetric():
    g = geom([1, 1, 4, 4], [1, 1, 3, 3], strides=[2, 2], pads=[0, 1, 2, 0])
    assert g.pads_begin == (0, 1) and g.pads_end == (2, 0)
    assert g.out_spatial == (9 - 2, 9 - 1)


@pytest.mark.parametrize("output_shape", [[10, 8], [1, 2, 10, 8]], ids=["spatial", "rank_plus_2"])
def test_output_shape_both_forms(output_shape):
    # The conformance case test_convtranspose_output_shape: natural (9, 7), target (10, 8): totals -1.
    g = geom([1, 1, 3, 3], [1, 2, 3, 3], strides=[3, 2], output_shape=output_shape)
    assert g.out_spatial == (10, 8)
    # NOTSET splits like SAME_LOWER: begin = total - total // 2 (floor division), end = total // 2.
    assert g.pads_begin == (0, 0) and g.pads_end == (-1, -1)


def test_output_shape_rank_plus_2_uses_only_spatial_tail():
    a = geom([1, 1, 4], [1, 2, 3], strides=[2], output_shape=[1, 2, 10])
    b = geom([1, 1, 4], [1, 2, 3], strides=[2], output_shape=[10])
    assert a == b


def test_output_shape_positive_total_notset_puts_extra_pad_first():
    g = geom([1, 1, 3], [1, 1, 3], strides=[2], output_shape=[4])  # natural 7, total 3
    assert g.pads_begin == (2,) and g.pads_end == (1,) and g.out_spatial == (4,)


def test_output_shape_ignores_pads():
    a = geom([1, 1, 3, 3], [1, 1, 3, 3], strides=[2, 2], output_shape=[6, 7], pads=[5, 5, 5, 5])
    b = geom([1, 1, 3, 3], [1, 1, 3, 3], strides=[2, 2], output_shape=[6, 7])
    assert a == b and a.out_spatial == (6, 7)


@pytest.mark.parametrize("auto_pad, begin, end", [("SAME_UPPER", 0, 1), ("SAME_LOWER", 1, 0), ("NOTSET", 1, 0)])
def test_output_shape_with_auto_pad_split(auto_pad, begin, end):
    g = geom([1, 1, 3], [1, 1, 3], strides=[2], output_shape=[6], auto_pad=auto_pad)  # total 1
    assert g.pads_begin == (begin,) and g.pads_end == (end,) and g.out_spatial == (6,)


@pytest.mark.parametrize("auto_pad, begin, end", [("SAME_UPPER", 1, 2), ("SAME_LOWER", 2, 1)])
def test_same_odd_total_stride1(auto_pad, begin, end):
    g = geom([1, 1, 5], [1, 1, 4], auto_pad=auto_pad)  # natural 8, target 5, total 3
    assert g.out_spatial == (5,)
    assert g.pads_begin == (begin,) and g.pads_end == (end,)


@pytest.mark.parametrize("auto_pad, begin, end", [("SAME_UPPER", (1, 0), (2, 1)), ("SAME_LOWER", (2, 1), (1, 0))])
def test_same_odd_totals_2d_with_strides(auto_pad, begin, end):
    # axis 0: k 4, s 1 -> total 3; axis 1: k 3, s 2 -> total 1
    g = geom([1, 1, 4, 3], [1, 1, 4, 3], strides=[1, 2], auto_pad=auto_pad)
    assert g.out_spatial == (4, 6)
    assert g.pads_begin == begin and g.pads_end == end


def test_same_even_total_is_symmetric():
    for auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        g = geom([1, 1, 4], [1, 1, 3], auto_pad=auto_pad)
        assert g.pads_begin == (1,) and g.pads_end == (1,) and g.out_spatial == (4,)


def test_same_with_dilation_and_output_padding():
    # total = s*(I-1) + op + (k-1)*d + 1 - I*s = 2*3 + 1 + 4 + 1 - 8 = 4
    g = geom([1, 1, 4], [1, 1, 3], strides=[2], dilations=[2], output_padding=[1], auto_pad="SAME_UPPER")
    assert g.out_spatial == (8,) and g.pads_begin == (2,) and g.pads_end == (2,)


def test_valid_is_natural_with_zero_pads():
    g = geom([1, 1, 4, 3], [1, 1, 3, 2], strides=[2, 3], auto_pad="VALID")
    assert g.pads_begin == (0, 0) and g.pads_end == (0, 0)
    assert g.out_spatial == (2 * 3 + 3, 3 * 2 + 2)


@pytest.mark.parametrize("auto_pad, begin, end", [("SAME_UPPER", -1, 0), ("SAME_LOWER", 0, -1)])
def test_same_kernel_smaller_than_stride_follows_spec(auto_pad, begin, end):
    """Spec (not onnxruntime): O = I * stride, the total pad is negative (here -1)."""
    g = geom([1, 1, 3], [1, 1, 2], strides=[3], auto_pad=auto_pad)  # natural 8, target 9
    assert g.out_spatial == (9,)
    assert g.pads_begin == (begin,) and g.pads_end == (end,)


def test_same_kernel_1_stride_4_gives_i_times_stride():
    g = geom([1, 1, 3, 2], [1, 1, 1, 1], strides=[4, 2], auto_pad="SAME_LOWER")  # totals -3, -1
    assert g.out_spatial == (12, 4)
    assert g.pads_begin == (-1, 0) and g.pads_end == (-2, -1)


def test_negative_total_from_output_shape():
    g = geom([1, 1, 4], [1, 1, 3], strides=[3], output_shape=[13])  # natural 12, total -1
    assert g.out_spatial == (13,) and g.pads_begin == (0,) and g.pads_end == (-1,)


# output_shape's bound (docs/decisions.md, output-shape-bound): at most stride*I + (k-1)*dilation per axis, in
# every auto_pad mode, as onnxruntime; output_padding does not move it.
@pytest.mark.parametrize("auto_pad", [None, "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("x, w, attributes, most", [
    ([1, 1, 4], [1, 2, 3], {"strides": [2]}, 10),  # natural 9
    ([1, 1, 4], [1, 2, 3], {"strides": [2], "output_padding": [1]}, 10),  # natural 10: nothing past it
    ([1, 1, 4], [1, 1, 3], {"strides": [3]}, 14),  # natural 12
    ([1, 1, 3], [1, 1, 2], {"strides": [1], "dilations": [3]}, 6),  # stride 1: the natural size is the bound
    ([1, 1, 3, 3], [1, 2, 3, 3], {"strides": [3, 2]}, [11, 8]),  # the conformance case's layer
], ids=["s2", "s2_op1", "s3", "s1_d3", "2d"])
def test_output_shape_up_to_stride_times_input_plus_dilated_kernel(auto_pad, x, w, attributes, most):
    most = most if isinstance(most, list) else [most]
    extra = {"auto_pad": auto_pad} if auto_pad else {}
    assert geom(x, w, **attributes, **extra, output_shape=most).out_spatial == tuple(most)
    for axis in range(len(most)):
        past = [o + (a == axis) for a, o in enumerate(most)]
        with pytest.raises(ConvTransposeError, match=f"axis {axis} asks for {past[axis]} outputs") as info:
            geom(x, w, **attributes, **extra, output_shape=past)
        assert info.value.field == "output_shape"


def test_output_shape_full_form_with_wrong_n_or_m_is_refused():
    # x [2, 2, 4], w [2, 3, 3] with group 1: y is [2, 3, ...]
    assert geom([2, 2, 4], [2, 3, 3], strides=[2], output_shape=[2, 3, 8]).y_shape == (2, 3, 8)
    assert geom([0, 2, 4], [2, 3, 3], strides=[2], output_shape=[0, 3, 8]).y_shape == (0, 3, 8)
    for head in ([1, 3], [2, 2], [0, 0], [3, 2], [True, 3], [2.0, 3]):
        with pytest.raises(ConvTransposeError, match="full form") as info:
            geom([2, 2, 4], [2, 3, 3], strides=[2], output_shape=head + [8])
        assert info.value.field == "output_shape"
    # grouped: M is w.shape[1] * group
    assert geom([1, 4, 4], [4, 1, 3], group=2, output_shape=[1, 2, 6]).y_shape == (1, 2, 6)
    with pytest.raises(ConvTransposeError, match="M = 2"):
        geom([1, 4, 4], [4, 1, 3], group=2, output_shape=[1, 1, 6])


def _onnxruntime_takes(x_shape, w_shape, attributes) -> bool:
    import numpy as np

    from tools.ort_oracle import run_onnxruntime

    try:
        run_onnxruntime(np.zeros(x_shape, np.float32), np.zeros(w_shape, np.float32), None, attributes)
    except Exception as exc:  # onnxruntime's own exception types
        assert "output_shape" in str(exc) or "Expected input size" in str(exc), exc
        return False
    return True


def test_output_shape_accepted_exactly_where_onnxruntime_accepts_it():
    """The bound measured, not assumed: every target from below the natural size to past the bound, over strides,
    dilations, kernels, output_padding and the auto_pad modes, accepted here iff onnxruntime runs it."""
    pytest.importorskip("onnxruntime")
    differ = []
    for i, k, s, d, op, auto_pad in [(4, 3, 2, 1, 0, "NOTSET"), (4, 3, 2, 1, 1, "SAME_UPPER"), (3, 2, 3, 2, 2, "VALID"),
                                     (2, 1, 3, 1, 0, "SAME_LOWER"), (5, 2, 1, 3, 0, "NOTSET"), (1, 3, 2, 2, 1, "NOTSET")]:
        natural = s * (i - 1) + op + (k - 1) * d + 1
        for target in range(max(1, natural - 2), natural + s + 2):
            attributes = {"strides": [s], "dilations": [d], "output_padding": [op], "output_shape": [target],
                          "auto_pad": auto_pad}
            try:
                infer([1, 1, i], [1, 1, k], None, attributes)
                ours = True
            except ConvTransposeError:
                ours = False
            if ours != _onnxruntime_takes([1, 1, i], [1, 1, k], attributes):
                differ.append((attributes, ours))
    assert not differ


def test_kernel_shape_equal_to_w_is_accepted():
    assert geom([1, 1, 3, 3], [1, 1, 2, 3], kernel_shape=[2, 3]).kernel == (2, 3)


def test_output_padding_below_dilation_with_stride_1_is_legal():
    g = geom([1, 1, 4], [1, 1, 3], dilations=[3], output_padding=[2])
    assert g.out_spatial == (3 + 2 + 7,)


def test_zero_size_tensors():
    assert geom([0, 2, 4], [2, 3, 3], [3]).y_shape == (0, 3, 6)
    g = geom([1, 0, 4], [0, 3, 3], [3])
    assert g.y_shape == (1, 3, 6) and g.in_channels == 0
    assert geom([1, 2, 0], [2, 2, 3]).y_shape == (1, 2, 2)  # s*(0-1) + 3 = 2


def test_group_and_depthwise_channels():
    g = geom([1, 6, 3], [6, 2, 3], [12], group=6)
    assert (g.in_per_group, g.out_per_group, g.out_channels, g.w_shape) == (1, 2, 12, (6, 2, 3))


def test_dtype_float16_accepted():
    assert infer([1, 1, 3], [1, 1, 3], None, {}, {"x": "float16", "w": "float16"}).dtype == "float16"


def test_prepare_reads_dicts_and_returns_arrays():
    g, arrays = validate({"data": [1, 2], "shape": [1, 1, 2]}, {"data": [1, 1, 1], "shape": [1, 1, 3]}, strides=[2])
    assert g.y_shape == (1, 1, 5) and arrays["x"].dtype.name == "float32"


# ----------------------------------------------------------------------------------------------- refusals
X1, W1 = [1, 2, 4], [2, 3, 3]
X2, W2 = [1, 1, 3, 3], [1, 1, 2, 2]

REFUSALS = [
    # id, x, w, b, attributes, dtypes, words the message must contain
    ("group_not_dividing_c", [1, 3, 4], [3, 1, 3], None, {"group": 2}, None, ["'group'"]),
    ("w_channels_mismatch", [1, 2, 4], [3, 2, 3], None, {}, None, ["'w'", "w.shape[0]"]),
    ("rank_mismatch", [1, 2, 3, 3], [2, 2, 3], None, {}, None, ["'w'", "rank"]),
    ("bias_wrong_length", X1, W1, [2], {}, None, ["'b'"]),
    ("bias_2d", X1, W1, [1, 3], {}, None, ["'b'"]),
    ("bias_wrong_length_grouped", [1, 4, 4], [4, 2, 3], [2], {"group": 2}, None, ["'b'"]),
    ("strides_length", X2, W2, None, {"strides": [2]}, None, ["'strides'"]),
    ("pads_length", X2, W2, None, {"pads": [1, 1]}, None, ["'pads'"]),
    ("dilations_length", X1, W1, None, {"dilations": [1, 1]}, None, ["'dilations'"]),
    ("output_padding_length", X2, W2, None, {"strides": [2, 2], "output_padding": [1, 1, 1]}, None,
     ["'output_padding'"]),
    ("output_shape_length", X2, W2, None, {"output_shape": [1, 4, 4]}, None, ["'output_shape'"]),
    ("kernel_shape_length", X2, W2, None, {"kernel_shape": [2]}, None, ["'kernel_shape'"]),
    ("stride_zero", X1, W1, None, {"strides": [0]}, None, ["'strides'"]),
    ("stride_negative", X2, W2, None, {"strides": [1, -1]}, None, ["'strides'"]),
    ("dilation_zero", X2, W2, None, {"dilations": [1, 0]}, None, ["'dilations'"]),
    ("negative_pad", X1, W1, None, {"pads": [-1, 0]}, None, ["'pads'"]),
    ("output_padding_ge_stride", X1, W1, None, {"strides": [2], "output_padding": [2]}, None, ["'output_padding'"]),
    ("output_padding_ge_dilation", X2, W2, None, {"dilations": [2, 2], "output_padding": [0, 2]}, None,
     ["'output_padding'"]),
    ("output_padding_with_defaults", X1, W1, None, {"output_padding": [1]}, None, ["'output_padding'"]),
    ("output_padding_negative", X1, W1, None, {"output_padding": [-1]}, None, ["'output_padding'"]),
    ("kernel_shape_mismatch", X2, W2, None, {"kernel_shape": [3, 3]}, None, ["'kernel_shape'"]),
    ("unknown_auto_pad", X1, W1, None, {"auto_pad": "SAME"}, None, ["'auto_pad'"]),
    ("auto_pad_lowercase", X1, W1, None, {"auto_pad": "same_upper"}, None, ["'auto_pad'"]),
    ("output_dim_zero_from_pads", X2, W2, None, {"pads": [2, 0, 2, 0]}, None, ["'pads'", "<= 0"]),
    ("output_dim_negative_from_pads", X1, W1, None, {"pads": [9, 9]}, None, ["'pads'", "<= 0"]),
    ("output_dim_zero_same", [1, 1, 0], [1, 1, 3], None, {"auto_pad": "SAME_UPPER"}, None, ["'auto_pad'", "<= 0"]),
    ("output_dim_zero_zero_input_k1", [1, 1, 0], [1, 1, 1], None, {}, None, ["<= 0"]),
    ("output_shape_zero", X1, W1, None, {"output_shape": [0]}, None, ["'output_shape'"]),
    ("group_zero", [1, 2, 4], [2, 1, 3], None, {"group": 0}, None, ["'group'"]),
    ("group_not_int", [1, 2, 4], [2, 1, 3], None, {"group": 1.0}, None, ["'group'"]),
    ("group_bool", [1, 2, 4], [2, 1, 3], None, {"group": True}, None, ["'group'"]),
    ("strides_not_ints", X1, W1, None, {"strides": [1.5]}, None, ["'strides'"]),
    ("strides_not_list", X1, W1, None, {"strides": 2}, None, ["'strides'"]),
    ("kernel_dim_zero", [1, 1, 4], [1, 1, 0], None, {}, None, ["'w'", "kernel"]),
    ("x_rank2", [1, 4], [4, 1], None, {}, None, ["'x'", "rank"]),
    ("x_rank6", [1, 1, 2, 2, 2, 2], [1, 1, 1, 1, 1, 1], None, {}, None, ["'x'", "rank"]),
    ("x_negative_dim", [1, -1, 4], W1, None, {}, None, ["'x'"]),
    ("unknown_attribute", X1, W1, None, {"stride": [2]}, None, ["'stride'"]),
    ("dtype_int32", X1, W1, None, {}, {"x": "int32", "w": "int32"}, ["'x'", "int32"]),
    ("dtype_float64", X1, W1, None, {}, {"x": "float64", "w": "float64"}, ["'x'", "float64"]),
    ("dtype_mixed", X1, W1, None, {}, {"x": "float32", "w": "float16"}, ["dtype"]),
]


@pytest.mark.parametrize("x, w, b, attributes, dtypes, words", [r[1:] for r in REFUSALS],
                         ids=[r[0] for r in REFUSALS])
def test_refusal(x, w, b, attributes, dtypes, words):
    with pytest.raises(ConvTransposeError) as info:
        infer(x, w, b, attributes, dtypes)
    for word in words:
        assert word in str(info.value), f"{word!r} not in {str(info.value)!r}"


FIELD_REFUSALS = [r for r in REFUSALS if r[6][0].startswith("'")]


@pytest.mark.parametrize("x, w, b, attributes, dtypes, words", [r[1:] for r in FIELD_REFUSALS],
                         ids=[r[0] for r in FIELD_REFUSALS])
def test_refusal_names_its_field_for_forms(x, w, b, attributes, dtypes, words):
    """`field` is the input or attribute the message names first: the web form shows the error next to it."""
    with pytest.raises(ConvTransposeError) as info:
        infer(x, w, b, attributes, dtypes)
    assert info.value.field == words[0].strip("'")


@pytest.mark.parametrize("dtypes, field", [({"x": "float32", "w": "float16"}, "w"),
                                           ({"x": "float16", "w": "float16", "b": "float32"}, "b")])
def test_mixed_dtypes_name_the_input_that_differs_from_x(dtypes, field):
    with pytest.raises(ConvTransposeError, match="share one dtype") as info:
        infer(X1, W1, [3] if "b" in dtypes else None, {}, dtypes)
    assert info.value.field == field


@pytest.mark.parametrize("name", ["stride", "__proto__"])
def test_unknown_attribute_is_its_field(name):
    """`__proto__` (JSON.parse makes it an own key) is refused as any unknown name is, and named."""
    with pytest.raises(ConvTransposeError, match=r"unknown attribute.*'%s'" % name) as info:
        infer(X1, W1, None, {name: [2]})
    assert info.value.field == name


@pytest.mark.parametrize("x, w, attributes", [
    ([2**14, 1, 2**16], [1, 2, 1], {"strides": [2]}),  # y has 2^32 - 2^15 elements
    ([1, 1, 70000], [1, 1, 2], {"strides": [40000]}),  # one axis past 2^31-1
], ids=["elements", "extent"])
def test_output_too_large_to_index_names_y(x, w, attributes):
    with pytest.raises(ConvTransposeError, match="2\\^31-1") as info:
        infer(x, w, None, attributes)
    assert info.value.field == "y"


def test_every_shape_refusal_has_a_field():
    """Every refusal here names the input, attribute or output at fault (docs/api.md, Errors)."""
    for _, x, w, b, attributes, dtypes, _ in REFUSALS:
        with pytest.raises(ConvTransposeError) as info:
            infer(x, w, b, attributes, dtypes)
        assert info.value.field, info.value
    for _, x, w, attributes, _ in HOSTILE:
        with pytest.raises(ConvTransposeError) as info:
            infer(x, w, None, attributes)
        assert info.value.field, info.value


def test_unknown_attribute_message_lists_unknown_name():
    with pytest.raises(ConvTransposeError, match=r"unknown attribute.*'stride'"):
        infer(X1, W1, None, {"stride": [2]})


def test_refusal_is_a_value_error():
    assert issubclass(ConvTransposeError, ValueError)


# Data-level refusals happen in prepare (app.tensors), still before any GPU work.
DATA_REFUSALS = [
    ("x_data_too_short", {"x": {"data": [0.0] * 7, "shape": [1, 2, 4]}, "w": {"data": [0.0] * 6, "shape": [2, 1, 3]}},
     ["'x'", "7"]),
    ("w_data_too_long", {"x": {"data": [0.0] * 8, "shape": [1, 2, 4]}, "w": {"data": [0.0] * 7, "shape": [2, 1, 3]}},
     ["'w'", "7"]),
    ("b_data_mismatch", {"x": {"data": [0.0] * 8, "shape": [1, 2, 4]}, "w": {"data": [0.0] * 6, "shape": [2, 1, 3]},
                         "b": {"data": [0.0, 0.0], "shape": [1]}}, ["'b'"]),
    ("x_dtype_int32", {"x": {"data": [0] * 4, "shape": [1, 1, 4], "dtype": "int32"},
                       "w": {"data": [0] * 3, "shape": [1, 1, 3], "dtype": "int32"}}, ["'x'", "int32"]),
    ("w_missing_shape", {"x": {"data": [0.0] * 4, "shape": [1, 1, 4]}, "w": {"data": [0.0] * 3}}, ["'w'", "shape"]),
    ("x_not_numbers", {"x": {"data": ["a"] * 4, "shape": [1, 1, 4]}, "w": {"data": [0.0] * 3, "shape": [1, 1, 3]}},
     ["'x'"]),
]


@pytest.mark.parametrize("inputs, words", [r[1:] for r in DATA_REFUSALS], ids=[r[0] for r in DATA_REFUSALS])
def test_data_refusal(inputs, words):
    with pytest.raises(ConvTransposeError) as info:
        validate(**inputs)
    for word in words:
        assert word in str(info.value), f"{word!r} not in {str(info.value)!r}"


# Hostile sizes: everything the GPU indexes in 32 bits is refused past 2^31-1, before any GPU work.
HUGE = 2**40
HOSTILE = [
    ("stride_past_i32", X1, W1, {"strides": [2**31]}, ["'strides'", "2^31-1"]),
    ("dilation_past_i32", X1, W1, {"dilations": [HUGE]}, ["'dilations'"]),
    ("pads_past_i32", X1, W1, {"pads": [HUGE, 0]}, ["'pads'"]),
    ("output_shape_past_i32", X1, W1, {"output_shape": [HUGE]}, ["'output_shape'"]),
    ("group_past_i32", X1, W1, {"group": HUGE}, ["'group'"]),
    ("extent_past_i32", [1, 1, 70000], [1, 1, 2], {"strides": [40000]}, ["full output extent", "'strides'"]),
    ("dilated_extent_past_i32", [1, 1, 2], [1, 1, 3], {"dilations": [2**30 + 7]}, ["full output extent"]),
    ("empty_x_huge_dim", [0, 1, HUGE], [1, 1, 1], {}, ["'x'", "2^31-1"]),
    ("huge_attribute_list", X1, W1, {"strides": [1] * 100000}, ["'strides'", "1 entries"]),
    ("nested_attribute", X1, W1, {"pads": [[1], [1]]}, ["'pads'"]),
    ("string_ints", X1, W1, {"strides": ["2"]}, ["'strides'"]),
    ("none_in_list", X1, W1, {"dilations": [None]}, ["'dilations'"]),
    ("auto_pad_not_string", X1, W1, {"auto_pad": 3}, ["'auto_pad'"]),
    ("auto_pad_list", X1, W1, {"auto_pad": ["VALID"]}, ["'auto_pad'"]),
    ("kernel_shape_dict", X1, W1, {"kernel_shape": {"k": 3}}, ["'kernel_shape'"]),
]


@pytest.mark.parametrize("x, w, attributes, words", [r[1:] for r in HOSTILE], ids=[r[0] for r in HOSTILE])
def test_hostile_sizes_and_attributes_are_refused(x, w, attributes, words):
    with pytest.raises(ConvTransposeError) as info:
        infer(x, w, None, attributes)
    for word in words:
        assert word in str(info.value), f"{word!r} not in {str(info.value)!r}"


def test_largest_i32_extent_is_accepted():
    g = infer([1, 1, 2], [1, 1, 2], None, {"strides": [2**31 - 3]})
    assert g.out_spatial == (2**31 - 1,)
