#!/usr/bin/env bash
# Median latency of arenaflow's real kernels (bench_real) and of ONNX Runtime (ort_latency.js)
# on the same models and inputs, at 1 and 2 threads, measured in one run: for every model and
# thread count the two are run alternately REPS times (default 3) and the median of their
# medians is kept, so both see the same machine load; the p10 (the least disturbed rounds, the
# better figure on a busy machine) is kept the same way. Prints a Markdown table with the
# ratios arenaflow / ORT (below 1: arenaflow faster). ORT's figures include onnxruntime-node's
# own cost per call (an Identity model: about 11-20 us here).
#   bench/bench_latency.sh [BUILD_DIR]     (default build; models from bench/fetch_models.sh)
# Needs node and onnxruntime-node ($AF_ORT_DIR, default /tmp/ortnpm/node_modules).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
reps=${REPS:-3}
rounds=${ROUNDS:-300}
models=$("$here/fetch_models.sh")
# model, input dims (arenaflow --input spelling; ORT gets the same)
cases=(
    "embedding_model.onnx input_1=1,76,32,1"
    "melspectrogram.onnx input=1,1280"
    "alexa_v0.1.onnx onnx::Flatten_0=1,16,96"
    "hey_mycroft_v0.1.onnx onnx::Flatten_0=1,16,96"
    "hey_rhasspy_v0.1.onnx onnx::Flatten_0=1,16,96"
    "timer_v0.1.onnx onnx::Flatten_0=1,34,96"
    "weather_v0.1.onnx onnx::Flatten_0=1,22,96"
)
med() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
field() { sed -n "s/.*\"$1\": *\([-0-9.e+na]*\).*/\1/p"; }
echo "| model | threads | ORT median us | arenaflow median us | ratio | ORT p10 us | arenaflow p10 us | ratio p10 | intra-op team |"
echo "|---|---|---|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
    set -- $c
    m=$1 in=$2
    for th in 1 2; do
        o=() a=() op=() ap=() team=?
        for r in $(seq "$reps"); do
            jo=$(node "$here/ort_latency.js" "$models/$m" "$in" --threads "$th" --rounds "$rounds")
            o+=("$(echo "$jo" | field median_us)")
            op+=("$(echo "$jo" | field p10_us)")
            j=$("$build/bench_real" "$models/$m" --input "$in" --threads "$th" --rounds "$rounds" --json)
            a+=("$(echo "$j" | field median_us)")
            ap+=("$(echo "$j" | field p10_us)")
            team=$(echo "$j" | field intra_op_threads)
        done
        om=$(printf '%s\n' "${o[@]}" | med) am=$(printf '%s\n' "${a[@]}" | med)
        opm=$(printf '%s\n' "${op[@]}" | med) apm=$(printf '%s\n' "${ap[@]}" | med)
        printf '| %s | %d | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %s |\n' "$m" "$th" "$om" "$am" \
            "$(awk -v a="$am" -v o="$om" 'BEGIN {print a / o}')" "$opm" "$apm" \
            "$(awk -v a="$apm" -v o="$opm" 'BEGIN {print a / o}')" "$team"
    done
done
# What one ORT call costs with no work: an Identity model on the classifiers' input size.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$tmp/identity.onnx" <<'PY'
import sys
from onnx import helper, TensorProto, save
io = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 16, 96])
g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity", [io("x")], [io("y")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
save(m, sys.argv[1])
PY
ji=$(node "$here/ort_latency.js" "$tmp/identity.onnx" x=1,16,96 --threads 1 --rounds 2000)
echo
echo "ORT per-call cost with no work (Identity on 1x16x96): median $(echo "$ji" | field median_us) us, p10 $(echo "$ji" | field p10_us) us"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
