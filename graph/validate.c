/*
 * af_graph_finalize(): name resolution, validation and the derived tables.
 *
 * Order of checks (each failure names the culprit and leaves the graph unfinalized):
 *   1. alias names resolve, alias chains end (no alias cycle), views fit inside their base;
 *   2. node input/output names resolve to declared tensors, and
 *   3. each tensor has at most one producer; inputs and constants have none (2, 3 and 5 are
 *      checked node by node, in one pass);
 *   4. every tensor that is read or is a graph output has a producer, or is an input or
 *      constant (an alias without a producer is fed by its base, so the base must be);
 *   5. in-place hints point at existing inputs/outputs;
 *   6. node-level edges have no cycle (Kahn; a leftover cycle is walked and printed).
 * Tables are built into one pool (preds, consumers, succs) so destroy is one free; one pass
 * over the nodes finds the preds and counts every tensor's readers.
 */
#include "graph/graph_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int resolve_aliases(af_graph_t *g, af_error_t *err)
{
    size_t n = g->n_tensors;
    for (size_t i = 0; i < n; i++) {
        if (!g->alias_names[i])
            continue;
        int32_t b = af_graph_find_tensor(g, g->alias_names[i]);
        if (b < 0)
            return af__err(err, AF_ENOENT, "tensor '%s' is an alias of unknown tensor '%s'",
                           g->tensors[i].name, g->alias_names[i]);
        if ((size_t)b == i)
            return af__err(err, AF_ECYCLE, "tensor '%s' is an alias of itself", g->tensors[i].name);
        g->tensors[i].alias_of = b;
    }
    g->alias_root = af__malloc((n ? n : 1) * sizeof(*g->alias_root));
    g->alias_root_off = af__malloc((n ? n : 1) * sizeof(*g->alias_root_off));
    if (!g->alias_root || !g->alias_root_off)
        return af__err(err, AF_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        int32_t t = (int32_t)i;
        int64_t off = 0;
        size_t steps = 0;
        while (g->tensors[t].alias_of >= 0) {
            if (__builtin_add_overflow(off, g->tensors[t].alias_offset, &off))
                return af__err(err, AF_ESIZE, "alias chain of '%s' overflows its offset",
                               g->tensors[i].name);
            t = g->tensors[t].alias_of;
            if (++steps > n)
                return af__err(err, AF_ECYCLE, "alias chain of tensor '%s' loops",
                               g->tensors[i].name);
        }
        g->alias_root[i] = t;
        g->alias_root_off[i] = off;
        const af_tensor_info_t *a = &g->tensors[i];
        if (a->alias_of < 0)
            continue;
        const af_tensor_info_t *b = &g->tensors[a->alias_of];
        if (a->bytes >= 0 && b->bytes >= 0 &&
            (a->alias_offset > b->bytes || a->bytes > b->bytes - a->alias_offset))
            return af__err(err, AF_ESIZE,
                           "alias '%s' (offset %lld, %lld bytes) does not fit in its base '%s' "
                           "(%lld bytes)",
                           a->name, (long long)a->alias_offset, (long long)a->bytes, b->name,
                           (long long)b->bytes);
    }
    return 0;
}

/* Node i becomes the producer of its outputs (check 3). */
static int claim_outputs(af_graph_t *g, int32_t i, af_error_t *err)
{
    const af_node_info_t *nd = &g->nodes[i];
    for (int32_t j = 0; j < nd->n_outputs; j++) {
        af_tensor_info_t *t = &g->tensors[nd->outputs[j]];
        if (t->producer >= 0)
            return af__err(err, AF_EPRODUCED, "tensor '%s' is produced by both '%s' and '%s'",
                           t->name, g->nodes[t->producer].name, nd->name);
        if (t->kind == AF_TENSOR_INPUT || t->kind == AF_TENSOR_CONSTANT)
            return af__err(err, AF_EPRODUCED,
                           "tensor '%s' is a graph %s but node '%s' "
                           "produces it",
                           t->name, t->kind == AF_TENSOR_INPUT ? "input" : "constant", nd->name);
        t->producer = i;
    }
    return 0;
}

static int resolve_names(af_graph_t *g, af_error_t *err)
{
    size_t u = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        af_node_info_t *nd = &g->nodes[i];
        size_t first = g->io_first[i], end = first + (size_t)nd->n_inputs + (size_t)nd->n_outputs;
        nd->inputs = g->io + first;
        nd->outputs = g->io + first + nd->n_inputs;
        for (; u < g->n_unresolved && g->unresolved[u].at < end; u++) {
            const af__unresolved_t *r = &g->unresolved[u];
            int32_t id = af_graph_find_tensor(g, r->name);
            if (id < 0)
                return af__err(err, AF_ENOENT, "node '%s': %s '%s' is not a declared tensor",
                               nd->name, r->at < first + (size_t)nd->n_inputs ? "input" : "output",
                               r->name);
            g->io[r->at] = id;
        }
        int rc = claim_outputs(g, (int32_t)i, err);
        if (rc)
            return rc;
        for (int32_t k = 0; k < nd->n_inplace; k++) {
            const af_inplace_t *h = &nd->inplace[k];
            if (h->output < 0 || h->output >= nd->n_outputs || h->input < 0 ||
                h->input >= nd->n_inputs)
                return af__err(err, AF_EINVAL,
                               "node '%s': in-place hint %d (output %d over input %d) is out of "
                               "range",
                               nd->name, k, h->output, h->input);
        }
    }
    return 0;
}

/* Producer a reader of tensor t waits for: its own, else (for a view) its base's. */
static int32_t effective_producer(const af_graph_t *g, int32_t t)
{
    while (g->tensors[t].producer < 0 && g->tensors[t].alias_of >= 0)
        t = g->tensors[t].alias_of;
    return g->tensors[t].producer;
}

/* Distinct preds of node i (ascending) at pool, with the distinct-reader counts of its inputs
 * (cnt[t]) and the successor counts of its preds (cnt[nt + p]) bumped. Returns how many preds,
 * or -1 (AF_ECYCLE in err) when the node reads its own output. */
static int32_t node_preds(af_graph_t *g, int32_t i, int32_t *pool, int32_t *tmark, int32_t *nmark,
                          int32_t *cnt, af_error_t *err)
{
    af_node_info_t *nd = &g->nodes[i];
    int32_t n = 0;
    nd->preds = pool;
    for (int32_t j = 0; j < nd->n_inputs; j++) {
        int32_t t = nd->inputs[j];
        if (tmark[t] != i) {
            tmark[t] = i;
            cnt[t]++;
        }
        int32_t p = effective_producer(g, t);
        if (p == i) {
            af__err(err, AF_ECYCLE, "cycle: node '%s' reads its own output '%s'", nd->name,
                    g->tensors[t].name);
            return -1;
        }
        if (p < 0 || nmark[p] == i)
            continue;
        nmark[p] = i;
        int32_t k = n++; /* insertion keeps the list sorted */
        while (k > 0 && pool[k - 1] > p) {
            pool[k] = pool[k - 1];
            k--;
        }
        pool[k] = p;
        cnt[g->n_tensors + (size_t)p]++;
    }
    nd->n_preds = n;
    return n;
}

/* Preds and per-tensor reader counts in one pass over the nodes, then consumers and succs. */
static int build_edges(af_graph_t *g, af_error_t *err)
{
    size_t nn = g->n_nodes, nt = g->n_tensors, total_in = 0;
    for (size_t i = 0; i < nn; i++)
        total_in += (size_t)g->nodes[i].n_inputs;
    g->edge_pool = af__malloc((3 * total_in + 1) * sizeof(int32_t));
    int32_t *mark = af__malloc((nn + nt + 1) * sizeof(int32_t));
    int32_t *cnt = af__calloc(nt + nn + 1, sizeof(int32_t));
    if (!g->edge_pool || !mark || !cnt) {
        af__free(mark);
        af__free(cnt);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    int32_t *pool = g->edge_pool, *tmark = mark, *nmark = mark + nt;
    size_t used = 0;
    int rc = 0;
    memset(mark, 0xff, (nn + nt) * sizeof(int32_t));
    for (size_t i = 0; i < nn && !rc; i++) {
        int32_t k = node_preds(g, (int32_t)i, pool + used, tmark, nmark, cnt, err);
        if (k < 0)
            rc = AF_ECYCLE;
        else
            used += (size_t)k;
    }
    if (!rc) {
        /* Consumers (distinct nodes per tensor, ascending: nodes in increasing order). */
        for (size_t t = 0; t < nt; t++) {
            g->tensors[t].consumers = pool + used;
            g->tensors[t].n_consumers = 0;
            used += (size_t)cnt[t];
        }
        memset(tmark, 0xff, nt * sizeof(int32_t));
        for (size_t i = 0; i < nn; i++)
            for (int32_t j = 0; j < g->nodes[i].n_inputs; j++) {
                int32_t id = g->nodes[i].inputs[j];
                af_tensor_info_t *t = &g->tensors[id];
                if (tmark[id] != (int32_t)i) {
                    tmark[id] = (int32_t)i;
                    ((int32_t *)t->consumers)[t->n_consumers++] = (int32_t)i;
                }
            }
        /* Successors: transpose of preds; iterating i ascending keeps them sorted. */
        for (size_t i = 0; i < nn; i++) {
            g->nodes[i].succs = pool + used;
            g->nodes[i].n_succs = 0;
            used += (size_t)cnt[nt + i];
        }
        for (size_t i = 0; i < nn; i++)
            for (int32_t k = 0; k < g->nodes[i].n_preds; k++) {
                af_node_info_t *p = &g->nodes[g->nodes[i].preds[k]];
                ((int32_t *)p->succs)[p->n_succs++] = (int32_t)i;
            }
    }
    af__free(mark);
    af__free(cnt);
    return rc;
}

/* Min-heap of node ids for Kahn's stable order (also the ONNX importer's node order). */
void af__graph_heap_push(int32_t *h, size_t *n, int32_t v)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

int32_t af__graph_heap_pop(int32_t *h, size_t *n)
{
    int32_t top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= last)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}

static int report_cycle(af_graph_t *g, const int32_t *indeg, af_error_t *err)
{
    /* Every leftover node has a leftover predecessor: walk back until a node repeats. */
    size_t nn = g->n_nodes;
    int32_t start = -1;
    for (size_t i = 0; i < nn && start < 0; i++)
        if (indeg[i] > 0)
            start = (int32_t)i;
    int32_t *seen = af__malloc(nn * sizeof(int32_t));
    if (!seen)
        return af__err(err, AF_ECYCLE, "graph has a cycle through node '%s'", g->nodes[start].name);
    memset(seen, 0xff, nn * sizeof(int32_t));
    int32_t v = start, step = 0;
    while (seen[v] < 0) {
        seen[v] = step++;
        const af_node_info_t *nd = &g->nodes[v];
        int32_t next = -1;
        for (int32_t k = 0; k < nd->n_preds && next < 0; k++)
            if (indeg[nd->preds[k]] > 0)
                next = nd->preds[k];
        v = next;
    }
    /* v is on the cycle; walk it again to print it in data-flow order. */
    char buf[400];
    size_t len = 0;
    int32_t cyc[16], nc = 0, u = v;
    do {
        if (nc < 16)
            cyc[nc] = u;
        nc++;
        const af_node_info_t *nd = &g->nodes[u];
        int32_t next = -1;
        for (int32_t k = 0; k < nd->n_preds && next < 0; k++)
            if (indeg[nd->preds[k]] > 0 && seen[nd->preds[k]] >= 0)
                next = nd->preds[k];
        u = next;
    } while (u != v && u >= 0 && nc < 1000000);
    buf[0] = '\0';
    int shown = nc < 16 ? nc : 16;
    for (int i = shown - 1; i >= 0 && len + 4 < sizeof(buf); i--)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "'%s' -> ", g->nodes[cyc[i]].name);
    if (len < sizeof(buf))
        snprintf(buf + len, sizeof(buf) - len, "%s'%s'", nc > 16 ? "... -> " : "",
                 g->nodes[cyc[shown - 1]].name);
    af__free(seen);
    return af__err(err, AF_ECYCLE, "graph has a cycle: %s", buf);
}

static int build_input_order(af_graph_t *g, af_error_t *err)
{
    size_t nn = g->n_nodes;
    g->input_order = af__malloc((nn ? nn : 1) * sizeof(int32_t));
    if (!g->input_order)
        return af__err(err, AF_ENOMEM, "out of memory");
    int sorted = 1;
    for (size_t i = 0; i < nn && sorted; i++)
        for (int32_t k = 0; k < g->nodes[i].n_preds; k++)
            if (g->nodes[i].preds[k] >= (int32_t)i) {
                sorted = 0;
                break;
            }
    if (sorted) {
        for (size_t i = 0; i < nn; i++)
            g->input_order[i] = (int32_t)i;
        return 0;
    }
    int32_t *indeg = af__malloc((nn + 1) * sizeof(int32_t));
    int32_t *heap = af__malloc((nn + 1) * sizeof(int32_t));
    if (!indeg || !heap) {
        af__free(indeg);
        af__free(heap);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    size_t hn = 0, out = 0;
    for (size_t i = 0; i < nn; i++) {
        indeg[i] = g->nodes[i].n_preds;
        if (!indeg[i])
            af__graph_heap_push(heap, &hn, (int32_t)i);
    }
    while (hn) {
        int32_t v = af__graph_heap_pop(heap, &hn);
        g->input_order[out++] = v;
        for (int32_t k = 0; k < g->nodes[v].n_succs; k++) {
            int32_t s = g->nodes[v].succs[k];
            if (--indeg[s] == 0)
                af__graph_heap_push(heap, &hn, s);
        }
    }
    int rc = 0;
    if (out != nn)
        rc = report_cycle(g, indeg, err);
    af__free(indeg);
    af__free(heap);
    return rc;
}

static int check_producers_exist(af_graph_t *g, af_error_t *err)
{
    for (size_t i = 0; i < g->n_tensors; i++) {
        const af_tensor_info_t *t = &g->tensors[i];
        if (t->kind == AF_TENSOR_SCRATCH &&
            (t->n_consumers > 0 || t->producer < 0 || t->alias_of >= 0 || t->bytes < 0))
            return af__err(err, AF_EINVAL,
                           "scratch tensor '%s' must be a fixed-size output of one node that no "
                           "node reads and that is no view",
                           t->name);
        if (t->n_consumers == 0 && t->kind != AF_TENSOR_OUTPUT)
            continue;
        /* A view without a producer holds its base's bytes: follow the chain to whoever
         * writes them (the chain is known to end: resolve_aliases checked it). */
        const af_tensor_info_t *r = t;
        while (r->producer < 0 && r->alias_of >= 0)
            r = &g->tensors[r->alias_of];
        if (r->producer >= 0 || r->kind == AF_TENSOR_INPUT || r->kind == AF_TENSOR_CONSTANT)
            continue;
        char via[200] = "";
        if (r != t)
            snprintf(via, sizeof(via), " (it is a view of '%s', which nothing produces either)",
                     r->name);
        if (t->n_consumers > 0)
            return af__err(err, AF_ENOPRODUCER,
                           "tensor '%s' is read by node '%s' but no node produces it (and it is "
                           "not an input or constant)%s",
                           t->name, g->nodes[t->consumers[0]].name, via);
        return af__err(err, AF_ENOPRODUCER, "graph output '%s' is never produced%s", t->name, via);
    }
    return 0;
}

static void release_tables(af_graph_t *g)
{
    af__free(g->alias_root);
    af__free(g->alias_root_off);
    af__free(g->edge_pool);
    af__free(g->input_order);
    g->alias_root = NULL;
    g->alias_root_off = NULL;
    g->edge_pool = NULL;
    g->input_order = NULL;
    for (size_t i = 0; i < g->n_tensors; i++) {
        g->tensors[i].producer = -1;
        g->tensors[i].alias_of = -1;
        g->tensors[i].n_consumers = 0;
        g->tensors[i].consumers = NULL;
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        g->nodes[i].n_preds = g->nodes[i].n_succs = 0;
        g->nodes[i].preds = g->nodes[i].succs = NULL;
        g->nodes[i].inputs = g->nodes[i].outputs = NULL;
    }
}

int af_graph_finalize(af_graph_t *g, af_error_t *err)
{
    if (g->finalized)
        return 0;
    int rc;
    if ((rc = resolve_aliases(g, err)) || (rc = resolve_names(g, err)) ||
        (rc = build_edges(g, err)) || (rc = check_producers_exist(g, err)) ||
        (rc = build_input_order(g, err))) {
        release_tables(g);
        return rc;
    }
    /* Names are resolved for good (the strings themselves live in the arena). */
    af__free(g->unresolved);
    g->unresolved = NULL;
    g->n_unresolved = g->cap_unresolved = 0;
    af__free(g->io_first);
    g->io_first = NULL;
    af__free(g->alias_names);
    g->alias_names = NULL;
    g->finalized = 1;
    return 0;
}
