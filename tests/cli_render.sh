#!/usr/bin/env bash
# `arenaflow plan --svg/--html/--compare`: the pictures are written, the SVG parses as XML
# (Debian's /usr/bin/python3, standard library), it holds one tensor rectangle per arena tensor
# of each plan (counts from `plan --json`), the HTML page references nothing on the network, and
# bad uses fail with the documented exit status (1 bad --compare name or unwritable file,
# 2 missing value).
#
# Run by ctest with the built `arenaflow` on PATH and AF_SOURCE_DIR set; runnable by hand too:
#   PATH=build:$PATH bash tests/cli_render.sh
set -u
src=${AF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
command -v arenaflow >/dev/null 2>&1 || { echo "cli_render: 'arenaflow' is not on PATH" >&2; exit 1; }
py=/usr/bin/python3
[ -x $py ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

for g in diamond mlp seed2_hotel; do
    graph=$src/examples/$g.json
    if ! arenaflow plan "$graph" --svg "$tmp/$g.svg" --html "$tmp/$g.html" --compare naive \
        >/dev/null 2>"$tmp/err"; then
        fail "$g: plan --svg --html --compare naive failed: $(cat "$tmp/err")"
        continue
    fi
    a=$(arenaflow plan "$graph" --json | $py -c 'import json,sys; print(json.load(sys.stdin)["arena_tensors"])')
    b=$(arenaflow plan "$graph" --algo naive --json | $py -c 'import json,sys; print(json.load(sys.stdin)["arena_tensors"])')
    counts=$($py - "$tmp/$g.svg" <<'EOF'
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
out = []
for g in root.iter(ns + "g"):
    if g.get("class") == "panel":
        out.append(str(sum(1 for r in g.iter(ns + "rect") if r.get("class") == "t")))
print(" ".join(out))
EOF
)
    [ "$counts" = "$a $b" ] && [ -n "$a" ] && [ "$a" -gt 0 ] || fail "$g: tensor rectangles per panel '$counts', arena tensors '$a $b'"
    grep -q '<script>' "$tmp/$g.html" || fail "$g: no script in the HTML page"
    if grep -o 'https\?://[^" ]*' "$tmp/$g.html" | grep -v '^http://www.w3.org/2000/svg$' | grep -q .; then
        fail "$g: the HTML page references a network resource"
    fi
done

arenaflow plan "$src/examples/diamond.json" --svg "$tmp/x.svg" --compare no-such-algo >/dev/null 2>&1
[ $? -eq 1 ] || fail "--compare with an unknown name must exit 1"
arenaflow plan "$src/examples/diamond.json" --svg >/dev/null 2>&1
[ $? -eq 2 ] || fail "--svg without a value must exit 2"
arenaflow plan "$src/examples/diamond.json" --svg "$tmp/no/such/dir/x.svg" >/dev/null 2>&1
[ $? -eq 1 ] || fail "an unwritable --svg path must exit 1"

if [ $failures -ne 0 ]; then
    echo "cli_render: $failures failure(s)" >&2
    exit 1
fi
echo "cli_render: ok"
