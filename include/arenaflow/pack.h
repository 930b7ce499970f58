/*
 * arenaflow — interval packing, the graph-free half of memory planning: give every interval
 * [lower, upper) x size an offset so that no two intervals that overlap in time overlap in space,
 * with the height (the arena) as small as possible. Placers (naive, seed 2's first fit by start,
 * seed 1's colouring, TFLite's greedy by size, the default portfolio and an anytime search), the
 * lower bound, an independent verifier, shared-object placement, MiniMalloc's CSV reader and a
 * generator of tight instances with a known optimum.
 *
 * The planner (arenaflow/plan.h) turns a graph's tensors into intervals and calls this module;
 * the pool may too. Nothing here knows about graphs.
 *
 * Threading: every function is reentrant (no global state); name lists are static storage.
 */
#ifndef ARENAFLOW_PACK_H
#define ARENAFLOW_PACK_H

#include "arenaflow/common.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An allocation request with lifetime [lower, upper) in MiniMalloc's CSV sense. */
typedef struct af_interval {
    int64_t lower, upper; /* lower < upper */
    uint64_t size;
    uint64_t offset; /* output */
} af_interval_t;

typedef struct af_place_opts {
    uint64_t alignment;  /* offsets are multiples of it; default 1 for raw intervals */
    double time_limit_s; /* for "search" */
    uint64_t capacity;   /* for "search": target height, 0 = minimise */
    /* For "search": when > 0, the search stops after this many search nodes (placements tried
     * by its depth-first search, summed over restarts and probes) instead of at time_limit_s and
     * never reads the clock, so the same input gives the same packing on any machine and under
     * any load. A run that ends within the budget still proves optimality. 0 = time-bounded. */
    uint64_t search_nodes;
    /* For "portfolio": when > 0, its last member runs that work-bounded search from the packing
     * of the others with search_effort x n / 100 nodes for n intervals (one complete dive of the
     * depth-first search is about n nodes), when the packing is above the lower bound (by more
     * than 1/1024) and the instance is moderate (at most 1,024 intervals, and n x (n + distinct
     * interval ends) at most 1,000,000: a dive costs about that). 0 = member off. */
    uint64_t search_effort;
    /* For "portfolio": when > 0 (it takes precedence over search_effort), the last member is
     * the same work-bounded search with a budget of work units instead: search_work / (m + t)
     * nodes for m intervals and t distinct interval ends (a node costs about m + t), when one
     * dive fits in it and m is at most 4,096. AF_PLACE_SEARCH_WORK is 0.2-0.4 s of search on a
     * 2020s server core: the default of af_place_intervals without options and of `arenaflow
     * place`. Deterministic: no clock. 0 = use search_effort. */
    uint64_t search_work;
    /* For "search": when nonzero, time_limit_s counts the calling thread's CPU time instead of
     * wall time (a benchmark on a shared machine gets the same search whatever the load). */
    int cpu_time;
} af_place_opts_t;

/* The default work budget of the portfolio's search member (see search_work). */
#define AF_PLACE_SEARCH_WORK (UINT64_C(1) << 27)

/* NULL-terminated list of the placement algorithms' names (static storage: thread-safe). */
const char *const *af_place_names(void);

/*
 * Places intervals in offset mode with the named algorithm (naive, firstfit-start, color-end,
 * greedy-size, portfolio, search). Writes iv[i].offset and *height (the arena size). Errors:
 * AF_EINVAL (unknown algorithm, lower >= upper, alignment not a power of two), AF_ENOMEM.
 *
 * A capacity (opts->capacity) is a target only the search pursues; the other placers return
 * their packing whatever its height, and the caller compares. The search with a capacity stops
 * as soon as its packing fits and returns 0; when it does not fit, iv and *height still hold the
 * best packing it found (valid, above the capacity) and the result says why: AF_EBUDGET when no
 * packing can fit (proven: the lower bound or the exhausted search space), AF_ETIMEDOUT when the
 * time or node limit ran out first. Without a capacity the search minimises the height and
 * returns 0 with the lowest packing found in its limit. The search starts from the default
 * placer's packing (the portfolio with search_work AF_PLACE_SEARCH_WORK; scaled down by the
 * time limit when that is under 1 s), so with a limit of 1 s or more, or a node limit, it never
 * writes a packing above the default's. Its time limit counts from the call, that start
 * included. Reentrant.
 */
int af_place_intervals(af_interval_t *iv, size_t n, const char *algo, const af_place_opts_t *opts,
                       uint64_t *height, af_error_t *err);
/* Max over time of the total size live: no placement can be lower. */
uint64_t af_intervals_lower_bound(const af_interval_t *iv, size_t n, uint64_t alignment);
/* Checks offsets: no overlap in time and space, inside height, aligned. AF_EVERIFY names a pair. */
int af_intervals_verify(const af_interval_t *iv, size_t n, uint64_t height, uint64_t alignment,
                        af_error_t *err);

/*
 * Parses MiniMalloc's CSV: one buffer per line, lifetime [lower, upper). The first line is a
 * header when all its fields are column names - id (or buffer, buffer_id), lower (or begin),
 * upper, or end (inclusive: upper = end + 1), size, and offset or hint (read and not used) - in
 * any order; lower, upper and size are required, and without an id column the ids are the row
 * numbers. Without a header the columns are id,lower,upper,size[,offset]. Ids are any text
 * without a comma (MiniMalloc's own example uses b1..b5), kept as written. Blank lines and lines
 * starting with '#' are skipped; every other line is a buffer or an error: no row is ever
 * dropped. On success *iv holds *n intervals and *ids an array of *n NUL-terminated ids (then a
 * NULL), all in one allocation: the caller frees *iv and *ids with af_free() (*iv may be NULL
 * when *n is 0). Errors: AF_EPARSE with the line number and the bad field or column (columns
 * alignment and gaps are refused), AF_ENOMEM; the outputs are untouched on error. Reentrant.
 */
int af_intervals_parse_csv(const char *text, size_t len, af_interval_t **iv, char ***ids, size_t *n,
                           af_error_t *err);

/*
 * Shared-object placement (seed 1's interval colouring): gives each interval a buffer index
 * (buf[i]); a buffer's size is the max size of its tenants (aligned up to alignment), buffers are
 * stacked in index order and iv[i].offset is its buffer's start, so *total (the sum of the buffer
 * sizes) is the arena of the stacked buffers. algo: "naive", "color-end" or "greedy-size". buf
 * has n entries; *n_bufs gets the buffer count. Errors: AF_EINVAL (unknown
 * algorithm, lower >= upper), AF_ENOMEM. Reentrant.
 */
int af_place_shared(af_interval_t *iv, size_t n, const char *algo, uint64_t alignment, int32_t *buf,
                    int32_t *n_bufs, uint64_t *total, af_error_t *err);

/*
 * The overlap sweep behind af_intervals_verify, for callers whose intervals may take over bytes
 * in place: takes_over (NULL: none) gives for interval i the index j of an interval whose bytes i
 * may take over at its first time point (j's last time point, upper - 1, must equal i's lower for
 * the exemption to apply), or -1. Intervals of size 0 are skipped. Returns 0 when no two others
 * share a byte and a time point, AF_EVERIFY with the pair in *a and *b (indexes into iv; *a is the
 * one placed first), or AF_ENOMEM. Offsets and sizes are not otherwise checked. Reentrant.
 */
int af_intervals_find_overlap(const af_interval_t *iv, size_t n, const int32_t *takes_over,
                              size_t *a, size_t *b);

/* ---- tight instances (tests and benchmarks) -------------------------------------------- */

/*
 * Tight instances with a known optimum. A full rectangle (time horizon x capacity) is tiled by
 * pieces; each piece is an interval [lower, upper) of `size` bytes at its offset in the tiling.
 * The pieces tile the rectangle, so the total size live at every time point equals the capacity:
 * the lower bound (max cross-section) is the capacity and the tiling itself is a packing of that
 * height, hence the optimum equals the capacity. Jitter then shrinks the size or lifetime of some
 * pieces that are not live at one chosen witness time: the packing stays valid and the cross-
 * section at the witness stays full, so the optimum is still provably the capacity.
 *
 * Shapes of tiling:
 *   guillotine  recursive cuts across time or bytes (the pieces comparable in area);
 *   sweep       time moves left to right, at each step a few live pieces end and the gaps they
 *               leave are refilled by new pieces of random sizes (no guillotine structure);
 *   staircase   horizontal bands, each cut into pieces of one length, the joints of each band
 *               shifted against the band below (a staircase of joints, no cut across all bands);
 *   equal       capacity / k lanes of one size, each cut at random times (every size equal;
 *               jitter shrinks lifetimes only, so sizes stay equal);
 *   giants      a few long-lived pieces of 10-30% of the capacity over 60-90% of the horizon,
 *               the rest of the rectangle guillotine-cut into small pieces around them.
 */
typedef enum af_tight_shape {
    AF_TIGHT_GUILLOTINE = 0,
    AF_TIGHT_SWEEP,
    AF_TIGHT_STAIRCASE,
    AF_TIGHT_EQUAL,
    AF_TIGHT_GIANTS,
    AF_TIGHT_N_SHAPES
} af_tight_shape_t;

typedef struct af_tight_opts {
    size_t buffers;         /* number of intervals, >= 1; default 200 */
    uint64_t seed;          /* PRNG seed; default 1 */
    uint64_t capacity;      /* the optimum; default 1048576; must be >= 1 */
    int64_t horizon;        /* time span [0, horizon); default 4 * buffers */
    double jitter;          /* fraction of eligible pieces shrunk, 0..1; default 0 (every time point
                               full: the tightest instances) */
    af_tight_shape_t shape; /* default AF_TIGHT_GUILLOTINE */
} af_tight_opts_t;

/* NULL-terminated names of the shapes, in enum order (static storage: thread-safe). */
const char *const *af_tight_shape_names(void);

/* Fills *o with the defaults above. */
void af_tight_opts_init(af_tight_opts_t *o);

/*
 * Generates an instance. On success *out (owned by the caller, release with af_tight_free) holds
 * *n intervals in shuffled order whose offsets are a packing of height *optimum, and *optimum is
 * the optimal arena height (= the lower bound). Fewer than o->buffers pieces result only when the
 * rectangle cannot be cut further (horizon x capacity too small) or, for "sweep", the horizon is
 * too short for the events. For "equal" the optimum is the
 * capacity rounded down to a multiple of the lane count. Errors: AF_EINVAL (zero buffers, capacity
 * or horizon, unknown shape), AF_ENOMEM; *out untouched on error. Reentrant.
 */
int af_tight_generate(const af_tight_opts_t *o, af_interval_t **out, size_t *n, uint64_t *optimum,
                      af_error_t *err);

/* Releases an array from af_tight_generate. NULL is a no-op. */
void af_tight_free(af_interval_t *iv);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_PACK_H */
