/*
 * Regression tests of issue 16 ("arenaflowd under attack"), the items that crash the daemon or
 * lose data, driven through the socket-free core (af__daemon_handle) on a private loop:
 *   1. a decoded id that is empty or holds a NUL byte (/v1/graphs/%00) on every {id} route;
 *   2. an ONNX model nesting AttributeProto.g -> GraphProto.node -> NodeProto.attribute 3,000
 *      levels deep (about 30 KB) must be refused, not overflow the stack in protobuf-c;
 *   3. submit the same new graph twice 2 ms apart and DELETE it when the first 201 arrives:
 *      whatever the answers, a graph that is listed afterwards has its file and survives a
 *      restart, and one that is not listed does not come back;
 *   4. identical concurrent submissions never answer 500 (they shared one temp file);
 *   9. a plan file that cannot be written is not answered 201.
 * The graphs are chains of a few thousand nodes, so planning and writing take long enough for
 * the submissions to overlap.
 */
#include "tests/daemon_testutil.h"

#include "arenaflow/cache.h"

#include <time.h>

/* A chain x -> t1 -> ... -> y of n nodes, as JSON (malloc'd). name makes ids distinct. */
static char *chain_json(const char *name, int n, size_t *len)
{
    size_t cap = (size_t)n * 160 + 512, o = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    o += (size_t)snprintf(b + o, cap - o,
                          "{\"format\":\"arenaflow-graph\",\"version\":1,\"name\":\"%s\","
                          "\"tensors\":[{\"name\":\"t0\",\"kind\":\"input\",\"bytes\":4096}",
                          name);
    for (int i = 1; i <= n; i++)
        o += (size_t)snprintf(b + o, cap - o, ",{\"name\":\"t%d\",%s\"bytes\":%d}", i,
                              i == n ? "\"kind\":\"output\"," : "", 1024 << (i % 4));
    o += (size_t)snprintf(b + o, cap - o, "],\"nodes\":[");
    for (int i = 1; i <= n; i++)
        o += (size_t)snprintf(b + o, cap - o,
                              "%s{\"name\":\"n%d\",\"op\":\"Relu\",\"inputs\":[\"t%d\"],"
                              "\"outputs\":[\"t%d\"]}",
                              i > 1 ? "," : "", i, i - 1, i);
    o += (size_t)snprintf(b + o, cap - o, "]}");
    assert_true(o < cap);
    *len = o;
    return b;
}

/* ---- item 1: empty or NUL ids -------------------------------------------------------------- */

static void test_attack_nul_id_does_not_crash(void **state)
{
    (void)state;
    af__daemon_t *d = make_daemon(NULL);
    static const struct {
        const char *method;
        const char *path; /* "\0" is the decoded %00 */
        size_t len;
    } cases[] = {
        {"GET", "/v1/graphs/\0", 12},
        {"DELETE", "/v1/graphs/\0", 12},
        {"POST", "/v1/graphs/\0/run", 16},
        {"GET", "/v1/graphs/\0/events.csv", 23},
        {"GET", "/v1/graphs/\0/memory.svg", 23},
        {"GET", "/v1/graphs/\0abc", 15},
        {"GET", "/v1/graphs/..%2f..%2fetc", 24},
        {"DELETE", "/v1/graphs/../../etc/passwd", 27},
        {"GET", "/v1/graphs/0123456789ABCDEF0123456789ABCDEF", 43},
    };
    for (size_t i = 0; i < AF_ARRAY_SIZE(cases); i++) {
        answer_t a;
        send_req(d, cases[i].method, cases[i].path, cases[i].len, "{}", 2, &a);
        wait_answer(&a);
        if (a.status != 404 && a.status != 400)
            fail_msg("case %zu (%s): got %d %s, want 404 or 400", i, cases[i].method, a.status,
                     a.body);
        free(a.body);
    }
    free_daemon(d);
}

/* ---- item 2: deep protobuf nesting ------------------------------------------------------- */

#ifdef AF_HAVE_ONNX
static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

/* Wraps buf[0..*len) as field `field` (length-delimited) of a new message, in place. */
static void wrap(uint8_t *buf, size_t *len, size_t cap, int field)
{
    uint8_t hdr[16];
    size_t h = put_varint(hdr, (uint64_t)field << 3 | 2);
    h += put_varint(hdr + h, *len);
    assert_true(*len + h <= cap);
    memmove(buf + h, buf, *len);
    memcpy(buf, hdr, h);
    *len += h;
}

static void test_attack_deep_onnx_nesting_refused(void **state)
{
    (void)state;
    const int levels = 3000;
    size_t cap = (size_t)levels * 16 + 64, len = 0;
    uint8_t *buf = calloc(1, cap);
    assert_non_null(buf);
    /* innermost first: an empty AttributeProto, then per level NodeProto.attribute (5),
     * GraphProto.node (1), AttributeProto.g (6) */
    for (int i = 0; i < levels; i++) {
        wrap(buf, &len, cap, 5);
        wrap(buf, &len, cap, 1);
        wrap(buf, &len, cap, 6);
    }
    wrap(buf, &len, cap, 5); /* the top graph's node */
    wrap(buf, &len, cap, 1);
    wrap(buf, &len, cap, 7);      /* ModelProto.graph */
    assert_true(len < 64 * 1024); /* within the test daemon's max_body */
    af__daemon_t *d = make_daemon(NULL);
    answer_t a;
    call(d, "POST", "/v1/graphs?format=onnx", (const char *)buf, len, &a);
    if (a.status != 400 && a.status != 413)
        fail_msg("%zu-byte model nesting %d levels: got %d %s, want 400", len, levels, a.status,
                 a.body);
    if (!strstr(a.body, "nest"))
        fail_msg("the refusal does not name the nesting: %s", a.body);
    free(a.body);
    assert_int_equal(call_s(d, "GET", "/healthz", NULL, &a), 200);
    free(a.body);
    free(buf);
    free_daemon(d);
}
#endif

/* ---- item 3: submit, submit, delete ----------------------------------------------------- */

static void test_attack_submit_twice_then_delete_keeps_acknowledged(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    int overlapped = 0;
    for (int attempt = 0; attempt < 12; attempt++) {
        char name[32];
        snprintf(name, sizeof(name), "race%d", attempt);
        size_t len;
        char *g = chain_json(name, 3000, &len);
        af__daemon_t *d = make_daemon(dir);
        wait_ready(d);
        d->cfg.lim.max_body = 16 << 20;
        answer_t a1, a2, del;
        send_req(d, "POST", "/v1/graphs", 10, g, len, &a1);
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
        send_req(d, "POST", "/v1/graphs", 10, g, len, &a2);
        for (int i = 0; !a1.done && !a2.done && i < 10000000; i++)
            uv_run(&loop, UV_RUN_ONCE);
        int a1_first = a1.done && (!a2.done || a1.seq < a2.seq);
        answer_t *first = a1_first ? &a1 : &a2, *second = a1_first ? &a2 : &a1;
        assert_int_equal(first->status, 201);
        char id[AF__ID_LEN + 1], path[128];
        get_id(first, id);
        overlapped += !second->done;
        snprintf(path, sizeof(path), "/v1/graphs/%s", id);
        send_req(d, "DELETE", path, strlen(path), NULL, 0, &del);
        wait_answer(&del);
        wait_answer(second);
        assert_true(second->status == 200 || second->status == 201);
        answer_t get;
        int listed = call_s(d, "GET", path, NULL, &get) == 200;
        free(get.body);
        int on_disk = file_exists(dir, "graphs", id, ".json");
        if (listed != on_disk)
            fail_msg("attempt %d: second submission answered %d, delete %d; listed %d but file "
                     "%s",
                     attempt, second->status, del.status, listed, on_disk ? "present" : "gone");
        free_daemon(d);
        /* the restarted daemon agrees */
        d = make_daemon(dir);
        wait_ready(d);
        int listed2 = call_s(d, "GET", path, NULL, &get) == 200;
        free(get.body);
        if (listed2 != listed)
            fail_msg("attempt %d: listed %d before the restart, %d after", attempt, listed,
                     listed2);
        if (listed2) { /* clean up for the next attempt */
            assert_int_equal(call_s(d, "DELETE", path, NULL, &get), 200);
            free(get.body);
        }
        free_daemon(d);
        free(a1.body);
        free(a2.body);
        free(del.body);
        free(g);
    }
    print_message("  %d of 12 attempts deleted while the second submission was in flight\n",
                  overlapped);
    remove_tree(dir);
}

/* ---- item 4: identical concurrent submissions ------------------------------------------ */

static void test_attack_identical_concurrent_submissions_no_500(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    af__daemon_t *d = make_daemon(dir);
    wait_ready(d);
    enum { N = 4, ROUNDS = 10 };
    d->cfg.max_pending_plans = N;
    d->cfg.lim.max_body = 16 << 20;
    for (int round = 0; round < ROUNDS; round++) {
        char name[32];
        snprintf(name, sizeof(name), "same%d", round);
        size_t len;
        char *g = chain_json(name, 3000, &len);
        answer_t a[N];
        for (int i = 0; i < N; i++)
            send_req(d, "POST", "/v1/graphs", 10, g, len, &a[i]);
        int created = 0;
        for (int i = 0; i < N; i++) {
            wait_answer(&a[i]);
            if (a[i].status != 200 && a[i].status != 201)
                fail_msg("round %d submission %d: %d %s", round, i, a[i].status, a[i].body);
            created += a[i].status == 201;
        }
        assert_int_equal(created, 1);
        char id[AF__ID_LEN + 1];
        get_id(&a[0], id);
        assert_true(file_exists(dir, "graphs", id, ".json"));
        for (int i = 0; i < N; i++)
            free(a[i].body);
        free(g);
    }
    free_daemon(d);
    remove_tree(dir);
}

/* ---- item 9: the plan file's write result decides the answer ----------------------------- */

static void test_attack_plan_write_failure_not_acknowledged(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    size_t len;
    char *g = read_file("examples/diamond.json", &len);
    /* The plan file's name is the fingerprint of the graph and the (default) planner options;
     * a directory in its place makes the rename of the written temp file fail. */
    af_graph_t *pg = NULL;
    assert_int_equal(af_graph_parse_json(g, len, &pg, NULL), 0);
    af_plan_opts_t po;
    af_plan_opts_init(&po);
    char plans[1024];
    snprintf(plans, sizeof(plans), "%s/plans", dir);
    assert_int_equal(mkdir(plans, 0755), 0);
    snprintf(plans, sizeof(plans), "%s/plans/%016llx.afplan", dir,
             (unsigned long long)af_plan_fingerprint(pg, &po));
    assert_int_equal(mkdir(plans, 0755), 0);
    af_graph_destroy(pg);
    af__daemon_t *d = make_daemon(dir);
    wait_ready(d);
    answer_t a;
    int st = call(d, "POST", "/v1/graphs", g, len, &a);
    if (st == 200 || st == 201)
        fail_msg("the plan file could not be written, yet the submission answered %d: %s", st,
                 a.body);
    assert_true(st == 507 || st == 500);
    free(a.body);
    assert_int_equal(call_s(d, "GET", "/v1/graphs", NULL, &a), 200);
    assert_non_null(strstr(a.body, "\"count\":0"));
    free(a.body);
    /* the obstacle gone, the same graph is accepted (and its plan written) */
    assert_int_equal(rmdir(plans), 0);
    assert_int_equal(call(d, "POST", "/v1/graphs", g, len, &a), 201);
    char id[AF__ID_LEN + 1];
    get_id(&a, id);
    free(a.body);
    assert_true(file_exists(dir, "graphs", id, ".json"));
    struct stat sb;
    assert_int_equal(stat(plans, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    free_daemon(d);
    free(g);
    remove_tree(dir);
}

int main(void)
{
    uv_loop_init(&loop);
    test_filter_from_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attack_nul_id_does_not_crash),
#ifdef AF_HAVE_ONNX
        cmocka_unit_test(test_attack_deep_onnx_nesting_refused),
#endif
        cmocka_unit_test(test_attack_submit_twice_then_delete_keeps_acknowledged),
        cmocka_unit_test(test_attack_identical_concurrent_submissions_no_500),
        cmocka_unit_test(test_attack_plan_write_failure_not_acknowledged),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    uv_loop_close(&loop);
    return rc;
}
