#!/usr/bin/env bash
# The ONNX importer's constant data and node order, through the CLI, checked against ONNX's own
# Python package (Debian python3-onnx, installed by scripts/deps.sh; every step that needs it is
# skipped, with a SKIP line, when it is missing):
#   1. tests/onnx_data.py: every initializer (and Constant node value) of every model of
#      libonnx-testdata (node, pytorch-converted, pytorch-operator, simple) and of the real
#      models bench/fetch_models.sh fetched (when present) has the bytes
#      onnx.numpy_helper.to_array gives;
#   2. tests/onnx_outputs.py: inferred output shapes equal the shapes of the test data's
#      output_*.pb wherever we state one (no wrong shape rule);
#   3. a model saved with external data (onnx.save_model(save_as_external_data=True)) imports
#      with the same bytes as the same model saved inline, and plans;
#   4. a model whose nodes are stored shuffled imports with the same tensors and shapes as the
#      sorted one, every tensor static;
#   5. convert --out writes GRAPH.json + GRAPH.weights and the JSON plans; plan names every
#      dynamic tensor with its reason.
# Run by ctest with `arenaflow` on PATH; by hand: PATH=build:$PATH bash tests/cli_onnx_data.sh
set -u
src=${AF_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
data=/usr/share/libonnx-testdata/data
py=/usr/bin/python3
command -v arenaflow >/dev/null 2>&1 || { echo "cli_onnx_data: 'arenaflow' is not on PATH" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
if arenaflow convert "$tmp/none.onnx" 2>&1 | grep -q "not built"; then
    echo "SKIP: ONNX importer not built into arenaflow"
    exit 0
fi
if ! "$py" -c "import onnx, numpy" 2>/dev/null; then
    echo "SKIP: python3-onnx (scripts/deps.sh installs it) is missing: nothing to compare with"
    exit 0
fi
bin=$(command -v arenaflow)

# 1. initializer bytes against numpy_helper.to_array
sets=()
for s in node pytorch-converted pytorch-operator simple; do
    [ -d "$data/$s" ] && sets+=("$data/$s")
done
ls "$src"/bench/.cache/models/*.onnx >/dev/null 2>&1 && sets+=("$src/bench/.cache/models")
if [ ${#sets[@]} -gt 0 ]; then
    "$py" "$src/tests/onnx_data.py" "$bin" "${sets[@]}" >"$tmp/data.txt" 2>&1 || fail "onnx_data.py: $(tail -5 "$tmp/data.txt")"
    grep -E "^(models|initializers|matched|mismatches) " "$tmp/data.txt" | tr '\n' ' '
    echo
    grep -q "^matched *[1-9]" "$tmp/data.txt" || fail "onnx_data.py compared no initializer"
else
    echo "SKIP: no libonnx-testdata and no fetched models: initializer comparison not run"
fi

# 2. inferred output shapes against the real outputs
if [ -d "$data/node" ]; then
    "$py" "$src/tests/onnx_outputs.py" "$bin" "$data" >"$tmp/out.txt" 2>&1 || fail "onnx_outputs.py: $(grep -E 'MISMATCH|CRASH' "$tmp/out.txt" | head -5)"
    grep -E "^(outputs|exact|mismatches)" "$tmp/out.txt" | tr '\n' ' '
    echo
fi

# 3 and 4: external data and shuffled nodes, made with onnx's own writer
"$py" - "$tmp" <<'PYEOF' || fail "making the external-data and shuffled models"
import os, random, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as TP
d = sys.argv[1]
rng = np.random.default_rng(7)
inits = [numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w%d" % i)
         for i in range(4)]
inits.append(numpy_helper.from_array(np.arange(5, dtype=np.int64), "idx"))
inits.append(numpy_helper.from_array(rng.standard_normal(7).astype(np.float16), "h"))
nodes = [helper.make_node("MatMul", ["x" if i == 0 else "m%d" % (i - 1), "w%d" % i], ["m%d" % i],
                          name="mm%d" % i) for i in range(4)]
nodes.append(helper.make_node("Relu", ["m3"], ["r"], name="relu"))
nodes.append(helper.make_node("Gather", ["r", "idx"], ["g"], name="gather", axis=1))
nodes.append(helper.make_node("Shape", ["g"], ["s"], name="shape"))
nodes.append(helper.make_node("Reshape", ["g", "s"], ["y"], name="reshape"))
nodes.append(helper.make_node("Cast", ["h"], ["hc"], name="cast", to=TP.FLOAT))
nodes.append(helper.make_node("Add", ["y", "y"], ["z"], name="add"))
g = helper.make_graph(nodes, "ext", [helper.make_tensor_value_info("x", TP.FLOAT, [8, 64])],
                      [helper.make_tensor_value_info("z", TP.FLOAT, [8, 5]),
                       helper.make_tensor_value_info("hc", TP.FLOAT, [7])], initializer=inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.save_model(m, os.path.join(d, "inline.onnx"))
# shuffled: the same nodes in a random order (copied first: saving with external data below
# rewrites the model's tensors in place)
sh = onnx.ModelProto()
sh.CopyFrom(m)
os.mkdir(os.path.join(d, "ext"))
onnx.save_model(m, os.path.join(d, "ext", "model.onnx"), save_as_external_data=True,
                all_tensors_to_one_file=True, location="weights.bin", size_threshold=64)
order = list(range(len(sh.graph.node)))
random.Random(3).shuffle(order)
nl = [sh.graph.node[i] for i in order]
del sh.graph.node[:]
sh.graph.node.extend(nl)
onnx.save_model(sh, os.path.join(d, "shuffled.onnx"))
print("made: inline.onnx, ext/model.onnx + weights.bin (%d bytes), shuffled.onnx (order %s)" %
      (os.path.getsize(os.path.join(d, "ext", "weights.bin")), order))
PYEOF
if [ -f "$tmp/ext/model.onnx" ]; then
    arenaflow convert "$tmp/inline.onnx" --data-sums "$tmp/inline.sums" || fail "convert inline"
    arenaflow convert "$tmp/ext/model.onnx" --data-sums "$tmp/ext.sums" || fail "convert external"
    if cmp -s <(sort "$tmp/inline.sums") <(sort "$tmp/ext.sums") && [ -s "$tmp/ext.sums" ]; then
        echo "ok: external data: $(wc -l <"$tmp/ext.sums") constants, same bytes as inline"
    else
        fail "external-data constants differ from the inline model's"
        diff <(sort "$tmp/inline.sums") <(sort "$tmp/ext.sums") | head >&2
    fi
    "$py" "$src/tests/onnx_data.py" "$bin" "$tmp/ext/model.onnx" >"$tmp/extpy.txt" 2>&1 || fail "onnx_data.py on the external model: $(tail -3 "$tmp/extpy.txt")"
    arenaflow plan "$tmp/ext/model.onnx" >/dev/null || fail "plan external-data model"
    cp "$tmp/ext/model.onnx" "$tmp/alone.onnx" # its weights file is not next to it
    if arenaflow plan "$tmp/alone.onnx" 2>"$tmp/err" >/dev/null; then
        fail "a model without its external file loaded"
    elif grep -q "weights.bin" "$tmp/err"; then
        echo "ok: missing external file -> $(head -1 "$tmp/err")"
    else
        fail "missing external file: $(head -1 "$tmp/err")"
    fi
    arenaflow convert "$tmp/inline.onnx" --no-declared --shapes - | sort >"$tmp/sorted.shapes"
    arenaflow convert "$tmp/shuffled.onnx" --no-declared --shapes - | sort >"$tmp/shuffled.shapes"
    if cmp -s "$tmp/sorted.shapes" "$tmp/shuffled.shapes" &&
        ! awk -F'\t' '$6 == -1' "$tmp/shuffled.shapes" | grep -q .; then
        echo "ok: shuffled nodes: $(wc -l <"$tmp/shuffled.shapes") tensors, same shapes, all static"
    else
        fail "shuffled model imports differently"
        diff "$tmp/sorted.shapes" "$tmp/shuffled.shapes" | head >&2
    fi
    arenaflow convert "$tmp/shuffled.onnx" --data-sums - | sort | cmp -s - <(sort "$tmp/inline.sums") ||
        fail "shuffled model's constants differ"
fi

# 5. JSON + weights, and dynamic tensors named with their reason
model=$data/pytorch-converted/test_Conv2d/model.onnx
if [ -f "$model" ]; then
    arenaflow convert "$model" --out "$tmp/conv.json" || fail "convert --out"
    if [ -s "$tmp/conv.weights" ] && grep -q '"weights": {"file": "conv.weights"' "$tmp/conv.json" &&
        arenaflow plan "$tmp/conv.json" >/dev/null; then
        echo "ok: convert --out wrote conv.json + conv.weights ($(wc -c <"$tmp/conv.weights") bytes), which plans"
    else
        fail "JSON + weights conversion"
    fi
fi
dyn=$data/node/test_hannwindow_expanded/model.onnx
if [ -f "$dyn" ]; then
    arenaflow plan "$dyn" >"$tmp/plan.txt" || fail "plan $dyn"
    if grep -q "not in the arena" "$tmp/plan.txt" && grep -q "why: op Range" "$tmp/plan.txt"; then
        echo "ok: plan lists dynamic tensors: $(grep -c 'why:' "$tmp/plan.txt") with reasons"
    else
        fail "plan does not list the dynamic tensors: $(tail -3 "$tmp/plan.txt")"
    fi
fi
[ "$failures" -eq 0 ] || { echo "cli_onnx_data: $failures failure(s)" >&2; exit 1; }
echo "cli_onnx_data: all checks passed"
