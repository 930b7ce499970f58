/*
 * Private to the pack module (the files in pack/): the placer registry, the helpers the placers
 * share, the interval orders (pack/order.c), the time sweep (pack/sweep.c), and the
 * branch-and-bound engine of the search (pack/search.c builds the problem and drives the height
 * search, pack/search_part.c holds a partition's storage, pack/search_dfs.c the depth-first
 * search). Other modules use arenaflow/pack.h only.
 */
#ifndef ARENAFLOW_PACK_INT_H
#define ARENAFLOW_PACK_INT_H

#include "arenaflow/pack.h"
#include "common/common_int.h"

/* ---- the placer registry (pack/place.c) ------------------------------------------------ */

typedef int (*af__place_fn)(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                            af_error_t *err);

typedef struct af__place_entry {
    const char *name;
    af__place_fn fn;
    const char *help;
} af__place_entry_t;

const af__place_entry_t *af__place_find(const char *name);

/* Anytime search (pack/search.c): seeded with the portfolio's result. */
int af__place_search(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                     af_error_t *err);
/*
 * Work-bounded search from a given packing (the portfolio's last member, pack/search.c):
 * iv[i].offset must hold a valid packing (sizes aligned up to alignment). Explores at most
 * `nodes` search nodes without reading the clock, then writes the best packing found (never
 * higher than the given one) and its height, and returns 0. Returns 1 without searching when
 * max_dive > 0 and one dive would cost more (m x (m + distinct interval ends) for m intervals
 * of positive size), an error otherwise; iv is untouched unless 0 is returned.
 */
int af__search_improve(af_interval_t *iv, size_t n, uint64_t alignment, uint64_t nodes,
                       uint64_t max_dive, uint64_t *height, af_error_t *err);

/* AF_EINVAL (message in err) unless every interval has lower < upper and n fits the placers'
 * 32-bit ids (pack/place.c). */
int af__pack_check(const af_interval_t *iv, size_t n, af_error_t *err);
/* sizes aligned up to a, n + 1 entries (af__free); NULL when out of memory (pack/place.c). */
uint64_t *af__pack_sizes(const af_interval_t *iv, size_t n, uint64_t a);
/* Offset-mode colour-end placement: shared objects by seed 1's colouring, stacked
 * (pack/shared.c). */
int af__place_color_end(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                        af_error_t *err);

/* ---- interval orders (pack/order.c) ---------------------------------------------------- */

/* Interval ids 0..n-1 by (lower ascending, sz descending, id): the placers' start order. */
int af__sort_by_start(const af_interval_t *iv, const uint64_t *sz, size_t n, int32_t *ids);
/* Interval ids 0..n-1 by (key descending, sz descending, lower ascending, id); key NULL: by
 * (sz descending, lower ascending, id). 0 or AF_ENOMEM. */
int af__sort_by_key_desc(const af_interval_t *iv, const uint64_t *sz, const uint64_t *key, size_t n,
                         int32_t *ids);
/* Interval ids 0..n-1 by (upper, id), or (upper, lower, id) when then_lower. 0 or AF_ENOMEM. */
int af__sort_by_end(const af_interval_t *iv, size_t n, int then_lower, int32_t *ids);

/* ---- time sweep, portfolio ------------------------------------------------------------ */

/* Time-sweep placement through a coalescing best-fit allocator (pack/sweep.c): writes
 * off[i] for sizes sz[i] (already aligned) and *pairs (may be NULL) = the number of overlapping
 * pairs; returns the height, UINT64_MAX when out of memory. */
uint64_t af__place_sweep(const af_interval_t *iv, size_t n, const uint64_t *sz, uint64_t *off,
                         uint64_t *pairs);

/* Portfolio placement (pack/place.c), for the search's incumbent. */
int af__place_portfolio(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                        af_error_t *err);

/* ---- the search's branch-and-bound engine (pack/search.c, pack/search_dfs.c) ----------- */

enum {
    AF__SEARCH_FOUND = 0,      /* a packing within capacity, written to the offsets */
    AF__SEARCH_INFEASIBLE = 1, /* the search space was exhausted: nothing fits */
    AF__SEARCH_ABORTED = 2,    /* the node limit was reached */
    AF__SEARCH_TIMEOUT = 3,    /* the deadline passed, or the work budget ran out */
};

/* Static orders the restarts cycle through (ties broken by index). */
enum { AF__SEARCH_N_ORDERS = 11 };
/* Slot of the randomised order (regenerated before each randomised restart). */
enum { AF__SEARCH_RANDOM_ORDER = AF__SEARCH_N_ORDERS, AF__SEARCH_N_FEATURES = 7 };

/* Undo-log entry: a word the search changed and its previous value. */
typedef struct af__search_undo {
    uint64_t *p;
    uint64_t old;
} af__search_undo_t;

/* One level of the depth-first search (pack/search_dfs.c). */
typedef struct af__search_frame {
    size_t cand_begin, cand_end, next; /* this frame's slice of the candidate stack */
    size_t log_mark;                   /* undo-log length before the current placement */
    int32_t placed;                    /* buffer placed by this frame, or -1 */
    uint64_t lim_id;                   /* the limit arrays' version computed for this frame */
} af__search_frame_t;

/*
 * One partition's problem and search state. Buffer indices are local (0..n-1); sections are the
 * time slots between consecutive distinct interval endpoints of the partition.
 */
typedef struct af__search_part {
    int32_t n, nsec;
    uint64_t alignment;
    uint64_t *size;           /* n */
    int32_t *sec_lo;          /* n: first section the buffer is live in */
    int32_t *sec_hi;          /* n: one past its last section */
    int32_t *ov_start;        /* n+1: CSR of overlapping buffers */
    int32_t *ov;              /* ov_start[n] entries */
    int32_t *ovr_lo, *ovr_hi; /* n: sections of the buffer and all buffers overlapping it */
    int32_t *sec_start;       /* nsec+1: CSR of the buffers live in each section */
    int32_t *sec_buf;         /* sec_start[nsec] entries */
    int32_t *order[AF__SEARCH_N_ORDERS + 1]; /* static orders + the random one */
    uint64_t *feat[AF__SEARCH_N_FEATURES];   /* n each: tot, width, area, size, ~lower */
    int32_t *rank;                           /* n: position of a buffer in the current order */
    int32_t *unext, *uprev; /* n+1: unplaced ranks, a circular list in rank order (head n) */
    /* search state */
    uint64_t *minoff;   /* n: lowest offset the buffer may take now */
    uint64_t *off;      /* n: offset, or AF__SEARCH_UNPLACED */
    uint64_t *floor;    /* nsec: top of the placed buffers live in the section */
    uint64_t *total;    /* nsec: total size of the unplaced buffers live in the section */
    uint64_t *sec_init; /* nsec: total size of all buffers live in the section */
    uint64_t *lim;      /* 2 * (nsec + 1): prefix / suffix limits of the candidate filter */
    uint64_t lim_id;    /* version of lim (one per computation) */
    int32_t *wit;       /* nsec: where in sec_buf the last buffer that kept the section
                           feasible is (a hint; the next scan starts there) */
    af__search_undo_t *log;
    size_t nlog, caplog;
    int32_t *cand; /* candidate stack, grows with depth */
    size_t ncand, capcand;
    af__search_frame_t *frames; /* n+1 */
    /* limits */
    uint64_t nodes, node_limit;
    double deadline; /* monotonic seconds; only read when use_clock */
    int use_clock;   /* 0 in the work-bounded mode: the clock is never read */
} af__search_part_t;

#define AF__SEARCH_UNPLACED UINT64_MAX

/* Monotonic clock in seconds. */
double af__search_now(void);

/* Partition storage (pack/search_part.c): the arrays sized by the n buffers and us sections
 * (0 or AF_ENOMEM; free with af__search_part_free even on failure), the section CSR once every
 * buffer's sec_lo/sec_hi is set (0 or AF_ENOMEM), and freeing. */
int af__search_part_alloc(af__search_part_t *sp, size_t un, size_t us);
int af__search_part_sections(af__search_part_t *sp);
void af__search_part_free(af__search_part_t *sp);

/*
 * Decides whether the partition fits under cap with static order `order_idx`, exploring at most
 * p->node_limit nodes (and, when p->use_clock, stopping at p->deadline). On AF__SEARCH_FOUND,
 * out[i] gets buffer i's offset. Returns an AF__SEARCH_* value, or AF_ENOMEM.
 */
int af__search_dfs(af__search_part_t *p, int order_idx, uint64_t cap, uint64_t *out);

#endif
