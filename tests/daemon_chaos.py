#!/usr/bin/env python3
"""Mixed load with kill -9 for arenaflowd (tests/cli_daemon_chaos.sh). Standard library only.

Starts the daemon, drives it with THREADS client threads (submissions of new and known graphs,
runs, reads, lists, deletions) and kills it with SIGKILL every KILL_EVERY seconds, restarting it
on the same state directory. Each thread submits and deletes only its own graphs, so its record
of what the daemon acknowledged follows the daemon's order:
  - a graph answered 201/200 is "acknowledged" and must be listed after every restart, until a
    DELETE of it is answered 200 (then it must be gone);
  - an operation cut by a kill has no known outcome: its graph leaves both records.
After each kill (daemon dead) every graph file in the state directory must be a complete JSON
document with its id (no torn file). Every answer's status is counted; 5xx answers other than
the documented overload answers (503 busy/loading/shutting_down with Retry-After) are errors.
Prints one JSON summary line; exits 1 when a check failed.

  daemon_chaos.py DAEMON CONFIG STATE_DIR LOG_DIR SECONDS KILL_EVERY THREADS [selftest]
"""
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

DAEMON, CONFIG, STATE, LOGS = sys.argv[1:5]
SECONDS, KILL_EVERY, THREADS = float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
# "selftest": at the first kill, remove one acknowledged graph's file behind the daemon's back
# (and tear another), so the run must report them: the checks can fail.
SELFTEST = len(sys.argv) > 8 and sys.argv[8] == "selftest"

lock = threading.Lock()
running = threading.Event()  # workers run only while set (cleared for kills and checks)
stop = threading.Event()
port = [0]
statuses = {}
bad5xx = []
acked = {}  # id -> thread that owns it (acknowledged, not deleted)
deleted = {}  # id -> thread (deletion acknowledged, not resubmitted since)
counts = {"submits_acked": 0, "deletes_acked": 0, "runs_ok": 0, "reads": 0, "cut": 0}


def graph_json(owner, k, rng):
    n = rng.randint(20, 400)
    t = [{"name": "x", "kind": "input", "bytes": 4096}]
    nodes = []
    for i in range(n):
        ins = ["t%d" % (i - 1) if i else "x"]
        if i > 3 and rng.random() < 0.3:
            ins.append("t%d" % rng.randint(0, i - 2))
        t.append({"name": "t%d" % i, "bytes": rng.choice([256, 1024, 65536, 262144])})
        nodes.append({"name": "n%d" % i, "op": "Add", "inputs": ins, "outputs": ["t%d" % i]})
    t[-1]["kind"] = "output"
    return json.dumps({"format": "arenaflow-graph", "version": 1, "name": "c%d_%d" % (owner, k),
                       "tensors": t, "nodes": nodes})


def call(method, path, body=None, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port[0], timeout=timeout)
    try:
        c.request(method, path, body=body)
        r = c.getresponse()
        data = r.read()
        return r.status, data, r.getheader("Retry-After")
    finally:
        c.close()


def count(status, data, retry, what):
    with lock:
        statuses[status] = statuses.get(status, 0) + 1
        if status >= 500:
            code = ""
            try:
                code = json.loads(data)["error"]["code"]
            except (ValueError, KeyError, TypeError):
                pass
            if not (status == 503 and retry == "1" and code in ("busy", "loading", "shutting_down")):
                bad5xx.append("%s -> %d %s" % (what, status, data[:200]))


def worker(idx):
    rng = random.Random(1000 + idx)
    mine = []  # graphs (id, body) this thread had acknowledged at some point
    k = 0
    while not stop.is_set():
        if not running.wait(0.1):
            continue
        op = rng.random()
        gid = None  # the graph a submit or delete is about (None: a new graph, id unknown)
        try:
            if op < 0.35 or not mine:
                if mine and rng.random() < 0.3:
                    gid, body = rng.choice(mine)
                else:
                    k += 1
                    body, gid = graph_json(idx, k, rng), None
                st, data, ra = call("POST", "/v1/graphs", body)
                count(st, data, ra, "submit")
                if st in (200, 201):
                    gid = json.loads(data)["id"]
                    with lock:
                        acked[gid] = idx
                        deleted.pop(gid, None)
                        counts["submits_acked"] += 1
                    if all(g != gid for g, _ in mine):
                        mine.append((gid, body))
            elif op < 0.45:
                gid, body = rng.choice(mine)
                st, data, ra = call("DELETE", "/v1/graphs/" + gid)
                count(st, data, ra, "delete")
                if st == 200:
                    with lock:
                        acked.pop(gid, None)
                        deleted[gid] = idx
                        counts["deletes_acked"] += 1
            elif op < 0.70:
                with lock:
                    ids = list(acked)
                if ids:
                    gid = rng.choice(ids)
                    body = json.dumps({"rounds": rng.randint(1, 5), "verify": rng.random() < 0.5})
                    st, data, ra = call("POST", "/v1/graphs/%s/run" % gid, body)
                    count(st, data, ra, "run")
                    counts["runs_ok"] += st == 200
            else:
                with lock:
                    ids = list(acked)
                path = "/v1/graphs" if not ids or rng.random() < 0.2 else \
                    "/v1/graphs/" + rng.choice(ids) + rng.choice(["", "", "/events.csv"])
                st, data, ra = call("GET", path)
                count(st, data, ra, "GET " + path[:20])
                counts["reads"] += 1
        except (OSError, http.client.HTTPException, ValueError):
            # cut by a kill: the outcome of a submit or delete in flight is unknown
            with lock:
                counts["cut"] += 1
                if op < 0.45 and gid:
                    acked.pop(gid, None)
                    deleted.pop(gid, None)
            time.sleep(0.02)


def start(n):
    log = open(os.path.join(LOGS, "daemon.%d.log" % n), "w")
    p = subprocess.Popen([DAEMON, "--config", CONFIG, "--state-dir", STATE], stderr=log)
    path = log.name
    for _ in range(600):
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(path).read())
        if m:
            port[0] = int(m.group(1))
            break
        if p.poll() is not None:
            sys.exit("daemon exited at start: " + open(path).read()[-2000:])
        time.sleep(0.02)
    else:
        sys.exit("no port reported")
    for _ in range(1200):  # ready = the state directory is loaded
        try:
            if call("GET", "/readyz", timeout=5)[0] == 200:
                return p, path
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit("daemon not ready after 60 s: " + open(path).read()[-2000:])


def torn_files():
    torn = []
    d = os.path.join(STATE, "graphs")
    for name in os.listdir(d):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(d, name)) as f:
                doc = json.load(f)
            if doc.get("format") != "arenaflowd-graph/1" or doc.get("id") + ".json" != name:
                torn.append(name)
        except (ValueError, OSError, TypeError):
            torn.append(name)
    return torn


def verify():
    """Every acknowledged graph is listed, every acknowledged deletion stays deleted."""
    st, data, _ = call("GET", "/v1/graphs")
    listed = {g["id"] for g in json.loads(data)["graphs"]}
    with lock:
        lost = [g for g in acked if g not in listed]
        back = [g for g in deleted if g in listed]
    return lost, back, len(listed)


def main():
    os.makedirs(os.path.join(STATE, "graphs"), exist_ok=True)
    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(THREADS)]
    for t in threads:
        t.start()
    n = 0
    proc, _ = start(n)
    running.set()
    end = time.time() + SECONDS
    kills, lost_all, back_all, torn_all, listed_max = 0, [], [], [], 0
    corrupt_logged = 0
    while time.time() < end:
        time.sleep(min(KILL_EVERY * random.uniform(0.5, 1.5), max(0.0, end - time.time())))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        running.clear()
        time.sleep(0.2)  # let every worker notice (their requests fail)
        if SELFTEST and kills == 1:
            with lock:
                victims = list(acked)[:2]
            d = os.path.join(STATE, "graphs")
            if len(victims) == 2:
                os.unlink(os.path.join(d, victims[0] + ".json"))
                with open(os.path.join(d, victims[1] + ".json"), "r+") as f:
                    f.truncate(20)
        torn_all += torn_files()
        n += 1
        proc, log = start(n)
        text = open(log).read()
        m = re.search(r"(\d+) corrupt", text)
        corrupt_logged += int(m.group(1)) if m else 0
        lost, back, nl = verify()
        lost_all += lost
        back_all += back
        listed_max = max(listed_max, nl)
        running.set()
    stop.set()
    running.set()
    for t in threads:
        t.join(10)
    running.clear()
    lost, back, nl = verify()  # and without a kill
    lost_all += lost
    back_all += back
    proc.send_signal(signal.SIGTERM)
    proc.wait(30)
    san = []
    for name in sorted(os.listdir(LOGS)):
        text = open(os.path.join(LOGS, name)).read()
        if "Sanitizer" in text or "runtime error:" in text:
            san.append(name)
    summary = {
        "seconds": SECONDS, "kills": kills, "threads": THREADS,
        "acknowledged_submissions": counts["submits_acked"],
        "acknowledged_deletions": counts["deletes_acked"], "runs_ok": counts["runs_ok"],
        "reads": counts["reads"], "requests_cut_by_kills": counts["cut"],
        "graphs_listed_max": listed_max, "lost": len(lost_all), "resurrected": len(back_all),
        "torn_files": len(torn_all), "corrupt_logged": corrupt_logged,
        "unexpected_5xx": len(bad5xx), "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "sanitizer_reports": san,
    }
    print(json.dumps(summary))
    for line in (lost_all[:5] + back_all[:5] + torn_all[:5] + bad5xx[:5]):
        print("  " + str(line), file=sys.stderr)
    ok = not (lost_all or back_all or torn_all or bad5xx or san or corrupt_logged) and kills > 0
    sys.exit(0 if ok else 1)


main()
