#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on a bundled default graph
# (ResNet-50 from the model zoo): plans it (order + arena offsets, verified) and prints the
# memory report, then executes the plan for 20 rounds on all cores with verify kernels and
# prints memory (naive vs arena), throughput and the number of corrupted tensors.
#   scripts/quickstart.sh [GRAPH]      (a JSON or ONNX graph instead of the default)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAF_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target arenaflow_cli >/dev/null
graph=${1:-}
if [ -z "$graph" ]; then
    graph=build/resnet50.json
    ./build/arenaflow zoo resnet50 --out "$graph"
fi
echo "== arenaflow plan $graph"
./build/arenaflow plan "$graph"
echo
echo "== arenaflow run $graph --verify"
./build/arenaflow run "$graph" --verify --rounds 20
