/*
 * bench_search: the placement search on tight instances with a known optimum and on MiniMalloc's
 * published hard set, beside the peer (MiniMalloc itself) and the default placer, in one run.
 *
 * Part 1 (generated): af_tight_generate over shapes x sizes x seeds x jitters (defaults: every
 * shape; 250, 500, 1000 buffers; seeds 1..3, or K..K+N-1 with --first-seed K; jitter 0 and 0.1).
 * Per instance: the optimum (= the lower bound by construction), the default placer's height
 * (portfolio with its default search_work) and the search's with capacity = optimum, the search's
 * CPU seconds and whether it reached the optimum within the limit. A summary per shape follows.
 *
 * Part 2 (hard set): every *.csv in the directory given by --minimalloc-dir or
 * AF_MINIMALLOC_BENCH_DIR (MiniMalloc's benchmarks/challenging; the capacity is the number in
 * the file name, e.g. A.1048576.csv), skipped with a note when absent. Per instance: the lower
 * bound, the default placer's height / lower bound (portfolio, default search_work), what the
 * search reaches in 100 ms (minimising, no capacity), and the CPU seconds of the search and of
 * MiniMalloc to fit the capacity. MiniMalloc runs as a child process (its binary from
 * --minimalloc-bin or AF_MINIMALLOC_BIN; column skipped when absent) with the same time limit; its
 * CPU time is the child's (getrusage), and its output is read back and verified like ours.
 *
 * The search's limits are CPU time (af_place_opts_t.cpu_time): on a shared machine a wall-clock
 * limit would give it whatever CPU the load leaves. MiniMalloc's --timeout is wall time.
 *
 * Every packing is checked with af_intervals_verify; a checksum of all heights and offsets is
 * printed so a fast wrong answer shows. Times are process CPU seconds (the machine is shared).
 * One warm-up instance runs first; the search is deterministic given the instance and its
 * limit's outcome, so each instance runs once.
 *
 * usage: bench_search [--time-limit S] [--shapes a,b] [--sizes 250,500] [--seeds N]
 *                     [--first-seed K] [--jitters 0,0.1] [--minimalloc-dir DIR]
 *                     [--minimalloc-bin PATH] [--no-generated] [--quick]
 */

#include "arenaflow/pack.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t checksum = 1469598103934665603ull;

static void mix(uint64_t v)
{
    checksum = (checksum ^ v) * 1099511628211ull;
}

typedef struct cfg {
    double limit;
    const char *shapes, *sizes, *jitters, *mm_dir, *mm_bin;
    int seeds, generated, first_seed;
} cfg_t;

/* Places with algo (capacity cap, 0 = minimise), verifies and mixes the result into the
 * checksum. Returns the height, 0 on failure (printed); *secs gets the CPU time, *fit whether the
 * capacity was met. */
static uint64_t run_algo(af_interval_t *iv, size_t n, const char *algo, uint64_t cap, double limit,
                         uint64_t effort, double *secs, int *fit)
{
    af_place_opts_t po = {.alignment = 1,
                          .time_limit_s = limit,
                          .capacity = cap,
                          .search_work = effort,
                          .cpu_time = 1};
    af_error_t err;
    uint64_t h = 0;
    double c0 = cpu_s();
    int rc = af_place_intervals(iv, n, algo, &po, &h, &err);
    *secs = cpu_s() - c0;
    *fit = rc == 0 && (!cap || h <= cap);
    if ((rc == 0 || rc == AF_EBUDGET || rc == AF_ETIMEDOUT) &&
        af_intervals_verify(iv, n, h, 1, &err) == 0) {
        mix(h);
        for (size_t i = 0; i < n; i++)
            mix(iv[i].offset);
        return h;
    }
    fprintf(stderr, "bench_search: %s failed: %s\n", algo, err.msg);
    return 0;
}

/* Splits a comma list into at most max entries; returns the count. */
static int split_list(const char *s, char out[][32], int max)
{
    int k = 0;
    while (s && *s && k < max) {
        size_t len = strcspn(s, ",");
        snprintf(out[k++], 32, "%.*s", (int)(len < 31 ? len : 31), s);
        s += len + (s[len] == ',');
    }
    return k;
}

static int generated(const cfg_t *c)
{
    char shapes[8][32], sizes[8][32], jits[8][32];
    int ns = split_list(c->shapes, shapes, 8), nz = split_list(c->sizes, sizes, 8);
    int nj = split_list(c->jitters, jits, 8), failures = 0;
    uint64_t effort = AF_PLACE_SEARCH_WORK;
    printf("## generated tight instances: search with capacity = optimum, time limit %.1f s\n",
           c->limit);
    printf("%-10s %-7s %-6s %-4s %-10s %-10s %-10s %-9s %s\n", "shape", "buffers", "jitter", "seed",
           "optimum", "default", "search", "cpu_s", "optimal");
    for (int a = 0; a < ns; a++) {
        int shape = -1, hits = 0, count = 0;
        double worst = 0, total = 0;
        for (int k = 0; af_tight_shape_names()[k]; k++)
            if (!strcmp(shapes[a], af_tight_shape_names()[k]))
                shape = k;
        if (shape < 0) {
            fprintf(stderr, "bench_search: unknown shape '%s'\n", shapes[a]);
            return 1;
        }
        for (int z = 0; z < nz; z++)
            for (int j = 0; j < nj; j++)
                for (int seed = c->first_seed; seed < c->first_seed + c->seeds; seed++) {
                    af_tight_opts_t to;
                    af_tight_opts_init(&to);
                    to.shape = (af_tight_shape_t)shape;
                    to.buffers = (size_t)atol(sizes[z]);
                    to.jitter = atof(jits[j]);
                    to.seed = (uint64_t)seed;
                    af_interval_t *iv;
                    size_t n;
                    uint64_t opt;
                    af_error_t err;
                    if (af_tight_generate(&to, &iv, &n, &opt, &err)) {
                        fprintf(stderr, "bench_search: %s\n", err.msg);
                        return 1;
                    }
                    double ts, td;
                    int fit, dfit;
                    uint64_t hd = run_algo(iv, n, "portfolio", 0, c->limit, effort, &td, &dfit);
                    uint64_t hs = run_algo(iv, n, "search", opt, c->limit, 0, &ts, &fit);
                    failures += !hd || !hs;
                    int hit = hs && hs <= opt;
                    hits += hit;
                    count++;
                    total += ts;
                    worst = ts > worst ? ts : worst;
                    printf("%-10s %-7zu %-6s %-4d %-10llu %-10llu %-10llu %-9.3f %s\n", shapes[a],
                           n, jits[j], seed, (unsigned long long)opt, (unsigned long long)hd,
                           (unsigned long long)hs, ts, hit ? "yes" : "no");
                    fflush(stdout);
                    af_tight_free(iv);
                }
        printf("# %s: optimum on %d/%d within %.1f s; search cpu mean %.3f s, max %.3f s\n",
               shapes[a], hits, count, c->limit, count ? total / count : 0, worst);
    }
    return failures;
}

/* Reads a MiniMalloc CSV file. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
    *len = buf ? fread(buf, 1, (size_t)sz, f) : 0;
    fclose(f);
    return buf;
}

/*
 * Runs MiniMalloc on path with capacity cap; returns its CPU seconds (negative when it failed or
 * timed out) and checks its packing: the offsets of its output, in input order, must verify.
 */
/* The peer's CPU seconds, negative when it failed; *timed_out: it ran into its limit (wall
 * clock: on a loaded machine that can be well before `limit` CPU seconds). */
static double run_peer(const char *bin, const char *path, uint64_t cap, double limit,
                       const af_interval_t *iv, size_t n, int *valid, int *timed_out)
{
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    char out[] = "/tmp/bench_search_mmXXXXXX", a1[64], a2[4200], a3[4200], a4[64];
    int fd = mkstemp(out);
    if (fd < 0)
        return -1;
    close(fd);
    snprintf(a1, sizeof a1, "--capacity=%llu", (unsigned long long)cap);
    snprintf(a2, sizeof a2, "--input=%s", path);
    snprintf(a3, sizeof a3, "--output=%s", out);
    snprintf(a4, sizeof a4, "--timeout=%.0fs", limit);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr) || !freopen("/dev/null", "w", stdout))
            _exit(126);
        execl(bin, bin, a1, a2, a3, a4, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0)
        return -1;
    double secs = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                  (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    clock_gettime(CLOCK_MONOTONIC, &w1);
    double wall = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) * 1e-9;
    *timed_out = wall >= limit * 0.95;
    size_t len = 0;
    char *text = slurp(out, &len);
    unlink(out);
    *valid = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !text) {
        free(text);
        return -secs - 1e-9;
    }
    text[len] = '\0';
    af_interval_t *cp = malloc((n ? n : 1) * sizeof *cp);
    size_t k = 0;
    uint64_t h = 0;
    for (char *line = strtok(text, "\n"); cp && line; line = strtok(NULL, "\n")) {
        char *comma = strrchr(line, ',');
        if (!comma || !strncmp(line, "id,", 3) || k >= n)
            continue;
        cp[k] = iv[k];
        cp[k].offset = strtoull(comma + 1, NULL, 10);
        h = cp[k].offset + cp[k].size > h ? cp[k].offset + cp[k].size : h;
        k++;
    }
    af_error_t err;
    *valid = cp && k == n && h <= cap && af_intervals_verify(cp, n, h, 1, &err) == 0;
    free(cp);
    free(text);
    return secs;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One hard-set instance: prints its row; returns 1 when something failed. */
/* won: solved and faster than the peer (which solved it later, or ran out of the time limit);
 * early: the peer failed before the time limit (an error exit or no valid packing), so there is
 * no time to compare with */
static int hard_one(const cfg_t *c, const char *path, const char *name, int *won, int *solved,
                    int *early)
{
    size_t len;
    char *text = slurp(path, &len);
    af_interval_t *iv = NULL;
    char **ids = NULL;
    size_t n = 0;
    af_error_t err;
    if (!text || af_intervals_parse_csv(text, len, &iv, &ids, &n, &err)) {
        fprintf(stderr, "bench_search: %s: %s\n", path, text ? err.msg : "cannot read");
        free(text);
        return 1;
    }
    free(text);
    const char *dot = strchr(name, '.');
    uint64_t cap = dot ? strtoull(dot + 1, NULL, 10) : 0, lb = af_intervals_lower_bound(iv, n, 1);
    double td, t100, ts, tp = -1;
    int dfit, fit100, fit, valid = 0, peer_out = 0;
    uint64_t hd = run_algo(iv, n, "portfolio", 0, c->limit, AF_PLACE_SEARCH_WORK, &td, &dfit);
    uint64_t h100 = run_algo(iv, n, "search", 0, 0.1, 0, &t100, &fit100);
    uint64_t hs = run_algo(iv, n, "search", cap, c->limit, 0, &ts, &fit);
    if (c->mm_bin)
        tp = run_peer(c->mm_bin, path, cap, c->limit, iv, n, &valid, &peer_out);
    int ok = hs && hs <= cap;
    peer_out = peer_out && tp < 0; /* failed at its time limit: it needed more than tp */
    int peer_early = c->mm_bin && ((tp < 0 && !peer_out) || (tp >= 0 && !valid));
    *solved += ok;
    *early += peer_early;
    *won += ok && c->mm_bin && !peer_early && (peer_out || ts < tp);
    char peer[48] = "-";
    if (c->mm_bin)
        snprintf(peer, sizeof peer,
                 tp < 0  ? (peer_out ? "timeout (%.3f)" : "failed (%.3f)")
                 : valid ? "%.3f"
                         : "invalid (%.3f)",
                 tp < 0 ? -tp : tp);
    printf("%-16s %-7zu %-9llu %-10llu %-9.4f %-9.4f %-9.4f %-10s %-9.3f %-14s %s\n", name, n,
           (unsigned long long)cap, (unsigned long long)lb, lb ? (double)hd / (double)lb : 1,
           lb ? (double)h100 / (double)lb : 1, lb ? (double)hs / (double)lb : 1, ok ? "yes" : "no",
           ts, peer,
           !c->mm_bin || !ok     ? ""
           : peer_early          ? "no peer time"
           : peer_out || ts < tp ? "ours"
                                 : "peer");
    fflush(stdout);
    af_free(iv);
    af_free(ids);
    return !hd || !h100 || !hs;
}

static int hard_set(const cfg_t *c)
{
    printf("\n## MiniMalloc's hard set (capacity from the file name), time limit %.1f s each\n",
           c->limit);
    DIR *d = c->mm_dir ? opendir(c->mm_dir) : NULL;
    if (!d) {
        printf("skipped: no directory (--minimalloc-dir or AF_MINIMALLOC_BENCH_DIR: MiniMalloc's "
               "benchmarks/challenging)\n");
        return 0;
    }
    if (!c->mm_bin)
        printf("peer column skipped: no MiniMalloc binary (--minimalloc-bin or "
               "AF_MINIMALLOC_BIN)\n");
    char *names[256];
    int nn = 0, failures = 0, won = 0, solved = 0, early = 0;
    for (struct dirent *e; (e = readdir(d)) && nn < 256;)
        if (strlen(e->d_name) > 4 && !strcmp(e->d_name + strlen(e->d_name) - 4, ".csv"))
            names[nn++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)nn, sizeof *names, cmp_str);
    printf("%-16s %-7s %-9s %-10s %-9s %-9s %-9s %-10s %-9s %-14s %s\n", "instance", "buffers",
           "capacity", "lower_bnd", "default", "srch100ms", "search", "fits", "search_s",
           "minimalloc_s", "faster");
    printf("# default, srch100ms, search: height / lower bound (default: the default portfolio; "
           "srch100ms: search minimising for 100 ms; search: with the "
           "capacity); *_s: CPU seconds to fit the capacity\n");
    for (int i = 0; i < nn; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", c->mm_dir, names[i]);
        failures += hard_one(c, path, names[i], &won, &solved, &early);
        free(names[i]);
    }
    if (c->mm_bin)
        printf("# hard set: %d/%d fit the capacity; faster than MiniMalloc on %d/%d; MiniMalloc "
               "failed before its time limit on %d (no time to compare: not counted as faster)\n",
               solved, nn, won, nn, early);
    else
        printf("# hard set: %d/%d fit the capacity (no peer: not compared)\n", solved, nn);
    return failures;
}

int main(int argc, char **argv)
{
    cfg_t c = {60.0,
               "guillotine,sweep,staircase,equal,giants",
               "250,500,1000",
               "0,0.1",
               getenv("AF_MINIMALLOC_BENCH_DIR"),
               getenv("AF_MINIMALLOC_BIN"),
               3,
               1,
               1};
    double gen_limit = 10.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-generated")) {
            c.generated = 0;
        } else if (!strcmp(a, "--quick")) {
            c.sizes = "150,300";
            c.seeds = 1;
            gen_limit = 2;
            c.limit = 10;
        } else if (v && !strcmp(a, "--time-limit")) {
            gen_limit = c.limit = atof(argv[++i]);
        } else if (v && !strcmp(a, "--shapes")) {
            c.shapes = argv[++i];
        } else if (v && !strcmp(a, "--sizes")) {
            c.sizes = argv[++i];
        } else if (v && !strcmp(a, "--seeds")) {
            c.seeds = atoi(argv[++i]);
        } else if (v && !strcmp(a, "--first-seed")) {
            c.first_seed = atoi(argv[++i]);
        } else if (v && !strcmp(a, "--jitters")) {
            c.jitters = argv[++i];
        } else if (v && !strcmp(a, "--minimalloc-dir")) {
            c.mm_dir = argv[++i];
        } else if (v && !strcmp(a, "--minimalloc-bin")) {
            c.mm_bin = argv[++i];
        } else {
            fprintf(stderr, "usage: bench_search [--time-limit S] [--shapes a,b] [--sizes "
                            "250,500] [--seeds N] [--first-seed K] [--jitters 0,0.1] "
                            "[--minimalloc-dir DIR] "
                            "[--minimalloc-bin PATH] [--no-generated] [--quick]\n");
            return 2;
        }
    }
    if (c.mm_bin && access(c.mm_bin, X_OK) != 0) {
        printf("peer binary '%s' is not executable: column skipped\n", c.mm_bin);
        c.mm_bin = NULL;
    }
    printf("# bench_search: placement search vs MiniMalloc and the default placer; CPU seconds, "
           "single-threaded\n");
    { /* warm-up */
        af_tight_opts_t to;
        af_tight_opts_init(&to);
        af_interval_t *iv;
        size_t n;
        uint64_t opt;
        double s;
        int fit;
        if (af_tight_generate(&to, &iv, &n, &opt, NULL) == 0) {
            run_algo(iv, n, "search", opt, 1.0, 0, &s, &fit);
            af_tight_free(iv);
        }
    }
    int failures = 0;
    double hard_limit = c.limit;
    if (c.generated) {
        c.limit = gen_limit;
        failures += generated(&c);
    }
    c.limit = hard_limit;
    failures += hard_set(&c);
    printf("checksum: %016llx, failures: %d\n", (unsigned long long)checksum, failures);
    return failures ? 1 : 0;
}
