/*
 * arenaflowd dynamic batching: requests to a model with a batch axis, queued for at most
 * max_queue_delay_microseconds, concatenated along axis 0 into one round and split back.
 *
 * A model batches when its config.json has "max_batch_size" > 0 and "dynamic_batching" (as
 * Triton's model configuration spells them); its inputs must keep axis 0 symbolic (checked at
 * load), so one batched round is the model planned for the batch's total rows, an ordinary
 * shape variant (oip_repo.c), kept and evicted like any other ([models] max_shapes).
 *
 * The queue: one per model, holding requests whose other dims are equal (the job's `rest`
 * key). A request with other dims, or one that would take the rows past max_batch_size, runs
 * the queue first. The queue runs when its rows reach the largest preferred_batch_size (or
 * max_batch_size without one), or when its oldest request has waited the delay (one libuv timer
 * for every queue of the daemon, set to the earliest deadline; libuv counts whole milliseconds,
 * so a delay is rounded up to the next millisecond). The first request of a batch leads it:
 * its key becomes the batch's shape, and af__ijob_variant() finds or plans that variant.
 *
 * The round, off the loop: every request's inputs are written straight into its rows of the
 * batch's input buffers (af__ijob_bind with slices), the variant's session runs once, each
 * request's rows of every output are copied out and encoded as its own answer (axis 0 its own
 * rows). A request whose inputs are bad is answered its 400 and its rows are computed for
 * nothing; a failed round fails every request of the batch. Outputs must have axis 0 equal to
 * the batch's rows (else the batch fails: the model has no batch axis on that output).
 *
 * Also here: the choice to serve a small inference on the loop thread (af__oip_on_loop).
 *
 * Loop thread only, except batch_work, which touches only its batch and its jobs.
 */
#include "daemon/oip_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct af__batchq {
    af__model_t *m;
    af__ijob_t *head, *tail;
    int n;
    int64_t rows;
    uint64_t deadline_ns;
    struct af__batchq *next; /* the daemon's waiting queues (o->queues) */
} af__batchq_t;

typedef struct af__batch {
    uv_work_t w;
    af__daemon_t *d;
    af__model_t *m; /* referenced */
    af__ijob_t *jobs;
    int n;
    int64_t rows;
    af__variant_t *v; /* referenced once v is known */
    int inst;
    af_buffer_t *in, *out;
    int failed;
    af__derr_t kind;
    char msg[AF__OIP_MSG];
    uint64_t ns_compute;
} af__batch_t;

static int64_t target_rows(const af__model_t *m)
{
    int64_t t = 0;
    for (int i = 0; i < m->cfg.n_preferred; i++)
        if (m->cfg.preferred[i] > t)
            t = m->cfg.preferred[i];
    return t ? t : m->cfg.max_batch;
}

/* Sets the daemon's batch timer to the earliest deadline of the waiting queues. */
static void arm(af__oip_t *o)
{
    uint64_t first = UINT64_MAX, now = af_now_ns();
    for (af__batchq_t *q = o->queues; q; q = q->next)
        if (q->deadline_ns < first)
            first = q->deadline_ns;
    if (first == UINT64_MAX) {
        uv_timer_stop(&o->batch_timer);
        return;
    }
    uint64_t ms = first > now ? (first - now + 999999u) / 1000000u : 0;
    uv_timer_start(&o->batch_timer, af__batch_timer, ms, 0);
}

static void unlink_queue(af__oip_t *o, af__batchq_t *q)
{
    for (af__batchq_t **p = &o->queues; *p; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            q->next = NULL;
            return;
        }
}

/* key of rest with rows as axis 0 of every input: "x=3" -> "x=ROWS,3", "x=" -> "x=ROWS". */
static int batch_key(const char *rest, int64_t rows, char *out, size_t len)
{
    char buf[512], *save = NULL;
    size_t at = 0;
    snprintf(buf, sizeof(buf), "%s", rest);
    for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(t, '=');
        if (!eq)
            return -1;
        *eq = 0;
        int w = snprintf(out + at, len - at, "%s%s=%" PRId64 "%s%s", at ? ";" : "", t, rows,
                         eq[1] ? "," : "", eq + 1);
        if (w < 0 || (size_t)w >= len - at)
            return -1;
        at += (size_t)w;
    }
    return 0;
}

static void fail_all(af__batch_t *b, af__derr_t kind, const char *msg)
{
    for (af__ijob_t *j = b->jobs; j; j = j->next)
        if (!j->failed)
            af__ijob_fail(j, kind, "%s", msg);
}

static void batch_free(af__batch_t *b)
{
    for (int32_t k = 0; b->in && k < af_session_input_count(b->v->inst[b->inst]); k++)
        free(b->in[k].data);
    for (int32_t k = 0; b->out && k < af_session_output_count(b->v->inst[b->inst]); k++)
        free(b->out[k].data);
    free(b->in);
    free(b->out);
    af__variant_unref(b->v);
    af__model_unref(b->m);
    free(b);
}

/* Answers every job of b and frees it (loop). */
static void finish(af__batch_t *b, int status)
{
    af__ijob_t *j = b->jobs, *next;
    if (b->failed)
        fail_all(b, b->kind, b->msg);
    for (; j; j = next) {
        next = j->next;
        af__ijob_finish(j, status);
    }
    b->jobs = NULL;
    if (b->v)
        batch_free(b);
    else {
        af__model_unref(b->m);
        free(b);
    }
}

/* Runs the queue q as one batch led by its first request. */
static void flush(af__oip_t *o, af__batchq_t *q)
{
    af__batch_t *b = calloc(1, sizeof(*b));
    af__ijob_t *jobs = q->head;
    int64_t rows = q->rows, at = 0;
    int n = q->n;
    q->head = q->tail = NULL;
    q->n = 0;
    q->rows = 0;
    unlink_queue(o, q);
    for (af__ijob_t *j = jobs; j; j = j->next) {
        j->row_at = at;
        at += j->rows;
    }
    if (!b) {
        for (af__ijob_t *j = jobs, *next; j; j = next) {
            next = j->next;
            af__ijob_fail(j, AF__DERR_BUSY, "out of memory");
            af__ijob_finish(j, 0);
        }
        return;
    }
    *b = (af__batch_t){.d = jobs->d, .m = jobs->m, .jobs = jobs, .n = n, .rows = rows};
    af__model_ref(b->m);
    b->w.data = b;
    af__ijob_t *lead = jobs;
    lead->batch = b;
    if (batch_key(lead->rest, rows, lead->key, sizeof(lead->key)) != 0) {
        af__ijob_fail(lead, AF__DERR_BAD_REQUEST, "the input names and dims are too long");
        return af__batch_run(b, NULL);
    }
    af__ijob_variant(lead);
}

void af__batch_add(af__ijob_t *j)
{
    af__model_t *m = j->m;
    af__oip_t *o = j->d->oip;
    if (!m->bq && !(m->bq = calloc(1, sizeof(*m->bq)))) {
        af__ijob_fail(j, AF__DERR_BUSY, "out of memory");
        return af__ijob_finish(j, 0);
    }
    af__batchq_t *q = m->bq;
    q->m = m;
    if (q->n && (strcmp(q->head->rest, j->rest) != 0 || q->rows + j->rows > m->cfg.max_batch))
        flush(o, q);
    j->next = NULL;
    if (q->tail)
        q->tail->next = j;
    else
        q->head = j;
    q->tail = j;
    q->n++;
    q->rows += j->rows;
    if (q->rows >= target_rows(m))
        flush(o, q);
    else if (q->n == 1) {
        q->deadline_ns = af_now_ns() + (uint64_t)m->cfg.delay_us * 1000u;
        q->next = o->queues;
        o->queues = q;
    }
    arm(o);
}

void af__batch_timer(uv_timer_t *t)
{
    af__daemon_t *d = t->data;
    af__oip_t *o = d->oip;
    uint64_t now = af_now_ns() + 100000u; /* within 0.1 ms of its deadline: due */
    for (int again = 1; again;) {
        again = 0;
        for (af__batchq_t *q = o->queues; q; q = q->next)
            if (q->deadline_ns <= now) {
                flush(o, q); /* unlinks q: scan again */
                again = 1;
                break;
            }
    }
    arm(o);
}

/* ---- the round, off the loop ---------------------------------------------------------------- */

/* Allocates the batch's buffers: inputs zeroed, outputs with axis 0 the batch's rows. 0/-1. */
static int batch_buffers(af__batch_t *b, af_session_t *s)
{
    int32_t ni = af_session_input_count(s), no = af_session_output_count(s);
    b->in = calloc((size_t)ni + 1, sizeof(*b->in));
    b->out = calloc((size_t)no + 1, sizeof(*b->out));
    if (!b->in || !b->out)
        return -1;
    for (int32_t k = 0; k < ni + no; k++) {
        af_io_info_t io;
        int out = k >= ni;
        af_session_io_info(s, out, out ? k - ni : k, &io);
        if (io.dynamic || io.rank < 1 || io.shape[0] != b->rows) {
            snprintf(b->msg, sizeof(b->msg),
                     "model '%s': %s '%s' has no batch axis (axis 0 of %" PRId64 " rows)",
                     b->m->name, out ? "output" : "input", io.name, b->rows);
            return -2;
        }
        af_buffer_t *buf = out ? &b->out[k - ni] : &b->in[k];
        *buf = (af_buffer_t){calloc(1, io.bytes ? io.bytes : 1), io.bytes};
        if (!buf->data)
            return -1;
    }
    return 0;
}

/* Each job's rows of every output, then its answer. */
static void split(af__batch_t *b, af_session_t *s, uint64_t t0)
{
    int32_t no = af_session_output_count(s);
    for (af__ijob_t *j = b->jobs; j; j = j->next) {
        if (j->failed)
            continue;
        for (int32_t k = 0; k < no; k++) {
            uint64_t row = b->out[k].bytes / (uint64_t)b->rows, bytes = row * (uint64_t)j->rows;
            j->out[k] = (af_buffer_t){malloc(bytes ? bytes : 1), bytes};
            if (!j->out[k].data) {
                af__ijob_fail(j, AF__DERR_BUSY, "out of memory");
                break;
            }
            memcpy(j->out[k].data, (char *)b->out[k].data + row * (uint64_t)j->row_at, bytes);
        }
        j->ns_compute = b->ns_compute;
        if (!j->failed)
            af__ijob_answer(j);
        j->ns_total = af_now_ns() - t0;
    }
}

static void batch_work(uv_work_t *w)
{
    af__batch_t *b = w->data;
    af_session_t *s = b->v->inst[b->inst];
    uint64_t t0 = af_now_ns();
    int rc = batch_buffers(b, s);
    if (rc != 0) {
        b->failed = 1;
        b->kind = rc == -1 ? AF__DERR_BUSY : AF__DERR_BAD_REQUEST;
        if (rc == -1)
            snprintf(b->msg, sizeof(b->msg), "out of memory");
        return;
    }
    int32_t ni = af_session_input_count(s);
    af_buffer_t slices[AF__OIP_MAX_SPECS];
    for (af__ijob_t *j = b->jobs; j; j = j->next) {
        for (int32_t k = 0; k < ni && k < AF__OIP_MAX_SPECS; k++) {
            uint64_t row = b->in[k].bytes / (uint64_t)b->rows;
            slices[k] = (af_buffer_t){(char *)b->in[k].data + row * (uint64_t)j->row_at,
                                      row * (uint64_t)j->rows};
        }
        if (!j->failed)
            af__ijob_bind(j, slices);
    }
    af_error_t err;
    af_error_clear(&err);
    uint64_t t1 = af_now_ns();
    rc = af_session_run(s, b->in, b->out, &err);
    b->ns_compute = af_now_ns() - t1;
    if (rc != 0) {
        b->failed = 1;
        b->kind = af__derr_of(rc);
        snprintf(b->msg, sizeof(b->msg), "inference failed (%s): %.400s", af_err_name(rc),
                 err.msg[0] ? err.msg : af_strerror(rc));
        return;
    }
    split(b, s, t0);
}

static void batch_after(uv_work_t *w, int status)
{
    af__batch_t *b = w->data;
    af__oip_t *o = b->d->oip;
    af__model_t *m = b->m;
    if (status != 0 && !b->failed) {
        b->failed = 1;
        b->kind = AF__DERR_DRAINING;
        snprintf(b->msg, sizeof(b->msg), "the inference was canceled");
    }
    m->inst_inflight[b->inst]--;
    m->inst_rounds[b->inst]++;
    if (!b->failed) {
        int slot = b->rows < AF__OIP_MAX_BATCH_STATS ? (int)b->rows : AF__OIP_MAX_BATCH_STATS - 1;
        o->batches++;
        o->batched_requests += (uint64_t)b->n;
        m->executions++;
        m->batch_count[slot]++;
        m->batch_ns[slot] += b->ns_compute;
    }
    finish(b, status);
}

void af__batch_run(af__batch_t *b, af__variant_t *v)
{
    if (!v) { /* the lead failed (planning): the batch fails with its message */
        b->failed = 1;
        b->kind = b->jobs->kind;
        snprintf(b->msg, sizeof(b->msg), "%s", b->jobs->msg);
        return finish(b, 0);
    }
    v->refs++;
    b->v = v;
    b->inst = af__model_pick(b->m);
    for (af__ijob_t *j = b->jobs; j; j = j->next) {
        j->batch = NULL;
        if (af__ijob_attach(j, v->inst[b->inst]) != 0)
            af__ijob_fail(j, AF__DERR_BUSY, "out of memory");
    }
    int rc = uv_queue_work(b->d->loop, &b->w, batch_work, batch_after);
    if (rc != 0) {
        b->failed = 1;
        b->kind = AF__DERR_INTERNAL;
        snprintf(b->msg, sizeof(b->msg), "cannot queue the batch: %s", uv_strerror(rc));
        b->m->inst_inflight[b->inst]--;
        finish(b, 0);
    }
}

/* ---- small inferences on the loop ------------------------------------------------------ */

/*
 * Where a request runs (af__oip_infer): a small inference is served on the loop thread, with no
 * threadpool trip (a wake-up there and
 * one back here, and the hand-over costs more than the work): the request is alone in the
 * daemon, its body is small, its model's requests took under [models] loop_max_us of work each
 * so far (parse, round, encode: a small model, whose round runs inline on the calling thread),
 * and the loop has spent under a quarter of the last LOOP_WINDOW_NS on such work. Under load
 * the last rule sends requests to the threadpool, so every core serves and no request waits
 * long behind another on the loop.
 */
#define LOOP_MAX_BODY 16384u
#define LOOP_WINDOW_NS 10000000u

int af__oip_on_loop(af__daemon_t *d, const af__model_t *m, const af__dreq_t *req)
{
    af__oip_t *o = d->oip;
    uint64_t now = af_now_ns(), max_ns = (uint64_t)d->cfg.loop_max_us * 1000u;
    if (now - o->loop_win_t0 >= LOOP_WINDOW_NS) {
        o->loop_win_t0 = now;
        o->loop_win_busy = 0;
    }
    return o->inflight == 1 && m->ok >= 8 && m->ns_ok < max_ns * m->ok &&
           req->body_len <= LOOP_MAX_BODY && o->loop_win_busy < LOOP_WINDOW_NS / 4;
}
