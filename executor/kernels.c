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
 * "real": the fastest real backend; today the reference table.
 * Every set also has SwapOut / SwapIn (kernels_swap.c): a memcpy.
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

static const char *const set_names[] = {"verify", "real", "reference", "empty", NULL};

const char *const *af_kernel_set_names(void)
{
    return set_names;
}

af_kernel_fn af_kernel_builtin(const char *set, const char *op)
{
    if (!set || !op)
        return NULL;
    for (size_t i = 0; set_names[i] && af__kernel_swap(op); i++)
        if (strcmp(set, set_names[i]) == 0)
            return af__kernel_swap(op); /* offload copies: memcpy in every set */
    if (strcmp(set, "verify") == 0)
        return af__kernel_pattern;
    if (strcmp(set, "empty") == 0)
        return af__kernel_empty;
    const af__kernel_entry_t *e = af__kernel_entry(set, op);
    return e ? e->fn : NULL;
}

const af__kernel_entry_t *af__kernel_entry(const char *set, const char *op)
{
    if (!set || !op)
        return NULL;
    if (strcmp(set, "real") == 0 || strcmp(set, "reference") == 0)
        return af__kref_find(op);
    return NULL;
}
