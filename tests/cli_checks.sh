#!/usr/bin/env bash
# The tree's own checks must pass here, and must fail on a tree built to break them: an include
# of another module's private header and of a header the module table does not allow
# (scripts/check_deps.sh), a library function over 100 lines and a file over 800 lines
# (scripts/check_size.sh). Each failure must name the file, the line and the rule.
set -u
SRC=${AF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "cli_checks: $*" >&2; exit 1; }

"$SRC/scripts/check_deps.sh" >"$tmp/deps.out" || { cat "$tmp/deps.out"; fail "check_deps fails on the tree"; }
"$SRC/scripts/check_size.sh" >"$tmp/size.out" || { cat "$tmp/size.out"; fail "check_size fails on the tree"; }

# a tree that breaks the module table
bad=$tmp/bad
mkdir -p "$bad/docs" "$bad/pool" "$bad/planner" "$bad/include/arenaflow"
cp "$SRC/docs/design.md" "$bad/docs/"
for h in common graph onnx pack plan render pool executor cache zoo arenaflow; do
    : >"$bad/include/arenaflow/$h.h"
done
: >"$bad/planner/planner_int.h"
printf '#include "pool/pool_int.h"\n' >"$bad/pool/ok.c"
: >"$bad/pool/pool_int.h"
printf '#include "arenaflow/pool.h"\n#include "planner/planner_int.h"\n#include "arenaflow/plan.h"\n' \
    >"$bad/pool/broken.c"
if "$SRC/scripts/check_deps.sh" --root "$bad" >"$tmp/bad.out" 2>&1; then
    fail "check_deps passed a pool file that includes the planner's private header"
fi
grep -q 'pool/broken.c:2: includes "planner/planner_int.h": a private header of module planner' \
    "$tmp/bad.out" || { cat "$tmp/bad.out"; fail "private-header message"; }
grep -q 'pool/broken.c:3: includes "arenaflow/plan.h": module planner' "$tmp/bad.out" ||
    { cat "$tmp/bad.out"; fail "forbidden-module message"; }
grep -q 'pool/ok.c' "$tmp/bad.out" && fail "an allowed include was reported"

# a tree that breaks the size limits
big=$tmp/big
mkdir -p "$big/planner" "$big/tools"
{
    echo "int long_one(void)"
    echo "{"
    for i in $(seq 1 100); do echo "    x$i();"; done
    echo "}"
} >"$big/planner/long.c"
{
    echo "int fine(void)"
    echo "{"
    for i in $(seq 1 98); do echo "    y$i();"; done
    echo "}"
} >"$big/planner/fine.c"
seq 1 801 | sed 's/^/\/\/ /' >"$big/tools/huge.c"
if "$SRC/scripts/check_size.sh" --root "$big" >"$tmp/big.out" 2>&1; then
    fail "check_size passed a 102-line function and an 801-line file"
fi
grep -q 'planner/long.c:1: function long_one() is 102 lines' "$tmp/big.out" ||
    { cat "$tmp/big.out"; fail "long-function message"; }
grep -q 'tools/huge.c: 801 lines' "$tmp/big.out" || { cat "$tmp/big.out"; fail "long-file message"; }
grep -q 'fine' "$tmp/big.out" && fail "a 100-line function was reported"
echo "cli_checks: ok"
