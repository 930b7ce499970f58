#!/usr/bin/env bash
# Produces allocation traces for bench_pool from real plans: each model-zoo graph is written
# with `arenaflow zoo NAME --out G.json`, planned with `arenaflow plan G.json --events T.csv`,
# and the event table (ALLOC rows carry bytes, FREE rows name the tensor) is the trace.
# Then runs bench_pool on all traces at once.
#
# usage: bench/pool_traces.sh [BUILD_DIR] [OUT_DIR] [MODEL...]
#   BUILD_DIR  holds the arenaflow CLI and bench_pool (default: build)
#   OUT_DIR    where graphs and traces go (default: BUILD_DIR/pool_traces)
#   MODEL      zoo names (default: every inference and training model `arenaflow zoo --list`
#              prints); set BENCH_POOL_ARGS for extra bench_pool options (e.g. "--reps 3")
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build}"
out="${2:-$build/pool_traces}"
shift $(($# > 2 ? 2 : $#)) || true
cli="$build/arenaflow"
bench="$build/bench_pool"
[ -x "$cli" ] || { echo "no CLI at $cli (build target arenaflow_cli)" >&2; exit 2; }
[ -x "$bench" ] || { echo "no bench_pool at $bench (build target bench_pool)" >&2; exit 2; }
mkdir -p "$out"
models=("$@")
if [ ${#models[@]} -eq 0 ]; then
    mapfile -t models < <("$cli" zoo --list | awk '{print $1}')
fi
args=()
for m in "${models[@]}"; do
    g="$out/$m.json"
    t="$out/$m.csv"
    if [ ! -s "$t" ]; then
        "$cli" zoo "$m" --out "$g" >/dev/null
        "$cli" plan "$g" --events "$t" >/dev/null
    fi
    args+=(--trace "$t")
done
# shellcheck disable=SC2086
exec "$bench" "${args[@]}" ${BENCH_POOL_ARGS:-}
