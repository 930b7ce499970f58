#!/usr/bin/env bash
# Scale-out on standard parts (issue 19): three arenaflowd replicas share one read-only model
# repository behind HAProxy (deploy/haproxy.cfg with the ports replaced), health-checked on
# /v2/health/ready; bench_oip sends a constant rate of JSON and binary inferences through HAProxy
# while one replica is killed with SIGKILL mid-run. Every 200 must carry the correct result (the
# bytes of the reference answer); answers that are not 200 are counted and printed, and must stay
# a small share (at most 2% of the requests: the ones in flight on the killed replica that
# HAProxy could not retry). After the kill, the two replicas left serve alone.
. "$(dirname "$0")/daemon_lib.sh"
HAPROXY=$(command -v haproxy || true)
BENCH=$BIN/bench_oip
MODEL=/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d/model.onnx
[ -n "$HAPROXY" ] || { echo "SKIP: haproxy is not installed (scripts/deps.sh)"; exit 0; }
[ -x "$BENCH" ] || { echo "SKIP: bench_oip is not built (AF_BUILD_BENCH)"; exit 0; }
[ -f "$MODEL" ] || { echo "SKIP: $MODEL missing (libonnx-testdata)"; exit 0; }

REPO=$T/repo
mkdir -p "$REPO/conv/1"
cp "$MODEL" "$REPO/conv/1/model.onnx"
chmod -R a-w "$REPO" # shared read-only
trap 'for p in $PIDS; do kill -9 "$p" 2>/dev/null; done; chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT

declare -a RPID RPORT
for i in 1 2 3; do
    "$DAEMON" --listen 127.0.0.1:0 --model-repository "$REPO" 2>"$T/r$i.log" &
    RPID[$i]=$!
    PIDS="$PIDS ${RPID[$i]}"
done
for i in 1 2 3; do
    for _ in $(seq 1 400); do
        RPORT[$i]=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$T/r$i.log")
        [ -n "${RPORT[$i]}" ] && grep -q "model repository .* loaded" "$T/r$i.log" && break
        sleep 0.025
    done
    [ -n "${RPORT[$i]}" ] || fail "replica $i did not start: $(tail -n 5 "$T/r$i.log")"
done
ok "3 replicas on ports ${RPORT[1]} ${RPORT[2]} ${RPORT[3]}"

FRONT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -e "s/127.0.0.1:8000/127.0.0.1:$FRONT/" -e "s/127.0.0.1:8001/127.0.0.1:${RPORT[1]}/" \
    -e "s/127.0.0.1:8002/127.0.0.1:${RPORT[2]}/" -e "s/127.0.0.1:8003/127.0.0.1:${RPORT[3]}/" \
    "$SRC/deploy/haproxy.cfg" >"$T/haproxy.cfg"
"$HAPROXY" -c -f "$T/haproxy.cfg" >/dev/null || fail "haproxy rejects deploy/haproxy.cfg"
"$HAPROXY" -db -f "$T/haproxy.cfg" >"$T/haproxy.log" 2>&1 &
HPID=$!
PIDS="$PIDS $HPID"
AFD=http://127.0.0.1:$FRONT
wait_v2_ready "through HAProxy"
sleep 1 # every server's health check has passed twice (rise 2, inter 200 ms)

RATE=$((200 / SCALE))
"$BENCH" --addr "127.0.0.1:$FRONT" --model conv --rates "$RATE" --duration 6 --warmup 0 \
    --health-pct 0 --connections 8 >"$T/bench.txt" 2>&1 &
BPID=$!
PIDS="$PIDS $BPID"
sleep 2.5
kill -9 "${RPID[2]}"
wait "${RPID[2]}" 2>/dev/null
ok "replica 2 (port ${RPORT[2]}) killed with SIGKILL 2.5 s into a 6 s run at $RATE req/s"
wait "$BPID" || true
cat "$T/bench.txt"
grep -q "^ *$RATE  infer json" "$T/bench.txt" || fail "bench_oip did not run: $(cat "$T/bench.txt")"
read -r total wrong errors < <(awk '/infer (json|binary)/ {n += $4; e += $10; w += $11}
    END {print n, w, e}' "$T/bench.txt")
answers=$(grep "answers:" "$T/bench.txt" | sed 's/^ *answers: *//')
[ "$total" -gt $((RATE * 4)) ] || fail "only $total requests were answered"
[ "$wrong" = 0 ] || fail "$wrong answers with status 200 carried a wrong result"
ok "$total inference requests through HAProxy, every 200 byte-identical to the reference answer"
[ $((errors * 50)) -le "$total" ] || fail "$errors of $total requests failed (> 2%): $answers"
ok "$errors of $total requests not answered 200 ($answers): in flight on the killed replica"

served=
for i in 1 3; do
    n=$(curl -s --max-time 10 "http://127.0.0.1:${RPORT[$i]}/v2/models/conv/stats" |
        $PY -c 'import json,sys; print(json.load(sys.stdin)["model_stats"][0]["inference_count"])')
    served="$served r$i:$n"
done
ok "inferences served by the survivors:$served (the rest of the $total, and the 2 reference ones, by r2 before its death)"

# the survivors serve alone, the dead one is out of the rotation
for _ in 1 2 3 4 5 6; do
    req POST /v2/models/conv/infer -H 'Content-Type: application/json' --data-binary @/dev/null
    [ "$CODE" = 400 ] || fail "a request after the kill answered $CODE, not the model's 400"
done
ok "6 requests after the kill answered by the 2 replicas left (400: empty body, from arenaflowd)"
kill "${RPID[1]}" "${RPID[3]}" "$HPID"
wait "${RPID[1]}" "${RPID[3]}" "$HPID" 2>/dev/null
echo "PASS: $CHECKS checks"
