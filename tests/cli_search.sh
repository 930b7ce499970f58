#!/bin/bash
# CLI: gen-tight writes MiniMalloc CSV with a known optimum; place --algo search reaches it,
# --capacity reports fit / no fit the same way for every placer (the best packing is written,
# exit 1 when it does not fit); MiniMalloc's example with string ids reads every row; same seed,
# same file; bad options are usage errors.
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
# the same with the limit in CPU time; a shape other than guillotine cuts
arenaflow place "$tmp/t.csv" --algo search --capacity "$opt" --time-limit 5 --cpu-time \
    --out "$tmp/p2.csv" >/dev/null || fail "capacity = optimum should fit (--cpu-time)"
arenaflow gen-tight --buffers 60 --seed 3 --shape staircase --out "$tmp/st.csv" 2>"$tmp/st.txt"
sopt=$(sed -n 's/^optimum \([0-9]*\).*/\1/p' "$tmp/st.txt")
arenaflow place "$tmp/st.csv" --algo search --capacity "$sopt" --time-limit 5 --cpu-time \
    --out "$tmp/p4.csv" >/dev/null || fail "staircase: capacity = optimum should fit"
if arenaflow place "$tmp/t.csv" --algo search --capacity $((opt - 1)) --time-limit 5 \
    --out "$tmp/p3.csv" >"$tmp/err.txt" 2>&1; then
    fail "capacity = optimum - 1 should not fit"
fi
grep -q "does not fit (height $opt; proven" "$tmp/err.txt" ||
    fail "no reason given: $(cat "$tmp/err.txt")"
[ "$(wc -l <"$tmp/p3.csv")" -eq 41 ] || fail "the best packing was not written"

# MiniMalloc's own example: ids b1..b5 written back unchanged, fits in 12, not in 11.
printf 'id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n' >"$tmp/mm.csv"
arenaflow place "$tmp/mm.csv" --algo search --capacity 12 --out "$tmp/mm.out" >"$tmp/rep.txt" ||
    fail "example should fit in 12: $(cat "$tmp/rep.txt")"
grep -q "buffers 5 .*height 12 " "$tmp/rep.txt" || fail "example: $(cat "$tmp/rep.txt")"
[ "$(cut -d, -f1 "$tmp/mm.out" | tr '\n' ' ')" = "id b1 b2 b3 b4 b5 " ] || fail "ids changed"
for algo in $(arenaflow place --help | sed -n 's/.*default portfolio)://p'); do
    # the three rows of issue 20, no header: every placer reads 3 buffers (lower bound 17) and
    # reports that capacity 7 does not fit, writing its packing and exiting 1
    printf 'b1,0,10,5\nb2,5,15,5\n3,0,20,7\n' >"$tmp/r3.csv"
    if arenaflow place "$tmp/r3.csv" --algo "$algo" --capacity 7 --out "$tmp/r3.out" \
        >"$tmp/rep.txt" 2>&1; then
        fail "$algo: capacity 7 should not fit"
    fi
    grep -q "buffers 3 .*lower bound 17 " "$tmp/rep.txt" || fail "$algo: $(cat "$tmp/rep.txt")"
    grep -q "capacity 7: does not fit (height [0-9]*; proven" "$tmp/rep.txt" ||
        fail "$algo: $(cat "$tmp/rep.txt")"
    [ "$(wc -l <"$tmp/r3.out")" -eq 4 ] || fail "$algo: packing not written"
done

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
