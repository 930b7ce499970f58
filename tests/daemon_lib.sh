# Helpers for the arenaflowd shell tests (tests/cli_daemon_*.sh), sourced, not run: locate the
# daemon, a temporary directory removed at exit (with every daemon started here killed), a
# config writer, start/stop with the port read back from the log (listen on port 0), requests
# with curl, checks that fail with the daemon's log tail, process figures from /proc (RSS, peak
# RSS, open fds), and the build flavour (sanitizer builds scale their loads down).
set -u

SRC=${AF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BIN=${AF_BINARY_DIR:-$SRC/build}
DAEMON=$BIN/arenaflowd
if [ ! -x "$DAEMON" ]; then
    echo "SKIP: arenaflowd is not built (needs libh2o-dev)"
    exit 0
fi
PY=python3
PROBE="$PY $SRC/tests/daemon_probe.py"
T=$(mktemp -d /tmp/af-daemon-test.XXXXXX)
PID=
PIDS=
CHECKS=0
trap 'for p in $PIDS; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
LOG=$T/daemon.log
CFG=$T/arenaflowd.ini
STATE=$T/state

# Sanitizer builds run slower: SCALE divides iteration counts, SLOW multiplies time bounds.
SAN=
if grep -q '^AF_ASAN:BOOL=ON' "$BIN/CMakeCache.txt" 2>/dev/null; then
    SAN=asan
elif grep -q '^AF_TSAN:BOOL=ON' "$BIN/CMakeCache.txt" 2>/dev/null; then
    SAN=tsan
fi
SCALE=1
SLOW=1
[ -n "$SAN" ] && SCALE=4 && SLOW=5

fail() {
    echo "FAIL: $*"
    echo "---- daemon log (tail) ----"
    tail -n 40 "$LOG" 2>/dev/null
    exit 1
}
ok() {
    CHECKS=$((CHECKS + 1))
    echo "ok: $*"
}

# write_cfg "ini text": [server] on a free loopback port plus the given sections.
write_cfg() {
    printf '[server]\nlisten = 127.0.0.1:0\nlog_level = info\n%s\n' "$1" >"$CFG"
}

sanitizer_clean() { # a sanitizer report in the log fails the test even if the daemon goes on
    if grep -q "Sanitizer\|runtime error:" "$LOG" 2>/dev/null; then
        grep -B2 -A30 "Sanitizer\|runtime error:" "$LOG" | head -60
        fail "sanitizer report in the daemon log"
    fi
}

# TSan builds: descriptors libuv closes unseen by TSan (tests/tsan_libuv_fd.supp says why). The
# suppressions do not catch every form of the report (TSan matches them against the access
# stacks, and the libuv side has no symbols), so interceptors called from uninstrumented
# libraries (libuv, libdnnl) record no accesses either: their locks still order, their reads
# and writes of descriptors and buffers are not checked.
if [ -n "${TSAN_OPTIONS:-}" ] && ! grep -q tsan_libuv_fd <<<"$TSAN_OPTIONS"; then
    export TSAN_OPTIONS="$TSAN_OPTIONS suppressions=$SRC/tests/tsan_libuv_fd.supp ignore_noninstrumented_modules=1"
fi

# start [daemon args...]: starts on $CFG and $STATE, waits for the port (bounded).
start() {
    sanitizer_clean
    : >"$LOG"
    if [ -n "${FSIZE_KB:-}" ]; then # a file size limit (ulimit -f) for disk-full tests
        (
            ulimit -f "$FSIZE_KB"
            exec "$DAEMON" --config "$CFG" --state-dir "$STATE" "$@" 2>>"$LOG"
        ) &
    else
        "$DAEMON" --config "$CFG" --state-dir "$STATE" "$@" 2>>"$LOG" &
    fi
    PID=$!
    PIDS="$PIDS $PID"
    PORT=
    for _ in $(seq 1 400); do
        PORT=$(sed -n 's|.*listening on https\{0,1\}://127.0.0.1:\([0-9]*\).*|\1|p' "$LOG" | tail -n 1)
        [ -n "$PORT" ] && break
        kill -0 "$PID" 2>/dev/null || fail "daemon exited at start: $(tail -n 5 "$LOG")"
        sleep 0.025
    done
    [ -n "$PORT" ] || fail "daemon did not report its port"
    AFD=http://127.0.0.1:$PORT
}

# wait_ready [seconds]: until /readyz answers 200.
wait_ready() {
    local n=$((${1:-60} * 20))
    for _ in $(seq 1 "$n"); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$AFD/readyz")" = 200 ] && return 0
        sleep 0.05
    done
    fail "daemon not ready after ${1:-60} s"
}

stop() { # SIGTERM and wait (bounded); kill -9 after 30 s
    [ -n "$PID" ] || return 0
    kill -TERM "$PID" 2>/dev/null
    for _ in $(seq 1 600); do
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.05
    done
    kill -9 "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
    PID=
    sanitizer_clean
}

crash() { # kill -9 and wait
    sanitizer_clean
    kill -9 "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
    PID=
}

# req METHOD PATH [curl args...]: sets CODE, body in $T/body, headers in $T/headers
req() {
    local m=$1 p=$2
    shift 2
    CODE=$(curl -s -D "$T/headers" -o "$T/body" -w '%{http_code}' --max-time 120 -X "$m" "$@" "$AFD$p")
}
expect() { # CODE what
    [ "$CODE" = "$1" ] || fail "$2: expected $1, got $CODE: $(head -c 400 "$T/body")"
    ok "$2 -> $1"
}
body_has() {
    grep -q -- "$1" "$T/body" || fail "$2: body lacks '$1': $(head -c 400 "$T/body")"
}
jget() { # python expression on d = the JSON body
    $PY -c "import json,sys; d=json.load(open('$T/body')); print($1)" 2>/dev/null
}
metric() { # metric SERIES [curl args]: value of one sample (exact series text) in /metrics
    local series=$1
    shift
    curl -s --max-time 10 "$@" "$AFD/metrics" | awk -v s="$series" '$1 == s {print $2}'
}
wait_log() { # pattern what [seconds]
    local n=$((${3:-10} * 20))
    for _ in $(seq 1 "$n"); do
        grep -q -- "$1" "$LOG" && return 0
        sleep 0.05
    done
    fail "$2: log never said '$1'"
}

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
fd_count() { ls "/proc/$1/fd" | wc -l; }

# wait_v2_ready [what]: until $AFD/v2/health/ready answers 200 (bounded, 10 s), then expect 200.
wait_v2_ready() {
    for _ in $(seq 1 200); do
        req GET /v2/health/ready
        [ "$CODE" = 200 ] && break
        sleep 0.05
    done
    expect 200 "GET /v2/health/ready ${1:-}"
}

# hup: SIGHUP and wait until the daemon logged its verdict; HUP_OK=1 when it reloaded.
hup() {
    local n
    n=$(grep -c "SIGHUP: configuration reloaded\|SIGHUP: reload failed" "$LOG")
    kill -HUP "$PID"
    for _ in $(seq 1 400); do
        if [ "$(grep -c "SIGHUP: configuration reloaded\|SIGHUP: reload failed" "$LOG")" -gt "$n" ]; then
            HUP_OK=0
            grep "SIGHUP: configuration reloaded\|SIGHUP: reload failed" "$LOG" | tail -n 1 |
                grep -q "reloaded" && HUP_OK=1
            return 0
        fi
        sleep 0.025
    done
    fail "SIGHUP not handled within 10 s"
}

# The machine is shared: a /healthz latency is judged against an idle reference daemon (same
# binary, no work) probed at the same time, so a machine-wide stall counts against neither.
# ref_start SECONDS; ref_stop sets REF_MAX (ms).
ref_start() {
    printf '[server]\nlisten = 127.0.0.1:0\n' >"$T/ref.ini"
    "$DAEMON" --config "$T/ref.ini" 2>"$T/ref.log" &
    REF_PID=$!
    PIDS="$PIDS $REF_PID"
    local rport=
    for _ in $(seq 1 400); do
        rport=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$T/ref.log" | tail -n 1)
        [ -n "$rport" ] && break
        sleep 0.025
    done
    [ -n "$rport" ] || fail "reference daemon did not start"
    rm -f "$T/ref.probe" "$T/ref.probe.stop"
    $PROBE healthz "$rport" "$1" "$T/ref.probe" &
    REF_PROBE=$!
    PIDS="$PIDS $REF_PROBE"
}
ref_stop() {
    touch "$T/ref.probe.stop"
    wait "$REF_PROBE" 2>/dev/null
    kill "$REF_PID" 2>/dev/null
    wait "$REF_PID" 2>/dev/null
    read -r REF_MAX _ <"$T/ref.probe"
}
# latency_ok MAX_MS: MAX_MS (the daemon under load) exceeds the reference by < 100 ms (x SLOW)
latency_ok() {
    awk -v m="$1" -v r="$REF_MAX" -v s="$SLOW" 'BEGIN { exit !(m - r < 100 * s) }'
}
