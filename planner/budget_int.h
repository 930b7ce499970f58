/*
 * Planner-internal interfaces of the budget passes (planner/budget*.c): fitting a graph under a
 * memory budget by recomputation and offload.
 *
 * Pipeline (budget.c): plan without the budget for the base order; if the arena is over, build
 * rematerialisation schedules (af_step_t lists over the source graph) with the exact chain DP
 * (budget_chain.c) when the graph is a training chain and with the evict-on-demand simulator
 * (budget_evict.c) on any DAG; turn the best one into a rewritten graph and an ordinary plan
 * (budget_steps.c), which is placed (fragmentation counted), verified (budget_verify.c checks
 * that every copy is a copy of what it claims) and timed (budget_cost.c). The passes are graph
 * -> graph: a fusion pass can run before them and hand them its graph.
 */
#ifndef ARENAFLOW_BUDGET_INT_H
#define ARENAFLOW_BUDGET_INT_H

#include "planner/planner_int.h"

/* What a rewritten plan knows about its source (owned by the plan, freed with it). */
typedef struct af__budget {
    const af_graph_t *src;  /* the caller's graph */
    af_graph_t *g;          /* the rewritten graph (the plan's p->g) */
    int32_t *node_origin;   /* per node of g: source node, -1 for swap nodes */
    int32_t *tensor_origin; /* per tensor of g: source tensor it copies */
    uint8_t *role;          /* per node of g: af_node_role_t */
} af__budget_t;

void af__budget_free(af__budget_t *b);

/* plan.c: plans g in the given order (no scheduling), placement and report as usual. */
int af__plan_with_order(const af_graph_t *g, const af_plan_opts_t *opts, const int32_t *order,
                        af_plan_t **out, af_error_t *err);

/* ---- budget_host.c: the host tier, roles ------------------------------------------------- */

/* Offsets of the AF_WHERE_HOST tensors: each its own aligned bytes, in tensor id order. */
void af__plan_place_host(af_plan_t *p);
/* Event-table type of a node's EXEC row: "EXEC", "RECOMPUTE", "SWAP_OUT" or "SWAP_IN". */
const char *af__budget_event_type(const af_plan_t *p, int32_t node);

/* ---- budget.c: the driver ---------------------------------------------------------------- */

/* 1 when af_plan_create() should try a rewrite after AF_EBUDGET (budget set, recompute or
 * offload on, offset mode, no safe mode). */
int af__budget_wanted(const af_graph_t *g, const af_plan_opts_t *o);
/* Plans g under o->budget with a rewrite, or fails with AF_EBUDGET naming the smallest budget
 * that can be met. err keeps the first failure's text as its start. */
int af__budget_plan(const af_graph_t *g, const af_plan_opts_t *o, af_plan_t **out, af_error_t *err);

/* ---- budget_steps.c: a schedule -> a rewritten graph -> a plan ---------------------------- */

/* af_plan_from_steps() with the report's budget_method; verify as o->verify says. */
int af__steps_plan(const af_graph_t *g, const af_plan_opts_t *o, const af_step_t *steps, size_t n,
                   const char *method, af_plan_t **out, af_error_t *err);

/* ---- budget_verify.c ------------------------------------------------------------------------ */

/* Every node of a rewritten plan runs its origin on copies of its origin's inputs and writes
 * copies of its origin's outputs (so, kernels being deterministic, every read sees the value of
 * its source tensor); swaps copy like for like through the host tier; host tensors are inside
 * the host area on their own bytes; the arena fits the budget. 0 or AF_EVERIFY. */
int af__budget_verify(const af_plan_t *p, af_error_t *err);

/* ---- budget_cost.c: costs and the time model ----------------------------------------------- */

/* Cost of a node in cost units: its own cost when > 0, else a FLOP estimate from the shapes
 * (Conv, MatMul, Gemm: 2 x outputs x reduction; other ops: output elements), at least 1. */
double af__node_cost(const af_graph_t *g, int32_t v);
/* Seconds one transfer of `bytes` takes on the host link. */
double af__swap_seconds(const af_plan_opts_t *o, uint64_t bytes);
/*
 * Modelled time of one round of a plan: nodes in plan order on two streams, compute (node
 * cost / compute_rate) and copy (SwapOut/SwapIn: bytes / bandwidth); a node starts when its
 * stream is free and its data and reuse predecessors have finished. 0 or AF_ENOMEM.
 */
int af__model_time(const af_plan_t *p, double *seconds);

/* ---- budget_evict.c: the evict-on-demand simulator (any DAG) ------------------------------- */

typedef struct af__remat af__remat_t;

/* Per-tensor override of the way an evicted tensor comes back (the victim is chosen as usual). */
enum { AF__REMAT_ANY = 0, AF__REMAT_SWAP = 1, AF__REMAT_RECOMPUTE = 2 };

/* One run's knobs. */
typedef struct af__remat_cfg {
    uint64_t target;        /* live bytes the simulated schedule must stay within, every step */
    double beta;            /* score = regen cost / (bytes x (steps to next use + 1)^beta) */
    int recursive;          /* regen cost counts inputs that would need regenerating too */
    double swap_weight;     /* swap cost = swap_weight x transfer time (offload only) */
    const uint8_t *protect; /* per source tensor: never evict (may be NULL) */
    const uint8_t *mode;    /* per source tensor: how an eviction brings it back, AF__REMAT_*
                               (may be NULL: the cheaper way by the scores) */
    uint64_t noise;         /* 0, or a seed: scores are jittered by up to 25% */
    int stall;              /* a swap-out's cost counts the compute its late finish stalls */
    int prefetch;           /* a swap-in that lack of headroom leaves exposed drops copies that
                               cost less to recompute than the wait (room for its prefetch) */
    int swap_outputs;       /* graph outputs (weight gradients) may be swapped out after they are
                               made and back before the end (offload only) */
} af__remat_cfg_t;

typedef struct af__remat_result {
    af_step_t *steps; /* af__malloc'd; the caller frees */
    size_t n_steps;
    double extra_cost; /* recomputed nodes' costs */
    double est_time;   /* two-stream estimate in cost units (data dependencies only) */
    uint64_t peak;     /* simulated peak (an upper bound of the plan's live bytes) */
    uint64_t swapped;  /* bytes swapped out */
    int32_t *evicted;  /* source tensors evicted at least once (af__malloc'd) */
    int32_t n_evicted;
} af__remat_result_t;

/* Context for one graph and base order (a topological order of all nodes). */
int af__remat_create(const af_graph_t *g, const int32_t *order, const af_plan_opts_t *o,
                     af__remat_t **out);
void af__remat_destroy(af__remat_t *r);
/* 0 with *res filled, 1 when the target cannot be met, AF_ENOMEM. */
int af__remat_run(af__remat_t *r, const af__remat_cfg_t *cfg, af__remat_result_t *res);
void af__remat_result_free(af__remat_result_t *res);
/* Most bytes one node needs at once in this model (inputs + outputs + pinned): no target below
 * it can be met. */
uint64_t af__remat_floor(const af__remat_t *r);

/* ---- budget_greedy.c: the greedy rematerialiser (the bar the search must beat) ----------- */

/*
 * XLA-style greedy on the base order: while the simulated peak is over target, recompute the
 * copy live across the peak with the lowest cost per byte freed, right before its next reader;
 * with improve, then take recomputations out while the peak stays within target. 0 with *steps
 * (af__malloc'd, the caller frees) and *peak when target is met, 1 when candidates ran out
 * first (nothing returned), AF_ENOMEM.
 */
int af__greedy_plan(const af_graph_t *g, const int32_t *order, uint64_t alignment, uint64_t target,
                    int improve, af_step_t **steps, size_t *n_steps, uint64_t *peak);

/* ---- budget_chain.c: the exact dynamic programme for training chains ------------------------ */

/*
 * When g is a training chain (forward f1..fn, a loss, backward bn..b1 each reading its layer's
 * input and the incoming gradient), the schedule of least recompute cost whose live bytes stay
 * within target (the optimum over nested checkpointing schedules, Griewank-style, with this
 * planner's memory model). Returns 0 with *steps (af__malloc'd), 1 when g is not such a chain
 * or the DP would be too large, 2 when no schedule fits, AF_ENOMEM.
 */
int af__chain_plan(const af_graph_t *g, uint64_t alignment, uint64_t target, af_step_t **steps,
                   size_t *n_steps, double *extra);

#endif
