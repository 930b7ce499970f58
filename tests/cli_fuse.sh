#!/usr/bin/env bash
# Operator fusion through the CLI (`--fuse on|off`): the fused plan's outputs equal the unfused
# plan's within 1e-5 of the output's largest magnitude (bench/npy_tool.py compare), with the
# real kernels (oneDNN post-ops) and the reference kernels (the C loop), on
#   1. small ONNX models with Conv + BatchNormalization + activation chains, a residual block,
#      Gemm/MatMul + activations (tests/fuse_models.py, python3-onnx);
#   2. the models of the ONNX backend test data (libonnx-testdata) with a chain of unary ops
#      after another op (Add, Mul -> Tanh -> Sigmoid -> Neg; the data has no Conv+BN model);
#   3. the real models bench/fetch_models.sh fetched, when present (PaddleOCR, openWakeWord);
# and `plan --fuse on` reports the nodes fused and the arena saved (text and JSON); a bad value
# is a usage error. Run by ctest with `arenaflow` on PATH.
set -u
src=${AF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
data=/usr/share/libonnx-testdata/data
py=/usr/bin/python3
command -v arenaflow >/dev/null 2>&1 || { echo "cli_fuse: 'arenaflow' is not on PATH" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 compared=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
if arenaflow convert "$tmp/none.onnx" 2>&1 | grep -q "not built"; then
    echo "SKIP: ONNX importer not built into arenaflow"
    exit 0
fi
if ! "$py" -c "import onnx, numpy" 2>/dev/null; then
    echo "SKIP: python3-onnx and python3-numpy are needed to make the models and inputs"
    exit 0
fi

# same MODEL KERNELS SPEC...: runs MODEL fused and unfused on inputs made from SPECs
same() {
    local m=$1 k=$2 d=$tmp/$compared
    shift 2
    compared=$((compared + 1))
    mkdir -p "$d/on" "$d/off"
    local ins a=() f
    ins=$("$py" "$src/bench/npy_tool.py" make "$d" 1 "$@") || { fail "$m: inputs"; return; }
    for f in $ins; do a+=(--input "$f"); done
    for f in on off; do
        arenaflow run "$m" "${a[@]}" --kernels "$k" --fuse "$f" --output-dir "$d/$f" \
            >"$d/$f.txt" 2>&1 || { fail "$m ($k, fuse $f): $(tail -2 "$d/$f.txt")"; return; }
    done
    grep -q "^fusion *[1-9][0-9]* nodes fused" "$d/on.txt" || fail "$m ($k): --fuse on fused nothing"
    grep -q "^fusion" "$d/off.txt" && fail "$m ($k): run --fuse off fused"
    local cmp
    cmp=$("$py" - "$d/on" "$d/off" <<'PY'
import glob, os, sys
import numpy as np
worst = 0.0
for f in sorted(glob.glob(os.path.join(sys.argv[2], "*.npy"))):
    ref = np.load(f).astype(np.float64)
    got = np.load(os.path.join(sys.argv[1], os.path.basename(f))).astype(np.float64)
    big = max(float(np.max(np.abs(ref))) if ref.size else 0.0, 1e-30)
    worst = max(worst, float(np.max(np.abs(got - ref))) / big if ref.size else 0.0)
print("%.3g" % worst)
sys.exit(0 if worst <= 1e-5 else 1)
PY
    ) || fail "$m ($k): fused outputs differ from unfused by $cmp of the largest value"
    echo "ok: $(basename "$m") ($k): $(grep -o '[0-9]* nodes fused ([0-9]* Batch[A-Za-z]* into Conv)' "$d/on.txt"), worst difference $cmp"
}

# 1. generated models
"$py" "$src/tests/fuse_models.py" "$tmp/models" || fail "fuse_models.py"
for m in "$tmp"/models/*.onnx; do
    spec=${m##*_x=}
    spec=${spec%.onnx}
    for k in real reference; do same "$m" "$k" "x=uniform:$spec"; done
done

# 2. backend test data: models with a unary chain after another op
for t in pytorch-operator/test_operator_basic pytorch-operator/test_operator_params; do
    [ -f "$data/$t/model.onnx" ] || { echo "SKIP: $t (libonnx-testdata missing)"; continue; }
    specs=$("$py" - "$data/$t/model.onnx" <<'PY'
import sys
import onnx
m = onnx.load(sys.argv[1])
init = {i.name for i in m.graph.initializer}
for i in m.graph.input:
    if i.name in init:
        continue
    dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
    print("%s=normal:%s" % (i.name, ",".join(str(d) for d in dims)), end=" ")
PY
    )
    for k in real reference; do same "$data/$t/model.onnx" "$k" $specs; done
done

# 3. real models, when fetched
models=$src/bench/.cache/models
for c in "ch_ppocr_mobile_v2.0_cls_infer.onnx x=uniform:1,3,48,192" \
    "ch_PP-OCRv4_rec_infer.onnx x=uniform:1,3,48,320" \
    "embedding_model.onnx input_1=normal:1,76,32,1"; do
    set -- $c
    [ -f "$models/$1" ] || { echo "SKIP: $1 (bench/fetch_models.sh not run)"; continue; }
    same "$models/$1" real "$2"
done

# plan report, JSON, bad value
m=$(ls "$tmp"/models/convbn_Relu_x=*.onnx | head -1)
out=$(arenaflow plan "$m" --input x=1,3,12,12 --fuse on) || fail "plan --fuse on"
echo "$out" | grep -q "^fused nodes *4 (2 BatchNormalization into Conv" || fail "plan text: $out"
echo "$out" | grep -q "^without fusion" || fail "plan text lacks the unfused arena"
echo "$out" | grep -q "^fusion saved" || fail "plan text lacks the bytes saved"
arenaflow plan "$m" --input x=1,3,12,12 --fuse off | grep -q "^fused nodes" && fail "--fuse off fused"
r=$(ls "$tmp"/models/residual_x=*.onnx)
arenaflow plan "$r" --input x=1,3,12,12 --fuse on |
    grep -q "3 BatchNormalization into Conv, 0 bias Add into Conv/MatMul, 1 residual Add" ||
    fail "residual model: the Add was not folded into its Conv"
arenaflow plan "$tmp/models/linear_x=2,5,16.onnx" --input x=2,5,16 --fuse on |
    grep -q "(0 BatchNormalization into Conv, 2 bias Add into Conv/MatMul, 1 residual Add into Conv/MatMul/Gemm, 3 unary" ||
    fail "linear model: MatMul + bias Add (+ residual Add) not folded"
arenaflow plan "$tmp/models/gemmres_x=4,16.onnx" --input x=4,16 --fuse on |
    grep -q "0 bias Add into Conv/MatMul, 1 residual Add into Conv/MatMul/Gemm, 1 unary" ||
    fail "gemmres model: the residual Add was not folded into the Gemm"
arenaflow plan "$tmp/models/convadd_x=1,3,12,12.onnx" --input x=1,3,12,12 --fuse on |
    grep -q "0 BatchNormalization into Conv, 2 bias Add into Conv/MatMul, 0 residual" ||
    fail "convadd model: the per-channel Adds were not folded into the Convs' bias"
# a fused plan written to the plan cache is restored from disk by the next process (its record
# has the fused graph's counts: af_plan_restore_counts)
lm=$tmp/models/linear_x=2,5,16.onnx
arenaflow run "$lm" --input x=2,5,16 --kernels real --cache "$tmp/pcache" --rounds 2 >/dev/null 2>&1 ||
    fail "run --cache (first)"
arenaflow run "$lm" --input x=2,5,16 --kernels real --cache "$tmp/pcache" --rounds 2 2>&1 |
    grep -q "^plan cache *hit (.*1 restored from disk" || fail "the fused plan was not restored from the plan cache"
arenaflow plan "$m" --input x=1,3,12,12 | grep -q "^fused nodes" && fail "plan fused without --kernels real"
arenaflow plan "$m" --input x=1,3,12,12 --kernels real | grep -q "^fused nodes" ||
    fail "plan --kernels real did not fuse by default"
arenaflow plan "$m" --input x=1,3,12,12 --fuse on --json | "$py" -c '
import json, sys
f = json.load(sys.stdin)["fusion"]
assert f["fused_nodes"] == 4 and f["bn_folded"] == 2 and f["unfused_bytes"] > 0, f
assert f["saved_bytes"] >= 0' || fail "plan --json fusion object"
arenaflow plan "$m" --input x=1,3,12,12 --fuse maybe >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "fuse" "$tmp/err" || fail "--fuse maybe: not a usage error naming fuse"
arenaflow run "$m" --input x=1,3,12,12 --fuse maybe >/dev/null 2>&1
[ $? = 2 ] || fail "run --fuse maybe: not a usage error"

echo "cli_fuse: $compared fused/unfused comparisons, $failures failures"
[ "$failures" = 0 ]
