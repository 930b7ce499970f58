#!/usr/bin/env bash
# SIGHUP applies what configs/arenaflowd.ini says it applies (issue 16, item 8): fast_kernels
# and [executor] (the next runs get new executors), plan_cache_bytes (the plan cache's LRU
# bound), the limits, and the tokens file; a bad file keeps everything as it was; a SIGHUP storm
# leaves the daemon serving. Every wait is bounded.
. "$(dirname "$0")/daemon_lib.sh"
mkdir -p "$STATE"

# A graph of an op the "real" kernels do not know: "empty" runs it, "real" refuses it.
cat >"$T/foo.json" <<'EOF'
{"format":"arenaflow-graph","version":1,"name":"foo","tensors":[{"name":"x","kind":"input","bytes":4096},{"name":"y","kind":"output","bytes":4096}],"nodes":[{"name":"n","op":"FooBar","inputs":["x"],"outputs":["y"]}]}
EOF
base="[limits]
max_body = 16M"
write_cfg "$base
[runs]
fast_kernels = empty
[executor]
threads = 1"
start
wait_ready
req POST /v1/graphs --data-binary @"$T/foo.json"
expect 201 "submit a FooBar graph"
ID=$(jget 'd["id"]')
req POST "/v1/graphs/$ID/run" -d '{"rounds": 3}'
expect 200 "run with fast_kernels = empty"
wait_log "executor (empty kernels) started with 1 threads" "first executor"

# ---- fast_kernels and [executor] -----------------------------------------------------------
write_cfg "$base
[runs]
fast_kernels = real
[executor]
threads = 2"
hup
[ "$HUP_OK" = 1 ] || fail "SIGHUP to fast_kernels = real refused"
req POST "/v1/graphs/$ID/run" -d '{"rounds": 1}'
expect 400 "run after SIGHUP to fast_kernels = real (FooBar has no real kernel)"
write_cfg "$base
[runs]
fast_kernels = empty
[executor]
threads = 2"
hup
[ "$HUP_OK" = 1 ] || fail "second SIGHUP refused"
req POST "/v1/graphs/$ID/run" -d '{"rounds": 2}'
expect 200 "run after SIGHUP back to empty"
[ "$(jget 'd["kernels"]')" = empty ] || fail "run did not report the empty kernels"
wait_log "executor (empty kernels) started with 2 threads" "[executor] threads applied" 20
ok "fast_kernels and [executor] threads applied by SIGHUP"
req POST "/v1/graphs/$ID/run" -d '{"rounds": 2, "verify": true}'
expect 200 "verify run on the new generation"
[ "$(metric 'arenaflowd_executor_generations_total')" -ge 2 ] || fail "executor generations not counted"

# ---- plan_cache_bytes ------------------------------------------------------------------------
write_cfg "$base
[limits]
plan_cache_bytes = 1M"
hup
[ "$HUP_OK" = 1 ] || fail "SIGHUP plan_cache_bytes refused"
for i in 1 2 3 4; do
    $PROBE gen chain $((2000 + i)) "$T/c.json"
    req POST /v1/graphs --data-binary @"$T/c.json"
    expect 201 "chain $i"
    CID=$(jget 'd["id"]')
    req DELETE "/v1/graphs/$CID"
    expect 200 "delete chain $i (its plan stays in the cache until the LRU bound)"
done
EV=$(metric 'arenaflowd_plan_cache_evictions_total')
[ "${EV:-0}" -ge 1 ] || fail "plan_cache_bytes = 1M after SIGHUP evicted nothing"
ok "plan_cache_bytes applied by SIGHUP ($EV evictions)"

# ---- tokens ---------------------------------------------------------------------------------
printf 'admin %s\nread %s\n' aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1 rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr1 >"$T/tokens"
chmod 600 "$T/tokens"
write_cfg "$base
[auth]
tokens_file = $T/tokens"
hup
[ "$HUP_OK" = 1 ] || fail "SIGHUP with a tokens file refused"
req GET /v1/graphs
expect 401 "list without a token after SIGHUP enabled auth"
req GET /v1/graphs -H "Authorization: Bearer rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr1"
expect 200 "list with the read token"
printf 'admin %s\n' aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2 >"$T/tokens"
hup
[ "$HUP_OK" = 1 ] || fail "token rotation refused"
req GET /v1/graphs -H "Authorization: Bearer rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr1"
expect 401 "the rotated-out token"
req GET /v1/graphs -H "Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2"
expect 200 "the new token"
printf 'admin short\n' >"$T/tokens"
hup
[ "$HUP_OK" = 0 ] || fail "a tokens file with a short token was accepted"
req GET /v1/graphs -H "Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2"
expect 200 "the old tokens stay after a bad tokens file"

# ---- a SIGHUP storm ---------------------------------------------------------------------------
printf 'admin %s\n' aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2 >"$T/tokens"
for i in $(seq 1 $((200 / SCALE))); do
    kill -HUP "$PID"
    [ $((i % 20)) = 0 ] && curl -s -o /dev/null --max-time 5 "$AFD/healthz"
done
sleep 0.5
req POST "/v1/graphs/$ID/run" -d '{"rounds": 5}' -H "Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2"
expect 200 "run after $((200 / SCALE)) SIGHUPs"
kill -0 "$PID" || fail "daemon died in the SIGHUP storm"
ok "SIGHUP storm survived"
stop
echo "cli_daemon_reload: all $CHECKS checks passed"
