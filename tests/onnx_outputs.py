#!/usr/bin/python3
"""Compare arenaflow's inferred output shapes with the shapes the ONNX backend tests' outputs
really have (test_data_set_0/output_*.pb of Debian's libonnx-testdata).

onnx_shapes.py compares with ONNX's shape inference, which may itself be wrong or silent; this
script compares with ground truth. For every test model, `arenaflow convert MODEL --shapes -
--no-declared --dynamic --keep-folded --opaque-loops` (inferred shapes only) gives our shape of
each graph output; output_<i>.pb gives the real one. A rank or dim we state that differs from
the real one is a mismatch (a wrong rule: worse than none); a dim we leave unknown is counted,
with the op that produced it. A graph input whose shape the model leaves open makes its
consumers unknown, as it should.

usage: /usr/bin/python3 tests/onnx_outputs.py ARENAFLOW [DATA_DIR] [--verbose] [--list-dynamic]
Exit status: 0 when mismatches == 0 and nothing crashed; 1 otherwise; 77 when onnx is missing.
"""
import collections
import glob
import os
import subprocess
import sys

try:
    import onnx
except ImportError:
    print("SKIP: python3-onnx is not installed")
    sys.exit(77)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_shapes import ours  # noqa: E402  (the same `arenaflow convert --shapes` reader)

SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple")


def real_outputs(model_dir, n):
    """Dims of output_0..n-1 of the first data set (None where a file is missing or not a
    tensor)."""
    out = []
    for i in range(n):
        p = os.path.join(model_dir, "test_data_set_0", "output_%d.pb" % i)
        t = onnx.TensorProto()
        try:
            with open(p, "rb") as f:
                t.ParseFromString(f.read())
            out.append(list(t.dims))
        except Exception:
            out.append(None)
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    verbose = "--verbose" in sys.argv
    list_dyn = "--list-dynamic" in sys.argv
    if not args:
        print(__doc__)
        return 2
    binary = args[0]
    data = args[1] if len(args) > 1 else "/usr/share/libonnx-testdata/data"
    models = []
    for s in SUITES:
        models += sorted(glob.glob(os.path.join(data, s, "*", "model.onnx")))
    if not models:
        print("SKIP: no libonnx-testdata models under", data)
        return 77
    st = collections.Counter()
    unknown_ops = collections.Counter()
    mism, crashes, dyn = [], [], []
    for path in models:
        st["models"] += 1
        m = onnx.load(path)
        mine, why = ours(binary, path)
        if mine is None:
            if why.startswith("CRASH"):
                crashes.append((path, why))
            else:
                st["rejected"] += 1
                if verbose:
                    print("REJECTED", path, why[:200])
            continue
        producer = {o: n.op_type for n in m.graph.node for o in n.output}
        real = real_outputs(os.path.dirname(path), len(m.graph.output))
        for vi, dims in zip(m.graph.output, real):
            if dims is None or vi.name not in mine:
                continue
            st["outputs"] += 1
            kind, dtype, r, d = mine[vi.name]
            if r < 0:
                st["rank_unknown"] += 1
                unknown_ops[producer.get(vi.name, "?")] += 1
                dyn.append((path, vi.name, "rank unknown"))
                continue
            if r != len(dims):
                mism.append((path, vi.name, "rank: real %d ours %d" % (len(dims), r)))
                continue
            bad = [i for i in range(r) if d[i] >= 0 and d[i] != dims[i]]
            if bad:
                mism.append((path, vi.name, "dims: real %s ours %s" % (dims, d)))
            elif any(x < 0 for x in d):
                st["dims_unknown"] += 1
                unknown_ops[producer.get(vi.name, "?")] += 1
                dyn.append((path, vi.name, "dims %s" % d))
            else:
                st["exact"] += 1
    for k in ("models", "rejected", "outputs", "exact", "dims_unknown", "rank_unknown"):
        print("%-14s %d" % (k, st[k]))
    if unknown_ops:
        print("ops of the outputs left unknown:",
              ", ".join("%s %d" % kv for kv in unknown_ops.most_common(40)))
    if list_dyn:
        for p, n, w in dyn:
            print("UNKNOWN", p.split(os.sep)[-2], n, w)
    for p, n, w in mism:
        print("MISMATCH", p, n, w)
    for p, w in crashes:
        print("CRASH", p, w)
    print("mismatches %d crashes %d" % (len(mism), len(crashes)))
    return 0 if not mism and not crashes else 1


if __name__ == "__main__":
    sys.exit(main())
