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
#include "planner/planner_int.h"

#include <stdlib.h>
#include <string.h>

/* A tree node: the ready leaf (rank) with the smallest (key, position) below it, rank -1 when
 * none. The key and position live in the node, so a comparison reads the two children (one
 * cache line) rather than two ranks' records. */
typedef struct snode {
    int64_t key;  /* a - f of that leaf */
    int32_t pos;  /* its input-order position (tie-break) */
    int32_t rank; /* -1: no ready leaf below */
} snode_t;

typedef struct seg {
    int32_t size; /* leaves, a power of two */
    snode_t *nd;  /* 2 * size nodes: root 1, leaf of rank r at size + r */
    int32_t *pos; /* per rank: input-order position */
} seg_t;

static const snode_t none = {0, 0, -1};

static int better(const snode_t *a, const snode_t *b)
{
    if (a->rank < 0)
        return 0;
    if (b->rank < 0)
        return 1;
    if (a->key != b->key)
        return a->key < b->key;
    return a->pos < b->pos;
}

/* Sets leaf `rank` (ready with key, or not ready) and repairs its ancestors up to the first one
 * whose content does not change: the nodes above it see the same children as before. */
static void seg_set(seg_t *t, int32_t rank, int ready, int64_t key)
{
    int32_t i = rank + t->size;
    t->nd[i] = ready ? (snode_t){key, t->pos[rank], rank} : none;
    for (i /= 2; i >= 1; i /= 2) {
        const snode_t *a = &t->nd[2 * i], *b = &t->nd[2 * i + 1], *m = better(a, b) ? a : b;
        snode_t *x = &t->nd[i];
        if (x->rank == m->rank && x->key == m->key && x->pos == m->pos)
            break;
        *x = *m;
    }
}

/* Best ready rank in [0, hi), or -1. */
static int32_t seg_prefix(const seg_t *t, int32_t hi)
{
    const snode_t *res = &none;
    int32_t lo = t->size, h = hi + t->size;
    while (lo < h) {
        if (lo & 1) {
            if (better(&t->nd[lo], res))
                res = &t->nd[lo];
            lo++;
        }
        if (h & 1) {
            h--;
            if (better(&t->nd[h], res))
                res = &t->nd[h];
        }
        lo /= 2;
        h /= 2;
    }
    return res->rank;
}

/* Leftmost ready rank (smallest allocation), or -1. */
static int32_t seg_leftmost(const seg_t *t)
{
    if (t->nd[1].rank < 0)
        return -1;
    int32_t i = 1;
    while (i < t->size)
        i = t->nd[2 * i].rank >= 0 ? 2 * i : 2 * i + 1;
    return i - t->size;
}

/*
 * The ready set is usually small (a frontier of a few to a few dozen nodes), and then a scan of
 * a plain list beats a tree walk of log n cache misses per update. The list is always kept;
 * the tree (and the ranking it needs) is built the first time more than LIST_MAX nodes are
 * ready and filled and emptied as the ready set crosses LIST_MAX and LIST_MIN. Both give the
 * same choice: the rule is a strict order on (key, position) and (bytes defined, position).
 */
#define LIST_MAX 48
#define LIST_MIN 12

typedef struct lpmf {
    const af__smodel_t *m;
    af__sstate_t s;
    seg_t t;
    int tree;                /* the tree holds the ready set (else only the list does) */
    int ranked;              /* rank, by_rank, sorted_def and the tree are allocated */
    int32_t *rank, *by_rank; /* tree only */
    uint64_t *sorted_def;    /* tree only */
    int32_t *indeg;
    int32_t *soff, *succ;    /* successors as CSR: the node records are big and cold */
    int64_t *key;            /* per node: a - f, valid while ready */
    int32_t *list, *list_at; /* the ready nodes (any order), and each one's index there */
    int32_t n_ready;
    uint8_t *done, *ready;
} lpmf_t;

/* ready[v]: READY, plus STALE while v's key has not been computed since it may have changed.
 * Keys are only compared when a choice is to be made: in list mode a key goes stale instead of
 * being recomputed, and the stale ones are recomputed when two or more nodes are ready (a
 * single ready node is taken whatever its key) or when the tree takes the ready set. A key is
 * def - freed under the current state however it is reached, so the choices are the same. */
enum { READY = 1, STALE = 2 };

static void lpmf_key(lpmf_t *c, int32_t v)
{
    c->key[v] = (int64_t)c->m->def[v] - (int64_t)af__sstate_freed(&c->s, v);
    c->ready[v] = READY;
    if (c->tree)
        seg_set(&c->t, c->rank[v], 1, c->key[v]);
}

/* Recomputes the stale keys of the ready nodes (list mode). */
static void refresh_keys(lpmf_t *c)
{
    for (int32_t i = 0; i < c->n_ready; i++)
        if (c->ready[c->list[i]] & STALE)
            lpmf_key(c, c->list[i]);
}

/* The freed bytes of root's last toucher changed. With at most one node ready that toucher, if
 * ready, is that node: it goes stale without a search for the toucher. */
static void lpmf_on_last(void *ctx, int32_t root)
{
    lpmf_t *c = ctx;
    if (!c->tree && c->n_ready <= 1) {
        if (c->n_ready)
            c->ready[c->list[0]] |= STALE;
        return;
    }
    int32_t u = af__sstate_last_toucher(&c->s, root, c->done);
    if (u >= 0 && c->ready[u])
        lpmf_key(c, u);
}

static void ready_add(lpmf_t *c, int32_t v)
{
    c->ready[v] = READY | STALE;
    c->list_at[v] = c->n_ready;
    c->list[c->n_ready++] = v;
    if (c->tree)
        lpmf_key(c, v);
}

static void ready_del(lpmf_t *c, int32_t v)
{
    int32_t i = c->list_at[v], last = c->list[--c->n_ready];
    c->list[i] = last;
    c->list_at[last] = i;
    c->ready[v] = 0;
    if (c->tree)
        seg_set(&c->t, c->rank[v], 0, 0);
}

/* Ranks nodes by (bytes defined, input position) and allocates the tree, all leaves empty. */
static int rank_nodes(lpmf_t *c)
{
    const af__smodel_t *m = c->m;
    int32_t size = 1;
    while (size < m->n)
        size *= 2;
    size_t n1 = (size_t)m->n + 1;
    c->t.size = size;
    c->t.nd = af__malloc(2 * (size_t)size * sizeof(snode_t));
    c->t.pos = af__calloc((size_t)size, sizeof(int32_t));
    c->rank = af__malloc(n1 * sizeof(int32_t));
    c->by_rank = af__malloc(n1 * sizeof(int32_t));
    c->sorted_def = af__malloc(n1 * sizeof(uint64_t));
    af__kv_t *k = af__malloc((2 * (size_t)m->n + 1) * sizeof(*k));
    c->ranked = 1; /* lpmf_free releases whatever was allocated */
    if (!c->t.nd || !c->t.pos || !c->rank || !c->by_rank || !c->sorted_def || !k) {
        af__free(k);
        return AF_ENOMEM;
    }
    for (int32_t i = 0; i < 2 * size; i++)
        c->t.nd[i] = none;
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

/* Moves the ready set into the tree when it grew past LIST_MAX, out of it below LIST_MIN. */
static int set_mode(lpmf_t *c)
{
    if (!c->tree && c->n_ready > LIST_MAX) {
        if (!c->ranked && rank_nodes(c))
            return AF_ENOMEM;
        refresh_keys(c);
        c->tree = 1;
        for (int32_t i = 0; i < c->n_ready; i++)
            seg_set(&c->t, c->rank[c->list[i]], 1, c->key[c->list[i]]);
    } else if (c->tree && c->n_ready < LIST_MIN) {
        c->tree = 0;
        for (int32_t i = 0; i < c->n_ready; i++)
            seg_set(&c->t, c->rank[c->list[i]], 0, 0);
    }
    return 0;
}

static int lpmf_alloc(lpmf_t *c, int32_t n)
{
    size_t n1 = (size_t)n + 1;
    c->indeg = af__malloc(n1 * sizeof(int32_t));
    c->soff = af__malloc((n1 + 1) * sizeof(int32_t));
    c->key = af__malloc(n1 * sizeof(int64_t));
    c->list = af__malloc(n1 * sizeof(int32_t));
    c->list_at = af__malloc(n1 * sizeof(int32_t));
    c->done = af__calloc(n1, 1);
    c->ready = af__calloc(n1, 1);
    if (!c->indeg || !c->soff || !c->key || !c->list || !c->list_at || !c->done || !c->ready)
        return AF_ENOMEM;
    const af_graph_t *g = c->m->g;
    c->soff[0] = 0;
    for (int32_t v = 0; v < n; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        c->indeg[v] = nd->n_preds;
        c->soff[v + 1] = c->soff[v] + nd->n_succs;
    }
    if (!(c->succ = af__malloc(((size_t)c->soff[n] + 1) * sizeof(int32_t))))
        return AF_ENOMEM;
    for (int32_t v = 0; v < n; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        memcpy(c->succ + c->soff[v], nd->succs, (size_t)nd->n_succs * sizeof(int32_t));
    }
    return af__sstate_init(&c->s, c->m);
}

static void lpmf_free(lpmf_t *c)
{
    af__free(c->t.nd);
    af__free(c->t.pos);
    af__free(c->rank);
    af__free(c->by_rank);
    af__free(c->sorted_def);
    af__free(c->indeg);
    af__free(c->soff);
    af__free(c->succ);
    af__free(c->key);
    af__free(c->list);
    af__free(c->list_at);
    af__free(c->done);
    af__free(c->ready);
    af__sstate_free(&c->s);
}

/* List mode: the lowest (key, position) among ready nodes defining at most `room` bytes, else
 * the lowest (bytes defined, position) — the tree's prefix minimum and leftmost leaf. */
static int32_t list_pick(const lpmf_t *c, uint64_t room)
{
    const af__smodel_t *m = c->m;
    int32_t best = -1, left = -1;
    for (int32_t i = 0; i < c->n_ready; i++) {
        int32_t v = c->list[i];
        if (m->def[v] <= room && (best < 0 || c->key[v] < c->key[best] ||
                                  (c->key[v] == c->key[best] && m->pos[v] < m->pos[best])))
            best = v;
        if (left < 0 || m->def[v] < m->def[left] ||
            (m->def[v] == m->def[left] && m->pos[v] < m->pos[left]))
            left = v;
    }
    return best >= 0 ? best : left;
}

static int32_t lpmf_pick(lpmf_t *c, uint64_t peak_so_far)
{
    const af__smodel_t *m = c->m;
    uint64_t room = peak_so_far > c->s.live ? peak_so_far - c->s.live : 0;
    if (!c->tree && c->n_ready == 1)
        return c->list[0]; /* the only choice, whatever its key */
    if (!c->tree) {
        refresh_keys(c);
        return list_pick(c, room);
    }
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
    uint64_t peak, area;
    return af__sched_lpmf_peak(m, o, order, &peak, &area, err);
}

/* The peak and area come from the simulation the scheduler runs anyway: every node goes
 * through af__sstate_run in order, as in af__smodel_peak, whose peak is the largest of the
 * steps' live bytes (at least base + extra0, the state's starting peak, on a non-empty graph). */
int af__sched_lpmf_peak(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order,
                        uint64_t *peak_out, uint64_t *area_out, af_error_t *err)
{
    (void)o;
    lpmf_t c;
    memset(&c, 0, sizeof(c));
    c.m = m;
    int rc = lpmf_alloc(&c, m->n);
    if (rc)
        goto out;
    for (int32_t v = 0; v < m->n; v++)
        if (c.indeg[v] == 0)
            ready_add(&c, v);
    uint64_t peak = m->base + m->extra0;
    for (int32_t k = 0; k < m->n; k++) {
        if ((rc = set_mode(&c)))
            goto out;
        int32_t v = lpmf_pick(&c, peak);
        if (v < 0) {
            rc = AF_EINVAL;
            goto out;
        }
        order[k] = v;
        ready_del(&c, v);
        c.done[v] = 1;
        uint64_t during = c.s.live + af__sstate_alloc(&c.s, v);
        if (during > peak)
            peak = during;
        af__sstate_run(&c.s, v, lpmf_on_last, &c);
        for (int32_t j = c.soff[v]; j < c.soff[v + 1]; j++) {
            int32_t u = c.succ[j];
            if (--c.indeg[u] == 0)
                ready_add(&c, u);
        }
    }
    *peak_out = m->n ? c.s.peak : 0;
    *area_out = c.s.area;
out:
    lpmf_free(&c);
    if (rc == AF_ENOMEM)
        return af__err(err, rc, "out of memory in the lpmf scheduler");
    if (rc)
        return af__err(err, rc, "graph has no topological order");
    return 0;
}
