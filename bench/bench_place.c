/*
 * bench_place: placement quality and speed, every algorithm side by side in one run.
 *
 * Two fixed-seed instance sets: (1) random DAGs planned in input order (the placer sees the
 * in-place-resolved groups of a real plan), (2) random interval instances (MiniMalloc-style,
 * mixed short/long lifetimes, log-uniform sizes). Per algorithm: median and worst of
 * arena / lower bound, median time per instance, and a checksum of all heights (so a fast wrong
 * answer cannot pass unnoticed; every result is also verified). Then the time to plan one
 * 100,000-tensor graph with the default portfolio (schedule "input", so the figure is the
 * placement pipeline alone; bench_schedule times the full default).
 *
 * usage: bench_place [--graphs N] [--instances N] [--big N]
 */
#include "arenaflow/graph.h"
#include "arenaflow/pack.h"
#include "arenaflow/plan.h"
#include "arenaflow/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time of this process: unlike wall time, not inflated by other load on a shared machine. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

static const char *algos[] = {"naive", "firstfit-start", "color-end", "greedy-size", "portfolio"};
#define N_ALGOS (int)(sizeof(algos) / sizeof(algos[0]))

/* A graph of the zoo's synthetic generators, or NULL (the caller reports it). */
static af_graph_t *zoo_graph(int residual, uint64_t seed, int32_t size)
{
    af_graph_t *g = NULL;
    int rc = residual ? af_zoo_residual_chain(seed, size, &g, NULL)
                      : af_zoo_random_dag(seed, size, &g, NULL);
    return rc ? NULL : g;
}

static void random_instance(uint64_t seed, af_interval_t *iv, size_t n)
{
    af_zoo_rng_t r = {seed * 7919 + 1};
    int64_t horizon = (int64_t)n;
    for (size_t i = 0; i < n; i++) {
        int64_t lo = (int64_t)af_zoo_rng_below(&r, (uint64_t)horizon);
        int64_t len = af_zoo_rng_below(&r, 5)
                          ? 1 + (int64_t)af_zoo_rng_below(&r, 8)
                          : 1 + (int64_t)af_zoo_rng_below(&r, (uint64_t)horizon / 4 + 1);
        iv[i].lower = lo;
        iv[i].upper = lo + len;
        iv[i].size = (uint64_t)af_zoo_rng_size(&r) / 16 + 1;
        iv[i].offset = 0;
    }
}

int main(int argc, char **argv)
{
    int n_graphs = 200, n_inst = 200, big = 100000;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--graphs"))
            n_graphs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--instances"))
            n_inst = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--big"))
            big = atoi(argv[i + 1]);
    }
    double *ratio = malloc(sizeof(double) * (size_t)(n_graphs > n_inst ? n_graphs : n_inst));
    double *ms = malloc(sizeof(double) * (size_t)(n_graphs > n_inst ? n_graphs : n_inst));
    uint64_t greedy_h[1024];
    int fail = 0;

    printf("# bench_place: arena / lower bound per placement algorithm (lower is better)\n");
    printf("## set 1: %d random DAGs (<= 300 nodes, aliases, in-place hints), input order, "
           "alignment 256\n",
           n_graphs);
    printf("%-16s %10s %10s %12s %18s\n", "algorithm", "median", "worst", "ms/instance",
           "checksum");
    uint64_t *greedy = calloc((size_t)n_graphs, sizeof(uint64_t));
    for (int a = 0; a < N_ALGOS; a++) {
        uint64_t sum = 0;
        double worst = 0;
        for (int k = 0; k < n_graphs; k++) {
            af_graph_t *g = zoo_graph(0, (uint64_t)k + 424242, 300);
            af_plan_opts_t o;
            af_plan_opts_init(&o);
            o.schedule = "input";
            o.placer = algos[a];
            af_plan_t *p;
            af_error_t err;
            uint64_t t0 = af_now_ns();
            if (af_plan_create(g, &o, &p, &err)) {
                fprintf(stderr, "plan failed: %s\n", err.msg);
                return 1;
            }
            ms[k] = (double)(af_now_ns() - t0) / 1e6;
            const af_plan_report_t *r = af_plan_report(p);
            ratio[k] =
                r->lower_bound_bytes ? (double)r->arena_bytes / (double)r->lower_bound_bytes : 1.0;
            if (ratio[k] > worst)
                worst = ratio[k];
            sum += r->arena_bytes * (uint64_t)(k + 1);
            if (!strcmp(algos[a], "greedy-size"))
                greedy[k] = r->arena_bytes;
            if (!strcmp(algos[a], "portfolio") && r->arena_bytes > greedy[k]) {
                printf("!! portfolio worse than greedy-size on graph %d\n", k);
                fail = 1;
            }
            af_plan_destroy(p);
            af_graph_destroy(g);
        }
        printf("%-16s %10.4f %10.4f %12.3f %18llx\n", algos[a], median(ratio, n_graphs), worst,
               median(ms, n_graphs), (unsigned long long)sum);
    }
    free(greedy);
    (void)greedy_h;

    printf("\n## set 2: %d random interval instances (200-2000 buffers), alignment 1\n", n_inst);
    printf("%-16s %10s %10s %12s %18s\n", "algorithm", "median", "worst", "ms/instance",
           "checksum");
    uint64_t *gh = calloc((size_t)n_inst, sizeof(uint64_t));
    for (int a = 0; a < N_ALGOS; a++) {
        uint64_t sum = 0;
        double worst = 0;
        for (int k = 0; k < n_inst; k++) {
            size_t n = 200 + (size_t)((k * 7919) % 1800);
            af_interval_t *iv = malloc(n * sizeof(*iv));
            random_instance((uint64_t)k, iv, n);
            uint64_t h, t0 = af_now_ns();
            af_error_t err;
            if (af_place_intervals(iv, n, algos[a], NULL, &h, &err) ||
                af_intervals_verify(iv, n, h, 1, &err)) {
                fprintf(stderr, "%s: %s\n", algos[a], err.msg);
                return 1;
            }
            ms[k] = (double)(af_now_ns() - t0) / 1e6;
            uint64_t lb = af_intervals_lower_bound(iv, n, 1);
            ratio[k] = lb ? (double)h / (double)lb : 1.0;
            if (ratio[k] > worst)
                worst = ratio[k];
            sum += h * (uint64_t)(k + 1);
            if (!strcmp(algos[a], "greedy-size"))
                gh[k] = h;
            if (!strcmp(algos[a], "portfolio") && h > gh[k]) {
                printf("!! portfolio worse than greedy-size on instance %d\n", k);
                fail = 1;
            }
            free(iv);
        }
        printf("%-16s %10.4f %10.4f %12.3f %18llx\n", algos[a], median(ratio, n_inst), worst,
               median(ms, n_inst), (unsigned long long)sum);
    }
    free(gh);

    if (big > 0) {
        /* a deep residual network with `big` tensors: build once, plan 3 times, median */
        printf("\n## planning a %d-tensor residual network with the default portfolio placer\n",
               big);
        af_graph_t *g = zoo_graph(1, 77, big);
        double t[3], c[3];
        uint64_t arena = 0, lb = 0;
        for (int rep = 0; rep < 3; rep++) {
            af_plan_opts_t o;
            af_plan_opts_init(&o);
            o.schedule = "input";
            af_plan_t *p;
            af_error_t err;
            uint64_t t0 = af_now_ns();
            double c0 = cpu_ms();
            if (af_plan_create(g, &o, &p, &err)) {
                fprintf(stderr, "big plan: %s\n", err.msg);
                return 1;
            }
            t[rep] = (double)(af_now_ns() - t0) / 1e6;
            c[rep] = cpu_ms() - c0;
            arena = af_plan_report(p)->arena_bytes;
            lb = af_plan_report(p)->lower_bound_bytes;
            af_plan_destroy(p);
        }
        printf("tensors %d  nodes %d  plan (lifetimes+place+reuse edges+verify) median %.1f ms "
               "wall, %.1f ms cpu  arena/lb %.4f  [target < 1000 ms]\n",
               af_graph_tensor_count(g), af_graph_node_count(g), median(t, 3), median(c, 3),
               lb ? (double)arena / (double)lb : 1.0);
        af_graph_destroy(g);
    }
    free(ratio);
    free(ms);
    return fail;
}
