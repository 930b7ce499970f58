#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/fuzz_<target>.c) with clang
# -fsanitize=fuzzer,address,undefined and runs each for a given time.
#
# usage: tests/fuzz/run.sh [SECONDS] [TARGET...]      (default: 60 s, every target)
#   TARGET is the part after fuzz_ (json, onnx, csv, config, dconfig, daemon).
# environment:
#   AF_FUZZ_BUILD     build directory (default: <repo>/build-fuzz)
#   AF_FUZZ_PARALLEL  targets run at once (default 1; the machine is shared)
#   AF_FUZZ_MERGE=1   afterwards, merge what each run found into tests/fuzz/corpus/<target>
#                     (libFuzzer -merge=1 keeps only inputs that add coverage)
#   AF_FUZZ_ARGS      extra libFuzzer flags
#
# Each run keeps its working corpus in $AF_FUZZ_BUILD/work/<target> (seeded from
# tests/fuzz/corpus/<target>), its log in $AF_FUZZ_BUILD/logs/<target>.log, crash inputs in
# $AF_FUZZ_BUILD/artifacts/<target>/. A summary line per target gives execs/s, coverage and
# corpus size. Exit status: 0 when no target crashed, 1 otherwise, 2 on a build failure.
# tests/fuzz/<target>.dict, when present, is passed as the libFuzzer dictionary.
# A crash input belongs in tests/fuzz/corpus/<target>/ once fixed: tests/test_fuzz_corpus.c
# then replays it in every test run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for f in "$here"/fuzz_*.c; do
        n=$(basename "$f" .c)
        targets+=("${n#fuzz_}")
    done
fi
build=${AF_FUZZ_BUILD:-$src/build-fuzz}
par=${AF_FUZZ_PARALLEL:-1}

CC=clang cmake -S "$src" -B "$build" -DAF_FUZZ=ON -DAF_ASAN=ON -DAF_BUILD_TESTS=OFF \
    -DAF_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PROJECT_INCLUDE="$src/tests/fuzz/fuzz.cmake" >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; exit 2; }
for t in "${targets[@]}"; do
    cmake --build "$build" -j2 --target "fuzz_$t" >"$build/build_$t.log" 2>&1 ||
        { tail -30 "$build/build_$t.log"; echo "fuzz_$t: build failed"; exit 2; }
done

mkdir -p "$build/logs"
run_one() {
    local t=$1 seed="$here/corpus/$1" work="$build/work/$1" art="$build/artifacts/$1/"
    mkdir -p "$seed" "$work" "$art"
    local dict=()
    [ -f "$here/$t.dict" ] && dict=(-dict="$here/$t.dict")
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
        timeout -k 10 $((secs + 120)) "$build/fuzz_$t" -max_total_time="$secs" -timeout=20 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art" "${dict[@]}" \
        ${AF_FUZZ_ARGS:-} "$work" "$seed" >"$build/logs/$t.log" 2>&1
    echo $? >"$build/logs/$t.rc"
}
running=0
for t in "${targets[@]}"; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$par" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

status=0
for t in "${targets[@]}"; do
    log="$build/logs/$t.log"
    rc=$(cat "$build/logs/$t.rc" 2>/dev/null || echo "?")
    execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log")
    eps=$(awk '/stat::average_exec_per_sec:/ {print $2}' "$log")
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(echo "$last" | grep -o 'cov: [0-9]*' | awk '{print $2}')
    ft=$(echo "$last" | grep -o 'ft: [0-9]*' | awk '{print $2}')
    corp=$(echo "$last" | grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' | awk '{print $2}')
    crashes=$(find "$build/artifacts/$t" -type f | wc -l)
    printf 'fuzz_%-8s %5ss  rc=%s  execs=%s  execs/s=%s  cov=%s  ft=%s  corpus=%s  crashes=%s\n' \
        "$t" "$secs" "$rc" "${execs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$crashes"
    if [ "$rc" != 0 ] || [ "$crashes" -gt 0 ]; then
        status=1
        grep -m3 -E 'ERROR|SUMMARY|deadly signal' "$log" | sed 's/^/    /'
    fi
    if [ "${AF_FUZZ_MERGE:-0}" = 1 ]; then
        ASAN_OPTIONS=detect_leaks=0 "$build/fuzz_$t" -merge=1 "$here/corpus/$t" "$build/work/$t" \
            >"$build/logs/$t.merge.log" 2>&1 || echo "fuzz_$t: merge failed"
    fi
done
exit $status
