"""Generates test.json, the case file the page and the Python runner check the kernel against.

    python tools/gen_test_cases.py            # writes <repo>/test.json
    python tools/gen_test_cases.py --quiet    # only the summary line

Deterministic: one seeded numpy Generator drives every random tensor, in case order, so the same
code always writes byte-identical JSON. Random data is drawn from U(-1, 1) and rounded to the case's
dtype (float32 or float16) before anything is computed from it, so the JSON values are exactly the
values the kernel sees: each is written as the shortest decimal that rounds back to the same float32 /
float16 value (checked), which keeps the file about half the size of float64 reprs.

Expected outputs come from the float64 scatter reference (app/reference.py) on those rounded inputs,
then rounded to float32 for storage (a relative change of at most 6e-8, far below every tolerance).
Every valid case is ALSO run through onnxruntime's CPU provider (tools/ort_oracle.py) and must agree
with the reference within the case's tolerance, and the output shapes must be equal; the cases it
cannot check are listed in NOT_CROSS_CHECKED below with the reason, and for those the generator
still runs onnxruntime and reports what it did, so the reason stays true. The 11 ONNX conformance
cases (test_convtranspose*) are included with their own inputs and must also equal the outputs the
onnx package ships for them.

Every expected_error case must be refused by app.kernel.validate with ConvTransposeError, and every
valid case accepted; the written file must parse with app.cases.parse_case_file.

Not in test.json: NaN / Inf inputs. JSON has no NaN or Infinity; Python's json would write the bare
tokens NaN / Infinity, which the browser's JSON.parse rejects. (tests/test_reference.py checks NaN
propagation of the reference against onnxruntime in CPython instead.)
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import warnings
from pathlib import Path

try:
    import numpy as np
except ModuleNotFoundError:  # set-up runs this in whatever Python runs serve.py: one line, not a traceback
    sys.exit("tools/gen_test_cases.py writes test.json with numpy, onnx and onnxruntime: numpy is missing "
             "(pip install -r requirements-test.txt); the app serves without test.json")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from app.cases import parse_case_file  # noqa: E402
from app.errors import ConvTransposeError  # noqa: E402
from app.kernel import validate  # noqa: E402
from app.reference import conv_transpose_reference  # noqa: E402
from tools.ort_oracle import run_onnxruntime  # noqa: E402

OUT_PATH = ROOT / "test.json"
SEED = 20261130
F16_EVERY = 3  # every third per-variant spec also becomes a float16 case
MAX_OUTPUT_ELEMENTS = 24000  # the browser runs on a software rasterizer: keep every case small
VARIANT_SPECS = ROOT / "tools" / "cases"  # per-variant-family specs: shapes that exercise each fast variant

# Cases onnxruntime cannot cross-check, and why. Each reason is re-verified when the file is generated:
# onnxruntime must refuse the case or produce a different output shape (never agree silently).
SAME_NEGATIVE = ("auto_pad SAME_* with an effective kernel smaller than the stride: the spec gives "
                 "O = I*stride with negative pads, onnxruntime clamps the total pad to 0 and gives "
                 "O = stride*(I-1) + kernel instead (semantics note; we follow the spec)")
OP_GE_STRIDE = ("output_padding >= stride (but < dilation): legal by the spec (< max(stride, dilation)), "
                "onnxruntime refuses output_padding >= stride")
ORT_CRASH = ("onnxruntime 1.32.0's CPU ConvTranspose kills the process (segmentation fault) on a 3-D input "
             "with a zero-size first or second spatial axis; probed in a child process only")
SAME_UPPER_ODD_NEGATIVE = ("auto_pad SAME_UPPER with an odd negative total pad (output_shape past the natural "
                           "size): the semantics note splits with floor division (begin = total // 2), "
                           "onnxruntime's C++ division truncates toward zero and shifts the output by one")


# Tolerances. float32: unit roundoff is 2^-24 ~ 6e-8 (eps 1.19e-7). Inputs are ~U(-1, 1), so every
# product is < 1 and an output is a sum of at most R = (C/group) * prod(kernel) products plus the bias.
# A sequential f32 sum of R terms has error <= ~R * eps * sum|terms|; with random signs the typical
# error grows like sqrt(R) * eps, and any summation order the GPU picks (gather order, FMA or not) stays
# within the R * eps-type bound. atol = 1e-5 * R, clipped to [1e-5, 1e-3], is ~100x the typical error for
# small R and still ~3x the worst case (R^2 * eps / 4) for the largest R used here (~150), while a wrong
# tap, pad or channel changes an output by ~0.1 or more. rtol 1e-4 covers the outputs of larger magnitude
# (conformance cases use integer data up to ~300).
# float16: unit roundoff 2^-11 ~ 4.9e-4. The kernel stores y as f16 (relative error 4.9e-4, hence rtol 1e-3)
# and may round each product to f16 before accumulating (<= 4.9e-4 per term), so atol = 5e-4 * R,
# clipped to [1e-3, 2e-2].
def tolerance(dtype: str, reduction: int) -> dict:
    r = max(1, reduction)
    if dtype == "float16":
        atol, rtol = min(max(5e-4 * r, 1e-3), 2e-2), 1e-3
    else:
        atol, rtol = min(max(1e-5 * r, 1e-5), 1e-3), 1e-4
    return {"atol": float(f"{atol:.3g}"), "rtol": rtol}


_rng = np.random.default_rng(SEED)
CASES: list[dict] = []       # the specs, in file order
_NAME = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*$")


def _random(shape, dtype: str) -> np.ndarray:
    return _rng.uniform(-1.0, 1.0, size=math.prod(shape)).astype(dtype).reshape(shape)


def _shortest(values, dtype: str) -> list[float]:
    """The values as floats whose repr is the shortest decimal that converts back to the same `dtype` value."""
    flat = np.asarray(values).astype(dtype).ravel()
    out = [float(str(v)) for v in flat]
    assert np.array(out, dtype=dtype).tobytes() == flat.tobytes(), "a shortest decimal did not round-trip"
    return out


def _tensor(arr: np.ndarray, dtype: str) -> dict:
    return {"dtype": dtype, "shape": [int(d) for d in np.shape(arr)], "data": _shortest(arr, dtype)}


def valid(name: str, x_shape, w_shape, bias: bool = False, *, dtype: str = "float32",
          x=None, w=None, b=None, ort: str | None = None, conformance=None, **attributes) -> None:
    """A case that must be accepted. x / w / b: explicit data (else random). ort: why onnxruntime
    cannot cross-check it (None = it must). conformance: the output the onnx package ships for it."""
    x = _random(x_shape, dtype) if x is None else np.asarray(x, dtype=dtype).reshape(x_shape)
    w = _random(w_shape, dtype) if w is None else np.asarray(w, dtype=dtype).reshape(w_shape)
    if bias and b is None:
        m = w_shape[1] * attributes.get("group", 1)
        b = _random((m,), dtype)
    inputs = {"x": _tensor(x, dtype), "w": _tensor(w, dtype)}
    if b is not None:
        inputs["b"] = _tensor(np.asarray(b, dtype=dtype), dtype)
    CASES.append({"name": name, "inputs": inputs, "attributes": attributes, "ort": ort,
                  "conformance": conformance})


def error(name: str, inputs: dict, *, field: str | None = None, **attributes) -> None:
    """A case that must be refused with ConvTransposeError (inputs: name -> tensor dict). field: the input or
    attribute the refusal must name; checked here only, as the case file's format holds no field."""
    CASES.append({"name": name, "inputs": inputs, "attributes": attributes, "expected_error": True, "field": field})


def t(shape, dtype: str = "float32", count: int | None = None) -> dict:
    """A tensor dict for an error case; count overrides the number of data values."""
    n = math.prod(shape) if count is None else count
    if dtype.startswith("int"):
        return {"dtype": dtype, "shape": list(shape), "data": [int(v) for v in _rng.integers(-3, 4, size=n)]}
    return {"dtype": dtype, "shape": list(shape), "data": [float(v) for v in _random((n,), "float32")]}


# ------------------------------------------------------------------------------------------------ cases
def define_cases() -> None:
    # ---- rank 1 -----------------------------------------------------------------------------------
    valid("r1_basic", [1, 1, 5], [1, 1, 3])
    # Hand-checkable: y[i*2 + t] += x[i] * 1 -> [1, 1, 1+2, 2, 2].
    valid("r1_hand_stride2", [1, 1, 2], [1, 1, 3], x=[1, 2], w=[1, 1, 1], strides=[2])
    valid("r1_bias_multi_channel", [1, 3, 6], [3, 4, 3], True)
    valid("r1_stride3_bias", [1, 2, 4], [2, 3, 3], True, strides=[3])
    valid("r1_stride4_kernel2_gaps", [1, 2, 4], [2, 2, 2], strides=[4])
    valid("r1_dilation2", [1, 2, 5], [2, 2, 3], dilations=[2])
    valid("r1_dilation3_stride2", [1, 2, 5], [2, 2, 3], True, strides=[2], dilations=[3])
    valid("r1_pads_symmetric", [1, 2, 6], [2, 3, 3], pads=[1, 1])
    valid("r1_pads_asymmetric", [1, 2, 6], [2, 3, 4], True, strides=[2], pads=[0, 3])
    valid("r1_output_padding", [1, 2, 5], [2, 2, 3], strides=[2], output_padding=[1])
    valid("r1_output_padding_lt_dilation", [1, 1, 4], [1, 2, 3], dilations=[3], output_padding=[2],
          ort=OP_GE_STRIDE)
    valid("r1_output_shape_spatial", [1, 2, 4], [2, 3, 3], True, strides=[2], output_shape=[10])
    valid("r1_output_shape_full_rank", [2, 2, 4], [2, 3, 3], True, strides=[2], output_shape=[2, 3, 8])
    valid("r1_output_shape_negative_total", [1, 1, 4], [1, 2, 3], True, strides=[3], output_shape=[13])
    valid("r1_same_upper_odd_total", [1, 2, 5], [2, 2, 4], True, auto_pad="SAME_UPPER")
    valid("r1_same_lower_odd_total", [1, 2, 5], [2, 2, 4], True, auto_pad="SAME_LOWER")
    valid("r1_same_upper_stride2_odd_total", [1, 1, 4], [1, 2, 5], auto_pad="SAME_UPPER", strides=[2])
    valid("r1_same_lower_stride2_odd_total", [1, 1, 4], [1, 2, 5], auto_pad="SAME_LOWER", strides=[2])
    valid("r1_valid_stride2", [1, 2, 5], [2, 2, 3], True, auto_pad="VALID", strides=[2])
    valid("r1_same_upper_kernel_lt_stride", [1, 2, 3], [2, 2, 2], True, auto_pad="SAME_UPPER",
          strides=[3], ort=SAME_NEGATIVE)
    valid("r1_same_lower_kernel_lt_stride", [1, 1, 3], [1, 2, 1], True, auto_pad="SAME_LOWER",
          strides=[4], ort=SAME_NEGATIVE)
    valid("r1_kernel1", [1, 3, 7], [3, 2, 1], True)
    valid("r1_kernel1_stride3", [1, 2, 4], [2, 2, 1], strides=[3])
    valid("r1_group2", [1, 4, 5], [4, 3, 3], True, group=2)
    valid("r1_depthwise", [1, 3, 6], [3, 1, 3], True, group=3, strides=[2])
    valid("r1_batch3", [3, 2, 5], [2, 2, 3], True, strides=[2])
    valid("r1_zero_batch", [0, 2, 4], [2, 3, 3], True, strides=[2])
    valid("r1_zero_channels_bias_fill", [1, 0, 4], [0, 3, 3], True, strides=[2])
    valid("r1_zero_spatial_positive_output", [1, 2, 0], [2, 2, 3], True)
    valid("r1_odd_sizes", [1, 3, 7], [3, 1, 5], True, strides=[3], pads=[2, 1])
    valid("r1_kernel_shape_attr", [1, 2, 4], [2, 2, 3], kernel_shape=[3], strides=[2])
    valid("r1_all_attributes", [2, 4, 5], [4, 2, 3], True, group=2, strides=[2], dilations=[2],
          pads=[1, 2], output_padding=[1])

    # ---- rank 2 -----------------------------------------------------------------------------------
    valid("r2_basic", [1, 2, 4, 4], [2, 2, 3, 3])
    valid("r2_bias", [1, 3, 4, 5], [3, 2, 3, 3], True)
    valid("r2_stride2", [1, 2, 4, 4], [2, 2, 3, 3], True, strides=[2, 2])
    valid("r2_strides_per_axis_1_3", [1, 2, 4, 4], [2, 2, 3, 3], strides=[1, 3])
    valid("r2_strides_per_axis_4_2", [1, 2, 3, 4], [2, 2, 3, 3], True, strides=[4, 2])
    valid("r2_stride_gt_kernel", [1, 2, 3, 3], [2, 2, 2, 2], strides=[4, 3])
    valid("r2_dilations_2_3", [1, 2, 4, 4], [2, 2, 3, 3], True, dilations=[2, 3])
    valid("r2_dilation_and_stride", [1, 2, 4, 3], [2, 2, 2, 3], strides=[2, 3], dilations=[3, 2])
    valid("r2_pads_symmetric", [1, 2, 5, 5], [2, 2, 3, 3], True, pads=[1, 1, 1, 1])
    valid("r2_pads_asymmetric", [1, 2, 5, 4], [2, 2, 3, 3], True, strides=[2, 2], pads=[0, 1, 2, 0])
    valid("r2_output_padding", [1, 2, 4, 3], [2, 2, 3, 3], strides=[2, 3], output_padding=[1, 2])
    valid("r2_pads_and_output_padding", [1, 2, 4, 4], [2, 3, 3, 3], True, strides=[3, 2],
          pads=[1, 0, 2, 1], output_padding=[2, 1])
    valid("r2_output_padding_lt_dilation", [1, 1, 3, 3], [1, 2, 2, 2], dilations=[3, 1],
          output_padding=[1, 0], ort=OP_GE_STRIDE)
    valid("r2_output_shape_spatial", [1, 2, 3, 4], [2, 2, 3, 3], True, strides=[2, 2], output_shape=[7, 9])
    valid("r2_output_shape_full_rank", [1, 2, 3, 4], [2, 2, 3, 3], True, strides=[2, 2],
          output_shape=[1, 2, 8, 9])
    valid("r2_output_shape_ignores_pads", [1, 2, 3, 3], [2, 2, 3, 3], strides=[2, 2],
          output_shape=[6, 7], pads=[5, 5, 5, 5])
    valid("r2_output_shape_same_upper_odd", [1, 2, 3, 3], [2, 2, 3, 3], True, strides=[2, 2],
          output_shape=[6, 4], auto_pad="SAME_UPPER")
    valid("r2_output_shape_same_lower_odd", [1, 2, 3, 3], [2, 2, 3, 3], True, strides=[2, 2],
          output_shape=[6, 4], auto_pad="SAME_LOWER")
    valid("r2_same_upper_odd_total", [1, 2, 4, 3], [2, 2, 4, 5], True, strides=[1, 2], auto_pad="SAME_UPPER")
    valid("r2_same_lower_odd_total", [1, 2, 4, 3], [2, 2, 4, 5], True, strides=[1, 2], auto_pad="SAME_LOWER")
    valid("r2_same_upper_even_total", [1, 2, 4, 4], [2, 2, 3, 3], strides=[1, 1], auto_pad="SAME_UPPER")
    valid("r2_same_lower_dilated", [1, 2, 4, 4], [2, 2, 3, 2], True, strides=[2, 2], dilations=[2, 2],
          auto_pad="SAME_LOWER")
    valid("r2_valid", [1, 2, 4, 3], [2, 2, 3, 2], True, strides=[2, 3], auto_pad="VALID")
    valid("r2_valid_ignores_pads_default", [1, 2, 3, 3], [2, 3, 2, 2], auto_pad="VALID")
    valid("r2_same_upper_kernel_lt_stride", [1, 2, 3, 3], [2, 2, 2, 1], True, strides=[3, 2],
          auto_pad="SAME_UPPER", ort=SAME_NEGATIVE)
    valid("r2_same_lower_kernel_lt_stride", [1, 2, 3, 3], [2, 2, 1, 2], True, strides=[2, 4],
          auto_pad="SAME_LOWER", ort=SAME_NEGATIVE)
    valid("r2_same_upper_mixed_sign_totals", [1, 1, 3, 3], [1, 2, 4, 1], True, strides=[2, 3],
          auto_pad="SAME_UPPER", ort=SAME_NEGATIVE)
    valid("r2_kernel1x1", [1, 4, 4, 4], [4, 3, 1, 1], True)
    valid("r2_kernel1x1_stride2", [1, 3, 3, 4], [3, 2, 1, 1], True, strides=[2, 2])
    valid("r2_asymmetric_kernel_1x4", [1, 2, 4, 4], [2, 2, 1, 4], strides=[1, 2])
    valid("r2_group2", [1, 4, 3, 3], [4, 1, 3, 3], True, group=2)
    valid("r2_group2_m2", [1, 4, 3, 4], [4, 2, 3, 3], True, group=2, strides=[2, 1])
    valid("r2_group3_batch2", [2, 6, 3, 3], [6, 2, 2, 2], True, group=3, strides=[2, 2])
    valid("r2_depthwise_m1", [1, 4, 4, 4], [4, 1, 3, 3], True, group=4)
    valid("r2_depthwise_m2", [1, 3, 4, 3], [3, 2, 3, 3], True, group=3, strides=[2, 2])
    valid("r2_depthwise_dilated_padded", [2, 3, 4, 4], [3, 1, 2, 3], group=3, dilations=[2, 1],
          pads=[1, 0, 0, 1])
    valid("r2_batch2_bias", [2, 2, 3, 4], [2, 3, 3, 3], True, strides=[2, 1])
    valid("r2_batch3_no_bias", [3, 2, 3, 3], [2, 2, 2, 2], strides=[2, 2])
    valid("r2_zero_batch", [0, 2, 3, 3], [2, 2, 3, 3], True, strides=[2, 2])
    valid("r2_zero_channels_bias_fill", [1, 0, 3, 3], [0, 2, 3, 3], True, strides=[2, 2])
    valid("r2_zero_channels_no_bias", [1, 0, 2, 3], [0, 2, 2, 2])
    valid("r2_zero_spatial_axis", [1, 2, 0, 3], [2, 2, 3, 3], True, strides=[1, 2])
    valid("r2_odd_sizes", [1, 3, 5, 7], [3, 2, 3, 5], True, strides=[2, 3], pads=[1, 2, 0, 1])
    valid("r2_many_channels", [1, 16, 3, 3], [16, 8, 3, 3], True, strides=[2, 2], pads=[1, 1, 1, 1])
    valid("r2_all_attributes", [2, 4, 3, 4], [4, 2, 3, 2], True, group=2, strides=[2, 3], dilations=[2, 1],
          pads=[1, 0, 2, 1], output_padding=[1, 2], kernel_shape=[3, 2])

    # ---- rank 3 -----------------------------------------------------------------------------------
    valid("r3_basic", [1, 2, 3, 3, 3], [2, 2, 2, 2, 2])
    valid("r3_bias", [1, 2, 3, 3, 2], [2, 3, 2, 2, 2], True)
    valid("r3_strides_1_2_3", [1, 2, 3, 3, 3], [2, 2, 2, 2, 2], True, strides=[1, 2, 3])
    valid("r3_dilations", [1, 2, 3, 3, 3], [2, 2, 2, 2, 2], dilations=[2, 1, 3])
    valid("r3_pads_asymmetric", [1, 2, 3, 4, 3], [2, 2, 3, 3, 2], True, strides=[2, 1, 2],
          pads=[1, 0, 0, 0, 2, 1])
    valid("r3_output_padding", [1, 2, 3, 2, 3], [2, 2, 2, 2, 2], strides=[2, 3, 2], output_padding=[1, 2, 0])
    valid("r3_output_shape", [1, 2, 3, 3, 2], [2, 2, 2, 2, 2], True, strides=[2, 2, 2],
          output_shape=[6, 7, 5])
    valid("r3_output_shape_full_rank", [1, 1, 2, 3, 2], [1, 2, 3, 2, 2], strides=[2, 1, 2],
          output_shape=[1, 2, 6, 4, 5])
    valid("r3_same_upper_odd_total", [1, 2, 3, 3, 3], [2, 2, 3, 2, 4], True, strides=[2, 1, 1],
          auto_pad="SAME_UPPER")
    valid("r3_same_lower_odd_total", [1, 2, 3, 3, 3], [2, 2, 3, 2, 4], True, strides=[2, 1, 1],
          auto_pad="SAME_LOWER")
    valid("r3_valid", [1, 2, 2, 3, 2], [2, 2, 2, 2, 3], auto_pad="VALID", strides=[2, 2, 1])
    valid("r3_same_upper_kernel_lt_stride", [1, 1, 2, 2, 2], [1, 2, 1, 2, 1], True, strides=[2, 3, 3],
          auto_pad="SAME_UPPER", ort=SAME_NEGATIVE)
    valid("r3_kernel1", [1, 4, 3, 3, 3], [4, 2, 1, 1, 1], True)
    valid("r3_depthwise", [1, 3, 3, 3, 3], [3, 1, 2, 2, 2], True, group=3)
    valid("r3_depthwise_m2", [1, 2, 2, 3, 3], [2, 2, 2, 2, 2], group=2, strides=[2, 1, 2])
    valid("r3_group2_batch2_bias", [2, 4, 2, 3, 3], [4, 1, 2, 2, 2], True, group=2, strides=[1, 2, 1])
    valid("r3_zero_batch", [0, 2, 2, 2, 2], [2, 2, 2, 2, 2], True)
    valid("r3_zero_channels_bias_fill", [1, 0, 2, 2, 2], [0, 3, 2, 2, 2], True, strides=[2, 1, 1])
    valid("r3_zero_spatial_axis", [1, 2, 2, 0, 2], [2, 2, 2, 3, 2], True, ort=ORT_CRASH)
    valid("r3_zero_spatial_last_axis", [1, 2, 2, 2, 0], [2, 2, 2, 3, 2], True)
    valid("r3_odd_sizes", [1, 3, 3, 5, 1], [3, 1, 3, 3, 3], True, strides=[1, 2, 3], pads=[1, 1, 0, 0, 2, 1])
    valid("r3_all_attributes", [2, 4, 2, 3, 2], [4, 1, 3, 2, 2], True, group=2, strides=[2, 1, 3],
          dilations=[1, 2, 2], pads=[1, 0, 2, 0, 1, 1], output_padding=[1, 0, 2])

    # ---- float16 (needs shader-f16; the runner SKIPs them on adapters without it) --------------------
    valid("f16_r1_stride2_bias", [1, 2, 5], [2, 2, 3], True, dtype="float16", strides=[2])
    valid("f16_r2_group2_pads", [1, 4, 4, 4], [4, 1, 3, 3], True, dtype="float16", group=2, strides=[2, 2],
          pads=[1, 0, 0, 1])
    valid("f16_r3_basic", [1, 2, 2, 3, 3], [2, 2, 2, 2, 2], True, dtype="float16", strides=[1, 2, 1])

    # ---- the ONNX conformance cases, with their own data ----------------------------------------------
    for name, inputs, attributes, output in _conformance_cases():
        valid(f"onnx_{name.removeprefix('test_')}", list(inputs[0].shape), list(inputs[1].shape),
              x=inputs[0], w=inputs[1], b=inputs[2] if len(inputs) > 2 else None, conformance=output,
              **attributes)

    # ---- refusals: one per rule of the semantics note -------------------------------------------------
    error("err_group_does_not_divide_channels", {"x": t([1, 3, 4]), "w": t([3, 1, 3])}, group=2)
    error("err_w_channels_mismatch", {"x": t([1, 2, 4]), "w": t([3, 2, 3])})
    error("err_rank_mismatch_x_w", {"x": t([1, 2, 3, 3]), "w": t([2, 2, 3])})
    error("err_bias_wrong_length", {"x": t([1, 2, 4]), "w": t([2, 3, 3]), "b": t([2])})
    error("err_bias_2d", {"x": t([1, 2, 4]), "w": t([2, 3, 3]), "b": t([1, 3])})
    error("err_bias_wrong_length_grouped", {"x": t([1, 4, 4]), "w": t([4, 2, 3]), "b": t([2])}, group=2)
    error("err_strides_wrong_length", {"x": t([1, 1, 3, 3]), "w": t([1, 1, 2, 2])}, strides=[2])
    error("err_pads_wrong_length", {"x": t([1, 1, 3, 3]), "w": t([1, 1, 2, 2])}, pads=[1, 1])
    error("err_dilations_wrong_length", {"x": t([1, 1, 4]), "w": t([1, 1, 2])}, dilations=[1, 1])
    error("err_output_padding_wrong_length", {"x": t([1, 1, 3, 3]), "w": t([1, 1, 2, 2])},
          strides=[2, 2], output_padding=[1, 1, 1])
    error("err_output_shape_wrong_length", {"x": t([1, 1, 3, 3]), "w": t([1, 1, 2, 2])}, output_shape=[1, 4, 4])
    error("err_kernel_shape_wrong_length", {"x": t([1, 1, 3, 3]), "w": t([1, 1, 2, 2])}, kernel_shape=[2])
    error("err_stride_zero", {"x": t([1, 1, 4]), "w": t([1, 1, 3])}, strides=[0])
    error("err_stride_negative", {"x": t([1, 1, 3, 3]), "w": t([1, 1, 2, 2])}, strides=[1, -1])
    error("err_dilation_zero", {"x": t([1, 1, 3, 3]), "w": t([1, 1, 2, 2])}, dilations=[1, 0])
    error("err_negative_pad", {"x": t([1, 1, 4]), "w": t([1, 1, 3])}, pads=[-1, 0])
    error("err_output_padding_ge_stride_and_dilation", {"x": t([1, 1, 4]), "w": t([1, 1, 3])},
          strides=[2], output_padding=[2])
    error("err_output_padding_ge_dilation_stride1", {"x": t([1, 1, 3, 3]), "w": t([1, 1, 2, 2])},
          dilations=[2, 2], output_padding=[0, 2])
    error("err_output_padding_negative", {"x": t([1, 1, 4]), "w": t([1, 1, 3])}, output_padding=[-1])
    error("err_kernel_shape_mismatch", {"x": t([1, 1, 3, 3]), "w": t([1, 1, 2, 2])}, kernel_shape=[3, 3])
    error("err_unknown_auto_pad", {"x": t([1, 1, 4]), "w": t([1, 1, 3])}, auto_pad="SAME")
    error("err_output_dim_nonpositive_huge_pads", {"x": t([1, 1, 3, 3]), "w": t([1, 1, 2, 2])},
          pads=[2, 0, 2, 0])
    error("err_output_shape_zero", {"x": t([1, 1, 4]), "w": t([1, 1, 3])}, output_shape=[0])
    # natural 7, bound 2*3 + 2 = 8: 9 only a longer input reaches (docs/decisions.md, output-shape-bound)
    error("err_output_shape_past_input_reach", {"x": t([1, 1, 3]), "w": t([1, 2, 3]), "b": t([2])},
          field="output_shape", strides=[2], output_shape=[9])
    error("err_output_shape_full_form_wrong_batch", {"x": t([2, 2, 4]), "w": t([2, 3, 3])}, field="output_shape",
          strides=[2], output_shape=[1, 3, 8])
    error("err_group_zero", {"x": t([1, 2, 4]), "w": t([2, 1, 3])}, group=0)
    error("err_kernel_dim_zero", {"x": t([1, 1, 4]), "w": t([1, 1, 0])})
    error("err_x_data_length_mismatch", {"x": t([1, 2, 4], count=7), "w": t([2, 1, 3])})
    error("err_w_data_length_mismatch", {"x": t([1, 2, 4]), "w": t([2, 1, 3], count=7)})
    error("err_b_data_length_mismatch", {"x": t([1, 2, 4]), "w": t([2, 1, 3]), "b": t([1], count=2)})
    error("err_dtype_int32", {"x": t([1, 1, 4], "int32"), "w": t([1, 1, 3], "int32")})
    error("err_dtype_float64", {"x": t([1, 1, 4], "float64"), "w": t([1, 1, 3], "float64")})
    error("err_dtype_mixed_float32_float16", {"x": t([1, 1, 4], "float32"), "w": t([1, 1, 3], "float16")})
    error("err_x_rank2", {"x": t([1, 4]), "w": t([4, 1])})
    error("err_x_rank6", {"x": t([1, 1, 2, 2, 2, 2]), "w": t([1, 1, 1, 1, 1, 1])})
    error("err_unknown_attribute", {"x": t([1, 1, 4]), "w": t([1, 1, 3])}, stride=[2])
    error("err_strides_not_integers", {"x": t([1, 1, 4]), "w": t([1, 1, 3])}, strides=[1.5])
    variant_family_cases()


def _why_ort_cannot(x_shape, w_shape, attributes: dict) -> str | None:
    """Which known onnxruntime limitation (above) a spec runs into, or None when it must cross-check."""
    rank = len(x_shape) - 2
    ones = [1] * rank
    strides, dilations = attributes.get("strides", ones), attributes.get("dilations", ones)
    output_padding = attributes.get("output_padding", [0] * rank)
    if rank == 3 and 0 in x_shape[2:4]:
        return ORT_CRASH
    if any(op >= s for op, s in zip(output_padding, strides)):
        return OP_GE_STRIDE
    totals = [op + (k - 1) * d + 1 - s for op, k, d, s in zip(output_padding, w_shape[2:], dilations, strides)]
    if "output_shape" in attributes:
        natural = [s * (i - 1) + t + s for s, i, t in zip(strides, x_shape[2:], totals)]
        pad_totals = [n - o for n, o in zip(natural, attributes["output_shape"][-rank:])]
        if attributes.get("auto_pad") == "SAME_UPPER" and any(p < 0 and p % 2 for p in pad_totals):
            return SAME_UPPER_ODD_NEGATIVE
    elif attributes.get("auto_pad") in ("SAME_UPPER", "SAME_LOWER") and any(t < 0 for t in totals):
        return SAME_NEGATIVE
    return None


def variant_family_cases() -> None:
    """The specs in tools/cases/<family>.py: shapes past one tile, odd sizes, bias or not, per fast variant."""
    import importlib.util

    for path in sorted(VARIANT_SPECS.glob("*.py")):
        if path.name == "make_case_file.py":
            continue
        spec = importlib.util.spec_from_file_location(f"case_specs_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for i, case in enumerate(module.SPECS):
            attributes = case.get("attributes", {})
            name = re.sub(r"[^a-z0-9]+", "_", f"{path.stem}_{case['name']}".lower()).strip("_")
            ort = _why_ort_cannot(case["x"], case["w"], attributes)
            valid(name, case["x"], case["w"], case.get("bias", False), ort=ort, **attributes)
            # Every third spec (or every F16_EVERY-th, where the spec file sets it) again in float16, so that
            # each fast variant meets f16 storage on the shapes it was written for (they SKIP on adapters
            # without shader-f16).
            if i % getattr(module, "F16_EVERY", F16_EVERY) == 0:
                valid(f"{name}_f16", case["x"], case["w"], case.get("bias", False), dtype="float16", ort=ort,
                      **attributes)


def _conformance_cases():
    """(name, inputs, attributes, output) of onnx's test_convtranspose* node tests."""
    from onnx import helper
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # collecting every node test warns about unrelated ops
        cases = [c for c in collect_testcases(None) if c.name.startswith("test_convtranspose")]
    for case in sorted(cases, key=lambda c: c.name):
        node = case.model.graph.node[0]
        attributes = {}
        for a in node.attribute:
            v = helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            elif isinstance(v, (list, tuple)):
                v = [int(i) for i in v]
            attributes[a.name] = v
        inputs, outputs = case.data_sets[0]
        yield case.name, inputs, attributes, outputs[0]


# -------------------------------------------------------------------------------------------- building
def _onnx_reference(x, w, b, attributes) -> np.ndarray:
    """onnx's Python reference (right for group 1 only, per the semantics note)."""
    from onnx.reference import ReferenceEvaluator

    from tools.ort_oracle import build_model

    model = build_model(x.shape, w.shape, None if b is None else b.shape, attributes)
    feeds = {"x": x, "w": w} if b is None else {"x": x, "w": w, "b": b}
    return np.asarray(ReferenceEvaluator(model).run(None, feeds)[0], dtype=np.float64)


def _ort_child(x, w, b, attributes) -> None:
    run_onnxruntime(x, w, b, attributes)


def _ort_in_child(x, w, b, attributes) -> str | None:
    """Runs onnxruntime in a fresh process (it may crash); None if it succeeded, else what happened."""
    import multiprocessing

    child = multiprocessing.get_context("spawn").Process(target=_ort_child, args=(x, w, b, attributes))
    child.start()
    child.join(120)
    if child.exitcode == 0:
        return None
    if child.exitcode is not None and child.exitcode < 0:
        import signal

        return f"onnxruntime's process died with {signal.Signals(-child.exitcode).name}"
    return f"onnxruntime failed in the child process (exit code {child.exitcode})"


def build() -> tuple[dict, list[str]]:
    """Computes every case; returns the document and the report lines."""
    define_cases()
    names = [c["name"] for c in CASES]
    assert len(set(names)) == len(names), f"duplicate case names: {sorted({n for n in names if names.count(n) > 1})}"
    for n in names:
        assert _NAME.match(n), f"case name {n!r} is not snake_case"

    report, out = [], []
    for spec in CASES:
        name, inputs, attributes = spec["name"], spec["inputs"], spec["attributes"]
        if spec.get("expected_error"):
            try:
                validate(**inputs, **attributes)
            except ConvTransposeError as exc:
                assert spec["field"] in (None, exc.field), \
                    f"{name}: refused with field {exc.field!r}, not {spec['field']!r}"
                report.append(f"  refused   {name}: {exc}")
            else:
                raise AssertionError(f"{name}: expected ConvTransposeError, the request was accepted")
            out.append({"name": name, "inputs": inputs, "attributes": attributes, "expected_error": True})
            continue

        geom, arrays = validate(**inputs, **attributes)  # a valid case must be accepted
        assert geom.y_size <= MAX_OUTPUT_ELEMENTS, f"{name}: output {geom.y_shape} too large for the browser"
        y = conv_transpose_reference(geom, arrays["x"], arrays["w"], arrays.get("b"))
        tol = tolerance(geom.dtype, geom.in_per_group * math.prod(geom.kernel))
        assert np.all(np.isfinite(y)), f"{name}: non-finite expected values cannot go into JSON"

        if spec["conformance"] is not None:
            want = np.asarray(spec["conformance"], dtype=np.float64)
            assert want.shape == y.shape, f"{name}: shape {y.shape} vs onnx's {want.shape}"
            assert np.allclose(y, want, atol=tol["atol"], rtol=tol["rtol"]), f"{name}: differs from onnx's output"

        # onnxruntime: f16 cases run in float32 on the (exactly representable) f16 inputs, which checks
        # the expected values more tightly than an f16 run would.
        x32, w32 = arrays["x"].astype(np.float32), arrays["w"].astype(np.float32)
        b32 = arrays["b"].astype(np.float32) if "b" in arrays else None
        if spec["ort"] is ORT_CRASH:
            got, ort_error = None, _ort_in_child(x32, w32, b32, attributes)
        else:
            try:
                got = run_onnxruntime(x32, w32, b32, attributes)
                ort_error = None
            except Exception as exc:  # noqa: BLE001 - any refusal is reported
                message = str(exc).split("Status Message: ")[-1].splitlines()[0]
                got, ort_error = None, f"onnxruntime refuses it: {message[:200]}"
        if spec["ort"] is None:
            assert ort_error is None, f"{name}: onnxruntime failed: {ort_error}"
            assert got.shape == y.shape, f"{name}: onnxruntime shape {got.shape} vs ours {y.shape}"
            err = np.abs(got.astype(np.float64) - y)
            bound = tol["atol"] + tol["rtol"] * np.abs(y)
            assert np.all(err <= bound), f"{name}: onnxruntime differs by {err.max():.3g} (atol {tol['atol']})"
            status = f"ORT ok (max err {float(err.max()) if err.size else 0.0:.2g})"
        else:
            if spec["ort"] is SAME_UPPER_ODD_NEGATIVE:
                assert ort_error is None and got.shape == y.shape and not np.allclose(got, y, atol=tol["atol"]), \
                    f"{name}: listed as a split divergence but onnxruntime agrees; check it"
                did = "onnxruntime gives the same shape, shifted values (its split truncates)"
            else:
                assert ort_error is not None or got.shape != y.shape, \
                    f"{name}: listed as not cross-checkable but onnxruntime gives the same shape; check it"
                did = ort_error or f"onnxruntime gives shape {list(got.shape)}, the spec {list(y.shape)}"
            status = f"NOT ORT-cross-checked: {did}"
            if spec["ort"] is SAME_NEGATIVE and geom.group == 1:
                # onnx.reference follows the spec here (I * stride); it is only wrong for group > 1.
                err = np.abs(_onnx_reference(x32, w32, b32, attributes) - y)
                assert np.all(err <= tol["atol"] + tol["rtol"] * np.abs(y)), f"{name}: onnx.reference differs"
                status += f"; onnx.reference agrees (max err {float(err.max()):.2g})"
            report.append(f"  skip-ort  {name}: {spec['ort']}\n            ({did})")
        report.append(f"  valid     {name}: y {list(geom.y_shape)} tol {tol} - {status}")

        expected = {"dtype": geom.dtype, "shape": list(geom.y_shape),
                    "data": _shortest(y, "float32")}
        out.append({"name": name, "inputs": inputs, "attributes": attributes,
                    "expected": {"y": expected}, "tolerance": tol})
    return {"op": "ai.onnx.ConvTranspose", "version": 1, "cases": out}, report


def dumps(doc: dict) -> str:
    """One case per line: small diffs when a case changes, and still plain JSON (no NaN / Infinity)."""
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, allow_nan=False)[:-1]
    lines = [json.dumps(c, allow_nan=False, separators=(",", ":")) for c in doc["cases"]]
    return head + ', "cases": [\n' + ",\n".join(lines) + "\n]}\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_PATH)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    doc, report = build()
    text = dumps(doc)
    parsed = parse_case_file(text)  # the page's own parser must accept it
    assert len(parsed) == len(doc["cases"])
    args.out.write_text(text)
    n_err = sum(1 for c in doc["cases"] if c.get("expected_error"))
    skipped = [c["name"] for c in CASES if not c.get("expected_error") and c["ort"] is not None]
    if not args.quiet:
        print("\n".join(report))
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}: "
          f"{len(doc['cases'])} cases ({len(doc['cases']) - n_err} valid, {n_err} expected_error); "
          f"{len(doc['cases']) - n_err - len(skipped)} cross-checked with onnxruntime, "
          f"{len(skipped)} not: {', '.join(skipped)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
