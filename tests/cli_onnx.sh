#!/usr/bin/env bash
# The ONNX importer through the CLI:
#   1. tests/onnx_shapes.py: over every model of Debian's libonnx-testdata, our inferred shapes
#      equal ONNX's own (infer_shapes(data_prop=True)) wherever ONNX knows them: mismatches = 0,
#      no crash (skipped when python3-onnx or the test data is missing);
#   2. `arenaflow convert` writes JSON and `arenaflow plan` plans a real model;
#   3. bad input gives a clear error and exit status 1, never a crash: a truncated file, a
#      Loop model (the message names the op), an input with symbolic dims and no --input (the
#      message names the input), which --input then fixes;
#   4. the benchmark models, when bench/fetch_models.sh has fetched them, all plan with every
#      tensor statically sized, and the small ones give the same outputs on the real (oneDNN)
#      kernels as on the reference kernels, on inputs from bench/npy_tool.py (rtol 1e-3 / atol
#      1e-4: a layout or fallback bug shows here; silero VAD once differed by 0.98).
# Run by ctest with the built `arenaflow` on PATH; by hand: PATH=build:$PATH bash tests/cli_onnx.sh
set -u
src=${AF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
data=/usr/share/libonnx-testdata/data
py=/usr/bin/python3
command -v arenaflow >/dev/null 2>&1 || { echo "cli_onnx: 'arenaflow' is not on PATH" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# expect_error LABEL PATTERN CMD... : exit status 1 (not 0, not a signal) and PATTERN in stderr
expect_error() {
    local label=$1 pattern=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local st=$?
    if [ "$st" -ne 1 ]; then
        fail "$label: exit status $st, want 1 ($(head -c 300 "$tmp/err"))"
    elif ! grep -q -- "$pattern" "$tmp/err"; then
        fail "$label: stderr lacks '$pattern': $(head -c 300 "$tmp/err")"
    else
        echo "ok: $label -> $(head -1 "$tmp/err")"
    fi
}

if arenaflow convert "$tmp/none.onnx" 2>&1 | grep -q "not built"; then
    echo "SKIP: ONNX importer not built into arenaflow"
    exit 0
fi

# 1. shapes against ONNX's own inference
if [ -d "$data" ] && "$py" -c "import onnx" 2>/dev/null; then
    "$py" "$src/tests/onnx_shapes.py" "$(command -v arenaflow)" "$data" || fail "onnx_shapes.py"
else
    echo "SKIP: libonnx-testdata or python3-onnx missing: shape comparison not run"
fi

# 2. convert and plan a real model
model=$data/pytorch-converted/test_Conv2d/model.onnx
if [ -f "$model" ]; then
    if arenaflow convert "$model" --out "$tmp/g.json" && grep -q '"tensors"' "$tmp/g.json"; then
        echo "ok: convert wrote $(wc -c <"$tmp/g.json") bytes of JSON"
    else
        fail "convert $model"
    fi
    arenaflow plan "$model" >"$tmp/plan.txt" 2>&1 || fail "plan $model: $(cat "$tmp/plan.txt")"
    # the JSON written by convert plans like the model itself
    arenaflow plan "$tmp/g.json" >"$tmp/plan2.txt" 2>&1 || fail "plan converted JSON"

    # 3. clean errors
    head -c 200 "$model" >"$tmp/trunc.onnx"
    expect_error "truncated model" "not a valid ONNX model" arenaflow convert "$tmp/trunc.onnx"
    expect_error "unknown --input" "nosuch" arenaflow convert "$model" --input nosuch=1
fi
expect_error "missing file" "No such file" arenaflow convert "$tmp/none.onnx"
loop=$data/node/test_loop11/model.onnx
[ -f "$loop" ] && expect_error "Loop model" "op Loop" arenaflow convert "$loop" --dynamic

if "$py" -c "import onnx" 2>/dev/null; then
    "$py" - "$tmp/sym.onnx" <<'PY'
import sys
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                       helper.make_node("Flatten", ["r"], ["y"], name="flat")], "sym", [x], [y])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
open(sys.argv[1], "wb").write(m.SerializeToString())
PY
    expect_error "symbolic dims without --input" "input 'x' has unknown dims" arenaflow plan "$tmp/sym.onnx"
    if arenaflow convert "$tmp/sym.onnx" --input x=2,3,8,8 --shapes - >"$tmp/sym.txt" &&
        grep -q "^y	output	f32	2	2,192	1536$" "$tmp/sym.txt"; then
        echo "ok: --input x=2,3,8,8 makes y [2,192]"
    else
        fail "--input did not fix the symbolic dim: $(cat "$tmp/sym.txt")"
    fi
    arenaflow plan "$tmp/sym.onnx" --input batch=4 >/dev/null || fail "plan with --input batch=4"
    # every dim given but their product past int64: a size error, not a request for the dims
    expect_error "dims past int64" "more than 2^63 elements" \
        arenaflow plan "$tmp/sym.onnx" --input x=4611686018427387904,3,8,8
fi

# 4. the benchmark models: openwakeword, silero VAD, PaddleOCR, BlazeFace, M-LSD (fetched by bench/fetch_models.sh;
# not fetched here)
oww=$src/bench/.cache/models
if ls "$oww"/*.onnx >/dev/null 2>&1; then
    for f in "$oww"/*.onnx; do
        args=()
        case $(basename "$f") in
        melspectrogram.onnx) args=(--input batch_size=1 --input samples=1280) ;;
        embedding_model.onnx) args=(--input input_1=1,76,32,1) ;;
        silero_vad.onnx | silero_vad_legacy.onnx) args=(--input batch=1 --input sequence=512) ;;
        silero_vad_v[56].onnx) args=(--input input=1,256 --input state=2,1,128 --input sr=) ;;
        silero_vad_16k_op15.onnx | silero_vad_op18_ifless.onnx)
            args=(--input input=1,512 --input state=2,1,128 --input sr=) ;;
        silero_vad_half.onnx) args=(--input input=1,512 --input state=2,1,128) ;;
        ch_PP-OCRv4_det_infer.onnx) args=(--input x=1,3,320,320) ;;
        ch_PP-OCRv4_rec_infer.onnx) args=(--input x=1,3,48,320) ;;
        ch_ppocr_mobile_v2.0_cls_infer.onnx) args=(--input x=1,3,48,192) ;;
        esac
        if arenaflow plan "$f" "${args[@]}" >"$tmp/p.txt" 2>&1; then
            echo "ok: planned $(basename "$f")"
        else
            fail "plan $(basename "$f"): $(cat "$tmp/p.txt")"
        fi
        dyn=$(arenaflow convert "$f" "${args[@]}" --shapes - | awk -F'\t' '$6 < 0' | wc -l)
        [ "$dyn" -eq 0 ] || fail "$(basename "$f"): $dyn tensors not statically sized"
        spec=()
        case $(basename "$f") in
        melspectrogram.onnx) spec=("input=normal*3000:1,1280") ;;
        embedding_model.onnx) spec=("input_1=normal:1,76,32,1") ;;
        hey_rhasspy_v0.1.onnx) spec=("onnx::Flatten_0=normal:1,16,96") ;;
        silero_vad.onnx) spec=("input=normal*0.1:1,512" "sr=i64=16000:" "h=zeros:2,1,64" "c=zeros:2,1,64") ;;
        silero_vad_v5.onnx) spec=("input=normal*0.1:1,256" "state=zeros:2,1,128" "sr=i64=8000:") ;;
        ch_ppocr_mobile_v2.0_cls_infer.onnx) spec=("x=uniform:1,3,48,192") ;;
        face_detection_front_128x128_barracuda.onnx) spec=("input:0=uniform:1,128,128,3") ;;
        silero_vad_op18_ifless.onnx) spec=("input=normal*0.1:1,512" "state=zeros:2,1,128" "sr=i64=16000:") ;;
        silero_vad_half.onnx) spec=("input=normal*0.1:1,512" "state=zeros:2,1,128") ;;
        esac
        [ ${#spec[@]} -gt 0 ] && $py -c "import numpy" 2>/dev/null || continue
        d=$tmp/$(basename "$f" .onnx)
        mkdir -p "$d/real" "$d/ref"
        ins=()
        for i in $($py "$src/bench/npy_tool.py" make "$d" 7 "${spec[@]}"); do ins+=(--input "$i"); done
        if arenaflow run "$f" "${ins[@]}" --kernels real --output-dir "$d/real" >/dev/null 2>"$tmp/e1" &&
            arenaflow run "$f" "${ins[@]}" --kernels reference --output-dir "$d/ref" >/dev/null 2>"$tmp/e2"; then
            if $py "$src/bench/npy_tool.py" compare "$d/real" "$d/ref" 1e-3 1e-4 >"$tmp/cmp"; then
                echo "ok: $(basename "$f") real = reference ($(cat "$tmp/cmp"))"
            else
                fail "$(basename "$f"): real and reference kernels differ: $(cat "$tmp/cmp")"
            fi
        else
            fail "$(basename "$f"): run failed: $(cat "$tmp/e1" "$tmp/e2")"
        fi
    done
else
    echo "SKIP: openwakeword models not fetched (bench/fetch_models.sh)"
fi

if [ "$failures" -ne 0 ]; then
    echo "cli_onnx: $failures failure(s)" >&2
    exit 1
fi
echo "cli_onnx: all passed"
