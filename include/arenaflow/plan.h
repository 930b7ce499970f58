/*
 * arenaflow — the planner: order, lifetimes, placement, events, verification.
 *
 * af_plan_create() takes a finalized graph and planner options and produces a plan: the order
 * the nodes run in, every tensor's lifetime and place (an offset in one arena, or a shared
 * buffer index), the reuse edges that make parallel execution safe, and a report. The plan keeps
 * a pointer to the graph: the graph must outlive the plan.
 *
 * The lower-level pieces are public too, so tools, benchmarks and tests can use them alone:
 * lifetimes for an order, the simulated peak of an order, placement of raw intervals (the
 * MiniMalloc CSV problem) and an independent verifier for both.
 *
 * Threading: a plan is immutable after creation and may be read from any thread. Functions that
 * create things are reentrant (no global state).
 */
#ifndef ARENAFLOW_PLAN_H
#define ARENAFLOW_PLAN_H

#include "arenaflow/common.h"
#include "arenaflow/graph.h"

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct af_plan af_plan_t;

typedef enum {
    AF_MODE_OFFSET = 0, /* every tensor gets an offset in one arena */
    AF_MODE_SHARED = 1, /* every tensor gets a shared buffer (object) index */
} af_place_mode_t;

typedef enum {
    AF_REUSE_FENCE = 0,  /* reuse across unordered nodes, guarded by reuse edges */
    AF_REUSE_STRICT = 1, /* reuse only between tensors ordered by data dependencies */
} af_parallel_reuse_t;

/* Operator fusion (af_plan_fuse, option `fuse`). */
typedef enum {
    AF_FUSE_AUTO = 0, /* on when the plan is for real kernels: af_plan_opts_resolve() decides
                         (the CLI and the daemon call it); af_plan_create() reads it as off */
    AF_FUSE_OFF = 1,
    AF_FUSE_ON = 2,
} af_fuse_mode_t;

/* How fusion folds a BatchNormalization into the Conv before it (option `fuse_bn`). */
typedef enum {
    AF_FUSE_BN_AFFINE = 0,  /* y = conv(x) * s + t after the convolution: the unfused plan's
                               floats, bit for bit (default) */
    AF_FUSE_BN_WEIGHTS = 1, /* W' = W s, B' = (B - mean) s + bias: one pass over the output less,
                               other roundings (~4e-5 relative on PP-OCRv4 det) */
} af_fuse_bn_t;

typedef struct af_plan_opts {
    const char *schedule; /* scheduler name (af_schedule_names()); default "best" */
    const char *placer;   /* placement algorithm (af_place_names()); default "portfolio" */
    af_place_mode_t mode;
    uint64_t alignment;  /* power of two; default 256 */
    double alpha;        /* seed scheduler weight of bytes freed / time; default 0.7 */
    double beta;         /* seed scheduler weight of critical-path closeness; default 0.3 */
    uint64_t budget;     /* memory budget in bytes for the schedule; 0 = none */
    double time_limit_s; /* anytime search time limit (placer "search"); default 10 */
    uint64_t capacity;   /* search: report whether this height fits; 0 = none */
    int inplace;         /* honour in-place hints; default 1 */
    int safe_mode;       /* no reuse at all (every tensor its own bytes); default 0 */
    af_parallel_reuse_t parallel_reuse; /* default AF_REUSE_FENCE */
    int32_t dp_max_nodes;   /* exact DP on graphs/regions up to this many nodes; default 24 */
    uint64_t dp_max_states; /* DP state cap; default 2,000,000 */
    int verify;             /* run af_plan_verify() inside af_plan_create(); default 1 */
    /* Placer "portfolio": effort of its last member, a deterministic work-bounded search seeded
     * with the portfolio's packing, in search nodes per 100 tensors placed (af_place_opts_t);
     * 0 = off; default AF_PLAN_SEARCH_EFFORT. */
    uint64_t search_effort;
    /* Under a budget (planner/budget*.c): when no order fits `budget`, the planner rewrites the
     * graph — tensors are dropped after an early use and brought back before a later one, by
     * recomputing them (the producer runs again as a new node) or, with offload, by copying
     * them to a host tier and back (SwapOut / SwapIn nodes), choosing per tensor by cost — so
     * the placed arena fits. The result is an ordinary, verified plan of the rewritten graph. */
    int recompute;       /* allow recomputation; default 1 */
    int offload;         /* allow host offload; default 0 */
    double bandwidth;    /* host link bytes/s, one stream shared by swap-out and swap-in */
    double compute_rate; /* node cost units per second (FLOP/s when costs are FLOPs, 1e9 when
                            they are ns); default AF_PLAN_COMPUTE_RATE */
    /* Fusion: with AF_FUSE_ON, af_plan_create() and af_plan_restore() plan af_plan_fuse()'s graph
     * (owned by the plan, af_plan_graph()) and the report gives what it saved. Default AUTO. */
    af_fuse_mode_t fuse;
    af_fuse_bn_t fuse_bn; /* default AF_FUSE_BN_AFFINE */
    /* Interruption (not part of the fingerprint, not kept in the plan): when set, planning calls
     * interrupt(interrupt_arg) between its phases and now and then inside its long loops (the
     * any-order bound, reuse edges, placement); a non-zero answer stops it with AF_ECANCELED.
     * Once it has answered non-zero it must keep doing so. Called on the planning thread;
     * NULL (default) = never interrupted. */
    int (*interrupt)(void *arg);
    void *interrupt_arg;
} af_plan_opts_t;

/* Default af_plan_opts_t.search_effort: one and a half dives' worth of search nodes. */
#define AF_PLAN_SEARCH_EFFORT 150
/* Default host-link bandwidth: 16 GB/s (PCIe 4.0 x16 class), shared by both directions. */
#define AF_PLAN_BANDWIDTH 16e9
/* Default compute rate: 10^12 cost units/s (node costs read as FLOPs on a 1 TFLOP/s device). */
#define AF_PLAN_COMPUTE_RATE 1e12

/* Fills *o with the defaults above. */
void af_plan_opts_init(af_plan_opts_t *o);

/*
 * Sets one option from its config-file spelling (keys: schedule, placer, mode, alignment, alpha,
 * beta, budget, time_limit, capacity, inplace, safe_mode, parallel_reuse, dp_max_nodes,
 * dp_max_states, verify, search_effort, recompute, offload, bandwidth, compute_rate, fuse). Sizes
 * accept suffixes K, M, G (KiB...); search_effort is a plain non-negative integer; bandwidth
 * and compute_rate are positive numbers (1.6e10, also with a K/M/G/T suffix: powers of 1000).
 * Returns 0, or AF_EINVAL with a message naming the key and the bad value. String values are mapped
 * to static names, so the opts never point into `value`.
 */
int af_plan_opts_set(af_plan_opts_t *o, const char *key, const char *value, af_error_t *err);
/*
 * Resolves the options that depend on the kernel set the plan will run on (af_executor_opts_t
 * kernels; NULL: the executor's default, "verify"): fuse = auto becomes on for "real" and
 * "onednn" (fused nodes are what the fast kernels gain from), off for every other set ("verify",
 * "reference", "empty": a plan checked node by node keeps the graph's nodes). Options set
 * explicitly are left alone. The CLI, the daemon and the benchmarks call this; a program using
 * the C API calls it before af_plan_create() to get the same defaults.
 */
void af_plan_opts_resolve(af_plan_opts_t *o, const char *kernels);
/* NULL-terminated list of option keys, for --help and config docs. */
const char *const *af_plan_opts_keys(void);
/*
 * The options' canonical spelling: every key in af_plan_opts_keys() order as "key=value", joined
 * by ';', each value as af_plan_opts_set() reads it back (doubles with 17 significant digits).
 * Equal options give equal strings. Returns 0, or AF_ESIZE when buf (len bytes) is too small
 * (512 bytes always suffice). Thread-safe.
 */
int af_plan_opts_format(const af_plan_opts_t *o, char *buf, size_t len);

typedef struct af_plan_report {
    int32_t tensors, nodes;
    int32_t arena_tensors;          /* tensors placed in the arena (not constant/alias/dynamic) */
    int32_t dynamic_tensors;        /* served at run time (size unknown) */
    uint64_t constant_bytes;        /* weights, outside the arena */
    uint64_t naive_bytes;           /* every arena tensor its own (aligned) bytes */
    uint64_t input_order_bytes;     /* arena bytes placing the input order (same placer, but
                                       without the portfolio's search member); 0 = not
                                       computed (restored plans, graphs over 100,000 tensors) */
    uint64_t shared_object_bytes;   /* total of shared buffers (shared-object mode); 0 = not
                                       computed (graphs over 100,000 tensors) */
    uint64_t arena_bytes;           /* the plan's arena size */
    uint64_t lower_bound_bytes;     /* max live (aligned) bytes in the chosen order */
    uint64_t any_order_bound_bytes; /* max over nodes of in+out bytes: bound for every order */
    int32_t peak_step;              /* step where live bytes peak */
    const char *schedule;           /* scheduler that produced the order (winner for "best") */
    const char *placer;             /* placement algorithm that produced the offsets */
    int schedule_optimal;           /* 1 when the order's peak is proven minimal */
    int32_t reuse_edges;            /* number of write-after-read edges emitted */
    double schedule_ms, lifetime_ms, place_ms, verify_ms, total_ms;
    /* Kernel working memory (AF_TENSOR_SCRATCH tensors, af_kernels_lower()): how many, the
     * bytes of the arena that host one at some step (union of their ranges), and the largest. */
    int32_t scratch_tensors;
    uint64_t scratch_bytes;
    uint64_t scratch_max_bytes;
    /* Under a budget (zero unless the plan is of a rewritten graph, af_plan_source_graph()): */
    int32_t recomputed_nodes;  /* nodes added to run a producer again */
    int32_t swap_nodes;        /* SwapOut + SwapIn nodes added */
    uint64_t swapped_bytes;    /* bytes copied to the host tier (sum over SwapOut nodes) */
    uint64_t host_bytes;       /* host-tier storage (af_plan_host_bytes) */
    uint64_t unbudgeted_bytes; /* arena of the best plan without the rewrite */
    double base_cost;          /* sum of the source graph's node costs: one plain round */
    double extra_cost;         /* sum of the recomputed nodes' costs */
    double modelled_s;         /* modelled round time: a compute stream and a copy stream */
    double plain_modelled_s;   /* modelled time of one plain round (base_cost / compute_rate) */
    const char *budget_method; /* what produced the rewrite ("chain-dp", "evict", "steps") */
    double budget_ms;          /* time spent choosing the rewrite (inside total_ms) */
    /* Fusion (zero unless opts.fuse is AF_FUSE_ON and something fused): */
    int32_t fused_nodes;    /* nodes folded into another (af_fuse_report_t.fused_nodes) */
    int32_t bn_folded;      /* of them, BatchNormalization folded into Conv */
    int32_t sums_folded;    /* of them, residual Adds folded into Conv/MatMul/Gemm (sum post-op) */
    int32_t biases_folded;  /* of them, constant bias Adds folded into Conv/MatMul */
    int32_t fused_tensors;  /* intermediates that no longer exist */
    uint64_t unfused_bytes; /* arena of the same options, without a budget, on the unfused graph */
} af_plan_report_t;

/* Where a tensor lives in a plan. */
typedef enum {
    AF_WHERE_ARENA = 0,    /* offset in the arena */
    AF_WHERE_ALIAS = 1,    /* view of another tensor: offset = base offset + alias offset */
    AF_WHERE_CONSTANT = 2, /* weights, outside the arena */
    AF_WHERE_DYNAMIC = 3,  /* size unknown: served at run time by the dynamic region */
    AF_WHERE_HOST = 4,     /* host tier (output of a SwapOut node): offset in the host area */
} af_where_t;

typedef struct af_tensor_plan {
    int32_t first;      /* step of allocation (producer's step, 0 for inputs) */
    int32_t last;       /* step after which it is freed (last consumer; last step for outputs) */
    uint64_t offset;    /* arena offset (AF_WHERE_ARENA and AF_WHERE_ALIAS) */
    uint64_t bytes;     /* aligned bytes reserved (0 for alias/dynamic/constant) */
    int32_t buffer;     /* shared-object buffer index, -1 if none */
    int32_t inplace_of; /* tensor whose bytes this one takes over in place, or -1 */
    af_where_t where;
} af_tensor_plan_t;

typedef struct af_reuse_edge {
    int32_t from; /* node that must finish (last reader of the old tenant) */
    int32_t to;   /* node that may then start (producer of the new tenant) */
    int32_t tensor_old, tensor_new;
} af_reuse_edge_t;

/*
 * Plans a finalized graph. opts may be NULL (defaults). With opts->budget below what the best
 * order needs, the graph is rewritten with recomputation and/or offload (see af_plan_opts_t);
 * af_plan_graph() then returns the rewritten graph, which the plan owns. Errors: AF_EINVAL
 * (graph not finalized, bad option), AF_EBUDGET (the budget cannot be met: err names the step
 * and the live tensors, and, when a rewrite was tried, the smallest budget the planner meets),
 * AF_EVERIFY (internal error caught by the verifier), AF_ENOMEM. *out set only on success.
 */
int af_plan_create(const af_graph_t *g, const af_plan_opts_t *opts, af_plan_t **out,
                   af_error_t *err);
void af_plan_destroy(af_plan_t *p);

/*
 * Rebuilds a plan from a stored order (node ids by step) and stored offsets (one per tensor;
 * only arena tensors' values are read), e.g. from a plan cache file: lifetimes, in-place
 * groups, views, reuse edges and the report are recomputed, the order is checked to be
 * topological and the offsets are always verified (af_plan_verify) whatever opts->verify says.
 * Errors as af_plan_create(), plus AF_EINVAL (bad order) and AF_EVERIFY (offsets that do not
 * form a valid plan). report->input_order_bytes is 0 and report->schedule is "restored".
 */
int af_plan_restore(const af_graph_t *g, const af_plan_opts_t *opts, const int32_t *order,
                    const uint64_t *offsets, af_plan_t **out, af_error_t *err);

/* What af_plan_fuse() did. */
typedef struct af_fuse_report {
    int32_t fused_nodes; /* nodes gone: bn_folded + biases + sums + post_ops */
    int32_t bn_folded;   /* BatchNormalization nodes folded into the Conv before them */
    int32_t biases;      /* constant bias Adds folded into the Conv/MatMul before them */
    int32_t sums;        /* residual Adds folded into the Conv/MatMul/Gemm producing one operand */
    int32_t post_ops;    /* unary nodes applied after another node's kernel instead */
    int32_t removed_tensors; /* intermediates gone */
    uint64_t removed_bytes;  /* their bytes (unaligned) */
} af_fuse_report_t;

/*
 * Operator fusion, the graph pass behind option `fuse` (planner/fuse.c): a new finalized graph in
 * which BatchNormalization (inference, constant parameters) is folded into the Conv before it
 * (new constant weights and bias, owned by the new graph), an Add of a per-channel constant after
 * a Conv joins its bias, an Add of a constant along the last axis after a MatMul becomes its
 * input 2 (attribute fused_bias = 2: a PyTorch Linear), an Add of a Conv's (with bias), MatMul's
 * or Gemm's (with C) output and another activation of its shape becomes that node's last input
 * (attribute fused_sum = its index, an in-place hint lets the output take its bytes: oneDNN's sum
 * post-op), and chains of elementwise unary ops
 * (Relu, LeakyRelu, Sigmoid, Tanh, Clip, HardSwish, HardSigmoid, Gelu, Elu, Softplus, Abs, Neg,
 * Exp, Sqrt) are folded into the node producing their input, which keeps its op and gains the
 * attributes fused_post ("Relu,Clip"), fused_alpha and fused_beta (one value per op) that the
 * executor applies on its output 0. Only an f32 intermediate read by one node, once, that is not
 * a graph output and not a view disappears. Graph outputs, inputs and names are kept. The new
 * graph shares g's constant data (g may be destroyed first). rep may be NULL. Errors: AF_EINVAL
 * (NULL, not finalized), AF_ENOMEM. *out set only on success (also when nothing fused).
 * Reentrant.
 */
int af_plan_fuse(const af_graph_t *g, af_graph_t **out, af_fuse_report_t *rep, af_error_t *err);

/*
 * The tensor and node counts of the graph a plan of g under opts refers to (af_plan_graph), the
 * counts an order and offsets for af_plan_restore() must have: the fused graph's with fuse = on
 * when something fuses, else g's (a budget's rewrite is not predicted: its counts are larger).
 * Errors: AF_EINVAL (NULL, not finalized), AF_ENOMEM. Reentrant.
 */
int af_plan_restore_counts(const af_graph_t *g, const af_plan_opts_t *opts, int32_t *tensors,
                           int32_t *nodes, af_error_t *err);

/* The graph the plan's node and tensor ids refer to: the rewritten graph of a plan made under a
 * budget (owned by the plan), else the graph given to af_plan_create(). */
const af_graph_t *af_plan_graph(const af_plan_t *p);
const af_plan_report_t *af_plan_report(const af_plan_t *p);
const af_plan_opts_t *af_plan_opts(const af_plan_t *p);
/* Node ids in execution order; af_graph_node_count() entries. */
const int32_t *af_plan_order(const af_plan_t *p);
/* Step of a node in the order. */
int32_t af_plan_step_of(const af_plan_t *p, int32_t node);
const af_tensor_plan_t *af_plan_tensor(const af_plan_t *p, int32_t tensor);
uint64_t af_plan_arena_bytes(const af_plan_t *p);
/* Write-after-read edges not implied by data dependencies. */
int32_t af_plan_reuse_edge_count(const af_plan_t *p);
const af_reuse_edge_t *af_plan_reuse_edges(const af_plan_t *p);

/*
 * Independent checker: no two tensors live at the same step share a byte, every arena tensor
 * lies inside the arena and is aligned, aliases stay inside their base, lifetimes cover every
 * use in the order, and (offset mode) every pair that shares bytes is ordered by data or reuse
 * edges so any parallel execution respecting them is safe. Returns 0 or AF_EVERIFY with the
 * offending pair named in err. Thread-safe.
 */
int af_plan_verify(const af_plan_t *p, af_error_t *err);

/*
 * Test hook: shifts one tensor's offset (mutation testing of the verifier). Not for production.
 */
int af_plan_debug_set_offset(af_plan_t *p, int32_t tensor, uint64_t offset);

/* Test hook: the ways a broken planner could get a plan wrong, one per verifier check, so tests
 * can show each check catches its bug (mutation testing). Not for production. */
typedef enum {
    AF_PLAN_BREAK_ORDER = 0,    /* nodes a and b trade steps (b may then run before its preds) */
    AF_PLAN_BREAK_LIFETIME = 1, /* tensor a: planned lifetime ends one step early */
    AF_PLAN_BREAK_BYTES = 2,    /* tensor a: reserves one byte less than its size */
    AF_PLAN_BREAK_ALIGN = 3,    /* tensor a: offset + 1 */
    AF_PLAN_BREAK_BOUNDS = 4,   /* tensor a: moved to end past the arena */
    AF_PLAN_BREAK_VIEW = 5,     /* view a: offset + 1 (no longer where its base puts it) */
    AF_PLAN_BREAK_OVERLAP = 6,  /* tensor a: moved onto tensor b's offset */
    AF_PLAN_BREAK_INPLACE = 7,  /* tensor a: claims an in-place hand-over from tensor b */
    AF_PLAN_BREAK_EDGE = 8,     /* reuse edge a dropped */
    AF_PLAN_BREAK_EDGE_DIR = 9, /* reuse edge a reversed */
} af_plan_break_t;
/* Applies one break. Returns 0, or AF_EINVAL when a or b is out of range. */
int af_plan_debug_break(af_plan_t *p, af_plan_break_t how, int32_t a, int32_t b);

/*
 * The event table (seed 1 §4.1) as CSV with header
 *   event_id,event_type,tensor_name,buffer_index,op_id,offset,bytes
 * ALLOC right before the producer runs, EXEC per node (tensor_name = node name), FREE after the
 * last consumer, FENCE for each reuse edge (before the ALLOC it guards). Returns 0 or AF_EIO.
 */
int af_plan_write_events_csv(const af_plan_t *p, FILE *f, af_error_t *err);

/* The same table as records, in row order (event_id = index + 1). */
typedef enum af_event_type {
    AF_EVENT_ALLOC = 0,   /* a block's first step: before its producer runs */
    AF_EVENT_INPLACE = 1, /* an output takes over the block of an input dying here */
    AF_EVENT_EXEC = 2,    /* the node runs */
    AF_EVENT_FREE = 3,    /* a block's last step: after its last user */
    AF_EVENT_FENCE = 4,   /* a reuse edge: node must have finished before tensor is written */
    /* Instead of EXEC for the nodes a budget rewrite added (af_plan_node_role): */
    AF_EVENT_RECOMPUTE = 5, /* a source node runs again */
    AF_EVENT_SWAP_OUT = 6,  /* a tensor is copied to the host tier */
    AF_EVENT_SWAP_IN = 7,   /* a host copy is copied back into the arena */
} af_event_type_t;
typedef struct af_event {
    af_event_type_t type;
    int32_t step;    /* position in the order */
    int32_t node;    /* the node at step; for FENCE the node that must have finished */
    int32_t tensor;  /* the block's tensor (FENCE: the tensor about to be written); EXEC: -1 */
    int32_t buffer;  /* shared-object buffer, or -1 */
    int dynamic;     /* ALLOC/INPLACE/FREE of a dynamic tensor: offset and bytes are 0 */
    uint64_t offset; /* arena offset (ALLOC/INPLACE/FREE) */
    uint64_t bytes;  /* the block's bytes (INPLACE: the tensor's own) */
} af_event_t;
/* "ALLOC", "INPLACE", "EXEC", "FREE", "FENCE", "RECOMPUTE", "SWAP_OUT", "SWAP_IN" (the CSV's
 * event_type); "?" otherwise. */
const char *af_event_type_name(af_event_type_t t);
/* Builds the whole table into *out (free with af_plan_events_free), *n rows. 0, AF_EINVAL,
 * AF_ENOMEM. */
int af_plan_events(const af_plan_t *p, af_event_t **out, size_t *n, af_error_t *err);
void af_plan_events_free(af_event_t *ev);
/* ---- under a memory budget: recomputation and offload (planner/budget*.c) ---------------- */

/* Op types of the copy nodes offload adds. A SwapOut node reads one arena tensor and writes
 * its copy into the host tier (AF_WHERE_HOST, outside the arena); a SwapIn node reads a host
 * copy and writes a fresh arena tensor. Any graph may use them; their kernels are memcpy in
 * every kernel set. */
#define AF_OP_SWAP_OUT "SwapOut"
#define AF_OP_SWAP_IN "SwapIn"

/* What a node of a plan's graph is, relative to the source graph. */
typedef enum {
    AF_ROLE_RUN = 0,       /* a node of the source graph, run once as given */
    AF_ROLE_RECOMPUTE = 1, /* a source node run again: produces new copies of its outputs */
    AF_ROLE_SWAP_OUT = 2,
    AF_ROLE_SWAP_IN = 3,
} af_node_role_t;

/* One step of a rematerialisation schedule over a source graph. */
typedef enum {
    AF_STEP_RUN = 0, /* run node `id`; its first run is the node itself, later ones recompute */
    AF_STEP_SWAP_OUT = 1, /* copy the current copy of tensor `id` to the host tier */
    AF_STEP_SWAP_IN = 2,  /* copy tensor `id` back from its host copy into a new arena copy */
} af_step_kind_t;

typedef struct af_step {
    af_step_kind_t kind;
    int32_t id; /* node id (RUN) or tensor id (SWAP_*) of the source graph */
} af_step_t;

/*
 * Plans a given rematerialisation schedule: steps run in this order, every read takes the most
 * recent copy of its tensor (a copy lives until its last reader), every node runs at least
 * once, a SWAP_IN follows a SWAP_OUT of the same tensor. The graph is rewritten accordingly
 * (each later RUN is a new node with new output tensors; swaps are SwapOut/SwapIn nodes; the
 * source's node and tensor ids keep their meaning) and placed, checked against opts->budget
 * (AF_EBUDGET) and verified. Swappable tensors: static-size arena tensors that are not views.
 * Errors: AF_EINVAL (a step reads a tensor no step made, a bad id, a node never run, ...) with
 * the step named in err, and those of af_plan_create(). The plan owns the rewritten graph; g
 * must outlive it. Reentrant.
 */
int af_plan_from_steps(const af_graph_t *g, const af_plan_opts_t *opts, const af_step_t *steps,
                       size_t n, af_plan_t **out, af_error_t *err);

/*
 * The smallest budget the planner meets for g with these options (opts->budget is ignored;
 * recomputation and offload as opts says), found by bisection over budgets with the planner
 * itself, to the alignment: *out is a budget that was planned. *bound (may be NULL) gets a
 * lower bound no schedule can beat: the most arena bytes one node needs at once. Errors as
 * af_plan_create(). Reentrant.
 */
int af_plan_min_budget(const af_graph_t *g, const af_plan_opts_t *opts, uint64_t *out,
                       uint64_t *bound, af_error_t *err);

/* The graph the caller planned (af_plan_graph() is the rewritten one when the plan rewrote it;
 * otherwise both are the same). */
const af_graph_t *af_plan_source_graph(const af_plan_t *p);
/* Role of a node of af_plan_graph(p); AF_ROLE_RUN for plans that were not rewritten. */
af_node_role_t af_plan_node_role(const af_plan_t *p, int32_t node);
/* The source node a node of af_plan_graph(p) runs (itself when not rewritten), -1 for swap
 * nodes and bad ids. */
int32_t af_plan_node_origin(const af_plan_t *p, int32_t node);
/* The source tensor a tensor of af_plan_graph(p) is a copy of (itself when not rewritten), -1
 * for bad ids. */
int32_t af_plan_tensor_origin(const af_plan_t *p, int32_t tensor);
/* Bytes of the host tier: AF_WHERE_HOST tensors lie in [0, this) of it, each in its own bytes. */
uint64_t af_plan_host_bytes(const af_plan_t *p);

/* ---- identity and serialised plans (planner/serialize.c) ------------------------------------ */

/*
 * A plan's key: the graph's fingerprint (af_graph_fingerprint) salted with every planner option
 * in canonical form (af_plan_opts_format); opts may be NULL (defaults). Equal graphs planned with
 * equal options have equal keys. Returns 0 or AF_EINVAL (g not finalized). Thread-safe.
 */
int af_plan_key(const af_graph_t *g, const af_plan_opts_t *opts, af_fingerprint_t *out);
/* The low 64 bits of af_plan_key() (the plan cache's key and file name); 0 when g is not
 * finalized. Thread-safe. */
uint64_t af_plan_fingerprint(const af_graph_t *g, const af_plan_opts_t *opts);

#define AF_PLAN_NAME_MAX 32 /* scheduler / placer name bytes in a record, NUL included */

/* A decoded plan record: what af_plan_restore() rebuilds a plan from. */
typedef struct af_plan_record {
    uint64_t key; /* the key it was encoded with (e.g. af_plan_fingerprint) */
    int32_t tensors, nodes;
    uint64_t arena_bytes;
    char schedule[AF_PLAN_NAME_MAX], placer[AF_PLAN_NAME_MAX]; /* that made the plan */
    int32_t *order;                                            /* `nodes` node ids by step */
    uint64_t *offsets; /* `tensors` offsets (only arena tensors' are meaningful) */
} af_plan_record_t;

/*
 * Serialises a plan's order and offsets with key, its counts, arena size and the names of its
 * scheduler and placer, behind a format version and byte-order mark and ahead of an XXH3-64
 * checksum of the whole. On success *out (release with af_free) holds *len bytes. Errors:
 * AF_EINVAL, AF_ENOMEM. Thread-safe.
 */
int af_plan_encode(const af_plan_t *p, uint64_t key, void **out, size_t *len, af_error_t *err);
/*
 * Parses bytes from af_plan_encode into *rec (rec->order and rec->offsets are the caller's:
 * af_plan_record_free). Every field is checked (magic, version, byte order, sizes against the
 * length, checksum, names terminated); AF_EPARSE names the first failed check in err, AF_ENOMEM.
 * The record is not trusted: rebuild the plan with af_plan_restore(), which verifies it.
 */
int af_plan_decode(const void *buf, size_t len, af_plan_record_t *rec, af_error_t *err);
/* Frees a record's arrays (not rec itself). NULL is a no-op. */
void af_plan_record_free(af_plan_record_t *rec);

/* ---- lower-level pieces ------------------------------------------------------------------- */

typedef struct af_lifetime {
    int32_t first, last; /* inclusive steps */
} af_lifetime_t;

/*
 * Lifetimes of every tensor for an order (a permutation of the node ids). First use = producer's
 * step; last use = the last consumer's step on any branch; inputs from step 0, outputs and
 * constants to the last step; an alias extends its base to the alias's last reader. A tensor
 * nobody produces or reads gets first = last = -1. out has af_graph_tensor_count() entries.
 * Returns 0, AF_EINVAL (order not a topological permutation) or AF_ENOMEM.
 */
int af_lifetimes_compute(const af_graph_t *g, const int32_t *order, af_lifetime_t *out,
                         af_error_t *err);

/*
 * Simulated peak of an order: max over steps of the live bytes (arena tensors, sizes aligned).
 * *peak_step (may be NULL) gets the step. Returns 0 or an error.
 */
int af_order_peak(const af_graph_t *g, const int32_t *order, uint64_t alignment, uint64_t *peak,
                  int32_t *peak_step, af_error_t *err);

/* NULL-terminated list of the schedulers' names (static storage: thread-safe). */
const char *const *af_schedule_names(void);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_PLAN_H */
