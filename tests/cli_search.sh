#!/bin/bash
# CLI: gen-tight writes MiniMalloc CSV with a known optimum; place --algo search reaches it,
# --capacity reports fit / no fit; same seed, same file; bad options are usage errors.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "cli_search: $*" >&2; exit 1; }

arenaflow gen-tight --buffers 40 --seed 3 --jitter 0 --out "$tmp/t.csv" 2>"$tmp/gen.err"
opt=$(sed -n 's/^optimum \([0-9]*\).*/\1/p' "$tmp/gen.err")
[ -n "$opt" ] || fail "no optimum printed"
[ "$(head -1 "$tmp/t.csv")" = "id,lower,upper,size" ] || fail "bad header"
[ "$(wc -l <"$tmp/t.csv")" -eq 41 ] || fail "expected 40 rows"

arenaflow place "$tmp/t.csv" --algo search --time-limit 5 --out "$tmp/p.csv" >"$tmp/rep.txt"
grep -q "height $opt " "$tmp/rep.txt" || fail "search missed the optimum: $(cat "$tmp/rep.txt")"

arenaflow place "$tmp/t.csv" --algo search --capacity "$opt" --time-limit 5 \
    --out "$tmp/p2.csv" >/dev/null || fail "capacity = optimum should fit"
if arenaflow place "$tmp/t.csv" --algo search --capacity $((opt - 1)) --time-limit 5 \
    --out "$tmp/p3.csv" 2>"$tmp/err.txt" >/dev/null; then
    fail "capacity = optimum - 1 should not fit"
fi
grep -q "do not fit" "$tmp/err.txt" || fail "no reason given: $(cat "$tmp/err.txt")"

arenaflow gen-tight --buffers 40 --seed 3 --jitter 0 >"$tmp/t2.csv" 2>/dev/null
cmp -s "$tmp/t.csv" "$tmp/t2.csv" || fail "same seed gave a different instance"
arenaflow gen-tight --buffers 40 --seed 4 --jitter 0 >"$tmp/t3.csv" 2>/dev/null
if cmp -s "$tmp/t.csv" "$tmp/t3.csv"; then fail "different seeds gave the same instance"; fi

set +e
arenaflow gen-tight --buffers 0 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--buffers 0 should be a usage error"
arenaflow gen-tight --bogus 1 >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown option should be a usage error"
echo "cli_search: ok"
