/*
 * libFuzzer harness: arenaflowd's request handling without sockets (af__daemon_handle, the
 * daemon helper's socket-free core), on a private libuv loop.
 *
 * Input format (text, so seeds are readable): up to FUZZ_D_MAX_REQ requests separated by lines
 * "----". Each request is "METHOD TARGET\n" followed by the body (the rest of the chunk).
 * TARGET may contain "$ID", replaced by the id of the last graph the daemon accepted, so a
 * submitted graph can then be read, run, drawn or deleted within one input. A fresh daemon
 * (no state directory, one executor thread, small limits) serves each input, so inputs replay
 * alike.
 *
 * Invariants (abort() when broken, which libFuzzer reports): every request is answered exactly
 * once, with a status in 200..599 that is never 500 (no allocation fails here), and every
 * application/json answer parses. Leaks and memory errors are ASan's.
 *
 * Built as a libFuzzer target (tests/fuzz/run.sh, links arenaflowd_core) and, with
 * AF_FUZZ_ENTRY renamed, into tests/test_fuzz_corpus.c when the daemon core is built.
 */
#include "daemon/daemon_int.h"
#include "tests/fuzz/fuzz_util.h"

#include <stdlib.h>
#include <string.h>

#ifndef AF_FUZZ_ENTRY
#define AF_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

#define FUZZ_D_MAX_REQ 8
#define FUZZ_D_TARGET_MAX 512

int AF_FUZZ_ENTRY(const uint8_t *data, size_t size);

typedef struct fuzz_d_answer {
    int done;
    int status;
    char id[AF__ID_LEN + 1];
    char body[256]; /* the start of the answer, for the failure message */
} fuzz_d_answer_t;

static void fuzz_d_on_answer(af__dres_t *res, void *arg)
{
    fuzz_d_answer_t *a = arg;
    a->done++;
    a->status = res->status;
    snprintf(a->body, sizeof(a->body), "%.*s", (int)(res->body_len < 255 ? res->body_len : 255),
             res->body ? res->body : "");
    if (res->content_type && strcmp(res->content_type, "application/json") == 0) {
        json_t *j = json_loadb(res->body, res->body_len, 0, NULL);
        if (!j)
            AF_FUZZ_FAIL("status %d: application/json answer is not JSON: %.*s", res->status,
                         (int)(res->body_len > 200 ? 200 : res->body_len), res->body);
        const char *id = json_string_value(json_object_get(j, "id"));
        if (id && strlen(id) == AF__ID_LEN)
            memcpy(a->id, id, AF__ID_LEN + 1);
        json_decref(j);
    }
    af__dres_free(res);
}

/* Finds the next "\n----\n" separator at or after p; returns its start or end when none. */
static const char *fuzz_d_next_sep(const char *p, const char *end)
{
    for (const char *q = p; q + 6 <= end; q++)
        if (memcmp(q, "\n----\n", 6) == 0)
            return q;
    return end;
}

/* Copies target into out with "$ID" replaced by id (or left as is when there is none). */
static size_t fuzz_d_expand(const char *t, size_t n, const char *id, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        if (id[0] && i + 3 <= n && memcmp(t + i, "$ID", 3) == 0 && o + AF__ID_LEN + 1 < cap) {
            memcpy(out + o, id, AF__ID_LEN);
            o += AF__ID_LEN;
            i += 2;
        } else {
            out[o++] = t[i];
        }
    }
    return o;
}

static void fuzz_d_one(af__daemon_t *d, uv_loop_t *loop, const char *p, size_t n, char *last_id)
{
    const char *nl = memchr(p, '\n', n);
    size_t line = nl ? (size_t)(nl - p) : n;
    const char *sp = memchr(p, ' ', line);
    if (!sp)
        return;
    char target[FUZZ_D_TARGET_MAX];
    size_t tlen =
        fuzz_d_expand(sp + 1, line - (size_t)(sp + 1 - p), last_id, target, sizeof(target));
    const char *q = memchr(target, '?', tlen);
    af__dreq_t r;
    memset(&r, 0, sizeof(r));
    r.method = p;
    r.method_len = (size_t)(sp - p);
    r.path = target;
    r.path_len = q ? (size_t)(q - target) : tlen;
    if (q) {
        r.query = q + 1;
        r.query_len = tlen - r.path_len - 1;
    }
    r.body = nl ? nl + 1 : p + n;
    r.body_len = nl ? n - line - 1 : 0;
    r.content_type = "application/json";
    r.content_type_len = strlen(r.content_type);
    fuzz_d_answer_t a;
    memset(&a, 0, sizeof(a));
    af__daemon_handle(d, &r, fuzz_d_on_answer, &a);
    while (!a.done)
        uv_run(loop, UV_RUN_ONCE);
    uv_run(loop, UV_RUN_NOWAIT);
    if (a.done != 1 || a.status < 200 || a.status > 599 || a.status == 500)
        AF_FUZZ_FAIL("%.*s %.*s: answered %d times, status %d: %s", (int)r.method_len, r.method,
                     (int)tlen, target, a.done, a.status, a.body);
    if (a.id[0])
        memcpy(last_id, a.id, AF__ID_LEN + 1);
}

int AF_FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    static uv_loop_t loop;
    static int loop_ready;
    if (!loop_ready) {
        if (uv_loop_init(&loop) != 0)
            AF_FUZZ_FAIL("uv_loop_init");
        loop_ready = 1;
    }
    af__dcfg_t cfg;
    af__dcfg_init(&cfg);
    snprintf(cfg.log_level, sizeof(cfg.log_level), "error");
    cfg.lim.max_body = 64 * 1024;
    cfg.max_graphs = 4;
    cfg.max_rounds = 4;
    cfg.exec_opts.threads = 1;
    cfg.plan_opts.time_limit_s = 0.01;
    cfg.plan_opts.dp_max_states = 20000;
    af__daemon_t *d = NULL;
    if (af__daemon_create(&loop, &cfg, &d) != 0)
        AF_FUZZ_FAIL("af__daemon_create");
    while (!d->ready && uv_run(&loop, UV_RUN_ONCE)) /* the (empty) state loads in the background */
        ;
    char last_id[AF__ID_LEN + 1] = "";
    const char *p = (const char *)data, *end = p + size;
    for (int i = 0; i < FUZZ_D_MAX_REQ && p < end; i++) {
        const char *sep = fuzz_d_next_sep(p, end);
        fuzz_d_one(d, &loop, p, (size_t)(sep - p), last_id);
        p = sep == end ? end : sep + 6;
    }
    af__daemon_destroy(d);
    while (uv_run(&loop, UV_RUN_NOWAIT))
        ;
    return 0;
}
