/*
 * arenaflow — the model zoo: C generators for the computation graphs the CLI (`arenaflow zoo`,
 * `arenaflow run zoo:NAME`), the benchmarks and the tests plan, plus synthetic graphs (random
 * DAGs, a residual chain of any size) and the PRNG they are drawn from.
 *
 * Each generator builds a finalized af_graph_t with real shapes and dtypes through the public
 * graph builder API: activations are f32 (int64 for token ids), weights are `constant` tensors
 * (outside the activation arena), every node carries a FLOP estimate as its cost, reshapes are
 * alias tensors (views), and elementwise ops carry in-place hints. The node order is a plain
 * framework-style topological order (the order a PyTorch module's forward() would run, then,
 * for training graphs, autograd's reverse order) — what a user would feed in, not a tuned one.
 *
 * Threading: the functions below keep no global state and are reentrant.
 */
#ifndef ARENAFLOW_ZOO_H
#define ARENAFLOW_ZOO_H

#include "arenaflow/common.h"
#include "arenaflow/graph.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    AF_ZOO_INFERENCE = 0, /* forward pass of a published architecture */
    AF_ZOO_RANDOM = 1,    /* randomly wired / searched-cell networks (RandWire, DARTS) */
    AF_ZOO_TRAINING = 2,  /* forward + backward with saved activations */
} af_zoo_kind_t;

typedef struct af_zoo_opts {
    int32_t batch; /* batch size; 0 = the model's default (1 for inference, 8 for training) */
    int32_t seq;   /* sequence length for transformers; 0 = default (128 BERT, 1024 GPT-2) */
    uint64_t seed; /* RNG seed for the random networks; 0 = the fixed default */
} af_zoo_opts_t;

typedef struct af_zoo_entry {
    const char *name;
    af_zoo_kind_t kind;
    const char *help;
} af_zoo_entry_t;

/* Fills *o with zeros (every field at its default). */
void af_zoo_opts_init(af_zoo_opts_t *o);

/* The zoo's models, in a fixed order; *n gets the count. Static storage. */
const af_zoo_entry_t *af_zoo_list(size_t *n);

/* The entry for a name, or NULL. */
const af_zoo_entry_t *af_zoo_find(const char *name);

/*
 * Builds model `name` and finalizes it. o may be NULL (defaults). Errors: AF_ENOENT (unknown
 * name: err lists the known ones), AF_EINVAL (batch/seq out of range: 1..4096 / 1..65536),
 * AF_ENOMEM. *out is set only on success; the caller owns it (af_graph_destroy()).
 */
int af_zoo_build(const char *name, const af_zoo_opts_t *o, af_graph_t **out, af_error_t *err);

/*
 * A training chain of `layers` unit-cost layers, every activation and gradient `elems` f32
 * elements: x0 (input) -Tanh-> x1 -> ... -> xn -Sigmoid (the loss)-> gn, then for i = n..1
 * g(i-1) = Mul(gi, x(i-1)) (the backward of layer i reads its input), g0 the output. Every op
 * has a real kernel, so the graph runs with the "real" kernel set. Node cost 1 each, names f<i>,
 * loss, b<i>. Errors: AF_EINVAL (layers < 1 or > 100000, elems < 1), AF_ENOMEM. Reentrant.
 */
int af_zoo_chain_train(int32_t layers, int64_t elems, af_graph_t **out, af_error_t *err);

/* ---- synthetic graphs (zoo/dag.c) --------------------------------------------------------- */

/* The xorshift PRNG the synthetic graphs are drawn from; also for callers' own fixed-seed data.
 * A zero state is replaced by a fixed non-zero one. Not thread-safe per state (one per thread). */
typedef struct af_zoo_rng {
    uint64_t s;
} af_zoo_rng_t;

static inline uint64_t af_zoo_rng_next(af_zoo_rng_t *r)
{
    uint64_t x = r->s ? r->s : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r->s = x;
    return x;
}

/* Uniform-ish in [0, n) (modulo); 0 when n is 0. */
static inline uint64_t af_zoo_rng_below(af_zoo_rng_t *r, uint64_t n)
{
    return n ? af_zoo_rng_next(r) % n : 0;
}

/* A log-uniform byte size from 1 B to 1 MiB. */
static inline int64_t af_zoo_rng_size(af_zoo_rng_t *r)
{
    int bits = (int)af_zoo_rng_below(r, 21);
    return (int64_t)(1 + af_zoo_rng_below(r, (uint64_t)1 << bits));
}

/*
 * A random DAG of 2..max_nodes nodes (max_nodes >= 2), finalized: 1-3 inputs (sometimes a
 * constant), nodes with fan-in 1-4 over any earlier tensor (so tensors get several consumers on
 * different branches), 1-2 outputs, some of them graph outputs, view nodes whose output is an
 * alias of their input (Reshape-like), and unary nodes carrying an in-place hint; sizes are
 * log-uniform from 1 byte to 1 MiB. The same seed gives the same graph. Errors: AF_EINVAL
 * (max_nodes < 2, or a graph finalize rejected: message in err), AF_ENOMEM. *out is set only on
 * success; the caller owns it. Reentrant.
 */
int af_zoo_random_dag(uint64_t seed, int32_t max_nodes, af_graph_t **out, af_error_t *err);

/*
 * A large realistic graph of about n_tensors tensors: a chain of residual blocks (conv -> relu
 * (in place) -> conv -> add with the block input), with a long skip connection every 64 blocks
 * (UNet-like), weights as constants, one input and one output; 6 tensors per block, block sizes
 * drawn from the seed. Errors and ownership as af_zoo_random_dag(). Reentrant.
 */
int af_zoo_residual_chain(uint64_t seed, int32_t n_tensors, af_graph_t **out, af_error_t *err);

/*
 * Writes a random topological order of g's nodes (Kahn's algorithm, a random choice among the
 * ready nodes) into order (af_graph_node_count() entries). Returns 0 or AF_ENOMEM. Reentrant.
 */
int af_zoo_random_order(const af_graph_t *g, uint64_t seed, int32_t *order);

#ifdef __cplusplus
}
#endif
#endif /* ARENAFLOW_ZOO_H */
