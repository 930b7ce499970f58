#!/usr/bin/env bash
# oneDNN kernels from the command line (registered only in builds with oneDNN): a wrong plan is
# still caught with real kernels — `arenaflow diagnose --kernels onednn` finds no pollution on
# the planner's plan, and with one tensor moved onto a live neighbour (--break) names the
# polluted tensor and the tensor that shared its bytes; `arenaflow plan --kernels onednn` counts
# the scratch in the arena; `run --kernels onednn` does no system allocation per round.
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
echo "cli_onednn: ok"
