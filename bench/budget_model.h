/*
 * bench_budget's check of the offload time model against executed rounds (header-only, bench
 * code).
 *
 * The host tier's link on this machine is a memcpy (executor/kernels_swap.c): its bandwidth is
 * measured here with large copies, the way the swap kernels copy. A budgeted offload plan is
 * then made with that bandwidth and executed: compute nodes sleep their modelled duration
 * (cost / compute rate) under one lock — one compute stream, an accelerator's — while SwapOut
 * and SwapIn run the real memcpy kernels on the other workers, ordered by the plan's data and
 * reuse edges. The measured round time (median) is set beside the plan's modelled time
 * (af_plan_report: modelled_s), and the plain plan's beside its own, so a model that hides
 * transfers it cannot hide shows.
 */
#ifndef ARENAFLOW_BENCH_BUDGET_MODEL_H
#define ARENAFLOW_BENCH_BUDGET_MODEL_H

#include "arenaflow/executor.h"
#include "arenaflow/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

static double bm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bm_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median bytes/s of `reps` memcpy calls of `bytes` (source and destination touched first). */
static double bm_memcpy_bandwidth(size_t bytes, int reps)
{
    char *a = malloc(bytes), *b = malloc(bytes);
    double *t = malloc((size_t)reps * sizeof(double));
    if (!a || !b || !t)
        abort();
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    for (int r = 0; r < reps; r++) {
        double t0 = bm_now();
        memcpy(r % 2 ? a : b, r % 2 ? b : a, bytes);
        t[r] = bm_now() - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), bm_cmp);
    double bw = (double)bytes / t[reps / 2];
    free(a), free(b), free(t);
    return bw;
}

typedef struct bm_stream {
    uv_mutex_t mu;     /* the one compute stream */
    double rate;       /* cost units per second */
    af_kernel_fn swap; /* the built-in swap kernel */
    uv_mutex_t smu;
    double swap_s; /* time in the swap kernel, summed */
    uint64_t swap_bytes;
} bm_stream_t;

/* A compute node: holds the stream for cost / rate seconds, asleep (the cores stay free for the
 * copies and for other work on the machine; a sleep is late by some microseconds, which the
 * plain plan's row shows). */
static int bm_sleep_kernel(const af_kernel_args_t *a)
{
    bm_stream_t *s = a->user;
    double c = a->info->cost > 0 ? a->info->cost : 1, sec = c / s->rate;
    struct timespec ts = {(time_t)sec, (long)((sec - (double)(time_t)sec) * 1e9)};
    uv_mutex_lock(&s->mu);
    nanosleep(&ts, NULL);
    uv_mutex_unlock(&s->mu);
    return 0;
}

/* SwapOut / SwapIn: the built-in kernel, timed. */
static int bm_swap_kernel(const af_kernel_args_t *a)
{
    bm_stream_t *s = a->user;
    double t0 = bm_now();
    int rc = s->swap(a);
    double d = bm_now() - t0;
    uv_mutex_lock(&s->smu);
    s->swap_s += d;
    s->swap_bytes += a->output_bytes[0];
    uv_mutex_unlock(&s->smu);
    return rc;
}

/* Median wall seconds of `rounds` rounds of p with sleeping compute kernels; < 0 on error.
 * *swap_bw: bytes/s inside the swap kernels during the rounds (0 when none ran). */
static double bm_measure_round(const af_plan_t *p, double rate, int rounds, double *swap_bw)
{
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.kernels = "empty";
    eo.threads = 8; /* compute nodes waiting for the stream must not hold up the copies */
    eo.verify = 0;
    af_executor_t *ex = NULL;
    bm_stream_t st = {.rate = rate, .swap = af_kernel_builtin("empty", "SwapOut")};
    if (!st.swap || uv_mutex_init(&st.mu) || uv_mutex_init(&st.smu) ||
        af_executor_create(&eo, &ex, NULL))
        return -1;
    const af_graph_t *g = af_plan_graph(p);
    for (int32_t v = 0; v < af_graph_node_count(g); v++) {
        const char *op = af_graph_node(g, v)->op;
        int swap = !strcmp(op, "SwapOut") || !strcmp(op, "SwapIn");
        af_executor_register_kernel(ex, op, swap ? bm_swap_kernel : bm_sleep_kernel, &st);
    }
    af_session_opts_t so;
    memset(&so, 0, sizeof so);
    af_session_t *s = NULL;
    double t[16], med = -1;
    rounds = rounds > 16 ? 16 : rounds;
    if (!af_session_create(ex, p, &so, &s, NULL) && !af_session_run(s, NULL, NULL, NULL)) {
        st.swap_s = 0, st.swap_bytes = 0; /* the timed rounds only */
        int r = 0;
        for (; r < rounds; r++) {
            double t0 = bm_now();
            if (af_session_run(s, NULL, NULL, NULL))
                break;
            t[r] = bm_now() - t0;
        }
        if (r == rounds) {
            qsort(t, (size_t)rounds, sizeof(double), bm_cmp);
            med = t[rounds / 2];
        }
    }
    af_session_destroy(s);
    af_executor_destroy(ex);
    uv_mutex_destroy(&st.mu);
    uv_mutex_destroy(&st.smu);
    *swap_bw = st.swap_s > 0 ? (double)st.swap_bytes / st.swap_s : 0;
    return med;
}

#endif
