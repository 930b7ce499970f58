/*
 * Planner-internal interfaces: the scheduler and placement registries. Files of the planner
 * module include this; other modules use include/arenaflow/plan.h only.
 */
#ifndef ARENAFLOW_PLANNER_INT_H
#define ARENAFLOW_PLANNER_INT_H

#include "arenaflow/pack.h"
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

/* ---- lifetimes (planner/lifetime.c) ----------------------------------------------------- */

/* step[v] = position of node v in order; AF_EINVAL if order is not a topological permutation. */
int af__order_steps(const af_graph_t *g, const int32_t *order, int32_t *step, af_error_t *err);
/* Lifetimes for precomputed steps (no checks). */
void af__lifetimes_from_steps(const af_graph_t *g, const int32_t *step, af_lifetime_t *out);
/* Tensor owns arena bytes: not an alias, not constant, static size > 0. Dynamic = bytes < 0. */
int af__is_arena_root(const af_graph_t *g, int32_t t);
/* Peak of aligned live bytes of arena roots; diff is scratch of node_count + 1 entries. */
uint64_t af__peak_of(const af_graph_t *g, const af_lifetime_t *lt, uint64_t alignment,
                     int32_t *peak_step, int64_t *diff);

#endif
