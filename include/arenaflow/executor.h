/*
 * arenaflow — the executor: worker pool, kernels, sessions and rounds.
 *
 * An executor owns a set of worker threads (libuv's thread API, not libuv's global threadpool)
 * and a kernel registry (op type -> C function). A session binds a plan to the executor: every
 * round of the session takes one arena instance (af_plan_arena_bytes() bytes) from the pool,
 * runs every node of the plan on the workers, and gives the arena back. Several rounds of one
 * session may be in flight at once (pipelining), each with its own arena instance.
 *
 * Scheduling: per round, every node has an atomic pending counter = number of distinct
 * predecessors over data edges and the plan's reuse (write-after-read) edges. A worker that
 * finishes a node decrements its successors' counters, keeps one newly ready successor to run
 * itself and pushes the others onto its own deque, from which idle workers steal. Only the
 * completion of a submitted round travels back to the caller's libuv loop (uv_async_send).
 *
 * Kernels receive an af_kernel_args_t describing one node execution. Built-in kernel sets:
 *   "verify"    — outputs filled from a hash of (node id, round, input checksums); every input is
 *                 checked against the checksum its producer recorded, so any byte a wrong plan
 *                 lets another tensor overwrite is caught at the first read;
 *   "reference" — naive C kernels for every op and dtype the project supports (the oracle);
 *   "onednn"    — oneDNN primitives where oneDNN expresses the op exactly, prepared once per
 *                 node at session creation (primitive, prepacked weights); every other node
 *                 falls back to the "reference" kernel, decided at session creation. Present
 *                 only when the library was built with oneDNN (af_kernel_set_names() lists it);
 *   "real"      — the fastest real set built in: "onednn" when present, else "reference";
 *                 with every real set, a node whose op has no kernel, or whose dtype / attribute
 *                 / shape combination the kernel does not implement, is refused at session
 *                 creation, and the error lists every such op and node at once;
 *   "empty"     — kernels that do nothing (scheduling-overhead benchmarks).
 * Kernels registered with af_executor_register_kernel() take precedence over the set.
 *
 * Working memory: a oneDNN node may need a scratchpad and layout-reorder buffers. Plan the graph
 * af_kernels_lower() returns: it gives each such node one AF_TENSOR_SCRATCH output of the right
 * size, so the planner places it (live during the node only) and the arena is the whole
 * activation memory. A session on a graph that was not lowered still runs; it then keeps that
 * memory per worker outside the arena and reports it (af_session_stats_t.unplanned_scratch_bytes).
 *
 * Thread model (docs/executor.md): oneDNN runs on OpenMP. A node is given an OpenMP team of
 * `team` threads (1 for small nodes); the executor never lets the teams of the nodes running at
 * once exceed its core budget, max(threads, intra_op_threads), whatever the number of sessions
 * and rounds in flight.
 *
 * Threading: af_executor_* and af_session_* are thread-safe unless said otherwise; callbacks
 * run on the loop thread of the session (submit) or on a worker (kernels).
 */
#ifndef ARENAFLOW_EXECUTOR_H
#define ARENAFLOW_EXECUTOR_H

#include "arenaflow/common.h"
#include "arenaflow/graph.h"
#include "arenaflow/plan.h"
#include "arenaflow/pool.h"

#include <stdint.h>
#include <uv.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct af_executor af_executor_t;
typedef struct af_session af_session_t;

/* One node execution, as a kernel sees it. Pointers are valid during the call only. */
typedef struct af_kernel_args {
    const af_graph_t *graph;
    const af_node_info_t *info; /* the node: op, attributes, tensor ids */
    int32_t node;
    int32_t worker;   /* execution context running the call: a worker, 0..threads-1, or the
                         caller of an inline round, threads + its slot (inline_rounds) */
    uint64_t round;   /* round number in the session, from 0 */
    int32_t n_inputs; /* = info->n_inputs */
    const void *const *inputs;
    const uint64_t *input_bytes;
    int32_t n_outputs; /* = info->n_outputs */
    void *const *outputs;
    const uint64_t *output_bytes;
    void *user;             /* the pointer given at registration */
    void *priv;             /* executor-internal (verify state); kernels leave it alone */
    void *state;            /* per-node state the kernel set prepared at session creation */
    void *scratch;          /* the node's working memory (its AF_TENSOR_SCRATCH tensor), or NULL */
    uint64_t scratch_bytes; /* its size */
    int32_t team;           /* OpenMP threads this node may use (its primitives were made so) */
} af_kernel_args_t;

/* A kernel returns 0 or a negative AF_E* code; the round then fails with that code. */
typedef int (*af_kernel_fn)(const af_kernel_args_t *args);

typedef struct af_executor_opts {
    int32_t threads;                /* worker threads; 0 = number of CPUs (default) */
    const char *kernels;            /* built-in kernel set: "verify" (default), "real",
                                       "reference", "empty" */
    int32_t max_inflight;           /* rounds in flight per session; default 4 */
    int32_t replan_after_warmup;    /* re-plan dynamic tensors after N rounds; 0 = never */
    uint64_t dynamic_default_bytes; /* verify kernels: size of dynamic outputs; default 4096 */
    int history;                    /* record per-buffer history (diagnosis); default 0 */
    int verify;                     /* check checksums around every kernel: -1 = only with the
                                       "verify" set (default), 0 never, 1 always */
    af_pool_t *pool;                /* arenas come from here; NULL: the executor creates its own */
    int debug_ignore_reuse_edges;   /* test hook: schedule by data edges only (unsafe) */
    /* OpenMP team of a large oneDNN node (kernel sets with oneDNN): 0 = chosen per graph from
     * its parallelism (total cost / critical-path cost): a chain gets all `threads` per node, a
     * graph with as many independent branches as workers gets 1 (default 0). */
    int32_t intra_op_threads;
    /* Rounds of af_session_run() on the calling thread instead of the workers ("inline"): no
     * hand-over to a worker and no wake-up of the caller. -1 = auto (default): for real kernel
     * sets (reference, onednn), plans whose every node runs without an OpenMP team and that are
     * small (modelled cost under 2 x 10^6 FLOPs) or a chain (parallelism under 1.2); 0 = never;
     * 1 = every plan without teams, If branches or registered kernels. At most `threads` rounds run
     * inline at once per executor; a caller that is a worker, and rounds beyond that, go to the
     * workers (docs/executor.md, "Inline rounds"). */
    int inline_rounds;
} af_executor_opts_t;

/* Fills *o with the defaults above. */
void af_executor_opts_init(af_executor_opts_t *o);
/*
 * Sets one option from its config-file spelling ([executor] keys: threads, kernels,
 * max_inflight, replan_after_warmup, dynamic_default_bytes, history, verify,
 * intra_op_threads, inline_rounds). Returns 0 or
 * AF_EINVAL with the key and value named in err. String values map to static names.
 */
int af_executor_opts_set(af_executor_opts_t *o, const char *key, const char *value,
                         af_error_t *err);
/* NULL-terminated list of [executor] keys. */
const char *const *af_executor_opts_keys(void);

/*
 * Starts the worker threads. opts may be NULL. Errors: AF_EINVAL (bad option), AF_ENOMEM, or
 * a libuv code from uv_thread_create. *out set only on success; destroy with
 * af_executor_destroy().
 */
int af_executor_create(const af_executor_opts_t *opts, af_executor_t **out, af_error_t *err);
/*
 * Stops and joins the workers and frees the executor. Every session must have been destroyed
 * first. NULL is a no-op. Not thread-safe with other calls on the same executor.
 */
void af_executor_destroy(af_executor_t *ex);
int32_t af_executor_threads(const af_executor_t *ex);
const af_executor_opts_t *af_executor_opts(const af_executor_t *ex);
/* The pool round arenas and dynamic tensors (through one cache per worker) come from. */
af_pool_t *af_executor_pool(const af_executor_t *ex);
/* Tasks run (by the workers and in inline rounds) and tasks stolen by the workers since
 * creation. Thread-safe. */
void af_executor_counters(const af_executor_t *ex, uint64_t *tasks, uint64_t *steals);

/*
 * Registers (or replaces) the kernel for an op type. Sessions created afterwards use it.
 * The name is copied. Returns 0, AF_EINVAL or AF_ENOMEM. Thread-safe.
 */
int af_executor_register_kernel(af_executor_t *ex, const char *op, af_kernel_fn fn, void *user);

/* Built-in kernel sets by name, for callers that compose their own (NULL-terminated names). */
const char *const *af_kernel_set_names(void);
/* The set a name stands for ("real" -> "onednn" or "reference"); NULL when unknown. Static
 * strings; thread-safe. */
const char *af_kernel_set_resolve(const char *set);
/*
 * The built-in kernel of a set for an op (NULL when the set has none). Kernels that need the
 * state a session prepares (oneDNN) are not handed out: for those ops the set's fallback
 * ("reference") kernel is returned.
 */
af_kernel_fn af_kernel_builtin(const char *set, const char *op);

/*
 * Lowers a graph for the kernel set and thread configuration of `eo` (eo->kernels, threads,
 * intra_op_threads; NULL: defaults): returns in *out a copy of g (same tensor and node ids)
 * in which every node whose kernel needs working memory — a oneDNN scratchpad, buffers for
 * reordering an operand to the layout the primitive wants — has one more output, a tensor of
 * kind AF_TENSOR_SCRATCH named "<node>#scratch" with that many bytes. Plan *out instead of g
 * and create the session with the same options: the arena then holds every byte of activation
 * memory. The sizes are for the largest OpenMP team a session on `eo` may give a node; a
 * session whose node needs more (other options) keeps that node's working memory outside the
 * arena and reports it. For sets without such kernels the copy has no scratch tensor. Errors:
 * AF_EINVAL (unknown set, graph not finalized), AF_ENOMEM; err names the node. The caller owns
 * *out. Reentrant.
 */
int af_kernels_lower(const af_executor_opts_t *eo, const af_graph_t *g, af_graph_t **out,
                     af_error_t *err);

/* ---- sessions --------------------------------------------------------------------------- */

typedef struct af_session_opts {
    uv_loop_t *loop; /* loop that receives completions of af_session_submit(); NULL: sync only */
    /* verify kernels: bytes of a dynamic tensor in a round (NULL: executor default). */
    uint64_t (*dynamic_bytes)(void *user, int32_t tensor, uint64_t round);
    void *dynamic_user;
    /*
     * Re-plan options for replan_after_warmup (NULL: the plan's own options). The session
     * keeps the graph it builds for the re-plan.
     */
    const af_plan_opts_t *replan_opts;
    /*
     * 1: a completed round copies every output the caller gave no buffer for (outputs NULL, or
     * data NULL) into session storage, read with af_session_output_data() or
     * af_session_read_output(). 0 (default): such outputs are not kept (benchmarks).
     */
    int keep_outputs;
    /*
     * Called on the thread running the node (a worker, or the caller of an inline round) right
     * before each kernel runs, with the node's inputs as the kernel is about to read them
     * (diagnosis compares them between runs). Returns 0, or an error code that fails the
     * round. NULL: no call.
     */
    int (*observe)(void *user, const af_kernel_args_t *a);
    void *observe_user;
} af_session_opts_t;

/* A caller buffer bound to one graph input or output of a round. */
typedef struct af_buffer {
    void *data;     /* NULL: the session provides the bytes (inputs: deterministic pattern;
                     * string inputs: empty strings). String tensors hold af_string_t handles:
                     * an output's point at an input's strings or the graph's, so those must
                     * stay alive while the output is read. */
    uint64_t bytes; /* size of data; for dynamic outputs the session writes the real size */
} af_buffer_t;

/*
 * Binds a plan to an executor. The plan (and its graph) must outlive the session. Errors:
 * AF_ENOTSUP (an op has no kernel: err names it), AF_EINVAL, AF_ENOMEM, libuv codes. With
 * opts->loop, must be called on the loop's thread. *out set only on success.
 */
int af_session_create(af_executor_t *ex, const af_plan_t *plan, const af_session_opts_t *opts,
                      af_session_t **out, af_error_t *err);
/*
 * Waits for every round in flight, then frees the session. With a loop, the async handle is
 * closed and the memory released by its close callback: run the loop once more afterwards
 * (uv_run(loop, UV_RUN_NOWAIT)). NULL is a no-op. Call on the loop's thread, not from a round
 * completion callback of the same session.
 */
void af_session_destroy(af_session_t *s);

/* Graph inputs / outputs in the order af_session_run() expects their buffers (tensor ids). */
int32_t af_session_input_count(const af_session_t *s);
int32_t af_session_output_count(const af_session_t *s);
int32_t af_session_input_tensor(const af_session_t *s, int32_t i);
int32_t af_session_output_tensor(const af_session_t *s, int32_t i);

/* What a caller needs to bind a graph input or read a graph output. */
typedef struct af_io_info {
    const char *name; /* the tensor's name (graph-owned) */
    int32_t tensor;   /* tensor id in the session's graph */
    af_dtype_t dtype;
    int32_t rank;         /* -1 when unknown */
    const int64_t *shape; /* rank dims (graph-owned); a dim < 0 is unknown */
    uint64_t bytes;       /* bytes of the tensor; 0 when dynamic (known only at run time) */
    int dynamic;          /* 1 when the size is not known before the round runs */
} af_io_info_t;

/*
 * Describes input i (output = 0) or output i (output = 1) in af_session_run() order. Returns 0
 * or AF_EINVAL (NULL argument, i out of range). Pointers stay valid while the session lives.
 * Thread-safe.
 */
int af_session_io_info(const af_session_t *s, int output, int32_t i, af_io_info_t *out);
/* Index of the graph input / output called name in af_session_run() order, or -1. */
int32_t af_session_find_input(const af_session_t *s, const char *name);
int32_t af_session_find_output(const af_session_t *s, const char *name);

/*
 * Bytes of output i kept by the last completed round (opts.keep_outputs = 1, and the caller gave
 * no buffer for it); *bytes (may be NULL) gets their count. NULL when nothing was kept (option
 * off, no round yet, i out of range). The pointer stays valid until the next round completes:
 * callers running rounds concurrently use af_session_read_output() instead.
 */
const void *af_session_output_data(const af_session_t *s, int32_t i, uint64_t *bytes);
/*
 * Copies the kept bytes of output i into dst (cap bytes). *bytes (may be NULL) gets the kept
 * size. Returns 0, AF_ENOENT (nothing kept), AF_EINVAL (cap too small: *bytes says how much).
 * Thread-safe.
 */
int af_session_read_output(const af_session_t *s, int32_t i, void *dst, uint64_t cap,
                           uint64_t *bytes);

/*
 * Runs one round and waits for it. inputs/outputs may be NULL, or arrays of
 * af_session_input_count() / af_session_output_count() buffers (a buffer's data may be NULL).
 * Returns 0, AF_ECORRUPT (verify kernels caught corruption: err names the first tensor), a
 * kernel's error, AF_ENOMEM (the pool could not give an arena) or AF_EINVAL (buffer too small).
 * Thread-safe: several threads may run rounds of one session at once (up to max_inflight; more
 * wait for a slot).
 */
int af_session_run(af_session_t *s, const af_buffer_t *inputs, af_buffer_t *outputs,
                   af_error_t *err);

/*
 * Runs n rounds and waits once for all of them (Taskflow's run_n): rounds still overlap, up to
 * max_inflight at once, and a worker that finishes one starts the next in the same slot and
 * arena, so a round costs no wake-up of the caller and no pool call. inputs/outputs may be NULL,
 * or arrays of n * af_session_input_count() / n * af_session_output_count() buffers, round i
 * using the i-th group (rounds run concurrently: they must not share output buffers). Every
 * round of a batch runs the plan current when the batch started; a re-plan due meanwhile takes
 * effect at the next call. Returns 0 when every round succeeded; else the first failure's code
 * (as af_session_run(), err naming the round) after the rounds already running have finished;
 * no round starts after a failure. AF_EINVAL for n < 0; n = 0 runs nothing. Thread-safe.
 * Two cases are decided from the plan when the session is created (docs/executor.md,
 * "Batches"): a small plan (modelled round cost under 2e6, no If branches) in a batch of at
 * least as many rounds as workers runs each round as one task in plan order, the rounds
 * overlapping on the workers; a small chain keeps one round in flight, on one worker.
 */
int af_session_run_n(af_session_t *s, int32_t n, const af_buffer_t *inputs, af_buffer_t *outputs,
                     af_error_t *err);

/* Completion of a submitted round, called on the session's loop thread. */
typedef void (*af_round_cb)(af_session_t *s, uint64_t round, int status, void *user);

/*
 * Submits a round without waiting (stream pipelines). The buffers must stay valid until cb
 * runs. Returns 0, AF_EBUSY (max_inflight rounds already in flight), AF_EINVAL (no loop),
 * AF_ENOMEM. *round_out (may be NULL) gets the round number. Call on the loop's thread.
 */
int af_session_submit(af_session_t *s, const af_buffer_t *inputs, af_buffer_t *outputs,
                      af_round_cb cb, void *user, uint64_t *round_out);
/* Rounds submitted or running and not yet completed. */
int32_t af_session_inflight(const af_session_t *s);

typedef struct af_session_stats {
    uint64_t rounds;            /* completed rounds */
    uint64_t failed_rounds;     /* rounds with a non-zero status */
    uint64_t corrupted_tensors; /* verify kernels: inputs whose checksum did not match */
    uint64_t nodes_run;
    uint64_t plan_swaps;          /* re-plans swapped in (replan_after_warmup) */
    uint64_t arena_bytes;         /* arena size of the current plan */
    uint64_t dynamic_allocs;      /* dynamic tensors allocated (from the workers' pool caches) */
    uint64_t pool_os_calls;       /* OS calls of the arena pool since the session started */
    int32_t first_corrupt_tensor; /* first tensor caught corrupted, -1 none */
    int32_t first_corrupt_node;   /* the node that read it */
    int32_t first_failed_node;    /* node whose kernel failed first (any round), -1 none */
    int first_failed_status;      /* its error code */
    uint64_t scratch_bytes;       /* planned working memory of the nodes (inside the arena) */
    uint64_t unplanned_scratch_bytes; /* working memory kept outside the arena (graph not
                                         lowered with af_kernels_lower), all workers */
    uint64_t prepacked_bytes;         /* weights reordered for the kernels: session constants,
                                         outside the arena */
    int32_t backend_nodes;            /* nodes run by the set's own kernels (oneDNN) */
    int32_t fallback_nodes;           /* nodes that fell back to the reference kernels */
    int32_t intra_op_threads;         /* OpenMP team of the large nodes (1 = inter-op only) */
} af_session_stats_t;

/* Snapshot of the session's counters. Thread-safe. */
void af_session_stats(const af_session_t *s, af_session_stats_t *out);
/* The plan rounds currently start with (changes after a re-plan). */
const af_plan_t *af_session_plan(const af_session_t *s);
/*
 * Which kernel runs a node, for reports: "onednn:<implementation>" (e.g.
 * "onednn:brgconv:avx512_core"), "reference", "registered", or the set's name; a node that fell
 * back from the set's kernel to the reference one: "reference (<why the set refused it>)", e.g.
 * "reference (oneDNN: input 1 must be a constant (weights))". NULL when node is out of range.
 * *team (may be NULL) gets the node's OpenMP team. The string belongs to the session.
 * Thread-safe.
 */
const char *af_session_node_kernel(const af_session_t *s, int32_t node, int32_t *team);

/*
 * Storage of a constant tensor (weights) of the session, for the caller to read or fill. A
 * session starts with the graph's constant data where the graph has it (af_tensor_info_t.data:
 * ONNX weights, a JSON graph's weights file), read in place without a copy, and with a
 * deterministic pattern elsewhere (empty strings for a string tensor). The first call for a tensor
 * with graph data copies it into storage this session owns, so writing it changes this session only
 * (other sessions on the same graph keep the graph's bytes). *bytes (may be NULL) gets its size.
 * Returns NULL when `tensor` is not a constant, or when that copy cannot be allocated. Write it
 * while no round is in flight; its checksum (verify mode) is taken again when the next round
 * starts.
 */
void *af_session_constant(af_session_t *s, int32_t tensor, uint64_t *bytes);

/*
 * Per-tensor checksums of the last completed round (verify kernels), one per tensor id; 0 for
 * tensors that were not produced. Used by diagnosis to compare a safe and a planned run.
 * Returns 0 or AF_EINVAL (n too small). Thread-safe when no round is in flight.
 */
int af_session_checksums(const af_session_t *s, uint64_t *out, int32_t n);

/*
 * Per-buffer history of the last completed round (opts.history = 1): the tensors an arena
 * range hosted, in the order they were written. Each entry: tensor id, the global sequence
 * number of its producer's execution. Returns the number of entries written (<= max), or
 * AF_EINVAL when history is off.
 */
typedef struct af_history_entry {
    int32_t tensor;
    int32_t node;
    uint64_t seq; /* order of execution in the round */
} af_history_entry_t;
int af_session_history(const af_session_t *s, af_history_entry_t *out, int32_t max);

/* ---- analysis --------------------------------------------------------------------------- */

/*
 * Critical path of a plan: the longest path by node cost (cost <= 0 counts as 1) through data
 * edges plus the plan's reuse edges — the best time an unbounded number of workers can reach.
 * *cost and *nodes (may be NULL) receive its cost and node count. Returns 0 or AF_ENOMEM.
 */
int af_executor_critical_path(const af_plan_t *p, double *cost, int32_t *nodes);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_EXECUTOR_H */
