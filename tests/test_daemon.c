/*
 * Unit tests of arenaflowd's socket-free core: af__daemon_handle() driven directly on a private
 * libuv loop (no network), the way a fuzz harness calls it. Covers submission (miss, hit),
 * reads, deletes, runs, every error status the core answers, the state directory round trip, and
 * a fixed-seed request fuzzer (mutated graphs, random methods, paths and bodies) that checks
 * every request gets exactly one well-formed answer and never a 500.
 */
#include "tests/daemon_testutil.h"

#include <fcntl.h>

static void verify_entry(af__daemon_t *d, const char *id)
{
    af__entry_t *e = af__store_find(d, id);
    assert_non_null(e);
    af_error_t err;
    af_error_clear(&err);
    int rc = af_plan_verify(e->plan, &err);
    if (rc != 0)
        fail_msg("plan of %s does not verify: %s", id, err.msg);
}

static void test_daemon_submit_hit_get_delete(void **state)
{
    (void)state;
    af__daemon_t *d = make_daemon(NULL);
    size_t len;
    char *g = read_file("examples/diamond.json", &len);
    answer_t a;
    char id[AF__ID_LEN + 1], path[128];
    assert_int_equal(call(d, "POST", "/v1/graphs", g, len, &a), 201);
    assert_non_null(strstr(a.body, "\"cache\":\"miss\""));
    get_id(&a, id);
    free(a.body);
    verify_entry(d, id);
    assert_int_equal(call(d, "POST", "/v1/graphs", g, len, &a), 200);
    assert_non_null(strstr(a.body, "\"cache\":\"hit\""));
    free(a.body);
    snprintf(path, sizeof(path), "/v1/graphs/%s", id);
    assert_int_equal(call_s(d, "GET", path, NULL, &a), 200);
    assert_non_null(strstr(a.body, "\"report\""));
    free(a.body);
    snprintf(path, sizeof(path), "/v1/graphs/%s/events.csv", id);
    assert_int_equal(call_s(d, "GET", path, NULL, &a), 200);
    assert_memory_equal(a.body, "event_id,event_type", 19);
    free(a.body);
    snprintf(path, sizeof(path), "/v1/graphs/%s/memory.svg?width=640", id);
    assert_int_equal(call_s(d, "GET", path, NULL, &a), 200);
    assert_non_null(strstr(a.body, "<svg"));
    assert_non_null(strstr(a.body, "</svg>"));
    free(a.body);
    assert_int_equal(call_s(d, "GET", "/v1/graphs", NULL, &a), 200);
    assert_non_null(strstr(a.body, id));
    free(a.body);
    snprintf(path, sizeof(path), "/v1/graphs/%s", id);
    assert_int_equal(call_s(d, "DELETE", path, NULL, &a), 200);
    free(a.body);
    assert_int_equal(call_s(d, "GET", path, NULL, &a), 404);
    free(a.body);
    assert_int_equal(d->metrics.cache_hits, 1);
    assert_int_equal(d->metrics.cache_misses, 1);
    free(g);
    free_daemon(d);
}

static void test_daemon_error_statuses(void **state)
{
    (void)state;
    af__daemon_t *d = make_daemon(NULL);
    answer_t a;
    static const struct {
        const char *method, *path, *body;
        int status;
        const char *needle;
    } cases[] = {
        {"GET", "/nowhere", NULL, 404, "no such endpoint"},
        {"PUT", "/v1/graphs", NULL, 405, "not allowed"},
        {"GET", "/v1/graphs/00000000000000000000000000000000", NULL, 404, "unknown graph"},
        {"POST", "/v1/graphs", "{\"format\": \"arenaflow-graph\", ", 400, "line"},
        {"POST", "/v1/graphs", "", 400, "empty body"},
        {"POST", "/v1/graphs",
         "{\"format\":\"arenaflow-graph\",\"version\":1,\"tensors\":[{\"name\":\"a\",\"bytes\":"
         "64},{\"name\":\"b\",\"bytes\":64}],\"nodes\":[{\"name\":\"p\",\"op\":\"X\",\"inputs\":"
         "[\"b\"],\"outputs\":[\"a\"]},{\"name\":\"q\",\"op\":\"X\",\"inputs\":[\"a\"],"
         "\"outputs\":[\"b\"]}]}",
         400, "cycle"},
        {"GET", "/healthz", NULL, 200, "ok"},
        {"GET", "/readyz", NULL, 200, "ready"},
    };
    for (size_t i = 0; i < AF_ARRAY_SIZE(cases); i++) {
        int st = call_s(d, cases[i].method, cases[i].path, cases[i].body, &a);
        if (st != cases[i].status || !strstr(a.body, cases[i].needle))
            fail_msg("%s %s: got %d %s, want %d with '%s'", cases[i].method, cases[i].path, st,
                     a.body, cases[i].status, cases[i].needle);
        free(a.body);
    }
    char *big = malloc(70000);
    memset(big, ' ', 70000);
    assert_int_equal(call(d, "POST", "/v1/graphs", big, 70000, &a), 413);
    free(a.body);
    free(big);
    d->draining = 1;
    assert_int_equal(call_s(d, "POST", "/v1/graphs", "{}", &a), 503);
    free(a.body);
    assert_int_equal(call_s(d, "GET", "/readyz", NULL, &a), 503);
    free(a.body);
    d->draining = 0;
    free_daemon(d);
}

static void test_daemon_run_rounds(void **state)
{
    (void)state;
    af__daemon_t *d = make_daemon(NULL);
    size_t len;
    char *g = read_file("examples/mlp.json", &len);
    answer_t a;
    char id[AF__ID_LEN + 1], path[128];
    assert_int_equal(call(d, "POST", "/v1/graphs", g, len, &a), 201);
    get_id(&a, id);
    free(a.body);
    verify_entry(d, id);
    snprintf(path, sizeof(path), "/v1/graphs/%s/run", id);
    assert_int_equal(call_s(d, "POST", path, "{\"rounds\": 5, \"verify\": true}", &a), 200);
    json_t *j = json_loads(a.body, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "rounds_done")), 5);
    assert_int_equal(json_integer_value(json_object_get(j, "corrupted_tensors")), 0);
    json_t *lat = json_object_get(j, "latency_us");
    assert_true(json_real_value(json_object_get(lat, "p50")) <=
                json_real_value(json_object_get(lat, "max")));
    json_decref(j);
    free(a.body);
    assert_int_equal(call_s(d, "POST", path, "{\"rounds\": 0}", &a), 400);
    free(a.body);
    assert_int_equal(call_s(d, "POST", path, "{\"rounds\": 1001}", &a), 400);
    free(a.body);
    assert_int_equal(call_s(d, "POST", path, "{\"rounds\": 2, \"x\": 1}", &a), 400);
    free(a.body);
    assert_int_equal(call_s(d, "POST", path, NULL, &a), 200); /* no body: one round */
    free(a.body);
    assert_int_equal(d->metrics.rounds, 6);
    size_t mlen;
    char *m = af__metrics_render(d, &mlen);
    assert_non_null(m);
    assert_non_null(strstr(m, "arenaflowd_rounds_executed_total 6\n"));
    assert_non_null(strstr(m, "arenaflowd_run_round_seconds_count 6\n"));
    free(m);
    free(g);
    free_daemon(d);
}

static void test_daemon_state_dir_survives_restart(void **state)
{
    (void)state;
    char dir[] = "/tmp/af-test-daemon-XXXXXX";
    assert_non_null(mkdtemp(dir));
    size_t len;
    char *g = read_file("examples/diamond.json", &len);
    answer_t a;
    char id[AF__ID_LEN + 1];
    af__daemon_t *d = make_daemon(dir);
    assert_int_equal(call(d, "POST", "/v1/graphs", g, len, &a), 201);
    get_id(&a, id);
    free(a.body);
    uint64_t arena = af_plan_arena_bytes(af__store_find(d, id)->plan);
    free_daemon(d);
    d = make_daemon(dir); /* a new process would do the same */
    assert_int_equal(d->n_entries, 1);
    verify_entry(d, id);
    assert_int_equal(af_plan_arena_bytes(af__store_find(d, id)->plan), arena);
    assert_int_equal(call(d, "POST", "/v1/graphs", g, len, &a), 200);
    assert_non_null(strstr(a.body, "\"cache\":\"hit\""));
    free(a.body);
    char path[128];
    snprintf(path, sizeof(path), "/v1/graphs/%s", id);
    assert_int_equal(call_s(d, "DELETE", path, NULL, &a), 200);
    free(a.body);
    free_daemon(d);
    d = make_daemon(dir);
    assert_int_equal(d->n_entries, 0);
    free_daemon(d);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    free(g);
}

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void test_daemon_fuzz_requests_answer_once(void **state)
{
    (void)state;
    const uint64_t seed = 20261129;
    uint64_t s = seed;
    af__daemon_t *d = make_daemon(NULL);
    size_t glen;
    char *g = read_file("examples/diamond.json", &glen);
    answer_t a;
    assert_int_equal(call(d, "POST", "/v1/graphs", g, glen, &a), 201);
    char id[AF__ID_LEN + 1];
    get_id(&a, id);
    free(a.body);
    static const char *const methods[] = {"GET", "POST", "DELETE", "PUT", "HEAD", "G"};
    static const char *const tails[] = {"", "/run", "/events.csv", "/memory.svg", "/x", "/run/"};
    char *buf = malloc(glen + 64);
    int counts[600] = {0};
    for (int it = 0; it < 400; it++) {
        const char *m = methods[rng(&s) % AF_ARRAY_SIZE(methods)];
        char path[256];
        int kind = (int)(rng(&s) % 6);
        if (kind == 0)
            snprintf(path, sizeof(path), "%s",
                     rng(&s) % 2 ? "/v1/graphs"
                                 : "/v1/graphs?format=onnx&input=x%3D1,2&input=+N=3%");
        else if (kind == 1)
            snprintf(path, sizeof(path), "/metrics?x=%%zz&y");
        else if (kind == 2)
            snprintf(path, sizeof(path), "//v1//graphs/%s%s", id,
                     tails[rng(&s) % AF_ARRAY_SIZE(tails)]);
        else
            snprintf(path, sizeof(path), "/v1/graphs/%.*s%s", (int)(rng(&s) % 40), id,
                     tails[rng(&s) % AF_ARRAY_SIZE(tails)]);
        /* body: the graph with a few bytes flipped, cut, or a run request */
        size_t blen = glen;
        memcpy(buf, g, glen);
        int flips = (int)(rng(&s) % 4);
        for (int f = 0; f < flips; f++)
            buf[rng(&s) % glen] = (char)(rng(&s) & 0xff);
        if (rng(&s) % 3 == 0)
            blen = rng(&s) % glen;
        if (kind >= 2 && rng(&s) % 2)
            blen = (size_t)snprintf(buf, glen, "{\"rounds\": %d, \"verify\": %s}",
                                    (int)(rng(&s) % 5) - 1, rng(&s) % 2 ? "true" : "false");
        int st = call(d, m, path, buf, blen, &a);
        if (st == 500 || st < 200 || st >= 600)
            fail_msg("seed %llu iteration %d: %s %s -> %d %s", (unsigned long long)seed, it, m,
                     path, st, a.body);
        counts[st]++;
        /* errors are JSON with the same status inside */
        if (st >= 400) {
            json_t *j = json_loads(a.body, 0, NULL);
            if (!j ||
                json_integer_value(json_object_get(json_object_get(j, "error"), "status")) != st)
                fail_msg("seed %llu iteration %d: error body is not JSON: %s",
                         (unsigned long long)seed, it, a.body);
            json_decref(j);
        }
        free(a.body);
        if (!af__store_find(d, id)) { /* a fuzzed DELETE hit it: put it back */
            assert_int_equal(call(d, "POST", "/v1/graphs", g, glen, &a), 201);
            free(a.body);
        }
    }
    /* The fuzzer reached the main outcomes. */
    assert_true(counts[200] > 0 && counts[400] > 0 && counts[404] > 0 && counts[405] > 0);
    for (size_t i = 0; i < d->n_entries; i++) {
        af_error_t err;
        assert_int_equal(af_plan_verify(d->entries[i]->plan, &err), 0);
    }
    free(buf);
    free(g);
    free_daemon(d);
}

/* The daemon's options are rows of the library's option tables: the defaults come from the rows,
 * and sizes take the one size grammar in every section (64KiB was rejected in [limits] when the
 * daemon had a parser of its own). */
static void test_daemon_config_table(void **state)
{
    (void)state;
    af__dcfg_t c;
    af__dcfg_init(&c);
    assert_string_equal(c.listen, "127.0.0.1:8080");
    assert_string_equal(c.log_level, "info");
    assert_int_equal(c.lim.max_body, 16u << 20);
    assert_int_equal(c.lim.max_arena_bytes, 1ull << 30);
    assert_int_equal(c.max_runs, 2);
    assert_int_equal(c.request_timeout_ms, 10000);
    assert_string_equal(c.fast_kernels, "empty");
    char path[] = "/tmp/af_dcfg_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *ini = "[limits]\nmax_body = 64KiB\nmax_arena_bytes = 2G\nmax_graphs = 7\n"
                      "[planner]\nalignment = 1KiB\n";
    assert_int_equal(write(fd, ini, strlen(ini)), (ssize_t)strlen(ini));
    close(fd);
    af__dcli_t cli = {.config = path};
    char err[512];
    assert_int_equal(af__dcfg_load(&c, &cli, err, sizeof(err)), 0);
    assert_int_equal(c.lim.max_body, 64u << 10);
    assert_int_equal(c.lim.max_arena_bytes, 2ull << 30);
    assert_int_equal(c.max_graphs, 7);
    fd = open(path, O_WRONLY | O_TRUNC);
    const char *bad = "[limits]\nmax_graphs = 7K\n"; /* counts are plain numbers */
    assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    assert_int_equal(af__dcfg_load(&c, &cli, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "max_graphs"));
    unlink(path);
}

int main(void)
{
    uv_loop_init(&loop);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_daemon_config_table),
        cmocka_unit_test(test_daemon_submit_hit_get_delete),
        cmocka_unit_test(test_daemon_error_statuses),
        cmocka_unit_test(test_daemon_run_rounds),
        cmocka_unit_test(test_daemon_state_dir_survives_restart),
        cmocka_unit_test(test_daemon_fuzz_requests_answer_once),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    uv_loop_close(&loop);
    return rc;
}
