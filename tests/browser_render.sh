#!/usr/bin/env bash
# Renders arenaflow's HTML memory maps in headless Chromium (Debian `chromium`) to PNG files, so
# a person can look at them. Not part of ctest (the name does not match tests/cli_*.sh): run it
# by hand after building the CLI.
#
# usage: tests/browser_render.sh [OUTDIR]     (default OUTDIR: ./browser-render)
# env:   ARENAFLOW=path/to/arenaflow (default: arenaflow on PATH, else build-viz/arenaflow)
#
# Pictures: diamond.json (small, default plan vs --compare naive), resnet50 (zoo) and a
# generated 10,000-tensor layered graph (checks the aggregation keeps the file small).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-browser-render}
mkdir -p "$out"
out=$(cd "$out" && pwd)
af=${ARENAFLOW:-$(command -v arenaflow || echo "$here/build-viz/arenaflow")}
command -v chromium >/dev/null || { echo "chromium not installed (apt-get install chromium)" >&2; exit 77; }

"$af" plan "$here/examples/diamond.json" --html "$out/diamond.html" --svg "$out/diamond.svg" \
    --compare input >/dev/null
"$af" zoo resnet50 --out "$out/resnet50.json"
"$af" plan "$out/resnet50.json" --html "$out/resnet50.html" --compare naive >/dev/null

# A layered random graph with 10,000 tensors (fixed seed), sizes log-uniform 256 B .. 4 MiB.
/usr/bin/python3 - "$out/big10k.json" <<'EOF'
import json, random, sys
r = random.Random(42)
tensors = [{"name": "in", "kind": "input", "bytes": 65536}]
nodes, layer = [], ["in"]
while len(tensors) < 10000:
    nxt = []
    for k in range(r.randint(2, 12)):
        name = "t%d" % len(tensors)
        tensors.append({"name": name, "bytes": int(2 ** r.uniform(8, 22))})
        ins = r.sample(layer, min(len(layer), r.randint(1, 3)))
        if r.random() < 0.05 and len(nodes) > 50:   # a long skip connection
            ins.append(nodes[r.randrange(len(nodes) - 50)]["outputs"][0])
        nodes.append({"name": "n%d" % len(nodes), "op": r.choice(["Conv", "Add", "MatMul", "Relu"]),
                      "inputs": sorted(set(ins)), "outputs": [name]})
        nxt.append(name)
    layer = nxt
tensors[-1]["kind"] = "output"
json.dump({"format": "arenaflow-graph", "version": 1, "name": "layered10k",
           "tensors": tensors, "nodes": nodes}, open(sys.argv[1], "w"))
EOF
"$af" plan "$out/big10k.json" --schedule input --html "$out/big10k.html" \
    --svg "$out/big10k.svg" >/dev/null

for f in "$out"/*.svg; do
    xmllint --noout "$f"
done
ls -l "$out"/*.svg "$out"/*.html

# Interaction check: a copy of the diamond page with a script appended that zooms the first map
# (a synthetic mouse-wheel event) and hovers the first tensor; Chromium dumps the DOM, and the
# page records the new viewBox and the info line in <body data-selftest>. The zoomed page is
# also screenshotted.
sed 's|</body></html>|<script>(function(){var m=document.querySelector("svg.map"),r=m.getBoundingClientRect(),v0=m.getAttribute("viewBox");m.dispatchEvent(new WheelEvent("wheel",{deltaY:-100,clientX:r.left+r.width/4,clientY:r.top+r.height/4,bubbles:true,cancelable:true}));var t=document.querySelector("rect.t");t.dispatchEvent(new MouseEvent("mouseover",{bubbles:true}));document.body.setAttribute("data-selftest",v0+"\|"+m.getAttribute("viewBox")+"\|"+document.getElementById("info").textContent);})();</script></body></html>|' \
    "$out/diamond.html" >"$out/diamond_zoom.html"
prof=$(mktemp -d)
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$prof" \
    --window-size=1400,900 --dump-dom "file://$out/diamond_zoom.html" 2>/dev/null >"$out/diamond_zoom.dom"
rm -rf "$prof"
selftest=$(grep -o 'data-selftest="[^"]*"' "$out/diamond_zoom.dom" | head -1)
echo "interaction: $selftest"
/usr/bin/python3 - "$selftest" <<'EOF2'
import sys
v0, v1, info = sys.argv[1].split('"')[1].split("|", 2)
a, b = [float(x) for x in v0.split()], [float(x) for x in v1.split()]
assert abs(b[2] - 0.8 * a[2]) < 1e-6 * a[2] and abs(b[3] - 0.8 * a[3]) < 1e-6 * a[3], (v0, v1)
assert b[0] > 0 and b[1] > 0, "zoom should move the window towards the pointer"
assert "bytes:" in info and "lifetime:" in info, info
print("interaction ok: wheel zoomed the map to 80%, hover filled the info line")
EOF2

for name in diamond resnet50 big10k diamond_zoom; do
    prof=$(mktemp -d)
    timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$prof" \
        --screenshot="$out/$name.png" --window-size=1400,900 "file://$out/$name.html" \
        >"$out/$name.chromium.log" 2>&1 || { cat "$out/$name.chromium.log" >&2; exit 1; }
    rm -rf "$prof"
    test -s "$out/$name.png"
    echo "wrote $out/$name.png"
done
