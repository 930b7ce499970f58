/* The plan object, shared by planner/plan.c, verify.c and events.c. */
#ifndef ARENAFLOW_PLAN_INT_H
#define ARENAFLOW_PLAN_INT_H

#include "planner/planner_int.h"

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
};

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

#endif
