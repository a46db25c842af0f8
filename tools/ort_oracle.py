"""onnxruntime's CPU provider as an independent oracle for ConvTranspose.

`run_onnxruntime(x, w, b, attributes)` builds a one-node opset-17 ONNX model with onnx.helper, runs it
on the CPUExecutionProvider and returns y as a numpy array. It raises whatever onnxruntime raises
(callers decide whether a refusal is expected). Used by tools/gen_test_cases.py and the tests.

Known crash (onnxruntime 1.32.0 CPU): a 3-D ConvTranspose whose input has a zero-size first or second
spatial axis (e.g. x [1, 2, 2, 0, 2]) kills the process with a segmentation fault; 1-D / 2-D and a
zero-size last axis are fine. Never call this in-process on such a case (gen_test_cases.py probes
it in a child process).

Known divergence, on purpose: for auto_pad SAME_UPPER / SAME_LOWER with an effective kernel smaller
than the stride, onnxruntime clamps the (negative) total padding to 0, while the spec (and our
reference) gives an output of I * stride with negative pads. Do not cross-check those cases here.
"""
from __future__ import annotations

import numpy as np

OPSET = 17

_DTYPES = {"float32": 1, "float16": 10, "float64": 11}  # onnx.TensorProto enum values


def build_model(x_shape, w_shape, b_shape, attributes: dict, dtype: str = "float32"):
    import onnx
    from onnx import helper

    elem = _DTYPES[dtype]
    # Inputs are declared with their rank only, dims unknown: with concrete dims ONNX's graph-level shape
    # inference (run when the session loads) refuses the rank+2 form of output_shape, which
    # onnxruntime's kernel itself accepts. Unknown dims leave every check to the kernel.
    inputs = [helper.make_tensor_value_info("x", elem, [None] * len(x_shape)),
              helper.make_tensor_value_info("w", elem, [None] * len(w_shape))]
    names = ["x", "w"]
    if b_shape is not None:
        inputs.append(helper.make_tensor_value_info("b", elem, [None] * len(b_shape)))
        names.append("b")
    # Output dims left unknown (rank only): onnxruntime computes them; callers compare shapes themselves.
    output = helper.make_tensor_value_info("y", elem, [None] * len(x_shape))
    node = helper.make_node("ConvTranspose", names, ["y"], **attributes)
    graph = helper.make_graph([node], "conv_transpose", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8  # opset 17 <-> IR 8; keeps the model loadable by older runtimes too
    onnx.checker.check_model(model)
    return model


def run_onnxruntime(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None,
                    attributes: dict | None = None) -> np.ndarray:
    """y = ConvTranspose(x, w, b; attributes) on onnxruntime's CPU provider (float32 unless x is float16/64)."""
    import onnxruntime as ort

    x = np.ascontiguousarray(x)
    w = np.ascontiguousarray(w, dtype=x.dtype)
    dtype = str(x.dtype)
    feeds = {"x": x, "w": w}
    if b is not None:
        feeds["b"] = np.ascontiguousarray(b, dtype=x.dtype)
    model = build_model(x.shape, w.shape, None if b is None else feeds["b"].shape, dict(attributes or {}), dtype)
    options = ort.SessionOptions()
    options.log_severity_level = 4  # fatal only: a refusal comes back as the exception, not also on stderr
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    (y,) = session.run(["y"], feeds)
    return y
