/*
 * bench_exec: what the executor costs, against references measured in the same run.
 *
 *  1. Scheduling overhead per node, empty kernels, on a chain, a fan-out and a layered graph
 *     (tiny tensors) of 500 and 2000 nodes, at 1 and 2 worker threads, in process CPU time:
 *     one af_session_run per round, and af_session_run_n for all rounds. References: a plain
 *     loop calling the same empty kernel through a function pointer in topological order, and
 *     Taskflow's run_n on the same edge set (data + reuse edges) when its peer program is given
 *     (--taskflow PATH or AF_TASKFLOW_PEER: bench/peer_taskflow.cpp, built with
 *     -DAF_TASKFLOW_DIR=/path/to/taskflow; the column is skipped otherwise).
 *  2. Zoo graphs (a hashing/filling kernel: every input hashed, every output written): rounds/s
 *     of the executor (planned arena from the pool) at 1 and 2 threads, and of a naive
 *     executor (one thread) that mallocs every tensor before its producer and frees it after
 *     its last consumer. Both compute the same bytes: their checksums must agree.
 *  3. Allocation share of run time (target < 3%, seed 1 §4.3): time in allocation calls over
 *     round time — the executor's arena take/return from the pool vs the naive executor's
 *     malloc/free of every tensor.
 *  4. System allocator calls per round on a cached plan (plan cache hit, warm session):
 *     library heap calls (allocator hooks) + pool OS calls + dynamic-region allocations
 *     (target 0); the naive executor's malloc count for comparison.
 *  5. Plan cache: time to plan, to hit in memory, and to restore after a restart (the restore
 *     re-derives the plan with the recorded scheduler and checks it against the file).
 *
 * Fixed seeds, warm-up rounds, repetitions, medians. Usage: bench_exec [--quick] [--overhead]
 * [--shape chain|fan-out|layered] [--taskflow PATH]
 */
#include "arenaflow/cache.h"
#include "arenaflow/executor.h"
#include "arenaflow/zoo.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

static int quick;
static int overhead_only;      /* --overhead: section 1 alone */
static const char *only_shape; /* --shape NAME: section 1 on that shape alone */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    return v[n / 2];
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_d(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

static void die(const char *what, int rc, const af_error_t *err)
{
    fprintf(stderr, "bench_exec: %s: %s\n", what, err && err->msg[0] ? err->msg : af_strerror(rc));
    exit(1);
}

/* ---- synthetic graphs ------------------------------------------------------------------- */

static void add_tensor(af_graph_t *g, const char *name, af_tensor_kind_t kind)
{
    af_tensor_desc_t d = {0};
    d.name = name;
    d.bytes = 64;
    d.rank = -1;
    d.kind = kind;
    if (af_graph_add_tensor(g, &d, NULL, NULL))
        die("add_tensor", AF_EINVAL, NULL);
}

static void add_node(af_graph_t *g, const char *name, const char *const *ins, int nin,
                     const char *out)
{
    af_node_desc_t d = {0};
    d.name = name;
    d.op = "Empty";
    d.inputs = ins;
    d.n_inputs = nin;
    d.outputs = &out;
    d.n_outputs = 1;
    if (af_graph_add_node(g, &d, NULL, NULL))
        die("add_node", AF_EINVAL, NULL);
}

/* kind 0: chain of n; 1: fan-out root -> n leaves -> join; 2: layers of width w, 2 preds each */
static af_graph_t *synth(int kind, int n)
{
    af_graph_t *g;
    af_graph_create(&g);
    char name[64], tn[64], in0[64], in1[64];
    add_tensor(g, "x", AF_TENSOR_INPUT);
    if (kind == 0) {
        for (int i = 0; i < n; i++) {
            snprintf(tn, sizeof tn, "t%d", i);
            snprintf(name, sizeof name, "n%d", i);
            snprintf(in0, sizeof in0, i ? "t%d" : "x", i - 1);
            add_tensor(g, tn, i == n - 1 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE);
            const char *ins[1] = {in0};
            add_node(g, name, ins, 1, tn);
        }
    } else if (kind == 1) {
        add_tensor(g, "r", AF_TENSOR_INTERMEDIATE);
        const char *xi[1] = {"x"};
        add_node(g, "root", xi, 1, "r");
        const char **leaves = malloc(sizeof(char *) * (size_t)n);
        for (int i = 0; i < n - 2; i++) {
            snprintf(tn, sizeof tn, "l%d", i);
            snprintf(name, sizeof name, "leaf%d", i);
            add_tensor(g, tn, AF_TENSOR_INTERMEDIATE);
            const char *ri[1] = {"r"};
            add_node(g, name, ri, 1, tn);
            leaves[i] = strdup(tn);
        }
        add_tensor(g, "y", AF_TENSOR_OUTPUT);
        add_node(g, "join", leaves, n - 2, "y");
        for (int i = 0; i < n - 2; i++)
            free((void *)leaves[i]);
        free(leaves);
    } else {
        int w = 50, layers = n / w;
        uint64_t rng = 42;
        for (int l = 0; l < layers; l++)
            for (int j = 0; j < w; j++) {
                snprintf(tn, sizeof tn, "t%d_%d", l, j);
                snprintf(name, sizeof name, "n%d_%d", l, j);
                add_tensor(g, tn, l == layers - 1 ? AF_TENSOR_OUTPUT : AF_TENSOR_INTERMEDIATE);
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                int a = (int)((rng >> 33) % (uint64_t)w), b = (int)((rng >> 45) % (uint64_t)w);
                snprintf(in0, sizeof in0, l ? "t%d_%d" : "x", l - 1, a);
                snprintf(in1, sizeof in1, l ? "t%d_%d" : "x", l - 1, b);
                const char *ins[2] = {in0, in1};
                add_node(g, name, ins, 2, tn);
            }
    }
    if (af_graph_finalize(g, NULL))
        die("finalize", AF_EINVAL, NULL);
    return g;
}

/* ---- 1. scheduling overhead ------------------------------------------------------------- */

static atomic_ullong empty_calls;

static int counting_empty(const af_kernel_args_t *a)
{
    (void)a;
    atomic_fetch_add_explicit(&empty_calls, 1, memory_order_relaxed);
    return 0;
}

/* Process CPU time (every thread), ns: on a shared machine wall time mostly measures waiting. */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double reference_loop_ns(const af_plan_t *p, int reps)
{
    const af_graph_t *g = af_plan_graph(p);
    int32_t n = af_graph_node_count(g);
    const int32_t *order = af_plan_order(p);
    af_kernel_fn volatile fn = counting_empty;
    uint64_t t[32];
    for (int r = 0; r < reps; r++) {
        uint64_t t0 = cpu_ns();
        for (int k = 0; k < 20; k++)
            for (int32_t i = 0; i < n; i++) {
                af_kernel_args_t a = {.graph = g, .node = order[i]};
                fn(&a);
            }
        t[r] = cpu_ns() - t0;
    }
    return (double)median(t, reps) / (20.0 * n);
}

/* The Taskflow peer (bench/peer_taskflow.cpp, built only with -DAF_TASKFLOW_DIR): its path from
 * --taskflow PATH or AF_TASKFLOW_PEER; NULL skips the column. */
static const char *taskflow_peer;

/* CPU ns per node of Taskflow's run_n on exactly the edges the executor runs (data edges and
 * the plan's reuse edges), in a separate process; negative when the peer failed. *wall_out: its
 * wall-clock ns per node. */
static double taskflow_ns(const af_plan_t *p, int threads, int rounds, int reps, double *wall_out)
{
    const af_graph_t *g = af_plan_graph(p);
    int32_t n = af_graph_node_count(g), ne = 0, nr = af_plan_reuse_edge_count(p);
    for (int32_t v = 0; v < n; v++)
        ne += af_graph_node(g, v)->n_succs;
    char path[] = "/tmp/bench_exec_tfXXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        return -1;
    fprintf(f, "%d %d %d %d %d\n", n, ne + nr, threads, rounds, reps);
    for (int32_t v = 0; v < n; v++)
        for (int32_t k = 0; k < af_graph_node(g, v)->n_succs; k++)
            fprintf(f, "%d %d\n", v, af_graph_node(g, v)->succs[k]);
    for (int32_t i = 0; i < nr; i++)
        fprintf(f, "%d %d\n", af_plan_reuse_edges(p)[i].from, af_plan_reuse_edges(p)[i].to);
    fclose(f);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' < %s", taskflow_peer, path);
    FILE *in = popen(cmd, "r");
    double cpu = -1, wall = -1;
    if (in) {
        if (fscanf(in, "cpu_ns_per_node %lf wall_ns_per_node %lf", &cpu, &wall) != 2)
            cpu = -1;
        if (pclose(in) != 0)
            cpu = -1;
    }
    unlink(path);
    *wall_out = wall;
    return cpu;
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU ns per node of `rounds` rounds, median of reps: one af_session_run per round (batch 0)
 * or one af_session_run_n for all of them. *wall_out: the median wall-clock ns per node. */
static double exec_ns(af_session_t *s, int32_t nodes, int batch, int rounds, int reps,
                      double *wall_out)
{
    uint64_t t[32], wt[32];
    af_error_t err;
    int rc;
    for (int r = 0; r < reps; r++) {
        uint64_t w0 = wall_ns(), t0 = cpu_ns();
        if (batch) {
            if ((rc = af_session_run_n(s, rounds, NULL, NULL, &err)))
                die("run_n", rc, &err);
        } else {
            for (int i = 0; i < rounds; i++)
                if ((rc = af_session_run(s, NULL, NULL, &err)))
                    die("run", rc, &err);
        }
        t[r] = cpu_ns() - t0;
        wt[r] = wall_ns() - w0;
    }
    *wall_out = (double)median(wt, reps) / ((double)rounds * nodes);
    return (double)median(t, reps) / ((double)rounds * nodes);
}

static void bench_overhead(void)
{
    const char *names[3] = {"chain", "fan-out", "layered"};
    int reps = quick ? 5 : 11, rounds = quick ? 50 : 200;
    printf("\n== 1. scheduling overhead per node, empty kernels: CPU ns per node (process CPU "
           "time, all threads) ==\n");
    printf("run = af_session_run per round; run_n = af_session_run_n(%d rounds); ref = plain loop "
           "through a function pointer; taskflow = Taskflow run_n(%d) on the same edges%s\n",
           rounds, rounds, taskflow_peer ? "" : " (skipped: no --taskflow / AF_TASKFLOW_PEER)");
    printf("run_n and taskflow alternate %d times per cell; each is the median of its turns (each "
           "turn the median of %d repetitions); wall = wall-clock ns per node of run_n / of "
           "Taskflow (the parallel speed)\n",
           quick ? 3 : 5, reps);
    printf("%-8s %6s %8s %10s %10s %10s %10s %12s %16s %12s %10s\n", "graph", "nodes", "threads",
           "run", "run_n", "ref", "taskflow", "run_n/tf", "wall run_n/tf", "steals/round",
           "checksum");
    static const int sizes[2] = {500, 2000};
    for (int z = 0; z < 2; z++)
        for (int k = 0; k < 3; k++) {
            if (only_shape && strcmp(only_shape, names[k]) != 0)
                continue;
            af_graph_t *g = synth(k, sizes[z]);
            af_plan_t *p;
            af_error_t err;
            int rc = af_plan_create(g, NULL, &p, &err);
            if (rc)
                die("plan", rc, &err);
            double ref = reference_loop_ns(p, reps);
            int32_t nn = af_graph_node_count(g);
            for (int th = 1; th <= 2; th++) {
                af_executor_opts_t o;
                af_executor_opts_init(&o);
                o.threads = th;
                o.kernels = "empty";
                af_executor_t *ex;
                if ((rc = af_executor_create(&o, &ex, &err)))
                    die("executor", rc, &err);
                af_executor_register_kernel(ex, "Empty", counting_empty, NULL);
                af_session_t *s;
                if ((rc = af_session_create(ex, p, NULL, &s, &err)))
                    die("session", rc, &err);
                if ((rc = af_session_run_n(s, 10, NULL, NULL, &err))) /* warm-up */
                    die("run_n", rc, &err);
                atomic_store(&empty_calls, 0);
                uint64_t tasks0, steals0, tasks1, steals1;
                af_executor_counters(ex, &tasks0, &steals0);
                double wall_run, bw[5], tw[5];
                double run = exec_ns(s, nn, 0, rounds, reps, &wall_run);
                /* run_n and the peer alternate `turns` times and each column is the median of
                 * its turns: load that drifts during the cell hits both columns alike. */
                double bt[5], tt[5], batch, tf = -1;
                int turns = quick ? 3 : 5;
                for (int i = 0; i < turns; i++) {
                    bt[i] = exec_ns(s, nn, 1, rounds, reps, &bw[i]);
                    tt[i] = taskflow_peer ? taskflow_ns(p, th, rounds, reps, &tw[i]) : -1;
                }
                uint64_t calls = atomic_load(&empty_calls);
                af_executor_counters(ex, &tasks1, &steals1);
                batch = median_d(bt, turns);
                if (taskflow_peer)
                    tf = median_d(tt, turns);
                char tfs[32] = "-", ratio[32] = "-", walls[48];
                snprintf(walls, sizeof walls, "%.1f / -", median_d(bw, turns));
                if (tf > 0) {
                    snprintf(tfs, sizeof tfs, "%.1f", tf);
                    snprintf(ratio, sizeof ratio, "%.2f", batch / tf);
                    snprintf(walls, sizeof walls, "%.1f / %.1f", median_d(bw, turns),
                             median_d(tw, turns));
                } else if (taskflow_peer) {
                    snprintf(tfs, sizeof tfs, "failed");
                }
                double rounds_run = (1.0 + turns) * reps * rounds;
                printf("%-8s %6d %8d %10.1f %10.1f %10.1f %10s %12s %16s %12.1f %10llu%s\n",
                       names[k], nn, th, run, batch, ref, tfs, ratio, walls,
                       (double)(steals1 - steals0) / rounds_run, (unsigned long long)calls,
                       calls == (1ull + (uint64_t)turns) * reps * rounds * nn ? "" : " MISMATCH");
                fflush(stdout);
                af_session_destroy(s);
                af_executor_destroy(ex);
            }
            af_plan_destroy(p);
            af_graph_destroy(g);
        }
}

/* ---- 2-4. zoo graphs: executor vs naive malloc/free executor ---------------------------- */

/* Reads every input (hash) and writes every output from (node, round, input hashes). The same
 * function serves both executors, so their output checksums must agree. */
static void hash_fill(const af_graph_t *g, int32_t node, uint64_t round, const void *const *in,
                      const uint64_t *inb, int32_t nin, void *const *out, const uint64_t *outb,
                      int32_t nout, const uint8_t *is_view)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    uint64_t h = XXH3_64bits_withSeed(&node, sizeof node, round);
    for (int32_t i = 0; i < nin; i++) /* weights differ between the runners: not hashed */
        if (in[i] && af_graph_tensor(g, ni->inputs[i])->kind != AF_TENSOR_CONSTANT)
            h ^= XXH3_64bits(in[i], (size_t)inb[i]) + (uint64_t)i;
    for (int32_t k = 0; k < nout; k++) {
        if (!out[k] || (is_view && is_view[k]))
            continue;
        uint64_t x = h + (uint64_t)k * 0x9e3779b97f4a7c15ull;
        uint8_t *b = out[k];
        uint64_t i = 0;
        for (; i + 8 <= outb[k]; i += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(b + i, &x, 8);
        }
        for (; i < outb[k]; i++)
            b[i] = (uint8_t)(x >> (i % 8));
    }
}

static int exec_kernel(const af_kernel_args_t *a)
{
    uint8_t view[64] = {0};
    for (int32_t k = 0; k < a->n_outputs && k < 64; k++)
        view[k] = af_graph_tensor(a->graph, a->info->outputs[k])->alias_of >= 0;
    hash_fill(a->graph, a->node, a->round, a->inputs, a->input_bytes, a->n_inputs, a->outputs,
              a->output_bytes, a->n_outputs, view);
    return 0;
}

typedef struct naive_res {
    uint64_t round_ns, alloc_ns, mallocs, checksum, peak_bytes;
} naive_res_t;

/*
 * The naive executor: plan order, one thread; every tensor malloc'd right before its producer
 * runs and freed after its last consumer (views point into their base, constants allocated
 * once). What a framework without a memory plan does each round.
 */
static void naive_round(const af_graph_t *g, const int32_t *order, const int32_t *last,
                        uint64_t round, void **ptr, void **cptr, naive_res_t *res)
{
    int32_t nn = af_graph_node_count(g), nt = af_graph_tensor_count(g);
    const void *in[512];
    uint64_t inb[512], outb[64];
    void *out[64];
    uint8_t view[64];
    uint64_t live = 0;
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        ptr[t] = ti->kind == AF_TENSOR_CONSTANT ? cptr[t] : NULL;
        if (ti->kind == AF_TENSOR_INPUT && ti->alias_of < 0 && ti->bytes > 0) {
            uint64_t t0 = af_now_ns();
            ptr[t] = malloc((size_t)ti->bytes);
            res->alloc_ns += af_now_ns() - t0;
            res->mallocs++;
            live += (uint64_t)ti->bytes;
            memset(ptr[t], (int)(t & 0xff), (size_t)ti->bytes);
        }
    }
    for (int32_t s = 0; s < nn; s++) {
        int32_t v = order[s];
        const af_node_info_t *ni = af_graph_node(g, v);
        for (int32_t k = 0; k < ni->n_outputs && k < 64; k++) {
            int32_t t = ni->outputs[k];
            const af_tensor_info_t *ti = af_graph_tensor(g, t);
            int64_t b = ti->bytes > 0 ? ti->bytes : 1;
            view[k] = ti->alias_of >= 0;
            if (view[k]) {
                int32_t r = af_graph_alias_root(g, t);
                ptr[t] = ptr[r] ? (uint8_t *)ptr[r] + af_graph_alias_root_offset(g, t) : NULL;
            } else {
                uint64_t t0 = af_now_ns();
                ptr[t] = malloc((size_t)b);
                res->alloc_ns += af_now_ns() - t0;
                res->mallocs++;
                live += (uint64_t)b;
                if (live > res->peak_bytes)
                    res->peak_bytes = live;
            }
            out[k] = ptr[t];
            outb[k] = (uint64_t)b;
        }
        for (int32_t i = 0; i < ni->n_inputs && i < 512; i++) {
            in[i] = ptr[ni->inputs[i]];
            int64_t b = af_graph_tensor(g, ni->inputs[i])->bytes;
            inb[i] = b > 0 ? (uint64_t)b : 0;
        }
        hash_fill(g, v, round, in, inb, ni->n_inputs, out, outb, ni->n_outputs, view);
        for (int32_t i = 0; i < ni->n_inputs; i++) { /* free what dies here (once) */
            int32_t t = ni->inputs[i];
            const af_tensor_info_t *ti = af_graph_tensor(g, t);
            if (last[t] == s && ti->alias_of < 0 && ti->kind != AF_TENSOR_CONSTANT && ptr[t] &&
                ti->kind != AF_TENSOR_OUTPUT) {
                uint64_t t0 = af_now_ns();
                free(ptr[t]);
                res->alloc_ns += af_now_ns() - t0;
                live -= ti->bytes > 0 ? (uint64_t)ti->bytes : 1;
                ptr[t] = NULL;
            }
        }
    }
    for (int32_t t = 0; t < nt; t++) { /* outputs (and never-read tensors) */
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if (!ptr[t] || ti->alias_of >= 0 || ti->kind == AF_TENSOR_CONSTANT)
            continue;
        if (ti->kind == AF_TENSOR_OUTPUT && ti->bytes > 0)
            res->checksum ^= XXH3_64bits(ptr[t], (size_t)ti->bytes);
        uint64_t t0 = af_now_ns();
        free(ptr[t]);
        res->alloc_ns += af_now_ns() - t0;
        ptr[t] = NULL;
    }
}

static void naive_run(const af_plan_t *p, int warm, int reps, naive_res_t *res)
{
    const af_graph_t *g = af_plan_graph(p);
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    void **ptr = calloc((size_t)nt, sizeof(void *)), **cptr = calloc((size_t)nt, sizeof(void *));
    int32_t *last = malloc(sizeof(int32_t) * (size_t)nt);
    for (int32_t t = 0; t < nt; t++) {
        last[t] = -1;
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        for (int32_t j = 0; j < ti->n_consumers; j++) {
            int32_t s = af_plan_step_of(p, ti->consumers[j]);
            if (s > last[t])
                last[t] = s;
        }
        if (ti->kind == AF_TENSOR_CONSTANT && ti->bytes > 0)
            cptr[t] = calloc(1, (size_t)ti->bytes);
    }
    /* views keep their base alive: a base dies at the last read of any of its views */
    for (int32_t t = 0; t < nt; t++) {
        int32_t r = af_graph_alias_root(g, t);
        if (r != t && last[t] > last[r])
            last[r] = last[t];
    }
    (void)nn;
    uint64_t *t = malloc(sizeof(uint64_t) * (size_t)reps),
             *a = malloc(sizeof(uint64_t) * (size_t)reps);
    naive_res_t tmp = {0};
    for (int i = 0; i < warm; i++)
        naive_round(g, af_plan_order(p), last, (uint64_t)i, ptr, cptr, &tmp);
    uint64_t mallocs = 0, peak = 0, sum = 0;
    for (int i = 0; i < reps; i++) {
        naive_res_t r = {0};
        uint64_t t0 = af_now_ns();
        naive_round(g, af_plan_order(p), last, (uint64_t)(warm + i), ptr, cptr, &r);
        t[i] = af_now_ns() - t0;
        a[i] = r.alloc_ns;
        mallocs = r.mallocs;
        peak = r.peak_bytes;
        if (i == 0)
            sum = r.checksum;
    }
    res->round_ns = median(t, reps);
    res->alloc_ns = median(a, reps);
    res->mallocs = mallocs;
    res->peak_bytes = peak;
    res->checksum = sum; /* round `warm` */
    for (int32_t k = 0; k < nt; k++)
        free(cptr[k]);
    free(ptr);
    free(cptr);
    free(last);
    free(t);
    free(a);
}

static uint64_t heap_calls;
static void *cnt_malloc(size_t n)
{
    __atomic_fetch_add(&heap_calls, 1, __ATOMIC_RELAXED);
    return malloc(n);
}
static void *cnt_calloc(size_t c, size_t n)
{
    __atomic_fetch_add(&heap_calls, 1, __ATOMIC_RELAXED);
    return calloc(c, n);
}
static void *cnt_realloc(void *p, size_t n)
{
    __atomic_fetch_add(&heap_calls, 1, __ATOMIC_RELAXED);
    return realloc(p, n);
}

typedef struct exec_res {
    uint64_t round_ns, checksum;
    double sys_per_round;
} exec_res_t;

/* Output checksum of round `round` of the executor: re-run it alone with caller buffers. */
static void exec_run(const af_plan_t *p, int threads, int warm, int reps, exec_res_t *res)
{
    const af_graph_t *g = af_plan_graph(p);
    af_executor_opts_t o;
    af_executor_opts_init(&o);
    o.threads = threads;
    o.kernels = "empty";
    af_executor_t *ex;
    af_error_t err;
    int rc = af_executor_create(&o, &ex, &err);
    if (rc)
        die("executor", rc, &err);
    for (int32_t v = 0; v < af_graph_node_count(g); v++)
        af_executor_register_kernel(ex, af_graph_node(g, v)->op, exec_kernel, NULL);
    af_session_t *s;
    if ((rc = af_session_create(ex, p, NULL, &s, &err)))
        die("session", rc, &err);
    /* Inputs as the naive executor makes them; outputs into caller buffers for the checksum. */
    int32_t nin = af_session_input_count(s), nout = af_session_output_count(s);
    af_buffer_t *in = calloc((size_t)nin + 1, sizeof(af_buffer_t));
    af_buffer_t *out = calloc((size_t)nout + 1, sizeof(af_buffer_t));
    for (int32_t i = 0; i < nin; i++) {
        int32_t t = af_session_input_tensor(s, i);
        uint64_t b = (uint64_t)af_graph_tensor(g, t)->bytes;
        in[i] = (af_buffer_t){malloc(b ? b : 1), b};
        memset(in[i].data, (int)(t & 0xff), b);
    }
    for (int32_t i = 0; i < nout; i++) {
        uint64_t b = (uint64_t)af_graph_tensor(g, af_session_output_tensor(s, i))->bytes;
        out[i] = (af_buffer_t){malloc(b ? b : 1), b};
    }
    /* Round ids count from 0 in both executors: round `warm` is the first timed one. */
    uint64_t *t = malloc(sizeof(uint64_t) * (size_t)reps);
    for (int i = 0; i < warm; i++)
        af_session_run(s, in, out, NULL);
    uint64_t h0 = __atomic_load_n(&heap_calls, __ATOMIC_RELAXED);
    af_session_stats_t st0, st1;
    af_session_stats(s, &st0);
    res->checksum = 0;
    for (int i = 0; i < reps; i++) {
        uint64_t t0 = af_now_ns();
        if ((rc = af_session_run(s, in, out, &err)))
            die("run", rc, &err);
        t[i] = af_now_ns() - t0;
        if (i == 0)
            for (int32_t k = 0; k < nout; k++)
                res->checksum ^= XXH3_64bits(out[k].data, (size_t)out[k].bytes);
    }
    af_session_stats(s, &st1);
    uint64_t h1 = __atomic_load_n(&heap_calls, __ATOMIC_RELAXED);
    res->round_ns = median(t, reps);
    res->sys_per_round = (double)((h1 - h0) + (st1.pool_os_calls - st0.pool_os_calls) +
                                  (st1.dynamic_allocs - st0.dynamic_allocs)) /
                         reps;
    af_session_destroy(s);
    af_executor_destroy(ex);
    for (int32_t i = 0; i < nin; i++)
        free(in[i].data);
    for (int32_t i = 0; i < nout; i++)
        free(out[i].data);
    free(in);
    free(out);
    free(t);
}

/* Pool take/return of one arena, as a round does it (median of many, warm pool). */
static uint64_t arena_alloc_ns(uint64_t bytes)
{
    af_pool_t *pool;
    if (af_pool_create(NULL, &pool, NULL))
        return 0;
    void *b;
    for (int i = 0; i < 8; i++)
        if (af_pool_alloc(pool, bytes ? bytes : 1, &b) == 0)
            af_pool_free(pool, b);
    uint64_t t[64];
    for (int r = 0; r < 64; r++) {
        uint64_t t0 = af_now_ns();
        for (int i = 0; i < 16; i++)
            if (af_pool_alloc(pool, bytes ? bytes : 1, &b) == 0)
                af_pool_free(pool, b);
        t[r] = (af_now_ns() - t0) / 16;
    }
    af_pool_destroy(pool);
    return median(t, 64);
}

static void bench_zoo(void)
{
    const char *models[] = {"mobilenetv2", "resnet50", "bert", "darts"};
    int nm = quick ? 2 : 4, warm = 3, reps = quick ? 3 : 7;
    af_plan_cache_t *cache;
    af_plan_cache_opts_t co;
    af_plan_cache_opts_init(&co);
    if (af_plan_cache_create(&co, &cache, NULL))
        die("cache", AF_ENOMEM, NULL);
    printf("\n== 2-4. zoo graphs: executor (planned arena, pool) vs naive executor (malloc/free "
           "per tensor, 1 thread) ==\n");
    printf("%-12s %-7s %10s %10s %12s %12s %10s %10s %18s\n", "model", "runner", "threads",
           "rounds/s", "vs naive", "memory", "alloc %", "sys/round", "checksum");
    for (int m = 0; m < nm; m++) {
        af_graph_t *g;
        af_error_t err;
        int rc = af_zoo_build(models[m], NULL, &g, &err);
        if (rc)
            die("zoo", rc, &err);
        const af_plan_t *p;
        int hit = 0;
        if ((rc = af_plan_cache_get(cache, g, NULL, &p, &hit, &err)))
            die("plan", rc, &err);
        if ((rc = af_plan_cache_get(cache, g, NULL, &p, &hit, &err)) || !hit)
            die("plan cache hit", rc ? rc : AF_EINVAL, &err);
        naive_res_t nr = {0};
        naive_run(p, warm, reps, &nr);
        double naive_rps = 1e9 / (double)nr.round_ns;
        char mem[32];
        snprintf(mem, sizeof mem, "%.1f MiB", (double)nr.peak_bytes / (1 << 20));
        printf("%-12s %-7s %10d %10.2f %12s %12s %9.2f%% %10llu %18llx\n", models[m], "naive", 1,
               naive_rps, "1.00x", mem, 100.0 * (double)nr.alloc_ns / (double)nr.round_ns,
               (unsigned long long)nr.mallocs, (unsigned long long)nr.checksum);
        uint64_t an = arena_alloc_ns(af_plan_arena_bytes(p));
        for (int th = 1; th <= 2; th++) {
            exec_res_t er;
            exec_run(p, th, warm, reps, &er);
            snprintf(mem, sizeof mem, "%.1f MiB", (double)af_plan_arena_bytes(p) / (1 << 20));
            printf("%-12s %-7s %10d %10.2f %11.2fx %12s %9.3f%% %10.2f %18llx%s\n", models[m],
                   "arena", th, 1e9 / (double)er.round_ns,
                   (double)nr.round_ns / (double)er.round_ns, mem,
                   100.0 * (double)an / (double)er.round_ns, er.sys_per_round,
                   (unsigned long long)er.checksum,
                   er.checksum == nr.checksum ? "" : " CHECKSUM MISMATCH");
        }
        af_plan_cache_release(cache, p);
        af_plan_cache_release(cache, p);
        af_graph_destroy(g);
    }
    af_plan_cache_stats_t cs;
    af_plan_cache_stats(cache, &cs);
    printf("plan cache: %llu hits, %llu misses (plans above came from cache hits)\n",
           (unsigned long long)cs.hits, (unsigned long long)cs.misses);
    af_plan_cache_destroy(cache);
}

/* 5. Plan cache: planning vs a hit in memory vs the first hit after a restart (from disk). */
static void bench_cache(void)
{
    const char *models[] = {"resnet50", "bert", "randwire"};
    char dir[] = "/tmp/bench_exec_cache.XXXXXX";
    if (!mkdtemp(dir))
        return;
    printf("\n== 5. plan cache: plan vs hit vs restore after restart ==\n");
    printf("%-10s %12s %12s %14s %10s\n", "model", "plan ms", "hit us", "restore ms", "same plan");
    for (int m = 0; m < 3; m++) {
        af_graph_t *g;
        if (af_zoo_build(models[m], NULL, &g, NULL))
            continue;
        af_plan_cache_opts_t co;
        af_plan_cache_opts_init(&co);
        co.dir = dir;
        af_plan_cache_t *c;
        const af_plan_t *p;
        if (af_plan_cache_create(&co, &c, NULL))
            break;
        uint64_t t0 = af_now_ns();
        af_plan_cache_get(c, g, NULL, &p, NULL, NULL);
        uint64_t t1 = af_now_ns();
        uint64_t arena = af_plan_arena_bytes(p);
        af_plan_cache_release(c, p);
        uint64_t th[9];
        for (int i = 0; i < 9; i++) {
            uint64_t a = af_now_ns();
            af_plan_cache_get(c, g, NULL, &p, NULL, NULL);
            th[i] = af_now_ns() - a;
            af_plan_cache_release(c, p);
        }
        af_plan_cache_destroy(c);
        af_plan_cache_create(&co, &c, NULL); /* restart */
        uint64_t t2 = af_now_ns();
        int hit = 0;
        af_plan_cache_get(c, g, NULL, &p, &hit, NULL);
        uint64_t t3 = af_now_ns();
        printf("%-10s %12.2f %12.1f %14.2f %10s\n", models[m], (double)(t1 - t0) / 1e6,
               (double)median(th, 9) / 1e3, (double)(t3 - t2) / 1e6,
               hit && af_plan_arena_bytes(p) == arena ? "yes" : "NO");
        af_plan_cache_release(c, p);
        af_plan_cache_destroy(c);
        af_graph_destroy(g);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_exec: could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    taskflow_peer = getenv("AF_TASKFLOW_PEER");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--overhead") == 0) {
            overhead_only = 1;
        } else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
            only_shape = argv[++i];
            overhead_only = 1;
        } else if (strcmp(argv[i], "--taskflow") == 0 && i + 1 < argc) {
            taskflow_peer = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_exec [--quick] [--overhead] [--shape NAME] [--taskflow "
                            "PATH]\n"
                            "  --overhead       only section 1 (scheduling overhead per node)\n"
                            "  --shape NAME     only section 1, only chain, fan-out or layered\n"
                            "  --taskflow PATH  the peer_taskflow program (built with "
                            "-DAF_TASKFLOW_DIR=DIR); also AF_TASKFLOW_PEER\n");
            return 2;
        }
    }
    if (only_shape && strcmp(only_shape, "chain") && strcmp(only_shape, "fan-out") &&
        strcmp(only_shape, "layered")) {
        fprintf(stderr, "bench_exec: --shape takes chain, fan-out or layered, not '%s'\n",
                only_shape);
        return 2;
    }
    if (taskflow_peer && !taskflow_peer[0])
        taskflow_peer = NULL;
    af_replace_allocator(cnt_malloc, cnt_realloc, cnt_calloc, free);
    printf("bench_exec (arenaflow %s)%s: medians; ratios are against references measured in "
           "this run\n",
           af_version(), quick ? " --quick" : "");
    bench_overhead();
    if (overhead_only)
        return 0;
    bench_zoo();
    bench_cache();
    printf("\nalloc %%: naive = time in malloc/free / round time; arena = one pool take+return "
           "of the arena / round time.\nsys/round: naive = malloc calls per round; arena = "
           "library heap calls + pool OS calls + dynamic allocs per round (cached plan).\n");
    return 0;
}
