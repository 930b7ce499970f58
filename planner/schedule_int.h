/*
 * Scheduler internals shared by planner/schedule*.c: the memory model every scheduler works on,
 * the exact peak simulation, and the portfolio members.
 *
 * Memory model. Only "arena roots" count (af__is_arena_root: not an alias, not a constant,
 * static size > 0), at their size aligned up to opts->alignment. A node *touches* a root when it
 * produces or reads the root or any alias of it (views count as their base). A root is live
 * from its first touch to its last touch, both inclusive; graph inputs from step 0; a root that
 * is (or has an alias that is) a graph output stays live to the end. An input nobody reads is
 * live during step 0 only. This is exactly af_lifetimes_compute()'s rule expressed per node,
 * which lets list schedulers and the DP update live bytes incrementally: running node v
 * allocates the roots v touches first and frees the roots whose last remaining toucher is v.
 */
#ifndef ARENAFLOW_SCHEDULE_INT_H
#define ARENAFLOW_SCHEDULE_INT_H

#include "planner/planner_int.h"

enum { SM_INPUT = 1, SM_PINNED = 2 };

typedef struct af__smodel {
    const af_graph_t *g;
    int32_t n;  /* nodes */
    int32_t nr; /* arena roots */
    uint64_t *size;
    uint8_t *flags;          /* [nr] SM_INPUT | SM_PINNED */
    int32_t *touch_n;        /* [nr] distinct nodes touching the root */
    int32_t *t_off, *t_root; /* CSR: roots touched by node v = t_root[t_off[v] .. t_off[v+1]) */
    int32_t *r_off, *r_node; /* CSR: nodes touching root r */
    uint64_t *def;           /* [n] bytes of the roots v produces (static "bytes defined") */
    int32_t *pos;            /* [n] position of v in the graph's input order */
    uint64_t base;           /* live before step 0: inputs that are read or pinned */
    uint64_t extra0;         /* inputs nobody reads: live during step 0 only */
    uint64_t max_size;
} af__smodel_t;

int af__smodel_init(af__smodel_t *m, const af_graph_t *g, uint64_t alignment, af_error_t *err);
void af__smodel_free(af__smodel_t *m);

/*
 * Exact simulated peak of a complete order (no validity check: callers pass topological
 * orders). *step (may be NULL) gets the peak step; *area (may be NULL) the sum over steps of
 * live bytes, the tie-breaker of `best`. Returns 0 or AF_ENOMEM.
 */
int af__smodel_peak(const af__smodel_t *m, const int32_t *order, uint64_t *peak, int32_t *step,
                    uint64_t *area);
/* Live bytes after each step (live[s], s < n) and during each step (during[s]); either may be
 * NULL. Returns 0 or AF_ENOMEM. */
int af__smodel_profile(const af__smodel_t *m, const int32_t *order, uint64_t *during,
                       uint64_t *live_after);

/* Incremental simulation state for list schedulers. */
typedef struct af__sstate {
    const af__smodel_t *m;
    int32_t *rem;   /* [nr] touches still to come */
    uint8_t *alloc; /* [nr] allocated already */
    uint64_t live;  /* bytes live between steps */
    uint64_t peak;
    int32_t steps;
} af__sstate_t;

int af__sstate_init(af__sstate_t *s, const af__smodel_t *m);
void af__sstate_free(af__sstate_t *s);
/* Bytes running v now would allocate / free. */
uint64_t af__sstate_alloc(const af__sstate_t *s, int32_t v);
uint64_t af__sstate_freed(const af__sstate_t *s, int32_t v);
/*
 * Runs v: updates live/peak. For every root whose remaining-toucher count drops to 1, calls
 * on_last(ctx, r) (may be NULL) so a scheduler can re-score the root's last toucher.
 */
void af__sstate_run(af__sstate_t *s, int32_t v, void (*on_last)(void *ctx, int32_t r), void *ctx);
/* The one node touching r that has not run yet (rem[r] == 1), given a done[] marker. */
int32_t af__sstate_last_toucher(const af__sstate_t *s, int32_t r, const uint8_t *done);

/* ---- portfolio members: each writes a topological order of all nodes ---- */
int af__sched_seed(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order, af_error_t *err);
int af__sched_xla_list(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order,
                       af_error_t *err);
int af__sched_lpmf(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order, af_error_t *err);
int af__sched_bfs(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order, af_error_t *err);
int af__sched_dfs(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order, af_error_t *err);
int af__sched_rpo(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order, af_error_t *err);

/*
 * Exact DP (schedule_dp.c), Serenity-style: over the sets of scheduled nodes of the window
 * order[lo..hi) of a complete topological order (the rest fixed), memoised on the set, keeping
 * the lowest peak per set, pruning every partial order whose peak reaches `bound`. At most
 * 64 units. step[v] = position of v in order (updated for the window on success); live_before =
 * live bytes after step lo - 1 (base for lo == 0). *improved = 1 when order[lo..hi) was
 * rewritten to a window peak below bound; *complete = 1 when the search ran to the end within
 * max_states (without `contract` the window's result, or `bound` if nothing was found, is
 * then optimal for the window).
 * *states_used accumulates the states created. Returns 0 or AF_ENOMEM.
 */
typedef struct af__dp_window {
    int32_t lo, hi;
    int contract; /* contract chains into units (then `complete` is not an optimality proof) */
    uint64_t bound, live_before, max_states;
    int improved, complete;
    uint64_t peak; /* window peak when improved */
    uint64_t states_used;
} af__dp_window_t;

int af__sched_dp_window(const af__smodel_t *m, int32_t *order, int32_t *step, af__dp_window_t *w);
/* Units the window order[lo..hi) has (chains contracted when `contract`). */
int32_t af__dp_units(const af__smodel_t *m, const int32_t *step, const int32_t *order, int32_t lo,
                     int32_t hi, int contract);

#endif
