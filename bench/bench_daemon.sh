#!/usr/bin/env bash
# bench_daemon — load test of arenaflowd on loopback (not part of the test run).
#
#   bench/bench_daemon.sh [--build DIR] [--duration S] [--ref-duration S] [--rate R]
#                         [--client-duration S] [--soak S] [--soak-rate R]
#
# Starts a daemon (port 0, temporary state dir, empty kernels for runs) and submits
# examples/diamond.json, then drives it with Debian's wrk at a fixed rate with 2 connections
# (2 threads), each phase after a 5 s warm-up:
#   1. reference: GET /healthz (HTTP alone on this machine)          --ref-duration (default 20 s)
#   2. POST /v1/graphs/{id}/run {"rounds": 1}                         --duration (default 60 s)
#   3. mixed: runs, cache-hit submissions, GET graph, GET /metrics    20 s
#   4. bench_daemon_client: random-DAG submissions + runs + healthz  --client-duration (20 s)
# and prints requests/s, p50/p99/p99.9 and errors for each, with the run/healthz ratio.
# --soak S: afterwards, S seconds of the mixed load at --soak-rate while sampling the daemon's
# RSS every 10 s; after a 60 s warm-up it prints the samples and the drift against the first
# post-warm-up sample, and says whether RSS stayed within +-5%.
# Every phase is bounded by its duration; the daemon is killed on exit.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build
DUR=60
REF_DUR=20
RATE=500
CLIENT_DUR=20
SOAK=0
SOAK_RATE=300
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=$2 ;;
    --duration) DUR=$2 ;;
    --ref-duration) REF_DUR=$2 ;;
    --rate) RATE=$2 ;;
    --client-duration) CLIENT_DUR=$2 ;;
    --soak) SOAK=$2 ;;
    --soak-rate) SOAK_RATE=$2 ;;
    *) echo "usage: $0 [--build DIR] [--duration S] [--ref-duration S] [--rate R] [--client-duration S] [--soak S] [--soak-rate R]" >&2; exit 2 ;;
    esac
    shift 2
done
DAEMON=$BUILD/arenaflowd
CLIENT=$BUILD/bench_daemon_client
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 2; }
[ -x "$DAEMON" ] || { echo "no $DAEMON: build the arenaflowd target first"; exit 2; }
T=$(mktemp -d /tmp/af-bench-daemon.XXXXXX)
PID=
trap '[ -n "$PID" ] && kill -9 $PID 2>/dev/null; rm -rf "$T"' EXIT
cat >"$T/bench.ini" <<EOF
[server]
listen = 127.0.0.1:0
log_level = info
[limits]
max_concurrent_runs = 64
max_pending_plans = 64
[runs]
fast_kernels = empty
[executor]
threads = 2
EOF
"$DAEMON" --config "$T/bench.ini" --state-dir "$T/state" 2>"$T/log" &
PID=$!
for _ in $(seq 1 100); do
    PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$T/log")
    [ -n "$PORT" ] && break
    sleep 0.05
done
[ -n "$PORT" ] || { echo "daemon did not start"; cat "$T/log"; exit 1; }
AFD=http://127.0.0.1:$PORT
for _ in $(seq 1 200); do # the state directory loads in the background: /v1 is 503 until then
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$AFD/readyz")" = 200 ] && break
    sleep 0.05
done
ID=$(curl -s -X POST --data-binary @"$SRC/examples/diamond.json" "$AFD/v1/graphs" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
[ -n "$ID" ] || { echo "cannot submit the graph"; exit 1; }
export AF_WRK_DIR=$SRC/bench/wrk AF_GRAPH_ID=$ID AF_GRAPH_FILE=$SRC/examples/diamond.json AF_CONNS=2
echo "arenaflowd bench: $(nproc) CPUs, daemon pid $PID on $AFD, graph $ID (diamond, 7 nodes)"
echo "wrk $(wrk -v 2>&1 | head -n 1 | cut -d' ' -f2), 2 threads, 2 connections, fixed rate via delay()"

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$PID/status"; }

phase() { # name script seconds rate
    AF_RATE=$4 wrk -t2 -c2 -d5s --timeout 10s -s "$SRC/bench/wrk/$2" "$AFD" >/dev/null 2>&1 # warm-up
    AF_RATE=$4 wrk -t2 -c2 -d"$3"s --timeout 10s -s "$SRC/bench/wrk/$2" "$AFD" 2>&1 | grep '^WRK' |
        tee -a "$T/wrk.out"
}

phase healthz healthz.lua "$REF_DUR" "$RATE"
phase run run.lua "$DUR" "$RATE"
phase mixed mixed.lua 20 "$RATE"
awk '
    /^WRK/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[$2, kv[1]] = kv[2] } names[$2] = 1 }
    END {
        printf "%-8s %8s %8s %8s %8s %9s %8s\n", "phase", "rps", "p50_us", "p99_us", "p999_us", "max_us", "errors"
        for (n in names)
            printf "%-8s %8.1f %8d %8d %8d %9d %8d\n", n, v[n, "rps"], v[n, "p50_us"], v[n, "p99_us"], v[n, "p999_us"], v[n, "max_us"], v[n, "non2xx"] + v[n, "socket_errors"]
        if (v["healthz", "p50_us"] > 0)
            printf "run p50 / healthz p50 = %.2f, run p99 / healthz p99 = %.2f (healthz = HTTP alone, the reference)\n", v["run", "p50_us"] / v["healthz", "p50_us"], v["run", "p99_us"] / v["healthz", "p99_us"]
    }' "$T/wrk.out"
ERRS=$(awk '/^WRK/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "non2xx" || kv[1] == "socket_errors") e += kv[2] } } END { print e + 0 }' "$T/wrk.out")
echo "wrk errors (non-2xx + socket) over all phases: $ERRS"

if [ -x "$CLIENT" ] && [ "$CLIENT_DUR" != 0 ]; then
    "$CLIENT" --addr "127.0.0.1:$PORT" --duration "$CLIENT_DUR" --warmup 2 --connections 2 \
        --rate "$RATE" --submit-pct 10 --health-pct 10 --graphs 16 --rounds 1 --seed 42
fi
echo "daemon RSS after the load: $(rss_kb) KiB"

if [ "$SOAK" != 0 ]; then
    echo "soak: ${SOAK} s of mixed load at ${SOAK_RATE} req/s, RSS every 10 s (warm-up 60 s)"
    AF_RATE=$SOAK_RATE wrk -t2 -c2 -d"$SOAK"s --timeout 10s -s "$SRC/bench/wrk/mixed.lua" "$AFD" \
        >"$T/soak.out" 2>&1 &
    WRK=$!
    : >"$T/rss"
    for s in $(seq 10 10 "$SOAK"); do
        sleep 10
        r=$(rss_kb)
        echo "$s $r" >>"$T/rss"
        echo "  t=${s}s rss=${r} KiB"
    done
    wait "$WRK"
    grep '^WRK' "$T/soak.out"
    awk '$1 > 60 { if (!base) base = $2; d = ($2 - base) * 100.0 / base; if (d > mx) mx = d; if (d < mn) mn = d }
        END { if (!base) { print "soak too short for a post-warm-up baseline"; exit }
              printf "soak RSS drift after warm-up: min %+.1f%%, max %+.1f%% vs %d KiB -> %s\n", mn, mx, base,
                     (mx <= 5 && mn >= -5) ? "FLAT (within +-5%)" : "NOT FLAT" }' "$T/rss"
fi
kill -TERM "$PID"
wait "$PID"
echo "daemon exit status after SIGTERM: $?"
PID=
