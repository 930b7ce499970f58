/*
 * examples/stream.c — the model server's inference path without HTTP: a stream of inputs fed
 * through af_session_submit() on a libuv loop, as a pipeline that embeds the library would.
 *
 *   af_stream MODEL.onnx|GRAPH.json [--count N] [--slots K] [--kernels SET] [--threads T]
 *             [--input NAME=FILE.npy]...
 *
 * The model is imported, planned and bound to a session whose completions arrive on the loop.
 * K slots (default: the executor's rounds in flight) each own input and output buffers; every
 * slot is submitted, each completion callback checks the round, records its latency and
 * compares its outputs with the first round's (the model is deterministic, and every item of
 * the stream carries the same input here), and the loop submits the free slots again until N
 * items went through. It prints the throughput (items/s), the latency p50/p99 (us) and the
 * mismatches. Inputs come from .npy files (--input, as `arenaflow run`) or are filled with a
 * pattern. Exit status 0, 1 on a failed round or a mismatch, 2 on bad usage.
 */
#include "arenaflow/executor.h"
#include "arenaflow/onnx.h"
#include "arenaflow/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define MAX_SLOTS 64
#define MAX_INPUTS 16

typedef struct stream stream_t;

typedef struct slot {
    stream_t *st;
    af_buffer_t *in, *out;
    uint64_t started_ns;
    int busy; /* submitted, not completed */
} slot_t;

struct stream {
    uv_loop_t *loop;
    af_session_t *s;
    slot_t slots[MAX_SLOTS];
    int n_slots;
    long count, submitted, done, failed, mismatched;
    double *lat_us;
    af_buffer_t *first; /* outputs of the first completed round */
    uint64_t t0;
};

static void on_round(af_session_t *s, uint64_t round, int status, void *user);

static int submit(stream_t *st, int k)
{
    slot_t *sl = &st->slots[k];
    int32_t no = af_session_output_count(st->s);
    for (int32_t i = 0; i < no; i++) { /* dynamic outputs report their size: reset the cap */
        af_io_info_t io;
        af_session_io_info(st->s, 1, i, &io);
        sl->out[i].bytes = io.bytes;
    }
    sl->started_ns = af_now_ns();
    int rc = af_session_submit(st->s, sl->in, sl->out, on_round, sl, NULL);
    if (rc == 0) {
        st->submitted++;
        sl->busy = 1;
    }
    return rc;
}

static void check_outputs(stream_t *st, const slot_t *sl)
{
    int32_t no = af_session_output_count(st->s);
    if (!st->first) {
        st->first = calloc((size_t)no + 1, sizeof(af_buffer_t));
        for (int32_t i = 0; st->first && i < no; i++) {
            st->first[i].data = malloc(sl->out[i].bytes + 1);
            st->first[i].bytes = sl->out[i].bytes;
            memcpy(st->first[i].data, sl->out[i].data, sl->out[i].bytes);
        }
        return;
    }
    for (int32_t i = 0; i < no; i++)
        if (sl->out[i].bytes != st->first[i].bytes ||
            memcmp(sl->out[i].data, st->first[i].data, sl->out[i].bytes) != 0) {
            st->mismatched++;
            return;
        }
}

static void on_round(af_session_t *s, uint64_t round, int status, void *user)
{
    (void)round;
    (void)s;
    slot_t *sl = user;
    stream_t *st = sl->st;
    st->lat_us[st->done] = (double)(af_now_ns() - sl->started_ns) / 1e3;
    st->done++;
    if (status != 0)
        st->failed++;
    else
        check_outputs(st, sl);
    sl->busy = 0; /* the session frees its round slot after this returns: resubmit later */
}

/* ---- set-up ------------------------------------------------------------------------------ */

typedef struct args {
    const char *model, *kernels;
    long count, slots, threads;
    const char *inputs[MAX_INPUTS];
    int n_inputs;
} args_t;

static int usage(void)
{
    fprintf(stderr,
            "usage: af_stream MODEL.onnx|GRAPH.json [--count N] [--slots K] [--kernels SET]\n"
            "                 [--threads T] [--input NAME=FILE.npy]...\n"
            "  feeds N inputs (default 2000) through af_session_submit() on a libuv loop, K\n"
            "  rounds in flight (default 4), kernels SET (default real), and prints items/s\n");
    return 2;
}

static int parse(int argc, char **argv, args_t *a)
{
    *a = (args_t){.kernels = "real", .count = 2000, .slots = 4};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (o[0] != '-') {
            a->model = o;
            continue;
        }
        if (!v)
            return -1;
        i++;
        if (!strcmp(o, "--count"))
            a->count = atol(v);
        else if (!strcmp(o, "--slots"))
            a->slots = atol(v);
        else if (!strcmp(o, "--threads"))
            a->threads = atol(v);
        else if (!strcmp(o, "--kernels"))
            a->kernels = v;
        else if (!strcmp(o, "--input") && a->n_inputs < MAX_INPUTS)
            a->inputs[a->n_inputs++] = v;
        else
            return -1;
    }
    return a->model && a->count > 0 && a->slots > 0 && a->slots <= MAX_SLOTS ? 0 : -1;
}

static af_graph_t *load(const args_t *a, af_tensor_t *ts, af_error_t *err)
{
    char *specs[MAX_INPUTS];
    int n = 0;
    for (int i = 0; i < a->n_inputs; i++) {
        const char *eq = strchr(a->inputs[i], '=');
        if (!eq || af_tensor_load(eq + 1, &ts[i], err) != 0) {
            if (!eq)
                af_error_clear(err), snprintf(err->msg, sizeof(err->msg), "--input NAME=FILE");
            goto fail;
        }
        ts[i].name = strndup(a->inputs[i], (size_t)(eq - a->inputs[i]));
        char spec[512];
        int k = snprintf(spec, sizeof(spec), "%s=", ts[i].name);
        for (int32_t d = 0; d < ts[i].rank && k < (int)sizeof(spec) - 24; d++)
            k += snprintf(spec + k, sizeof(spec) - (size_t)k, "%s%lld", d ? "," : "",
                          (long long)ts[i].shape[d]);
        specs[n++] = strdup(spec);
    }
    af_graph_t *g = NULL;
    size_t len = strlen(a->model);
    if (len > 5 && !strcmp(a->model + len - 5, ".onnx")) {
        af_onnx_opts_t o;
        af_onnx_opts_init(&o);
        o.inputs = (const char *const *)specs;
        o.n_inputs = n;
        af_onnx_load(a->model, &o, &g, err);
    } else {
        af_graph_load_json(a->model, &g, err);
    }
    for (int i = 0; i < n; i++)
        free(specs[i]);
    return g;
fail:
    for (int i = 0; i < n; i++)
        free(specs[i]);
    return NULL;
}

/* Buffers of every slot: inputs from the files (by name) or a pattern, outputs of their size. */
static int bind_slots(stream_t *st, const af_tensor_t *ts, int nt)
{
    int32_t ni = af_session_input_count(st->s), no = af_session_output_count(st->s);
    for (int k = 0; k < st->n_slots; k++) {
        slot_t *sl = &st->slots[k];
        sl->st = st;
        sl->in = calloc((size_t)ni + 1, sizeof(af_buffer_t));
        sl->out = calloc((size_t)no + 1, sizeof(af_buffer_t));
        for (int32_t i = 0; i < ni; i++) {
            af_io_info_t io;
            af_session_io_info(st->s, 0, i, &io);
            const af_tensor_t *t = NULL;
            for (int j = 0; j < nt; j++)
                t = !strcmp(ts[j].name, io.name) ? &ts[j] : t;
            if (t && t->bytes != io.bytes) {
                fprintf(stderr, "af_stream: input '%s' takes %llu bytes, the file has %llu\n",
                        io.name, (unsigned long long)io.bytes, (unsigned long long)t->bytes);
                return -1;
            }
            uint8_t *p = malloc(io.bytes + 1);
            for (uint64_t b = 0; !t && b < io.bytes; b++)
                p[b] = (uint8_t)(b % 7 == 0 ? 0x3c : 0); /* small positive values in any type */
            if (t)
                memcpy(p, t->data, t->bytes);
            sl->in[i] = (af_buffer_t){p, io.bytes};
        }
        for (int32_t i = 0; i < no; i++) {
            af_io_info_t io;
            af_session_io_info(st->s, 1, i, &io);
            if (io.dynamic) {
                fprintf(stderr, "af_stream: output '%s' has a dynamic size\n", io.name);
                return -1;
            }
            sl->out[i] = (af_buffer_t){malloc(io.bytes + 1), io.bytes};
        }
    }
    return 0;
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static int run(stream_t *st)
{
    st->t0 = af_now_ns();
    while (st->done < st->count) {
        /* every free slot goes again; AF_EBUSY (a completed round's slot not yet released by
         * the session) waits for the next turn of the loop */
        for (int k = 0; k < st->n_slots && st->submitted < st->count; k++)
            if (!st->slots[k].busy && submit(st, k) != 0)
                break;
        uv_run(st->loop, UV_RUN_ONCE);
    }
    double s = (double)(af_now_ns() - st->t0) / 1e9;
    qsort(st->lat_us, (size_t)st->done, sizeof(double), cmp_d);
    printf("%ld items in %.3f s: %.0f items/s, %d in flight; latency p50 %.1f us, p99 %.1f us; "
           "%ld failed, %ld outputs differ from the first item's\n",
           st->done, s, (double)st->done / s, st->n_slots, st->lat_us[st->done / 2],
           st->lat_us[(size_t)((double)st->done * 0.99)], st->failed, st->mismatched);
    return st->failed || st->mismatched ? -1 : 0;
}

static void cleanup(stream_t *st)
{
    int32_t ni = st->s ? af_session_input_count(st->s) : 0,
            no = st->s ? af_session_output_count(st->s) : 0;
    for (int k = 0; k < st->n_slots; k++) {
        for (int32_t i = 0; st->slots[k].in && i < ni; i++)
            free(st->slots[k].in[i].data);
        for (int32_t i = 0; st->slots[k].out && i < no; i++)
            free(st->slots[k].out[i].data);
        free(st->slots[k].in);
        free(st->slots[k].out);
    }
    for (int32_t i = 0; st->first && i < no; i++)
        free(st->first[i].data);
    free(st->first);
    free(st->lat_us);
}

int main(int argc, char **argv)
{
    args_t a;
    if (parse(argc, argv, &a) != 0)
        return usage();
    af_error_t err;
    af_error_clear(&err);
    af_tensor_t ts[MAX_INPUTS];
    memset(ts, 0, sizeof(ts));
    uv_loop_t loop;
    uv_loop_init(&loop);
    stream_t st = {.loop = &loop, .count = a.count, .n_slots = (int)a.slots};
    st.lat_us = calloc((size_t)a.count + 1, sizeof(double));
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.max_inflight = (int32_t)a.slots;
    eo.threads = (int32_t)a.threads;
    af_graph_t *g = load(&a, ts, &err);
    af_plan_t *p = NULL;
    af_executor_t *ex = NULL;
    af_session_opts_t so = {.loop = &loop};
    int rc = !g || af_plan_create(g, NULL, &p, &err) ||
             af_executor_opts_set(&eo, "kernels", a.kernels, &err) ||
             af_executor_create(&eo, &ex, &err) || af_session_create(ex, p, &so, &st.s, &err);
    if (rc)
        fprintf(stderr, "af_stream: %s\n", err.msg[0] ? err.msg : "cannot load the model");
    else
        rc = bind_slots(&st, ts, a.n_inputs) != 0 || run(&st) != 0;
    cleanup(&st);
    af_session_destroy(st.s);
    uv_run(&loop, UV_RUN_NOWAIT);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
    for (int i = 0; i < a.n_inputs; i++)
        af_tensor_clear(&ts[i]);
    uv_loop_close(&loop);
    return rc ? 1 : 0;
}
