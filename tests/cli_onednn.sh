#!/usr/bin/env bash
# oneDNN kernels from the command line (registered only in builds with oneDNN): a wrong plan is
# still caught with real kernels — `arenaflow diagnose --kernels onednn` finds no pollution on
# the planner's plan, and with one tensor moved onto a live neighbour (--break) names the
# polluted tensor and the tensor that shared its bytes; `arenaflow plan --kernels onednn` counts
# the scratch in the arena; `run --kernels onednn` does no system allocation per round, nor does
# a ConvTranspose on oneDNN (every malloc of the process, counted by bench_real).
set -euo pipefail
g="$AF_SOURCE_DIR/tests/data/conv_branches.json"
out=$(arenaflow diagnose "$g" --kernels onednn)
echo "$out"
grep -q "no polluted tensor" <<<"$out"
set +e
out=$(arenaflow diagnose "$g" --kernels onednn --break c1_1=r0_2)
rc=$?
set -e
echo "$out"
[ "$rc" -eq 1 ]
grep -q "first polluted tensor 'r0_2'" <<<"$out"
grep -q "shared its bytes with 'c1_1'" <<<"$out"
grep -q "values compared" <<<"$out"
# scratch in the plan report
out=$(arenaflow plan "$g" --kernels onednn --json)
echo "$out" | grep -E '"scratch_(tensors|bytes)"'
echo "$out" | grep -Eq '"scratch_tensors": [1-9]'
# zero system allocations per round on oneDNN kernels
out=$(arenaflow run "$g" --kernels onednn --rounds 50 --json)
for want in '"system_allocs_per_round": 0.0*,' '"failed_rounds": 0,' '"corrupted_tensors": 0,'; do
    if ! grep -q "$want" <<<"$out"; then
        echo "$out"
        echo "cli_onednn: run --kernels onednn: expected $want" >&2
        exit 1
    fi
done
# ConvTranspose with a bias on oneDNN makes no malloc of any library per round either (oneDNN
# 2.6's deconvolution primitive made one per run): bench_real (a build with AF_BUILD_BENCH)
# counts every malloc of its process.
ct=/usr/share/libonnx-testdata/data/pytorch-converted/test_ConvTranspose2d/model.onnx
if [ -x "$AF_BINARY_DIR/bench_real" ] && [ -f "$ct" ]; then
    out=$("$AF_BINARY_DIR/bench_real" "$ct" --rounds 20 --warmup 2 --json)
    for want in '"backend_nodes": 1,' '"process_mallocs_per_round": 0.00,'; do
        if ! grep -q "$want" <<<"$out"; then
            echo "$out"
            echo "cli_onednn: bench_real on a ConvTranspose: expected $want" >&2
            exit 1
        fi
    done
fi
echo "cli_onednn: ok"
