/*
 * bench_pool — replays tensor allocation traces against the arenaflow pool and four tuned peers
 * (jemalloc, glibc, tcmalloc, mimalloc) in one run, at 1 and 2 threads; then reserved ÷ peak
 * live for the pool's ladders and the peers; then a summary over traces.
 *
 * Traces: the planner's event table CSV (`arenaflow plan G --events F.csv`: header
 * event_id,event_type,tensor_name,buffer_index,op_id,offset,bytes; ALLOC rows carry bytes, FREE
 * rows name the tensor), one or more `--trace FILE`; without any, a built-in synthetic trace
 * (fixed seed: log-uniform 256 B – 64 MiB, each tensor dies 1–4 steps after it is made, one in
 * ten lives 10–200 steps like a skip connection). One round = the whole trace; anything still
 * live at the end of a round is freed, so rounds repeat like executor rounds. The trace model
 * and its loading (CSV parsing, the synthetic generator) are in bench_pool_trace.h.
 *
 * Method: each thread replays its own copy of the trace (the pool: through its own cache, a
 * fresh pool per repetition) as an executor worker does with dynamic tensors (executor/
 * dynamic.c): two verification rounds (a tag word written into every block at alloc and checked
 * at free: the checksum, equal for every column when they did the same work, and a wrong pointer
 * would show), one calibration round, then ~30 ms of timed rounds that touch no block memory. The
 * timed loop is compiled once per column with that allocator's calls made directly (dlopen'd
 * peers: through their symbol's pointer, as a PLT call), so the floor column is the loop's cost.
 * Options: --only COLUMN (time one column beside arenaflow and the floor), --threads 1|2, --rounds
 * N (fixed timed rounds instead of ~30 ms, for instruction counting under callgrind), --no-frag
 * (skip the reserved/peak table). Reported: the median over `reps` repetitions of ns per alloc+free
 * pair — a thread's time ÷ its pairs, mean over threads, so a perfectly scaling allocator shows the
 * same figure at 1 and 2 threads — as wall time and as thread CPU time (CLOCK_THREAD_CPUTIME_ID; on
 * a loaded machine the wall figure mostly measures waiting for a CPU). For every pool column, the
 * global + class lock acquisitions during the timed rounds are printed (0 means the fast path never
 * locked), and the most the pool reserved through every round of a repetition (the thousands of
 * timed ones included) ÷ peak live, which shows a policy whose memory drifts up over many rounds.
 * Columns: arenaflow (default options, one cache per thread: the size-class fast path up to
 * recut_min, 32 KiB, and above it blocks re-cut from the cache's heap of extents), af classes (the
 * same with recut_min 0: the size-class path alone), af locked (af_pool_alloc/af_pool_free, no
 * cache: the class lock per call, how the executor takes a round's arena), af bins (the defaults
 * plus recut_bins: freed re-cut blocks kept by length in the cache), the four tuned peers, bare
 * cls (a bound: the classes alone, bench_pool_bare.h), floor (a bare LIFO stack).
 *
 * Reserved ÷ peak live (1 thread, fresh pool, 13 rounds): "whole" = peak reserved over all 13
 * rounds; "steady" = peak reserved during rounds 4-13, both ÷ the trace's peak live bytes. One
 * rule for every allocator: the bytes it holds from the OS to serve blocks, counted from its start
 * (start-up included, nothing subtracted). The pool's count starts at af_pool_create: its mapped
 * chunks, huge chunks and heap spans (its descriptor tables, heap memory, are printed apart as
 * metadata). Peers (bench_pool_peers.h: how each is loaded, tuned not to purge, and what each
 * count is): jemalloc (this process's malloc, linked in through arenaflow; measured on an arena of
 * its own), glibc (__libc_malloc), tcmalloc and mimalloc (dlopen with RTLD_DEEPBIND), each in a
 * fresh process (--frag-peer). The summary compares arenaflow with the strongest peer of each
 * trace: the fastest, and the one reserving the least.
 */
#include "arenaflow/pool.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef AF_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
/* jemalloc reads this when it starts (before main): the tuning of the jemalloc column. */
const char *malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1,tcache_max:8388608";
#endif

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

#include "bench_pool_peers.h" /* tcmalloc, mimalloc, the tuning, reserved bytes per peer */
#include "bench_pool_trace.h" /* op_t, trace_t, synthetic, load_trace */
#include "bench_pool_bare.h"  /* bare cls: the bound column */

/* ---- allocators -------------------------------------------------------------------------- */

typedef struct {
    const char *name, *what;
    int pool; /* a fresh pool is made per repetition (others: pool = 0); 2: with recut_min 0;
                 3: with recut_bins */
    size_t (*reserved)(void); /* peers: bytes held from the OS now (NULL: not a peer) */
    const peer_lib_t *lib;    /* dlopen'd peers: skipped when not loaded */
    void *(*make)(void *ctx); /* per-thread state */
    void (*unmake)(void *ts);
    void *(*alloc)(void *ts, size_t n);
    void (*free)(void *ts, void *p);
    /* the timed rounds: the same loop with the calls above made directly (no indirect call per
     * operation: the harness's own cost stays small and equal for every column) */
    void (*timed)(const trace_t *t, void *ts, void **ptrs, int rounds, uint64_t *sum,
                  uint64_t *errors);
} alloc_t;

static af_pool_t *g_pool;

static void *pool_make(void *ctx)
{
    af_pool_cache_t *k = NULL;
    if (af_pool_cache_create(ctx, &k))
        exit(1);
    return k;
}
static void pool_unmake(void *ts)
{
    af_pool_cache_destroy(ts);
}
static void *pool_alloc(void *ts, size_t n)
{
    void *p;
    return af_pool_cache_alloc(ts, n, &p) ? NULL : p;
}
static void pool_free(void *ts, void *p)
{
    af_pool_cache_free(ts, p);
}
static void *locked_alloc(void *ts, size_t n)
{
    void *p;
    return af_pool_alloc(ts, n, &p) ? NULL : p;
}
static void locked_free(void *ts, void *p)
{
    af_pool_free(ts, p);
}

/* The harness floor: a LIFO stack of one cell per tensor slot, no metadata at all. Its time is
 * what the replay loop itself costs; the other columns include it. */
typedef struct {
    void **stk;
    size_t n;
    uint64_t *cells;
} floor_t;
static void *floor_make(void *ctx)
{
    const trace_t *t = ctx;
    floor_t *f = calloc(1, sizeof(*f));
    f->cells = calloc(t->nslots + 1, 64);
    f->stk = malloc((t->nslots + 1) * sizeof(void *));
    for (size_t i = 0; i <= t->nslots; i++)
        f->stk[f->n++] = f->cells + i * 8;
    return f;
}
static void floor_unmake(void *ts)
{
    floor_t *f = ts;
    free(f->stk);
    free(f->cells);
    free(f);
}
static void *floor_alloc(void *ts, size_t n)
{
    floor_t *f = ts;
    return f->n ? f->stk[--f->n] : NULL;
}
static void floor_free(void *ts, void *p)
{
    floor_t *f = ts;
    f->stk[f->n++] = p;
}

static void *nop_make(void *ctx)
{
    return ctx;
}
static void nop_unmake(void *ts)
{
    (void)ts;
}
#ifdef AF_HAVE_JEMALLOC
static void *je_alloc(void *ts, size_t n)
{
    return mallocx(n, 0);
}
static void je_free(void *ts, void *p)
{
    dallocx(p, 0);
}
#endif
static void *glibc_alloc(void *ts, size_t n)
{
    return __libc_malloc(n);
}
static void glibc_free(void *ts, void *p)
{
    __libc_free(p);
}
static void *tc_alloc(void *ts, size_t n)
{
    return g_tc.malloc_fn(n);
}
static void tc_free(void *ts, void *p)
{
    g_tc.free_fn(p);
}
static void *mi_alloc(void *ts, size_t n)
{
    return g_mi.malloc_fn(n);
}
static void mi_free(void *ts, void *p)
{
    g_mi.free_fn(p);
}

/* Timed replay loop of one allocator, calls inlined (see alloc_t.timed). The trace fields and
 * the counters live in locals: stores through `sum`/`errors` would be reloaded after every
 * opaque call, a cost of the harness, not of the allocator. */
#define TIMED_LOOP(NAME, ALLOC, FREE)                                                              \
    static void NAME(const trace_t *t, void *ts, void **ptrs, int rounds, uint64_t *sum,           \
                     uint64_t *errors)                                                             \
    {                                                                                              \
        const op_t *ops = t->ops;                                                                  \
        size_t nops = t->nops;                                                                     \
        uint64_t s = 0, e = 0;                                                                     \
        for (int r = 0; r < rounds; r++) {                                                         \
            for (size_t i = 0; i < nops; i++) {                                                    \
                const op_t *o = &ops[i];                                                           \
                if (o->alloc) {                                                                    \
                    void *p = ALLOC(ts, o->size);                                                  \
                    e += !p;                                                                       \
                    ptrs[o->slot] = p;                                                             \
                } else if (ptrs[o->slot]) {                                                        \
                    s += 1;                                                                        \
                    FREE(ts, ptrs[o->slot]);                                                       \
                    ptrs[o->slot] = NULL;                                                          \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        *sum += s;                                                                                 \
        *errors += e;                                                                              \
    }
TIMED_LOOP(timed_pool, pool_alloc, pool_free)
TIMED_LOOP(timed_locked, locked_alloc, locked_free)
TIMED_LOOP(timed_floor, floor_alloc, floor_free)
TIMED_LOOP(timed_bare, bare_alloc, bare_free)
#ifdef AF_HAVE_JEMALLOC
TIMED_LOOP(timed_je, je_alloc, je_free)
#endif
TIMED_LOOP(timed_glibc, glibc_alloc, glibc_free)
TIMED_LOOP(timed_tc, tc_alloc, tc_free)
TIMED_LOOP(timed_mi, mi_alloc, mi_free)

/* The columns, in print order: arenaflow first (the reference of the x ratios), then af locked,
 * the tuned peers, floor last. */
static const alloc_t g_columns[] = {
    {"arenaflow",
     "defaults, one af_pool_cache_t per thread (classes up to 32 KiB, re-cut extents above)", 1,
     NULL, NULL, pool_make, pool_unmake, pool_alloc, pool_free, timed_pool},
    {"af classes", "one af_pool_cache_t per thread, recut_min 0 (the size-class path only)", 2,
     NULL, NULL, pool_make, pool_unmake, pool_alloc, pool_free, timed_pool},
    {"af locked", "af_pool_alloc/af_pool_free, no cache (the class lock per call)", 1, NULL, NULL,
     nop_make, nop_unmake, locked_alloc, locked_free, timed_locked},
    {"af bins", "defaults + recut_bins (re-cut blocks kept by length in the cache)", 3, NULL, NULL,
     pool_make, pool_unmake, pool_alloc, pool_free, timed_pool},
#ifdef AF_HAVE_JEMALLOC
    {"jemalloc", "mallocx/dallocx, tuned: no decay, tcache up to 8 MiB", 0, reserved_je, NULL,
     nop_make, nop_unmake, je_alloc, je_free, timed_je},
#endif
    {"glibc", "__libc_malloc/__libc_free, tuned: no trim, mmap only above 32 MiB", 0,
     reserved_glibc, NULL, nop_make, nop_unmake, glibc_alloc, glibc_free, timed_glibc},
    {"tcmalloc", "tc_malloc/tc_free (dlopen, RTLD_DEEPBIND), TCMALLOC_RELEASE_RATE=0", 0,
     reserved_tc, &g_tc, nop_make, nop_unmake, tc_alloc, tc_free, timed_tc},
    {"mimalloc", "mi_malloc/mi_free (dlopen, RTLD_DEEPBIND), MIMALLOC_ALLOW_DECOMMIT=0", 0,
     reserved_mi, &g_mi, nop_make, nop_unmake, mi_alloc, mi_free, timed_mi},
    {"bare cls",
     "a bound: the pool's classes as LIFO stacks, class from the address, nothing else (no state "
     "word, checks, counters, lending)",
     0, NULL, NULL, bare_make, bare_unmake, bare_alloc, bare_free, timed_bare},
    {"floor",
     "a bare LIFO stack of cells, no metadata (the replay loop alone; every column "
     "includes it)",
     0, NULL, NULL, floor_make, floor_unmake, floor_alloc, floor_free, timed_floor},
};
#define NCOL ((int)(sizeof g_columns / sizeof g_columns[0]))

/* ---- replay ------------------------------------------------------------------------------ */

typedef struct {
    const trace_t *t;
    const alloc_t *a;
    void *ctx;
    int rounds;
    pthread_barrier_t *bar;
    uint64_t checksum, errors, ns, cpu_ns;
} job_t;

static int g_rounds; /* --rounds N: fixed timed rounds (instruction counting); 0 = ~30 ms */

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Replays `rounds` rounds. With tag != 0 every block gets a
 * tag word written at alloc and read back at free (the verification pass); the timed pass
 * touches no block memory. */
static void replay_rounds(const trace_t *t, const alloc_t *a, void *ts, void **ptrs, int rounds,
                          int tag, uint64_t *sum, uint64_t *errors)
{
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < t->nops; i++) {
            const op_t *o = &t->ops[i];
            uint64_t want = (uint64_t)o->slot * 0x9E3779B97F4A7C15ull + (uint64_t)r;
            if (o->alloc) {
                uint64_t *p = a->alloc(ts, o->size);
                if (!p) {
                    (*errors)++;
                    continue;
                }
                if (tag)
                    *p = want;
                ptrs[o->slot] = p;
            } else if (ptrs[o->slot]) {
                uint64_t *p = ptrs[o->slot];
                *errors += tag && *p != want;
                *sum += tag ? *p : 1;
                a->free(ts, p);
                ptrs[o->slot] = NULL;
            }
        }
    }
}

static void *job_run(void *arg)
{
    job_t *j = arg;
    void *ts = j->a->make(j->ctx);
    void **ptrs = calloc(j->t->nslots + 1, sizeof(void *));
    uint64_t pairs = 0;
    replay_rounds(j->t, j->a, ts, ptrs, 2, 1, &j->checksum, &j->errors); /* verify + warm up */
    uint64_t c0 = af_now_ns();
    j->a->timed(j->t, ts, ptrs, 1, &pairs, &j->errors); /* calibrate */
    uint64_t per_round = af_now_ns() - c0 + 1;
    /* about 30 ms of timed work, at least 2 rounds */
    j->rounds = (int)(30000000u / per_round);
    j->rounds = j->rounds < 2 ? 2 : j->rounds > 100000 ? 100000 : j->rounds;
    if (g_rounds)
        j->rounds = g_rounds;
    pthread_barrier_wait(j->bar); /* warm-up done: the main thread reads the stats */
    pthread_barrier_wait(j->bar); /* ... and lets the timed rounds start */
    uint64_t t0 = af_now_ns(), u0 = thread_cpu_ns();
    j->a->timed(j->t, ts, ptrs, j->rounds, &pairs, &j->errors);
    j->ns = af_now_ns() - t0;
    j->cpu_ns = thread_cpu_ns() - u0;
    j->errors += pairs != (uint64_t)j->t->npairs * (uint64_t)(j->rounds + 1);
    pthread_barrier_wait(j->bar);
    pthread_barrier_wait(j->bar); /* keep the cache until the stats are read */
    free(ptrs);
    j->a->unmake(ts);
    return NULL;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n ? v[n / 2] : 0;
}

typedef struct {
    int ran;
    double ns_pair, cpu_pair, cpu_min, cpu_max; /* medians; CPU time's range over reps */
    uint64_t checksum, errors, locks, pairs, timed_rounds;
    uint64_t peak_reserved; /* pool columns: the most any repetition's pool reserved, through
                               every round, the timed ones included */
} result_t;

static result_t measure(const trace_t *t, const alloc_t *a, int nthreads, int reps)
{
    double *ns = calloc((size_t)reps, sizeof(double)), *cpu = calloc((size_t)reps, sizeof(double));
    result_t res = {.ran = 1};
    for (int rep = 0; rep < reps; rep++) {
        af_pool_opts_t po;
        af_pool_opts_init(&po);
        if (a->pool == 2)
            po.recut_min = 0;
        po.recut_bins = a->pool == 3;
        if (a->pool && af_pool_create(&po, &g_pool, NULL))
            exit(1);
        pthread_barrier_t bar;
        pthread_barrier_init(&bar, NULL, (unsigned)nthreads + 1);
        job_t jobs[2];
        pthread_t th[2];
        for (int i = 0; i < nthreads; i++) {
            jobs[i] =
                (job_t){t, a,    a->make == floor_make || a->make == bare_make ? (void *)t : g_pool,
                        0, &bar, 0,
                        0, 0,    0};
            pthread_create(&th[i], NULL, job_run, &jobs[i]);
        }
        af_pool_stats_t st0, st1;
        pthread_barrier_wait(&bar); /* warm-up done */
        if (g_pool)
            af_pool_stats(g_pool, &st0);
        pthread_barrier_wait(&bar); /* the timed rounds start after the snapshot */
        pthread_barrier_wait(&bar); /* replay done */
        if (g_pool) {
            af_pool_stats(g_pool, &st1);
            res.locks +=
                (st1.global_locks - st0.global_locks) + (st1.class_locks - st0.class_locks);
            if (st1.peak_reserved_bytes > res.peak_reserved)
                res.peak_reserved = st1.peak_reserved_bytes;
        }
        pthread_barrier_wait(&bar);
        ns[rep] = cpu[rep] = 0;
        for (int i = 0; i < nthreads; i++) {
            pthread_join(th[i], NULL);
            res.checksum += rep == 0 ? jobs[i].checksum : 0;
            res.errors += jobs[i].errors;
            ns[rep] += (double)jobs[i].ns / ((double)t->npairs * jobs[i].rounds) / nthreads;
            cpu[rep] += (double)jobs[i].cpu_ns / ((double)t->npairs * jobs[i].rounds) / nthreads;
            res.pairs += (uint64_t)t->npairs * (uint64_t)jobs[i].rounds;
            res.timed_rounds += (uint64_t)jobs[i].rounds;
        }
        pthread_barrier_destroy(&bar);
        af_pool_destroy(g_pool);
        g_pool = NULL;
    }
    res.ns_pair = median(ns, reps);
    res.cpu_pair = median(cpu, reps);
    res.cpu_min = cpu[0]; /* sorted by median() */
    res.cpu_max = cpu[reps - 1];
    free(ns);
    free(cpu);
    return res;
}

typedef struct {
    double whole, steady; /* reserved ÷ peak live: rounds 1-13 and rounds 4-13 */
} frag_t;

/* reserved ÷ peak live: one thread, fresh pool, one cache, 13 rounds. Rounds 1-3 warm up;
 * the peak is reset before round 4, so rounds 4-13 show the steady state: its peak reserved, OS
 * maps and lock acquisitions. */
static frag_t fragmentation(const trace_t *t, const char *label, af_pool_opts_t *po)
{
    af_pool_t *p;
    if (af_pool_create(po, &p, NULL))
        exit(1);
    double recut, norecut;
    ladder_bounds(t, p, &recut, &norecut);
    af_pool_cache_t *k;
    if (af_pool_cache_create(p, &k))
        exit(1);
    alloc_t a = {.name = "pool", .pool = 1, .alloc = pool_alloc, .free = pool_free};
    void **ptrs = calloc(t->nslots + 1, sizeof(void *));
    uint64_t sum = 0, err = 0;
    replay_rounds(t, &a, k, ptrs, 3, 0, &sum, &err);
    af_pool_stats_t st, st2;
    af_pool_stats(p, &st);
    af_pool_reset_peak(p);
    replay_rounds(t, &a, k, ptrs, 10, 0, &sum, &err);
    af_pool_stats(p, &st2);
    uint64_t locks = st2.global_locks + st2.class_locks - st.global_locks - st.class_locks;
    uint64_t whole = st.peak_reserved_bytes > st2.peak_reserved_bytes ? st.peak_reserved_bytes
                                                                      : st2.peak_reserved_bytes;
    frag_t f = {(double)whole / (double)t->peak_live,
                (double)st2.peak_reserved_bytes / (double)t->peak_live};
    printf("  %-31s classes %3u  peak reserved %9.1f MiB  whole %.3f  steady %.3f  borrows %llu  "
           "os maps %llu  | rounds 4-13: os maps/round %.1f, locks/pair %.4f%s | ladder bounds: "
           "no re-cut %.3f, free re-cut %.3f",
           label, st2.nclasses, (double)whole / (1 << 20), f.whole, f.steady,
           (unsigned long long)st.borrows, (unsigned long long)st.os_maps,
           (double)(st2.os_maps - st.os_maps) / 10.0, (double)locks / (10.0 * (double)t->npairs),
           err ? "  ERRORS" : "", norecut, recut);
    printf(" | metadata %.1f MiB\n", (double)st2.metadata_bytes / (1 << 20));
    free(ptrs);
    af_pool_cache_destroy(k);
    af_pool_destroy(p);
    return f;
}

/* A peer's reserved / peak live, measured like fragmentation() but in a fresh process (this
 * program run with --frag-peer): an allocator cannot be reset, and one that kept the memory of
 * earlier traces would look better than it is. reserved() is sampled after every allocation and
 * counts what the allocator holds from the OS from its start, start-up included (nothing is
 * subtracted: memory it reserved before the first round serves the trace), as the pool's count
 * starts at af_pool_create (bench_pool_peers.h says what each peer's count is). */
static frag_t frag_peer(const trace_t *t, const alloc_t *a)
{
    void **ptrs = calloc(t->nslots + 1, sizeof(void *));
    size_t peak = a->reserved(), steady = peak;
    for (int r = 0; r < 13; r++) {
        if (r == 3)
            steady = a->reserved();
        for (size_t i = 0; i < t->nops; i++) {
            const op_t *o = &t->ops[i];
            if (o->alloc) {
                ptrs[o->slot] = a->alloc(NULL, o->size);
                size_t now = a->reserved();
                peak = now > peak ? now : peak;
                if (r >= 3)
                    steady = now > steady ? now : steady;
            } else if (ptrs[o->slot]) {
                a->free(NULL, ptrs[o->slot]);
                ptrs[o->slot] = NULL;
            }
        }
    }
    free(ptrs);
    return (frag_t){(double)peak / (double)t->peak_live, (double)steady / (double)t->peak_live};
}

/* Runs frag_peer for column c on trace t in a child process; negative figures when it failed. */
static frag_t frag_peer_child(const trace_t *t, int c)
{
    char cmd[4096], tr[3000] = ""; /* the synthetic trace is the child's default */
    if (strncmp(t->name, "synthetic", 9))
        snprintf(tr, sizeof tr, "--trace '%s'", t->name);
    snprintf(cmd, sizeof cmd, "/proc/%d/exe --frag-peer '%s' %s", (int)getpid(), g_columns[c].name,
             tr);
    frag_t f = {-1, -1};
    FILE *in = popen(cmd, "r");
    if (in && fscanf(in, "frag %lf %lf", &f.whole, &f.steady) != 2)
        f.whole = f.steady = -1;
    if (!in)
        return f;
    if (pclose(in) != 0)
        f.whole = f.steady = -1;
    return f;
}

/* The reserved/peak configurations (unset fields keep af_pool_opts_init's defaults). */
static const struct {
    const char *label;
    int seed_ladder, seed_pure;
    uint32_t steps;
    int classes_only; /* recut_min 0 */
    int bins;         /* recut_bins */
} g_cfgs[] = {
    {"defaults (re-cut > 32 KiB)", 0, 0, 0, 0, 0}, {"default ladder, no re-cut", 0, 0, 0, 1, 0},
    {"default, 6 steps/doubl.", 0, 0, 6, 1, 0},    {"seed 256K..64M", 1, 1, 0, 1, 0},
    {"seed + pow2 below", 1, 0, 0, 1, 0},          {"defaults + recut_bins", 0, 0, 0, 0, 1},
};
#define NCFG ((int)(sizeof g_cfgs / sizeof g_cfgs[0]))
enum { CFG_DEFAULT = 0, CFG_CLASSES = 1 }; /* rows in the summary */

static const char *g_only;   /* --only NAME: time just this column (and the floor) */
static int g_maxthreads = 2; /* --threads N: 1 or 2 */
static int g_nofrag;         /* --no-frag: skip the reserved/peak table */

/* What the summary needs of one trace. */
typedef struct {
    const trace_t *t;
    result_t r[2][NCOL]; /* [threads - 1][column] */
    frag_t f[NCFG];
    frag_t pf[NCOL]; /* peers' reserved / peak live (negative: not measured) */
} trace_sum_t;

static void print_times(const trace_t *t, int nt, int reps, const int *cols, int na,
                        const result_t *r)
{
    const result_t *r0 = &r[cols[0]], *fl = &r[cols[na - 1]];
    printf(
        "  %d thread%s: ns per alloc+free pair, median of %d (wall | thread CPU time; CPU range = "
        "min..max over the repetitions)\n",
        nt, nt > 1 ? "s" : "", reps);
    for (int i = 0; i < na; i++) {
        const result_t *ri = &r[cols[i]];
        printf("    %-10s %9.2f | %9.2f ns   x%-7.2f | x%-7.2f CPU range %.2f..%.2f  checksum "
               "%016llx errors %llu%s\n",
               g_columns[cols[i]].name, ri->ns_pair, ri->cpu_pair, ri->ns_pair / r0->ns_pair,
               ri->cpu_pair / r0->cpu_pair, ri->cpu_min, ri->cpu_max,
               (unsigned long long)ri->checksum, (unsigned long long)ri->errors,
               i == 0 ? "   (x = time / arenaflow time)" : "");
    }
    for (int i = 0; i < na; i++)
        if (g_columns[cols[i]].pool) /* arenaflow, af classes, af locked */
            printf("    %s minus floor (the pool's own cost): %.2f ns wall | %.2f ns CPU\n",
                   g_columns[cols[i]].name, r[cols[i]].ns_pair - fl->ns_pair,
                   r[cols[i]].cpu_pair - fl->cpu_pair);
    for (int i = 0; i < na; i++)
        if (g_columns[cols[i]].pool)
            printf("    %s: pool lock acquisitions during the timed rounds: %llu (%.6f per "
                   "pair); peak reserved over all %llu rounds / (%d x peak live: a trace per "
                   "thread) %.3f\n",
                   g_columns[cols[i]].name, (unsigned long long)r[cols[i]].locks,
                   (double)r[cols[i]].locks / (double)r[cols[i]].pairs,
                   (unsigned long long)(r[cols[i]].timed_rounds / (unsigned)reps + 3), nt,
                   (double)r[cols[i]].peak_reserved / ((double)t->peak_live * nt));
}

static void run_trace(const trace_t *t, int reps, trace_sum_t *sum)
{
    printf("\ntrace %s: %zu alloc+free pairs/round, %u tensors, sizes %llu B .. %.1f MiB, "
           "peak live %.1f MiB\n",
           t->name, t->npairs, t->nslots, (unsigned long long)t->min_size,
           (double)t->max_size / (1 << 20), (double)t->peak_live / (1 << 20));
    sum->t = t;
    int cols[NCOL], na = 0;
    for (int i = 0; i < NCOL; i++)
        if ((!g_only || !strcmp(g_columns[i].name, g_only) || i == 0 || i == NCOL - 1) &&
            (!g_columns[i].lib || g_columns[i].lib->ok))
            cols[na++] = i;
    for (int nt = 1; nt <= g_maxthreads; nt++) {
        for (int i = 0; i < na; i++)
            sum->r[nt - 1][cols[i]] = measure(t, &g_columns[cols[i]], nt, reps);
        print_times(t, nt, reps, cols, na, sum->r[nt - 1]);
    }
    if (g_nofrag)
        return;
    printf("  reserved / peak live (1 thread, fresh pool, 13 rounds): whole = peak reserved over "
           "rounds 1-13 (warm-up included) / peak live; steady = peak reserved during rounds 4-13 "
           "(peak reset before round 4) / peak live; ladder bounds = the least any pool with that "
           "ladder could reserve / peak live: blocks never re-cut between classes (any larger "
           "block may serve), or re-cut freely at every allocation\n");
    for (int i = 0; i < NCFG; i++) {
        af_pool_opts_t po;
        af_pool_opts_init(&po);
        if (g_cfgs[i].seed_ladder)
            po.ladder = AF_POOL_LADDER_SEED;
        po.seed_pure = g_cfgs[i].seed_pure;
        if (g_cfgs[i].steps)
            po.steps_per_doubling = g_cfgs[i].steps;
        if (g_cfgs[i].classes_only)
            po.recut_min = 0;
        po.recut_bins = g_cfgs[i].bins;
        sum->f[i] = fragmentation(t, g_cfgs[i].label, &po);
    }
    printf("  peers, each in a fresh process (bench_pool --frag-peer NAME), the same 13 rounds, "
           "reserved sampled after every allocation, from the allocator's start (start-up "
           "included):\n");
    for (int c = 0; c < NCOL; c++) {
        sum->pf[c] = (frag_t){-1, -1};
        if (!g_columns[c].reserved || (g_columns[c].lib && !g_columns[c].lib->ok))
            continue;
        sum->pf[c] = frag_peer_child(t, c);
        printf("  %-31s whole %.3f  steady %.3f%s\n", g_columns[c].name, sum->pf[c].whole,
               sum->pf[c].steady, sum->pf[c].whole < 0 ? "  (child failed)" : "");
    }
}

static int column_of(const char *name)
{
    for (int c = 0; c < NCOL; c++)
        if (!strcmp(g_columns[c].name, name))
            return c;
    return -1;
}

/* The strongest peer of a trace, or -1: the fastest at 1 thread (CPU), or with lean set the one
 * with the least steady reserved / peak live. */
static int best_peer(const trace_sum_t *s, int lean)
{
    int best = -1;
    for (int c = 0; c < NCOL; c++) {
        if (lean ? s->pf[c].steady < 0 : !g_columns[c].reserved || !s->r[0][c].ran)
            continue;
        if (best < 0 || (lean ? s->pf[c].steady < s->pf[best].steady
                              : s->r[0][c].cpu_pair < s->r[0][best].cpu_pair))
            best = c;
    }
    return best;
}

/* The end of the run: medians and target counts over all traces, then one line per trace. The
 * headline compares arenaflow with the strongest peer of each trace: the fastest at 1 thread
 * (CPU time), and the one reserving the least. */
static void summary(const trace_sum_t *s, int n)
{
    double v[64];
    printf("\nsummary over %d trace%s\n  median over traces of ns per pair, 1 thread, thread CPU "
           "time:",
           n, n > 1 ? "s" : "");
    for (int c = 0; c < NCOL; c++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (s[i].r[0][c].ran)
                v[k++] = s[i].r[0][c].cpu_pair;
        if (k)
            printf("  %s %.2f", g_columns[c].name, median(v, k));
    }
    printf("\n");
    int half[2] = {0, 0}, k = 0, lean_st[2] = {0, 0}, lean_wh[2] = {0, 0}, kf = 0;
    double lo[2] = {1e300, 1e300}, hi[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        int f = best_peer(&s[i], 0);
        if (f >= 0 && s[i].r[0][0].ran && s[i].r[0][1].ran) {
            for (int c = 0; c < 2; c++) { /* arenaflow (defaults), af classes */
                double x = s[i].r[0][c].cpu_pair / s[i].r[0][f].cpu_pair;
                half[c] += x <= 0.5;
                lo[c] = x < lo[c] ? x : lo[c];
                hi[c] = x > hi[c] ? x : hi[c];
            }
            k++;
        }
        int l = best_peer(&s[i], 1);
        if (l >= 0 && !g_nofrag) {
            for (int c = 0; c < 2; c++) { /* CFG_DEFAULT, CFG_CLASSES */
                lean_st[c] += s[i].f[c].steady <= s[i].pf[l].steady;
                lean_wh[c] += s[i].f[c].whole <= s[i].pf[l].whole;
            }
            kf++;
        }
    }
    for (int c = 0; c < 2 && k; c++)
        printf("  %s / fastest tuned peer, 1 thread, CPU: x%.2f .. x%.2f; <= x0.5 on %d of %d "
               "traces\n",
               c ? "af classes (size-class path only)" : "arenaflow (defaults, re-cut > 32 KiB)",
               lo[c], hi[c], half[c], k);
    for (int c = 0; c < 2 && kf; c++)
        printf("  %s reserved / peak live <= the leanest peer's: steady on %d of %d traces, "
               "whole run on %d of %d\n",
               c ? "no re-cut (classes only)" : "defaults (re-cut > 32 KiB)", lean_st[c], kf,
               lean_wh[c], kf);
    if (g_nofrag)
        return;
    int lk = column_of("af locked");
    printf("  per trace (ns per pair at 1 thread, CPU; fastest = the fastest tuned peer, x = "
           "time / its time; reserved / peak live as whole|steady: defaults, classes only and the "
           "leanest peer)\n"
           "  %-16s %6s %8s %8s %8s %-9s %8s %6s %6s | %-11s %-11s %-21s\n",
           "trace", "pairs", "arenaflw", "classes", "locked", "fastest", "ns", "x af", "x cls",
           "defaults", "classes", "leanest peer");
    for (int i = 0; i < n; i++) {
        const result_t *r = s[i].r[0];
        const char *nm = strrchr(s[i].t->name, '/');
        nm = nm ? nm + 1 : s[i].t->name;
        int f = best_peer(&s[i], 0), l = best_peer(&s[i], 1);
        double fns = f >= 0 ? r[f].cpu_pair : 0.0;
        printf("  %-16.16s %6zu %8.2f %8.2f %8.2f %-9s %8.2f %6.2f %6.2f | %.2f|%.2f   "
               "%.2f|%.2f   %-9s %.2f|%.2f\n",
               nm, s[i].t->npairs, r[0].cpu_pair, r[1].cpu_pair, lk >= 0 ? r[lk].cpu_pair : 0.0,
               f >= 0 ? g_columns[f].name : "-", fns, fns > 0 ? r[0].cpu_pair / fns : 0.0,
               fns > 0 ? r[1].cpu_pair / fns : 0.0, s[i].f[CFG_DEFAULT].whole,
               s[i].f[CFG_DEFAULT].steady, s[i].f[CFG_CLASSES].whole, s[i].f[CFG_CLASSES].steady,
               l >= 0 ? g_columns[l].name : "-", l >= 0 ? s[i].pf[l].whole : 0.0,
               l >= 0 ? s[i].pf[l].steady : 0.0);
    }
}

int main(int argc, char **argv)
{
    int reps = 7;
    trace_t traces[64];
    int nt = 0;
    const char *frag_child = NULL;
    peers_load();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--trace") && i + 1 < argc && nt < 64) {
            if (load_trace(argv[++i], &traces[nt]) == 0)
                nt++;
            else
                fprintf(stderr, "skipping %s (no ALLOC rows)\n", argv[i]);
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
            reps = reps < 1 ? 1 : reps;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            g_only = argv[++i];
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            g_maxthreads = atoi(argv[++i]) == 1 ? 1 : 2;
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            g_rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--no-frag")) {
            g_nofrag = 1;
        } else if (!strcmp(argv[i], "--frag-peer") && i + 1 < argc) {
            frag_child = argv[++i]; /* internal: one peer's reserved / peak in this process */
        } else {
            fprintf(stderr,
                    "usage: %s [--trace EVENTS.csv]... [--reps N] [--only COLUMN] [--threads 1|2] "
                    "[--no-frag] [--rounds N]\n",
                    argv[0]);
            return 2;
        }
    }
    if (nt == 0)
        traces[nt++] = synthetic();
    if (frag_child) {
        int c = column_of(frag_child);
        if (c < 0 || !g_columns[c].reserved || (g_columns[c].lib && !g_columns[c].lib->ok))
            return 2;
        if (!strcmp(frag_child, "jemalloc") && je_isolate())
            return 1;
        frag_t f = frag_peer(&traces[0], &g_columns[c]);
        printf("frag %.6f %.6f\n", f.whole, f.steady);
        return 0;
    }
    if (g_only && column_of(g_only) < 0) {
        fprintf(stderr, "--only %s: no such column\n", g_only);
        return 2;
    }
    void *(*volatile m)(size_t) = malloc;
    printf("bench_pool: arenaflow %s\ncolumns:\n", af_version());
    for (int c = 0; c < NCOL; c++)
        printf("  %-10s %s\n", g_columns[c].name, g_columns[c].what);
    printf("plain malloc() in this binary resolves to %s\n",
           (void *)m == (void *)__libc_malloc ? "glibc" : "a replacement (jemalloc, linked in)");
    peers_describe();
    printf("per thread: two untimed rounds that write a tag word into every block and check it at "
           "free (the checksum, equal for every column when they did the same work), one "
           "calibration round, then the timed rounds, which touch no block memory (allocator cost "
           "only)\n"
           "ns per pair = a thread's time for its timed rounds / its pairs (mean over threads; "
           "~30 ms of timed rounds per thread and repetition)\n");
    static trace_sum_t sums[64];
    for (int i = 0; i < nt; i++)
        run_trace(&traces[i], reps, &sums[i]);
    summary(sums, nt);
    return 0;
}
