#!/usr/bin/python3
# Writes a synthetic ONNX model with independent branches, for measuring the executor's thread
# model on a graph with inter-op parallelism (the wake-word models are chains):
#   x [1, C, H, W] -> B branches of L x (Conv 3x3 C->C + Relu) -> Concat -> Conv 1x1 -> y
# Weights are small random values (fixed seed). Usage: make_branches.py OUT.onnx [B L C H W]
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

out = sys.argv[1]
B, L, C, H, W = (int(v) for v in (sys.argv[2:7] if len(sys.argv) >= 7 else (4, 3, 32, 28, 28)))
rng = np.random.default_rng(17)
nodes, inits = [], []
def weight(name, shape):
    inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(np.float32), name))
    return name
heads = []
for b in range(B):
    cur = "x"
    for l in range(L):
        w = weight(f"w{b}_{l}", (C, C, 3, 3))
        bias = weight(f"b{b}_{l}", (C,))
        nodes.append(helper.make_node("Conv", [cur, w, bias], [f"c{b}_{l}"], name=f"conv{b}_{l}",
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{b}_{l}"], [f"r{b}_{l}"], name=f"relu{b}_{l}"))
        cur = f"r{b}_{l}"
    heads.append(cur)
nodes.append(helper.make_node("Concat", heads, ["cat"], name="concat", axis=1))
nodes.append(helper.make_node("Conv", ["cat", weight("wo", (C, B * C, 1, 1)), weight("bo", (C,))],
                              ["y"], name="conv_out", kernel_shape=[1, 1]))
g = helper.make_graph(nodes, "branches", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, W])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, H, W])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, out)
