#!/usr/bin/env bash
# arenaflow (bench_real, real kernels) against ONNX Runtime (ort_latency.js, onnxruntime-node) on
# real models with their own weights and the same inputs, in one run. Per model:
#   1. deterministic inputs (bench/npy_tool.py make, seed per model) saved as .npy and fed to both;
#   2. outputs of both written as .npy and compared (max abs, max rel, match within rtol 1e-3 /
#      atol 1e-4 on every output);
#   3. median latency at 1 and 2 threads: the two runtimes alternate REPS times (default 3) and the
#      median of the runs' medians is kept, so both see the same machine load; CPU time per round
#      (user + system of the process during the timed rounds) beside it;
#   4. memory, from the first 1-thread run of each (separate processes, same model, input and
#      rounds): peak RSS (VmHWM), and activation memory: arenaflow's planned arena with scratch
#      (the plan report), ORT's RSS growth from session creation to the end of the rounds
#      (VmRSS after the rounds - VmRSS after InferenceSession.create: the arena ORT grows for
#      activations while it runs, with its other first-run allocations); the same RSS growth for
#      arenaflow beside it;
#   5. system allocations per round: bench_real counts every malloc of its process (oneDNN's and
#      libgomp's too) in the real run and in a verify-kernel run of the same plan (--plan-for).
# Prints a Markdown table (the BENCHMARKS.md section) and then the raw JSON lines. Exit status 1
# when some model does not run or its outputs differ.
#   bench/compare_ort.sh [BUILD_DIR]     (default build; models from bench/fetch_models.sh)
# Needs node and onnxruntime-node ($AF_ORT_DIR, default /tmp/ortnpm/node_modules), /usr/bin/python3
# with numpy. REPS, and ROUNDS_SCALE (multiplies each model's rounds), tune the run length;
# MODELS (a grep -E pattern on the model file names, e.g. MODELS='cls|silero_vad.onnx') runs
# only the models it matches.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
reps=${REPS:-3}
scale=${ROUNDS_SCALE:-1}
models=$("$here/fetch_models.sh")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# model  rounds  input specs (bench/npy_tool.py make)
cases=(
    "melspectrogram.onnx 300 input=normal*3000:1,1280"
    "embedding_model.onnx 300 input_1=normal:1,76,32,1"
    "alexa_v0.1.onnx 300 onnx::Flatten_0=normal:1,16,96"
    "hey_mycroft_v0.1.onnx 300 onnx::Flatten_0=normal:1,16,96"
    "hey_rhasspy_v0.1.onnx 300 onnx::Flatten_0=normal:1,16,96"
    "timer_v0.1.onnx 300 onnx::Flatten_0=normal:1,34,96"
    "weather_v0.1.onnx 300 onnx::Flatten_0=normal:1,22,96"
    "silero_vad.onnx 300 input=normal*0.1:1,512 sr=i64=16000: h=zeros:2,1,64 c=zeros:2,1,64"
    "silero_vad_v5.onnx 300 input=normal*0.1:1,256 state=zeros:2,1,128 sr=i64=8000:"
    "ch_ppocr_mobile_v2.0_cls_infer.onnx 100 x=uniform:1,3,48,192"
    "ch_PP-OCRv4_rec_infer.onnx 20 x=uniform:1,3,48,320"
    "ch_PP-OCRv4_det_infer.onnx 10 x=uniform:1,3,320,320"
    "face_detection_front_128x128_barracuda.onnx 100 input:0=uniform:1,128,128,3"
    "face_detection_back_256x256_barracuda.onnx 30 input:0=uniform:1,256,256,3"
    "silero_vad_16k_op15.onnx 300 input=normal*0.1:1,512 state=zeros:2,1,128 sr=i64=16000:"
    "silero_vad_op18_ifless.onnx 300 input=normal*0.1:1,512 state=zeros:2,1,128 sr=i64=16000:"
    "silero_vad_half.onnx 300 input=normal*0.1:1,512 state=zeros:2,1,128"
)
med() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
field() { sed -n "s/.*\"$1\": *\"\{0,1\}\([-0-9.e+a-zA-Z]*\).*/\1/p"; }
ratio() { awk -v a="$1" -v o="$2" 'BEGIN {printf "%.2f", a / o}'; }
f1() { awk -v v="$1" 'BEGIN {printf "%.1f", v}'; }
kb() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
raw=$work/raw.txt
: >"$raw"
rows=() bad=0 seed=0
for c in "${cases[@]}"; do
    set -- $c
    m=$1 rounds=$(($2 * scale)) && shift 2
    seed=$((seed + 1)) # before the filter: a model gets the same inputs in every selection
    [ -z "${MODELS:-}" ] || echo "$m" | grep -qE "$MODELS" || continue
    d=$work/${m%.onnx}
    mkdir -p "$d/af" "$d/ort"
    read -r -a ins < <(/usr/bin/python3 "$here/npy_tool.py" make "$d" "$seed" "$@")
    af_in=()
    for i in "${ins[@]}"; do af_in+=(--input "$i"); done
    warm=$((rounds / 10 + 1))
    declare -A med_o med_a cpu_o cpu_a
    first_a="" first_o=""
    for th in 1 2; do
        o=() a=() co=() ca=()
        for r in $(seq "$reps"); do
            out_o=() out_a=()
            if [ "$th" = 1 ] && [ "$r" = 1 ]; then out_o=(--output-dir "$d/ort"); out_a=(--output-dir "$d/af"); fi
            jo=$(node "$here/ort_latency.js" "$models/$m" "${ins[@]}" --threads "$th" --rounds "$rounds" \
                --warmup "$warm" "${out_o[@]}" 2>>"$raw") || { echo "$m: ORT failed" >>"$raw"; jo=""; }
            ja=$("$build/bench_real" "$models/$m" "${af_in[@]}" --threads "$th" --rounds "$rounds" \
                --warmup "$warm" "${out_a[@]}" --json 2>>"$raw") || { echo "$m: arenaflow failed" >>"$raw"; ja=""; }
            echo "ort $jo" >>"$raw"
            echo "arenaflow $ja" >>"$raw"
            [ -n "$jo" ] && [ -n "$ja" ] || continue
            [ -z "$first_o" ] && first_o=$jo && first_a=$ja
            o+=("$(echo "$jo" | field median_us)") a+=("$(echo "$ja" | field median_us)")
            co+=("$(echo "$jo" | field cpu_us_per_round)") ca+=("$(echo "$ja" | field cpu_us_per_round)")
        done
        if [ ${#o[@]} -eq 0 ]; then med_o[$th]=nan med_a[$th]=nan cpu_o[$th]=nan cpu_a[$th]=nan; continue; fi
        med_o[$th]=$(f1 "$(printf '%s\n' "${o[@]}" | med)") med_a[$th]=$(f1 "$(printf '%s\n' "${a[@]}" | med)")
        cpu_o[$th]=$(f1 "$(printf '%s\n' "${co[@]}" | med)") cpu_a[$th]=$(f1 "$(printf '%s\n' "${ca[@]}" | med)")
    done
    if [ -z "$first_a" ]; then
        rows+=("| $m | does not run (see the raw output) | | | | | | | | | |")
        bad=1
        continue
    fi
    cmp=$(/usr/bin/python3 "$here/npy_tool.py" compare "$d/af" "$d/ort" 1e-3 1e-4) || bad=1
    echo "compare $m $cmp" >>"$raw"
    jv=$("$build/bench_real" "$models/$m" "${af_in[@]}" --kernels verify --plan-for real \
        --rounds "$rounds" --warmup "$warm" --json 2>>"$raw") || jv=""
    echo "verify $jv" >>"$raw"
    match=$(echo "$cmp" | sed -n 's/.*"match": \([a-z]*\).*/\1/p')
    act_o=$(($(echo "$first_o" | field rss_end_kb) - $(echo "$first_o" | field rss_created_kb)))
    act_a=$(($(echo "$first_a" | field rss_end_kb) - $(echo "$first_a" | field rss_created_kb)))
    arena=$(echo "$first_a" | field arena_bytes) scr=$(echo "$first_a" | field scratch_bytes)
    rows+=("$(printf '| %s | %s (%.1e / %.1e) | %s / %s us (%s) | %s / %s us (%s) | %s / %s us | %s / %s MiB | %s KiB (%s scratch) | %s KiB | %s KiB | %s / %s |' \
        "$m" "$([ "$match" = true ] && echo yes || echo NO)" \
        "$(echo "$cmp" | field max_abs)" "$(echo "$cmp" | field max_rel)" \
        "${med_a[1]}" "${med_o[1]}" "$(ratio "${med_a[1]}" "${med_o[1]}")" \
        "${med_a[2]}" "${med_o[2]}" "$(ratio "${med_a[2]}" "${med_o[2]}")" \
        "${cpu_a[1]}" "${cpu_o[1]}" \
        "$(kb "$(echo "$first_a" | field peak_rss_kb)")" "$(kb "$(echo "$first_o" | field peak_rss_kb)")" \
        "$((arena / 1024))" "$((scr / 1024))" "$act_a" "$act_o" \
        "$(echo "$first_a" | field process_mallocs_per_round)" "$(echo "$jv" | field process_mallocs_per_round)")")
    unset med_o med_a cpu_o cpu_a
done
echo "| model | matches ORT (max abs / max rel) | median 1 thread: arenaflow / ORT (ratio) | median 2 threads: arenaflow / ORT (ratio) | CPU per round, 1 thread: arenaflow / ORT | peak RSS: arenaflow / ORT | arenaflow arena | arenaflow RSS growth in the runs | ORT RSS growth in the runs | mallocs per round: real / verify |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "node alone (before onnxruntime is loaded): $(grep -m1 '^ort ' "$raw" | field rss_start_kb) kB RSS"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs); $reps runs per figure"
echo
echo '```'
cat "$raw"
echo '```'
exit $bad
