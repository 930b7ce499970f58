#!/usr/bin/env bash
# Operator fusion, measured (BENCHMARKS.md "Fusion"): arena bytes before / after `fuse = on`
#   1. on the model zoo's inference graphs (arenaflow zoo), planned as they are and lowered for
#      the real kernels (--kernels real: oneDNN scratch planned too), in-place hints honoured;
#   2. on the real ONNX models of bench/fetch_models.sh, lowered for the real kernels;
# and 3. latency of the real models with and without fusion: bench_real --threads 1, CPU time
# per round and median wall time, runs alternating fused / unfused, median of REPS runs.
#   bench/fuse_bench.sh [BUILD_DIR] [REPS] [ROUNDS]     (default build 3 200)
# FUSE_BENCH_ZOO=0 skips part 1.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
reps=${2:-3}
rounds=${3:-200}
af=$build/arenaflow
models=$("$here/fetch_models.sh")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=/usr/bin/python3
# "<key>" of a JSON object on stdin, nested one level ("fusion.unfused_bytes") or not
js() { $py -c "import json,sys; o=json.load(sys.stdin); k='$1'.split('.'); v=o[k[0]] if len(k)==1 else o.get(k[0],{}).get(k[1],0); print(v)"; }
kib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1024}'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b ? 100 * (b - a) / b : 0}'; }
med() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

[ "${FUSE_BENCH_ZOO:-1}" = 1 ] || skip_zoo=1
[ -n "${skip_zoo:-}" ] || {
echo "| zoo graph | nodes | fused nodes (BN into Conv) | arena unfused | arena fused | saved | lowered for real: unfused | fused | saved |"
echo "|---|---|---|---|---|---|---|---|---|"
for z in resnet50 mobilenetv2 inception3 unet bert gpt2 randwire darts; do
    "$af" zoo "$z" --out "$work/$z.json" >/dev/null
    j=$("$af" plan "$work/$z.json" --fuse on --json)
    jr=$("$af" plan "$work/$z.json" --fuse on --kernels real --json)
    a=$(echo "$j" | js arena_bytes) u=$(echo "$j" | js fusion.unfused_bytes)
    ar=$(echo "$jr" | js arena_bytes) ur=$(echo "$jr" | js fusion.unfused_bytes)
    echo "| $z | $(( $(echo "$j" | js nodes) + $(echo "$j" | js fusion.fused_nodes) )) | $(echo "$j" | js fusion.fused_nodes) ($(echo "$j" | js fusion.bn_folded)) | $(kib "$u") KiB | $(kib "$a") KiB | $(pct "$a" "$u")% | $(kib "$ur") KiB | $(kib "$ar") KiB | $(pct "$ar" "$ur")% |"
done
echo
}
cases=(
    "melspectrogram.onnx input=normal*3000:1,1280"
    "embedding_model.onnx input_1=normal:1,76,32,1"
    "alexa_v0.1.onnx onnx::Flatten_0=normal:1,16,96"
    "hey_mycroft_v0.1.onnx onnx::Flatten_0=normal:1,16,96"
    "hey_rhasspy_v0.1.onnx onnx::Flatten_0=normal:1,16,96"
    "timer_v0.1.onnx onnx::Flatten_0=normal:1,34,96"
    "weather_v0.1.onnx onnx::Flatten_0=normal:1,22,96"
    "silero_vad.onnx input=normal*0.1:1,512 sr=i64=16000: h=zeros:2,1,64 c=zeros:2,1,64"
    "silero_vad_v5.onnx input=normal*0.1:1,256 state=zeros:2,1,128 sr=i64=8000:"
    "ch_ppocr_mobile_v2.0_cls_infer.onnx x=uniform:1,3,48,192"
    "ch_PP-OCRv4_rec_infer.onnx x=uniform:1,3,48,320"
    "ch_PP-OCRv4_det_infer.onnx x=uniform:1,3,320,320"
)
# rounds of a model whose round takes far longer than the others' (0.1 s CPU): ROUNDS / 10
slow="ch_PP-OCRv4_det_infer.onnx"
echo "| model | nodes | fused nodes (BN into Conv) | arena unfused | arena fused | saved | CPU/round unfused | fused | ratio | median unfused | fused |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
seed=0
for c in "${cases[@]}"; do
    set -- $c
    m=$1 && shift
    seed=$((seed + 1))
    [ -f "$models/$m" ] || { echo "| $m | not fetched | | | | | | | | | |"; continue; }
    d=$work/${m%.onnx}
    mkdir -p "$d"
    read -r -a ins < <($py "$here/npy_tool.py" make "$d" "$seed" "$@")
    a=() dims=()
    for i in "${ins[@]}"; do a+=(--input "$i"); done
    for sp in "$@"; do dims+=(--input "${sp%%=*}=${sp##*:}"); done # NAME=DIST:DIMS -> NAME=DIMS
    j=$("$af" plan "$models/$m" "${dims[@]}" --kernels real --fuse on --json)
    ar=$(echo "$j" | js arena_bytes) ur=$(echo "$j" | js fusion.unfused_bytes)
    co=() cf=() mo=() mf=()
    n=$rounds
    [ "$m" = "$slow" ] && n=$((rounds / 10))
    for r in $(seq "$reps"); do
        for f in off on; do
            jb=$("$build/bench_real" "$models/$m" "${a[@]}" --threads 1 --rounds "$n" \
                --warmup $((n / 10 + 1)) --fuse $f --json)
            if [ $f = on ]; then
                cf+=("$(echo "$jb" | js cpu_us_per_round)") mf+=("$(echo "$jb" | js median_us)")
            else
                co+=("$(echo "$jb" | js cpu_us_per_round)") mo+=("$(echo "$jb" | js median_us)")
            fi
        done
    done
    c0=$(printf '%s\n' "${co[@]}" | med) c1=$(printf '%s\n' "${cf[@]}" | med)
    m0=$(printf '%s\n' "${mo[@]}" | med) m1=$(printf '%s\n' "${mf[@]}" | med)
    echo "| $m | $(( $(echo "$j" | js nodes) + $(echo "$j" | js fusion.fused_nodes) )) | $(echo "$j" | js fusion.fused_nodes) ($(echo "$j" | js fusion.bn_folded)) | $(kib "$ur") KiB | $(kib "$ar") KiB | $(pct "$ar" "$ur")% | $c0 us | $c1 us | $(awk -v a="$c1" -v b="$c0" 'BEGIN {printf "%.2f", a / b}') | $m0 us | $m1 us |"
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs); $reps runs per figure, $rounds rounds each"
