/*
 * The executor module's one private header: the worker pool (workers.c), its options
 * (options.c), dynamic tensors on the workers' pool caches (dynamic.c), compiled programs
 * (program.c), rounds (session.c, rounds.c), sessions (session_api.c) and re-planning after warm-up
 * (replan.c), the kernel tables (kernels.c, kernel_bind.c, kernels_ref*.c), tensor files
 * (tensor_io.c); the plan cache (plan_cache.c) uses only what this header includes.
 *
 * Locks: af_session.mu, af_executor.kmu, af__deque.mu, af_executor.mu, af_executor.tmu, in that
 * order (ranks AF__RANK_SESSION .. AF__RANK_CORES in common/common_int.h, the library's one list;
 * the pool's locks rank below all of them). A worker holds no lock while it runs a kernel.
 * Per-round node state is lock-free: one atomic pending counter per node, one atomic remaining
 * counter per round.
 */
#ifndef ARENAFLOW_EXECUTOR_INT_H
#define ARENAFLOW_EXECUTOR_INT_H

#include "arenaflow/executor.h"
#include "common/common_int.h"

#include <stdatomic.h>
#include <uv.h>

typedef struct af__round af__round_t;
typedef struct af__prog af__prog_t;
typedef struct af__batch af__batch_t;

/* ---- workers (workers.c) ---------------------------------------------------------------- */

typedef struct af__task {
    af__round_t *r;
    int32_t node; /* AF__TASK_ROUND: every node of r, in plan order (af__round_run_whole) */
} af__task_t;

#define AF__TASK_ROUND (-1)

/* A worker's deque: the owner pushes and pops at the tail, thieves take from the head. */
typedef struct af__deque {
    uv_mutex_t mu;
    af__task_t *buf;
    size_t cap, head, count;
    atomic_size_t avail; /* = count, written under mu; read without it by idle workers */
} af__deque_t;

typedef struct af__worker {
    af_executor_t *ex;
    int32_t id;
    uv_thread_t thread;
    af__deque_t dq;
    uint32_t rng;
    af__task_t *rbuf; /* successors made ready by one node, pushed as one batch */
    size_t rcap;
    af__task_t priv[8]; /* ready tasks kept off the deque (PRIV_MAX; run_chain says when) */
    int npriv;
    /* A root of the batch round this worker just started in the slot of the one it finished
     * (rounds.c): run next by this worker, never queued, so nobody else is woken for it. */
    af__task_t hand;
    int has_hand;
    int32_t team; /* OpenMP team size last set on this thread (kernel sets with a backend) */
    atomic_ullong steals, tasks;
    char pad[128]; /* keeps one worker's hot fields off its neighbour's cache lines */
} af__worker_t;

typedef struct af__kernel_reg {
    char *op;
    af_kernel_fn fn;
    void *user;
} af__kernel_reg_t;

struct af_executor {
    af_executor_opts_t opts;
    int32_t n;
    af__worker_t *workers;
    int32_t started;
    uv_mutex_t mu; /* AF__RANK_SLEEP */
    uv_cond_t cv;
    atomic_int sleepers;
    atomic_int stop;
    atomic_int ready; /* workers past their setup (af_executor_create waits for all) */
    atomic_uint rr;   /* round-robin target for submitted roots */
    uv_mutex_t kmu;   /* AF__RANK_KERNELS */
    af__kernel_reg_t *kregs;
    size_t n_kregs, cap_kregs;
    af_pool_t *pool;
    int own_pool;
    af_pool_cache_t **dyn; /* per worker: the caches dynamic tensors come from (dynamic.c) */
    int verify;            /* resolved opts.verify */
    const struct af__kernel_set *set; /* the built-in kernel set (resolved opts.kernels) */
    /* Cores: nodes with an OpenMP team take `team` cores for the time they run, so the teams
     * running at once never exceed `cores` (no oversubscription across rounds and sessions).
     * Only while some program has a node with team > 1 (teams_live > 0). */
    int32_t cores;
    atomic_int cores_free;
    atomic_int cores_waiting;
    atomic_int teams_live;
    uv_mutex_t tmu; /* AF__RANK_CORES */
    uv_cond_t tcv;
    /* Inline rounds (rounds.c): run by their callers, at most n at once; their tasks counted. */
    atomic_int inline_live;
    atomic_ullong inline_tasks;
};

/* Dynamic tensors (dynamic.c): one pool cache per worker, created and destroyed while no worker
 * runs; bind at worker start; alloc/free from any thread (a worker uses its cache). */
int af__dyn_init(af_executor_t *ex, af_error_t *err);
void af__dyn_fini(af_executor_t *ex);
void af__dyn_bind(af__worker_t *w);
int af__dyn_alloc(af_executor_t *ex, size_t bytes, void **out);
int af__dyn_free(af_executor_t *ex, void *ptr);

/* Pushes tasks onto worker `hint`'s deque (any worker when hint < 0) and wakes sleepers for
 * them. */
int af__exec_push(af_executor_t *ex, int32_t hint, const af__task_t *t, size_t n);
/* 1 when the calling thread is a worker of some executor. */
int af__exec_on_worker(void);
/* Grows every worker's deque to hold `tasks` entries (session creation: no growth later). */
void af__exec_reserve(af_executor_t *ex, size_t tasks);
/* Number of CPUs (at least 1). */
int32_t af__exec_cpu_count(void);
/* Looks up a kernel registered with af_executor_register_kernel(); AF_ENOTSUP when none. */
int af__exec_registered(af_executor_t *ex, const char *op, af_kernel_fn *fn, void **user);
/* Takes / gives back k cores of the executor's budget (blocks while they are taken). */
void af__exec_cores_take(af_executor_t *ex, int32_t k);
void af__exec_cores_give(af_executor_t *ex, int32_t k);

/* ---- programs: a plan compiled for execution (program.c) -------------------------------- */

enum {
    AF__LOC_NONE = 0,  /* never materialised (unused tensor) */
    AF__LOC_ARENA,     /* arena + off */
    AF__LOC_ALIAS,     /* ptr[root] + off, root static */
    AF__LOC_ALIAS_DYN, /* ptr[root] + off, root dynamic: resolved at kernel time */
    AF__LOC_CONST,     /* session constant storage + off */
    AF__LOC_DYN,       /* dynamic: from its producer worker's pool cache (dynamic.c) */
};

struct af__prog {
    const af_plan_t *plan;
    const af_graph_t *g;
    af_plan_t *own_plan; /* re-planned programs own their plan and graph */
    af_graph_t *own_graph;
    int32_t n_nodes, n_tensors;
    int32_t *succ_off, *succ; /* CSR: successors over data + reuse edges */
    int32_t *init_pending;
    int32_t *roots, n_roots;
    int32_t n_sinks; /* nodes without successors: a round is over once all of them ran */
    int32_t max_in, max_out;
    af_kernel_fn *kfn;
    void **kuser;
    /* per node: the built-in entry that runs it (NULL: registered kernel), its prepared state,
     * its OpenMP team, its scratch tensor (-1 none) and its working memory need (bytes) */
    const struct af__kernel_entry **kent;
    void **kstate;
    int32_t *team;
    int32_t *scratch_t;
    uint64_t *scratch_need;
    uint8_t *post;      /* per node: 1 when fused_post ops run after the kernel (fused_post.c) */
    int32_t max_team;   /* largest team of any node */
    int32_t intra;      /* resolved intra-op team of large nodes */
    void *backend;      /* the set's context (oneDNN engine, streams), or NULL */
    int32_t n_backend;  /* nodes on the set's own kernels */
    int32_t n_fallback; /* nodes on the fallback kernels */
    uint64_t prepacked_bytes;
    uint64_t planned_scratch;   /* bytes of the scratch tensors */
    uint64_t unplanned_scratch; /* per worker: largest need without a planned scratch tensor */
    uint8_t *wscratch;          /* workers x unplanned_scratch, 64-aligned, or NULL */
    void *wscratch_raw;
    int32_t workers;   /* execution contexts prepared for (>= ex->n; set before prepare) */
    uint8_t *layout;   /* per tensor (AF__LAYOUT_*), NULL: all plain */
    char **kname;      /* per node: "onednn:<impl>" etc., for af_session_node_kernel() */
    af_executor_t *ex; /* set while prepared */
    int prepared;
    uint8_t *loc;
    int32_t *root;
    uint64_t *off;
    uint64_t *bytes; /* tensor bytes (real size, not aligned); 0 for dynamic */
    uint64_t arena_bytes;
    uint64_t const_bytes;
    int32_t *inputs, n_inputs; /* graph input tensors, in tensor-id order */
    int32_t *outputs, n_outputs;
    int32_t *slot_of; /* tensor -> input slot (>= 0), output slot (-2 - k) or -1 */
    int32_t n_dyn;    /* dynamic tensors (sized at run time) */
    /* per node: the condition tensor of its If-branch guard (-1 none) and the branch it belongs
     * to (1 then, 0 else, AF__GUARD_DEAD: always skipped); both NULL when no node is guarded
     * (guards.c) */
    int32_t *guard_t;
    uint8_t *guard_br;
    atomic_int refs;
};

int af__prog_create(af_executor_t *ex, const af_plan_t *plan, af__prog_t **out, af_error_t *err);
void af__prog_release(af__prog_t *p);
/* Reads the If-branch guards of p's nodes, adds the edges that order them after their
 * condition (guards.c). 0 or AF_ENOMEM. */
int af__prog_guards(af__prog_t *p, af_error_t *err);
#define AF__GUARD_DEAD 2
/*
 * Prepares the nodes of a program for its session (kernels.c): backend context, per-node state
 * (primitives, prepacked weights read through const_ptr), fallbacks, teams, working memory
 * outside the arena for nodes without a planned scratch tensor. Called once constants exist,
 * and again (after af__prog_unprepare) when the caller changed constants. Returns 0 or an
 * AF_E* code with err set.
 */
int af__prog_prepare(af__prog_t *p, af_executor_t *ex, const void *(*const_ptr)(void *, int32_t),
                     void *cu, af_error_t *err);
void af__prog_unprepare(af__prog_t *p);

/* ---- rounds (session.c) ----------------------------------------------------------------- */

struct af__round {
    af_session_t *s;
    af__prog_t *prog;
    uint64_t id;
    int32_t slot;
    uint8_t *arena;
    void **ptr;       /* per tensor */
    uint64_t *dbytes; /* per tensor: bytes of dynamic tensors this round */
    uint64_t *sum;    /* per tensor: checksum recorded by the producer (verify) */
    uint64_t *seq;    /* per node: execution sequence (history) */
    uint8_t *owned;   /* per tensor: 1 when ptr[t] is a dynamic block of the pool */
    atomic_int *pending;
    af__task_t *roots;    /* the round's first tasks, pushed as one batch (node_count entries) */
    atomic_int remaining; /* sinks still to run (every other node is an ancestor of one) */
    atomic_ullong seq_ctr;
    atomic_int status;
    atomic_int abort; /* a kernel failed: skip the remaining kernels */
    atomic_int corrupted;
    atomic_int first_corrupt; /* tensor id + 1, 0 none */
    atomic_int first_corrupt_node;
    atomic_int failed_node; /* node whose kernel failed first, -1 none */
    const af_buffer_t *in;
    af_buffer_t *out;
    af_round_cb cb;
    void *user;
    int sync, done;
    int final_status;
    af__round_t *next_done;
    af__batch_t *batch; /* the af_session_run_n() batch the round belongs to, or NULL */
};

/* Runs one node of a round on worker w (kernel + verification); returns nothing: errors go to
 * the round's status. */
void af__round_run_node(af__worker_t *w, af__round_t *r, int32_t node);
/* Called by the worker that finished the round's last node (hint: its id, -1 on the caller's
 * thread): a batch's next round is pushed onto that worker's deque. */
void af__round_complete(af__round_t *r, int32_t hint);
/* Runs every node of a started round on the calling thread in plan order, as context
 * s->inl[r->slot] (af_session_run's inline path); the caller then completes it. */
void af__round_run_inline(af__round_t *r);
/* Runs every node of a started round on worker w in plan order (a whole-round task of a batch,
 * rounds.c); the worker then completes it. */
void af__round_run_whole(af__worker_t *w, af__round_t *r);
/* Checksum recorded for tensor t in round r (verify kernels). */
uint64_t af__round_sum(const af__round_t *r, int32_t t);

/* Checksum used by verification: XXH3 of the bytes. */
uint64_t af__exec_checksum(const void *p, uint64_t n);
/* Fills p with a deterministic pattern derived from seed. */
void af__exec_fill(void *p, uint64_t n, uint64_t seed);
/* af__exec_fill for the n bytes of tensor t, except a string tensor, which gets empty strings
 * (zero handles): a pattern is no handle a kernel may copy and a caller may read. */
void af__exec_fill_tensor(const af_graph_t *g, int32_t t, void *p, uint64_t n, uint64_t seed);
/* 64-bit mixer (splitmix64 finaliser). */
static inline uint64_t af__exec_mix(uint64_t a, uint64_t b)
{
    uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ---- kernels (kernels.c, kernel_bind.c, kernels_ref*.c) --------------------------------- */

/*
 * One row of a built-in kernel table, written with designated initializers
 * ({.op = "Abs", .fn = k_abs, .check = c_unary}) so fields can be added.
 *
 * check (optional): called at session creation for every node the row serves; returns 0, or
 * AF_ENOTSUP with a message naming the dtype / attribute / shape combination the kernel does
 * not implement (so an unsupported node is refused when the session is bound, not answered
 * wrongly or failed in the middle of a round). Must not allocate.
 *
 * prepare (optional): makes the node's state once constants exist (prepare.c). Returns 0,
 * AF_ENOTSUP when this node (attributes, dtypes, shapes) is not expressible exactly — the
 * reference row runs it, after its own check — or another error (session creation fails). err
 * gets the reason either way. release frees what prepare made.
 */
typedef int (*af__kernel_check_fn)(const af_graph_t *g, int32_t node, af_error_t *err);

/* What a kernel's prepare step is given (session creation, or af_kernels_lower). */
typedef struct af__kprep {
    const af_graph_t *g;
    int32_t node;
    int32_t team;    /* OpenMP team the node's primitives are made for */
    int32_t workers; /* worker threads that may run the node (one memory object set each) */
    int query;       /* 1: only out->scratch_bytes is wanted (lowering); state is released */
    /* constant data of a tensor (NULL: not a constant, or unknown while querying) */
    const void *(*constant)(void *cu, int32_t tensor);
    void *cu;
    void *backend;         /* the set's context */
    const uint8_t *layout; /* per tensor: AF__LAYOUT_*, from the backend's layouts(); NULL: plain */
} af__kprep_t;

/* Physical layouts of activation tensors (the graph's shape is always the ONNX one). */
enum {
    AF__LAYOUT_PLAIN = 0,        /* row-major in ONNX dim order (NCHW...) */
    AF__LAYOUT_CHANNELS_LAST = 1 /* N, spatial..., C: what oneDNN's fast convolutions read */
};

typedef struct af__kprep_out {
    void *state;
    uint64_t scratch_bytes; /* working memory the node needs while it runs */
    uint64_t const_bytes;   /* prepacked data the state holds (outside the arena) */
    char impl[64];          /* implementation, e.g. "brgconv:avx512_core" */
    int post_fused;         /* 1: the state applies the node's fused_post ops (fused_post.c) */
} af__kprep_out_t;

/* ---- fused unary post-ops (fused_post.c; attributes written by af_plan_fuse) ---------------- */

#define AF__POST_MAX 8
typedef struct af__post {
    int32_t affine; /* fused_affine: inputs affine (s) and affine + 1 (t), per channel (dim 1)
                       of output 0: y = (float)(y * s) + t, first (a folded BatchNormalization) */
    int32_t bias;   /* fused_bias: constant input added along output 0's last axis first, or -1 */
    int32_t sum;    /* fused_sum: input added to output 0 before the unary ops, or -1 */
    int32_t n;
    const char *op[AF__POST_MAX]; /* ONNX op names, static */
    int kind[AF__POST_MAX];
    double a[AF__POST_MAX], b[AF__POST_MAX]; /* LeakyRelu/Elu alpha, HardSigmoid alpha beta,
                                                Clip min max */
} af__post_t;

/* The fused_affine, fused_bias and fused_sum inputs and fused_post ops of node v (affine, bias,
 * sum -1, n 0 when none). AF_EINVAL when the attributes are malformed. */
int af__post_parse(const af_graph_t *g, int32_t v, af__post_t *out, af_error_t *err);
/* The mode of node v before its kernels are prepared: AF__POST_LOOP when it has fused ops. */
int af__post_mode(const af_graph_t *g, int32_t v);
/* p->post modes: the kernel alone, the kernel then the C loop (bias, sum, unary ops), or a
 * primitive that applies them (its dst must hold the sum input first). */
enum { AF__POST_NONE = 0, AF__POST_LOOP = 1, AF__POST_PRIM = 2 };
/* 1 when pp holds a fused op. */
int af__post_any(const af__post_t *pp);
/* Calls fn for node v with its fused ops in mode (not AF__POST_NONE); layout0 is output 0's
 * layout (AF__LAYOUT_*: where its channels are, for fused_affine). */
int af__post_call(af_kernel_fn fn, const af_graph_t *g, int32_t v, const af_kernel_args_t *a,
                  int mode, int layout0);

typedef struct af__kernel_entry {
    const char *op;
    af_kernel_fn fn;
    af__kernel_check_fn check;
    int (*prepare)(const af__kprep_t *in, af__kprep_out_t *out, af_error_t *err);
    void (*release)(void *state);
    /* 1: the kernel moves elements as bytes (af_dtype_size of them), so it takes string tensors
     * (af_string_t handles, copied unchanged); a node with a string tensor on any other row is
     * refused at binding (kernel_bind.c). Read on the reference rows. */
    uint8_t strings;
} af__kernel_entry_t;

/* A kernel set's context, made once per program (oneDNN: engine and one stream per worker). */
typedef struct af__backend {
    int (*create)(int32_t workers, void **ctx, af_error_t *err);
    void (*destroy)(void *ctx);
    void (*set_team)(int32_t team); /* sets the calling thread's OpenMP team size */
    int32_t (*get_team)(void);
    /* Optional: chooses layout[t] for every tensor, given which nodes run on the set's own
     * kernels (on_set[v]). Returns 0 or AF_ENOMEM. */
    /* constant(cu, t): the bytes constant t holds for the caller (NULL: the graph's data) */
    int (*layouts)(const af_graph_t *g, const uint8_t *on_set,
                   const void *(*constant)(void *, int32_t), void *cu, uint8_t *layout);
} af__backend_t;

typedef struct af__kernel_set {
    const char *name;
    af_kernel_fn all;                /* one kernel for every op (verify, empty), or NULL */
    const af__kernel_entry_t *table; /* the set's own rows, terminated by {NULL}; the reference
                                      * rows (af__kref_find) serve the ops it lacks or refuses */
    const af__backend_t *backend;
} af__kernel_set_t;

/* The built-in set of a name ("real" resolved), or NULL. */
const af__kernel_set_t *af__kernel_set(const char *name);
/* The row of a table for an op, or NULL. */
const af__kernel_entry_t *af__kernel_find(const af__kernel_entry_t *table, const char *op);
/*
 * Tensor layouts for a set with a backend that chooses them (NULL in *layout otherwise): asks
 * each node's entry (query mode) whether it runs on the set, then the backend. base gives the
 * graph, constants and context; the caller frees *layout with af__free (prepare.c).
 */
int af__kernel_layouts(const af__kernel_set_t *ks, const af__kprep_t *base, int32_t intra,
                       uint8_t **layout, af_error_t *err);
/* Largest intra-op team executor options o allow (lowering sizes working memory for it). */
int32_t af__kernel_intra_max(const af_executor_opts_t *o);
/* Intra-op team of the large nodes of a plan on executor options o (0 = auto resolved). */
int32_t af__kernel_intra(const af_plan_t *plan, const af_executor_opts_t *o);
/* OpenMP team of node v: intra for nodes whose cost makes a team pay, else 1. */
int32_t af__kernel_team(const af_graph_t *g, int32_t v, int32_t intra);
/* 1 when rounds of program p (kernels bound, not prepared) may run on their caller's thread
 * under ex's inline_rounds option (docs/executor.md, "Inline rounds"). */
int af__kernel_inline_ok(af_executor_t *ex, const af__prog_t *p);

int af__kernel_pattern(const af_kernel_args_t *a);
int af__kernel_empty(const af_kernel_args_t *a);
#ifdef AF_HAVE_ONEDNN
/* The oneDNN table (onednn_*.c) and its backend. */
extern const af__kernel_entry_t af__kernels_onednn[];
extern const af__backend_t af__onednn_backend;
#endif
/* The copy kernel of SwapOut / SwapIn (kernels_swap.c) for op, or NULL: every set has it. */
af_kernel_fn af__kernel_swap(const char *op);
/* The row of a node whose outputs all have no elements: does nothing (kernel_bind.c). */
extern const af__kernel_entry_t af__kernel_no_elements;
/* The reference kernels' row for an op (kernels_ref.c: one table per op family), or NULL. */
const af__kernel_entry_t *af__kref_find(const char *op);
/* The built-in row of a set for an op: the set's own row, else the reference row; NULL when
 * there is none or the set has no table ("verify", "empty": one kernel for every op, no check). */
const af__kernel_entry_t *af__kernel_entry(const char *set, const char *op);
/*
 * Looks up the kernel of every node of p (registered kernels first, then the set) into p->kfn /
 * p->kuser / p->kent and runs the rows' checks. Every node that cannot run is collected: the
 * AF_ENOTSUP message lists all missing ops (with node counts) and all unsupported combinations at
 * once (kernel_bind.c).
 */
int af__prog_bind_kernels(af_executor_t *ex, af__prog_t *p, af_error_t *err);

/* How the rounds of a batch of program p run (rounds.c; docs/executor.md, "Batches"): *whole
 * when p is small (modelled cost of a round under 2e6) and has no If guards: each round is one
 * task, its nodes in plan order on one worker; *serial when p is small and a chain (total cost
 * under 1.2 x its critical path): one round in flight. */
void af__batch_modes(const af__prog_t *p, int *serial, int *whole);

/* ---- sessions (session.c, session_api.c, replan.c) -------------------------------------------
 *
 * The session structure, shared by session.c (rounds), rounds.c (starting and finishing them),
 * session_api.c (public calls) and replan.c (re-planning after warm-up). Lock rule: s->mu
 * (AF__RANK_SESSION) guards every field below marked [mu]; fields without a mark are set at
 * creation and read-only afterwards.
 */

struct af_session {
    uv_async_t async; /* first member: the close callback finds the session from the handle */
    int has_async;
    af_executor_t *ex;
    af_session_opts_t opts;
    af_plan_opts_t replan_opts;
    int verify, history;
    /* Inline rounds (af_executor_opts.inline_rounds): allowed for this session's plan; one
     * execution context per slot (ids ex->n + slot) beside the workers' */
    int inline_ok;
    /* Batches (af_session_run_n, af__batch_modes): keep one round in flight (a small chain);
     * run each round as one task, its nodes in plan order on one worker (a small plan) */
    int batch_serial, batch_whole;
    af__worker_t *inl;
    int32_t n_ctx;           /* execution contexts: ex->n workers, + n_slots when inline_ok */
    int32_t max_in, max_out; /* kernel arity bounds (scratch size) */
    void **sc_ptr;           /* per context: max_in + max_out pointers */
    uint64_t *sc_bytes;
    uint8_t *sc_flags;   /* per worker: input passed its first check */
    uint8_t *consts;     /* storage of the constants the graph gives no data for (a pattern) */
    uint8_t **const_ptr; /* per tensor: where a constant's bytes are (graph data or own copy) */
    uint8_t **const_own; /* per tensor: the session's copy made by af_session_constant(), or NULL */
    uint64_t *const_sum;
    int consts_dirty; /* [mu] the caller may have written constants: re-take their checksums */
    uv_mutex_t mu;
    uv_cond_t cv;
    af__prog_t *prog; /* [mu] program new rounds start with */
    af__round_t *slots;
    int32_t n_slots;
    int32_t *free_slots;                /* [mu] */
    int32_t n_free;                     /* [mu] */
    int32_t running;                    /* [mu] rounds started and not yet completed by a worker */
    uint64_t next_round;                /* [mu] */
    af__round_t *done_head, *done_tail; /* [mu] completed submitted rounds, for the loop */
    /* stats [mu] */
    uint64_t rounds, failed_rounds, corrupted, nodes_run, plan_swaps;
    int32_t first_corrupt_tensor, first_corrupt_node, first_failed_node;
    int first_failed_status;
    atomic_ullong dyn_allocs;
    uint64_t pool_os0;
    uint64_t *last_sum; /* [mu] per tensor, last completed round */
    uint64_t *last_seq; /* [mu] per node, last completed round (history) */
    int have_last;      /* [mu] */
    /* re-planning [mu] */
    uint64_t *dyn_max;
    uint64_t warm_rounds;
    int replan_state; /* 0 waiting, 1 in progress, 2 done, 3 failed */
    /* outputs kept for the caller (opts.keep_outputs) [mu] */
    void **kept;         /* per output: the bytes of the last round that completed */
    uint64_t *kept_cap;  /* per output: capacity of kept[k] */
    uint64_t *kept_len;  /* per output: bytes kept, 0 none */
    uint8_t *kept_valid; /* per output: 1 once a round kept it */
};

/* Elements per worker in sc_ptr, sc_bytes and sc_flags: the kernel arity bounds rounded up to 64,
 * so no two workers write the same cache line for every node they run (false sharing cost more
 * than an empty node at 2 threads). */
static inline size_t af__session_sc_stride(const af_session_t *s)
{
    return ((size_t)(s->max_in + s->max_out) + 64) & ~(size_t)63;
}

/* Prepares program p's kernels with the session's constants (session.c). */
int af__session_prepare(af_session_t *s, af__prog_t *p, af_error_t *err);
/* The caller may have written constants: prepares the kernels again. s->mu held, no round in
 * flight. */
void af__session_consts_changed(af_session_t *s);
/* Fills the kernel figures of af_session_stats(); s->mu held. */
void af__session_kernel_stats(const af_session_t *s, af_session_stats_t *o);
/* Fills the round's pointers, inputs and counters (caller thread). */
int af__round_start(af__round_t *r, const af_buffer_t *inputs, af_buffer_t *outputs,
                    af_error_t *err);
/* Returns the round's arena and dynamic tensors. */
void af__round_release(af__round_t *r);
/* Returns only its dynamic tensors (a batch's next round keeps the arena). */
void af__round_release_dynamic(af__round_t *r);
/* Worker side: bookkeeping and hand-over once a round completed (rounds.c). */
void af__session_round_done(af_session_t *s, af__round_t *r, int32_t hint);
/* Gives a round's slot back and drops its program reference; s->mu held. */
void af__session_slot_put(af_session_t *s, af__round_t *r);
/* Re-takes the checksums of the constants (verify); s->mu held, no round running. */
void af__session_const_sums(af_session_t *s, const af__prog_t *p);
/* Keeps a copy of output k of a completed round (opts.keep_outputs); takes s->mu. Grows the
 * storage only for outputs larger than planned (dynamic ones); a failed growth keeps nothing. */
void af__session_keep_output(af_session_t *s, int32_t k, const void *src, uint64_t n);
/* Records warm-up sizes of a completed round; called with s->mu held (replan.c). */
void af__replan_observe(af_session_t *s, const af__round_t *r);
/* Re-plans and swaps the program if warm-up is over; called with s->mu held, may drop it. */
void af__replan_maybe(af_session_t *s);

#endif
