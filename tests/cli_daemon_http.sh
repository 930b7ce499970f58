#!/usr/bin/env bash
# arenaflowd's HTTP edge (issue 16, items 1, 9 and 10) on a real daemon over loopback:
#   - framing: two different Content-Length headers, or Transfer-Encoding with Content-Length,
#     are 400 and close the connection (nothing smuggled behind them is served);
#   - HTTP/1.1 only: "Upgrade: h2c" is not honoured, the HTTP/2 preface is a 400;
#   - max_connections: one more connection is answered 503; request_timeout_ms cuts a slowloris;
#   - [auth] tokens: 401 without a token, 403 for a read token on admin routes, /healthz and
#     /readyz open, /metrics needs a token;
#   - TLS from h2o with a self-signed certificate made by openssl here; HTTP/1.1 over it;
#   - ids: %00, "..", uppercase never crash or reach a file;
#   - a full disk (ulimit -f) answers 507 and keeps nothing half-written.
. "$(dirname "$0")/daemon_lib.sh"
mkdir -p "$STATE"

raw() { # raw BYTES [timeout]: what the daemon sends back (python repr)
    printf '%b' "$1" | $PROBE raw "$PORT" "${2:-3}"
}
n_status() { grep -o 'HTTP/1\.1 [0-9][0-9][0-9]' <<<"$1" | wc -l; }

write_cfg "[limits]
max_body = 16M"
start
wait_ready

# ---- framing ------------------------------------------------------------------------------
SMUGGLED='GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\n'
out=$(raw "GET /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nContent-Length: 35\r\n\r\n$SMUGGLED")
[[ $out == "b'HTTP/1.1 400"* ]] || fail "two Content-Length values: $out"
[ "$(n_status "$out")" = 1 ] || fail "a request smuggled behind two Content-Length values was served: $out"
grep -q "Content-Length" <<<"$out" || fail "400 does not say why: $out"
ok "conflicting Content-Length: 400, connection closed, nothing smuggled"
out=$(raw "GET /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n")
[[ $out == "b'HTTP/1.1 200"* ]] || fail "the same Content-Length twice is one length: $out"
out=$(raw "POST /v1/graphs HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n$SMUGGLED")
[[ $out == "b'HTTP/1.1 400"* ]] && [ "$(n_status "$out")" = 1 ] || fail "Transfer-Encoding with Content-Length: $out"
ok "Transfer-Encoding with Content-Length: 400"
out=$(raw "POST /v1/graphs HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nbroken\r\n")
[[ $out == "b'HTTP/1.1 400"* ]] || fail "malformed chunked encoding: $out"
ok "malformed chunked encoding: 400"

# ---- HTTP/1.1 only -------------------------------------------------------------------------
out=$(raw "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
[[ $out == "b'HTTP/1.1 200"* ]] || fail "Upgrade: h2c must be ignored (HTTP/1.1 answer): $out"
ok "Upgrade: h2c ignored, answered as HTTP/1.1"
out=$(raw "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
[[ $out == "b'HTTP/1.1 400"* ]] || fail "HTTP/2 prior knowledge must be refused: $out"
ok "HTTP/2 preface (prior knowledge): 400"

# ---- ids -------------------------------------------------------------------------------------
for p in /v1/graphs/%00 /v1/graphs/%00/run /v1/graphs/%00/events.csv /v1/graphs/%00/memory.svg \
    /v1/graphs/..%2f..%2fetc%2fpasswd /v1/graphs/0123456789ABCDEF0123456789ABCDEF; do
    for m in GET DELETE POST; do
        req "$m" "$p" --path-as-is -d '{}'
        [ "$CODE" = 404 ] || [ "$CODE" = 405 ] || fail "$m $p: $CODE $(head -c 200 "$T/body")"
    done
done
req GET /healthz
expect 200 "alive after %00, traversal and uppercase ids on every route"
stop

# ---- connection cap and request timeout ---------------------------------------------------
write_cfg "[server]
max_connections = 8
request_timeout_ms = 1000"
start
wait_ready
$PY - "$PORT" <<'EOF' || fail "connection cap"
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(8)]
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
data = s.recv(4096)
assert data.startswith(b"HTTP/1.1 503"), data[:80]
assert b"Retry-After" in data, data
for h in held:
    h.close()
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
assert s.recv(4096).startswith(b"HTTP/1.1 200")
print("9th connection 503, after closing: 200")
EOF
ok "max_connections = 8: the 9th connection gets 503"
[ "$(metric 'arenaflowd_connections_refused_total')" -ge 1 ] || fail "refused connection not counted"
$PY - "$PORT" <<'EOF' || fail "slowloris"
import socket, sys, time
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
t0 = time.time()
closed = False
while time.time() - t0 < 8:
    try:
        s.sendall(b"X-Slow: 1\r\n")
    except OSError:
        closed = True
        break
    s.settimeout(0.2)
    try:
        if s.recv(4096) == b"":
            closed = True
            break
    except socket.timeout:
        pass
    except OSError:
        closed = True
        break
dt = time.time() - t0
assert closed, "a client trickling headers was not cut off in 8 s"
assert dt < 4, dt
print("slowloris cut after %.1f s (request_timeout_ms = 1000)" % dt)
EOF
ok "slowloris connection cut by request_timeout_ms"
stop

# ---- authentication ----------------------------------------------------------------------
ADMIN=admin-0123456789abcdef0123456789
READ=read-0123456789abcdef0123456789ab
printf '# tokens\nadmin %s\nread %s\n' "$ADMIN" "$READ" >"$T/tokens"
chmod 600 "$T/tokens"
write_cfg "[auth]
tokens_file = $T/tokens"
start
wait_ready
grep -q "loopback only" "$LOG" || fail "the log does not say loopback only"
grep -q "authentication: 1 admin and 1 read-only tokens" "$LOG" || fail "the log does not say auth on"
req GET /healthz
expect 200 "healthz without a token"
req GET /readyz
expect 200 "readyz without a token"
req GET /v1/graphs
expect 401 "list without a token"
grep -qi '^www-authenticate: Bearer' "$T/headers" || fail "401 without WWW-Authenticate"
req GET /metrics
expect 401 "metrics without a token"
req GET /v1/graphs -H "Authorization: Bearer wrong-0123456789abcdef0123456789"
expect 401 "list with a wrong token"
req GET /v1/graphs -H "Authorization: Bearer $READ"
expect 200 "list with the read token"
req GET /metrics -H "Authorization: Bearer $READ"
expect 200 "metrics with the read token"
req POST /v1/graphs -H "Authorization: Bearer $READ" --data-binary @"$SRC/examples/diamond.json"
expect 403 "submit with the read token"
req POST /v1/graphs -H "Authorization: Bearer $ADMIN" --data-binary @"$SRC/examples/diamond.json"
expect 201 "submit with the admin token"
ID=$(jget 'd["id"]')
req POST "/v1/graphs/$ID/run" -H "Authorization: Bearer $READ" -d '{}'
expect 403 "run with the read token"
req DELETE "/v1/graphs/$ID" -H "Authorization: Bearer $READ"
expect 403 "delete with the read token"
req DELETE "/v1/graphs/$ID" -H "Authorization: Bearer $ADMIN"
expect 200 "delete with the admin token"
stop

# ---- TLS -------------------------------------------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/key.pem" -out "$T/cert.pem" -days 2 \
    -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null ||
    fail "openssl could not make a certificate"
write_cfg "tls_cert = $T/cert.pem
tls_key = $T/key.pem"
start
grep -q "listening on https://127.0.0.1:$PORT" "$LOG" || fail "TLS listener not reported"
AFD=https://127.0.0.1:$PORT
for _ in $(seq 1 200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/cert.pem" "$AFD/readyz")" = 200 ] && break
    sleep 0.05
done
req GET /healthz --cacert "$T/cert.pem"
expect 200 "healthz over TLS (certificate verified)"
req POST /v1/graphs --cacert "$T/cert.pem" --data-binary @"$SRC/examples/diamond.json"
expect 201 "submit over TLS"
V=$(curl -s -o /dev/null -w '%{http_version}' --http2 --cacert "$T/cert.pem" "$AFD/healthz")
[ "$V" = 1.1 ] || fail "TLS negotiated HTTP/$V (only HTTP/1.1 is served)"
ok "curl --http2 over TLS gets HTTP/1.1"
C=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PORT/healthz")
[ "$C" != 200 ] || fail "plain HTTP answered on the TLS port"
ok "plain HTTP on the TLS port is not served"
stop
write_cfg "tls_cert = $T/cert.pem
tls_key = $T/nonexistent.pem"
"$DAEMON" --config "$CFG" 2>"$T/tls.err" && fail "started with a missing TLS key"
grep -q "TLS" "$T/tls.err" || fail "missing key not reported: $(cat "$T/tls.err")"
ok "a missing TLS key refuses to start, naming it"

# ---- a full disk: ulimit -f ------------------------------------------------------------------
rm -rf "$STATE"
mkdir -p "$STATE"
write_cfg "[limits]
max_body = 16M"
FSIZE_KB=64 start
wait_ready
$PROBE gen chain 4000 "$T/chain.json" # its graph file is ~300 KB
req POST /v1/graphs --data-binary @"$T/chain.json"
expect 507 "a graph whose file passes the file size limit"
body_has insufficient_storage "507 code"
req GET /v1/graphs
[ "$(jget 'd["count"]')" = 0 ] || fail "a graph that could not be stored is listed"
ls "$STATE/graphs" | grep -q . && fail "files left behind: $(ls "$STATE/graphs")"
req POST /v1/graphs --data-binary @"$SRC/examples/diamond.json"
expect 201 "a small graph still fits"
kill -0 "$PID" || fail "the daemon died on the file size limit"
stop
unset FSIZE_KB

sanitizer_clean
echo "cli_daemon_http: all $CHECKS checks passed"
