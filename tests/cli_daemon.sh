#!/usr/bin/env bash
# Integration test of arenaflowd: starts the daemon on a random loopback port (port 0, read back
# from its log) with a temporary state directory and exercises every endpoint and every error
# status: the curl examples of docs/api.md (each "curl ... # -> STATUS" line is run as written),
# malformed JSON, a cyclic graph, an oversize body, a truncated request, garbage, a client that
# disconnects mid-run, 429 on concurrent runs, SIGHUP with a good and a bad config, kill -9 +
# restart (stored graphs load, the same graph is a cache hit, torn temp files are cleaned), and a
# SIGTERM drain (in-flight run finishes with 200, new work on open connections gets 503, new
# connections are refused, exit status 0). /metrics is checked against the Prometheus text
# exposition format by a small parser below. Every wait is bounded.
set -u

. "$(dirname "$0")/daemon_lib.sh"

write_cfg() { # max_body max_runs [extra line]: this test's configurations
    cat >"$CFG" <<EOF
[server]
listen = 127.0.0.1:0
log_level = info
[limits]
max_body = $1
max_concurrent_runs = $2
max_rounds = 1000000
drain_timeout_ms = 60000
$3
EOF
}

# ---- the Prometheus text format checker ------------------------------------------------------
cat >"$T/promcheck.py" <<'EOF'
import re, sys
NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r'^(' + NAME + r')(\{(?:' + LABEL + r')(?:,' + LABEL + r')*,?\})?'
                    r' ([-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf|NaN))( -?[0-9]+)?$')
TYPES = {'counter', 'gauge', 'histogram', 'summary', 'untyped'}
text = sys.stdin.read()
errs, types, helps, seen, fam_done = [], {}, set(), set(), set()
buckets = {}
current = None
if not text.endswith('\n'):
    errs.append('exposition must end with a newline')
for n, line in enumerate(text.split('\n')[:-1], 1):
    if line.startswith('# HELP '):
        parts = line.split(' ', 3)
        if len(parts) < 4 or not re.fullmatch(NAME, parts[2]) or parts[2] in helps:
            errs.append(f'{n}: bad or repeated HELP: {line}')
        helps.add(parts[2])
        continue
    if line.startswith('# TYPE '):
        parts = line.split(' ')
        if len(parts) != 4 or parts[3] not in TYPES or parts[2] in types:
            errs.append(f'{n}: bad or repeated TYPE: {line}')
        elif parts[2] in fam_done:
            errs.append(f'{n}: TYPE after samples of {parts[2]}')
        types[parts[2]] = parts[3]
        if current and current != parts[2]:
            fam_done.add(current)
        current = parts[2]
        continue
    if line.startswith('#') or line == '':
        if line == '':
            errs.append(f'{n}: empty line')
        continue
    m = SAMPLE.match(line)
    if not m:
        errs.append(f'{n}: not a sample line: {line!r}')
        continue
    name, labels, value = m.group(1), m.group(2) or '', m.group(3)
    base = re.sub(r'_(bucket|sum|count)$', '', name)
    fam = name if name in types else base
    if fam not in types:
        errs.append(f'{n}: sample {name} has no TYPE')
    elif fam != current:
        errs.append(f'{n}: sample {name} outside its family block')
    elif types[fam] == 'histogram':
        if name.endswith('_bucket'):
            le = re.search(r'le="([^"]*)"', labels)
            if not le:
                errs.append(f'{n}: bucket without le')
            else:
                buckets.setdefault(fam, []).append((le.group(1), float(value)))
        elif not (name.endswith('_sum') or name.endswith('_count')):
            errs.append(f'{n}: {name} is not part of histogram {fam}')
        if name.endswith('_count'):
            b = buckets.get(fam, [])
            if not b or b[-1][0] != '+Inf' or b[-1][1] != float(value):
                errs.append(f'{n}: histogram {fam}: last bucket must be +Inf and equal _count')
            vals = [v for _, v in b]
            if vals != sorted(vals):
                errs.append(f'{n}: histogram {fam}: buckets not cumulative')
            les = [float(l) for l, _ in b]
            if les != sorted(les):
                errs.append(f'{n}: histogram {fam}: le not increasing')
    key = name + labels
    if key in seen:
        errs.append(f'{n}: duplicate series {key}')
    seen.add(key)
for want in sys.argv[1:]:
    if want not in types:
        errs.append(f'missing family {want}')
if errs:
    print('\n'.join(errs))
    sys.exit(1)
print(f'{len(seen)} series in {len(types)} families: valid')
EOF

# ---- 1. docs/api.md examples on a fresh daemon ----------------------------------------------
mkdir -p "$STATE"
write_cfg 64K 1 ""
start
wait_ready
cd "$SRC" || fail "no source dir"
ID=
n_doc=0
while IFS= read -r line; do
    want=$(sed -n 's/.*# -> \([0-9]*\)$/\1/p' <<<"$line")
    cmd=$(sed 's/ *# -> [0-9]*$//' <<<"$line")
    cmd=${cmd//\$AFD/$AFD}
    cmd=${cmd//\$ID/$ID}
    got=$(eval "$cmd -o $T/body -w '%{http_code}' --max-time 60")
    [ "$got" = "$want" ] || fail "docs/api.md example '$line': expected $want, got $got: $(head -c 300 "$T/body")"
    if [ -z "$ID" ] && [ "$got" = 201 ]; then
        ID=$(jget 'd["id"]')
    fi
    n_doc=$((n_doc + 1))
done < <(grep -E '^curl .*# -> [0-9]+$' "$SRC/docs/api.md")
[ "$n_doc" -ge 15 ] || fail "only $n_doc curl examples found in docs/api.md"
ok "$n_doc curl examples of docs/api.md answer as documented"

# ---- 2. submissions: miss, hit (reformatted), list, get, events ------------------------------
req POST /v1/graphs --data-binary @"$SRC/examples/diamond.json"
expect 201 "submit diamond"
ID=$(jget 'd["id"]')
[ "$(jget 'd["cache"]')" = miss ] || fail "first submission is not a miss"
[ "$(jget 'd["report"]["arena_bytes"] <= d["report"]["naive_bytes"] and d["report"]["arena_bytes"] > 0')" = True ] ||
    fail "report arena bytes out of range"
$PY -c "import json; print(json.dumps(json.load(open('$SRC/examples/diamond.json')), indent=7, sort_keys=True))" >"$T/diamond2.json"
req POST /v1/graphs --data-binary @"$T/diamond2.json"
expect 200 "same graph, other formatting"
[ "$(jget 'd["cache"]')" = hit ] && [ "$(jget 'd["id"]')" = "$ID" ] || fail "reformatted graph is not a cache hit with the same id"
ok "cache hit across formatting, same id $ID"
req GET /v1/graphs
expect 200 "list"
[ "$(jget 'd["count"]')" = 1 ] && [ "$(jget 'd["graphs"][0]["id"]')" = "$ID" ] || fail "list does not hold the graph"
req GET "/v1/graphs/$ID"
expect 200 "get"
[ "$(jget 'd["nodes"]')" = 7 ] || fail "get: wrong node count"
req GET "/v1/graphs/$ID/events.csv"
expect 200 "events.csv"
head -n 1 "$T/body" | grep -qx 'event_id,event_type,tensor_name,buffer_index,op_id,offset,bytes' || fail "events.csv header"
[ "$(grep -c ',EXEC,' "$T/body")" = 7 ] || fail "events.csv: expected 7 EXEC rows"
ok "events.csv has the header and one EXEC per node"
req GET "/v1/graphs/$ID/memory.svg"
if [ "$CODE" = 200 ]; then
    grep -q '<svg' "$T/body" || fail "memory.svg is not SVG"
    ok "memory.svg -> 200 svg"
else
    expect 501 "memory.svg (renderer not built)"
fi

# ONNX upload with input dims in the query (skipped when Debian's python3-onnx is missing).
if /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
    /usr/bin/python3 - "$T/tiny.onnx" <<'PYEOF'
import sys
import onnx
from onnx import TensorProto, helper
x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 64])
y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 64])
nodes = [helper.make_node("Relu", ["X"], ["h"], name="relu"),
         helper.make_node("Add", ["h", "X"], ["Y"], name="add")]
m = helper.make_model(helper.make_graph(nodes, "tiny", [x], [y]),
                      opset_imports=[helper.make_opsetid("", 13)])
onnx.save(m, sys.argv[1])
PYEOF
    req POST "/v1/graphs?input=X=2,64" -H 'Content-Type: application/onnx' --data-binary @"$T/tiny.onnx"
    if [ "$CODE" = 501 ]; then
        ok "ONNX upload -> 501 (importer not built)"
    else
        expect 201 "ONNX upload with ?input=X=2,64"
        [ "$(jget 'd["nodes"]')" = 2 ] || fail "ONNX graph: wrong node count"
        OID1=$(jget 'd["id"]')
        req POST "/v1/graphs" -H 'Content-Type: application/onnx' --data-binary @"$T/tiny.onnx"
        expect 400 "ONNX upload without the dims of a symbolic input"
        body_has "unknown dims" "ONNX missing dims message"
        body_has "give them with ?input=X=" "ONNX missing dims message names the query parameter"
        req POST "/v1/graphs?format=onnx&input=N=3" --data-binary @"$T/tiny.onnx"
        expect 201 "ONNX upload, symbolic dim set by name (?format=onnx&input=N=3)"
        OID2=$(jget 'd["id"]')
        [ "$OID1" != "$OID2" ] || fail "different dims gave the same id"
        req DELETE "/v1/graphs/$OID1"
        expect 200 "delete the first ONNX graph"
        req DELETE "/v1/graphs/$OID2"
        expect 200 "delete the second ONNX graph"
    fi
else
    echo "skip: ONNX upload (no python3-onnx to build a model)"
fi

# ---- 3. bad input --------------------------------------------------------------------------
printf '{"format": "arenaflow-graph", "version": 1, "tensors": [' >"$T/trunc.json"
req POST /v1/graphs --data-binary @"$T/trunc.json"
expect 400 "malformed JSON"
body_has "line" "malformed JSON message"
cat >"$T/cycle.json" <<'EOF'
{"format": "arenaflow-graph", "version": 1, "name": "cyclic",
 "tensors": [{"name": "x", "kind": "input", "bytes": 256}, {"name": "a", "bytes": 1024},
             {"name": "b", "bytes": 1024}, {"name": "y", "kind": "output", "bytes": 256}],
 "nodes": [{"name": "n1", "op": "Add", "inputs": ["x", "b"], "outputs": ["a"]},
           {"name": "n2", "op": "Relu", "inputs": ["a"], "outputs": ["b"]},
           {"name": "n3", "op": "Relu", "inputs": ["a"], "outputs": ["y"]}]}
EOF
req POST /v1/graphs --data-binary @"$T/cycle.json"
expect 400 "cyclic graph"
body_has "cycle" "cyclic graph message"
body_has "n1" "cyclic graph message names a node"
req POST /v1/graphs --data-binary ''
expect 400 "empty body"
head -c 100000 /dev/zero | tr '\0' ' ' >"$T/big.json"
req POST /v1/graphs --data-binary @"$T/big.json"
expect 413 "oversize body (100000 > max_body 64K)"
req POST "/v1/graphs/$ID/run" -d '{"rounds": 2, "bogus": 1}'
expect 400 "run with an unknown key"
req POST "/v1/graphs/$ID/run" -d '{"rounds": "many"}'
expect 400 "run with a string rounds"
req GET /v1/graphs/0123456789abcdef0123456789abcdef/events.csv
expect 404 "events of an unknown id"
req POST /v1/graphs/0123456789abcdef0123456789abcdef/run -d '{}'
expect 404 "run of an unknown id"
req PATCH "/v1/graphs/$ID"
expect 405 "PATCH a graph"
curl -s -D "$T/hdr" -o /dev/null -X PUT "$AFD/v1/graphs/$ID/run"
grep -qi '^allow: POST' "$T/hdr" || fail "405 without Allow header"
ok "405 carries Allow"

# Truncated request (body shorter than Content-Length, then close), garbage, early close.
$PY - "$PORT" <<'EOF' || fail "truncated/garbage requests"
import socket, sys
port = int(sys.argv[1])
def conn():
    return socket.create_connection(("127.0.0.1", port), timeout=10)
s = conn()
s.sendall(b"POST /v1/graphs HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n{\"format\": \"arena")
s.close()
s = conn()
s.sendall(b"GET /v1/gra")
s.close()
s = conn()
s.sendall(b"\x16\x03\x01garbage that is not http\r\n\r\n")
data = s.recv(4096)
s.close()
assert data == b"" or data.startswith(b"HTTP/1.1 400"), data[:80]
EOF
req GET /healthz
expect 200 "healthz after truncated and garbage requests"

# ---- 4. runs: verify, latencies, 429, client disconnect -------------------------------------
req POST "/v1/graphs/$ID/run" -d '{"rounds": 10, "verify": true}'
expect 200 "verify run"
[ "$(jget 'd["rounds_done"]')" = 10 ] || fail "verify run: rounds_done"
[ "$(jget 'd["corrupted_tensors"]')" = 0 ] || fail "verify run found corruption"
[ "$(jget 'd["latency_us"]["p50"] <= d["latency_us"]["p99"] <= d["latency_us"]["max"]')" = True ] || fail "percentiles not ordered"
RPS=$(jget 'd["rounds_per_s"]')
LONG=$($PY -c "print(max(20, int(float('$RPS') * 1.5)))") # about 1.5 s of verify rounds
req POST "/v1/graphs/$ID/run" -d '{"rounds": 200}'
expect 200 "fast run"
[ "$(jget 'd["rounds_done"]')" = 200 ] || fail "fast run: rounds_done"

curl -s -o "$T/long.out" -w '%{http_code}' --max-time 120 -X POST -d "{\"rounds\": $LONG, \"verify\": true}" "$AFD/v1/graphs/$ID/run" >"$T/long.code" &
CURL=$!
for _ in $(seq 1 200); do
    [ "$(metric arenaflowd_runs_in_flight)" = 1 ] && break
    sleep 0.02
done
req POST "/v1/graphs/$ID/run" -d '{"rounds": 1}'
expect 429 "second run while max_concurrent_runs=1 is busy"
wait "$CURL"
[ "$(cat "$T/long.code")" = 200 ] || fail "long run: $(cat "$T/long.code")"
ok "the long run ($LONG rounds) finished with 200"

OKRUNS=$(metric 'arenaflowd_runs_total{outcome="ok"}')
curl -s -o /dev/null --max-time 0.3 -X POST -d "{\"rounds\": $LONG, \"verify\": true}" "$AFD/v1/graphs/$ID/run"
[ $? = 28 ] || fail "client disconnect: curl did not time out"
# The run goes on without its client (h2o notices the closed socket when the answer is written);
# it must finish, be counted, and leave the daemon healthy.
for _ in $(seq 1 600); do
    [ "$(metric 'arenaflowd_runs_total{outcome="ok"}')" = $((OKRUNS + 1)) ] && break
    sleep 0.05
done
[ "$(metric 'arenaflowd_runs_total{outcome="ok"}')" = $((OKRUNS + 1)) ] || fail "run of the departed client not finished/counted"
ok "run of a client that disconnected mid-run finished and was counted"
req GET /readyz
expect 200 "readyz after a client left mid-run"

# ---- 5. /metrics ---------------------------------------------------------------------------
req GET /metrics
expect 200 "metrics"
$PY "$T/promcheck.py" arenaflowd_http_requests_total arenaflowd_run_round_seconds \
    arenaflowd_rounds_executed_total arenaflowd_plan_cache_hits_total \
    arenaflowd_plan_cache_misses_total arenaflowd_plan_cache_size \
    arenaflowd_pool_reserved_bytes arenaflowd_pool_allocated_bytes \
    arenaflowd_pool_peak_requested_bytes <"$T/body" || fail "/metrics is not valid Prometheus text"
ok "/metrics parses as Prometheus text"
for s in 200 201 400 404 405 429; do
    grep -q "status=\"$s\"" "$T/body" || fail "/metrics lacks status $s"
done
[ "$(awk '$1 == "arenaflowd_plan_cache_hits_total" {print $2}' "$T/body")" -ge 1 ] || fail "no cache hit counted"
[ "$(awk '$1 == "arenaflowd_rounds_executed_total" {print $2}' "$T/body")" -ge $((210 + 2 * LONG)) ] || fail "rounds not counted"
[ "$(awk '$1 == "arenaflowd_pool_peak_requested_bytes" {print $2}' "$T/body")" -gt 0 ] || fail "pool peak is 0"
ok "metrics count statuses, hits, rounds and pool bytes"
echo "nonsense{" | $PY "$T/promcheck.py" >/dev/null 2>&1 && fail "promcheck accepts garbage"
printf '# TYPE h histogram\nh_bucket{le="1"} 5\nh_bucket{le="+Inf"} 3\nh_sum 1\nh_count 3\n' |
    $PY "$T/promcheck.py" >/dev/null 2>&1 && fail "promcheck accepts a non-cumulative histogram"
ok "promcheck rejects malformed exposition"

# ---- 6. SIGHUP: good config applies, bad config is refused and the old one stays ------------
write_cfg 1M 1 ""
kill -HUP "$PID"
wait_log "configuration reloaded" "SIGHUP good config"
req POST /v1/graphs --data-binary @"$T/big.json"
[ "$CODE" = 400 ] || fail "after reload to max_body=1M the 100000-byte body should reach the parser (400), got $CODE"
ok "good SIGHUP raised max_body (100000 bytes now parsed: 400)"
write_cfg 1K 1 "max_concurrent_runs = lots"
kill -HUP "$PID"
wait_log "reload failed, keeping the old configuration" "SIGHUP bad config"
grep "reload failed" "$LOG" | grep -q "max_concurrent_runs" || fail "bad reload log does not name the key"
req POST /v1/graphs --data-binary @"$T/big.json"
expect 400 "after a bad SIGHUP max_body is still 1M"
kill -0 "$PID" || fail "daemon died on a bad config"

# ---- 7. kill -9 and restart: stored graphs survive ------------------------------------------
req POST /v1/graphs --data-binary @"$SRC/examples/mlp.json"
expect 201 "submit mlp"
ID2=$(jget 'd["id"]')
ARENA2=$(jget 'd["arena_bytes"]')
[ -f "$STATE/graphs/$ID2.json" ] || fail "mlp not in the state dir"
sanitizer_clean
{
    kill -9 "$PID"
    wait "$PID"
} 2>/dev/null
PID=
echo '{"format": "arenaflowd-graph/1", "id": "torn' >"$STATE/graphs/ffffffffffffffffffffffffffffffff.json.tmp"
echo 'not json' >"$STATE/graphs/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee.json"
write_cfg 1M 1 ""
start
wait_ready
req GET /v1/graphs
expect 200 "list after kill -9"
[ "$(jget 'sorted(g["id"] for g in d["graphs"]) == sorted(["'"$ID"'", "'"$ID2"'"])')" = True ] || fail "graphs lost across kill -9: $(cat "$T/body")"
ok "both graphs reloaded after kill -9"
grep -q "2 plans restored from disk, 0 re-planned" "$LOG" || fail "plans were not restored from the plan files: $(grep 'loaded' "$LOG")"
[ "$(metric arenaflowd_plan_cache_restored_total)" = 2 ] || fail "restored plans not counted"
ok "both plans restored from their plan files (no re-planning)"
req POST /v1/graphs --data-binary @"$SRC/examples/mlp.json"
expect 200 "resubmit mlp after restart"
[ "$(jget 'd["cache"]')" = hit ] && [ "$(jget 'd["id"]')" = "$ID2" ] && [ "$(jget 'd["arena_bytes"]')" = "$ARENA2" ] || fail "not a cache hit with the same plan after restart"
ok "same graph after restart is a cache hit with the same arena"
[ ! -e "$STATE/graphs/ffffffffffffffffffffffffffffffff.json.tmp" ] || fail "torn temp file not removed"
[ -e "$STATE/graphs/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee.json.corrupt" ] || fail "corrupt file not set aside"
grep -q "cannot load stored graph" "$LOG" || fail "corrupt file not logged"
ok "torn temp file removed, corrupt file kept as .corrupt and logged"
# A plan file damaged on disk is rejected (checksum) and the graph re-planned, never trusted.
sanitizer_clean
{
    kill -9 "$PID"
    wait "$PID"
} 2>/dev/null
PID=
NPLANS=0
for f in "$STATE"/plans/*.afplan; do # damage every plan file (one byte each)
    [ -f "$f" ] || continue
    printf 'X' | dd of="$f" bs=1 seek=40 conv=notrunc 2>/dev/null
    NPLANS=$((NPLANS + 1))
done
[ "$NPLANS" -ge 2 ] || fail "expected plan files in $STATE/plans"
start
wait_ready
grep -q "0 plans restored from disk, 2 re-planned, $NPLANS plan files rejected" "$LOG" ||
    fail "damaged plan files not rejected: $(grep 'loaded' "$LOG")"
req GET /v1/graphs
[ "$(jget 'd["count"]')" = 2 ] || fail "graphs lost after a damaged plan file"
req POST /v1/graphs --data-binary @"$SRC/examples/mlp.json"
expect 200 "resubmit mlp after a damaged plan file"
[ "$(jget 'd["arena_bytes"]')" = "$ARENA2" ] || fail "re-planned mlp has another arena"
ok "damaged plan files rejected and re-planned; graphs intact"
req DELETE "/v1/graphs/$ID2"
expect 200 "delete mlp"
[ ! -e "$STATE/graphs/$ID2.json" ] || fail "deleted graph still in the state dir"
req GET "/v1/graphs/$ID2"
expect 404 "get deleted graph"

# ---- 8. SIGTERM drain -----------------------------------------------------------------------
$PY - "$PORT" "$PID" "$ID" "$LONG" <<'EOF' || fail "SIGTERM drain"
import http.client, json, os, signal, socket, sys, threading, time
port, pid, gid, rounds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
out = {}
def runner():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", f"/v1/graphs/{gid}/run", body=json.dumps({"rounds": rounds, "verify": True}))
    r = c.getresponse()
    out["run"] = (r.status, json.loads(r.read()))
def get(c, method, path, body=None):
    c.request(method, path, body=body)
    r = c.getresponse()
    r.read()
    return r.status
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
assert get(c, "GET", "/readyz") == 200
t = threading.Thread(target=runner)
t.start()
for _ in range(200):
    c.request("GET", "/metrics")
    m = c.getresponse().read().decode()
    if "arenaflowd_runs_in_flight 1" in m:
        break
    time.sleep(0.02)
else:
    sys.exit("run never started")
os.kill(pid, signal.SIGTERM)
time.sleep(0.3)
assert get(c, "GET", "/readyz") == 503, "readyz while draining"
assert get(c, "POST", "/v1/graphs", body="{}") == 503, "submit while draining"
assert get(c, "POST", f"/v1/graphs/{gid}/run", body="{}") == 503, "run while draining"
try:
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    sys.exit("new connection accepted while draining")
except OSError:
    pass
t.join(120)
status, body = out.get("run", (0, {}))
assert status == 200 and body["rounds_done"] == rounds, (status, body)
print("drain: in-flight run finished, 503 on open connection, listener closed")
EOF
ok "SIGTERM: in-flight run finished with 200, 503 for new work, connections refused"
for _ in $(seq 1 400); do
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
done
kill -0 "$PID" 2>/dev/null && fail "daemon still running 20 s after the drain"
wait "$PID"
RC=$?
PID=
[ "$RC" = 0 ] || fail "daemon exit status $RC after SIGTERM"
grep -q "drained in" "$LOG" || fail "no drain log line"
ok "daemon exited 0 after draining"

# ---- 9. SIGTERM with a run longer than drain_timeout_ms: the run stops, answers 503, exit 0 --
write_cfg 1M 1 ""
sed -i 's/drain_timeout_ms = 60000/drain_timeout_ms = 200/' "$CFG"
start
wait_ready
curl -s -o "$T/cut.out" -w '%{http_code}' --max-time 120 -X POST -d "{\"rounds\": $((LONG * 20)), \"verify\": true}" "$AFD/v1/graphs/$ID/run" >"$T/cut.code" &
CURL=$!
for _ in $(seq 1 200); do
    [ "$(metric arenaflowd_runs_in_flight)" = 1 ] && break
    sleep 0.02
done
kill -TERM "$PID"
wait "$CURL"
[ "$(cat "$T/cut.code")" = 503 ] || fail "run cut by the drain timeout: $(cat "$T/cut.code") $(cat "$T/cut.out")"
grep -q "stopped after" "$T/cut.out" || fail "cut run message: $(cat "$T/cut.out")"
ok "drain timeout: the long run stopped after its current round and answered 503"
wait "$PID"
RC=$?
PID=
[ "$RC" = 0 ] || fail "exit status $RC after a drain timeout"
grep -q "drain timeout" "$LOG" || fail "no drain timeout log line"
ok "daemon exited 0 after the drain timeout"

sanitizer_clean
echo "cli_daemon: all $CHECKS checks passed"
