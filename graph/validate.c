/*
 * af_graph_finalize(): name resolution, validation and the derived tables.
 *
 * Order of checks (each failure names the culprit and leaves the graph unfinalized):
 *   0. tensor names are unique, node names are unique (the name maps are completed here, in
 *      bulk: the builder's adds do not look names up, see names.c);
 *   1. alias names resolve, alias chains end (no alias cycle), views fit inside their base;
 *   2. node input/output names resolve to declared tensors, and
 *   3. each tensor has at most one producer; inputs and constants have none (2, 3 and 5 are
 *      checked node by node, in one pass);
 *   4. every tensor that is read or is a graph output has a producer, or is an input or
 *      constant (an alias without a producer is fed by its base, so the base must be);
 *   5. in-place hints point at existing inputs/outputs;
 *   6. node-level edges have no cycle (Kahn; a leftover cycle is walked and printed).
 * Tables are built into one pool (preds, consumers, succs) so destroy is one free.
 *
 * Passes: the records are 80 (tensor) and 120 (node) bytes, so at 10^6 tensors each pass over
 * them moves ~80 MB. One pass over the nodes does checks 2, 3 and 5 and, while every input's
 * producer is already final when its reader is reached (nodes in data-flow order, the usual
 * case), also finds the preds and counts the readers; otherwise (or when a node reads its own
 * output, reported only after every name error) a second pass does that with the final
 * producers. The counts of readers and successors go into the records' n_consumers and n_succs.
 * One pass over the tensors then places their consumer lists (check 4 rides on it), and a last
 * pass over the nodes fills consumers and succs and (data-flow order) places each node's succs
 * just before it is reached. A graph without views skips the alias tables entirely.
 */
#include "graph/graph_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int resolve_aliases(af_graph_t *g, af_error_t *err)
{
    size_t n = g->n_tensors;
    if (g->n_aliases == 0)
        return 0; /* no view: af_graph_alias_root() answers every tensor itself */
    for (size_t k = 0; k < g->n_aliases; k++) {
        size_t i = (size_t)g->aliases[k].tensor;
        const char *base = g->aliases[k].base;
        int32_t b = af_graph_find_tensor(g, base);
        if (b < 0)
            return af__err(err, AF_ENOENT, "tensor '%s' is an alias of unknown tensor '%s'",
                           g->tensors[i].name, base);
        if ((size_t)b == i)
            return af__err(err, AF_ECYCLE, "tensor '%s' is an alias of itself", g->tensors[i].name);
        g->tensors[i].alias_of = b;
    }
    g->alias_root = af__malloc(n * sizeof(*g->alias_root));
    g->alias_root_off = af__malloc(n * sizeof(*g->alias_root_off));
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

/*
 * Scratch of one finalize. The counts of distinct readers per tensor and of successors per node
 * are kept in the records themselves (n_consumers, n_succs), where the passes that count them
 * read anyway: at 10^6 tensors a side array of counts and per-node io sizes was ~15 MB of fresh
 * memory the kernel had to fault in, for data the records hold.
 */
typedef struct fin {
    /* The last node that counted tensor t as read (nt), that took node p as a predecessor (nn):
     * in the name maps' tags, which nothing reads until the next add (restored on failure). */
    int32_t *tmark, *nmark;
    int lent;
    size_t used; /* entries of g->edge_pool taken */
    int fast;    /* 1 while every input's producer seen so far was already final */
} fin_t;

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

/* Producer a reader of tensor t waits for: its own, else (for a view) its base's. */
static int32_t effective_producer(const af_graph_t *g, int32_t t)
{
    while (g->tensors[t].producer < 0 && g->tensors[t].alias_of >= 0)
        t = g->tensors[t].alias_of;
    return g->tensors[t].producer;
}

/* effective_producer() while the nodes are still claiming their outputs: *sure is cleared when
 * the answer may still change (a tensor on the chain has no producer yet but may get one: it is
 * no input or constant, which no node may produce). */
static int32_t producer_so_far(const af_graph_t *g, int32_t t, int *sure)
{
    for (;;) {
        const af_tensor_info_t *r = &g->tensors[t];
        if (r->producer >= 0)
            return r->producer;
        if (r->kind != AF_TENSOR_INPUT && r->kind != AF_TENSOR_CONSTANT)
            *sure = 0;
        if (r->alias_of < 0)
            return -1;
        t = r->alias_of;
    }
}

/* Distinct preds of node i (ascending) at g->edge_pool + f->used, with the distinct-reader
 * counts of its inputs and the successor counts of its preds bumped. Producers come from
 * effective_producer(), or (f->fast) from producer_so_far(): then f->fast drops to 0 when one is
 * not sure, and the caller starts over. Returns how many preds, or -1 (AF_ECYCLE in err) when
 * the node reads its own output. */
static int32_t node_preds(af_graph_t *g, int32_t i, fin_t *f, af_error_t *err)
{
    af_node_info_t *nd = &g->nodes[i];
    int32_t n = 0, *pool = g->edge_pool + f->used;
    for (int32_t j = 0; j < nd->n_inputs; j++) {
        int32_t t = nd->inputs[j];
        if (f->tmark[t] != i) {
            f->tmark[t] = i;
            g->tensors[t].n_consumers++;
        }
        int fast = f->fast;
        int32_t p = fast ? producer_so_far(g, t, &f->fast) : effective_producer(g, t);
        if (fast && (!f->fast || p == i)) {
            f->fast = 0; /* a reading of its own output is reported after every name error */
            return 0;
        }
        if (p == i) {
            af__err(err, AF_ECYCLE, "cycle: node '%s' reads its own output '%s'", nd->name,
                    g->tensors[t].name);
            return -1;
        }
        if (p < 0 || f->nmark[p] == i)
            continue;
        f->nmark[p] = i;
        int32_t k = n++; /* insertion keeps the list sorted */
        while (k > 0 && pool[k - 1] > p) {
            pool[k] = pool[k - 1];
            k--;
        }
        pool[k] = p;
        g->nodes[p].n_succs++;
    }
    nd->preds = pool;
    nd->n_preds = n;
    f->used += (size_t)n;
    return n;
}

/*
 * Checks 2, 3 and 5 node by node; while the nodes come in data-flow order (every input already
 * has its final producer when its reader is reached, the usual case), the same pass finds the
 * preds and counts the readers. Returns 0 or the error.
 */
static int resolve_names(af_graph_t *g, fin_t *f, af_error_t *err)
{
    size_t u = 0, first = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        af_node_info_t *nd = &g->nodes[i];
        size_t end = first + (size_t)nd->n_inputs + (size_t)nd->n_outputs;
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
        if (f->fast)
            (void)node_preds(g, (int32_t)i, f, err);
        first = end;
    }
    return 0;
}

/* The pool entry p points at, writable (the records hold const pointers into g->edge_pool). */
static int32_t *pool_at(af_graph_t *g, const int32_t *p)
{
    return g->edge_pool + (p - g->edge_pool);
}

/* Node i's successor list starts at pool entry *at (its count, n_succs, becomes the fill
 * cursor). */
static void place_succs(af_graph_t *g, size_t i, size_t *at)
{
    af_node_info_t *nd = &g->nodes[i];
    nd->succs = g->edge_pool + *at;
    *at += (size_t)nd->n_succs;
    nd->n_succs = 0;
}

/*
 * Consumers (distinct reader nodes per tensor, placed by check_producers_exist) and succs
 * (transpose of preds) into the pool, from the inputs and the preds: nodes in increasing order
 * keep both lists sorted. When every pred precedes its node (f->fast), a node's successor list
 * is placed in the same pass, before any later node appends to it.
 */
static void fill_edges(af_graph_t *g, fin_t *f)
{
    size_t nn = g->n_nodes, at = f->used;
    if (!f->fast)
        for (size_t i = 0; i < nn; i++)
            place_succs(g, i, &at);
    memset(f->tmark, 0xff, g->n_tensors * sizeof(int32_t));
    for (size_t i = 0; i < nn; i++) {
        if (f->fast)
            place_succs(g, i, &at);
        const af_node_info_t *nd = &g->nodes[i];
        for (int32_t j = 0; j < nd->n_inputs; j++) {
            int32_t t = nd->inputs[j];
            if (f->tmark[t] != (int32_t)i) {
                f->tmark[t] = (int32_t)i;
                af_tensor_info_t *r = &g->tensors[t];
                pool_at(g, r->consumers)[r->n_consumers++] = (int32_t)i;
            }
        }
        for (int32_t k = 0; k < nd->n_preds; k++) {
            af_node_info_t *p = &g->nodes[nd->preds[k]];
            pool_at(g, p->succs)[p->n_succs++] = (int32_t)i;
        }
    }
}

/* Preds and the reader and successor counts, unless resolve_names found them. */
static int find_preds(af_graph_t *g, fin_t *f, af_error_t *err)
{
    size_t nn = g->n_nodes, nt = g->n_tensors;
    if (f->fast)
        return 0;
    for (size_t i = 0; i < nt; i++)
        g->tensors[i].n_consumers = 0;
    for (size_t i = 0; i < nn; i++)
        g->nodes[i].n_succs = 0;
    memset(f->tmark, 0xff, nt * sizeof(int32_t));
    memset(f->nmark, 0xff, nn * sizeof(int32_t));
    f->used = 0;
    for (size_t i = 0; i < nn; i++)
        if (node_preds(g, (int32_t)i, f, err) < 0)
            return AF_ECYCLE;
    return 0;
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

/* The input order: the ids themselves when no pred follows its node (known_sorted: the preds
 * were found in the pass that claimed the outputs, so every pred comes first), else Kahn's. */
static int build_input_order(af_graph_t *g, int known_sorted, af_error_t *err)
{
    size_t nn = g->n_nodes;
    g->input_order = af__malloc((nn ? nn : 1) * sizeof(int32_t));
    if (!g->input_order)
        return af__err(err, AF_ENOMEM, "out of memory");
    int sorted = 1;
    for (size_t i = 0; i < nn && sorted && !known_sorted; i++)
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

/* The first node reading tensor t (an error message's culprit), or -1. */
static int32_t first_reader(const af_graph_t *g, int32_t t)
{
    for (size_t i = 0; i < g->n_nodes; i++)
        for (int32_t j = 0; j < g->nodes[i].n_inputs; j++)
            if (g->nodes[i].inputs[j] == t)
                return (int32_t)i;
    return -1;
}

/* Places every tensor's consumer list in the pool after the preds (its count, n_consumers,
 * becomes fill_edges' cursor), with check 4 in the same pass. */
static int check_producers_exist(af_graph_t *g, fin_t *f, af_error_t *err)
{
    for (size_t i = 0; i < g->n_tensors; i++) {
        af_tensor_info_t *t = &g->tensors[i];
        int32_t readers = t->n_consumers;
        t->consumers = g->edge_pool + f->used;
        t->n_consumers = 0;
        f->used += (size_t)readers;
        if (t->kind == AF_TENSOR_SCRATCH &&
            (readers > 0 || t->producer < 0 || t->alias_of >= 0 || t->bytes < 0))
            return af__err(err, AF_EINVAL,
                           "scratch tensor '%s' must be a fixed-size output of one node that no "
                           "node reads and that is no view",
                           t->name);
        if (readers == 0 && t->kind != AF_TENSOR_OUTPUT)
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
        if (readers > 0)
            return af__err(err, AF_ENOPRODUCER,
                           "tensor '%s' is read by node '%s' but no node produces it (and it is "
                           "not an input or constant)%s",
                           t->name, g->nodes[first_reader(g, (int32_t)i)].name, via);
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

/* The finalize scratch (fin_t) and the edge pool; 0 or AF_ENOMEM. */
static int fin_alloc(af_graph_t *g, fin_t *f, af_error_t *err)
{
    size_t nt = g->n_tensors, nn = g->n_nodes, pool = 3 * g->n_inputs_total + 1;
    memset(f, 0, sizeof(*f));
    f->lent = 1;
    f->tmark = af__graph_map_lend_tags(&g->tmap, nt);
    f->nmark = af__graph_map_lend_tags(&g->nmap, nn);
    g->edge_pool = af__malloc(pool * sizeof(int32_t));
    if (!g->edge_pool || !f->tmark || !f->nmark)
        return af__err(err, AF_ENOMEM, "out of memory");
    memset(f->tmark, 0xff, nt * sizeof(int32_t));
    memset(f->nmark, 0xff, nn * sizeof(int32_t));
    f->fast = 1;
    return 0;
}

int af_graph_finalize(af_graph_t *g, af_error_t *err)
{
    if (g->finalized)
        return 0;
    fin_t f;
    memset(&f, 0, sizeof(f));
    int rc = af__graph_names_check(g, err); /* the name maps, complete from here on */
    if (!rc)
        rc = fin_alloc(g, &f, err);
    if (!rc && !(rc = resolve_aliases(g, err)) && !(rc = resolve_names(g, &f, err)) &&
        !(rc = find_preds(g, &f, err)) && !(rc = check_producers_exist(g, &f, err))) {
        fill_edges(g, &f);
        rc = build_input_order(g, f.fast, err);
    }
    if (rc) {
        if (f.lent) { /* the graph stays open for adds: they need the tags */
            af__graph_map_restore_tags(g, &g->tmap, g->n_tensors);
            af__graph_map_restore_tags(g, &g->nmap, g->n_nodes);
        }
        release_tables(g);
        return rc;
    }
    /* Names are resolved for good (the strings themselves live in the arena). */
    af__free(g->unresolved);
    g->unresolved = NULL;
    g->n_unresolved = g->cap_unresolved = 0;
    af__free(g->aliases);
    g->aliases = NULL;
    g->n_aliases = g->cap_aliases = 0;
    af__graph_map_drop_tags(&g->tmap); /* nothing is added any more */
    af__graph_map_drop_tags(&g->nmap);
    g->finalized = 1;
    return 0;
}
