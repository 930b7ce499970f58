#!/bin/bash
# CLI: `arenaflow run` executes a graph with verify kernels and reports zero corrupted tensors
# and zero system allocator calls per round after warm-up (JSON fields checked); a config file's
# [executor] section is read; bad options are usage errors. `arenaflow diagnose` finds nothing on
# a correct plan and names the polluted tensor and the one that shared its bytes when a tensor
# is moved onto a live neighbour (--break).
set -euo pipefail
SRC=${AF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "cli_run: $*" >&2; exit 1; }
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

# 1. verify kernels, JSON report
arenaflow run "$SRC/examples/diamond.json" --verify --rounds 40 --threads 2 --json >"$tmp/run.json" ||
    fail "run --verify failed"
for k in rounds threads corrupted_tensors rounds_per_s arena_bytes naive_bytes system_allocs_per_round; do
    field "$tmp/run.json" "$k" >/dev/null || fail "missing JSON field $k"
done
[ "$(field "$tmp/run.json" rounds)" = 40 ] || fail "rounds"
[ "$(field "$tmp/run.json" threads)" = 2 ] || fail "threads"
[ "$(field "$tmp/run.json" corrupted_tensors)" = 0 ] || fail "corrupted tensors on a correct plan"
python3 - "$tmp/run.json" <<'EOF' || fail "arena not smaller than naive, or allocations per round"
import json, sys
d = json.load(open(sys.argv[1]))
assert 0 < d["arena_bytes"] < d["naive_bytes"], d
assert d["system_allocs_per_round"] == 0, d
assert d["rounds_per_s"] > 0, d
EOF

# 2. text report and the [executor] section of a config file
cat >"$tmp/cfg.ini" <<'EOF'
[planner]
parallel_reuse = strict
[executor]
threads = 3
max_inflight = 2
EOF
arenaflow run "$SRC/examples/mlp.json" --verify --rounds 5 --config "$tmp/cfg.ini" >"$tmp/run.txt" ||
    fail "run with config failed"
grep -q "verified: 0 corrupted tensors" "$tmp/run.txt" || fail "no verified line"
grep -q "on 3 threads (2 in flight)" "$tmp/run.txt" || fail "config [executor] not applied"
printf '[executor]\nthreads = lots\n' >"$tmp/bad.ini"
if arenaflow run "$SRC/examples/mlp.json" --config "$tmp/bad.ini" 2>"$tmp/err"; then
    fail "bad config accepted"
fi
grep -q "threads" "$tmp/err" || fail "bad config error does not name the key"

# 3. usage errors
set +e
arenaflow run "$SRC/examples/mlp.json" --rounds 2>/dev/null; [ $? -eq 2 ] || fail "--rounds without value"
arenaflow run "$SRC/examples/mlp.json" --bogus 2>/dev/null; [ $? -eq 2 ] || fail "unknown option"
arenaflow run "$tmp/missing.json" 2>/dev/null; [ $? -eq 1 ] || fail "missing graph"
set -e

# 4. diagnose: clean plan, then a simulated planner bug
arenaflow diagnose "$SRC/examples/diamond.json" >"$tmp/diag.txt" || fail "diagnose on a correct plan"
grep -q "no polluted tensor" "$tmp/diag.txt" || fail "diagnose clean"
if arenaflow diagnose "$SRC/examples/diamond.json" --break c=b --history >"$tmp/diag2.txt"; then
    fail "diagnose did not fail on a broken plan"
fi
grep -q "first polluted tensor 'b'" "$tmp/diag2.txt" || fail "polluted tensor not named"
grep -q "shared its bytes with 'c'" "$tmp/diag2.txt" || fail "culprit not named"
grep -q "per-buffer history" "$tmp/diag2.txt" || fail "no history"
# 5. plan cache across runs (a restart), and a corrupted cache file is ignored with a warning
arenaflow run "$SRC/examples/diamond.json" --cache "$tmp/pc" --rounds 2 --json >"$tmp/c1.json"
[ "$(field "$tmp/c1.json" plan_cache_hit)" = False ] || fail "first cached run should miss"
arenaflow run "$SRC/examples/diamond.json" --cache "$tmp/pc" --rounds 2 --json >"$tmp/c2.json"
[ "$(field "$tmp/c2.json" plan_cache_hit)" = True ] || fail "second run should hit the cache"
f=$(ls "$tmp"/pc/*.afplan)
printf 'garbage' | dd of="$f" bs=1 seek=150 conv=notrunc status=none
arenaflow run "$SRC/examples/diamond.json" --cache "$tmp/pc" --rounds 2 --json >"$tmp/c3.json" 2>"$tmp/c3.err"
[ "$(field "$tmp/c3.json" plan_cache_hit)" = False ] || fail "corrupted cache file trusted"
grep -q "checksum" "$tmp/c3.err" || fail "no warning about the corrupted cache file"
echo "cli_run: ok"
