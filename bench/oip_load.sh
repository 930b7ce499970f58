#!/usr/bin/env bash
# OIP v2 load sweep (issue 19): one arenaflowd serving a small real model from a temporary model
# repository (the ONNX backend test data's pytorch-converted Conv2d, with its weights), and
# bench_oip sweeping constant rates (JSON and binary inference, /v2/health/live floor) until
# saturation, then a closed loop reading the daemon's CPU time per request of each kind, then
# the same model in process through af_session_run for the HTTP overhead. The sweep runs
# OIP_REPEAT times (default 3) on the same daemon; the last lines give, per run, the largest
# rate whose infer p99 stayed under 2x the unloaded p50 with no errors, and the load average
# around it (the machine is shared: say the load with the figures). Each rate step records at
# least 2000 requests (bench_oip --min-requests), so its p99 means something; with --pid the
# steps and the closed loop also give the daemon's CPU time and context switches per request.
# OIP_INLINE sets the daemon's [executor] inline_rounds (auto, true, false): false is the
# before-inline-rounds daemon, for a same-run comparison.
#   bench/oip_load.sh [BUILD_DIR] [bench_oip options...]   (default build/, --rate-max 3200)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$SRC/build}
[ $# -gt 0 ] && shift
MODEL=${OIP_MODEL:-/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d/model.onnx}
REPEAT=${OIP_REPEAT:-3}
INLINE=${OIP_INLINE:-} # [executor] inline_rounds of the daemon (auto, true, false); unset: default
T=$(mktemp -d /tmp/af-oip-load.XXXXXX)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
mkdir -p "$T/repo/m/1"
cp "$MODEL" "$T/repo/m/1/model.onnx"
CONFIG=()
if [ -n "$INLINE" ]; then
    printf '[executor]\ninline_rounds = %s\n' "$INLINE" >"$T/config.ini"
    CONFIG=(--config "$T/config.ini")
fi
"$BIN/arenaflowd" "${CONFIG[@]}" --listen 127.0.0.1:0 --model-repository "$T/repo" 2>"$T/log" &
PID=$!
PORT=
for _ in $(seq 1 400); do
    PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$T/log" | tail -n 1)
    [ -n "$PORT" ] && grep -q "model repository .* loaded" "$T/log" && break
    sleep 0.025
done
[ -n "$PORT" ] || { cat "$T/log"; exit 1; }
KERNELS=$(sed -n 's|.*loading with the \([a-z]*\) kernels.*|\1|p' "$T/log")
echo "arenaflowd pid $PID port $PORT, $(basename "$(dirname "$MODEL")"), $KERNELS kernels," \
    "inline_rounds = ${INLINE:-default}"
rc=0
for run in $(seq 1 "$REPEAT"); do
    before=$(cut -d' ' -f1-3 /proc/loadavg)
    echo "== run $run of $REPEAT, load average $before"
    "$BIN/bench_oip" --addr "127.0.0.1:$PORT" --model m --onnx "$MODEL" --kernels "$KERNELS" \
        --pid "$PID" "$@" | tee "$T/run$run" || rc=1
    echo "run $run: load average $before before, $(cut -d' ' -f1-3 /proc/loadavg) after"
done
echo "== summary: largest rate with infer p99 < 2x the unloaded p50 and 0 errors, per run"
for run in $(seq 1 "$REPEAT"); do
    sed -n "s|^unloaded infer p50 \([0-9]*\) us.*no errors: \([0-9]*\) req/s; errors or wrong answers below saturation: \([0-9]*\)|run $run: \2 req/s (unloaded p50 \1 us, \3 errors below saturation)|p" "$T/run$run"
done
exit $rc
