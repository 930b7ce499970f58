/*
 * bench_search: the anytime placement search on generated tight instances (known optimum).
 *
 * 50 instances of 150-450 buffers from af_tight_generate (seeds 1..50). Per instance it prints
 * the lower bound (= the optimum by construction), the portfolio's height (the reference, same
 * run), the search's height, wall and cpu time, and whether it reached the optimum. Then the hit
 * rate, the median and max search time, the mean search/portfolio height ratio and a checksum
 * of all offsets (so a fast wrong answer cannot pass unnoticed). Every packing is checked with
 * af_intervals_verify. One warm-up instance runs first. The search is deterministic given the
 * instance and the time limit, so each instance runs once.
 *
 * Usage: bench_search [--time-limit S] [--count N] [--min B] [--max B] [--jitter J]
 * Single-threaded. Target (issue 4): optimum on >= 90% of instances within 10 s each.
 */
#include "arenaflow/plan.h"
#include "arenaflow/pack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + UINT64_C(0x9E3779B97F4A7C15) + (h << 6) + (h >> 2);
    return h;
}

/* Places with algo, verifies; returns 0 and fills *h, *secs, or prints and returns -1. */
static int run_one(af_interval_t *iv, size_t n, const char *algo, double limit, uint64_t *h,
                   double *secs, double *cpu, uint64_t *sum)
{
    af_place_opts_t po = {.alignment = 1, .time_limit_s = limit, .capacity = 0};
    af_error_t err;
    double t0 = now_s(), c0 = cpu_s();
    int rc = af_place_intervals(iv, n, algo, &po, h, &err);
    *secs = now_s() - t0;
    *cpu = cpu_s() - c0;
    if (rc == 0)
        rc = af_intervals_verify(iv, n, *h, 1, &err);
    if (rc) {
        fprintf(stderr, "bench_search: %s failed: %s\n", algo, err.msg);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        *sum = mix(*sum, iv[i].offset);
    return 0;
}

int main(int argc, char **argv)
{
    double limit = 10.0, jit = -1;
    int count = 50;
    size_t bmin = 150, bmax = 450;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--time-limit") == 0)
            limit = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--count") == 0)
            count = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--min") == 0)
            bmin = (size_t)atol(argv[i + 1]);
        else if (strcmp(argv[i], "--max") == 0)
            bmax = (size_t)atol(argv[i + 1]);
        else if (strcmp(argv[i], "--jitter") == 0)
            jit = atof(argv[i + 1]);
    }
    if (count < 1 || bmin < 1 || bmax < bmin) {
        fprintf(stderr, "usage: bench_search [--time-limit S] [--count N] [--min B] [--max B] "
                        "[--jitter J]\n");
        return 2;
    }
    double *times = calloc((size_t)count, sizeof *times);
    if (!times)
        return 1;
    uint64_t checksum = 0;
    int hits = 0, failures = 0;
    double ratio_sum = 0, port_time = 0, cpu_sum = 0, wall_sum = 0;
    af_tight_opts_t defaults;
    af_tight_opts_init(&defaults);
    printf("# bench_search: %d tight instances (af_tight_generate, seeds 1..%d, jitter %.2f), "
           "%zu-%zu buffers, time limit %.1f s, single-threaded\n",
           count, count, jit >= 0 ? jit : defaults.jitter, bmin, bmax, limit);
    printf("%-4s %-7s %-10s %-10s %-10s %-9s %-9s %-9s %s\n", "inst", "buffers", "lower_bnd",
           "portfolio", "search", "port_ms", "search_s", "cpu_s", "optimal");
    for (int k = -1; k < count; k++) { /* k = -1: warm-up */
        af_tight_opts_t to;
        af_tight_opts_init(&to);
        to.buffers =
            count > 1 ? bmin + (bmax - bmin) * (size_t)(k < 0 ? 0 : k) / (size_t)(count - 1) : bmin;
        to.seed = (uint64_t)(k < 0 ? 1000 : k + 1);
        if (jit >= 0)
            to.jitter = jit;
        af_interval_t *iv;
        size_t n;
        uint64_t opt, hp, hs;
        af_error_t err;
        if (af_tight_generate(&to, &iv, &n, &opt, &err)) {
            fprintf(stderr, "bench_search: %s\n", err.msg);
            return 1;
        }
        uint64_t lb = af_intervals_lower_bound(iv, n, 1);
        double tp, ts, cp, cs;
        uint64_t sum = 0;
        if (run_one(iv, n, "portfolio", limit, &hp, &tp, &cp, &sum) ||
            run_one(iv, n, "search", limit, &hs, &ts, &cs, &sum)) {
            failures++;
            af_tight_free(iv);
            continue;
        }
        af_tight_free(iv);
        if (k < 0)
            continue;
        checksum = mix(checksum, sum);
        int hit = hs == opt;
        hits += hit;
        times[k] = ts;
        port_time += tp;
        ratio_sum += (double)hs / (double)hp;
        printf("%-4d %-7zu %-10llu %-10llu %-10llu %-9.2f %-9.3f %s%s\n", k, n,
               (unsigned long long)lb, (unsigned long long)hp, (unsigned long long)hs, tp * 1e3, ts,
               hit ? "yes" : "no", lb != opt ? " (lower bound != optimum!)" : "");
        fflush(stdout);
    }
    qsort(times, (size_t)count, sizeof *times, cmp_double);
    printf("hit rate: %d/%d = %.1f%% (target >= 90%% within %.1f s each)\n", hits, count,
           100.0 * hits / count, limit);
    printf("search time: median %.3f s, max %.3f s; portfolio mean %.2f ms\n", times[count / 2],
           times[count - 1], port_time / count * 1e3);
    printf("height ratio search/portfolio: mean %.4f\n", ratio_sum / count);
    printf("search cpu/wall: %.2f (below 1: the machine was shared and the wall-clock limit gave "
           "less cpu)\n",
           wall_sum > 0 ? cpu_sum / wall_sum : 1.0);
    printf("checksum: %016llx, failures: %d\n", (unsigned long long)checksum, failures);
    free(times);
    return failures ? 1 : 0;
}
