/*
 * ONNX importer — the order nodes are imported in.
 *
 * ONNX requires a graph's nodes to be stored in topological order, but converters do not
 * always obey and ONNX Runtime sorts them itself. Shape inference needs every input's shape
 * before a node runs, so the importer visits nodes in Kahn's order: a node is ready when every
 * node producing one of its inputs — or a value its subgraphs read from the outer scope — has
 * run; among ready nodes the one stored first goes first (a min-heap on the file index). A
 * graph already in topological order therefore keeps its file order exactly. Nodes left on a
 * cycle are appended in file order; the graph's own validation then names the cycle.
 *
 * Cost O((nodes + edges) log nodes). Names produced in this graph are found through a small
 * open-addressing table of (name -> node index) built per call. Threading: no state.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <string.h>

#define MAX_SUB_DEPTH 16

typedef struct order {
    const Onnx__GraphProto *g;
    int32_t *slot; /* output name table: node index, -1 empty */
    size_t cap;
    int32_t *indeg;
    int32_t *edges; /* CSR: successors of node i in edges[first[i] .. first[i+1]) */
    size_t *first;
    size_t n_edges, cap_edges;
    int32_t *pairs; /* (producer, consumer) pairs before the CSR is built */
    size_t n_pairs, cap_pairs;
} order_t;

/* Producer (node index) of name in this graph, or -1. */
static int32_t producer_of(const order_t *o, const char *name)
{
    for (size_t i = af__graph_hash_str(name) & (o->cap - 1);; i = (i + 1) & (o->cap - 1)) {
        int32_t n = o->slot[i];
        if (n < 0)
            return -1;
        const Onnx__NodeProto *nd = o->g->node[n];
        for (size_t k = 0; k < nd->n_output; k++)
            if (!strcmp(nd->output[k], name))
                return n;
    }
}

static void put_output(order_t *o, int32_t node, const char *name)
{
    if (!name[0] || producer_of(o, name) >= 0)
        return; /* produced twice: the importer reports it when it gets there */
    size_t i = af__graph_hash_str(name) & (o->cap - 1);
    while (o->slot[i] >= 0)
        i = (i + 1) & (o->cap - 1);
    o->slot[i] = node;
}

static int add_dep(order_t *o, int32_t from, int32_t to)
{
    if (from < 0 || from == to)
        return 0;
    if (af__grow((void **)&o->pairs, &o->cap_pairs, o->n_pairs + 2, sizeof(*o->pairs)))
        return AF_ENOMEM;
    o->pairs[o->n_pairs++] = from;
    o->pairs[o->n_pairs++] = to;
    return 0;
}

/* Dependencies of node `to` on the producers of the names a (sub)graph's nodes read. */
static int deps_of_graph(order_t *o, const Onnx__GraphProto *g, int32_t to, int depth)
{
    if (depth > MAX_SUB_DEPTH)
        return 0; /* the importer rejects such nesting itself */
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_input; k++)
            if (n->input[k][0] && add_dep(o, producer_of(o, n->input[k]), to))
                return AF_ENOMEM;
        for (size_t a = 0; a < n->n_attribute; a++) {
            const Onnx__AttributeProto *at = n->attribute[a];
            if (at->g && deps_of_graph(o, at->g, to, depth + 1))
                return AF_ENOMEM;
            for (size_t k = 0; k < at->n_graphs; k++)
                if (deps_of_graph(o, at->graphs[k], to, depth + 1))
                    return AF_ENOMEM;
        }
    }
    return 0;
}

static int build(order_t *o, size_t nn)
{
    for (size_t i = 0; i < nn; i++) {
        const Onnx__NodeProto *n = o->g->node[i];
        for (size_t k = 0; k < n->n_output; k++)
            put_output(o, (int32_t)i, n->output[k]);
    }
    for (size_t i = 0; i < nn; i++) {
        Onnx__GraphProto one = {.n_node = 1, .node = &o->g->node[i]};
        if (deps_of_graph(o, &one, (int32_t)i, 0))
            return AF_ENOMEM;
    }
    o->first = af__calloc(nn + 1, sizeof(*o->first));
    o->edges = af__malloc((o->n_pairs / 2 + 1) * sizeof(*o->edges));
    o->indeg = af__calloc(nn + 1, sizeof(*o->indeg));
    if (!o->first || !o->edges || !o->indeg)
        return AF_ENOMEM;
    for (size_t p = 0; p < o->n_pairs; p += 2) {
        o->first[o->pairs[p] + 1]++;
        o->indeg[o->pairs[p + 1]]++; /* a repeated edge counts twice and is released twice */
    }
    for (size_t i = 0; i < nn; i++)
        o->first[i + 1] += o->first[i];
    size_t *fill = af__malloc((nn + 1) * sizeof(*fill));
    if (!fill)
        return AF_ENOMEM;
    memcpy(fill, o->first, (nn + 1) * sizeof(*fill));
    for (size_t p = 0; p < o->n_pairs; p += 2)
        o->edges[fill[o->pairs[p]]++] = o->pairs[p + 1];
    af__free(fill);
    return 0;
}

int af__onnx_node_order(const Onnx__GraphProto *g, int32_t **out)
{
    size_t nn = g->n_node;
    order_t o = {.g = g};
    int32_t *ord = af__malloc((nn + 1) * sizeof(*ord));
    int32_t *heap = af__malloc((nn + 1) * sizeof(*heap));
    int rc = ord && heap ? 0 : AF_ENOMEM;
    if (!rc) {
        o.cap = 16;
        while (o.cap < 2 * nn + 2)
            o.cap *= 2;
        o.slot = af__malloc(o.cap * sizeof(*o.slot));
        rc = o.slot ? 0 : AF_ENOMEM;
    }
    if (!rc) {
        memset(o.slot, 0xff, o.cap * sizeof(*o.slot));
        rc = build(&o, nn);
    }
    if (!rc) {
        size_t nh = 0, k = 0;
        for (size_t i = 0; i < nn; i++)
            if (!o.indeg[i])
                af__graph_heap_push(heap, &nh, (int32_t)i);
        while (nh) {
            int32_t v = af__graph_heap_pop(heap, &nh);
            ord[k++] = v;
            for (size_t e = o.first[v]; e < o.first[v + 1]; e++)
                if (--o.indeg[o.edges[e]] == 0)
                    af__graph_heap_push(heap, &nh, o.edges[e]);
        }
        for (size_t i = 0; i < nn && k < nn; i++) /* left on a cycle: file order */
            if (o.indeg[i] > 0)
                ord[k++] = (int32_t)i;
    }
    af__free(heap);
    af__free(o.slot);
    af__free(o.indeg);
    af__free(o.edges);
    af__free(o.first);
    af__free(o.pairs);
    if (rc) {
        af__free(ord);
        return rc;
    }
    *out = ord;
    return 0;
}

#endif /* AF_HAVE_ONNX */
