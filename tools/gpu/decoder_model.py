"""Writes a DCGAN-style decoder as an ONNX file, for `python -m app model FILE --chain` on the GPU machine: five
ConvTranspose k4 s2 p1 layers halving the channels and doubling the image (512 x 8 x 8 -> 32 x 256 x 256),
a bias and a Relu after each, seeded weights as initializers (as exported models hold them).

    python3 tools/gpu/decoder_model.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CHANNELS = [512, 256, 128, 64, 32, 16]
SIDE = 8


def decoder() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    x = "z"
    for i, (cin, cout) in enumerate(zip(CHANNELS, CHANNELS[1:])):
        w = (rng.standard_normal((cin, cout, 4, 4)) / np.sqrt(cin * 4)).astype(np.float32)
        b = rng.uniform(-0.1, 0.1, cout).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes.append(helper.make_node("ConvTranspose", [x, f"w{i}", f"b{i}"], [f"up{i}"], name=f"up{i}",
                                      strides=[2, 2], pads=[1, 1, 1, 1], kernel_shape=[4, 4]))
        x = f"act{i}"
        nodes.append(helper.make_node("Relu", [f"up{i}"], [x], name=f"relu{i}"))
    side = SIDE * 2 ** (len(CHANNELS) - 1)
    graph = helper.make_graph(nodes, "decoder", [helper.make_tensor_value_info("z", TensorProto.FLOAT,
                                                                               [1, CHANNELS[0], SIDE, SIDE])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, CHANNELS[-1], side, side])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    onnx.save(decoder(), sys.argv[1])
