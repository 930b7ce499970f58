#!/usr/bin/python3
"""Compare arenaflow's ONNX shape inference with ONNX's own, over every test model of Debian's
libonnx-testdata (node, pytorch-converted, pytorch-operator, simple).

For each model, ONNX's `onnx.shape_inference.infer_shapes(model, data_prop=True)` gives a type
for some tensors; `arenaflow convert MODEL --shapes - --dynamic --no-declared --keep-folded --opaque-loops`
gives ours (inferred only: the shapes the model declares are ignored, so agreement is earned).
Where both know a rank, a dim or an element type, they must be equal: any difference is a
mismatch. Where ONNX knows a dim and we do not, it is counted as "unknown to arenaflow" (a
dynamic tensor: never a guess). Loop/Scan/SequenceMap are imported as opaque nodes with
dynamic outputs (--opaque-loops). A crash (signal, sanitizer report) of the converter is a
failure; a clean rejection (exit 1) is counted with its reason.

usage: /usr/bin/python3 tests/onnx_shapes.py ARENAFLOW_BINARY [DATA_DIR] [--verbose]
Exit status: 0 when mismatches == 0 and nothing crashed; 1 otherwise; 77 when onnx or the
test data is missing (skip).
"""
import collections
import glob
import os
import re
import subprocess
import sys

try:
    import onnx
    from onnx import shape_inference
except ImportError:
    print("SKIP: python3-onnx is not installed")
    sys.exit(77)

ELEM = {1: "f32", 2: "u8", 3: "i8", 4: "u16", 5: "i16", 6: "i32", 7: "i64", 9: "bool",
        10: "f16", 11: "f64", 12: "u32", 13: "u64", 16: "bf16"}
SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple")


def onnx_types(model):
    """name -> (elem, rank or None, [dim or None]) for every tensor ONNX types."""
    out = {}
    g = model.graph
    for vi in list(g.value_info) + list(g.output) + list(g.input):
        if not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        if tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            out[vi.name] = (tt.elem_type, len(dims), dims)
        else:
            out[vi.name] = (tt.elem_type, None, None)
    return out


def ours(binary, path):
    r = subprocess.run([binary, "convert", path, "--shapes", "-", "--dynamic", "--no-declared",
                        "--keep-folded", "--opaque-loops"], capture_output=True, text=True, timeout=60)
    if r.returncode < 0 or "Sanitizer" in r.stderr or "runtime error:" in r.stderr:
        return None, "CRASH (status %d): %s" % (r.returncode, r.stderr.strip()[-300:])
    if r.returncode != 0:
        return None, r.stderr.strip()
    res = {}
    for line in r.stdout.splitlines():
        name, kind, dtype, rank, dims, nbytes = line.split("\t")
        rank = int(rank)
        res[name] = (kind, dtype, rank, [int(d) for d in dims.split(",")] if rank > 0 else [])
    return res, None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    verbose = "--verbose" in sys.argv
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
    reasons = collections.Counter()
    crashes, mism = [], []
    per_suite = collections.Counter()
    unknown_ops = collections.Counter()
    for path in models:
        suite = path.split(os.sep)[-3]
        st["models"] += 1
        try:
            m = onnx.load(path)
        except Exception as e:  # a model ONNX itself cannot read: not ours to judge
            st["onnx_unreadable"] += 1
            continue
        try:
            inf = shape_inference.infer_shapes(m, data_prop=True)
            theirs = onnx_types(inf)
        except Exception:
            st["onnx_inference_failed"] += 1
            theirs = onnx_types(m)  # still compare with what the model itself states
        mine, why = ours(binary, path)
        if mine is None:
            if why.startswith("CRASH"):
                crashes.append((path, why))
            else:
                st["rejected"] += 1
                key = why.split(path + ": ", 1)[-1]
                key = re.sub(r"'[^']*'", "'...'", key)
                reasons[key[:100]] += 1
                if verbose:
                    print("REJECTED", path, why)
            continue
        st["imported"] += 1
        per_suite[suite] += 1
        producer = {o: n.op_type for n in m.graph.node for o in n.output}
        for name, (elem, rank, dims) in theirs.items():
            if name not in mine:
                continue
            kind, dtype, r, d = mine[name]
            st["tensors_compared"] += 1
            if elem in ELEM and dtype != "unknown":
                st["dtypes_compared"] += 1
                if ELEM[elem] != dtype:
                    mism.append((path, name, "dtype onnx %s ours %s" % (ELEM[elem], dtype)))
            if rank is None:
                continue
            st["ranks_onnx_knows"] += 1
            if r < 0:
                st["ranks_unknown_to_us"] += 1
                unknown_ops[producer.get(name, "?")] += 1
                continue
            if r != rank:
                mism.append((path, name, "rank onnx %d ours %d" % (rank, r)))
                continue
            for i, dv in enumerate(dims):
                if dv is None:
                    if d[i] >= 0:
                        st["dims_only_we_know"] += 1
                        if verbose:
                            print("ONLY-OURS", path, name, i, d)
                    continue
                st["dims_onnx_knows"] += 1
                if d[i] < 0:
                    st["dims_unknown_to_us"] += 1
                    unknown_ops[producer.get(name, "?")] += 1
                elif d[i] != dv:
                    mism.append((path, name, "dim %d onnx %d ours %d (onnx %s ours %s)" %
                                 (i, dv, d[i], dims, d)))
                else:
                    st["dims_equal"] += 1
    for k in ("models", "imported", "rejected", "onnx_unreadable", "onnx_inference_failed",
              "tensors_compared", "dtypes_compared", "ranks_onnx_knows", "ranks_unknown_to_us",
              "dims_onnx_knows", "dims_equal", "dims_unknown_to_us", "dims_only_we_know"):
        print("%-24s %d" % (k, st[k]))
    print("imported per suite      ", dict(per_suite))
    if unknown_ops:
        print("ops whose outputs ONNX sizes and we leave dynamic (ranks + dims):",
              ", ".join("%s %d" % kv for kv in unknown_ops.most_common(25)))
    if reasons:
        print("rejections by reason:")
        for k, v in reasons.most_common():
            print("  %4d  %s" % (v, k))
    for p, n, w in mism[:40]:
        print("MISMATCH", p, n, w)
    for p, w in crashes:
        print("CRASH", p, w)
    print("mismatches %d crashes %d" % (len(mism), len(crashes)))
    return 0 if not mism and not crashes else 1


if __name__ == "__main__":
    sys.exit(main())
