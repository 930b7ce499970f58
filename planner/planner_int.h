/*
 * Planner-internal interfaces: the scheduler and placement registries. Files of the planner
 * module include this; other modules use include/arenaflow/plan.h only.
 */
#ifndef ARENAFLOW_PLANNER_INT_H
#define ARENAFLOW_PLANNER_INT_H

#include "arenaflow/plan.h"
#include "common/common_int.h"

/* ---- scheduling (planner/schedule*.c) ---------------------------------------------------- */

typedef struct af__sched_result {
    const char *name; /* scheduler that produced the order (the winner for "best") */
    int optimal;      /* 1 when the order's peak is proven minimal (exact DP) */
    uint64_t peak;    /* simulated peak of the order (aligned bytes), 0 if not computed */
} af__sched_result_t;

/* One scheduler: writes a topological order of all nodes into order (node_count entries). */
typedef int (*af__sched_fn)(const af_graph_t *g, const af_plan_opts_t *o, int32_t *order,
                            af__sched_result_t *res, af_error_t *err);

typedef struct af__sched_entry {
    const char *name;
    af__sched_fn fn;
    const char *help;
} af__sched_entry_t;

/* Runs the scheduler named by o->schedule. */
int af__schedule(const af_graph_t *g, const af_plan_opts_t *o, int32_t *order,
                 af__sched_result_t *res, af_error_t *err);
const af__sched_entry_t *af__sched_find(const char *name);

/* ---- placement (planner/place*.c, planner/search.c) -------------------------------------- */

typedef int (*af__place_fn)(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                            af_error_t *err);

typedef struct af__place_entry {
    const char *name;
    af__place_fn fn;
    const char *help;
} af__place_entry_t;

const af__place_entry_t *af__place_find(const char *name);

/* Anytime search (planner/search.c): seeded with the portfolio's result. */
int af__place_search(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                     af_error_t *err);
/*
 * Work-bounded search from a given packing (the portfolio's last member, planner/search.c):
 * iv[i].offset must hold a valid packing (sizes aligned up to alignment). Explores at most
 * `nodes` search nodes without reading the clock, then writes the best packing found (never
 * higher than the given one) and its height, and returns 0. Returns 1 without searching when
 * max_dive > 0 and one dive would cost more (m x (m + distinct interval ends) for m intervals
 * of positive size), an error otherwise; iv is untouched unless 0 is returned.
 */
int af__search_improve(af_interval_t *iv, size_t n, uint64_t alignment, uint64_t nodes,
                       uint64_t max_dive, uint64_t *height, af_error_t *err);

/*
 * Shared-object placement: assigns each interval a buffer index (buf[i]); a buffer's size is the
 * max size of its tenants; *total = sum of buffer sizes (aligned). algo: "naive", "color-end",
 * "greedy-size", "firstfit-start". Offsets are set by stacking the buffers.
 */
int af__place_shared(af_interval_t *iv, size_t n, const char *algo, uint64_t alignment,
                     int32_t *buf, int32_t *n_bufs, uint64_t *total, af_error_t *err);

/* ---- lifetimes (planner/lifetime.c) ----------------------------------------------------- */

/* step[v] = position of node v in order; AF_EINVAL if order is not a topological permutation. */
int af__order_steps(const af_graph_t *g, const int32_t *order, int32_t *step, af_error_t *err);
/* Lifetimes for precomputed steps (no checks). */
void af__lifetimes_from_steps(const af_graph_t *g, const int32_t *step, af_lifetime_t *out);
/* Tensor owns arena bytes: not an alias, not constant, not host tier, static size > 0. Dynamic
 * = bytes < 0. */
int af__is_arena_root(const af_graph_t *g, int32_t t);
/* Host tier: the output of a SwapOut node (planner/budget_host.c). */
int af__is_host_tier(const af_graph_t *g, int32_t t);
/* Peak of aligned live bytes of arena roots; diff is scratch of node_count + 1 entries. */
uint64_t af__peak_of(const af_graph_t *g, const af_lifetime_t *lt, uint64_t alignment,
                     int32_t *peak_step, int64_t *diff);

/* Time-sweep placement through a coalescing best-fit allocator (planner/place_sweep.c): writes
 * off[i] for sizes sz[i] (already aligned) and *pairs (may be NULL) = the number of overlapping
 * pairs; returns the height, UINT64_MAX when out of memory. */
uint64_t af__place_sweep(const af_interval_t *iv, size_t n, const uint64_t *sz, uint64_t *off,
                         uint64_t *pairs);

/* Portfolio placement (planner/place.c), for the search's incumbent. */
int af__place_portfolio(af_interval_t *iv, size_t n, const af_place_opts_t *o, uint64_t *height,
                        af_error_t *err);

#endif
