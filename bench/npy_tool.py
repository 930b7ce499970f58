#!/usr/bin/python3
"""Deterministic model inputs and output comparison for bench/compare_ort.sh (NumPy only).

  npy_tool.py make DIR SEED SPEC...      writes DIR/<name>.npy for every SPEC and prints the
                                         arguments both runners take: NAME=DIR/<name>.npy ...
      SPEC is NAME=KIND:d0,d1,... (no dims: a scalar), KIND one of
        normal[*S]   float32 standard normal times S (default 1)
        uniform      float32 uniform in [0, 1)
        zeros        float32 zeros
        i64=V        int64 filled with V
      Values come from numpy.random.default_rng(SEED), one generator for all specs in order.
  npy_tool.py compare A_DIR B_DIR RTOL ATOL
      compares every B_DIR/*.npy with A_DIR's file of the same name (A: arenaflow, B: the
      reference runtime) and prints one JSON line: max_abs, max_rel (|a - b| / |b| over the
      elements where |b| > ATOL), match (numpy.allclose(a, b, RTOL, ATOL) on every output, same
      dtype and shape), outputs, and the first mismatch. Exit 0 when everything matches.
"""
import glob
import json
import os
import sys

import numpy as np


def make(out_dir, seed, specs):
    rng = np.random.default_rng(int(seed))
    os.makedirs(out_dir, exist_ok=True)
    args = []
    for spec in specs:
        name, rest = spec.split("=", 1)
        kind, _, dims = rest.partition(":")
        shape = tuple(int(d) for d in dims.split(",") if d)
        if kind.startswith("normal"):
            scale = float(kind.split("*")[1]) if "*" in kind else 1.0
            a = (rng.standard_normal(shape) * scale).astype(np.float32)
        elif kind == "uniform":
            a = rng.random(shape, dtype=np.float32)
        elif kind == "zeros":
            a = np.zeros(shape, np.float32)
        elif kind.startswith("i64="):
            a = np.full(shape, int(kind[4:]), np.int64)
        else:
            raise SystemExit("npy_tool: unknown kind '%s' in %s" % (kind, spec))
        path = os.path.join(out_dir, "in_%s.npy" % "".join(c if c.isalnum() else "_" for c in name))
        np.save(path, a)
        args.append("%s=%s" % (name, path))
    print(" ".join(args))
    return 0


def compare(a_dir, b_dir, rtol, atol):
    rtol, atol = float(rtol), float(atol)
    res = {"max_abs": 0.0, "max_rel": 0.0, "match": True, "outputs": 0, "first_mismatch": None}
    files = sorted(glob.glob(os.path.join(b_dir, "*.npy")))
    if not files:
        res["match"], res["first_mismatch"] = False, "no outputs in " + b_dir
    for f in files:
        name = os.path.basename(f)
        b = np.load(f)
        try:
            a = np.load(os.path.join(a_dir, name))
        except OSError:
            a = None
        res["outputs"] += 1
        if a is None or a.dtype != b.dtype or a.shape != b.shape:
            res["match"] = False
            res["first_mismatch"] = res["first_mismatch"] or "%s: %s vs %s" % (
                name, None if a is None else (a.dtype.str, a.shape), (b.dtype.str, b.shape))
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        d = np.abs(a64 - b64)
        if d.size:
            res["max_abs"] = max(res["max_abs"], float(d.max()))
            big = np.abs(b64) > atol
            if big.any():
                res["max_rel"] = max(res["max_rel"], float((d[big] / np.abs(b64[big])).max()))
        if not np.allclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True):
            res["match"] = False
            i = int(np.argmax(d > atol + rtol * np.abs(b64)))
            res["first_mismatch"] = res["first_mismatch"] or "%s[%d]: %g vs %g" % (
                name, i, a64.flat[i], b64.flat[i])
    print(json.dumps(res))
    return 0 if res["match"] else 1


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "make":
        sys.exit(make(sys.argv[2], sys.argv[3], sys.argv[4:]))
    if len(sys.argv) == 6 and sys.argv[1] == "compare":
        sys.exit(compare(*sys.argv[2:]))
    print(__doc__)
    sys.exit(2)
