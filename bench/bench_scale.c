/*
 * bench_scale: planning time against graph size, 10^3 .. 10^6 tensors, for the default schedule
 * ("best") and the input order ("input"), both with the default portfolio placer and the plan
 * verifier on (af_plan_create with default options otherwise).
 *
 * Graphs: af_zoo_residual_chain (arenaflow/zoo.h) — residual blocks with in-place ReLUs, weights as
 * constants and a long skip every 64 blocks — fixed seed per size. Per size and schedule: one
 * warm-up run, then --reps runs (fewer at 10^6, see below), median CPU time of the process (and
 * median wall time beside it; planning is single-threaded). The reference in the same run is the
 * CPU time to build and finalize the same graph (planning ÷ build ratio), and best ÷ input. A
 * checksum over arena sizes and the first offsets is printed so a fast wrong answer shows. Output:
 * one machine-readable "row" line per measurement, plus a summary.
 *
 * usage: bench_scale [--max N] [--reps N]     (default --max 1000000 --reps 5; sizes 10^3,
 *        3*10^3, 10^4, ... up to --max; at sizes >= 3*10^5 reps is capped at 3 and the
 *        warm-up skipped, so a full run stays within a couple of minutes)
 */
#include "arenaflow/graph.h"
#include "arenaflow/plan.h"
#include "arenaflow/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Process CPU time in ms: planning is single-threaded, and on a shared machine CPU time is far
 * less disturbed by other processes than wall time. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t checksum = 1469598103934665603ull;

static void mix(uint64_t v)
{
    checksum = (checksum ^ v) * 1099511628211ull;
}

/* Plans g with the schedule; returns the wall time in ms (*cpu: CPU ms), negative on failure. */
static double plan_once(const af_graph_t *g, const char *schedule, uint64_t *arena, double *lb,
                        double *cpu)
{
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.schedule = schedule;
    af_plan_t *p = NULL;
    af_error_t err;
    uint64_t t0 = af_now_ns();
    double c0 = cpu_ms();
    int rc = af_plan_create(g, &o, &p, &err);
    double ms = (double)(af_now_ns() - t0) / 1e6;
    *cpu = cpu_ms() - c0;
    if (rc) {
        fprintf(stderr, "bench_scale: plan failed (%s): %s\n", schedule, err.msg);
        return -1;
    }
    const af_plan_report_t *r = af_plan_report(p);
    *arena = r->arena_bytes;
    *lb = r->lower_bound_bytes ? (double)r->arena_bytes / (double)r->lower_bound_bytes : 1;
    mix(r->arena_bytes);
    for (int32_t t = 0; t < 64 && t < af_graph_tensor_count(g); t++)
        mix(af_plan_tensor(p, t)->offset);
    af_plan_destroy(p);
    return ms;
}

int main(int argc, char **argv)
{
    long max = 1000000, reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max") && i + 1 < argc)
            max = atol(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_scale [--max N] [--reps N]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 100 || max < 1000) {
        fprintf(stderr, "bench_scale: --reps 1..100, --max >= 1000\n");
        return 2;
    }
    static const char *const scheds[] = {"best", "input"};
    printf(
        "# bench_scale: af_plan_create time vs graph size (af_zoo_residual_chain, default placer, "
        "verifier on)\n");
    printf("# row tensors nodes schedule median_wall_ms median_cpu_ms cpu_ns_per_tensor "
           "build_cpu_ms plan/build arena/lower reps\n");
    double at_max[2] = {0, 0};
    for (long base = 1000; base <= max; base *= 10) {
        for (int m = 1; m <= 3 && base * m <= max; m += 2) {
            long n = base * m;
            double c0 = cpu_ms();
            af_graph_t *g = NULL;
            af_error_t err;
            int grc = af_zoo_residual_chain((uint64_t)n, (int32_t)n, &g, &err);
            double build_ms = cpu_ms() - c0;
            if (grc) {
                fprintf(stderr, "bench_scale: graph of %ld tensors failed: %s\n", n, err.msg);
                return 1;
            }
            int r = n >= 300000 ? (reps < 3 ? (int)reps : 3) : (int)reps;
            for (int s = 0; s < 2; s++) {
                double t[100], c[100], lb = 1;
                uint64_t arena = 0;
                if (n < 300000 && plan_once(g, scheds[s], &arena, &lb, c) < 0) /* warm-up */
                    return 1;
                for (int k = 0; k < r; k++)
                    if ((t[k] = plan_once(g, scheds[s], &arena, &lb, &c[k])) < 0)
                        return 1;
                double wall = median(t, r), med = median(c, r);
                int32_t nt = af_graph_tensor_count(g);
                printf("row %d %d %s %.3f %.3f %.1f %.3f %.2f %.4f %d\n", nt,
                       af_graph_node_count(g), scheds[s], wall, med, med * 1e6 / nt, build_ms,
                       med / build_ms, lb, r);
                fflush(stdout);
                at_max[s] = med;
            }
            af_graph_destroy(g);
        }
    }
    printf("# largest size (CPU): best %.1f ms, input %.1f ms, best/input %.2f\n", at_max[0],
           at_max[1], at_max[1] > 0 ? at_max[0] / at_max[1] : 0);
    printf("# checksum %016llx\n", (unsigned long long)checksum);
    return 0;
}
