#!/usr/bin/env bash
# Median latency of arenaflow's real kernels (bench_real) and of ONNX Runtime (ort_latency.js)
# on the same models and inputs, at 1 and 2 threads, measured in one run: for every model and
# thread count the two are run alternately REPS times (default 3) and the median of their
# medians is kept, so both see the same machine load. Prints a Markdown table with the ratio
# arenaflow / ORT (below 1: arenaflow faster).
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
echo "| model | threads | ORT median us | arenaflow median us | arenaflow / ORT | arenaflow team |"
echo "|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
    set -- $c
    m=$1 in=$2
    for th in 1 2; do
        o=() a=() team=?
        for r in $(seq "$reps"); do
            o+=("$(node "$here/ort_latency.js" "$models/$m" "$in" --threads "$th" --rounds "$rounds" | field median_us)")
            j=$("$build/bench_real" "$models/$m" --input "$in" --threads "$th" --rounds "$rounds" --json)
            a+=("$(echo "$j" | field median_us)")
            team=$(echo "$j" | field intra_op_threads)
        done
        om=$(printf '%s\n' "${o[@]}" | med)
        am=$(printf '%s\n' "${a[@]}" | med)
        printf '| %s | %d | %.1f | %.1f | %.2f | %s |\n' "$m" "$th" "$om" "$am" \
            "$(awk -v a="$am" -v o="$om" 'BEGIN {print a / o}')" "$team"
    done
done
