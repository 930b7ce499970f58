#!/usr/bin/env python3
"""Socket-level helpers for the arenaflowd shell tests (tests/cli_daemon_*.sh). Standard
library only (the pyenv python3 on PATH has no numpy/onnx).

  daemon_probe.py healthz PORT SECONDS OUT   /healthz every 10 ms on one keep-alive connection
                                             (reconnecting when closed); writes "max_ms n_probes
                                             failures" to OUT (stops early when OUT.stop exists)
  daemon_probe.py raw PORT [TIMEOUT]         sends stdin as bytes, prints what comes back, in
                                             Python repr, until close or TIMEOUT seconds
  daemon_probe.py gen KIND N OUT             writes a test graph: wide (N nodes fanning out of
                                             one input into one concat), chain, attrs (one node
                                             with N attributes), bare (N nodes {"op":"X"}),
                                             objects (a JSON array of N {})
"""
import json
import os
import socket
import sys
import time


def healthz(port, seconds, out):
    deadline = time.time() + seconds
    worst, n, failures = 0.0, 0, 0
    s = None
    req = b"GET /healthz HTTP/1.1\r\nHost: probe\r\n\r\n"
    while time.time() < deadline and not os.path.exists(out + ".stop"):
        t0 = time.perf_counter()
        try:
            if s is None:
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(req)
            data = b""
            while b"\r\n\r\nok\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    raise OSError("closed")
                data += chunk
            if not data.startswith(b"HTTP/1.1 200"):
                failures += 1
        except OSError:
            failures += 1
            if s is not None:
                s.close()
            s = None
            continue
        dt = (time.perf_counter() - t0) * 1000.0
        worst = max(worst, dt)
        n += 1
        with open(out + ".tmp", "w") as f:
            f.write("%.3f %d %d\n" % (worst, n, failures))
        os.replace(out + ".tmp", out)
        time.sleep(0.01)


def raw(port, timeout):
    data = sys.stdin.buffer.read()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    got = b""
    end = time.time() + timeout
    try:
        while time.time() < end:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    print(repr(got))


def gen(kind, n, out):
    t = [{"name": "x", "kind": "input", "bytes": 4096}]
    nodes = []
    if kind == "wide":
        for i in range(n):
            t.append({"name": "t%d" % i, "bytes": 256 << (i % 3)})
            nodes.append({"name": "n%d" % i, "op": "Relu", "inputs": ["x"], "outputs": ["t%d" % i]})
        t.append({"name": "y", "kind": "output", "bytes": 256})
        nodes.append({"name": "cat", "op": "Concat", "inputs": ["t%d" % i for i in range(n)],
                      "outputs": ["y"]})
    elif kind == "chain":
        prev = "x"
        for i in range(n):
            t.append({"name": "t%d" % i, "bytes": 1024 << (i % 4)})
            nodes.append({"name": "n%d" % i, "op": "Relu", "inputs": [prev],
                          "outputs": ["t%d" % i]})
            prev = "t%d" % i
        t[-1]["kind"] = "output"
    elif kind == "attrs":
        t.append({"name": "y", "kind": "output", "bytes": 64})
        nodes.append({"name": "n", "op": "Relu", "inputs": ["x"], "outputs": ["y"],
                      "attrs": {"a%d" % i: i for i in range(n)}})
    elif kind == "bare":  # N nodes of 11 bytes each ({"op":"X"}): 10^6 nodes in 11 MB
        with open(out, "w") as f:
            f.write('{"format":"arenaflow-graph","version":1,"tensors":[],"nodes":[' +
                    ",".join(['{"op":"X"}'] * n) + "]}")
        return
    elif kind == "objects":
        with open(out, "w") as f:
            f.write("[" + ",".join(["{}"] * n) + "]")
        return
    else:
        sys.exit("unknown kind " + kind)
    with open(out, "w") as f:
        json.dump({"format": "arenaflow-graph", "version": 1, "name": "%s%d" % (kind, n),
                   "tensors": t, "nodes": nodes}, f, separators=(",", ":"))


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "healthz":
        healthz(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) >= 3 and sys.argv[1] == "raw":
        raw(int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 5.0)
    elif len(sys.argv) == 5 and sys.argv[1] == "gen":
        gen(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(__doc__)
