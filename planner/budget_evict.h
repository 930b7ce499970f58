/*
 * Private to the evict-on-demand simulator (planner/budget_evict.c, the run;
 * planner/budget_evict_ctx.c, the per-graph context): its tensor flags, records and state.
 */
#ifndef ARENAFLOW_BUDGET_EVICT_H
#define ARENAFLOW_BUDGET_EVICT_H

#include "planner/budget_int.h"

enum {
    F_ROOT = 1,   /* arena root with bytes */
    F_PINNED = 2, /* never evicted: graph input or output (or a view of one is an output) */
    F_DROP = 4,   /* may be recomputed */
    F_SWAP = 8,   /* may be swapped */
    F_OUTSW = 16, /* a graph output (a root, no views) that cfg.swap_outputs lets leave and come
                     back before the end: pinned otherwise */
};
enum { PRE = 0, MAIN = 1, POST = 2 };
#define NO_USE INT32_MAX
#define REGEN_DEPTH 6
#define PREFETCH_DROPS 16     /* copies one swap-in may drop to make room for its prefetch */
#define MAX_SLOTS_PER_NODE 16 /* a run emitting more steps than this per node gives up */

typedef struct rec {
    int32_t slot, seq, aux; /* aux: SwapOut -> the main slot whose allocation needed it */
    uint8_t where;
    af_step_t step;
} rec_t;

typedef struct frame {
    int32_t u, k, want;
    uint8_t orig;
} frame_t;

struct af__remat {
    const af_graph_t *g;
    int32_t nn, nt;
    int32_t *order, *step;
    double *cost;
    uint64_t *size;
    int32_t *root;
    uint8_t *flag;
    int32_t *use_off, *uses;   /* per root: base-order steps of its readers (and views') */
    int32_t *view_off, *views; /* per root: its views */
    double swap_unit;          /* cost units per byte transferred */
    int recompute, offload;
    uint64_t floor;
    /* per run */
    const af__remat_cfg_t *cfg;
    uint8_t *valid, *host, *ever;
    int32_t *pin, *pinv, *last, *nu, *out_slot, *res_pos, *res;
    int32_t n_res;
    double *memo;
    int32_t *memo_at, stamp;
    uint64_t live, swapped;
    double extra;
    int32_t cur, sigma_done;
    uint64_t rng;
    uint64_t *mem;
    double *at;       /* compute time (cost units) before each slot; at[n_slots] = now */
    double copy_free; /* when the copy stream is done with the transfers issued so far */
    size_t n_slots, cap_slots, cap_at;
    rec_t *rec;
    size_t n_rec, cap_rec;
    frame_t *stack;
};

#endif
