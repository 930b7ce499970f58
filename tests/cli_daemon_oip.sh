#!/usr/bin/env bash
# arenaflowd's Open Inference Protocol (/v2, docs/serve.md) on loopback: a model repository
# written here (Identity models of every datatype, the spec examples' "mymodel" in two versions,
# two real models with weights from the ONNX backend test data), then
#   - golden request/response pairs after the specification's examples, byte-for-byte;
#   - JSON (flat and nested) and binary round trips of every datatype, bit-exact (BYTES too:
#     ONNX STRING models through Identity and through Reshape/Gather/Concat/Transpose);
#   - malformed requests: 400 / 404 / 405 with {"error": "..."};
#   - real models: the daemon's outputs equal `arenaflow run`'s on the same input, same kernels,
#     and agree with the test data's expected outputs and with ONNX Runtime (where installed);
#   - symbolic dims: one plan per concrete shape, bounded ([models] max_shapes), LRU evictions;
#   - the repository API: index, unload (404 after), load (200 after), a failing load (400);
#   - v1 still answers beside v2.
# Needs /usr/bin/python3 with numpy and onnx (python3-numpy, python3-onnx); skipped without.
. "$(dirname "$0")/daemon_lib.sh"
OPY=/usr/bin/python3
CHECK="$OPY $SRC/tests/oip_check.py"
if ! $OPY -c "import numpy, onnx" 2>/dev/null; then
    echo "SKIP: /usr/bin/python3 lacks numpy or onnx"
    exit 0
fi
DATA=/usr/share/libonnx-testdata/data/pytorch-converted
REPO=$T/repo
$CHECK models "$REPO" || fail "cannot write the test models"
REAL=
for m in Conv2d Linear; do
    if [ -f "$DATA/test_$m/model.onnx" ]; then
        mkdir -p "$REPO/real_$m/1"
        cp "$DATA/test_$m/model.onnx" "$REPO/real_$m/1/"
        REAL="$REAL $m"
    fi
done
mkdir -p "$REPO/broken/1"
echo "not a model" >"$REPO/broken/1/model.onnx"

write_cfg "[models]
max_shapes = 3
loop_max_us = 1000000"
start --model-repository "$REPO"
wait_ready
wait_v2_ready "once the repository is in"
KERNELS=$(sed -n 's|.*model repository .*: loading with the \([a-z]*\) kernels.*|\1|p' "$LOG")
[ -n "$KERNELS" ] || fail "the log does not name the models' kernel set"
ok "models run on the $KERNELS kernels"

$CHECK golden "$PORT" || fail "golden pairs"
$CHECK roundtrip "$PORT" || fail "round trips"
$CHECK malformed "$PORT" || fail "malformed requests"
$CHECK shapes "$PORT" || fail "symbolic dims"
planned=$(grep -c "model dyn version 1: planned for" "$LOG")
back=$(grep -c "model dyn version 1: plan restored for" "$LOG")
evicted=$(grep -c "model dyn: shape .* evicted" "$LOG")
# (at most 6 planned: N=2 may restore dyn_fixed's plan, the same graph)
[ "$planned" -le 6 ] && [ $((planned + back)) -ge 7 ] && [ "$back" -ge 1 ] && [ "$evicted" -ge 4 ] ||
    fail "dyn: $planned plans, $back restored, $evicted evictions"
ok "dyn: 9 requests of 6 shapes (max_shapes 3): $planned planned, $back evicted ones restored from model_plans, $evicted evictions"

# instances: two sessions of inst2, requests spread over both
$CHECK instances "$PORT" || fail "instances"
r0=$(metric 'arenaflowd_model_instance_rounds_total{model="inst2",version="1",instance="0"}')
r1=$(metric 'arenaflowd_model_instance_rounds_total{model="inst2",version="1",instance="1"}')
[ "${r0:-0}" -ge 1 ] && [ "${r1:-0}" -ge 1 ] && [ $((r0 + r1)) -eq 24 ] ||
    fail "inst2: rounds per instance ${r0:-} + ${r1:-}, want both > 0 and 24 in all"
ok "inst2: 24 rounds spread over its 2 instances ($r0 + $r1)"

# dynamic batching
$CHECK batching "$PORT" || fail "dynamic batching"
nb=$(metric 'arenaflowd_model_batches_total')
nr=$(metric 'arenaflowd_model_batched_requests_total')
[ "${nb:-0}" -ge 1 ] && [ "${nr:-0}" -gt "${nb:-0}" ] ||
    fail "/metrics: ${nb:-} batches of ${nr:-} requests"
ok "/metrics: $nr requests in $nb batches"
# fuse = auto (the default) is on with the real kernels: MatMul + bias Add + Relu is one node
case $KERNELS in real | onednn) fused=2 ;; *) fused=0 ;; esac
grep -q "model bat_ref version 1: \(planned\|plan restored\) for .*, $fused nodes fused)" "$LOG" ||
    fail "bat_ref (MatMul + Add + Relu) not planned with $fused nodes fused on the $KERNELS kernels"
ok "bat_ref: served with $fused nodes fused (fuse = auto, $KERNELS kernels), answers as unbatched"
req GET /v2/repository/index
body_has '"name":"bat_bad","state":"UNAVAILABLE","reason":"version 1: ' "bat_bad is unavailable"
body_has 'max_batch_size needs a batch axis' "bat_bad: the reason names the batch axis"
body_has '"name":"strings_cast","state":"UNAVAILABLE"' "Cast from strings is unavailable"
$PY -c "import json,sys; r=[m for m in json.load(open('$T/body')) if m['name']=='strings_cast'][0]['reason']; print(r)" >"$T/why"
grep -q "(Cast)" "$T/why" && grep -q "dtype string" "$T/why" || fail "strings_cast: the reason does not name the op and the dtype: $(cat "$T/why")"
ok "strings_cast: unavailable, $(head -c 160 "$T/why")"
# BYTES served: the strings model against numpy and against `arenaflow run` on the same input
arenaflow run "$REPO/strings/1/model.onnx" --input s="$T/strings_s.pb" --output-dir "$T/run_strings" >/dev/null ||
    fail "arenaflow run on the strings model"
$CHECK bytes "$PORT" "$T/run_strings" || fail "BYTES"

for m in $REAL; do
    out=$T/run_$m
    mkdir -p "$out"
    arenaflow run "$DATA/test_$m/model.onnx" --kernels "$KERNELS" \
        --input "0=$DATA/test_$m/test_data_set_0/input_0.pb" --output-dir "$out" >/dev/null ||
        fail "arenaflow run test_$m"
    npy=$(ls "$out"/*.npy | head -n 1)
    $CHECK compare "$PORT" "real_$m" "$DATA/test_$m/test_data_set_0" "$npy" "$out/d" ||
        fail "real model $m differs from arenaflow run"
    if command -v node >/dev/null && node -e "require('${AF_ORT_DIR:-/tmp/ortnpm/node_modules}/onnxruntime-node')" 2>/dev/null; then
        if node "$SRC/tests/oip_ort.js" "$DATA/test_$m/model.onnx" "$out/d.in.raw" \
            "$(cat "$out/d.dims")" "$out/d.ort.raw" 2>"$out/ort.err"; then
            $CHECK ortcmp "$out/d.served.raw" "$out/d.ort.raw" ||
                fail "real model $m differs from ONNX Runtime"
        elif grep -q "Could not find an implementation" "$out/ort.err"; then
            echo "note: ONNX Runtime cannot run test_$m ($(head -c 120 "$out/ort.err")): not compared"
        else
            fail "ONNX Runtime failed on test_$m: $(head -c 300 "$out/ort.err")"
        fi
    else
        echo "note: onnxruntime-node not found: the ONNX Runtime comparison is skipped"
    fi
done

# small requests alone in the daemon are served on the event loop once the model has shown it
# is small (8 requests; loop_max_us is raised above so that a sanitizer build qualifies too):
# the same answers either way
loop0=$(metric 'arenaflowd_model_loop_requests_total')
body='{"inputs":[{"name":"x","shape":[2,3],"datatype":"FP32","data":[-1,2,-3,4.5,-5,6]}]}'
for i in $(seq 1 20); do
    req POST /v2/models/dyn_fixed/infer -H 'Content-Type: application/json' -d "$body"
    expect 200 "dyn_fixed request $i" >/dev/null
    cp "$T/body" "$T/loop_$i"
    cmp -s "$T/loop_1" "$T/loop_$i" || fail "dyn_fixed answer $i differs: $(cat "$T/loop_$i")"
done
grep -q '"data":\[0.0,2.0,0.0,4.5,0.0,6.0\]' "$T/loop_1" || fail "dyn_fixed: $(cat "$T/loop_1")"
loop1=$(metric 'arenaflowd_model_loop_requests_total')
[ $((loop1 - loop0)) -ge 1 ] || fail "loop requests: ${loop0:-} -> ${loop1:-}, want some"
ok "20 one-at-a-time requests, $((loop1 - loop0)) served on the loop: identical answers"

# repository extension
req POST /v2/repository/index
expect 200 "POST /v2/repository/index"
body_has '"name":"broken","state":"UNAVAILABLE"' "the broken model is listed as unavailable"
body_has '"name":"mymodel","version":"1","state":"READY"' "mymodel 1 is ready"
req POST /v2/repository/models/mymodel/unload
expect 200 "unload mymodel"
req GET /v2/models/mymodel/ready
expect 404 "mymodel not ready after unload"
body_has '"error"' "unload: error body"
req POST /v2/repository/models/mymodel/load
expect 200 "load mymodel again"
req GET /v2/models/mymodel/versions/2/ready
expect 200 "mymodel version 2 ready after load"
req POST /v2/repository/models/broken/load
expect 400 "loading a broken model"
body_has '"error":"failed to load' "broken load: error body"
req POST /v2/repository/models/absent/load
expect 400 "loading a model that is not in the repository"
req GET /v2/repository/models/mymodel/load
expect 405 "GET on load"
req GET /v2/models/mymodel/stats
expect 200 "statistics"
n=$(jget "d['model_stats'][0]['inference_count']")
[ "${n:-0}" -ge 0 ] || fail "stats: no inference_count"
ok "statistics: inference_count $n since the reload"

# v1 beside v2, and the /v2 routes in /metrics
req GET /v1/graphs
expect 200 "GET /v1/graphs still served"
n=$(metric 'arenaflowd_http_requests_total{route="/v2/models/{m}[/versions/{v}]/infer",status="200"}')
[ "${n:-0}" -ge 66 ] || fail "/metrics does not count the /v2 inferences (got '${n:-}')"
ok "/metrics: $n inferences answered 200 (60 round trips, 2 golden, 4 real-model)"
made=$(metric 'arenaflowd_model_plans_total{source="planned"}')
stop

# persisted plans: a restarted daemon restores the models' plans and the shapes' plans from
# <state_dir>/model_plans instead of planning them again
nfiles=$(ls "$STATE/model_plans" | grep -c '\.afplan$')
[ "$nfiles" -ge 10 ] || fail "model_plans holds $nfiles plans after $made were planned"
start --model-repository "$REPO"
wait_ready
wait_v2_ready "after the restart"
$CHECK shapes "$PORT" >/dev/null || fail "symbolic dims after the restart"
planned=$(metric 'arenaflowd_model_plans_total{source="planned"}')
restored=$(metric 'arenaflowd_model_plans_total{source="restored"}')
[ "${planned:-x}" = 0 ] && [ "${restored:-0}" -ge 20 ] ||
    fail "after the restart: ${planned:-} planned, ${restored:-} restored (want 0 planned)"
grep -q "model dyn version 1: plan restored for x=7,3" "$LOG" || fail "dyn x=7,3 not restored"
$CHECK batching "$PORT" >/dev/null || fail "dynamic batching after the restart"
grep -q "model bat_ref version 1: plan restored for .*, $fused nodes fused)" "$LOG" ||
    fail "bat_ref's plans ($fused nodes fused) not restored after the restart: $(grep 'bat_ref.*not restored' "$LOG" | head -1)"
ok "restart: $restored plans restored from $nfiles files, 0 planned (dyn's 6 shapes among them)"
stop
# a corrupted plan file is not trusted: logged, planned again, rewritten
for f in "$STATE"/model_plans/*.afplan; do
    printf 'not a plan' | dd of="$f" bs=1 seek=40 conv=notrunc 2>/dev/null
done
start --model-repository "$REPO"
wait_ready
wait_v2_ready "over corrupted plan files"
$CHECK golden "$PORT" >/dev/null || fail "golden pairs over corrupted plan files"
n=$(grep -c '\.afplan not restored (' "$LOG")
made=$(metric 'arenaflowd_model_plans_total{source="planned"}')
[ "$n" -ge 10 ] && [ "${made:-0}" -ge 10 ] || fail "corrupted plan files: $n reported, ${made:-} planned"
ok "corrupted plan files: $n reported, $made plans made again"
stop
# bounded on disk: [models] max_plan_files keeps the most recently used files
write_cfg "[models]
max_plan_files = 4"
start --model-repository "$REPO"
wait_ready
wait_v2_ready "with max_plan_files 4"
$CHECK batching "$PORT" >/dev/null || fail "batching with max_plan_files 4"
nfiles=$(ls "$STATE/model_plans" | grep -c '\.afplan$')
[ "$nfiles" -le 4 ] && [ "$nfiles" -ge 1 ] || fail "max_plan_files 4: $nfiles files"
ok "max_plan_files 4: $nfiles plan files kept"
stop

# authentication: health needs no token, metadata and inference a read token, load an admin one
printf 'admin adm1n-token-0123456789\nread re4d-token-0123456789\n' >"$T/tokens"
write_cfg "[auth]
tokens_file = $T/tokens"
start --model-repository "$REPO"
wait_ready
wait_v2_ready "with tokens"
req GET /v2/health/live
expect 200 "health without a token"
req GET /v2/models/mymodel
expect 401 "metadata without a token"
body_has '"error"' "401 body"
grep -qi '^www-authenticate: Bearer' "$T/headers" || fail "401 without WWW-Authenticate"
req GET /v2/models/mymodel -H 'Authorization: Bearer re4d-token-0123456789'
expect 200 "metadata with a read token"
req POST /v2/repository/models/mymodel/unload -H 'Authorization: Bearer re4d-token-0123456789'
expect 403 "unload with a read token"
req POST /v2/repository/models/mymodel/unload -H 'Authorization: Bearer adm1n-token-0123456789'
expect 200 "unload with an admin token"
stop
echo "PASS: $CHECKS checks"
