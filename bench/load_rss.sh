#!/usr/bin/env bash
# Peak RSS of loading ONNX models with their weights: zero-copy (the default: the model file is
# mapped, aligned payloads pointed to in place, misaligned ones copied and their pages
# released) against --copy-data (every byte copied into memory the graph owns), and — when
# REF=path/to/an/older/arenaflow is given — against that build (which read the file and let
# protobuf-c copy every payload, then dropped the weights).
#
# Models: a synthetic one made with /usr/bin/python3 + onnx (BIG_MB of f32 weights, default
# 384, saved inline and with external data), and the real models bench/fetch_models.sh fetched.
# Each load is `arenaflow convert MODEL --shapes /dev/null` (import only) or `--data-sums
# /dev/null` (import, then read every weight byte once, as a first inference would), in its
# own process under /usr/bin/time; the figure is the maximum resident set size.
#
# usage: bench/load_rss.sh [ARENAFLOW]   (default build/arenaflow; env BIG_MB, REF)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/arenaflow}
ref=${REF:-}
mb=${BIG_MB:-384}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x /usr/bin/time ] || { echo "load_rss.sh: /usr/bin/time is needed" >&2; exit 1; }
/usr/bin/python3 - "$tmp" "$mb" <<'PYEOF'
import os, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as TP
d, mb = sys.argv[1], int(sys.argv[2])
D = 2048
n = max(1, mb * 1024 * 1024 // (D * D * 4))
rng = np.random.default_rng(1)
inits = [numpy_helper.from_array(rng.standard_normal((D, D), dtype=np.float32), "w%d" % i)
         for i in range(n)]
nodes = [helper.make_node("MatMul", ["x" if i == 0 else "m%d" % (i - 1), "w%d" % i],
                          ["m%d" % i if i < n - 1 else "y"], name="mm%d" % i) for i in range(n)]
g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TP.FLOAT, [1, D])],
                      [helper.make_tensor_value_info("y", TP.FLOAT, [1, D])], initializer=inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.save_model(m, os.path.join(d, "big.onnx"))
os.mkdir(os.path.join(d, "ext"))
onnx.save_model(m, os.path.join(d, "ext", "big.onnx"), save_as_external_data=True,
                all_tensors_to_one_file=True, location="big.bin")
PYEOF

rss() { # rss BINARY ARGS... -> max RSS in MiB, or "-" when the command fails
    local kb
    if kb=$(/usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -1) && [ -n "$kb" ]; then
        awk -v k="$kb" 'BEGIN { printf "%.1f", k / 1024 }'
    else
        echo "-"
    fi
}

models=("$tmp/big.onnx" "$tmp/ext/big.onnx")
for m in "$here"/.cache/models/*.onnx; do
    [ -f "$m" ] && models+=("$m")
done
printf "%-26s %9s | %10s %10s | %10s %10s | %10s\n" "model (peak RSS, MiB)" "file MiB" \
    "zero-copy" "copy" "0copy+read" "copy+read" "${ref:+reference}"
for m in "${models[@]}"; do
    size=$(($(stat -c %s "$m") + $( [ -f "$(dirname "$m")/big.bin" ] && stat -c %s "$(dirname "$m")/big.bin" || echo 0)))
    opts=(--dynamic)
    label=$(basename "$m")
    case $m in "$tmp"/ext/*) label="synthetic, external data" ;; "$tmp"/*) label="synthetic, inline" ;; esac
    z=$(rss "$bin" convert "$m" "${opts[@]}" --shapes /dev/null)
    c=$(rss "$bin" convert "$m" "${opts[@]}" --copy-data --shapes /dev/null)
    zr=$(rss "$bin" convert "$m" "${opts[@]}" --data-sums /dev/null)
    cr=$(rss "$bin" convert "$m" "${opts[@]}" --copy-data --data-sums /dev/null)
    r=""
    [ -n "$ref" ] && r=$(rss "$ref" convert "$m" "${opts[@]}" --shapes /dev/null)
    printf "%-26s %9.1f | %10s %10s | %10s %10s | %10s\n" "${label:0:26}" \
        "$(awk -v b="$size" 'BEGIN { print b / 1048576 }')" "$z" "$c" "$zr" "$cr" "$r"
done
