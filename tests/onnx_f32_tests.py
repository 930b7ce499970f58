#!/usr/bin/python3
"""Count the float32-only ONNX node tests and check the op families issue 17 requires.

A test is float32-only when every graph input and output of its model.onnx, and every
initializer, is a float32 tensor (element type FLOAT). The node set of Debian's libonnx-testdata
(onnx 1.12 data) has 419 of them. Reads the output of `arenaflow onnx-test DIR` (one
`test_x: status` line per test) and prints
  f32-only: P of N passed; all node tests: P of M passed (X%)
then lists every failing or skipped test of a required family (Conv, ConvTranspose, Gemm,
MatMul, the pools, the normalisations, Softmax/LogSoftmax and the elementwise ops: those
whose single node's op is one of the families below).

usage: /usr/bin/python3 tests/onnx_f32_tests.py NODE_DIR ONNX_TEST_OUTPUT [MIN_F32] [MIN_PCT]
Exit status: 0 when at least MIN_F32 f32-only tests and MIN_PCT percent of all tests passed and
no required-family test failed or was skipped; 1 otherwise; 77 when onnx is missing.
"""
import os
import re
import sys

try:
    import onnx
except ImportError:
    print("onnx_f32_tests: python3-onnx missing; skipped")
    sys.exit(77)

FAMILIES = {
    "Conv", "ConvTranspose", "Gemm", "MatMul",
    "MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool", "LpPool", "GlobalLpPool",
    "BatchNormalization", "LayerNormalization", "InstanceNormalization", "GroupNormalization",
    "LRN", "MeanVarianceNormalization", "Softmax", "LogSoftmax",
    "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Gelu", "Erf", "Exp",
    "Log", "Sqrt", "Pow", "Clip", "Abs", "Neg", "Reciprocal", "Elu", "Selu", "Celu",
    "Softplus", "Softsign", "Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean",
}
FLOAT = onnx.TensorProto.FLOAT


def f32_only(model):
    g = model.graph
    for v in list(g.input) + list(g.output):
        if not v.type.HasField("tensor_type") or v.type.tensor_type.elem_type != FLOAT:
            return False
    return all(t.data_type == FLOAT for t in g.initializer)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    node_dir, result_file = sys.argv[1], sys.argv[2]
    min_f32 = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    min_pct = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    status = {}
    for line in open(result_file):
        m = re.match(r"^(test_\S+): (succeeded|failed|not implemented)", line)
        if m:
            status[m.group(1)] = m.group(2)
    n_all = n_f32 = p_all = p_f32 = 0
    bad = []
    for name in sorted(os.listdir(node_dir)):
        path = os.path.join(node_dir, name, "model.onnx")
        if not os.path.exists(path):
            continue
        model = onnx.load(path, load_external_data=False)
        ok = status.get(name) == "succeeded"
        n_all += 1
        p_all += ok
        if f32_only(model):
            n_f32 += 1
            p_f32 += ok
            ops = {n.op_type for n in model.graph.node}
            if len(ops) == 1 and ops <= FAMILIES and not ok:
                bad.append("%s (%s): %s" % (name, ops.pop(), status.get(name, "not run")))
    pct = 100.0 * p_all / max(n_all, 1)
    print("f32-only: %d of %d passed; all node tests: %d of %d passed (%.1f%%)"
          % (p_f32, n_f32, p_all, n_all, pct))
    for b in bad:
        print("required family, not passed: " + b)
    return 0 if p_f32 >= min_f32 and pct >= min_pct and not bad else 1


if __name__ == "__main__":
    sys.exit(main())
