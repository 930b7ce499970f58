#!/usr/bin/env bash
# `arenaflow zoo` and the scheduler flags end to end: --list names every model, a generated
# graph loads and plans with each scheduler, `best` is never above `input` on a random network,
# an impossible --budget exits 1 naming the step and live tensors, bad names/options exit 2.
set -u
T=$(mktemp -d /tmp/af-zoo-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}
command -v arenaflow >/dev/null || fail "arenaflow is not on PATH"

list=$(arenaflow zoo --list) || fail "zoo --list exited $?"
for m in resnet50 mobilenetv2 inception3 unet bert gpt2 randwire darts resnet50-train bert-train; do
    echo "$list" | grep -q "^$m " || fail "zoo --list does not name $m"
done

arenaflow zoo randwire --out "$T/rw.json" || fail "zoo randwire exited $?"
[ -s "$T/rw.json" ] || fail "zoo wrote no file"
arenaflow zoo bert --seq 32 --out - | grep -q '"shape": \[1, 32\]' || fail "--seq not applied"

arena_of() {
    arenaflow plan "$T/rw.json" --schedule "$1" | awk '/^arena bytes/ {print $3}'
}
for s in input seed xla-list lpmf dfs rpo bfs dp best; do
    a=$(arena_of "$s")
    [ -n "$a" ] || fail "plan --schedule $s printed no arena"
done
in=$(arena_of input)
best=$(arena_of best)
[ "$best" -le "$in" ] || fail "best ($best) above input order ($in)"

out=$(arenaflow plan "$T/rw.json" --budget 64K 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "impossible budget exited $rc, want 1"
echo "$out" | grep -q "budget" || fail "budget error does not say budget: $out"
echo "$out" | grep -q "step" || fail "budget error does not name the step: $out"

arenaflow zoo nope --out "$T/x.json" 2>"$T/err"
[ $? -eq 2 ] || fail "unknown model did not exit 2"
grep -q "resnet50" "$T/err" || fail "unknown model error does not list the models"
arenaflow zoo resnet50 --batch 0 --out "$T/x.json" 2>/dev/null
[ $? -eq 2 ] || fail "--batch 0 did not exit 2"
arenaflow zoo 2>/dev/null
[ $? -eq 2 ] || fail "no arguments did not exit 2"
[ ! -e "$T/x.json" ] || fail "a failed zoo run left a file"
echo "cli_zoo: ok"
