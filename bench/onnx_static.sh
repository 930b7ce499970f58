#!/usr/bin/env bash
# How many ONNX backend node tests (Debian libonnx-testdata) import with every tensor
# statically sized, and why the others do not.
#   default:        `arenaflow plan MODEL --json` ("dynamic_tensors": 0), shapes the model
#                   declares included, as a user would plan it;
#   --no-declared:  `arenaflow convert MODEL --no-declared --shapes -` (inferred shapes only:
#                   what the shape rules alone achieve).
# Prints one line per test that is not static (DYN with the first reason, or the error that
# rejected it), then the count.
# usage: bench/onnx_static.sh [ARENAFLOW] [--no-declared] [DATA_DIR]
set -u
bin=build/arenaflow
mode=plan
data=/usr/share/libonnx-testdata/data/node
for a in "$@"; do
    case $a in
    --no-declared) mode=infer ;;
    -*) echo "unknown option $a" >&2; exit 2 ;;
    *) if [ -d "$a" ]; then data=$a; else bin=$a; fi ;;
    esac
done
[ -d "$data" ] || { echo "SKIP: no test data in $data"; exit 0; }
static=0 total=0
for d in "$data"/*/; do
    n=$(basename "$d")
    total=$((total + 1))
    if [ $mode = plan ]; then
        if ! j=$("$bin" plan "$d/model.onnx" --json 2>/tmp/onnx_static.$$); then
            echo "$n REJECTED $(head -c 160 /tmp/onnx_static.$$ | tr '\n' ' ' | sed "s|$data/||")"
            continue
        fi
        nd=$(printf '%s' "$j" | grep -o '"dynamic_tensors": [0-9]*' | grep -o '[0-9]*$')
        if [ "$nd" = 0 ]; then
            static=$((static + 1))
        else
            why=$(printf '%s' "$j" | grep -o '"reason": "[^"]*' | head -1 | cut -c12-)
            echo "$n DYN $nd: ${why:0:150}"
        fi
    else
        if ! s=$("$bin" convert "$d/model.onnx" --no-declared --shapes - 2>/tmp/onnx_static.$$); then
            echo "$n REJECTED $(head -c 160 /tmp/onnx_static.$$ | tr '\n' ' ' | sed "s|$data/||")"
            continue
        fi
        dyn=$(printf '%s\n' "$s" | awk -F'\t' '$6 == -1 {printf "%s ", $1}')
        if [ -z "$dyn" ]; then static=$((static + 1)); else echo "$n DYN ${dyn:0:150}"; fi
    fi
done
rm -f /tmp/onnx_static.$$
echo "static: $static of $total node tests ($mode)"
