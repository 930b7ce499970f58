/*
 * Depth-first schedulers.
 *
 *  dfs  XLA's DFSMemoryScheduler: a post-order DFS from the sinks (in input order) that visits
 *       a node's operands in the order (extra users desc, cumulative bytes desc, input position
 *       asc). extra_users(v) = max(users - 1, 0) + sum over operands, total_bytes(v) = bytes
 *       defined + sum over operands (both saturating, as in XLA, so shared subgraphs are
 *       over-counted). Finishing a heavy operand subtree first lets its buffers die early.
 *  rpo  Reverse post-order of a DFS along successors from the sources: a topological order
 *       that keeps chains together.
 *
 * Both are iterative (explicit stack) so million-node chains do not overflow the C stack.
 * O(n + edges log degree).
 */
#include "planner/planner_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct dfs_key {
    double extra, total;
    int32_t pos, v;
} dfs_key_t;

static int cmp_operand(const void *a, const void *b)
{
    const dfs_key_t *x = a, *y = b;
    if (x->extra != y->extra)
        return x->extra > y->extra ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return x->pos - y->pos;
}

typedef struct frame {
    int32_t v, next;
} frame_t;

/* Post-order DFS over `adj` (CSR), starting from `starts`; writes post-order into out. */
static int32_t dfs_post(int32_t n, const int32_t *off, const int32_t *adj, const int32_t *starts,
                        int32_t n_starts, uint8_t *seen, frame_t *stack, int32_t *out)
{
    int32_t k = 0;
    for (int32_t i = 0; i < n_starts; i++) {
        int32_t s = starts[i];
        if (seen[s])
            continue;
        int32_t sp = 0;
        stack[sp++] = (frame_t){s, off[s]};
        seen[s] = 1;
        while (sp > 0) {
            frame_t *f = &stack[sp - 1];
            if (f->next < off[f->v + 1]) {
                int32_t u = adj[f->next++];
                if (!seen[u]) {
                    seen[u] = 1;
                    stack[sp++] = (frame_t){u, off[u]};
                }
            } else {
                out[k++] = f->v;
                sp--;
            }
        }
    }
    (void)n;
    return k;
}

typedef struct dfs_work {
    int32_t *off, *adj, *starts;
    uint8_t *seen;
    frame_t *stack;
} dfs_work_t;

static int work_alloc(dfs_work_t *w, int32_t n, size_t edges)
{
    size_t n1 = (size_t)n + 1;
    w->off = af__calloc(n1 + 1, sizeof(int32_t));
    w->adj = af__malloc((edges ? edges : 1) * sizeof(int32_t));
    w->starts = af__malloc(n1 * sizeof(int32_t));
    w->seen = af__calloc(n1, 1);
    w->stack = af__malloc(n1 * sizeof(frame_t));
    return (w->off && w->adj && w->starts && w->seen && w->stack) ? 0 : AF_ENOMEM;
}

static void work_free(dfs_work_t *w)
{
    af__free(w->off);
    af__free(w->adj);
    af__free(w->starts);
    af__free(w->seen);
    af__free(w->stack);
}

static size_t edge_count(const af_graph_t *g, int32_t n)
{
    size_t e = 0;
    for (int32_t v = 0; v < n; v++)
        e += (size_t)af_graph_node(g, v)->n_preds;
    return e;
}

/* extra_users / total bytes per node, in input order (topological). */
static void xla_weights(const af__smodel_t *m, double *extra, double *total)
{
    const af_graph_t *g = m->g;
    const int32_t *io = af_graph_input_order(g);
    const double cap = 1e300;
    for (int32_t k = 0; k < m->n; k++) {
        int32_t v = io[k];
        const af_node_info_t *nd = af_graph_node(g, v);
        double e = nd->n_succs > 0 ? nd->n_succs - 1 : 0, t = (double)m->def[v];
        for (int32_t j = 0; j < nd->n_preds; j++) {
            e += extra[nd->preds[j]];
            t += total[nd->preds[j]];
        }
        extra[v] = e < cap ? e : cap;
        total[v] = t < cap ? t : cap;
    }
}

int af__sched_dfs(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order, af_error_t *err)
{
    (void)o;
    const af_graph_t *g = m->g;
    size_t edges = edge_count(g, m->n);
    dfs_work_t w;
    memset(&w, 0, sizeof(w));
    double *extra = af__calloc((size_t)m->n + 1, sizeof(double));
    double *total = af__calloc((size_t)m->n + 1, sizeof(double));
    dfs_key_t *keys = af__malloc(((size_t)edges + 1) * sizeof(dfs_key_t));
    int rc = AF_ENOMEM;
    if (!extra || !total || !keys || work_alloc(&w, m->n, edges))
        goto out;
    xla_weights(m, extra, total);
    /* operand lists sorted by XLA's visit order */
    int32_t k = 0;
    for (int32_t v = 0; v < m->n; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        w.off[v] = k;
        for (int32_t j = 0; j < nd->n_preds; j++) {
            int32_t p = nd->preds[j];
            keys[j] = (dfs_key_t){extra[p], total[p], m->pos[p], p};
        }
        qsort(keys, (size_t)nd->n_preds, sizeof(*keys), cmp_operand);
        for (int32_t j = 0; j < nd->n_preds; j++)
            w.adj[k++] = keys[j].v;
    }
    w.off[m->n] = k;
    const int32_t *io = af_graph_input_order(g);
    int32_t ns = 0;
    for (int32_t i = 0; i < m->n; i++)
        if (af_graph_node(g, io[i])->n_succs == 0)
            w.starts[ns++] = io[i];
    int32_t got = dfs_post(m->n, w.off, w.adj, w.starts, ns, w.seen, w.stack, order);
    rc = got == m->n ? 0 : AF_EINVAL;
out:
    work_free(&w);
    af__free(extra);
    af__free(total);
    af__free(keys);
    if (rc == AF_ENOMEM)
        return af__err(err, rc, "out of memory in the dfs scheduler");
    if (rc)
        return af__err(err, rc, "graph has no topological order");
    return 0;
}

int af__sched_rpo(const af__smodel_t *m, const af_plan_opts_t *o, int32_t *order, af_error_t *err)
{
    (void)o;
    const af_graph_t *g = m->g;
    size_t edges = edge_count(g, m->n);
    dfs_work_t w;
    memset(&w, 0, sizeof(w));
    int32_t *post = af__malloc(((size_t)m->n + 1) * sizeof(int32_t));
    int rc = AF_ENOMEM;
    if (!post || work_alloc(&w, m->n, edges))
        goto out;
    int32_t k = 0;
    for (int32_t v = 0; v < m->n; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        w.off[v] = k;
        /* successors pushed in reverse so the first successor's chain ends up first */
        for (int32_t j = nd->n_succs; j-- > 0;)
            w.adj[k++] = nd->succs[j];
    }
    w.off[m->n] = k;
    const int32_t *io = af_graph_input_order(g);
    int32_t ns = 0;
    for (int32_t i = m->n; i-- > 0;)
        if (af_graph_node(g, io[i])->n_preds == 0)
            w.starts[ns++] = io[i];
    int32_t got = dfs_post(m->n, w.off, w.adj, w.starts, ns, w.seen, w.stack, post);
    rc = got == m->n ? 0 : AF_EINVAL;
    for (int32_t i = 0; i < got; i++)
        order[i] = post[got - 1 - i];
out:
    work_free(&w);
    af__free(post);
    if (rc == AF_ENOMEM)
        return af__err(err, rc, "out of memory in the rpo scheduler");
    if (rc)
        return af__err(err, rc, "graph has no topological order");
    return 0;
}
