/*
 * Unit tests of arenaflowd's Open Inference Protocol side, socket-free (af__daemon_handle on a
 * private loop): the FP16 conversion (every one of the 65536 patterns, and round-to-nearest-even
 * at every midpoint), the JSON tensor codec of every datatype (range and type errors), and a
 * model repository with a JSON-graph model (Relu, f32) served through /v2: metadata, JSON and
 * binary inference, many requests in flight at once (rounds in flight on one session: the TSan
 * build checks them), unload while requests are in flight, reload, and destroy with inferences
 * still queued.
 */
#include "daemon/oip_int.h"
#include "tests/daemon_testutil.h"

#include <math.h>

static void test_f16_every_pattern(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = af__oip_f16_to_f32((uint16_t)h);
        uint16_t back = af__oip_f32_to_f16(f);
        if (isnan(f)) {
            assert_true((back & 0x7C00u) == 0x7C00u && (back & 0x3FFu) != 0);
            continue;
        }
        if (back != h)
            fail_msg("f16 0x%04x -> %g -> 0x%04x", h, (double)f, back);
        /* the midpoint to the next pattern (same sign, finite) rounds to the even one */
        if ((h & 0x7FFFu) >= 0x7BFFu)
            continue;
        float g = af__oip_f16_to_f32((uint16_t)(h + 1));
        float mid = (float)(((double)f + (double)g) / 2);
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        if (af__oip_f32_to_f16(mid) != even)
            fail_msg("midpoint of 0x%04x and 0x%04x -> 0x%04x", h, h + 1, af__oip_f32_to_f16(mid));
    }
    assert_int_equal(af__oip_f32_to_f16(65520.0f), 0x7C00); /* past the largest: infinity */
    assert_int_equal(af__oip_f32_to_f16(-1e-8f), 0x8000);   /* underflow keeps the sign */
}

/* Reads JSON text as dt (n elements) and writes it back; the text must come back as `want`. */
static void codec(int dt, const char *in, uint64_t n, const char *want)
{
    uint8_t buf[64];
    char msg[256];
    json_t *j = json_loads(in, JSON_DECODE_ANY, NULL);
    assert_non_null(j);
    if (af__oip_json_read(j, dt, n, buf, msg, sizeof(msg)) != 0)
        fail_msg("%s as %s: %s", in, af__oip_dtype_name(dt), msg);
    json_decref(j);
    char *b = NULL;
    size_t len = 0, cap = 0;
    assert_int_equal(af__oip_json_write(&b, &len, &cap, buf, dt, n), 0);
    if (strcmp(b, want) != 0)
        fail_msg("%s as %s came back as %s, want %s", in, af__oip_dtype_name(dt), b, want);
    free(b);
}

static void codec_fails(int dt, const char *in, uint64_t n, const char *why)
{
    uint8_t buf[64];
    char msg[256] = "";
    json_t *j = json_loads(in, JSON_DECODE_ANY, NULL);
    assert_non_null(j);
    assert_int_equal(af__oip_json_read(j, dt, n, buf, msg, sizeof(msg)), -1);
    if (!strstr(msg, why))
        fail_msg("%s as %s: message '%s' lacks '%s'", in, af__oip_dtype_name(dt), msg, why);
    json_decref(j);
}

static void test_json_codec(void **state)
{
    (void)state;
    codec(AF_DTYPE_BOOL, "[[true,false],[false,true]]", 4, "[true,false,false,true]");
    codec(AF_DTYPE_U8, "[0,255]", 2, "[0,255]");
    codec(AF_DTYPE_I8, "[-128,127]", 2, "[-128,127]");
    codec(AF_DTYPE_U16, "[65535]", 1, "[65535]");
    codec(AF_DTYPE_I16, "[-32768,32767]", 2, "[-32768,32767]");
    codec(AF_DTYPE_U32, "[4294967295]", 1, "[4294967295]");
    codec(AF_DTYPE_I32, "[-2147483648]", 1, "[-2147483648]");
    codec(AF_DTYPE_I64, "[-9223372036854775808,9223372036854775807]", 2,
          "[-9223372036854775808,9223372036854775807]");
    codec(AF_DTYPE_U64, "[9223372036854775807]", 1, "[9223372036854775807]");
    codec(AF_DTYPE_F32, "[0.1,-0.0,1,\"nan\",\"-inf\"]", 5,
          "[0.100000001,-0.0,1.0,\"nan\",\"-inf\"]");
    codec(AF_DTYPE_F64, "[0.1,1e300]", 2, "[0.10000000000000001,1.0000000000000001e+300]");
    codec(AF_DTYPE_F16, "[0.1,65504,1e6]", 3, "[0.099976,65504.0,\"inf\"]");
    codec(AF_DTYPE_BF16, "[1.5,3]", 2, "[1.5,3.0]");
    codec(AF_DTYPE_F32, "2.5", 1, "[2.5]"); /* rank 0: a scalar */
    codec_fails(AF_DTYPE_U8, "[256]", 1, "out of range");
    codec_fails(AF_DTYPE_I8, "[-129]", 1, "out of range");
    codec_fails(AF_DTYPE_U64, "[-1]", 1, "out of range");
    codec_fails(AF_DTYPE_I32, "[1.5]", 1, "not an integer");
    codec_fails(AF_DTYPE_BOOL, "[1]", 1, "not true or false");
    codec_fails(AF_DTYPE_F32, "[\"x\"]", 1, "not a number");
    codec_fails(AF_DTYPE_F32, "[1,2]", 3, "2 elements, the shape 3");
    codec_fails(AF_DTYPE_F32, "[1,2,3,4]", 3, "more than the 3");
    codec_fails(AF_DTYPE_F32, "[[[[[[[[[[1]]]]]]]]]]", 1, "deeper");
    int dt;
    assert_int_equal(af__oip_dtype_parse("BYTES", &dt), 0);
    assert_int_equal(dt, AF_DTYPE_STRING);
    assert_string_equal(af__oip_dtype_name(AF_DTYPE_STRING), "BYTES");
    assert_int_equal(af__oip_dtype_parse("fp32", &dt), -1); /* names are case-sensitive */
}

/* BYTES in JSON: strings (nested or flat) read as handles into jansson's copy and written back
 * escaped; anything but a string is refused with its index. */
static void test_bytes_json(void **state)
{
    (void)state;
    const char *in = "[[\"\", \"a\\u0000b\"], [\"\\u00e9\\u6f22\\ud83d\\ude00\", "
                     "\"q\\\"\\\\\\n\\t\"]]";
    json_t *j = json_loads(in, JSON_ALLOW_NUL, NULL); /* as the daemon parses headers */
    assert_non_null(j);
    af_string_t h[4];
    char msg[256];
    if (af__oip_json_read(j, AF_DTYPE_STRING, 4, h, msg, sizeof(msg)) != 0)
        fail_msg("%s", msg);
    assert_int_equal(h[0].len, 0);
    assert_int_equal(h[1].len, 3);
    assert_memory_equal(h[1].data, "a\0b", 3);
    assert_int_equal(h[2].len, 2 + 3 + 4); /* UTF-8 of U+00E9, U+6F22, U+1F600 */
    assert_memory_equal(h[2].data, "\xc3\xa9\xe6\xbc\xa2\xf0\x9f\x98\x80", 9);
    assert_int_equal(af__oip_strings_utf8(h, 4), -1);
    char *b = NULL;
    size_t len = 0, cap = 0;
    assert_int_equal(af__oip_json_write(&b, &len, &cap, h, AF_DTYPE_STRING, 4), 0);
    assert_string_equal(b, "[\"\",\"a\\u0000b\",\"\xc3\xa9\xe6\xbc\xa2\xf0\x9f\x98\x80\","
                           "\"q\\\"\\\\\\n\\u0009\"]");
    json_t *back =
        json_loads(b, JSON_ALLOW_NUL, NULL); /* what we wrote is JSON with the same strings */
    assert_non_null(back);
    af_string_t h2[4];
    assert_int_equal(af__oip_json_read(back, AF_DTYPE_STRING, 4, h2, msg, sizeof(msg)), 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(h2[i].len, h[i].len);
        assert_memory_equal(h2[i].data, h[i].data, h[i].len);
    }
    json_decref(back);
    free(b);
    json_decref(j);
    codec_fails(AF_DTYPE_STRING, "[\"a\", 1]", 2, "element 1 is not a string");
    codec_fails(AF_DTYPE_STRING, "[\"a\"]", 2, "1 elements, the shape 2");
    char text_msg[256];
    assert_int_equal(
        af__oip_text_read("[1,2]", 5, AF_DTYPE_STRING, 2, h, text_msg, sizeof(text_msg)), -1);
    assert_non_null(strstr(text_msg, "element 0 is not a string"));
    /* bytes that are not UTF-8 (a lone continuation byte, an overlong '/', a surrogate) */
    const char *bad[] = {"ok\x80", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe6\xbc"};
    for (size_t i = 0; i < AF_ARRAY_SIZE(bad); i++) {
        af_string_t x[2] = {{"fine", 4}, {bad[i], strlen(bad[i])}};
        assert_int_equal(af__oip_strings_utf8(x, 2), 1);
    }
}

/* BYTES in binary: 4-byte little-endian lengths, then the bytes; every malformed form a message. */
static void test_bytes_binary(void **state)
{
    (void)state;
    static const uint8_t wire[] = {0, 0, 0, 0, 3, 0, 0, 0, 'a', 0, 'b', 2, 0, 0, 0, 0xff, 0xfe};
    af_string_t h[3];
    char msg[256] = "";
    assert_int_equal(af__oip_bytes_read(wire, sizeof(wire), 3, h, msg, sizeof(msg)), 0);
    assert_int_equal(h[0].len, 0);
    assert_int_equal(h[1].len, 3);
    assert_memory_equal(h[1].data, "a\0b", 3);
    assert_int_equal(h[2].len, 2);
    assert_int_equal(af__oip_strings_utf8(h, 3), 2);
    assert_int_equal(af__oip_bytes_size(h, 3), sizeof(wire));
    char *b = NULL;
    size_t len = 0, cap = 0;
    assert_int_equal(af__oip_bytes_write(&b, &len, &cap, h, 3), 0);
    assert_int_equal(len, sizeof(wire));
    assert_memory_equal(b, wire, sizeof(wire));
    free(b);
    static const struct {
        size_t n;
        uint64_t numel;
        const char *why;
    } cases[] = {
        {2, 1, "2 bytes left, a 4-byte length prefix expected"},
        {9, 2, "element 1: length 3 runs past binary_data_size (1 bytes left)"},
        {sizeof(wire), 2, "6 bytes of binary_data_size are left after the 2 elements"},
        {sizeof(wire) - 1, 3, "element 2: length 2 runs past"},
    };
    for (size_t i = 0; i < AF_ARRAY_SIZE(cases); i++) {
        msg[0] = 0;
        assert_int_equal(af__oip_bytes_read(wire, cases[i].n, cases[i].numel, h, msg, sizeof(msg)),
                         -1);
        if (!strstr(msg, cases[i].why))
            fail_msg("case %zu: '%s' lacks '%s'", i, msg, cases[i].why);
    }
}

/* ---- a repository served through af__daemon_handle ----------------------------------------- */

static const char relu_graph[] =
    "{\"format\":\"arenaflow-graph\",\"version\":1,\"name\":\"relu\",\"tensors\":["
    "{\"name\":\"x\",\"kind\":\"input\",\"dtype\":\"f32\",\"shape\":[2,2]},"
    "{\"name\":\"y\",\"kind\":\"output\",\"dtype\":\"f32\",\"shape\":[2,2]}],"
    "\"nodes\":[{\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":[\"y\"]}]}";

/* A daemon serving DIR/relu/1/model.json (and DIR/relu/config.json = config, when given). */
static af__daemon_t *repo_daemon_max(char *dir, int64_t max_inflight, const char *config)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/relu/1", dir);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof(path), "%s/relu/1/model.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(relu_graph, f);
    fclose(f);
    if (config) {
        snprintf(path, sizeof(path), "%s/relu/config.json", dir);
        assert_non_null(f = fopen(path, "w"));
        fputs(config, f);
        fclose(f);
    }
    af__dcfg_t cfg;
    test_cfg(&cfg, NULL);
    snprintf(cfg.model_repository, sizeof(cfg.model_repository), "%s", dir);
    snprintf(cfg.model_kernels, sizeof(cfg.model_kernels), "reference");
    cfg.max_infers = max_inflight;
    cfg.lim.max_body = 1 << 20;
    cfg.lim.max_parse_bytes = 1 << 20;
    af__daemon_t *d = NULL;
    assert_int_equal(af__daemon_create(&loop, &cfg, &d), 0);
    for (int i = 0; !((af__oip_t *)d->oip)->loaded && i < 10000000; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(((af__oip_t *)d->oip)->loaded);
    wait_ready(d); /* /v2/health/ready also waits for the (empty) state directory's load */
    return d;
}

static af__daemon_t *repo_daemon(char *dir)
{
    return repo_daemon_max(dir, 64, NULL);
}

static const char infer_json[] =
    "{\"inputs\":[{\"name\":\"x\",\"shape\":[2,2],\"datatype\":\"FP32\",\"data\":[1,-2,3,-4]}]}";
static const char infer_want[] = "{\"model_name\":\"relu\",\"model_version\":\"1\",\"outputs\":[{"
                                 "\"name\":\"y\",\"datatype\":\"FP32\",\"shape\":[2,2],\"data\":"
                                 "[1.0,0.0,3.0,0.0]}]}";

/* af__oip_fmt_float against snprintf("%.*g"): every FP16 value at 5 digits, and random and
 * chosen float bit patterns at 9 and 4 digits (fixed seed), byte for byte. */
static void test_fmt_float_is_printf(void **state)
{
    (void)state;
    char a[48], b[48];
    uint64_t seed = 0x9E3779B97F4A7C15ull, done = 0;
    for (uint32_t i = 0; i < 65536 + 3000000; i++) {
        float f;
        int P = 9;
        if (i < 65536) {
            f = af__oip_f16_to_f32((uint16_t)i);
            P = 5;
        } else {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            uint32_t bits = (uint32_t)seed;
            if (i % 3 == 0) /* magnitudes near 1: the common case */
                bits = (bits & 0x807FFFFFu) | ((uint32_t)(110 + (seed >> 40) % 40) << 23);
            memcpy(&f, &bits, 4);
            P = i % 7 == 0 ? 4 : 9;
        }
        int n = af__oip_fmt_float(f, P, a);
        if (n == 0)
            continue;
        snprintf(b, sizeof(b), "%.*g", P, (double)f);
        a[n] = 0;
        if (strcmp(a, b) != 0)
            fail_msg("%.9g (P %d): '%s', printf '%s' (seed 0x9E3779B97F4A7C15)", (double)f, P, a,
                     b);
        done++;
    }
    assert_true(done > 1000000);  /* the fast path covers magnitudes 2^-21 .. 2^64 */
    float halfway = 31250.03125f; /* exactly between 9-digit neighbours: half to even */
    int n = af__oip_fmt_float(halfway, 9, a);
    a[n] = 0;
    assert_string_equal(a, "31250.0312");
}

/* The "data" arrays taken out of a header before the parse: which are, which are left to jansson
 * (anything it must judge), and the elements read from the text equal jansson's, messages too. */
static void test_fast_split(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int spans;      /* spans found */
        long input_of1; /* the input index of the last span */
    } cases[] = {
        {"{\"inputs\": [{\"name\": \"x\", \"data\": [1, 2.5e-3, [-3]]}]}", 1, 0},
        {"{\"id\": \"a\", \"inputs\": [{\"data\": [true]}, {\"name\": \"y\", \"data\": "
         "[[1],[2]]}]}",
         2, 1},
        {"{\"inputs\": [{\"name\": \"\\\"data\\\": [1]\", \"data\": [\"nan\"]}]}", 0, 0},
        {"{\"inputs\": [{\"data\": [01]}]}", 0, 0},
        {"{\"inputs\": [{\"data\": [1.]}]}", 0, 0},
        {"{\"inputs\": [{\"data\": [+1]}]}", 0, 0},
        {"{\"inputs\": [{\"data\": [1,]}]}", 0, 0},
        {"{\"inputs\": [{\"data\": [1, ]}]}", 0, 0},
        {"{\"inputs\": [{\"data\": [[], [ ]]}]}", 1, 0},
        {"{\"inputs\": [{\"data\": [,1]}]}", 0, 0},
        {"{\"inputs\": [{\"data\": [1 2]}]}", 0, 0},
        {"{\"inputs\": [{\"data\": [1, null]}]}", 0, 0},
        {"{\"inputs\": [{\"parameters\": {\"data\": [1]}}], \"data\": [2]}", 0, 0},
        {"{\"outputs\": [{\"data\": [1]}]}", 0, 0},
        {"{\"inputs\": [{\"data\": [1, 2]", 1, 0}, /* truncated: jansson reports it */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *t = cases[i].text;
        char *lean = NULL;
        size_t n = 0;
        af__span_t sp[8];
        int ns = -1;
        assert_int_equal(af__oip_fast_split(t, strlen(t), &lean, &n, sp, 8, &ns), 0);
        if (ns != cases[i].spans)
            fail_msg("%s: %d spans", t, ns);
        if (ns == 0) {
            assert_null(lean);
            continue;
        }
        assert_int_equal(sp[ns - 1].input, cases[i].input_of1);
        assert_true(t[sp[0].start] == '[' && t[sp[0].end - 1] == ']');
        json_t *a = json_loadb(t, strlen(t), 0, NULL), *b = json_loadb(lean, n, 0, NULL);
        assert_true((a == NULL) == (b == NULL)); /* as valid as the text sent */
        json_decref(a);
        json_decref(b);
        free(lean);
    }
    /* elements: the text reader and the DOM reader agree, values and messages */
    static const struct {
        const char *data;
        int dt;
        uint64_t numel;
    } reads[] = {
        {"[0.1, -2.5e-7, 3, 1e38, -0.0, 65504, 7e-8]", AF_DTYPE_F32, 7},
        {"[[0.1, 1e5], [65520, -7e-8]]", AF_DTYPE_F16, 4},
        {"[0.1, 123456789.123456789, -1e-300]", AF_DTYPE_F64, 3},
        {"[1, 2, -3]", AF_DTYPE_I8, 3},
        {"[127, 128]", AF_DTYPE_I8, 2},
        {"[1, 2.0]", AF_DTYPE_I32, 2},
        {"[1, -1]", AF_DTYPE_U16, 2},
        {"[true, false, true]", AF_DTYPE_BOOL, 3},
        {"[1, true]", AF_DTYPE_BOOL, 2},
        {"[true]", AF_DTYPE_F32, 1},
        {"[1, 2, 3]", AF_DTYPE_F32, 2},
        {"[1]", AF_DTYPE_F32, 2},
        {"[[[[[[[[[1]]]]]]]]]", AF_DTYPE_F32, 1},
    };
    for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
        uint8_t x[64] = {0}, y[64] = {0};
        char m1[256] = "", m2[256] = "";
        json_t *d = json_loads(reads[i].data, 0, NULL);
        assert_non_null(d);
        int r1 = af__oip_json_read(d, reads[i].dt, reads[i].numel, x, m1, sizeof(m1));
        int r2 = af__oip_text_read(reads[i].data, strlen(reads[i].data), reads[i].dt,
                                   reads[i].numel, y, m2, sizeof(m2));
        json_decref(d);
        if (r1 != r2 || strcmp(m1, m2) != 0 || memcmp(x, y, sizeof(x)) != 0)
            fail_msg("%s: DOM %d '%s', text %d '%s'", reads[i].data, r1, m1, r2, m2);
    }
}

/* config.json: the keys it takes, and an error naming what is wrong with the others. */
static void test_model_config(void **state)
{
    (void)state;
    char path[] = "/tmp/af-oip-cfg-XXXXXX", *specs[AF__OIP_MAX_SPECS], msg[512];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    static const struct {
        const char *text, *why; /* why NULL: accepted */
    } cases[] = {
        {"{\"instance_count\": 3, \"max_inflight\": 4}", NULL},
        {"{\"instance_group\": [{\"count\": 2}, {\"count\": 1, \"kind\": \"KIND_CPU\"}]}", NULL},
        {"{\"max_batch_size\": 8, \"dynamic_batching\": {\"preferred_batch_size\": [2, 8], "
         "\"max_queue_delay_microseconds\": 100}}",
         NULL},
        {"{\"instance_group\": [{\"count\": 1, \"kind\": \"KIND_GPU\"}]}", "KIND_CPU"},
        {"{\"instance_count\": 2, \"instance_group\": [{\"count\": 1}]}", "not both"},
        {"{\"instance_count\": 17}", "at most 16"},
        {"{\"dynamic_batching\": {}}", "needs max_batch_size"},
        {"{\"max_batch_size\": 4, \"dynamic_batching\": {\"preferred_batch_size\": [5]}}",
         "1..max_batch_size"},
        {"{\"max_batch_size\": 4, \"dynamic_batching\": {\"delay\": 5}}", "dynamic_batching is"},
        {"{\"instances\": 2}", "instances"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(cases[i].text, f);
        fclose(f);
        int n = 0;
        af__mcfg_t cfg;
        msg[0] = 0;
        int rc = af__oip_read_config(path, specs, &n, &cfg, msg, sizeof(msg));
        for (int k = 0; k < n; k++)
            free(specs[k]);
        if (cases[i].why ? rc == 0 || !strstr(msg, cases[i].why) : rc != 0)
            fail_msg("%s: rc %d, '%s'", cases[i].text, rc, msg);
        if (i == 0)
            assert_true(cfg.instances == 3 && cfg.max_inflight == 4 && !cfg.batching);
        if (i == 1)
            assert_int_equal(cfg.instances, 3);
        if (i == 2)
            assert_true(cfg.batching && cfg.max_batch == 8 && cfg.n_preferred == 2 &&
                        cfg.preferred[1] == 8 && cfg.delay_us == 100);
    }
    unlink(path);
}

static void test_repository_served(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    af__daemon_t *d = repo_daemon(dir);
    answer_t a;
    assert_int_equal(call_s(d, "GET", "/v2/health/ready", NULL, &a), 200);
    free(a.body);
    assert_int_equal(call_s(d, "GET", "/v2/models/relu", NULL, &a), 200);
    assert_non_null(strstr(a.body, "\"platform\":\"arenaflow_graph\""));
    free(a.body);
    assert_int_equal(call_s(d, "POST", "/v2/models/relu/infer", infer_json, &a), 200);
    assert_string_equal(a.body, infer_want);
    free(a.body);
    /* binary in and out, through the request's Inference-Header-Content-Length */
    const char hdr[] = "{\"inputs\":[{\"name\":\"x\",\"shape\":[2,2],\"datatype\":\"FP32\","
                       "\"parameters\":{\"binary_data_size\":16}}],"
                       "\"parameters\":{\"binary_data_output\":true}}";
    float in[4] = {-1, 2, -3, 4}, out[4];
    char body[sizeof(hdr) + 16], hl[16];
    memcpy(body, hdr, sizeof(hdr) - 1);
    memcpy(body + sizeof(hdr) - 1, in, 16);
    snprintf(hl, sizeof(hl), "%zu", sizeof(hdr) - 1);
    memset(&a, 0, sizeof(a));
    af__dreq_t r = {.method = "POST", .method_len = 4, .path = "/v2/models/relu/infer"};
    r.path_len = strlen(r.path);
    r.body = body;
    r.body_len = sizeof(hdr) - 1 + 16;
    r.infer_header = hl;
    r.infer_header_len = strlen(hl);
    af__daemon_handle(d, &r, on_answer, &a);
    wait_answer(&a);
    assert_int_equal(a.status, 200);
    const char *end = strstr(a.body, "}]}");
    assert_non_null(end);
    size_t jl = (size_t)(end + 3 - a.body);
    assert_int_equal(a.len, jl + 16);
    memcpy(out, a.body + jl, 16);
    assert_true(out[0] == 0 && out[1] == 2 && out[2] == 0 && out[3] == 4);
    free(a.body);
    free_daemon(d);
    remove_tree(dir);
}

static void test_inflight_unload_reload(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    af__daemon_t *d = repo_daemon(dir);
    enum { N = 24 };
    answer_t as[N], u;
    for (int i = 0; i < N; i++)
        send_req(d, "POST", "/v2/models/relu/infer", 21, infer_json, strlen(infer_json), &as[i]);
    /* unload while they are in flight: they finish on the model they started with */
    assert_int_equal(call_s(d, "POST", "/v2/repository/models/relu/unload", NULL, &u), 200);
    free(u.body);
    for (int i = 0; i < N; i++) {
        wait_answer(&as[i]);
        assert_int_equal(as[i].status, 200);
        assert_string_equal(as[i].body, infer_want);
        free(as[i].body);
    }
    assert_int_equal(call_s(d, "POST", "/v2/models/relu/infer", infer_json, &u), 404);
    assert_string_equal(u.body, "{\"error\":\"unknown model 'relu'\"}");
    free(u.body);
    assert_int_equal(call_s(d, "POST", "/v2/repository/models/relu/load", NULL, &u), 200);
    free(u.body);
    assert_int_equal(call_s(d, "POST", "/v2/models/relu/infer", infer_json, &u), 200);
    free(u.body);
    /* destroy with inferences queued: they are answered (or canceled), nothing leaks */
    for (int i = 0; i < 8; i++)
        send_req(d, "POST", "/v2/models/relu/infer", 21, infer_json, strlen(infer_json), &as[i]);
    free_daemon(d);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(as[i].done, 1);
        free(as[i].body);
    }
    remove_tree(dir);
}

/* [models] max_inflight, and a model's config.json max_inflight: admission is on the loop, so of
 * 10 requests sent before the loop runs exactly the bound are admitted, the others answered 429
 * at once. */
static void expect_admitted(af__daemon_t *d, int want_ok, const char *busy_msg)
{
    answer_t as[10];
    for (int i = 0; i < 10; i++)
        send_req(d, "POST", "/v2/models/relu/infer", 21, infer_json, strlen(infer_json), &as[i]);
    int ok = 0, busy = 0;
    for (int i = 0; i < 10; i++) {
        wait_answer(&as[i]);
        ok += as[i].status == 200;
        if (as[i].status == 429) {
            busy++;
            if (!strstr(as[i].body, busy_msg))
                fail_msg("429 body %s lacks %s", as[i].body, busy_msg);
        }
        free(as[i].body);
    }
    assert_int_equal(ok, want_ok);
    assert_int_equal(busy, 10 - want_ok);
}

static void test_max_inflight_429(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    af__daemon_t *d = repo_daemon_max(dir, 2, NULL);
    expect_admitted(d, 2, "{\"error\":\"2 inferences in flight ([models] max_inflight)");
    free_daemon(d);
    remove_tree(dir);
    /* the model's own bound, from its config.json */
    dir = make_tmpdir();
    d = repo_daemon_max(dir, 64, "{\"max_inflight\": 3}");
    expect_admitted(d, 3, "{\"error\":\"model 'relu' has 3 inferences in flight");
    free_daemon(d);
    remove_tree(dir);
}

/* A JSON header whose DOM would exceed max_parse_bytes is refused before it is parsed (413). */
static void test_parse_budget(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    af__daemon_t *d = repo_daemon(dir);
    size_t n = 200000, len = 0;
    char *b = malloc(n * 2 + 200);
    assert_non_null(b);
    len += (size_t)sprintf(b, "{\"inputs\":[{\"name\":\"x\",\"shape\":[2,2],\"datatype\":"
                              "\"FP32\",\"data\":[0");
    for (size_t i = 1; i < n; i++)
        b[len++] = ',', b[len++] = '0';
    len += (size_t)sprintf(b + len, "]}]}");
    answer_t a;
    assert_int_equal(call(d, "POST", "/v2/models/relu/infer", b, len, &a), 413);
    assert_non_null(strstr(a.body, "max_parse_bytes"));
    free(a.body);
    assert_int_equal(atomic_load(&d->parse_used), 0);
    assert_int_equal(call_s(d, "POST", "/v2/models/relu/infer", infer_json, &a), 200);
    free(a.body);
    assert_int_equal(atomic_load(&d->parse_used), 0); /* released with the answer */
    free(b);
    free_daemon(d);
    remove_tree(dir);
}

int main(void)
{
    uv_loop_init(&loop);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_every_pattern),
        cmocka_unit_test(test_json_codec),
        cmocka_unit_test(test_bytes_json),
        cmocka_unit_test(test_bytes_binary),
        cmocka_unit_test(test_model_config),
        cmocka_unit_test(test_fmt_float_is_printf),
        cmocka_unit_test(test_fast_split),
        cmocka_unit_test(test_repository_served),
        cmocka_unit_test(test_inflight_unload_reload),
        cmocka_unit_test(test_max_inflight_429),
        cmocka_unit_test(test_parse_budget),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    uv_loop_close(&loop);
    return rc;
}
