"""Checks of arenaflowd's Open Inference Protocol (/v2) for tests/cli_daemon_oip.sh.

Run with /usr/bin/python3 (numpy and onnx). Subcommands:
  models DIR            writes the test repository: ident_<dtype>/1/model.onnx (Identity, one
                        per datatype), mymodel/1/model.onnx (the spec examples' names)
  roundtrip PORT        every datatype through ident_<dtype>, JSON and binary, exact equality
                        (BYTES through ident_bytes: empty, NUL, multi-byte UTF-8, escapes)
  bytes PORT [RUN_DIR]  the strings model (data-movement ops on BYTES) against numpy and
                        `arenaflow run`'s .pb outputs in RUN_DIR; BYTES errors (400s)
  golden PORT           request/response pairs after the specification's examples
  malformed PORT        wrong shape / datatype / short binary / unknown model... -> 400 / 404
  instances PORT        inst2 (2 instances): its config, concurrent requests answered right
  batching PORT         bat (dynamic batching): concurrent requests equal to bat_ref (rtol 1e-5)
                        (the same model unbatched), batches formed (statistics)
  compare PORT MODEL CASE_DIR OUT_NPY
                        the model's outputs for CASE_DIR/input_*.pb equal OUT_NPY
                        (written by `arenaflow run --output-dir`), binary and JSON
Each prints one line per check and exits 1 at the first failure.
"""
import http.client
import json
import os
import struct
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

DTYPES = {  # OIP name: (numpy dtype, ONNX type)
    "BOOL": (np.bool_, TensorProto.BOOL),
    "UINT8": (np.uint8, TensorProto.UINT8),
    "UINT16": (np.uint16, TensorProto.UINT16),
    "UINT32": (np.uint32, TensorProto.UINT32),
    "UINT64": (np.uint64, TensorProto.UINT64),
    "INT8": (np.int8, TensorProto.INT8),
    "INT16": (np.int16, TensorProto.INT16),
    "INT32": (np.int32, TensorProto.INT32),
    "INT64": (np.int64, TensorProto.INT64),
    "FP16": (np.float16, TensorProto.FLOAT16),
    "FP32": (np.float32, TensorProto.FLOAT),
    "FP64": (np.float64, TensorProto.DOUBLE),
}
SHAPE = [2, 3]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def ok(msg):
    print("ok:", msg)


def write_model(path, nodes, inputs, outputs):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(m, path)


def cmd_models(d):
    for name, (_, t) in DTYPES.items():
        write_model(f"{d}/ident_{name.lower()}/1/model.onnx",
                    [helper.make_node("Identity", ["x"], ["y"])],
                    [helper.make_tensor_value_info("x", t, SHAPE)],
                    [helper.make_tensor_value_info("y", t, SHAPE)])
    # the specification's example names: input0 UINT32 [2, 2], input1 BOOL [3];
    # output0 = input0 + input0 (UINT32 [2, 2]), output1 = Not(input1) (BOOL [3]); two versions
    # of the same graph, so a request without a version gets 2
    for version in (1, 2):
        write_model(f"{d}/mymodel/{version}/model.onnx",
                    [helper.make_node("Add", ["input0", "input0"], ["output0"]),
                     helper.make_node("Not", ["input1"], ["output1"])],
                    [helper.make_tensor_value_info("input0", TensorProto.UINT32, [2, 2]),
                     helper.make_tensor_value_info("input1", TensorProto.BOOL, [3])],
                    [helper.make_tensor_value_info("output0", TensorProto.UINT32, [2, 2]),
                     helper.make_tensor_value_info("output1", TensorProto.BOOL, [3])])
    # symbolic dims: planned once per concrete shape; and the same model fixed by config.json
    for name in ("dyn", "dyn_fixed"):
        write_model(f"{d}/{name}/1/model.onnx",
                    [helper.make_node("Relu", ["x"], ["y"])],
                    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])])
    with open(f"{d}/dyn_fixed/config.json", "w") as f:
        json.dump({"dims": {"N": 2}}, f)
    # instances: two sessions of one static model
    write_model(f"{d}/inst2/1/model.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    with open(f"{d}/inst2/config.json", "w") as f:
        json.dump({"instance_group": [{"count": 2, "kind": "KIND_CPU"}]}, f)
    # dynamic batching: y = Relu(x @ W + b) along a batch axis N; bat_ref is the same model
    # unbatched (the reference answers); bat_bad asks batching of a model without a batch axis
    w = numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), "W")
    bias = numpy_helper.from_array(np.array([0.5, -0.25, 0.125, 0], dtype=np.float32), "B")
    for name in ("bat", "bat_ref"):
        g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["m"]),
                               helper.make_node("Add", ["m", "B"], ["a"]),
                               helper.make_node("Relu", ["a"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
                              initializer=[w, bias])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        os.makedirs(f"{d}/{name}/1", exist_ok=True)
        onnx.save(m, f"{d}/{name}/1/model.onnx")
    with open(f"{d}/bat/config.json", "w") as f:
        json.dump({"max_batch_size": 8, "dynamic_batching": {
            "preferred_batch_size": [8], "max_queue_delay_microseconds": 50000}}, f)
    write_model(f"{d}/bat_bad/1/model.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    with open(f"{d}/bat_bad/config.json", "w") as f:
        json.dump({"max_batch_size": 4, "dynamic_batching": {}}, f)
    write_string_models(d)


def string_vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.STRING, shape)


def write_string_models(d):
    """ONNX STRING tensors (OIP BYTES): ident_bytes (Identity), strings (Reshape, Gather, Concat
    with a string initializer, Transpose: handles moved by the data-movement kernels; Equal with a
    Constant value_string), strings_cast (Cast from STRING: no kernel, so unavailable with a reason)."""
    write_model(f"{d}/ident_bytes/1/model.onnx", [helper.make_node("Identity", ["x"], ["y"])],
                [string_vi("x", SHAPE)], [string_vi("y", SHAPE)])
    inits = [numpy_helper.from_array(np.array([3, 2], np.int64), "shp"),
             numpy_helper.from_array(np.array([2, 0], np.int64), "idx"),
             helper.make_tensor("C", TensorProto.STRING, [1, 2], STRING_CONST)]
    g = helper.make_graph([helper.make_node("Constant", [], ["K"], value_string="x"),
                           helper.make_node("Reshape", ["s", "shp"], ["r"]),
                           helper.make_node("Gather", ["r", "idx"], ["g"], axis=0),
                           helper.make_node("Concat", ["g", "C"], ["t"], axis=0),
                           helper.make_node("Transpose", ["t"], ["u"]),
                           helper.make_node("Equal", ["s", "K"], ["e"])], "g",
                          [string_vi("s", SHAPE)],
                          [string_vi("t", [3, 2]), string_vi("u", [2, 3]),
                           helper.make_tensor_value_info("e", TensorProto.BOOL, SHAPE)],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    os.makedirs(f"{d}/strings/1", exist_ok=True)
    onnx.save(m, f"{d}/strings/1/model.onnx")
    write_model(f"{d}/strings_cast/1/model.onnx",
                [helper.make_node("Cast", ["s"], ["t"], to=TensorProto.FLOAT)],
                [string_vi("s", SHAPE)], [helper.make_tensor_value_info("t", TensorProto.FLOAT, SHAPE)])
    t = helper.make_tensor("s", TensorProto.STRING, SHAPE, STRINGS)
    # beside the repository, for `arenaflow run --input s=...`
    with open(os.path.join(os.path.dirname(os.path.abspath(d)), "strings_s.pb"), "wb") as f:
        f.write(t.SerializeToString())


# BYTES samples: empty, embedded NUL, multi-byte UTF-8 (2, 3 and 4 bytes), JSON's escapes
STRINGS = [b"", b"a\0b", "\u00e9\u6f22\U0001F600".encode(), b"q\"\\\n\t\x01", b"x", b"long " * 20]
STRING_CONST = ["\u03ba".encode(), b"z\0y"]


def request(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hdrs, data


def infer(port, model, hdr, binary=b""):
    body = json.dumps(hdr).encode()
    headers = {"Content-Type": "application/json"}
    if binary:
        headers = {"Content-Type": "application/octet-stream",
                   "Inference-Header-Content-Length": str(len(body))}
    return request(port, "POST", f"/v2/models/{model}/infer", body + binary, headers)


def split_binary(hdrs, data):
    """JSON header and binary outputs of a response, by Inference-Header-Content-Length."""
    if "inference-header-content-length" not in hdrs:
        return json.loads(data), b""
    n = int(hdrs["inference-header-content-length"])
    return json.loads(data[:n]), data[n:]


def sample(name, rng):
    dt = DTYPES[name][0]
    n = int(np.prod(SHAPE))
    if name == "BOOL":
        return rng.integers(0, 2, n).astype(np.bool_).reshape(SHAPE)
    if name.startswith("FP"):
        v = rng.standard_normal(n) * 1000
        v[0], v[1] = 0.1, -0.0
        return v.astype(dt).reshape(SHAPE)
    info = np.iinfo(dt)
    hi = min(int(info.max), 2**62)  # JSON reads integers as int64
    v = rng.integers(int(info.min), hi, n, dtype=np.int64 if info.min < 0 else np.uint64)
    v[0], v[1] = info.min, hi
    return v.astype(dt).reshape(SHAPE)


def to_json_data(a, name):
    if name == "BOOL":
        return [bool(x) for x in a.flatten()]
    if name.startswith("FP"):
        return [float(x) for x in a.flatten()]
    return [int(x) for x in a.flatten()]


def cmd_roundtrip(port):
    rng = np.random.default_rng(19)
    for name, (dt, _) in DTYPES.items():
        model = f"ident_{name.lower()}"
        a = sample(name, rng)
        nested = to_json_data(a, name)
        nested = [nested[:3], nested[3:]]  # [[..], [..]]: the nested form
        for mode in ("json-flat", "json-nested", "binary-in", "binary-out", "binary-both"):
            inp = {"name": "x", "shape": SHAPE, "datatype": name}
            binary = b""
            if mode.startswith("json"):
                inp["data"] = nested if mode == "json-nested" else to_json_data(a, name)
            elif mode in ("binary-in", "binary-both"):
                binary = a.tobytes()
                inp["parameters"] = {"binary_data_size": len(binary)}
            else:
                inp["data"] = to_json_data(a, name)
            hdr = {"inputs": [inp]}
            if mode in ("binary-out", "binary-both"):
                hdr["outputs"] = [{"name": "y", "parameters": {"binary_data": True}}]
            st, hdrs, data = infer(port, model, hdr, binary)
            if st != 200:
                fail(f"{name} {mode}: status {st}: {data[:300]!r}")
            head, tail = split_binary(hdrs, data)
            out = head["outputs"][0]
            if out["datatype"] != name or out["shape"] != SHAPE:
                fail(f"{name} {mode}: output {out.get('datatype')} {out.get('shape')}")
            if "data" in out:
                got = np.array(out["data"], dtype=object)
                if name.startswith("FP"):
                    got = np.array([float(x) for x in out["data"]], dtype=dt)
                else:
                    got = np.array(out["data"]).astype(dt)
            else:
                if out["parameters"]["binary_data_size"] != len(tail) or len(tail) != a.nbytes:
                    fail(f"{name} {mode}: binary_data_size {out['parameters']} vs {len(tail)}")
                got = np.frombuffer(tail, dtype=dt)
            if got.tobytes() != a.tobytes():
                fail(f"{name} {mode}: sent {a.flatten()[:6]} got {got[:6]}")
        ok(f"{name}: JSON flat, JSON nested, binary in, binary out, binary both: bit-exact")
    cmd_bytes_roundtrip(port)


def bytes_wire(items):
    """The binary form of BYTES: per element a 4-byte little-endian length, then the bytes."""
    return b"".join(struct.pack("<I", len(x)) + x for x in items)


def bytes_unwire(data, n):
    out, at = [], 0
    for _ in range(n):
        (k,) = struct.unpack_from("<I", data, at)
        out.append(data[at + 4:at + 4 + k])
        at += 4 + k
    if at != len(data):
        fail(f"BYTES binary output: {len(data) - at} bytes after {n} elements")
    return out


def bytes_infer(port, model, name, shape, items, mode, outs):
    """items through model's input `name`; the outputs `outs` (name: element count) as bytes."""
    inp = {"name": name, "shape": shape, "datatype": "BYTES"}
    binary = b""
    if mode in ("binary-in", "binary-both"):
        binary = bytes_wire(items)
        inp["parameters"] = {"binary_data_size": len(binary)}
    else:
        flat = [x.decode() for x in items]
        inp["data"] = [flat[:3], flat[3:]] if mode == "json-nested" else flat
    hdr = {"inputs": [inp]}
    if mode in ("binary-out", "binary-both"):
        hdr["outputs"] = [{"name": o, "parameters": {"binary_data": True}} for o in outs]
    st, hdrs, data = infer(port, model, hdr, binary)
    if st != 200:
        fail(f"{model} {mode}: status {st}: {data[:300]!r}")
    head, tail = split_binary(hdrs, data)
    got, at = {}, 0
    for out in head["outputs"]:
        n = outs[out["name"]]
        if out["datatype"] == "BOOL":  # Equal's answer
            if "data" in out:
                got[out["name"]] = list(out["data"])
            else:
                size = out["parameters"]["binary_data_size"]
                got[out["name"]] = [bool(x) for x in tail[at:at + size]]
                at += size
            continue
        if out["datatype"] != "BYTES":
            fail(f"{model} {mode}: output {out['name']} is {out['datatype']}")
        if "data" in out:
            got[out["name"]] = [x.encode() for x in out["data"]]
        else:
            size = out["parameters"]["binary_data_size"]
            got[out["name"]] = bytes_unwire(tail[at:at + size], n)
            at += size
    if at != len(tail):
        fail(f"{model} {mode}: {len(tail) - at} binary bytes no output claims")
    return head, got


MODES = ("json-flat", "json-nested", "binary-in", "binary-out", "binary-both")


def cmd_bytes_roundtrip(port):
    for mode in MODES:
        head, got = bytes_infer(port, "ident_bytes", "x", SHAPE, STRINGS, mode, {"y": 6})
        if head["outputs"][0]["shape"] != SHAPE or got["y"] != STRINGS:
            fail(f"BYTES {mode}: sent {STRINGS} got {got['y']} {head['outputs'][0]['shape']}")
    ok("BYTES: JSON flat, JSON nested, binary in, binary out, binary both: exact bytes "
       "(empty, NUL, 2/3/4-byte UTF-8, escapes)")


def cmd_bytes(port, run_dir=None):
    """The strings model (Reshape, Gather, Concat with a string constant, Transpose) against
    numpy on object arrays, and against `arenaflow run`'s .pb outputs when run_dir is given; the
    metadata; the BYTES errors."""
    a = np.array(STRINGS, dtype=object).reshape(SHAPE)
    t = np.concatenate([a.reshape(3, 2)[[2, 0]], np.array([STRING_CONST], dtype=object)], axis=0)
    want = {"t": list(t.flatten()), "u": list(t.T.flatten()), "e": [x == b"x" for x in STRINGS]}
    for mode in MODES:
        head, got = bytes_infer(port, "strings", "s", SHAPE, STRINGS, mode, {"t": 6, "u": 6, "e": 6})
        if got != want or [o["shape"] for o in head["outputs"]] != [[3, 2], [2, 3], SHAPE]:
            fail(f"strings {mode}: got {got}, want {want}")
    ok("strings (Reshape, Gather, Concat with a string initializer, Transpose; Equal with a "
       "string scalar): exact bytes, JSON and binary")
    if run_dir:
        for o in ("t", "u"):
            p = onnx.TensorProto()
            with open(f"{run_dir}/{o}.pb", "rb") as f:
                p.ParseFromString(f.read())
            if list(p.string_data) != want[o]:
                fail(f"arenaflow run's {o}: {list(p.string_data)}, the daemon's {want[o]}")
        if list(np.load(f"{run_dir}/e.npy").flatten()) != want["e"]:
            fail(f"arenaflow run's e: {np.load(f'{run_dir}/e.npy')}, the daemon's {want['e']}")
        ok("strings: the daemon's outputs equal `arenaflow run`'s (.pb string_data)")
    st, _, data = request(port, "GET", "/v2/models/ident_bytes")
    meta = json.loads(data)
    if st != 200 or [x["datatype"] for x in meta["inputs"] + meta["outputs"]] != ["BYTES", "BYTES"]:
        fail(f"ident_bytes metadata: {st} {data!r}")
    ok(f"ident_bytes metadata: {data.decode()}")
    st, _, data = request(port, "GET", "/v2/models/ident_bytes/config")
    cfg = json.loads(data)
    if st != 200 or [x["data_type"] for x in cfg["input"] + cfg["output"]] != ["TYPE_STRING"] * 2:
        fail(f"ident_bytes config: {st} {data!r}")
    ok("ident_bytes config: TYPE_STRING (Triton's name of BYTES)")
    # bytes that are not UTF-8: fine in binary, refused (400) as a JSON output
    raw = [b"\xff\xfe", b"ok", b"", b"\xc3", b"x", b"y"]
    _, got = bytes_infer(port, "ident_bytes", "x", SHAPE, raw, "binary-both", {"y": 6})
    if got["y"] != raw:
        fail(f"non-UTF-8 binary round trip: {got['y']}")
    ok("BYTES not UTF-8: binary in and out, exact")
    inp = {"name": "x", "shape": SHAPE, "datatype": "BYTES"}
    wire = bytes_wire(raw)
    st, _, data = infer(port, "ident_bytes",
                        {"inputs": [dict(inp, parameters={"binary_data_size": len(wire)})]}, wire)
    body = expect(st, 400, data, "BYTES not UTF-8 asked as a JSON output")
    if "UTF-8" not in body["error"] or "binary_data" not in body["error"]:
        fail(f"non-UTF-8 JSON output: {body}")
    good = bytes_wire(STRINGS)
    cases = [
        ("BYTES: a length prefix cut short", good[:-len(STRINGS[-1]) - 2], "length prefix"),
        ("BYTES: a length past binary_data_size", good[:-1], "runs past binary_data_size"),
        ("BYTES: bytes left after the elements", good + b"\0\0\0\0", "left after the 6 elements"),
    ]
    for what, wire, why in cases:
        st, _, data = infer(port, "ident_bytes",
                            {"inputs": [dict(inp, parameters={"binary_data_size": len(wire)})]}, wire)
        if why not in expect(st, 400, data, what)["error"]:
            fail(f"{what}: the error does not say '{why}'")
    st, _, data = infer(port, "ident_bytes",
                        {"inputs": [dict(inp, parameters={"binary_data_size": len(good) + 1})]}, good)
    expect(st, 400, data, "BYTES: binary_data_size past the body")
    st, _, data = infer(port, "ident_bytes",
                        {"inputs": [dict(inp, data=["a", 1, "b", "c", "d", "e"])]})
    if "element 1 is not a string" not in expect(st, 400, data, "BYTES: a number among the strings")["error"]:
        fail("BYTES JSON number: the error does not name element 1")
    st, _, data = infer(port, "ident_bytes", {"inputs": [dict(inp, datatype="UINT8", data=[1] * 6)]})
    expect(st, 400, data, "UINT8 for a BYTES input")


def expect(st, want, data, what):
    if st != want:
        fail(f"{what}: expected {want}, got {st}: {data[:300]!r}")
    body = json.loads(data)
    if want >= 400 and (set(body) != {"error"} or not isinstance(body["error"], str)):
        fail(f"{what}: error body is not {{\"error\": \"...\"}}: {data[:300]!r}")
    ok(f"{what} -> {want}" + (f" {data.decode()[:100]}" if want >= 400 else ""))
    return body


def cmd_golden(port):
    # KServe / Triton examples (names as in the spec), our model: output0 = 2 * input0,
    # output1 = not input1
    req = {"id": "42",
           "inputs": [{"name": "input0", "shape": [2, 2], "datatype": "UINT32", "data": [1, 2, 3, 4]},
                      {"name": "input1", "shape": [3], "datatype": "BOOL", "data": [True, False, True]}],
           "outputs": [{"name": "output0"}]}
    st, hdrs, data = infer(port, "mymodel", req)
    want = (b'{"model_name":"mymodel","model_version":"2","id":"42","outputs":[{"name":"output0",'
            b'"datatype":"UINT32","shape":[2,2],"data":[2,4,6,8]}]}')
    if st != 200 or data != want or hdrs.get("content-type") != "application/json":
        fail(f"golden JSON infer: {st} {hdrs.get('content-type')} {data!r}")
    ok("golden JSON infer (spec example: id 42, input0 UINT32 [2,2], input1 BOOL [3]) byte-for-byte")
    # binary tensor data extension example: input0 binary, output0 binary, output1 JSON
    hdr = {"model_name": "mymodel",
           "inputs": [{"name": "input0", "shape": [2, 2], "datatype": "UINT32",
                       "parameters": {"binary_data_size": 16}},
                      {"name": "input1", "shape": [3], "datatype": "BOOL", "data": [True, True, False]}],
           "outputs": [{"name": "output0", "parameters": {"binary_data": True}},
                       {"name": "output1", "parameters": {"binary_data": False}}]}
    st, hdrs, data = infer(port, "mymodel/versions/1", hdr, struct.pack("<4I", 10, 20, 30, 40))
    want_hdr = (b'{"model_name":"mymodel","model_version":"1","outputs":[{"name":"output0",'
                b'"datatype":"UINT32","shape":[2,2],"parameters":{"binary_data_size":16}},'
                b'{"name":"output1","datatype":"BOOL","shape":[3],"data":[false,false,true]}]}')
    want = want_hdr + struct.pack("<4I", 20, 40, 60, 80)
    if (st != 200 or data != want or hdrs.get("inference-header-content-length") != str(len(want_hdr))
            or hdrs.get("content-type") != "application/octet-stream"):
        fail(f"golden binary infer: {st} {hdrs} {data!r}")
    ok(f"golden binary infer (Inference-Header-Content-Length {len(want_hdr)}, 16 binary bytes) byte-for-byte")
    st, _, data = request(port, "GET", "/v2/models/mymodel")
    want = (b'{"name":"mymodel","versions":["1","2"],"platform":"onnx","inputs":[{"name":"input0",'
            b'"datatype":"UINT32","shape":[2,2]},{"name":"input1","datatype":"BOOL","shape":[3]}],'
            b'"outputs":[{"name":"output0","datatype":"UINT32","shape":[2,2]},{"name":"output1",'
            b'"datatype":"BOOL","shape":[3]}]}')
    if st != 200 or data != want:
        fail(f"golden model metadata: {st} {data!r}")
    ok("golden model metadata byte-for-byte")
    for path, want in (("/v2/health/live", b'{"live":true}'), ("/v2/health/ready", b'{"ready":true}'),
                       ("/v2/models/mymodel/ready", b'{"name":"mymodel","ready":true}'),
                       ("/v2/models/mymodel/versions/1/ready", b'{"name":"mymodel","ready":true}')):
        st, _, data = request(port, "GET", path)
        if st != 200 or data != want:
            fail(f"{path}: {st} {data!r}")
        ok(f"GET {path} -> 200 {data.decode()}")
    st, _, data = request(port, "GET", "/v2")
    meta = json.loads(data)
    if st != 200 or meta["name"] != "arenaflowd" or "binary_tensor_data" not in meta["extensions"]:
        fail(f"/v2: {st} {data!r}")
    ok(f"GET /v2 -> {data.decode()}")


def cmd_malformed(port):
    good = {"name": "input0", "shape": [2, 2], "datatype": "UINT32", "data": [1, 2, 3, 4]}
    b1 = {"name": "input1", "shape": [3], "datatype": "BOOL", "data": [True, False, True]}
    cases = [
        ("wrong shape", {"inputs": [dict(good, shape=[4]), b1]}, b"", 400),
        ("wrong datatype", {"inputs": [dict(good, datatype="INT32"), b1]}, b"", 400),
        ("unknown datatype", {"inputs": [dict(good, datatype="FP8"), b1]}, b"", 400),
        ("too few elements", {"inputs": [dict(good, data=[1, 2, 3]), b1]}, b"", 400),
        ("too many elements", {"inputs": [dict(good, data=[1, 2, 3, 4, 5]), b1]}, b"", 400),
        ("out of range", {"inputs": [dict(good, data=[1, 2, 3, -4]), b1]}, b"", 400),
        ("float for an integer", {"inputs": [dict(good, data=[1, 2, 3, 4.5]), b1]}, b"", 400),
        ("number for BOOL", {"inputs": [good, dict(b1, data=[1, 0, 1])]}, b"", 400),
        ("missing input", {"inputs": [good]}, b"", 400),
        ("input given twice", {"inputs": [good, good, b1]}, b"", 400),
        ("unknown input", {"inputs": [good, b1, dict(good, name="nope")]}, b"", 400),
        ("unknown output", {"inputs": [good, b1], "outputs": [{"name": "nope"}]}, b"", 400),
        ("short binary data", {"inputs": [dict(good, data=None, parameters={"binary_data_size": 16}), b1]},
         b"\0" * 12, 400),
        ("wrong binary_data_size", {"inputs": [dict(good, parameters={"binary_data_size": 12}), b1]},
         b"\0" * 12, 400),
        ("binary left over", {"inputs": [good, b1]}, b"\0" * 8, 400),
        ("no inputs", {"outputs": []}, b"", 400),
        ("BYTES as JSON strings", {"inputs": [dict(good, datatype="BYTES", shape=[4],
                                                   data=["a", "bc", "", "d"]), b1]}, b"", 400),
        ("BYTES as binary (4-byte lengths)",
         {"inputs": [dict(good, datatype="BYTES", shape=[2], data=None,
                          parameters={"binary_data_size": 11}), b1]},
         struct.pack("<I", 2) + b"ab" + struct.pack("<I", 1) + b"c", 400),
    ]
    for what, hdr, binary, want in cases:
        for i in hdr.get("inputs", []):
            if i.get("data", 0) is None:
                del i["data"]
        st, _, data = infer(port, "mymodel", hdr, binary)
        expect(st, want, data, what)
    st, _, data = request(port, "POST", "/v2/models/mymodel/infer", b"{not json", {})
    expect(st, 400, data, "malformed JSON")
    st, _, data = request(port, "POST", "/v2/models/mymodel/infer", b"{}",
                          {"Inference-Header-Content-Length": "99"})
    expect(st, 400, data, "Inference-Header-Content-Length past the body")
    st, _, data = request(port, "POST", "/v2/models/mymodel/infer", b"{}",
                          {"Inference-Header-Content-Length": "x1"})
    expect(st, 400, data, "Inference-Header-Content-Length not a number")
    for path in ("/v2/models/nope", "/v2/models/nope/infer", "/v2/models/mymodel/versions/7",
                 "/v2/models/mymodel/versions/7/infer", "/v2/models/mymodel/versions/x",
                 "/v2/models/mymodel/bogus", "/v2/nothing", "/v2/models/bad%00name"):
        st, _, data = request(port, "POST" if path.endswith("infer") else "GET", path,
                              b"{}" if path.endswith("infer") else None)
        expect(st, 404, data, f"{path}")
    st, h, data = request(port, "GET", "/v2/models/mymodel/infer")
    expect(st, 405, data, "GET on infer")
    if h.get("allow") != "POST":
        fail(f"405 without Allow: POST: {h}")


def cmd_shapes(port):
    st, _, data = request(port, "GET", "/v2/models/dyn")
    meta = json.loads(data)
    if st != 200 or meta["inputs"] != [{"name": "x", "datatype": "FP32", "shape": [-1, 3]}]:
        fail(f"dyn metadata: {st} {data!r}")
    ok("symbolic dims in metadata: x [-1, 3]")
    st, _, data = request(port, "GET", "/v2/models/dyn_fixed")
    if st != 200 or json.loads(data)["inputs"][0]["shape"] != [2, 3]:
        fail(f"dyn_fixed metadata: {st} {data!r}")
    ok("config.json fixes N = 2: x [2, 3]")
    rng = np.random.default_rng(5)
    for n in (1, 2, 5, 1, 3, 4, 2, 7, 1):  # more shapes than max_shapes: evictions, replans
        a = rng.standard_normal((n, 3)).astype(np.float32)
        for binary in (False, True):
            inp = {"name": "x", "shape": [n, 3], "datatype": "FP32"}
            if binary:
                inp["parameters"] = {"binary_data_size": a.nbytes}
            else:
                inp["data"] = a.tolist()
            hdr = {"inputs": [inp], "parameters": {"binary_data_output": True}}
            st, hdrs, data = infer(port, "dyn", hdr, a.tobytes() if binary else b"")
            if st != 200:
                fail(f"dyn N={n}: {st} {data[:200]!r}")
            head, tail = split_binary(hdrs, data)
            got = np.frombuffer(tail, dtype=np.float32).reshape(n, 3)
            if head["outputs"][0]["shape"] != [n, 3] or got.tobytes() != np.maximum(a, 0).tobytes():
                fail(f"dyn N={n}: wrong output {head} {got}")
    ok("dyn: N = 1, 2, 5, 1, 3, 4, 2, 7, 1 (JSON and binary) each Relu-exact")
    # a batch of 0 through MatMul + bias + Relu (oneDNN raised SIGFPE making that primitive)
    st, _, data = infer(port, "bat_ref", {"inputs": [{"name": "x", "shape": [0, 3],
                                                      "datatype": "FP32", "data": []}]})
    if st != 200:
        fail(f"bat_ref N=0: {st} {data[:200]!r}")
    out = json.loads(data)["outputs"][0]
    if out["shape"] != [0, 4] or out["data"] != []:
        fail(f"bat_ref N=0: wrong output {out}")
    st, _, data = request(port, "GET", "/v2/health/ready")
    expect(st, 200, data, "ready after a batch of 0")
    ok("bat_ref: N = 0 answers shape [0, 4], no data")
    st, _, data = infer(port, "dyn", {"inputs": [{"name": "x", "shape": [3], "datatype": "FP32",
                                                  "data": [1, 2, 3]}]})
    expect(st, 400, data, "dyn: wrong rank")
    st, _, data = infer(port, "dyn", {"inputs": [{"name": "z", "shape": [1, 3], "datatype": "FP32",
                                                  "data": [1, 2, 3]}]})
    expect(st, 400, data, "dyn: unknown input")
    st, _, data = infer(port, "dyn_fixed", {"inputs": [{"name": "x", "shape": [1, 3], "datatype": "FP32",
                                                        "data": [1, 2, 3]}]})
    expect(st, 400, data, "dyn_fixed: N other than the config's 2")


def parallel(fn, items, threads=12):
    import threading
    out, errs = [None] * len(items), []

    def run(k):
        for i in range(k, len(items), threads):
            try:
                out[i] = fn(items[i])
            except Exception as e:  # reported below
                errs.append(f"{items[i]!r}: {e}")
    ts = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        fail("; ".join(errs[:3]))
    return out


def infer_f32(port, model, a, binary):
    inp = {"name": "x", "shape": list(a.shape), "datatype": "FP32"}
    if binary:
        inp["parameters"] = {"binary_data_size": a.nbytes}
    else:
        inp["data"] = a.tolist()
    hdr = {"inputs": [inp], "parameters": {"binary_data_output": binary}}
    st, hdrs, data = infer(port, model, hdr, a.tobytes() if binary else b"")
    if st != 200:
        raise RuntimeError(f"{model} {a.shape}: {st} {data[:200]!r}")
    head, tail = split_binary(hdrs, data)
    out = head["outputs"][0]
    got = (np.frombuffer(tail, dtype=np.float32) if binary
           else np.array(out["data"], dtype=np.float32))
    return out["shape"], got.tobytes()


def cmd_instances(port):
    st, _, data = request(port, "GET", "/v2/models/inst2/config")
    cfg = json.loads(data)
    if st != 200 or cfg.get("instance_group") != [{"count": 2, "kind": "KIND_CPU"}]:
        fail(f"inst2 config: {st} {data!r}")
    ok("inst2 config: instance_group [{count 2, KIND_CPU}]")
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(24)]
    got = parallel(lambda a: infer_f32(port, "inst2", a, True), xs)
    for a, (shape, b) in zip(xs, got):
        if shape != [2, 3] or b != np.maximum(a, 0).tobytes():
            fail(f"inst2: wrong answer {shape}")
    ok("inst2: 24 concurrent requests, every answer Relu-exact")


def cmd_batching(port):
    st, _, data = request(port, "GET", "/v2/models/bat/config")
    cfg = json.loads(data)
    want = {"preferred_batch_size": [8], "max_queue_delay_microseconds": 50000}
    if st != 200 or cfg.get("max_batch_size") != 8 or cfg.get("dynamic_batching") != want or \
            cfg["input"][0]["dims"] != [3]:
        fail(f"bat config: {st} {data!r}")
    ok("bat config: max_batch_size 8, dynamic_batching, input dims [3] without the batch axis")
    rng = np.random.default_rng(11)
    xs = [rng.standard_normal((1 + i % 3, 3)).astype(np.float32) for i in range(30)]
    ref = [infer_f32(port, "bat_ref", a, True) for a in xs]  # one at a time, unbatched
    st, _, data = request(port, "GET", "/v2/models/bat/stats")
    before = json.loads(data)["model_stats"][0]
    got = parallel(lambda ab: infer_f32(port, "bat", ab[0], ab[1]),
                   [(a, i % 2 == 0) for i, a in enumerate(xs)])
    # the rows of a batch go through one MatMul of M rows: oneDNN may pick another kernel (other
    # sums) for another M on some CPUs (AVX2-only), so equal within float rounding, not bytes;
    # a row answered from another request's data differs by far more
    for i, (r, g) in enumerate(zip(ref, got)):
        rv, gv = np.frombuffer(r[1], dtype=np.float32), np.frombuffer(g[1], dtype=np.float32)
        if r[0] != g[0] or not np.allclose(gv, rv, rtol=1e-5, atol=1e-6):
            fail(f"bat request {i} (rows {xs[i].shape[0]}): batched answer differs: {g[0]} vs {r[0]}, "
                 f"max abs {np.max(np.abs(gv - rv)) if gv.size == rv.size else 'size'}")
    ok("bat: 30 concurrent requests (1-3 rows, JSON and binary) equal to bat_ref unbatched (rtol 1e-5)")
    st, _, data = request(port, "GET", "/v2/models/bat/stats")
    s = json.loads(data)["model_stats"][0]
    n = s["inference_count"] - before["inference_count"]
    e = s["execution_count"] - before["execution_count"]
    sizes = [b["batch_size"] for b in s["batch_stats"]]
    if n != 30 or e >= n or not sizes or max(sizes) < 2:
        fail(f"bat stats: {n} inferences in {e} executions, batch sizes {sizes}")
    ok(f"bat stats: 30 inferences in {e} executions; batch_stats sizes {sizes}")
    st, _, data = infer(port, "bat", {"inputs": [{"name": "x", "shape": [9, 3], "datatype": "FP32",
                                                  "data": [0.0] * 27}]})
    expect(st, 400, data, "bat: 9 rows over max_batch_size 8")


def cmd_compare(port, model, case_dir, out_npy, dump=None):
    ins = sorted(f for f in os.listdir(case_dir) if f.startswith("input_"))
    tensors = []
    for f in ins:
        t = onnx.TensorProto()
        t.ParseFromString(open(os.path.join(case_dir, f), "rb").read())
        tensors.append((t.name, numpy_helper.to_array(t)))
    st, _, data = request(port, "GET", f"/v2/models/{model}")
    meta = json.loads(data)
    names = [i["name"] for i in meta["inputs"]]
    want = np.load(out_npy)
    for mode in ("binary", "json"):
        inputs, binary = [], b""
        for k, (tname, a) in enumerate(tensors):
            name = tname or names[k]
            dt = [n for n, (d, _) in DTYPES.items() if np.dtype(d) == a.dtype][0]
            e = {"name": name, "shape": list(a.shape), "datatype": dt}
            if mode == "binary":
                e["parameters"] = {"binary_data_size": a.nbytes}
                binary += a.tobytes()
            else:
                e["data"] = a.flatten().tolist()
            inputs.append(e)
        hdr = {"inputs": inputs, "parameters": {"binary_data_output": True}}
        st, hdrs, data = infer(port, model, hdr, binary)
        if st != 200:
            fail(f"{model} {mode}: {st} {data[:300]!r}")
        head, tail = split_binary(hdrs, data)
        out = head["outputs"][0]
        got = np.frombuffer(tail[:out["parameters"]["binary_data_size"]], dtype=want.dtype)
        if list(out["shape"]) != list(want.shape) or got.tobytes() != want.tobytes():
            fail(f"{model} {mode}: outputs differ from arenaflow run (max abs diff "
                 f"{np.max(np.abs(got.astype(np.float64) - want.flatten())) if got.size == want.size else 'n/a'})")
        ok(f"{model} ({mode} inputs): {want.size} output elements identical to `arenaflow run`")
    exp = os.path.join(case_dir, "output_0.pb")
    if os.path.exists(exp):
        t = onnx.TensorProto()
        t.ParseFromString(open(exp, "rb").read())
        ref = numpy_helper.to_array(t)
        diff = float(np.max(np.abs(got.reshape(ref.shape).astype(np.float64) - ref)))
        if not np.allclose(got.reshape(ref.shape), ref, rtol=1e-4, atol=1e-5):
            fail(f"{model}: max abs diff {diff} from the test data's expected output_0.pb")
        ok(f"{model}: within 1e-4 of the ONNX test data's expected output (max abs diff {diff:.2e})")
    if dump:  # for ONNX Runtime: the (single) input and the served output, raw
        open(dump + ".in.raw", "wb").write(tensors[0][1].astype(np.float32).tobytes())
        open(dump + ".dims", "w").write(",".join(str(x) for x in tensors[0][1].shape))
        open(dump + ".served.raw", "wb").write(got.tobytes())


def cmd_ortcmp(served, ort):
    a = np.fromfile(served, dtype=np.float32)
    b = np.fromfile(ort, dtype=np.float32)
    if a.shape != b.shape:
        fail(f"ONNX Runtime gave {b.size} elements, the daemon {a.size}")
    diff = float(np.max(np.abs(a.astype(np.float64) - b)))
    if not np.allclose(a, b, rtol=1e-4, atol=1e-5):
        fail(f"the daemon's output differs from ONNX Runtime's (max abs diff {diff})")
    ok(f"{os.path.basename(os.path.dirname(served))}: {a.size} served elements within 1e-4 of ONNX Runtime (max abs diff {diff:.2e})")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "models":
        cmd_models(args[0])
    elif cmd == "roundtrip":
        cmd_roundtrip(int(args[0]))
    elif cmd == "bytes":
        cmd_bytes(int(args[0]), args[1] if len(args) > 1 else None)
    elif cmd == "golden":
        cmd_golden(int(args[0]))
    elif cmd == "malformed":
        cmd_malformed(int(args[0]))
    elif cmd == "shapes":
        cmd_shapes(int(args[0]))
    elif cmd == "instances":
        cmd_instances(int(args[0]))
    elif cmd == "batching":
        cmd_batching(int(args[0]))
    elif cmd == "compare":
        cmd_compare(int(args[0]), args[1], args[2], args[3], args[4] if len(args) > 4 else None)
    elif cmd == "ortcmp":
        cmd_ortcmp(args[0], args[1])
    else:
        fail(f"unknown command {cmd}")
