#!/usr/bin/env bash
# `arenaflow plan|run` under a memory budget: a budget below the best order's peak is met by
# recomputation (the report names recomputed nodes, extra compute and modelled time, --json has
# a "budget" object), --offload adds swap nodes and lowers the modelled time, the event table has
# RECOMPUTE / SWAP_OUT / SWAP_IN rows, the SVG marks recomputed (class rc) and swapped-in (class
# sw) tensors and still parses, an impossible budget fails (exit 1) naming the smallest budget
# that can be met — and that budget plans — and budgeted plans run with verify kernels (0
# corrupted tensors), also through the plan cache twice.
#
# Run by ctest with the built `arenaflow` on PATH and AF_SOURCE_DIR set; runnable by hand too:
#   PATH=build:$PATH bash tests/cli_budget.sh
set -u
command -v arenaflow >/dev/null 2>&1 || { echo "cli_budget: 'arenaflow' is not on PATH" >&2; exit 1; }
py=/usr/bin/python3
[ -x $py ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

arenaflow zoo resnet50-train --batch 2 --out "$tmp/r.json" >/dev/null || fail "zoo resnet50-train"
peak=$(arenaflow plan "$tmp/r.json" --json | $py -c 'import json,sys; print(json.load(sys.stdin)["arena_bytes"])')
budget=$((peak * 6 / 10))

# recompute
out=$(arenaflow plan "$tmp/r.json" --budget "$budget" 2>&1) || fail "plan --budget $budget: $out"
for w in "recomputed nodes" "extra compute" "modelled time" "without budget"; do
    grep -q "$w" <<<"$out" || fail "report lacks '$w'"
done
arena=$(arenaflow plan "$tmp/r.json" --budget "$budget" --json |
    $py -c 'import json,sys; r=json.load(sys.stdin); print(r["arena_bytes"], r["budget"]["recomputed_nodes"])')
set -- $arena
[ "$1" -le "$budget" ] || fail "arena $1 over the budget $budget"
[ "$2" -gt 0 ] || fail "no recomputed nodes under a 0.6 x peak budget"

# offload: swaps, and a modelled time no worse than recompute alone
t_rc=$(arenaflow plan "$tmp/r.json" --budget "$budget" --json | $py -c 'import json,sys; print(json.load(sys.stdin)["budget"]["modelled_s"])')
off=$(arenaflow plan "$tmp/r.json" --budget "$budget" --offload --json) || fail "plan --offload"
read -r t_off swaps <<<"$($py -c 'import json,sys; b=json.loads(sys.argv[1])["budget"]; print(b["modelled_s"], b["swap_nodes"])' "$off")"
[ "$swaps" -gt 0 ] || fail "--offload added no swap nodes"
$py -c "import sys; sys.exit(0 if $t_off <= $t_rc * 1.000001 else 1)" ||
    fail "offload modelled time $t_off above recompute alone $t_rc"

# event table and picture
arenaflow plan "$tmp/r.json" --budget "$budget" --offload --events "$tmp/ev.csv" \
    --svg "$tmp/m.svg" >/dev/null || fail "plan --events --svg"
for e in RECOMPUTE SWAP_OUT SWAP_IN; do
    grep -q ",$e," "$tmp/ev.csv" || [ $e = RECOMPUTE ] || fail "event table has no $e row"
done
arenaflow plan "$tmp/r.json" --budget "$budget" --events "$tmp/ev2.csv" --svg "$tmp/m2.svg" >/dev/null
grep -q ",RECOMPUTE," "$tmp/ev2.csv" || fail "event table has no RECOMPUTE row"
grep -q 'class="t rc"' "$tmp/m2.svg" || fail "SVG marks no recomputed tensor"
grep -q 'class="t sw"' "$tmp/m.svg" || fail "SVG marks no swapped-in tensor"
for f in "$tmp/m.svg" "$tmp/m2.svg"; do
    $py -c 'import sys, xml.etree.ElementTree as ET; ET.parse(sys.argv[1])' "$f" || fail "$f is not XML"
done

# an impossible budget: exit 1, the smallest budget named, and that one plans
arenaflow plan "$tmp/r.json" --budget $((peak / 20)) >"$tmp/o" 2>"$tmp/e"
[ $? -eq 1 ] || fail "an impossible budget did not exit 1"
least=$(grep -o 'meets is [0-9]*' "$tmp/e" | grep -o '[0-9]*$')
[ -n "$least" ] || fail "refusal names no smallest budget: $(cat "$tmp/e")"
[ -n "$least" ] && { arenaflow plan "$tmp/r.json" --budget "$least" >/dev/null 2>&1 ||
    fail "the named smallest budget $least does not plan"; }

# execution with verify kernels, through the plan cache twice
printf '[planner]\nbudget = %s\noffload = true\n' "$budget" >"$tmp/b.ini"
for k in 1 2; do
    arenaflow run "$tmp/r.json" --config "$tmp/b.ini" --verify --rounds 2 --threads 2 \
        --cache "$tmp/cache" >"$tmp/run$k" 2>&1 || fail "run --verify under the budget ($k): $(cat "$tmp/run$k")"
    grep -q "0 corrupted tensors" "$tmp/run$k" || fail "run $k did not report 0 corrupted tensors"
done

# the same budget given to run itself (no config file): the plan is the budgeted one
arenaflow run "$tmp/r.json" --budget "$budget" --offload --verify --rounds 2 --threads 2 \
    >"$tmp/run3" 2>&1 || fail "run --budget --offload --verify: $(cat "$tmp/run3")"
grep -q "0 corrupted tensors" "$tmp/run3" || fail "run --budget did not report 0 corrupted tensors"
grep -q "schedule evict" "$tmp/run3" || fail "run --budget did not plan under the budget: $(head -3 "$tmp/run3")"
arenaflow run "$tmp/r.json" --budget $((peak / 20)) --rounds 1 >/dev/null 2>"$tmp/e3"
[ $? -eq 1 ] && grep -q "meets is" "$tmp/e3" || fail "run with an impossible budget: $(cat "$tmp/e3")"

# usage errors
arenaflow run "$tmp/r.json" --budget lots >/dev/null 2>&1
[ $? -eq 2 ] || fail "run --budget with a bad size is not a usage error"
arenaflow plan "$tmp/r.json" --budget >/dev/null 2>&1
[ $? -eq 2 ] || fail "--budget without a value is not a usage error"
arenaflow plan "$tmp/r.json" --budget 1G --bandwidth fast >/dev/null 2>&1
[ $? -eq 2 ] || fail "a bad --bandwidth is not a usage error"

[ $failures -eq 0 ] && echo "cli_budget: all checks passed"
exit $((failures > 0))
