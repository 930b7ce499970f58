/*
 * LPMF, least peak memory first (PyTorch Inductor's memory.py, after "Buffer memory
 * optimization for video codec application modeled in Simulink"). Keeps the peak so far P and
 * the live bytes L. For a ready node v with alloc a(v) and freed f(v): mem1 = L + a(v) is the
 * memory while v runs, mem2 = mem1 - f(v) after it. If some ready node has mem1 <= P, run the
 * one with the lowest mem2; otherwise the one with the lowest mem1.
 *
 * O(n log n): a(v) is static (bytes the node defines), so nodes are ranked by a(v) once and a
 * segment tree over ranks holds, for ready nodes, the key a(v) - f(v). "mem1 <= P" is a rank
 * prefix (binary search of P - L in the sorted a's); the prefix minimum gives the first rule,
 * the leftmost ready leaf the second. f(v) changes when a root's last toucher becomes v: one
 * point update. Ties break on input-order position.
 */
#include "planner/schedule_int.h"
#include "planner/sort_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct seg {
    int32_t size;  /* leaves, a power of two */
    int32_t *best; /* per tree node: the leaf (rank) with the smallest key, -1 if none ready */
    int64_t *key;  /* per rank: a - f, valid when ready */
    int32_t *pos;  /* per rank: input-order position (tie-break) */
} seg_t;

static int better(const seg_t *t, int32_t a, int32_t b)
{
    if (a < 0)
        return 0;
    if (b < 0)
        return 1;
    if (t->key[a] != t->key[b])
        return t->key[a] < t->key[b];
    return t->pos[a] < t->pos[b];
}

static void seg_set(seg_t *t, int32_t rank, int ready)
{
    int32_t i = rank + t->size;
    t->best[i] = ready ? rank : -1;
    for (i /= 2; i >= 1; i /= 2) {
        int32_t a = t->best[2 * i], b = t->best[2 * i + 1];
        t->best[i] = better(t, a, b) ? a : b;
    }
}

/* Best ready rank in [0, hi), or -1. */
static int32_t seg_prefix(const seg_t *t, int32_t hi)
{
    int32_t res = -1, lo = t->size, h = hi + t->size;
    while (lo < h) {
        if (lo & 1) {
            if (better(t, t->best[lo], res))
                res = t->best[lo];
            lo++;
        }
        if (h & 1) {
            h--;
            if (better(t, t->best[h], res))
                res = t->best[h];
        }
        lo /= 2;
        h /= 2;
    }
    return res;
}

/* Leftmost ready rank (smallest allocation), or -1. */
static int32_t seg_leftmost(const seg_t *t)
{
    if (t->best[1] < 0)
        return -1;
    int32_t i = 1;
    while (i < t->size)
        i = t->best[2 * i] >= 0 ? 2 * i : 2 * i + 1;
    return i - t->size;
}

typedef struct lpmf {
    const af__smodel_t *m;
    af__sstate_t s;
    seg_t t;
    int32_t *rank, *by_rank, *indeg;
    uint64_t *sorted_def;
    uint8_t *done, *ready;
} lpmf_t;

static void lpmf_key(lpmf_t *c, int32_t v)
{
    int32_t r = c->rank[v];
    c->t.key[r] = (int64_t)c->m->def[v] - (int64_t)af__sstate_freed(&c->s, v);
    seg_set(&c->t, r, 1);
}

static void lpmf_on_last(void *ctx, int32_t root)
{
    lpmf_t *c = ctx;
    int32_t u = af__sstate_last_toucher(&c->s, root, c->done);
    if (u >= 0 && c->ready[u])
        lpmf_key(c, u);
}

/* Ranks nodes by (bytes defined, input position). */
static int rank_nodes(lpmf_t *c)
{
    const af__smodel_t *m = c->m;
    af__kv_t *k = af__malloc((2 * (size_t)m->n + 1) * sizeof(*k));
    if (!k)
        return AF_ENOMEM;
    /* nodes in input-order position (pos is a permutation), then stably by bytes defined */
    for (int32_t v = 0; v < m->n; v++)
        k[m->pos[v]] = (af__kv_t){m->def[v], v};
    af__sort_kv(k, (size_t)m->n, k + m->n);
    for (int32_t r = 0; r < m->n; r++) {
        int32_t v = k[r].id;
        c->by_rank[r] = v;
        c->rank[v] = r;
        c->sorted_def[r] = m->def[v];
        c->t.pos[r] = m->pos[v];
    }
    af__free(k);
    return 0;
}

static int lpmf_alloc(lpmf_t *c, int32_t n)
{
    int32_t size = 1;
    while (size < n)
        size *= 2;
    c->t.size = size;
    size_t n1 = (size_t)n + 1;
    c->t.best = af__malloc(2 * (size_t)size * sizeof(int32_t));
    c->t.key = af__calloc((size_t)size, sizeof(int64_t));
    c->t.pos = af__calloc((size_t)size, sizeof(int32_t));
    c->rank = af__malloc(n1 * sizeof(int32_t));
    c->by_rank = af__malloc(n1 * sizeof(int32_t));
    c->indeg = af__malloc(n1 * sizeof(int32_t));
    c->sorted_def = af__malloc(n1 * sizeof(uint64_t));
    c->done = af__calloc(n1, 1);
    c->ready = af__calloc(n1, 1);
    if (!c->t.best || !c->t.key || !c->t.pos || !c->rank || !c->by_rank || !c->indeg ||
        !c->sorted_def || !c->done || !c->ready)
        return AF_ENOMEM;
    for (int32_t i = 0; i < 2 * size; i++)
        c->t.best[i] = -1;
    return af__sstate_init(&c->s, c->m);
}

static void lpmf_free(lpmf_t *c)
{
    af__free(c->t.best);
    af__free(c->t.key);
    af__free(c->t.pos);
    af__free(c->rank);
    af__free(c->by_rank);
    af__free(c->indeg);
    af__free(c->sorted_def);
    af__free(c->done);
    af__free(c->ready);
    af__sstate_free(&c->s);
}

static int32_t lpmf_pick(lpmf_t *c, uint64_t peak_so_far)
{
    const af__smodel_t *m = c->m;
    uint64_t room = peak_so_far > c->s.live ? peak_so_far - c->s.live : 0;
    /* number of ranks with def <= room */
    int32_t lo = 0, hi = m->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (c->sorted_def[mid] <= room)
            lo = mid + 1;
        else
            hi = mid;
    }
    int32_t r = seg_prefix(&c->t, lo);
    if (r < 0)
        r = seg_leftmost(&c->t);
    return r < 0 ? -1 : c->by_rank[r];
}

int af__sched_lpmf(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order, af_error_t *err)
{
    (void)o;
    const af_graph_t *g = m->g;
    lpmf_t c;
    memset(&c, 0, sizeof(c));
    c.m = m;
    int rc = lpmf_alloc(&c, m->n);
    if (rc || (rc = rank_nodes(&c)))
        goto out;
    for (int32_t v = 0; v < m->n; v++) {
        c.indeg[v] = af_graph_node(g, v)->n_preds;
        if (c.indeg[v] == 0) {
            c.ready[v] = 1;
            lpmf_key(&c, v);
        }
    }
    uint64_t peak = m->base + m->extra0;
    for (int32_t k = 0; k < m->n; k++) {
        int32_t v = lpmf_pick(&c, peak);
        if (v < 0) {
            rc = AF_EINVAL;
            goto out;
        }
        order[k] = v;
        c.ready[v] = 0;
        c.done[v] = 1;
        seg_set(&c.t, c.rank[v], 0);
        uint64_t during = c.s.live + af__sstate_alloc(&c.s, v);
        if (during > peak)
            peak = during;
        af__sstate_run(&c.s, v, lpmf_on_last, &c);
        const af_node_info_t *nd = af_graph_node(g, v);
        for (int32_t j = 0; j < nd->n_succs; j++) {
            int32_t u = nd->succs[j];
            if (--c.indeg[u] == 0) {
                c.ready[u] = 1;
                lpmf_key(&c, u);
            }
        }
    }
out:
    lpmf_free(&c);
    if (rc == AF_ENOMEM)
        return af__err(err, rc, "out of memory in the lpmf scheduler");
    if (rc)
        return af__err(err, rc, "graph has no topological order");
    return 0;
}
