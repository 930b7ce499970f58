#!/usr/bin/env bash
# arenaflowd limits (issue 16, items 5, 6 and 7) on a real daemon over loopback:
#   5. the loop never blocks: /healthz stays under 100 ms while a node with 100k attributes is
#      parsed; a plan over max_plan_ms is abandoned with 422; a restart serves /healthz at once
#      and says "loading" on /readyz (and 503 on /v1) until the stored graphs are in;
#   6. memory: a 10^6-node graph is refused (max_nodes) without being planned, a body of empty
#      JSON objects is refused before jansson (max_parse_bytes), a 4 GiB tensor is refused
#      (max_arena_bytes), max_plans_bytes answers 507; the daemon's peak RSS stays bounded;
#   7. overflow: an arena above 2^63 is never reported (no negative arena_bytes), and sizes that
#      add up past 2^64 are the client's error (400), not a 500.
# Every wait is bounded.
. "$(dirname "$0")/daemon_lib.sh"
mkdir -p "$STATE"

probe_start() { # healthz probe for up to $1 s into $T/probe
    rm -f "$T/probe" "$T/probe.stop"
    $PROBE healthz "$PORT" "$1" "$T/probe" &
    PROBE_PID=$!
    PIDS="$PIDS $PROBE_PID"
    for _ in $(seq 1 100); do
        [ -s "$T/probe" ] && return 0
        sleep 0.02
    done
    fail "healthz probe did not start"
}
probe_stop() { # sets PROBE_MAX (ms)
    touch "$T/probe.stop"
    wait "$PROBE_PID" 2>/dev/null
    read -r PROBE_MAX PROBE_N PROBE_FAILS <"$T/probe"
}

# ---- 5a. a 100k-attribute node: parsed off the loop --------------------------------------
write_cfg "[limits]
max_body = 16M"
start
wait_ready
$PROBE gen attrs 100000 "$T/attrs.json"
ref_start 120
probe_start 120
req POST /v1/graphs --data-binary @"$T/attrs.json"
probe_stop
ref_stop
echo "  /healthz during it: max ${PROBE_MAX} ms over ${PROBE_N} probes, ${PROBE_FAILS} failures (idle reference ${REF_MAX} ms)"
latency_ok "$PROBE_MAX" || fail "/healthz stalled ${PROBE_MAX} ms while the graph was parsed"
[ "$PROBE_FAILS" = 0 ] || fail "healthz probe failures: $PROBE_FAILS"
ok "/healthz max ${PROBE_MAX} ms while parsing"
expect 422 "one node with 100,000 attributes ($(stat -c %s "$T/attrs.json") bytes)"
body_has max_attrs_per_node "the refusal names max_attrs_per_node"
stop

# ---- 5b. planning time limit ------------------------------------------------------------
write_cfg "[limits]
max_body = 16M
max_plan_ms = 1000"
start
wait_ready
$PROBE gen wide 60000 "$T/wide.json" # ~12 s to plan without a limit
probe_start 120
t0=$(date +%s%N)
req POST /v1/graphs --data-binary @"$T/wide.json"
t1=$(date +%s%N)
probe_stop
expect 422 "a 60,000-node fan-out over max_plan_ms = 1000"
body_has plan_timeout "timeout answer code"
body_has max_plan_ms "timeout answer names the limit"
ms=$(((t1 - t0) / 1000000))
echo "  answered after $ms ms; /healthz max ${PROBE_MAX} ms"
[ "$ms" -lt $((8000 * SLOW)) ] || fail "the plan was not abandoned in time ($ms ms)"
[ "$(metric 'arenaflowd_plans_timed_out_total')" = 1 ] || fail "timed-out plan not counted"
ok "plan abandoned after $ms ms (limit 1000 ms) and counted"
req GET /healthz
expect 200 "healthz after the abandoned plan"
stop

# ---- 5c. restart: /healthz at once, /readyz "loading" until the stored graphs are in ------
rm -rf "$STATE"
mkdir -p "$STATE"
write_cfg "[limits]
max_body = 16M
max_plan_ms = 600000"
start
wait_ready
N=$((20000 / SCALE))
for i in 1 2 3; do
    $PROBE gen wide $((N + i)) "$T/w$i.json"
    req POST /v1/graphs --data-binary @"$T/w$i.json"
    expect 201 "stored graph $i (fan-out of $((N + i)))"
done
crash
rm -f "$STATE"/plans/*.afplan # restart must re-plan: seconds of loading
start
t_start=$(date +%s%N)
req GET /healthz
t_h=$(date +%s%N)
expect 200 "healthz right after the restart"
echo "  /healthz $(((t_h - t_start) / 1000000)) ms after the port was reported"
req GET /readyz
expect 503 "readyz while loading"
body_has loading "readyz says loading"
req GET /v1/graphs
expect 503 "GET /v1/graphs while loading"
body_has '"code":"loading"' "loading code"
grep -qi '^retry-after: 1' "$T/headers" || fail "503 loading without Retry-After"
wait_ready 300
req GET /v1/graphs
expect 200 "list after loading"
[ "$(jget 'd["count"]')" = 3 ] || fail "not all stored graphs loaded: $(head -c 300 "$T/body")"
ok "restart served /healthz at once, said loading, then listed 3 graphs"
stop

# ---- 6. memory amplification ---------------------------------------------------------------
rm -rf "$STATE"
mkdir -p "$STATE"
write_cfg "[limits]
max_body = 16M"
start
wait_ready
$PROBE gen bare 1000000 "$T/million.json"
t0=$(date +%s%N)
req POST /v1/graphs --data-binary @"$T/million.json"
t1=$(date +%s%N)
[ "$CODE" = 413 ] || [ "$CODE" = 422 ] ||
    fail "a 10^6-node graph: expected 413 (max_parse_bytes) or 422 (max_nodes), got $CODE"
ok "a 10^6-node graph ($(stat -c %s "$T/million.json") bytes) refused with $CODE: $(jget 'd["error"]["message"]')"
echo "  refused after $(((t1 - t0) / 1000000)) ms; daemon peak RSS $(hwm_kib "$PID") KiB"
$PROBE gen bare 150000 "$T/150k.json"
req POST /v1/graphs --data-binary @"$T/150k.json"
expect 422 "a 150,000-node graph with the default max_nodes (100,000)"
body_has max_nodes "the refusal names max_nodes"
$PROBE gen objects 5000000 "$T/objects.json"
req POST /v1/graphs --data-binary @"$T/objects.json"
expect 413 "15 MB of empty JSON objects (1.1 GB as a DOM)"
body_has max_parse_bytes "the refusal names max_parse_bytes"
HWM=$(hwm_kib "$PID")
echo "  daemon peak RSS after both: $HWM KiB"
[ "$HWM" -lt $((600 * 1024)) ] || fail "peak RSS $HWM KiB: the refused bodies were expanded"
ok "peak RSS $HWM KiB after a 10^6-node graph and 5M empty objects"
cat >"$T/huge.json" <<'EOF'
{"format":"arenaflow-graph","version":1,"name":"huge","tensors":[{"name":"x","kind":"input","bytes":64},{"name":"y","kind":"output","bytes":4294967296}],"nodes":[{"name":"n","op":"Relu","inputs":["x"],"outputs":["y"]}]}
EOF
req POST /v1/graphs --data-binary @"$T/huge.json"
expect 422 "$(stat -c %s "$T/huge.json")-byte graph with a 4 GiB tensor"
body_has max_arena_bytes "the refusal names max_arena_bytes"
stop

write_cfg "[limits]
max_body = 16M
max_plans_bytes = 1M"
start
wait_ready
got507=
for i in $(seq 1 20); do
    $PROBE gen chain $((500 + i)) "$T/c.json"
    req POST /v1/graphs --data-binary @"$T/c.json"
    [ "$CODE" = 507 ] && got507=$i && break
    expect 201 "chain $i under max_plans_bytes = 1M"
done
[ -n "$got507" ] || fail "max_plans_bytes = 1M never answered 507"
[ "$got507" -gt 1 ] || fail "max_plans_bytes = 1M refused even the first 500-node graph"
body_has max_plans_bytes "507 names max_plans_bytes"
ok "max_plans_bytes answered 507 at submission $got507"
stop

# ---- 7. overflow ---------------------------------------------------------------------------
write_cfg "[limits]
max_body = 16M
max_arena_bytes = 1125899906842624"
start
wait_ready
Q=4611686018427387904 # 2^62: three of them alive at once make an arena above 2^63
cat >"$T/big_arena.json" <<EOF
{"format":"arenaflow-graph","version":1,"name":"big","tensors":[{"name":"x","kind":"input","bytes":$Q},{"name":"a","bytes":$Q},{"name":"y","kind":"output","bytes":$Q}],"nodes":[{"name":"p","op":"Relu","inputs":["x"],"outputs":["a"]},{"name":"q","op":"Add","inputs":["x","a"],"outputs":["y"]}]}
EOF
req POST /v1/graphs --data-binary @"$T/big_arena.json"
grep -q '"arena_bytes":-' "$T/body" && fail "negative arena_bytes reported: $(head -c 300 "$T/body")"
[ "$CODE" = 400 ] || [ "$CODE" = 422 ] || fail "arena above 2^63: expected 400 or 422, got $CODE $(head -c 300 "$T/body")"
ok "arena above 2^63 refused with $CODE"
$PY - "$T/sum.json" <<'EOF'
import json, sys
n = 17000  # 17000 x 2^50 bytes: past 2^64 in all
t = [{"name": "x", "kind": "input", "bytes": 1 << 50}]
nodes = []
for i in range(n):
    t.append({"name": "t%d" % i, "bytes": 1 << 50})
    nodes.append({"name": "n%d" % i, "op": "Relu", "inputs": ["t%d" % (i - 1) if i else "x"],
                  "outputs": ["t%d" % i]})
t[-1]["kind"] = "output"
json.dump({"format": "arenaflow-graph", "version": 1, "name": "sum", "tensors": t,
           "nodes": nodes}, open(sys.argv[1], "w"))
EOF
req POST /v1/graphs --data-binary @"$T/sum.json"
expect 400 "tensor sizes adding up past 2^64"
body_has "2^63" "the overflow message"
stop

sanitizer_clean
echo "cli_daemon_limits: all $CHECKS checks passed"
