#!/usr/bin/python3
"""Check that arenaflow's ONNX importer keeps every initializer's bytes exactly.

For each model, `arenaflow convert MODEL --data-sums - --dynamic --keep-folded --opaque-loops`
prints one line per constant tensor that carries data: name, dtype, bytes, the wsum64 checksum of the bytes.
onnx.numpy_helper.to_array() gives the reference for every initializer of the main graph (its
little-endian C-order bytes; external data is loaded by onnx.load). Every initializer that
became a tensor must be there with the same bytes and hash; an initializer the importer did not
emit (read by no node) is counted apart. Constants that are not initializers (Constant nodes,
folded values) are counted too; they are checked by the unit tests.

usage: /usr/bin/python3 tests/onnx_data.py ARENAFLOW MODEL_OR_DIR... [--verbose]
A directory is searched for */model.onnx (and *.onnx directly inside it).
Exit status: 0 when every emitted initializer matches; 1 otherwise; 77 when onnx is missing.
"""
import glob
import os
import subprocess
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError:
    print("SKIP: python3-onnx / numpy are not installed")
    sys.exit(77)


def wsum64(b):
    """The checksum `arenaflow convert --data-sums` prints: the bytes zero-padded to whole
    little-endian 64-bit words w_i, h = len ^ sum_i (w_i ^ (w_i >> 29)) * ((2i + 1) * K)
    modulo 2^64, K = 0x9E3779B97F4A7C15 (position-weighted, so swapped words differ)."""
    pad = (-len(b)) % 8
    w = np.frombuffer(b + b"\0" * pad, dtype="<u8")
    k = (np.arange(len(w), dtype=np.uint64) * np.uint64(2) + np.uint64(1)) * \
        np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        h = np.sum((w ^ (w >> np.uint64(29))) * k, dtype=np.uint64)
    return int(h) ^ len(b)


def ours(binary, path):
    r = subprocess.run([binary, "convert", path, "--data-sums", "-", "--dynamic", "--keep-folded",
                        "--opaque-loops"], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return None, r.stderr.strip()
    res = {}
    for line in r.stdout.splitlines():
        name, dtype, nbytes, h = line.split("\t")
        res[name] = (dtype, int(nbytes), int(h, 16))
    return res, None


def models_of(args):
    out = []
    for a in args:
        if os.path.isdir(a):
            out += sorted(glob.glob(os.path.join(a, "*", "model.onnx")))
            out += sorted(glob.glob(os.path.join(a, "*.onnx")))
        else:
            out.append(a)
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    verbose = "--verbose" in sys.argv
    if len(args) < 2:
        print(__doc__)
        return 2
    binary, models = args[0], models_of(args[1:])
    if not models:
        print("SKIP: no models found")
        return 77
    st = dict(models=0, rejected=0, initializers=0, matched=0, bytes=0, not_emitted=0,
              constant_nodes=0, other_constants=0, mismatches=0)
    for path in models:
        st["models"] += 1
        mine, why = ours(binary, path)
        if mine is None:
            st["rejected"] += 1
            print("REJECTED", path, why[:200])
            continue
        m = onnx.load(path)
        names = set()
        for t in m.graph.initializer:
            names.add(t.name)
            st["initializers"] += 1
            ref = numpy_helper.to_array(t)
            b = np.ascontiguousarray(ref).astype(ref.dtype.newbyteorder("<"), copy=False).tobytes()
            if t.name not in mine:
                st["not_emitted"] += 1
                if verbose:
                    print("NOT EMITTED", path, t.name)
                continue
            dtype, nbytes, h = mine[t.name]
            if nbytes != len(b) or h != wsum64(b):
                st["mismatches"] += 1
                print("MISMATCH", path, t.name, dtype, "ours", nbytes, "bytes, numpy", len(b))
            else:
                st["matched"] += 1
                st["bytes"] += len(b)
        for n in m.graph.node:  # Constant nodes: their value is known too
            if n.op_type != "Constant" or len(n.output) != 1 or n.output[0] not in mine:
                continue
            a = n.attribute[0]
            if a.name == "value":
                ref = numpy_helper.to_array(a.t)
            elif a.name in ("value_float", "value_floats"):
                ref = np.array(a.f if a.name == "value_float" else list(a.floats), np.float32)
            elif a.name in ("value_int", "value_ints"):
                ref = np.array(a.i if a.name == "value_int" else list(a.ints), np.int64)
            else:
                continue
            names.add(n.output[0])
            st["constant_nodes"] += 1
            b = np.ascontiguousarray(ref).astype(ref.dtype.newbyteorder("<"), copy=False).tobytes()
            dtype, nbytes, h = mine[n.output[0]]
            if nbytes != len(b) or h != wsum64(b):
                st["mismatches"] += 1
                print("MISMATCH", path, "Constant", n.output[0], dtype, nbytes, len(b))
        st["other_constants"] += sum(1 for n in mine if n not in names)
    for k in ("models", "rejected", "initializers", "matched", "bytes", "not_emitted",
              "constant_nodes", "other_constants", "mismatches"):
        print("%-16s %d" % (k, st[k]))
    return 0 if st["mismatches"] == 0 and st["rejected"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
