/*
 * The scratch figures of a plan's report: how many AF_TENSOR_SCRATCH tensors (kernels' working
 * memory, af_kernels_lower) the arena hosts, the bytes of the union of their arena ranges (the
 * part of the arena that ever holds scratch; overlapping scratch tensors counted once) and the
 * largest one.
 *
 * Lock rule: none; called on a plan being built by one thread.
 */
#include "planner/planner_int.h"

#include <stdlib.h>

static int by_lo(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Scratch figures of the report: count, the union of the arena ranges that host scratch, the
 * largest. n: the graph's AF_TENSOR_SCRATCH tensors (counted by the caller's pass). Returns 0 or
 * AF_ENOMEM. */
int af__plan_scratch_figure(const af_plan_t *p, af_plan_report_t *r, int32_t n)
{
    const af_graph_t *g = p->g;
    int32_t nt = af_graph_tensor_count(g);
    if (n <= 0)
        return 0;
    uint64_t *rg = af__malloc((size_t)n * 2 * sizeof(uint64_t));
    if (!rg)
        return AF_ENOMEM;
    int32_t k = 0;
    for (int32_t i = 0; i < nt; i++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, i);
        if (ti->kind != AF_TENSOR_SCRATCH || p->tp[i].where != AF_WHERE_ARENA)
            continue;
        rg[2 * k] = p->tp[i].offset;
        rg[2 * k + 1] = p->tp[i].offset + (uint64_t)ti->bytes;
        if ((uint64_t)ti->bytes > r->scratch_max_bytes)
            r->scratch_max_bytes = (uint64_t)ti->bytes;
        k++;
    }
    r->scratch_tensors = k;
    qsort(rg, (size_t)k, 2 * sizeof(uint64_t), by_lo);
    uint64_t lo = 0, hi = 0;
    for (int32_t i = 0; i < k; i++) {
        if (i == 0 || rg[2 * i] > hi) {
            r->scratch_bytes += hi - lo;
            lo = rg[2 * i];
            hi = rg[2 * i + 1];
        } else if (rg[2 * i + 1] > hi) {
            hi = rg[2 * i + 1];
        }
    }
    r->scratch_bytes += hi - lo;
    af__free(rg);
    return 0;
}
