"""Writes small ONNX models with the patterns operator fusion folds (tests/cli_fuse.sh):
Conv + BatchNormalization + activation chains, a residual Add between two such blocks, a Gemm
+ Relu, a MatMul + Sigmoid + Tanh chain, PyTorch Linear layers (MatMul + bias Add, a residual
Add), a Gemm with a residual Add, and Convs without bias followed by a per-channel constant Add,
each with one input "x" (shape in the file name).
usage: fuse_models.py DIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)


def const(name, shape, lo=-0.5, hi=0.5):
    return numpy_helper.from_array(rng.uniform(lo, hi, shape).astype(np.float32), name)


def conv_bn(prefix, x, cin, cout, act, inits, nodes, bias=True):
    inits.append(const(prefix + "w", (cout, cin, 3, 3), -0.3, 0.3))
    ins = [x, prefix + "w"]
    if bias:
        inits.append(const(prefix + "b", (cout,)))
        ins.append(prefix + "b")
    nodes.append(helper.make_node("Conv", ins, [prefix + "c"], pads=[1, 1, 1, 1]))
    for p, lo, hi in (("scale", 0.5, 1.5), ("bias", -0.2, 0.2), ("mean", -0.2, 0.2),
                      ("var", 0.5, 1.5)):
        inits.append(const(prefix + p, (cout,), lo, hi))
    nodes.append(helper.make_node("BatchNormalization", [prefix + "c"] + [
        prefix + p for p in ("scale", "bias", "mean", "var")], [prefix + "bn"], epsilon=1e-5))
    y = prefix + "bn"
    for i, a in enumerate(act):
        out = "%s%s%d" % (prefix, a.lower(), i)
        if a == "Clip":
            inits += [const(prefix + "lo", (), -0.0, 0.0), const(prefix + "hi", (), 6.0, 6.0)]
            nodes.append(helper.make_node("Clip", [y, prefix + "lo", prefix + "hi"], [out]))
        elif a == "LeakyRelu":
            nodes.append(helper.make_node(a, [y], [out], alpha=0.1))
        elif a == "HardSigmoid":
            nodes.append(helper.make_node(a, [y], [out], alpha=0.2, beta=0.5))
        else:
            nodes.append(helper.make_node(a, [y], [out]))
        y = out
    return y


def save(path, nodes, inits, xshape, y, yshape):
    g = helper.make_graph(nodes, "fuse", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, xshape)], [helper.make_tensor_value_info(
            y, TensorProto.FLOAT, yshape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(m)
    onnx.save(m, path)


def main(d):
    os.makedirs(d, exist_ok=True)
    acts = [["Relu"], ["Clip"], ["LeakyRelu", "Tanh"], ["HardSigmoid"], ["Sigmoid", "Relu"],
            ["HardSwish"], ["Elu"], ["Softplus"]]
    for i, act in enumerate(acts):
        nodes, inits = [], []
        y = conv_bn("a", "x", 3, 8, act, inits, nodes, bias=i % 2 == 0)
        y = conv_bn("b", y, 8, 8, ["Relu"], inits, nodes)
        save(os.path.join(d, "convbn_%s_x=1,3,12,12.onnx" % "_".join(act)), nodes, inits,
             [1, 3, 12, 12], y, [1, 8, 12, 12])
    nodes, inits = [], []  # residual: relu(bn(conv(relu(bn(conv s)))) + s), s = relu(bn(conv x))
    s = conv_bn("a", "x", 3, 8, ["Relu"], inits, nodes)
    y = conv_bn("b", s, 8, 8, ["Relu"], inits, nodes)
    y = conv_bn("c", y, 8, 8, [], inits, nodes)
    nodes += [helper.make_node("Add", [s, y], ["sum"]), helper.make_node("Relu", ["sum"], ["out"])]
    save(os.path.join(d, "residual_x=1,3,12,12.onnx"), nodes, inits, [1, 3, 12, 12], "out",
         [1, 8, 12, 12])
    inits = [const("w", (16, 24)), const("b", (24,)), const("m", (24, 24))]
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"]),
             helper.make_node("Relu", ["g"], ["r"]),
             helper.make_node("MatMul", ["r", "m"], ["mm"]),
             helper.make_node("Sigmoid", ["mm"], ["s"]),
             helper.make_node("Tanh", ["s"], ["out"])]
    save(os.path.join(d, "gemm_x=4,16.onnx"), nodes, inits, [4, 16], "out", [4, 24])
    linear(d)


def linear(d):
    """h = relu(x W1 + b1); out = tanh(h W2 + b2 + sigmoid(h W3)), as PyTorch exports Linear
    (Add(b, mm)); relu(Gemm(relu(x), w, c) + sigmoid(x)); Conv (no bias) + Add of a [1, C, 1, 1]
    constant + Relu, then Conv (bias) + Add of a [C, 1, 1] constant. (A residual the node
    itself reads is not folded: its output may take the residual's bytes.)"""
    inits = [const("w1", (16, 24)), const("b1", (24,)), const("w2", (24, 24)), const("b2", (24,)),
             const("w3", (24, 24))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["mm1"]),
             helper.make_node("Add", ["b1", "mm1"], ["l1"]),
             helper.make_node("Relu", ["l1"], ["h"]),
             helper.make_node("MatMul", ["h", "w3"], ["mm3"]),
             helper.make_node("Sigmoid", ["mm3"], ["sq"]),
             helper.make_node("MatMul", ["h", "w2"], ["mm2"]),
             helper.make_node("Add", ["mm2", "b2"], ["l2"]),
             helper.make_node("Add", ["l2", "sq"], ["res"]),
             helper.make_node("Tanh", ["res"], ["out"])]
    save(os.path.join(d, "linear_x=2,5,16.onnx"), nodes, inits, [2, 5, 16], "out", [2, 5, 24])
    inits = [const("w", (16, 16)), const("c", (16,))]
    nodes = [helper.make_node("Relu", ["x"], ["h0"]),
             helper.make_node("Sigmoid", ["x"], ["t"]),
             helper.make_node("Gemm", ["h0", "w", "c"], ["g"], transB=1),
             helper.make_node("Add", ["t", "g"], ["s"]),
             helper.make_node("Relu", ["s"], ["out"])]
    save(os.path.join(d, "gemmres_x=4,16.onnx"), nodes, inits, [4, 16], "out", [4, 16])
    inits = [const("w", (8, 3, 3, 3), -0.3, 0.3), const("c", (1, 8, 1, 1)),
             const("w2", (8, 8, 3, 3), -0.3, 0.3), const("b2", (8,)), const("c2", (8, 1, 1))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["y", "c"], ["z"]),
             helper.make_node("Relu", ["z"], ["r"]),
             helper.make_node("Conv", ["r", "w2", "b2"], ["y2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "y2"], ["out"])]
    save(os.path.join(d, "convadd_x=1,3,12,12.onnx"), nodes, inits, [1, 3, 12, 12], "out",
         [1, 8, 12, 12])


if __name__ == "__main__":
    main(sys.argv[1])
