#!/usr/bin/env bash
# arenaflowd fault and abuse suite (issue 16): every attack class of tests/daemon_abuse.py
# (slowloris, header floods, pipelining, malformed chunked encoding, huge and cut bodies,
# garbage, weird and traversing ids, JSON and ONNX bombs, run abuse, a connection flood,
# parallel and contested submissions, the largest legal graph with its event table and
# picture) runs while a SIGHUP storm reloads the configuration and a probe measures /healthz on
# its own connection. Required: no 500, 5xx only as documented overload answers, the daemon
# alive, /healthz never slower than 100 ms (x5 under sanitizers), peak RSS under the memory
# bound the configuration documents (normal build), open fds back where they started. Then a
# soak of mixed legal load: RSS and fd count flat (tolerance 15% + 4 MiB, 4 fds).
# AF_SOAK_SECONDS (default 40).
. "$(dirname "$0")/daemon_lib.sh"
mkdir -p "$STATE"
ABUSE="$PY $SRC/tests/daemon_abuse.py"
write_cfg "max_connections = 256
request_timeout_ms = 1500
[limits]
max_body = 16M
max_parse_bytes = 192M
max_plans_bytes = 64M
plan_cache_bytes = 64M
max_arena_bytes = 64M
max_pending_plans = 4
max_concurrent_runs = 2
max_plan_ms = 20000"
# bound = max_plans_bytes + plan_cache_bytes + max_parse_bytes + max_pending_plans x max_body +
#         max_concurrent_runs x max_arena_bytes + 128 MiB for the process, planning and buffers
BOUND_KIB=$(((64 + 64 + 192 + 4 * 16 + 2 * 64 + 128) * 1024))
start
wait_ready
FD0=$(fd_count "$PID")
RSS0=$(rss_kib "$PID")

ref_start 600
rm -f "$T/probe" "$T/probe.stop"
$PROBE healthz "$PORT" 600 "$T/probe" &
PROBE_PID=$!
PIDS="$PIDS $PROBE_PID"
(
    while [ ! -e "$T/hup.stop" ]; do
        kill -HUP "$PID" 2>/dev/null
        sleep 0.3
    done
) &
HUP_PID=$!
PIDS="$PIDS $HUP_PID"
t0=$(date +%s)
AF_PROBE_FILE=$T/probe $ABUSE attacks "$PORT" "$SCALE" >"$T/attacks.out" 2>&1
rc=$?
cat "$T/attacks.out"
touch "$T/hup.stop" "$T/probe.stop"
wait "$HUP_PID" "$PROBE_PID" 2>/dev/null
[ "$rc" = 0 ] || fail "attack suite: $(tail -n 2 "$T/attacks.out")"
kill -0 "$PID" || fail "the daemon died under the attacks"
ref_stop
read -r PMAX PN PFAIL <"$T/probe"
HUPS=$(grep -c "SIGHUP: configuration reloaded" "$LOG")
echo "  $(($(date +%s) - t0)) s of attacks, $HUPS SIGHUP reloads; /healthz probe: max ${PMAX} ms over $PN probes, $PFAIL failed; idle reference daemon at the same time: max ${REF_MAX} ms; load average $(cut -d' ' -f1 /proc/loadavg)"
latency_ok "$PMAX" || fail "/healthz took ${PMAX} ms during the attacks (idle reference ${REF_MAX} ms)"
[ "$PFAIL" = 0 ] || fail "$PFAIL /healthz probes failed during the attacks"
ok "/healthz max ${PMAX} ms during the attacks (idle reference ${REF_MAX} ms)"
HWM=$(hwm_kib "$PID")
echo "  peak RSS $HWM KiB (documented bound $BOUND_KIB KiB; at start $RSS0 KiB)"
if [ -z "$SAN" ]; then
    [ "$HWM" -lt "$BOUND_KIB" ] || fail "peak RSS $HWM KiB over the bound $BOUND_KIB KiB"
    ok "peak RSS $HWM KiB under $BOUND_KIB KiB"
fi
sleep 2 # closed connections are reaped
FD1=$(fd_count "$PID")
echo "  open fds: $FD0 at start, $FD1 after the attacks"
[ "$FD1" -le $((FD0 + 4)) ] || fail "fds grew from $FD0 to $FD1"
ok "fds back to $FD1 (start $FD0)"
[ -z "$(metric 'arenaflowd_http_requests_total{route="/v1/graphs",status="500"}')" ] || fail "/metrics counted 500 answers"
grep -q "status=\"500\"" <(curl -s "$AFD/metrics") && fail "a 500 was answered somewhere"
ok "no 500 answered (per /metrics)"

# ---- soak ------------------------------------------------------------------------------------
SOAK=${AF_SOAK_SECONDS:-40}
$ABUSE soak "$PORT" "$PID" "$SOAK" >"$T/soak.json" || fail "soak load failed: $(cat "$T/soak.json")"
$PY - "$T/soak.json" <<'PYEOF' || fail "soak: RSS or fds not flat"
import json, sys
s = json.load(open(sys.argv[1]))
rss, fds = s["rss_kib"], s["fds"]
warm = len(rss) // 4  # the first quarter is warm-up (caches, pools, executors)
base, tail = rss[warm], rss[warm:]
grow = max(tail) - base
print("soak: %d requests in %d s; RSS after warm-up %d KiB, max %d KiB (+%d KiB, %.1f%%), "
      "last %d KiB; fds %d..%d" % (s["requests"], len(rss), base, max(tail), grow,
                                   100.0 * grow / base, tail[-1], min(fds[warm:]), max(fds[warm:])))
assert grow <= base * 0.15 + 4096, "RSS grew %d KiB over %d KiB" % (grow, base)
assert max(fds[warm:]) - min(fds[warm:]) <= 4, fds
PYEOF
ok "soak: RSS and fds flat"
stop
echo "cli_daemon_abuse: all $CHECKS checks passed"
