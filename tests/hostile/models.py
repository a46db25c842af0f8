"""Builds and reads hostile ONNX files (app/hostile.py hostile_model_spec) the way `python -m app model` does
before a host starts: onnx_model.read, then each layer's precheck, then (for a layer that passes) its one-node
model run by onnxruntime's CPU provider. Run as a child process by tests/test_hostile.py (onnx's checker and
onnxruntime are C++: a crash there must not take the test run with it):
    python -m tests.hostile.models SEED COUNT FOLDER  ->  one JSON line per case."""
from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from app import onnx_model
from app.hostile import hostile_model_spec
from app.host import model_runner

W = np.arange(72, dtype=np.float32).reshape(4, 2, 3, 3) / 72


def build_model(spec: dict, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(spec["seed"])
    kind = spec["kind"]
    elem = spec.get("elem", TensorProto.FLOAT)
    x_shape = spec.get("x_shape", [1, 4, 5, 5])
    attrs = {"strides": [2, 2]}
    if kind == "attribute":
        attrs[spec["attribute"]] = spec["value"]
    w = numpy_helper.from_array(W, "w")
    if kind == "dims":
        w.dims[:] = spec["dims"]
    if kind == "dtype":
        w = helper.make_tensor("w", elem, [4, 2, 3, 3], np.zeros(72).tolist() if elem != TensorProto.BFLOAT16 else [0] * 72)
    inputs = [helper.make_tensor_value_info("x", elem if kind == "dtype" else TensorProto.FLOAT, x_shape)]
    node_inputs = ["x", "w"]
    nodes = [helper.make_node("ConvTranspose", node_inputs, ["y"], name="up", **attrs)]
    inits = [w]
    change = spec.get("change")
    if change == "no_nodes":
        nodes = [helper.make_node("Relu", ["x"], ["y"])]
    elif change == "one_input":
        nodes = [helper.make_node("ConvTranspose", ["x"], ["y"], name="up")]
    elif change == "domain":
        nodes = [helper.make_node("ConvTranspose", node_inputs, ["y"], name="up", domain="com.example")]
    elif change == "empty_name":
        nodes = [helper.make_node("ConvTranspose", node_inputs, ["y"], **attrs)]
    elif change == "weight_is_input":
        inits = []
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 2, 3, 3]))
    elif change == "two_outputs_same_name":
        nodes.append(helper.make_node("Relu", ["x"], ["y"]))
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * len(x_shape))],
                              inits)
    opset = spec.get("opset", 17)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=spec.get("ir_version", 8))
    if kind == "external":
        (folder / "weights.bin").write_bytes(W.tobytes())
        (folder / "sub").mkdir(exist_ok=True)
        link = folder / "link.bin"
        if not link.exists():
            link.symlink_to(folder.parent / "outside.bin")
        (folder.parent / "outside.bin").write_bytes(W.tobytes())
        t = model.graph.initializer[0]
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        for key in ("location", "offset", "length"):
            if spec.get(key) is not None:
                e = t.external_data.add()
                e.key, e.value = key, str(spec[key])
    path = folder / "model.onnx"
    data = model.SerializeToString()
    if kind == "bytes":
        buf = bytearray(data)
        for _ in range(int(rng.integers(1, 20))):
            buf[int(rng.integers(len(buf)))] = int(rng.integers(256))
        data = bytes(buf)
    elif kind == "truncate":
        data = data[:int(rng.integers(len(data)))]
    path.write_bytes(data)
    return path


def run_case(spec: dict, folder: Path) -> dict:
    """What the tool would print for the file before and instead of a GPU run."""
    path = build_model(spec, folder)
    try:
        ml = onnx_model.read(path)
    except onnx_model.ModelError as exc:
        return {"outcome": "ModelError", "message": str(exc)}
    lines = [f"SKIP {s.name}: {s.reason}" for s in ml.skipped]
    for layer in ml.layers:
        why = model_runner.precheck(ml, layer, "float32", model_runner.DEFAULT_BUDGET)
        if why:
            lines.append(f"FAIL {layer.name}: {why}")
            continue
        try:
            x = onnx_model.seeded_input(layer.x_shape, "float32", layer.index)
            cut = onnx_model.one_node(ml, layer, "float32").SerializeToString()
            y = model_runner.ort_cpu(cut, x)
            lines.append(f"RUNS {layer.name}: y{list(y.shape)}")
        except Exception as exc:  # noqa: BLE001 - the tool reports these as the layer's FAIL line (_layer_run)
            lines.append(f"FAIL {layer.name}: {type(exc).__name__}")
    return {"outcome": "layers", "lines": lines}


def main(seed: int, count: int, folder: str) -> None:
    for index in range(count):
        spec = hostile_model_spec(np.random.default_rng([seed, index]))
        started = time.monotonic()
        try:
            result = run_case(spec, Path(folder) / f"case{index}")
        except BaseException:  # noqa: BLE001 - anything else is the failure this test looks for
            result = {"outcome": "unexpected", "traceback": traceback.format_exc()[-2000:]}
        result.update(index=index, spec=spec, seconds=round(time.monotonic() - started, 3))
        print(json.dumps(result, default=str), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
