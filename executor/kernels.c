/*
 * Built-in kernel sets and the verification primitives.
 *
 * "verify": one kernel for every op. It fills each output with a pattern seeded by
 *   hash(node id, round, checksums its inputs' producers recorded, output index). The checking
 *   itself is done by the executor around every kernel (session.c): each input is hashed at
 *   read time and compared with the checksum its producer recorded, and each output is hashed
 *   after the kernel. So a tensor whose bytes were overwritten by a wrongly placed neighbour is
 *   caught at its first read, whichever kernels run.
 * "empty": does nothing (measures pure scheduling overhead).
 * "reference": the naive C kernels of kernels_ref*.c, every supported op and dtype (the oracle).
 * "onednn" (built with oneDNN): the table of onednn_*.c, whose entries prepare a per-node state
 *   at session creation (prepare.c); the reference rows serve the ops it lacks or refuses, per
 *   node.
 * "real": the fastest of the above that is built in.
 *
 * Teams: a node whose estimated cost makes an OpenMP team pay (AF__TEAM_MIN_COST, from the
 * measurements in docs/executor.md: forking a team of 2 costs about 1.5 us, a naive-sized node
 * below ~2 x 10^6 FLOPs gains less than that) gets the graph's intra-op team, others run alone. The
 * intra-op team is chosen per graph: with parallelism P = total cost / critical-path cost, a chain
 * (P near 1) gives all cores to each large node, a graph with as many branches as workers gives
 * each node one core: intra = round(workers / P), clamped to [1, workers].
 * Every set also has SwapOut / SwapIn (kernels_swap.c): a memcpy, bound before the set's
 *   own kernels (a verify run checks the bytes that really went through the host tier).
 *
 * Outputs that are views (aliases) of another tensor are not written: their bytes belong to the
 * base, and their checksum is taken as they are.
 *
 * No state, no locks: kernels run concurrently on any worker.
 */
#include "executor/executor_int.h"

#include <string.h>
#include <xxhash.h>

uint64_t af__exec_checksum(const void *p, uint64_t n)
{
    return n ? XXH3_64bits(p, (size_t)n) : 0x5a5a5a5aULL;
}

void af__exec_fill_tensor(const af_graph_t *g, int32_t t, void *p, uint64_t n, uint64_t seed)
{
    if (af_graph_tensor(g, t)->dtype == AF_DTYPE_STRING)
        memset(p, 0, (size_t)n);
    else
        af__exec_fill(p, n, seed);
}

void af__exec_fill(void *p, uint64_t n, uint64_t seed)
{
    uint8_t *b = p;
    uint64_t x = seed | 1;
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(b + i, &x, 8);
    }
    if (i < n) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(b + i, &x, (size_t)(n - i));
    }
}

int af__kernel_pattern(const af_kernel_args_t *a)
{
    const af__round_t *r = a->priv;
    uint64_t h = af__exec_mix((uint64_t)a->node, a->round);
    for (int32_t i = 0; i < a->n_inputs; i++)
        h = af__exec_mix(h, r ? af__round_sum(r, a->info->inputs[i]) : (uint64_t)i);
    const af_graph_t *g = a->graph;
    for (int32_t k = 0; k < a->n_outputs; k++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, a->info->outputs[k]);
        if (ti->alias_of >= 0 || !a->outputs[k])
            continue; /* a view: the bytes belong to its base */
        af__exec_fill(a->outputs[k], a->output_bytes[k], af__exec_mix(h, (uint64_t)k));
    }
    return 0;
}

int af__kernel_empty(const af_kernel_args_t *a)
{
    (void)a;
    return 0;
}

static const af__kernel_set_t sets[] = {
    {.name = "verify", .all = af__kernel_pattern},
    {.name = "reference"},
#ifdef AF_HAVE_ONEDNN
    {.name = "onednn", .table = af__kernels_onednn, .backend = &af__onednn_backend},
#endif
    {.name = "empty", .all = af__kernel_empty},
};

#ifdef AF_HAVE_ONEDNN
#define REAL_SET "onednn"
#else
#define REAL_SET "reference"
#endif

static const char *const set_names[] = {"verify", "reference",
#ifdef AF_HAVE_ONEDNN
                                        "onednn",
#endif
                                        "real",   "empty",     NULL};

const char *const *af_kernel_set_names(void)
{
    return set_names;
}

const char *af_kernel_set_resolve(const char *set)
{
    if (!set)
        return NULL;
    if (strcmp(set, "real") == 0)
        return REAL_SET;
    for (size_t i = 0; i < AF_ARRAY_SIZE(sets); i++)
        if (strcmp(sets[i].name, set) == 0)
            return sets[i].name;
    return NULL;
}

const af__kernel_set_t *af__kernel_set(const char *name)
{
    const char *n = af_kernel_set_resolve(name);
    for (size_t i = 0; n && i < AF_ARRAY_SIZE(sets); i++)
        if (strcmp(sets[i].name, n) == 0)
            return &sets[i];
    return NULL;
}

const af__kernel_entry_t *af__kernel_find(const af__kernel_entry_t *table, const char *op)
{
    for (const af__kernel_entry_t *e = table; e && e->op; e++)
        if (strcmp(e->op, op) == 0)
            return e;
    return NULL;
}

const af__kernel_entry_t *af__kernel_entry(const char *set, const char *op)
{
    const af__kernel_set_t *ks = af__kernel_set(set);
    if (!ks || ks->all || !op)
        return NULL;
    const af__kernel_entry_t *e = af__kernel_find(ks->table, op);
    return e ? e : af__kref_find(op);
}

af_kernel_fn af_kernel_builtin(const char *set, const char *op)
{
    const af__kernel_set_t *ks = af__kernel_set(set);
    if (!ks || !op)
        return NULL;
    if (af__kernel_swap(op))
        return af__kernel_swap(op); /* offload copies: memcpy in every set */
    if (ks->all)
        return ks->all;
    /* a row that prepares a state cannot run without one: the caller gets the reference row */
    const af__kernel_entry_t *e = af__kernel_entry(set, op);
    if (e && e->prepare)
        e = af__kref_find(op);
    return e ? e->fn : NULL;
}

/* ---- teams -------------------------------------------------------------------------------- */

/* Below this estimated cost (FLOPs, or bytes written when the graph has no cost) a node runs
 * without a team: forking one costs more than it saves (docs/executor.md). */
#define AF__TEAM_MIN_COST 2e6

static double node_cost(const af_graph_t *g, int32_t v)
{
    const af_node_info_t *ni = af_graph_node(g, v);
    if (ni->cost > 0)
        return ni->cost;
    double b = 0;
    for (int32_t k = 0; k < ni->n_outputs; k++) {
        int64_t x = af_graph_tensor(g, ni->outputs[k])->bytes;
        b += x > 0 ? (double)x : 0;
    }
    return b > 0 ? b : 1;
}

int32_t af__kernel_intra_max(const af_executor_opts_t *o)
{
    const af__kernel_set_t *ks = af__kernel_set(o->kernels);
    if (!ks || !ks->backend)
        return 1;
    if (o->intra_op_threads > 0)
        return o->intra_op_threads;
    return o->threads > 0 ? o->threads : af__exec_cpu_count();
}

int32_t af__kernel_intra(const af_plan_t *plan, const af_executor_opts_t *o)
{
    int32_t max = af__kernel_intra_max(o);
    if (max <= 1 || o->intra_op_threads > 0)
        return max;
    /* Parallelism of the plan: the reuse edges count, because a memory-tight plan runs
     * independent branches one after the other (docs/executor.md). */
    const af_graph_t *g = af_plan_graph(plan);
    double total = 0, cp = 0;
    for (int32_t v = 0; v < af_graph_node_count(g); v++) {
        double c = af_graph_node(g, v)->cost;
        total += c > 0 ? c : 1;
    }
    if (af_executor_critical_path(plan, &cp, NULL) || cp <= 0)
        return max; /* no figure: the chain assumption (all cores per node) */
    int32_t intra = (int32_t)((double)max * cp / total + 0.5);
    return intra < 1 ? 1 : intra > max ? max : intra;
}

int32_t af__kernel_team(const af_graph_t *g, int32_t v, int32_t intra)
{
    return intra > 1 && node_cost(g, v) >= AF__TEAM_MIN_COST ? intra : 1;
}

/* ---- inline rounds ------------------------------------------------------------------------ */

/* Below this modelled cost (FLOPs of the whole plan) a round is over sooner than a hand-over to
 * a worker and the wake-up of its caller (a few us each): the same figure as a team's. */
#define AF__INLINE_MAX_COST AF__TEAM_MIN_COST
/* Parallelism (total cost / critical path) under which a second worker has nothing to run. */
#define AF__INLINE_CHAIN 1.2

int af__kernel_inline_ok(af_executor_t *ex, const af__prog_t *p)
{
    const af_executor_opts_t *o = &ex->opts;
    /* auto: real kernels only; "verify" and "empty" are the scheduler's test and benchmark sets */
    if (o->inline_rounds == 0 || (o->inline_rounds < 0 && (ex->set->all || !ex->set->table)))
        return 0;
    if (p->guard_t)
        return 0; /* If guards add edges the plan's order (the inline order) need not respect */
    int32_t intra = af__kernel_intra(p->plan, o);
    double total = 0;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        af_kernel_fn fn;
        void *user;
        /* a registered kernel may keep state per worker (af_executor_threads of them) */
        if (af__exec_registered(ex, af_graph_node(p->g, v)->op, &fn, &user) == 0)
            return 0;
        if (af__kernel_team(p->g, v, intra) > 1)
            return 0; /* its OpenMP team belongs on a worker, under the core budget */
        double c = af_graph_node(p->g, v)->cost;
        total += c > 0 ? c : 1;
    }
    if (o->inline_rounds > 0 || total < AF__INLINE_MAX_COST)
        return 1;
    double cp = 0;
    return af_executor_critical_path(p->plan, &cp, NULL) == 0 && cp > 0 &&
           total < AF__INLINE_CHAIN * cp;
}
