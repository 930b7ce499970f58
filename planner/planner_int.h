/*
 * The planner module's one private header (every planner/ file includes it; other modules use
 * include/arenaflow/plan.h only): the scheduler registry and the schedulers' shared memory model
 * (schedule*.c), lifetimes (lifetime.c), the plan object (plan.c and the files that read it:
 * events.c, reuse.c, verify.c, verify_reuse.c, serialize.c, plan_debug.c) and the reuse-edge
 * generator's helpers (reuse.c; the verifier shares none of them).
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

/* af_plan_fuse with the BatchNormalization fold of opts->fuse_bn (opts NULL: affine). */
int af__plan_fuse_with(const af_graph_t *g, const af_plan_opts_t *opts, af_graph_t **out,
                       af_fuse_report_t *rep, af_error_t *err);
/* af_plan_create / af_plan_restore with fuse = on (planner/fuse_plan.c): plans or restores
 * af_plan_fuse()'s graph with fuse off, gives the plan that graph and the fusion report. */
int af__plan_fused(const af_graph_t *g, const af_plan_opts_t *opts, const int32_t *order,
                   const uint64_t *offsets, af_plan_t **out, af_error_t *err);

/* ---- lifetimes (planner/lifetime.c) ----------------------------------------------------- */

/* step[v] = position of node v in order; AF_EINVAL if order is not a topological permutation. */
int af__order_steps(const af_graph_t *g, const int32_t *order, int32_t *step, af_error_t *err);
/* Lifetimes for precomputed steps (no checks). */
void af__lifetimes_from_steps(const af_graph_t *g, const int32_t *step, af_lifetime_t *out);
/* Tensor owns arena bytes: not an alias, not constant, not host tier, static size > 0. Dynamic
 * = bytes < 0. */
int af__is_arena_root(const af_graph_t *g, int32_t t);
/* The same for a caller that asked af__graph_has_host_tier(g) once (host): per-tensor passes then
 * skip the producer's op compare on graphs without a SwapOut node. */
int af__is_arena_root_in(const af_graph_t *g, int32_t t, int host);
/* 1 when some node of g is a SwapOut, so some tensor may be in the host tier (one pass over the
 * nodes). */
int af__graph_has_host_tier(const af_graph_t *g);
/* Host tier: the output of a SwapOut node (planner/budget_host.c). */
int af__is_host_tier(const af_graph_t *g, int32_t t);
/* The report's any-order bound: the most bytes of distinct arena roots one node touches (an
 * in-place pair counted once); 0 when the plan is stopped (p->stopped). */
uint64_t af__plan_any_order_bound(af_plan_t *p);
/* Peak of aligned live bytes of arena roots; diff is scratch of node_count + 1 entries. */
uint64_t af__peak_of(const af_graph_t *g, const af_lifetime_t *lt, uint64_t alignment,
                     int32_t *peak_step, int64_t *diff);

/* ---- scheduler internals (planner/schedule*.c) -------------------------------------------
 *
 * Shared by the schedulers: the memory model every scheduler works on,
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
    uint64_t area; /* sum over the steps run of the bytes live during each (af__smodel_peak's) */
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
/* The same order, with the af__smodel_peak figures of it (peak, area) from lpmf's own
 * simulation: no second pass over the order. */
int af__sched_lpmf_peak(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order,
                        uint64_t *peak, uint64_t *area, af_error_t *err);
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

/* ---- the plan object (plan.c, events.c, verify*.c, reuse.c, serialize.c, plan_debug.c) ---- */

struct af_plan {
    const af_graph_t *g;
    af_plan_opts_t opts;
    af_plan_report_t rep;
    int32_t *order; /* node ids by step */
    int32_t *step;  /* step by node id */
    af_tensor_plan_t *tp;
    int32_t *group;     /* in-place group leader per tensor (itself when alone), -1 if not arena */
    int32_t *glast;     /* per group leader: last step of the whole group */
    int32_t *views;     /* per tensor: first view whose alias root it is, or -1 */
    int32_t *view_next; /* next view of the same root, or -1 */
    const int32_t *given_order;    /* af_plan_restore(): used instead of scheduling */
    const uint64_t *given_offsets; /* af_plan_restore(): used instead of placement */
    int figure_only; /* internal plan for a report figure: no reuse edges, no extra figures */
    af_reuse_edge_t *edges;
    int32_t n_edges;
    uint64_t arena;
    uint64_t host;             /* host-tier bytes (AF_WHERE_HOST tensors, planner/budget_host.c) */
    struct af__budget *budget; /* set when the plan is of a graph rewritten under a budget */
    af_graph_t *fused_g;       /* af_plan_fuse()'s graph when the plan is of it (owned) */
    int stopped;   /* opts.interrupt answered non-zero: planning unwinds with AF_ECANCELED */
    uint32_t tick; /* af__plan_poll's call counter */
};

/*
 * Interruption (af_plan_opts_t.interrupt). af__plan_stop() asks now (between phases);
 * af__plan_poll() asks on every 4096th call (inside long loops, where a clock read per
 * iteration would cost more than the work). A stop is remembered, so every later check agrees,
 * and af__plan_stopped_err() turns it into the AF_ECANCELED the caller returns.
 */
static inline int af__plan_stop(af_plan_t *p)
{
    if (!p->stopped && p->opts.interrupt && p->opts.interrupt(p->opts.interrupt_arg))
        p->stopped = 1;
    return p->stopped;
}

static inline int af__plan_poll(af_plan_t *p)
{
    return (++p->tick & 4095u) == 0 ? af__plan_stop(p) : p->stopped;
}

static inline int af__plan_stopped_err(af_error_t *err)
{
    return af__err(err, AF_ECANCELED, "planning interrupted (time limit or shutdown)");
}

/*
 * Bounded backward search (AF__REUSE_DFS_LIMIT visits) for a data path r -> v. It runs in step
 * space: a CSR of every step's predecessor steps (in the graph's pred order), built once per
 * pass, so a visit reads one contiguous run instead of a node record and a step per pred.
 */
#define AF__REUSE_DFS_LIMIT 24
#define AF__DSEARCH_MEMO 8
typedef struct af__dsearch {
    int32_t *off, *pred; /* preds of the node at step s: pred[off[s] .. off[s + 1]) */
    int32_t *mark;       /* per step: stamp of the last search that reached it */
    int32_t stamp;
    int32_t stack[AF__REUSE_DFS_LIMIT + 1];
    /* Failed searches from memo_vs: a search from there for any rs with lo < rs < hi makes the
     * same moves (every pred it pushed is above rs, every pred it cut is below) and fails too. */
    int32_t memo_vs, n_memo, next_memo;
    struct {
        int32_t lo, hi;
    } memo[AF__DSEARCH_MEMO];
} af__dsearch_t;

/* step: a permutation of 0..node_count-1 (the caller guarantees it). 0 or AF_ENOMEM. */
int af__dsearch_init(af__dsearch_t *d, const af_graph_t *g, const int32_t *step);
void af__dsearch_free(af__dsearch_t *d);
/* 1 when the bounded search from step vs finds step rs among the preds it scans (always 1 for
 * rs == vs), else 0: a 1 proves a data path, a 0 proves nothing. */
int af__dsearch_ordered(af__dsearch_t *d, int32_t rs, int32_t vs);

/* Sorts group leaders (given in increasing id order) by first step, then id. 0 or AF_ENOMEM. */
int af__plan_sort_leads(const af_plan_t *p, int32_t *leads, size_t n);

/*
 * Exact data ancestry over short distances: bit j of step s's window is set when the node at
 * step s - 1 - j (j < AF__WINDOW) has a data path to the node at step s. Every node on such a
 * path lies between the two steps (the order is topological), so one pass in step order builds
 * it: a node's window is the OR of its preds' windows shifted by their distance, plus the preds.
 */
#define AF__WINDOW 256
typedef struct af__window {
    uint64_t *bits; /* AF__WINDOW / 64 words per step */
} af__window_t;

/* From a dsearch CSR (nn steps). 0 or AF_ENOMEM. */
int af__window_init(af__window_t *w, int32_t nn, const af__dsearch_t *d);
void af__window_free(af__window_t *w);
/* 1: the node at step rs reaches the node at step vs; 0: it does not; -1: too far apart to say
 * (vs - rs > AF__WINDOW). rs == vs counts as reaching. */
static inline int af__window_reaches(const af__window_t *w, int32_t rs, int32_t vs)
{
    int32_t j = vs - rs - 1;
    if (j < 0)
        return j == -1;
    if (j >= AF__WINDOW)
        return -1;
    return (int)(w->bits[(size_t)vs * (AF__WINDOW / 64) + (size_t)j / 64] >> (j % 64)) & 1;
}

/* The verifier's check 4 (planner/verify_reuse.c): reuse edges forward in the order, every
 * reuse of bytes ordered after the previous tenant's nodes, in-place writers after the donor's
 * other readers. 0 or AF_EVERIFY / AF_ENOMEM with err. */
int af__verify_reuse(const af_plan_t *p, af_error_t *err);

/* Reuse edges for the current offsets (planner/reuse.c). */
int af__plan_reuse_edges(af_plan_t *p, af_error_t *err);

/* Address-range ownership map: which tenant last held each byte range of the arena. */
typedef struct af__seg {
    uint64_t start, end;
    int32_t owner;
} af__seg_t;

typedef struct af__segmap {
    af__seg_t *v;
    size_t n, cap;
} af__segmap_t;

/* Makes owner the tenant of [start, end); appends the distinct previous owners of any byte of
 * that range to *prev (growable, *n_prev entries, *cap_prev capacity). Returns 0 or AF_ENOMEM. */
int af__segmap_assign(af__segmap_t *m, uint64_t start, uint64_t end, int32_t owner, int32_t **prev,
                      size_t *n_prev, size_t *cap_prev);
void af__segmap_free(af__segmap_t *m);

/* Nodes that touch a group's bytes (producers and readers of its members and their views),
 * as CSR: nodes[off[lead] .. off[lead + 1]). */
int af__group_touchers(const af_plan_t *p, int32_t **off, int32_t **nodes);

/* Scratch figures of the report (count, union of their arena ranges, largest) (scratch.c).
 * Returns 0 or AF_ENOMEM. */
int af__plan_scratch_figure(const af_plan_t *p, af_plan_report_t *r, int32_t n_scratch);

#endif
