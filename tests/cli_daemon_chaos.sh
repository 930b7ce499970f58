#!/usr/bin/env bash
# arenaflowd under a bounded mixed load with kill -9 every few seconds (issue 16 acceptance):
# tests/daemon_chaos.py drives submissions (new and known graphs), runs, reads and deletions
# from several threads and kills the daemon with SIGKILL every ~3 s, restarting it on the same
# state directory. Required: 0 acknowledged graphs lost, 0 acknowledged deletions undone, 0 torn
# graph files, 0 corrupt files at load, 0 5xx answers other than the documented overload
# answers (503 busy/loading/shutting_down with Retry-After), no sanitizer report.
# AF_CHAOS_SECONDS (default 30; the acceptance run uses 150) and AF_CHAOS_KILL_EVERY (3).
. "$(dirname "$0")/daemon_lib.sh"
SECS=${AF_CHAOS_SECONDS:-30}
EVERY=${AF_CHAOS_KILL_EVERY:-3}
THREADS=$((4 / (SCALE > 2 ? 2 : 1)))
mkdir -p "$STATE" "$T/logs"
write_cfg "[limits]
max_body = 16M
max_pending_plans = 8
max_concurrent_runs = 4
max_rounds = 100"
# The checks can fail: a graph file removed and another torn behind the daemon's back are found.
mkdir -p "$T/self/state" "$T/self/logs"
$PY "$SRC/tests/daemon_chaos.py" "$DAEMON" "$CFG" "$T/self/state" "$T/self/logs" 8 2 2 selftest \
    >"$T/self.json" 2>/dev/null && fail "the chaos checker missed a removed and a torn file"
$PY -c "import json,sys; s=json.load(open('$T/self.json')); sys.exit(not (s['lost'] >= 1 and s['torn_files'] >= 1))" ||
    fail "self-test summary: $(cat "$T/self.json")"
ok "the checker reports a removed graph file and a torn one: $(cat "$T/self.json")"
$PY "$SRC/tests/daemon_chaos.py" "$DAEMON" "$CFG" "$STATE" "$T/logs" "$SECS" "$EVERY" "$THREADS" \
    >"$T/summary.json" 2>"$T/chaos.err"
rc=$?
cat "$T/summary.json"
cat "$T/chaos.err"
[ "$rc" = 0 ] || {
    for f in "$T"/logs/*.log; do tail -n 5 "$f"; done | tail -n 40
    fail "chaos run failed"
}
$PY - "$T/summary.json" <<'PYEOF' || fail "chaos summary"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["kills"] >= 3, s
assert s["acknowledged_submissions"] >= 20, s
assert s["acknowledged_deletions"] >= 3, s
assert s["runs_ok"] >= 10, s
print("%(kills)d kills, %(acknowledged_submissions)d acknowledged submissions, "
      "%(acknowledged_deletions)d deletions, %(runs_ok)d runs: %(lost)d lost, "
      "%(resurrected)d resurrected, %(torn_files)d torn, %(unexpected_5xx)d unexpected 5xx" % s)
PYEOF
ok "kill -9 every ${EVERY} s for ${SECS} s: nothing acknowledged lost"
echo "cli_daemon_chaos: all $CHECKS checks passed"
