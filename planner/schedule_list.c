/*
 * List schedulers: a ready set ordered by a priority, the top node runs next (Kahn's algorithm
 * with a priority queue). Members:
 *
 *  seed      the seed's score (seed 1, §1.2/§3.3): alpha * (bytes freed / est. time) + beta *
 *            (b-level / critical path), where bytes freed are the roots whose remaining-toucher
 *            count drops to zero when the node runs, est. time is the node cost relative to the
 *            mean cost, and b-level is the cost-weighted longest path from the node to a sink
 *            (how much of the critical path still hangs on it). With opts->budget set, the
 *            executability check (§2.3): a ready node whose outputs do not fit under the budget
 *            waits; if no candidate among the best 64 fits, the one overshooting least runs.
 *  xla-list  XLA's list scheduler priority: bytes freed - bytes defined.
 *  lpmf      Inductor's least-peak-memory-first: among nodes whose run keeps memory at or below
 *            the peak so far, the one leaving the least memory after it; otherwise the one with
 *            the smallest allocation. O(n log n) with two segment-tree queries per step.
 *  bfs       Kahn's algorithm with a FIFO queue (level order).
 *
 * Ties break on the position in the input order, so every member is deterministic. Scores
 * change only when a root's remaining-toucher count drops to one (its last toucher now frees
 * it): the model's callback re-keys that node if it is ready. Total O((n + touches) log n).
 */
#include "planner/planner_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- indexed max-heap on (key, -pos) ------------------------------------------------------ */

typedef struct heap {
    int32_t *h, *at; /* at[v] = index in h, -1 when absent */
    double *key;
    const int32_t *pos;
    int32_t n;
} heap_t;

static int heap_init(heap_t *q, int32_t n, const int32_t *pos)
{
    q->h = af__malloc(((size_t)n + 1) * sizeof(int32_t));
    q->at = af__malloc(((size_t)n + 1) * sizeof(int32_t));
    q->key = af__malloc(((size_t)n + 1) * sizeof(double));
    q->pos = pos;
    q->n = 0;
    if (!q->h || !q->at || !q->key)
        return AF_ENOMEM;
    for (int32_t i = 0; i < n; i++)
        q->at[i] = -1;
    return 0;
}

static void heap_free(heap_t *q)
{
    af__free(q->h);
    af__free(q->at);
    af__free(q->key);
}

static int before(const heap_t *q, int32_t a, int32_t b)
{
    if (q->key[a] != q->key[b])
        return q->key[a] > q->key[b];
    return q->pos[a] < q->pos[b];
}

static void heap_set(heap_t *q, int32_t i, int32_t v)
{
    q->h[i] = v;
    q->at[v] = i;
}

static void sift_up(heap_t *q, int32_t i)
{
    int32_t v = q->h[i];
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (!before(q, v, q->h[p]))
            break;
        heap_set(q, i, q->h[p]);
        i = p;
    }
    heap_set(q, i, v);
}

static void sift_down(heap_t *q, int32_t i)
{
    int32_t v = q->h[i];
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && before(q, q->h[c + 1], q->h[c]))
            c++;
        if (!before(q, q->h[c], v))
            break;
        heap_set(q, i, q->h[c]);
        i = c;
    }
    heap_set(q, i, v);
}

static void heap_push(heap_t *q, int32_t v, double key)
{
    q->key[v] = key;
    heap_set(q, q->n++, v);
    sift_up(q, q->n - 1);
}

static int32_t heap_pop(heap_t *q)
{
    int32_t v = q->h[0];
    q->at[v] = -1;
    if (--q->n > 0) {
        heap_set(q, 0, q->h[q->n]);
        sift_down(q, 0);
    }
    return v;
}

static void heap_rekey(heap_t *q, int32_t v, double key)
{
    int32_t i = q->at[v];
    if (i < 0)
        return;
    double old = q->key[v];
    q->key[v] = key;
    if (key > old)
        sift_up(q, i);
    else
        sift_down(q, i);
}

/* ---- generic driver ----------------------------------------------------------------------- */

typedef struct list_ctx list_ctx_t;
typedef double (*key_fn)(const list_ctx_t *c, int32_t v);

struct list_ctx {
    const af__smodel_t *m;
    af__sstate_t s;
    heap_t q;
    uint8_t *done;
    int32_t *indeg;
    key_fn key;
    const double *blevel; /* seed */
    double cp, mean_cost, alpha, beta;
};

static void on_last(void *ctx, int32_t r)
{
    list_ctx_t *c = ctx;
    int32_t u = af__sstate_last_toucher(&c->s, r, c->done);
    if (u >= 0 && c->q.at[u] >= 0)
        heap_rekey(&c->q, u, c->key(c, u));
}

/* Executability check: pick the best-scored ready node whose step fits under the budget. */
static int32_t pick_fitting(list_ctx_t *c, uint64_t budget)
{
    enum { MAX_TRIES = 64 };
    int32_t tried[MAX_TRIES], n = 0, pick = -1;
    uint64_t best_need = UINT64_MAX;
    while (c->q.n > 0 && n < MAX_TRIES) {
        int32_t v = heap_pop(&c->q);
        uint64_t need =
            c->s.live + af__sstate_alloc(&c->s, v) + (c->s.steps == 0 ? c->m->extra0 : 0);
        tried[n++] = v;
        if (need <= budget) {
            pick = v;
            break;
        }
        if (need < best_need) {
            best_need = need;
            pick = v;
        }
    }
    for (int32_t i = 0; i < n; i++)
        if (tried[i] != pick)
            heap_push(&c->q, tried[i], c->key(c, tried[i]));
    return pick;
}

static int list_run(list_ctx_t *c, int32_t *order, uint64_t budget)
{
    const af__smodel_t *m = c->m;
    const af_graph_t *g = m->g;
    int rc = AF_ENOMEM;
    c->done = af__calloc((size_t)m->n + 1, 1);
    c->indeg = af__malloc(((size_t)m->n + 1) * sizeof(int32_t));
    if (!c->done || !c->indeg || af__sstate_init(&c->s, m) || heap_init(&c->q, m->n, m->pos))
        goto out;
    const int32_t *io = af_graph_input_order(g);
    for (int32_t k = 0; k < m->n; k++) {
        int32_t v = io[k];
        c->indeg[v] = af_graph_node(g, v)->n_preds;
        if (c->indeg[v] == 0)
            heap_push(&c->q, v, c->key(c, v));
    }
    for (int32_t k = 0; k < m->n; k++) {
        if (c->q.n == 0) { /* cannot happen on a finalized (acyclic) graph */
            rc = AF_EINVAL;
            goto out;
        }
        int32_t v = budget ? pick_fitting(c, budget) : heap_pop(&c->q);
        order[k] = v;
        c->done[v] = 1;
        af__sstate_run(&c->s, v, on_last, c);
        const af_node_info_t *nd = af_graph_node(g, v);
        for (int32_t j = 0; j < nd->n_succs; j++) {
            int32_t u = nd->succs[j];
            if (--c->indeg[u] == 0)
                heap_push(&c->q, u, c->key(c, u));
        }
    }
    rc = 0;
out:
    heap_free(&c->q);
    af__sstate_free(&c->s);
    af__free(c->done);
    af__free(c->indeg);
    return rc;
}

static int list_schedule(const af__smodel_t *m, key_fn key, list_ctx_t *c, int32_t *order,
                         uint64_t budget, af_error_t *err)
{
    c->m = m;
    c->key = key;
    int rc = list_run(c, order, budget);
    if (rc == AF_ENOMEM)
        return af__err(err, rc, "out of memory in the list scheduler");
    if (rc)
        return af__err(err, rc, "graph has no topological order");
    return 0;
}

/* ---- seed --------------------------------------------------------------------------------- */

static double node_cost(const af_graph_t *g, int32_t v, double mean)
{
    double c = af_graph_node(g, v)->cost;
    return c > 0 ? c : mean;
}

static double seed_key(const list_ctx_t *c, int32_t v)
{
    double freed = (double)af__sstate_freed(&c->s, v);
    double maxs = c->m->max_size ? (double)c->m->max_size : 1.0;
    double t = node_cost(c->m->g, v, c->mean_cost) / c->mean_cost;
    return c->alpha * (freed / maxs) / t + c->beta * (c->blevel[v] / c->cp);
}

int af__sched_seed(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order, af_error_t *err)
{
    const af_graph_t *g = m->g;
    list_ctx_t c;
    memset(&c, 0, sizeof(c));
    double *bl = af__calloc((size_t)m->n + 1, sizeof(double));
    if (!bl)
        return af__err(err, AF_ENOMEM, "out of memory in the seed scheduler");
    double sum = 0;
    int32_t known = 0;
    for (int32_t v = 0; v < m->n; v++) {
        double cv = af_graph_node(g, v)->cost;
        if (cv > 0) {
            sum += cv;
            known++;
        }
    }
    c.mean_cost = known ? sum / known : 1.0;
    /* b-level in reverse input order (a topological order). */
    const int32_t *io = af_graph_input_order(g);
    for (int32_t k = m->n; k-- > 0;) {
        int32_t v = io[k];
        const af_node_info_t *nd = af_graph_node(g, v);
        double best = 0;
        for (int32_t j = 0; j < nd->n_succs; j++)
            if (bl[nd->succs[j]] > best)
                best = bl[nd->succs[j]];
        bl[v] = best + node_cost(g, v, c.mean_cost);
        if (bl[v] > c.cp)
            c.cp = bl[v];
    }
    if (c.cp <= 0)
        c.cp = 1;
    c.blevel = bl;
    c.alpha = o->alpha;
    c.beta = o->beta;
    int rc = list_schedule(m, seed_key, &c, order, o->budget, err);
    af__free(bl);
    return rc;
}

/* ---- xla-list ----------------------------------------------------------------------------- */

static double xla_key(const list_ctx_t *c, int32_t v)
{
    return (double)af__sstate_freed(&c->s, v) - (double)c->m->def[v];
}

int af__sched_xla_list(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order,
                       af_error_t *err)
{
    (void)o;
    list_ctx_t c;
    memset(&c, 0, sizeof(c));
    return list_schedule(m, xla_key, &c, order, 0, err);
}

/* ---- bfs ---------------------------------------------------------------------------------- */

int af__sched_bfs(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order, af_error_t *err)
{
    (void)o;
    const af_graph_t *g = m->g;
    int32_t *indeg = af__malloc(((size_t)m->n + 1) * sizeof(int32_t));
    if (!indeg)
        return af__err(err, AF_ENOMEM, "out of memory in the bfs scheduler");
    const int32_t *io = af_graph_input_order(g);
    int32_t head = 0, tail = 0;
    for (int32_t k = 0; k < m->n; k++) {
        int32_t v = io[k];
        indeg[v] = af_graph_node(g, v)->n_preds;
        if (indeg[v] == 0)
            order[tail++] = v;
    }
    while (head < tail) {
        const af_node_info_t *nd = af_graph_node(g, order[head++]);
        for (int32_t j = 0; j < nd->n_succs; j++)
            if (--indeg[nd->succs[j]] == 0)
                order[tail++] = nd->succs[j];
    }
    af__free(indeg);
    if (tail != m->n)
        return af__err(err, AF_EINVAL, "graph has no topological order");
    return 0;
}
