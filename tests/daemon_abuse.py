#!/usr/bin/env python3
"""Fault and abuse classes against a running arenaflowd (tests/cli_daemon_abuse.sh). Standard
library only; everything on loopback and bounded in time.

  daemon_abuse.py attacks PORT SCALE        every attack class below, one after another
  daemon_abuse.py soak PORT PID SECONDS     mixed legal load; samples RSS and open fds each
                                            second; prints one JSON line of the samples

Every HTTP answer an attack gets must be a status its class allows; a 500 is never allowed,
and the only 5xx allowed are 503 with Retry-After (overload) and 507 where said. Each class
prints one line "name: figures". Exits 1 at the first violation.
"""
import http.client
import json
import os
import random
import re
import socket
import sys
import threading
import time

PORT = int(sys.argv[2])
SCALE = int(sys.argv[3]) if sys.argv[1] == "attacks" and len(sys.argv) > 3 else 1
rng = random.Random(16)


def conn(timeout=10):
    return socket.create_connection(("127.0.0.1", PORT), timeout=timeout)


def send_raw(data, timeout=5.0, close_after=False):
    """Sends bytes, returns everything received until the server closes or timeout."""
    s = conn(timeout)
    try:
        s.sendall(data)
        if close_after:
            return b""
        got = b""
        end = time.time() + timeout
        s.settimeout(0.5)
        while time.time() < end:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                if got:
                    break
                continue
            if not chunk:
                break
            got += chunk
        return got
    except (ConnectionResetError, BrokenPipeError):
        return b""
    finally:
        s.close()


def statuses_of(data):
    return [int(m) for m in re.findall(rb"(?:^|\n)HTTP/1\.1 (\d\d\d) ", data)]


def check(name, got, allowed):
    for st in got:
        if st not in allowed:
            sys.exit("%s: status %d not in %s" % (name, st, sorted(allowed)))


def request(method, path, body=None, headers=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        if r.status >= 500 and not (r.status == 503 and r.getheader("Retry-After")) and \
                r.status != 507:
            sys.exit("%s %s -> %d %s" % (method, path[:60], r.status, data[:300]))
        return r.status, data
    finally:
        c.close()


def graph(n, name, wide=False):
    t = [{"name": "x", "kind": "input", "bytes": 4096}]
    nodes = []
    for i in range(n):
        t.append({"name": "t%d" % i, "bytes": 256 << (i % 5)})
        src = "x" if wide or i == 0 else "t%d" % (i - 1)
        nodes.append({"name": "n%d" % i, "op": "Relu", "inputs": [src], "outputs": ["t%d" % i]})
    t[-1]["kind"] = "output"
    return json.dumps({"format": "arenaflow-graph", "version": 1, "name": name, "tensors": t,
                       "nodes": nodes}, separators=(",", ":"))


# ---- attack classes ------------------------------------------------------------------------

def slowloris():
    n = 120 // SCALE
    socks = [conn() for _ in range(n)]
    for s in socks:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n")
    t0 = time.time()
    alive = set(range(n))
    while alive and time.time() - t0 < 10:
        for i in list(alive):
            try:
                socks[i].sendall(b"X-a: b\r\n")
            except OSError:
                alive.discard(i)
        time.sleep(0.2)
    for s in socks:
        s.close()
    if alive:
        sys.exit("slowloris: %d of %d trickling connections still open after 10 s" % (len(alive), n))
    print("slowloris: %d connections trickling headers all cut after %.1f s" % (n, time.time() - t0))


def header_floods():
    many = b"GET /healthz HTTP/1.1\r\nHost: t\r\n" + b"".join(
        b"X-%d: v\r\n" % i for i in range(150)) + b"\r\n"
    got = statuses_of(send_raw(many))
    check("150 headers", got, {400})
    huge = b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * (600 * 1024) + b"\r\n\r\n"
    got2 = statuses_of(send_raw(huge, timeout=10))
    check("600 KB header", got2, {400})
    longpath = b"GET /" + b"a" * 200000 + b" HTTP/1.1\r\nHost: t\r\n\r\n"
    got3 = statuses_of(send_raw(longpath, timeout=10))
    check("200 KB path", got3, {400, 404, 414})
    print("header floods: 150 headers %s, 600 KB header %s, 200 KB path %s" % (got, got2, got3))


def pipelining():
    n = 300 // SCALE
    got = statuses_of(send_raw(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n" * n, timeout=20))
    if got != [200] * n:
        sys.exit("pipelining: %d requests, %d answers %s" % (n, len(got), set(got)))
    g = graph(50, "pipelined").encode()
    one = (b"POST /v1/graphs HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(g)) + g + \
        b"GET /v1/graphs HTTP/1.1\r\nHost: t\r\n\r\n"
    got2 = statuses_of(send_raw(one * 10, timeout=30))
    check("pipelined submit+list", got2, {200, 201, 429})
    if len(got2) != 20:
        sys.exit("pipelined submit+list: %d answers of 20" % len(got2))
    print("pipelining: %d pipelined GETs answered in order; 10 submit+list pairs %s" %
          (n, sorted(set(got2))))


def chunked():
    cases = {
        b"zz\r\nbroken\r\n0\r\n\r\n": {400},
        b"ffffffffffffffffff\r\n": {400, 413},
        b"7fffffffffffffff\r\nabc": {400, 413},
        b"5;ext=1\r\n{\"a\":\r\n0\r\n\r\n": {400},
        b"3\r\nabc": None,  # then close: no answer needed
        b"0\r\nX-Trailer: junk\r\n\r\n": {400},
    }
    seen = []
    for body, allowed in cases.items():
        head = b"POST /v1/graphs HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        data = send_raw(head + body, timeout=3, close_after=allowed is None)
        got = statuses_of(data)
        if allowed is not None:
            check("chunked %r" % body[:20], got, allowed)
        seen += got
    print("malformed chunked encoding: answers %s" % sorted(set(seen)))


def bodies():
    got = statuses_of(send_raw(b"POST /v1/graphs HTTP/1.1\r\nHost: t\r\nContent-Length: "
                               b"10737418240\r\n\r\n", timeout=5))
    check("10 GB Content-Length", got, {413})
    for _ in range(40 // SCALE):  # bodies cut short, then the client goes away
        send_raw(b"POST /v1/graphs HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n{\"fo",
                 close_after=True)
    for _ in range(40 // SCALE):  # garbage
        send_raw(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 2000))), timeout=1)
    print("bodies: 10 GB Content-Length %s; 40 cut bodies and 40 garbage connections" % got)


def paths():
    seen = set()
    weird = [b"/v1/graphs/%00", b"/v1/graphs/%00%00/run", b"/v1/graphs/..%2f..%2f..%2fetc%2fpasswd",
             b"/v1/graphs/../../../etc/passwd", b"/v1/graphs/" + b"f" * 33,
             b"/v1/graphs/" + b"F" * 32, b"/v1/graphs/%ff%fe", b"/v1/graphs/\xff\xfe\x00",
             b"/v1/graphs/%c0%ae%c0%ae/", b"//v1///graphs////x", "/v1/graphs/\u00e9t\u00e9".encode(),
             b"/v1/graphs/" + b"0" * 32 + b"/run/extra", b"/v1/graphs?format=onnx&input=%00=1",
             b"/metrics?%zz", b"/" * 3000, b"/v1/graphs/" + b"a" * 4000, b"*", b"http://x/healthz"]
    for p in weird:
        for m in (b"GET", b"DELETE", b"POST", b"PUT", b"BREW"):
            got = statuses_of(send_raw(m + b" " + p + b" HTTP/1.1\r\nHost: t\r\nContent-Length: 2"
                                       b"\r\nConnection: close\r\n\r\n{}", timeout=3))
            check("%s %r" % (m, p[:40]), got, {200, 400, 404, 405})
            seen.update(got)
    print("paths: %d weird paths x 5 methods -> %s" % (len(weird), sorted(seen)))


def json_bodies():
    res = {}
    deep = b"[" * 200000 + b"]" * 200000
    res["200k-deep array"] = request("POST", "/v1/graphs", deep)[0]
    objs = b"[" + b",".join([b"{}"] * (4000000 // SCALE)) + b"]"
    res["4M empty objects"] = request("POST", "/v1/graphs", objs)[0]
    nums = b"[" + b",".join([b"1e99999"] * 100000) + b"]"
    res["huge exponents"] = request("POST", "/v1/graphs", nums)[0]
    bad = graph(5, "bad").replace('"n1"', '"\\udc00\\ud800"').encode()
    res["lone surrogates"] = request("POST", "/v1/graphs", bad)[0]
    raw = graph(5, "raw").encode().replace(b"n2", b"\xff\xfe")
    res["invalid UTF-8 name"] = request("POST", "/v1/graphs", raw)[0]
    res["15-digit size"] = request("POST", "/v1/graphs", graph(3, "sz").replace(
        '"bytes":256', '"bytes":99999999999999999999999').encode())[0]
    for k, v in res.items():
        if v not in (400, 413, 422, 503):
            sys.exit("json %s -> %d" % (k, v))
    print("json: " + ", ".join("%s %d" % kv for kv in res.items()))


def pb_varint(v):
    out = b""
    while True:
        out += bytes([(v & 0x7F) | (0x80 if v > 0x7F else 0)])
        v >>= 7
        if not v:
            return out


def pb_msg(field, payload):
    return pb_varint(field << 3 | 2) + pb_varint(len(payload)) + payload


def onnx_bodies():
    cur = b""
    for _ in range(3000):
        cur = pb_msg(6, pb_msg(1, pb_msg(5, cur)))
    deep = pb_msg(7, pb_msg(1, pb_msg(5, cur)))
    amp = pb_msg(7, pb_msg(1, b"\x2a\x00" * (2 << 20)))
    rnd = bytes(rng.getrandbits(8) for _ in range(100000))
    h = {"Content-Type": "application/onnx"}
    res = {"3000-level nesting": request("POST", "/v1/graphs", deep, h)[0],
           "4 MB empty attributes": request("POST", "/v1/graphs", amp, h)[0],
           "100 KB random": request("POST", "/v1/graphs", rnd, h)[0]}
    for k, v in res.items():
        if v not in (400, 413, 501):
            sys.exit("onnx %s -> %d" % (k, v))
    print("onnx: " + ", ".join("%s %d" % kv for kv in res.items()))


def runs():
    st, data = request("POST", "/v1/graphs", graph(30, "runner"))
    gid = json.loads(data)["id"]
    res = {"rounds 10^12": request("POST", "/v1/graphs/%s/run" % gid, b'{"rounds": 1000000000000}')[0],
           "5 KB body": request("POST", "/v1/graphs/%s/run" % gid, b" " * 5000)[0],
           "unknown id": request("POST", "/v1/graphs/%s/run" % ("0" * 32), b"{}")[0]}
    allowed = {"rounds 10^12": {400}, "5 KB body": {413}, "unknown id": {404}}
    for k, v in res.items():
        if v not in allowed[k]:
            sys.exit("run %s -> %d" % (k, v))
    out, threads = [], []
    for _ in range(12):
        t = threading.Thread(target=lambda: out.append(request(
            "POST", "/v1/graphs/%s/run" % gid, b'{"rounds": 50, "verify": true}')[0]))
        t.start()
        threads.append(t)
    for t in threads:
        t.join(120)
    check("12 concurrent runs", out, {200, 429})
    print("runs: " + ", ".join("%s %d" % kv for kv in res.items()) +
          "; 12 concurrent runs %s" % sorted(set(out)))


def connection_flood():
    socks = []
    refused = 0
    for _ in range(400 // SCALE):
        try:
            socks.append(conn(5))
        except OSError:
            refused += 1
    time.sleep(0.3)
    answered_503 = 0
    for s in socks[-20:]:
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            s.settimeout(2)
            if s.recv(4096).startswith(b"HTTP/1.1 503"):
                answered_503 += 1
        except OSError:
            pass
    for s in socks:
        s.close()
    time.sleep(0.3)
    st, _ = request("GET", "/healthz")
    if st != 200:
        sys.exit("healthz after the connection flood: %d" % st)
    print("connection flood: %d connections opened, last 20 got %d x 503, healthz 200 after" %
          (len(socks), answered_503))


def submissions():
    out, threads = [], []
    for i in range(24 // SCALE):
        body = graph(200 + i, "flood%d" % i)
        t = threading.Thread(target=lambda b=body: out.append(request("POST", "/v1/graphs", b)[0]))
        t.start()
        threads.append(t)
    for t in threads:
        t.join(120)
    check("parallel submissions", out, {200, 201, 429, 503})
    # the same graph submitted and deleted at once, many times
    body = graph(100, "contested")
    gid = json.loads(request("POST", "/v1/graphs", body)[1])["id"]
    out2, threads = [], []
    for i in range(40 // SCALE):
        if i % 2:
            t = threading.Thread(target=lambda: out2.append(
                request("DELETE", "/v1/graphs/" + gid)[0]))
        else:
            t = threading.Thread(target=lambda: out2.append(request("POST", "/v1/graphs", body)[0]))
        t.start()
        threads.append(t)
    for t in threads:
        t.join(120)
    check("submit/delete storm", out2, {200, 201, 404, 429})
    print("submissions: %d in parallel %s; submit/delete storm on one id %s" %
          (len(out), sorted(set(out)), sorted(set(out2))))
    return gid


def big_legal():
    body = graph(90000 // SCALE, "big-legal")
    t0 = time.time()
    st, data = request("POST", "/v1/graphs", body, timeout=300)
    if st not in (201, 200, 422):
        sys.exit("big legal graph -> %d %s" % (st, data[:200]))
    dt = time.time() - t0
    if st in (200, 201):
        gid = json.loads(data)["id"]
        for p in ("/events.csv", "/memory.svg"):
            s2, d2 = request("GET", "/v1/graphs/" + gid + p, timeout=300)
            if s2 != 200:
                sys.exit("big legal graph %s -> %d" % (p, s2))
    print("big legal graph (%d nodes, %d bytes): %d in %.1f s; events and picture rendered" %
          (90000 // SCALE, len(body), st, dt))


def attacks():
    for f in (slowloris, header_floods, pipelining, chunked, bodies, paths, json_bodies,
              onnx_bodies, runs, connection_flood, submissions, big_legal):
        t0 = time.time()
        f()
        probe = os.environ.get("AF_PROBE_FILE")
        if probe and os.path.exists(probe):  # the /healthz probe's worst so far
            print("    (/healthz max so far %s ms)" % open(probe).read().split()[0])
        sys.stdout.flush()
        if time.time() - t0 > 90:
            sys.exit("%s took %.0f s" % (f.__name__, time.time() - t0))


# ---- soak --------------------------------------------------------------------------------

def proc_figures(pid):
    rss = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return rss, len(os.listdir("/proc/%d/fd" % pid))


def soak(pid, seconds):
    bodies = [graph(40 + i, "soak%d" % i) for i in range(8)]
    ids = [json.loads(request("POST", "/v1/graphs", b)[1])["id"] for b in bodies[:4]]
    samples = []
    end = time.time() + seconds
    next_sample = time.time()
    n = 0
    k = 0
    while time.time() < end:
        n += 1
        r = rng.random()
        if r < 0.3:
            request("POST", "/v1/graphs/%s/run" % rng.choice(ids),
                    b'{"rounds": 3, "verify": %s}' % (b"true" if rng.random() < 0.5 else b"false"))
        elif r < 0.45:
            request("POST", "/v1/graphs", rng.choice(bodies[:4]))  # cache hit
        elif r < 0.6:  # a new graph, then deleted
            k += 1
            st, data = request("POST", "/v1/graphs", graph(30 + k % 50, "soaknew%d" % k))
            if st in (200, 201):
                request("DELETE", "/v1/graphs/" + json.loads(data)["id"])
        elif r < 0.75:
            request("GET", "/v1/graphs/" + rng.choice(ids) + rng.choice(["", "/events.csv"]))
        elif r < 0.85:
            request("GET", "/metrics")
        else:
            send_raw(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n", timeout=1)
        if time.time() >= next_sample:
            samples.append(proc_figures(pid))
            next_sample += 1.0
    print(json.dumps({"requests": n, "rss_kib": [s[0] for s in samples],
                      "fds": [s[1] for s in samples]}))


if __name__ == "__main__":
    if sys.argv[1] == "attacks":
        attacks()
    elif sys.argv[1] == "soak":
        soak(int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)
