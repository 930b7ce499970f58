#!/usr/bin/env bash
# The thread model on 2 cores (docs/executor.md): median latency and CPU time per round of the
# oneDNN kernels under five configurations, on a chain (embedding_model: parallelism ~1) and on
# a graph of independent branches (bench/make_branches.py: 4 branches, parallelism ~3.6):
#   1w/t1   one worker, no team                 (one core: the reference point)
#   1w/t2   one worker, OpenMP team of 2        (intra-op)
#   2w/t1   two workers, no team                (inter-op)
#   2w/t2   two workers, teams of 2             (mixed; the core budget keeps 2 cores busy)
#   2w/auto two workers, team chosen per graph  (what arenaflow does by default)
# Each configuration runs REPS times (default 5), interleaved, and the median and the best of
# the medians are printed (the machine is shared: the best is the least disturbed).
#   bench/bench_threads.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
reps=${REPS:-5}
models=$("$here/fetch_models.sh")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$here/make_branches.py" "$tmp/branches.onnx" 4 3 32 28 28
graphs=("$models/embedding_model.onnx --input input_1=1,76,32,1" "$tmp/branches.onnx")
names=(embedding_model branches)
configs=("--threads 1 --intra 1" "--threads 1 --intra 2" "--threads 2 --intra 1"
         "--threads 2 --intra 2" "--threads 2")
labels=("1w/t1" "1w/t2" "2w/t1" "2w/t2" "2w/auto")
field() { sed -n "s/.*\"$1\": *\([-0-9.e+]*\).*/\1/p"; }
echo "| graph | config | team | median of medians us | best median us | CPU us / round |"
echo "|---|---|---|---|---|---|"
for gi in "${!graphs[@]}"; do
    declare -A med=() cpu=() team=()
    for r in $(seq "$reps"); do
        for ci in "${!configs[@]}"; do
            j=$("$build/bench_real" ${graphs[$gi]} ${configs[$ci]} --rounds ${ROUNDS:-200} --json)
            med[$ci]+="$(echo "$j" | field median_us) "
            cpu[$ci]+="$(echo "$j" | field cpu_us_per_round) "
            team[$ci]=$(echo "$j" | field intra_op_threads)
        done
    done
    for ci in "${!configs[@]}"; do
        m=$(tr ' ' '\n' <<<"${med[$ci]}" | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
        b=$(tr ' ' '\n' <<<"${med[$ci]}" | grep . | sort -g | head -1)
        c=$(tr ' ' '\n' <<<"${cpu[$ci]}" | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
        printf '| %s | %s | %s | %.0f | %.0f | %.0f |\n' "${names[$gi]}" "${labels[$ci]}" \
            "${team[$ci]}" "$m" "$b" "$c"
    done
    unset med cpu team
done
