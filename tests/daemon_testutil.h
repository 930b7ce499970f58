/*
 * Helpers shared by the daemon core tests (tests/test_daemon*.c): a private libuv loop, one
 * request sent through af__daemon_handle() and the loop run until it is answered, asynchronous
 * requests (sent now, answered later) for the ordering tests, daemons made from the defaults or
 * from INI text (so a test can set options by their config-file names), and file helpers.
 */
#ifndef ARENAFLOW_TESTS_DAEMON_TESTUTIL_H
#define ARENAFLOW_TESTS_DAEMON_TESTUTIL_H

#include "daemon/daemon_int.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct answer {
    int done;
    int seq; /* order of arrival among all answers */
    int status;
    char *body;
    size_t len;
} answer_t;

static uv_loop_t loop;

static inline void on_answer(af__dres_t *res, void *arg)
{
    static int seq;
    answer_t *a = arg;
    a->done++;
    a->seq = ++seq;
    a->status = res->status;
    a->len = res->body_len;
    a->body = malloc(res->body_len + 1);
    assert_non_null(a->body);
    if (res->body_len)
        memcpy(a->body, res->body, res->body_len);
    a->body[res->body_len] = '\0';
    af__dres_free(res);
}

/* Sends one request without waiting: a is answered when the loop runs. The path may hold NUL
 * bytes (path_len counts them), as h2o hands over a decoded %00. */
static inline void send_req(af__daemon_t *d, const char *method, const char *target,
                            size_t target_len, const char *body, size_t body_len, answer_t *a)
{
    memset(a, 0, sizeof(*a));
    af__dreq_t r = {0};
    r.method = method;
    r.method_len = strlen(method);
    const char *q = memchr(target, '?', target_len);
    r.path = target;
    r.path_len = q ? (size_t)(q - target) : target_len;
    if (q) {
        r.query = q + 1;
        r.query_len = target_len - (size_t)(q - target) - 1;
    }
    r.body = body ? body : "";
    r.body_len = body ? body_len : 0;
    af__daemon_handle(d, &r, on_answer, a);
}

/* Runs the loop until a is answered (bounded). */
static inline void wait_answer(answer_t *a)
{
    for (int i = 0; !a->done && i < 10000000; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(a->done, 1);
}

/* Sends one request and runs the loop until it is answered; returns the status. */
static inline int call(af__daemon_t *d, const char *method, const char *target, const char *body,
                       size_t body_len, answer_t *a)
{
    send_req(d, method, target, strlen(target), body, body_len, a);
    wait_answer(a);
    return a->status;
}

static inline int call_s(af__daemon_t *d, const char *method, const char *target, const char *body,
                         answer_t *a)
{
    return call(d, method, target, body, body ? strlen(body) : 0, a);
}

static inline char *read_file(const char *rel, size_t *len)
{
    const char *src = getenv("AF_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", src ? src : ".", rel);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* The test configuration: small limits, quiet log, two executor threads. */
static inline void test_cfg(af__dcfg_t *cfg, const char *state_dir)
{
    af__dcfg_init(cfg);
    snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s", state_dir ? state_dir : "");
    snprintf(cfg->log_level, sizeof(cfg->log_level), "error");
    cfg->lim.max_body = 64 * 1024;
    cfg->max_graphs = 64;
    cfg->max_rounds = 1000;
    cfg->exec_opts.threads = 2;
}

static inline af__daemon_t *make_daemon(const char *state_dir)
{
    af__dcfg_t cfg;
    test_cfg(&cfg, state_dir);
    af__daemon_t *d = NULL;
    assert_int_equal(af__daemon_create(&loop, &cfg, &d), 0);
    for (int i = 0; !d->ready && i < 10000000; i++) /* the state loads in the background */
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(d->ready);
    return d;
}

/* A daemon whose configuration is the INI text `ini` (config-file names, as a user writes
 * them) on top of the defaults; the state directory and log level come from the arguments. */
static inline af__daemon_t *make_daemon_ini(const char *state_dir, const char *ini)
{
    char path[] = "/tmp/af-test-daemon-ini-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fprintf(f, "[server]\nlog_level = error\n%s\n", ini);
    fclose(f);
    af__dcli_t cli = {.config = path, .state_dir = state_dir};
    af__dcfg_t cfg;
    char err[512];
    int rc = af__dcfg_load(&cfg, &cli, err, sizeof(err));
    unlink(path);
    if (rc != 0)
        fail_msg("configuration refused: %s", err);
    cfg.exec_opts.threads = 2;
    af__daemon_t *d = NULL;
    assert_int_equal(af__daemon_create(&loop, &cfg, &d), 0);
    return d;
}

/* Runs the loop until the daemon has loaded its state directory (bounded). */
static inline void wait_ready(af__daemon_t *d)
{
    for (int i = 0; !d->ready && i < 10000000; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(d->ready);
}

static inline void free_daemon(af__daemon_t *d)
{
    af__daemon_destroy(d);
    while (uv_run(&loop, UV_RUN_NOWAIT))
        ;
}

/* Extracts "id":"..." from a JSON answer. */
static inline void get_id(const answer_t *a, char id[AF__ID_LEN + 1])
{
    json_t *j = json_loads(a->body, 0, NULL);
    if (!j)
        fail_msg("answer is not JSON: %s", a->body);
    const char *s = json_string_value(json_object_get(j, "id"));
    if (!s)
        fail_msg("answer has no id: %s", a->body);
    assert_int_equal(strlen(s), AF__ID_LEN);
    memcpy(id, s, AF__ID_LEN + 1);
    json_decref(j);
}

static inline char *make_tmpdir(void)
{
    char *dir = strdup("/tmp/af-test-daemon-XXXXXX");
    assert_non_null(dir);
    assert_non_null(mkdtemp(dir));
    return dir;
}

static inline void remove_tree(char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static inline int file_exists(const char *dir, const char *sub, const char *id, const char *suffix)
{
    char path[1024];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s/%s%s", dir, sub, id, suffix);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* AF_TEST_FILTER=pattern runs only the matching tests (cmocka's glob filter). */
static inline void test_filter_from_env(void)
{
    const char *f = getenv("AF_TEST_FILTER");
    if (f && f[0])
        cmocka_set_test_filter(f);
}

#endif
