#!/usr/bin/env bash
# examples/stream.c (af_stream): a stream through af_session_submit on a libuv loop runs every
# item, with 1 and several rounds in flight, and every output equals the first item's; bad
# usage exits 2.
set -u
BIN=${AF_BINARY_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build}
S=$BIN/af_stream
[ -x "$S" ] || { echo "SKIP: af_stream is not built (AF_BUILD_EXAMPLES)"; exit 0; }
SRC=${AF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
M=/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d/model.onnx
[ -f "$M" ] || M=$SRC/examples/mlp.json
for k in 1 4; do
    out=$("$S" "$M" --count 300 --slots $k --kernels reference) || { echo "FAIL: af_stream --slots $k: $out"; exit 1; }
    echo "$out" | grep -q "^300 items .* 0 failed, 0 outputs differ" || { echo "FAIL: $out"; exit 1; }
    echo "ok: $out"
done
"$S" >/dev/null 2>&1
[ $? = 2 ] || { echo "FAIL: af_stream without a model does not exit 2"; exit 1; }
"$S" /nonexistent.onnx >/dev/null 2>&1
[ $? = 1 ] || { echo "FAIL: af_stream on a missing model does not exit 1"; exit 1; }
echo "ok: usage 2, missing model 1"
echo PASS
