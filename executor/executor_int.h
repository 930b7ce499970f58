/*
 * Executor-internal structures: the worker pool (workers.c), compiled programs and rounds
 * (program.c, session.c), the kernel tables (kernels.c, kernels_f32.c).
 *
 * Lock ranks (take in this order, never the reverse):
 *   1. af_session.mu      — round slots, completed list, stats, program swap
 *   2. af_executor.kmu    — kernel registry
 *   3. af__deque.mu       — one worker deque (never two at once)
 *   4. af_executor.mu     — sleeping workers only
 * A worker holds no lock while it runs a kernel. Per-round node state is lock-free: one atomic
 * pending counter per node, one atomic remaining counter per round.
 */
#ifndef ARENAFLOW_EXECUTOR_INT_H
#define ARENAFLOW_EXECUTOR_INT_H

#include "arenaflow/executor.h"
#include "common/common_int.h"

#include <stdatomic.h>
#include <uv.h>

typedef struct af__round af__round_t;
typedef struct af__prog af__prog_t;

/* ---- workers (workers.c) ---------------------------------------------------------------- */

typedef struct af__task {
    af__round_t *r;
    int32_t node;
} af__task_t;

/* A worker's deque: the owner pushes and pops at the tail, thieves take from the head. */
typedef struct af__deque {
    uv_mutex_t mu;
    af__task_t *buf;
    size_t cap, head, count;
} af__deque_t;

typedef struct af__worker {
    af_executor_t *ex;
    int32_t id;
    uv_thread_t thread;
    af__deque_t dq;
    uint32_t rng;
    af__task_t *rbuf; /* successors made ready by one node, pushed as one batch */
    size_t rcap;
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
    uv_mutex_t mu; /* rank 4: sleeping */
    uv_cond_t cv;
    atomic_int sleepers;
    atomic_llong queued; /* tasks sitting in deques */
    atomic_int stop;
    atomic_uint rr; /* round-robin target for submitted roots */
    uv_mutex_t kmu; /* rank 2: kernel registry */
    af__kernel_reg_t *kregs;
    size_t n_kregs, cap_kregs;
    af_pool_t *pool;
    int own_pool;
    af_dynregion_t *dyn;
    int verify; /* resolved opts.verify */
};

/* Pushes tasks onto worker `hint`'s deque (any worker when hint < 0) and wakes sleepers. */
int af__exec_push(af_executor_t *ex, int32_t hint, const af__task_t *t, size_t n);
/* Grows every worker's deque to hold `tasks` entries (session creation: no growth later). */
void af__exec_reserve(af_executor_t *ex, size_t tasks);
/* Looks up a registered kernel (registry first, then the built-in set). */
int af__exec_kernel_lookup(af_executor_t *ex, const char *op, af_kernel_fn *fn, void **user);

/* ---- programs: a plan compiled for execution (program.c) -------------------------------- */

enum {
    AF__LOC_NONE = 0,  /* never materialised (unused tensor) */
    AF__LOC_ARENA,     /* arena + off */
    AF__LOC_ALIAS,     /* ptr[root] + off, root static */
    AF__LOC_ALIAS_DYN, /* ptr[root] + off, root dynamic: resolved at kernel time */
    AF__LOC_CONST,     /* session constant storage + off */
    AF__LOC_DYN,       /* dynamic region, allocated by its producer's worker */
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
    int32_t max_in, max_out;
    af_kernel_fn *kfn;
    void **kuser;
    uint8_t *loc;
    int32_t *root;
    uint64_t *off;
    uint64_t *bytes; /* tensor bytes (real size, not aligned); 0 for dynamic */
    uint64_t arena_bytes;
    uint64_t const_bytes;
    int32_t *inputs, n_inputs; /* graph input tensors, in tensor-id order */
    int32_t *outputs, n_outputs;
    int32_t *slot_of; /* tensor -> input slot (>= 0), output slot (-2 - k) or -1 */
    int32_t n_dyn;    /* tensors served by the dynamic region */
    atomic_int refs;
};

int af__prog_create(af_executor_t *ex, const af_plan_t *plan, af__prog_t **out, af_error_t *err);
void af__prog_release(af__prog_t *p);

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
    uint8_t *owned;   /* per tensor: 1 when ptr[t] came from the dynamic region */
    atomic_int *pending;
    af__task_t *roots; /* the round's first tasks, pushed as one batch (node_count entries) */
    atomic_int remaining;
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
};

/* Runs one node of a round on worker w (kernel + verification); returns nothing: errors go to
 * the round's status. */
void af__round_run_node(af__worker_t *w, af__round_t *r, int32_t node);
/* Called by the worker that finished the round's last node. */
void af__round_complete(af__round_t *r);
/* Checksum recorded for tensor t in round r (verify kernels). */
uint64_t af__round_sum(const af__round_t *r, int32_t t);

/* Checksum used by verification: XXH3 of the bytes. */
uint64_t af__exec_checksum(const void *p, uint64_t n);
/* Fills p with a deterministic pattern derived from seed. */
void af__exec_fill(void *p, uint64_t n, uint64_t seed);
/* 64-bit mixer (splitmix64 finaliser). */
static inline uint64_t af__exec_mix(uint64_t a, uint64_t b)
{
    uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/*
 * Copies a finalized graph (same tensor and node ids, attributes included); with sizes, dynamic
 * tensors t with sizes[t] > 0 get that fixed size (replan.c). Returns 0 or an AF_E* code.
 */
int af__exec_copy_graph(const af_graph_t *g, const uint64_t *sizes, af_graph_t **out,
                        af_error_t *err);

/* ---- kernels (kernels.c, kernels_f32.c) ------------------------------------------------- */

typedef struct af__kernel_entry {
    const char *op;
    af_kernel_fn fn;
} af__kernel_entry_t;

int af__kernel_pattern(const af_kernel_args_t *a);
int af__kernel_empty(const af_kernel_args_t *a);
/* The copy kernel of SwapOut / SwapIn (kernels_swap.c) for op, or NULL: every set has it. */
af_kernel_fn af__kernel_swap(const char *op);
/* The f32 table (kernels_f32.c), terminated by {NULL, NULL}. */
extern const af__kernel_entry_t af__kernels_f32[];

#endif
