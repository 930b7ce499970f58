#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on a bundled default graph:
# plans it (order + arena offsets, verified) and prints the memory report, then executes the
# plan for a number of rounds on all cores with verify kernels.
#   scripts/quickstart.sh [GRAPH]      (default: examples/default.json)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAF_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target arenaflow_cli >/dev/null
graph=${1:-examples/default.json}
echo "== arenaflow plan $graph"
./build/arenaflow plan "$graph"
