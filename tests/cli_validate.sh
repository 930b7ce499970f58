#!/usr/bin/env bash
# Bad graphs are rejected by the CLI: for every tests/data/bad/*.json, `arenaflow plan FILE` must
# exit with a failure status (not 0, and not a signal/crash) and its stderr must name each culprit
# listed in the file's  "comment": "EXPECT AF_CODE | culprit | culprit ..."  line. (The error
# code itself is checked by tests/test_graph.c; the CLI prints the message, not the code.)
# The bundled examples must still plan successfully, and "-" reads the graph from stdin.
#
# Run by ctest with the built `arenaflow` on PATH and AF_SOURCE_DIR set; runnable by hand too:
#   PATH=build:$PATH bash tests/cli_validate.sh
set -u
src=${AF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
if ! command -v arenaflow >/dev/null 2>&1; then
    echo "cli_validate: 'arenaflow' is not on PATH" >&2
    exit 1
fi

failures=0
checked=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# check_rejected LABEL EXPECT-LINE STATUS STDERR
check_rejected() {
    local label=$1 expect=$2 status=$3 err=$4
    if [ "$status" -eq 0 ]; then
        fail "$label: accepted (exit 0)"
        return
    fi
    if [ "$status" -ge 128 ]; then
        fail "$label: crashed (exit $status): $err"
        return
    fi
    local parts culprit i
    IFS='|' read -ra parts <<<"${expect#EXPECT }"
    for ((i = 1; i < ${#parts[@]}; i++)); do
        culprit=$(echo "${parts[i]}" | sed 's/^ *//; s/ *$//')
        if ! grep -qF -- "$culprit" <<<"$err"; then
            fail "$label: stderr does not name '$culprit': $err"
        fi
    done
}

for f in "$src"/tests/data/bad/*.json; do
    name=$(basename "$f")
    expect=$(grep -o 'EXPECT [^"]*' "$f" | head -n 1)
    if [ -z "$expect" ]; then
        fail "$name: no EXPECT comment"
        continue
    fi
    err=$(arenaflow plan "$f" 2>&1 >/dev/null)
    status=$?
    check_rejected "$name" "$expect" "$status" "$err"
    checked=$((checked + 1))
done

# The same through stdin (one file is enough: the loader is shared).
f="$src/tests/data/bad/cycle.json"
err=$(arenaflow plan - <"$f" 2>&1 >/dev/null)
status=$?
check_rejected "stdin cycle.json" "$(grep -o 'EXPECT [^"]*' "$f")" "$status" "$err"

# A missing file is an error naming the path, not a crash.
err=$(arenaflow plan "$src/tests/data/bad/does-not-exist.json" 2>&1 >/dev/null)
status=$?
check_rejected "missing file" "EXPECT AF_EIO | does-not-exist.json" "$status" "$err"

# Valid graphs still plan.
for f in "$src"/examples/*.json; do
    if ! out=$(arenaflow plan "$f" 2>&1); then
        fail "$(basename "$f"): valid example rejected: $out"
    fi
done

echo "cli_validate: $checked bad graphs checked, $failures failure(s)"
[ "$failures" -eq 0 ]
