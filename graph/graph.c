/*
 * The graph model: builder, name resolution, validation and derived tables.
 *
 * Building only records what the caller gives (names unresolved, so tensors and nodes may come
 * in any order). af_graph_finalize() then resolves names, checks the graph (unknown names, a
 * tensor produced twice, a tensor read but never produced, alias chains, cycles) and builds
 * the tables every later stage reads: producer and distinct consumers per tensor, distinct
 * predecessors and successors per node, alias roots, and a stable topological input order.
 * After finalize the graph is immutable.
 *
 * Invariant after finalize: every id stored anywhere is in range; consumers/preds/succs are
 * sorted ascending without duplicates; a node that reads an alias without a producer depends
 * on the producer of the alias's base (reading a view reads the base's bytes).
 */
#include "graph/graph_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtypes ------------------------------------------------------------------------------ */

static const struct {
    const char *name;
    uint32_t size;
} dtype_table[] = {
#define AF__DTYPE_ROW(n, str, size) {str, size},
    AF_DTYPE_MAP(AF__DTYPE_ROW)
#undef AF__DTYPE_ROW
};

/* Other spellings users and ONNX use. */
static const struct {
    const char *name;
    af_dtype_t dt;
} dtype_aliases[] = {
    {"float32", AF_DTYPE_F32}, {"float", AF_DTYPE_F32},     {"float16", AF_DTYPE_F16},
    {"half", AF_DTYPE_F16},    {"bfloat16", AF_DTYPE_BF16}, {"float64", AF_DTYPE_F64},
    {"double", AF_DTYPE_F64},  {"int8", AF_DTYPE_I8},       {"uint8", AF_DTYPE_U8},
    {"int16", AF_DTYPE_I16},   {"uint16", AF_DTYPE_U16},    {"int32", AF_DTYPE_I32},
    {"uint32", AF_DTYPE_U32},  {"int64", AF_DTYPE_I64},     {"uint64", AF_DTYPE_U64},
};

const char *af_dtype_name(af_dtype_t dt)
{
    if ((unsigned)dt >= AF_DTYPE_COUNT_)
        return "unknown";
    return dtype_table[dt].name;
}

uint32_t af_dtype_size(af_dtype_t dt)
{
    if ((unsigned)dt >= AF_DTYPE_COUNT_)
        return 0;
    return dtype_table[dt].size;
}

int af_dtype_parse(const char *name, af_dtype_t *out)
{
    for (int i = 0; i < AF_DTYPE_COUNT_; i++)
        if (strcmp(name, dtype_table[i].name) == 0) {
            *out = (af_dtype_t)i;
            return 0;
        }
    for (size_t i = 0; i < AF_ARRAY_SIZE(dtype_aliases); i++)
        if (strcmp(name, dtype_aliases[i].name) == 0) {
            *out = dtype_aliases[i].dt;
            return 0;
        }
    return AF_EINVAL;
}

/* ---- create / destroy -------------------------------------------------------------------- */

int af_graph_create(af_graph_t **out)
{
    af_graph_t *g = af__calloc(1, sizeof(*g));
    if (!g)
        return AF_ENOMEM;
    *out = g;
    return 0;
}

int af_graph_reserve(af_graph_t *g, int32_t n_tensors, int32_t n_nodes)
{
    if (!g || g->finalized || n_tensors < 0 || n_nodes < 0)
        return AF_EINVAL;
    size_t nt = (size_t)n_tensors, nn = (size_t)n_nodes;
    /* The io table's guess is 3 ids per node; it grows past that as usual. The name tables are
     * built at finalize, for the count there is then: only their tags are reserved. */
    int rc = af__grow((void **)&g->tensors, &g->cap_tensors, nt, sizeof(*g->tensors));
    if (!rc)
        rc = af__grow((void **)&g->nodes, &g->cap_nodes, nn, sizeof(*g->nodes));
    if (!rc)
        rc = af__grow((void **)&g->io, &g->cap_io, 3 * nn + 1, sizeof(*g->io));
    if (!rc)
        rc = af__graph_map_reserve(&g->tmap, nt);
    if (!rc)
        rc = af__graph_map_reserve(&g->nmap, nn);
    return rc;
}

static void free_attr_contents(af_attr_t *a)
{
    af__free((void *)a->name);
    af__free((void *)a->s);
    af__free((void *)a->ints);
    af__free((void *)a->floats);
}

void af_graph_destroy(af_graph_t *g)
{
    if (!g)
        return;
    af__graph_free_stores(g);
    for (size_t i = 0; g->any_dynamic_reason && i < g->n_tensors; i++)
        af__free((void *)g->tensors[i].dynamic_reason);
    for (size_t i = 0; g->any_attrs && i < g->n_nodes; i++) {
        af_node_info_t *n = &g->nodes[i];
        for (int32_t a = 0; a < n->n_attrs; a++)
            free_attr_contents((af_attr_t *)&n->attrs[a]);
        af__free((void *)n->attrs);
    }
    af__free(g->tensors);
    af__free(g->aliases);
    af__free(g->nodes);
    af__free(g->io);
    af__free(g->unresolved);
    af__graph_free_chunks(g);
    af__free(g->attr_slots);
    af__graph_map_free(&g->tmap);
    af__graph_map_free(&g->nmap);
    af__free(g->input_order);
    af__free(g->alias_root);
    af__free(g->alias_root_off);
    af__free(g->edge_pool);
    af__free(g->name);
    af__free(g);
}

int af_graph_set_name(af_graph_t *g, const char *name)
{
    char *s = af__strdup(name ? name : "");
    if (!s)
        return AF_ENOMEM;
    af__free(g->name);
    g->name = s;
    return 0;
}

const char *af_graph_name(const af_graph_t *g)
{
    return g->name ? g->name : "";
}

/* ---- builder ----------------------------------------------------------------------------- */

static int shape_bytes(const af_tensor_desc_t *d, int64_t *bytes, af_error_t *err)
{
    uint32_t es = af_dtype_size(d->dtype);
    if (d->rank < 0 || es == 0) {
        *bytes = AF_BYTES_DYNAMIC;
        return 0;
    }
    uint64_t total = es;
    for (int i = 0; i < d->rank; i++) {
        if (d->shape[i] < 0) {
            *bytes = AF_BYTES_DYNAMIC;
            return 0;
        }
        if (!af__mul_u64(total, (uint64_t)d->shape[i], &total) || total > (uint64_t)INT64_MAX)
            return af__err(err, AF_ESIZE, "tensor '%s': shape x dtype size overflows", d->name);
    }
    *bytes = (int64_t)total;
    return 0;
}

int af_graph_add_tensor(af_graph_t *g, const af_tensor_desc_t *d, int32_t *id_out, af_error_t *err)
{
    if (g->finalized)
        return af__err(err, AF_EINVAL, "graph is finalized; tensors cannot be added");
    if (!d || !d->name || !d->name[0])
        return af__err(err, AF_EINVAL, "tensor without a name");
    size_t name_len = strlen(d->name);
    if ((unsigned)d->kind > AF_TENSOR_SCRATCH)
        return af__err(err, AF_EINVAL, "tensor '%s': bad kind %d", d->name, (int)d->kind);
    if (d->rank > AF_MAX_RANK || (d->rank > 0 && !d->shape))
        return af__err(err, AF_EINVAL, "tensor '%s': rank %d not supported (max %d)", d->name,
                       d->rank, AF_MAX_RANK);
    if (g->n_tensors >= INT32_MAX - 1)
        return af__err(err, AF_ENOMEM, "too many tensors");
    int64_t bytes = d->bytes;
    if (bytes < AF_BYTES_FROM_SHAPE)
        return af__err(err, AF_ESIZE, "tensor '%s': negative size %lld", d->name, (long long)bytes);
    if (bytes != AF_BYTES_DYNAMIC) {
        /* Explicit sizes may exceed dtype x shape (padded storage) but never fall short of it:
         * a kernel writing the whole shape would run past the tensor. */
        int64_t from_shape;
        int rc = shape_bytes(d, &from_shape, err);
        if (rc)
            return rc;
        if (bytes == AF_BYTES_FROM_SHAPE)
            bytes = from_shape;
        else if (from_shape >= 0 && bytes < from_shape)
            return af__err(err, AF_ESIZE,
                           "tensor '%s': %lld bytes is less than dtype x shape = %lld", d->name,
                           (long long)bytes, (long long)from_shape);
    }
    if (d->alias_of && d->alias_offset < 0)
        return af__err(err, AF_ESIZE, "tensor '%s': negative alias offset %lld", d->name,
                       (long long)d->alias_offset);

    uint64_t hash = af__graph_hash_n(d->name, name_len);
    if (af__grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1, sizeof(*g->tensors)) ||
        af__graph_map_note(&g->tmap, g->n_tensors, hash) ||
        (d->alias_of &&
         af__grow((void **)&g->aliases, &g->cap_aliases, g->n_aliases + 1, sizeof(*g->aliases))))
        return af__err(err, AF_ENOMEM, "out of memory");

    /* What the arena hands out before a failure stays there until the graph is destroyed. */
    af_tensor_info_t t = {0};
    const char *alias = NULL;
    int64_t *shape = NULL;
    t.name = af__graph_strndup(g, d->name, name_len);
    if (d->rank > 0) {
        shape = af__graph_alloc(g, (size_t)d->rank * sizeof(*shape), sizeof(*shape));
        if (shape)
            memcpy(shape, d->shape, (size_t)d->rank * sizeof(*shape));
    }
    if (d->alias_of)
        alias = af__graph_strdup(g, d->alias_of);
    if (!t.name || (d->rank > 0 && !shape) || (d->alias_of && !alias))
        return af__err(err, AF_ENOMEM, "out of memory");
    t.bytes = bytes;
    t.dtype = d->dtype;
    t.rank = d->rank < 0 ? -1 : d->rank;
    t.shape = shape;
    t.kind = d->kind;
    t.alias_of = -1;
    t.alias_offset = d->alias_of ? d->alias_offset : 0;
    t.producer = -1;
    /* A duplicate name is found by finalize (or the first lookup), not here: see names.c. */
    int32_t id = (int32_t)g->n_tensors++;
    g->tensors[id] = t;
    if (alias)
        g->aliases[g->n_aliases++] = (af__alias_t){id, alias};
    g->recent[hash & (AF__RECENT_NAMES - 1)] = id + 1;
    if (id_out)
        *id_out = id;
    return 0;
}

#define SYNC_FROM 1024 /* unindexed tensors from which a node's input may sync the name map */

/*
 * The id of tensor `name` (hash: its hash) if the builder knows it cheaply, else -1 (finalize
 * resolves it): a tensor among the recent ones, or one the name map holds. The map is brought up
 * to date at the first node of a graph whose tensors come first (copies and JSON graphs add them
 * so), and when the names missed since the map was last brought up to date reach a quarter of
 * the tensors added since: then the bulk insert costs less than leaving them to finalize. A
 * graph that adds each node's tensors just before it (nearly every input recent) never builds
 * the map before finalize, and no add waits for a cache miss in it.
 */
static int32_t known_tensor(af_graph_t *g, const char *name, uint64_t hash)
{
    int32_t *recent = &g->recent[hash & (AF__RECENT_NAMES - 1)], id = *recent - 1;
    if (id >= 0 && strcmp(g->tensors[id].name, name) == 0)
        return id;
    af__namemap_t *m = &g->tmap;
    size_t backlog = g->n_tensors - m->count;
    if (backlog >= SYNC_FROM && (g->n_nodes == 0 || ++g->missed * 4 >= backlog)) {
        g->missed = 0;
        if (af__graph_map_sync(g, m, g->n_tensors))
            return -1; /* out of memory: finalize resolves it */
    }
    id = af__graph_map_find(g, m, name, hash);
    if (id >= 0)
        *recent = id + 1;
    return id;
}

/* Records node `node`'s io names: the id of each name already known, else -1 and an entry in
 * g->unresolved for finalize. 0 or AF_ENOMEM (g->n_io unchanged then). */
static int record_io(af_graph_t *g, const char *const *names, int32_t n)
{
    size_t base = g->n_io, undo = g->n_unresolved;
    if (af__grow((void **)&g->io, &g->cap_io, base + (size_t)n + 1, sizeof(*g->io)))
        return AF_ENOMEM;
    for (int32_t i = 0; i < n; i++) {
        int32_t id = known_tensor(g, names[i], af__graph_hash_str(names[i]));
        g->io[base + (size_t)i] = id;
        if (id >= 0)
            continue;
        const char *copy = af__graph_strdup(g, names[i]);
        if (!copy || af__grow((void **)&g->unresolved, &g->cap_unresolved, g->n_unresolved + 1,
                              sizeof(*g->unresolved))) {
            g->n_unresolved = undo;
            return AF_ENOMEM;
        }
        g->unresolved[g->n_unresolved++] = (af__unresolved_t){base + (size_t)i, copy};
    }
    g->n_io = base + (size_t)n;
    return 0;
}

/* The arena's copy of op type `op` (one per distinct type, see g->ops), or NULL on OOM. */
static const char *intern_op(af_graph_t *g, const char *op)
{
    size_t len = strlen(op);
    const char **slot = &g->ops[((unsigned char)op[0] * 31u + len) & (AF__OP_CACHE - 1)];
    if (*slot && strcmp(*slot, op) == 0)
        return *slot;
    const char *copy = af__graph_strdup(g, op);
    if (copy)
        *slot = copy; /* a collision replaces the older type: later nodes copy it again */
    return copy;
}

int af_graph_add_node(af_graph_t *g, const af_node_desc_t *d, int32_t *id_out, af_error_t *err)
{
    if (g->finalized)
        return af__err(err, AF_EINVAL, "graph is finalized; nodes cannot be added");
    if (!d || !d->op || !d->op[0])
        return af__err(err, AF_EINVAL, "node '%s' has no op type",
                       d && d->name ? d->name : "(unnamed)");
    if (d->n_inputs < 0 || d->n_outputs < 0 || d->n_inplace < 0 || (d->n_inputs && !d->inputs) ||
        (d->n_outputs && !d->outputs) || (d->n_inplace && !d->inplace))
        return af__err(err, AF_EINVAL, "node '%s': bad input/output arrays",
                       d->name ? d->name : d->op);
    for (int32_t i = 0; i < d->n_inputs; i++)
        if (!d->inputs[i] || !d->inputs[i][0])
            return af__err(err, AF_EINVAL, "node '%s': input %d has no name",
                           d->name ? d->name : d->op, i);
    for (int32_t i = 0; i < d->n_outputs; i++)
        if (!d->outputs[i] || !d->outputs[i][0])
            return af__err(err, AF_EINVAL, "node '%s': output %d has no name",
                           d->name ? d->name : d->op, i);
    if (g->n_nodes >= INT32_MAX - 1)
        return af__err(err, AF_ENOMEM, "too many nodes");

    char autoname[32];
    const char *name = d->name;
    if (!name || !name[0]) {
        snprintf(autoname, sizeof(autoname), "node%zu", g->n_nodes);
        name = autoname;
    }
    size_t name_len = strlen(name);
    if (af__grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(*g->nodes)) ||
        af__graph_map_note(&g->nmap, g->n_nodes, af__graph_hash_n(name, name_len)))
        return af__err(err, AF_ENOMEM, "out of memory");

    /* What the arena hands out before a failure stays there until the graph is destroyed. */
    af_node_info_t n = {0};
    n.name = af__graph_strndup(g, name, name_len);
    n.op = intern_op(g, d->op);
    af_inplace_t *ip = NULL;
    if (d->n_inplace > 0) {
        ip = af__graph_alloc(g, (size_t)d->n_inplace * sizeof(*ip), _Alignof(af_inplace_t));
        if (ip)
            memcpy(ip, d->inplace, (size_t)d->n_inplace * sizeof(*ip));
    }
    size_t first = g->n_io, undo = g->n_unresolved;
    if (!n.name || !n.op || (d->n_inplace > 0 && !ip) || record_io(g, d->inputs, d->n_inputs) ||
        record_io(g, d->outputs, d->n_outputs))
        goto oom;
    n.n_inputs = d->n_inputs;
    n.n_outputs = d->n_outputs;
    n.cost = d->cost;
    n.inplace = ip;
    n.n_inplace = d->n_inplace;
    int32_t id = (int32_t)g->n_nodes++; /* a duplicate name: see af_graph_add_tensor */
    g->nodes[id] = n;
    g->n_inputs_total += (size_t)d->n_inputs;
    if (id_out)
        *id_out = id;
    return 0;
oom:
    g->n_io = first;
    g->n_unresolved = undo;
    return af__err(err, AF_ENOMEM, "out of memory");
}

/* ---- attribute-name index ----------------------------------------------------------------- */

static size_t attr_hash(int32_t node, const char *name)
{
    return (size_t)(af__graph_hash_str(name) ^ ((uint64_t)(uint32_t)node * 0x9e3779b97f4a7c15ull));
}

static const char *slot_name(const af_graph_t *g, int64_t slot)
{
    return g->nodes[slot >> 32].attrs[slot & 0xffffffff].name;
}

/* Index of the node's attribute called name, or -1. */
static int32_t attr_find(const af_graph_t *g, int32_t node, const char *name)
{
    const af_node_info_t *n = &g->nodes[node];
    if (n->n_attrs <= AF__ATTR_SCAN) {
        for (int32_t i = 0; i < n->n_attrs; i++)
            if (strcmp(n->attrs[i].name, name) == 0)
                return i;
        return -1;
    }
    size_t mask = g->attr_slot_cap - 1;
    for (size_t i = attr_hash(node, name) & mask; g->attr_slots[i] >= 0; i = (i + 1) & mask)
        if (g->attr_slots[i] >> 32 == node && strcmp(slot_name(g, g->attr_slots[i]), name) == 0)
            return (int32_t)(g->attr_slots[i] & 0xffffffff);
    return -1;
}

static void slot_put(int64_t *slots, size_t cap, size_t h, int64_t v)
{
    size_t i = h & (cap - 1);
    while (slots[i] >= 0)
        i = (i + 1) & (cap - 1);
    slots[i] = v;
}

/* Room for `more` entries at most half full (rehashing into a larger table). 0 or AF_ENOMEM. */
static int attr_reserve(af_graph_t *g, size_t more)
{
    size_t need = g->attr_slot_count + more, cap = g->attr_slot_cap ? g->attr_slot_cap : 64;
    if (need * 2 <= g->attr_slot_cap)
        return 0;
    while (need * 2 > cap)
        cap *= 2;
    int64_t *ns = af__malloc(cap * sizeof(*ns));
    if (!ns)
        return AF_ENOMEM;
    memset(ns, 0xff, cap * sizeof(*ns));
    for (size_t i = 0; i < g->attr_slot_cap; i++)
        if (g->attr_slots[i] >= 0)
            slot_put(ns, cap,
                     attr_hash((int32_t)(g->attr_slots[i] >> 32), slot_name(g, g->attr_slots[i])),
                     g->attr_slots[i]);
    af__free(g->attr_slots);
    g->attr_slots = ns;
    g->attr_slot_cap = cap;
    return 0;
}

/* Indexes attribute idx of node (every attribute up to idx when the node just crossed the scan
 * threshold). The room was reserved. */
static void attr_index(af_graph_t *g, int32_t node, int32_t idx)
{
    int32_t from = idx == AF__ATTR_SCAN ? 0 : idx;
    for (int32_t i = from; i <= idx; i++) {
        slot_put(g->attr_slots, g->attr_slot_cap, attr_hash(node, g->nodes[node].attrs[i].name),
                 (int64_t)node << 32 | i);
        g->attr_slot_count++;
    }
}

int af_graph_node_set_attr(af_graph_t *g, int32_t node, const af_attr_t *attr, af_error_t *err)
{
    /* A finalized graph may be read by many threads at once: no writer after finalize. */
    if (g->finalized)
        return af__err(err, AF_EINVAL, "graph is finalized; attributes cannot be changed");
    if (node < 0 || (size_t)node >= g->n_nodes)
        return af__err(err, AF_EINVAL, "attribute on unknown node %d", node);
    if (!attr || !attr->name || !attr->name[0] || (unsigned)attr->type > AF_ATTR_FLOATS ||
        attr->n < 0)
        return af__err(err, AF_EINVAL, "node '%s': bad attribute", g->nodes[node].name);
    af_node_info_t *n = &g->nodes[node];
    af_attr_t a = {0};
    a.type = attr->type;
    a.i = attr->i;
    a.f = attr->f;
    a.n = attr->n;
    a.name = af__strdup(attr->name);
    int oom = !a.name;
    if (attr->type == AF_ATTR_STRING) {
        a.s = af__strdup(attr->s ? attr->s : "");
        oom |= !a.s;
    } else if (attr->type == AF_ATTR_INTS && attr->n > 0) {
        int64_t *v = af__malloc((size_t)attr->n * sizeof(*v));
        if (v && attr->ints)
            memcpy(v, attr->ints, (size_t)attr->n * sizeof(*v));
        else if (v)
            memset(v, 0, (size_t)attr->n * sizeof(*v));
        a.ints = v;
        oom |= !v;
    } else if (attr->type == AF_ATTR_FLOATS && attr->n > 0) {
        double *v = af__malloc((size_t)attr->n * sizeof(*v));
        if (v && attr->floats)
            memcpy(v, attr->floats, (size_t)attr->n * sizeof(*v));
        else if (v)
            memset(v, 0, (size_t)attr->n * sizeof(*v));
        a.floats = v;
        oom |= !v;
    }
    if (oom) {
        free_attr_contents(&a);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    int32_t at = attr_find(g, node, a.name);
    if (at >= 0) {
        free_attr_contents((af_attr_t *)&n->attrs[at]);
        ((af_attr_t *)n->attrs)[at] = a;
        return 0;
    }
    af_attr_t *arr = (af_attr_t *)n->attrs;
    int indexed = n->n_attrs >= AF__ATTR_SCAN; /* the new one makes the node indexed */
    /* The array's capacity is what af__grow made of n_attrs one-by-one additions: 0, then 8
     * doubled until it holds them (attributes are only ever added one at a time). */
    size_t cap = 0;
    if (n->n_attrs > 0)
        for (cap = 8; cap < (size_t)n->n_attrs; cap *= 2)
            ;
    int grow = af__grow((void **)&arr, &cap, (size_t)n->n_attrs + 1, sizeof(*arr));
    n->attrs = arr; /* the index's rehash reads names through it */
    g->any_attrs = 1;
    if (grow || (indexed && attr_reserve(g, n->n_attrs == AF__ATTR_SCAN ? AF__ATTR_SCAN + 1 : 1))) {
        free_attr_contents(&a);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    arr[n->n_attrs++] = a;
    if (indexed)
        attr_index(g, node, n->n_attrs - 1);
    return 0;
}

/* ---- read access ------------------------------------------------------------------------- */

int af_graph_is_finalized(const af_graph_t *g)
{
    return g->finalized;
}

int32_t af_graph_tensor_count(const af_graph_t *g)
{
    return (int32_t)g->n_tensors;
}

int32_t af_graph_node_count(const af_graph_t *g)
{
    return (int32_t)g->n_nodes;
}

const af_tensor_info_t *af_graph_tensor(const af_graph_t *g, int32_t id)
{
    if (id < 0 || (size_t)id >= g->n_tensors)
        return NULL;
    return &g->tensors[id];
}

const af_node_info_t *af_graph_node(const af_graph_t *g, int32_t id)
{
    if (id < 0 || (size_t)id >= g->n_nodes)
        return NULL;
    return &g->nodes[id];
}

/*
 * Id of name among the first n records that m indexes. A finalized graph's maps are complete,
 * so its readers (any number of threads) only probe. Before finalize the graph belongs to the
 * one thread building it, which may look names up: the map then first catches up with the adds
 * since the last lookup (it is written through a const graph: g is never a const object).
 */
static int32_t find_name(const af_graph_t *g, const af__namemap_t *m, size_t n, const char *name)
{
    if (!name)
        return -1;
    af__namemap_t *w = (af__namemap_t *)m;
    if (m->count < n && af__graph_map_sync(g, w, n)) {
        /* Out of memory for the table: still the right answer, by a scan. */
        for (size_t i = 0; i < n; i++)
            if (strcmp(m == &g->tmap ? g->tensors[i].name : g->nodes[i].name, name) == 0)
                return (int32_t)i;
        return -1;
    }
    return af__graph_map_find(g, m, name, af__graph_hash_str(name));
}

int af__graph_find_node_checked(af_graph_t *g, const char *name, int32_t *id)
{
    if (af__graph_map_sync(g, &g->nmap, g->n_nodes))
        return AF_ENOMEM;
    *id = af__graph_map_find(g, &g->nmap, name, af__graph_hash_str(name));
    return 0;
}

int32_t af_graph_find_tensor(const af_graph_t *g, const char *name)
{
    return find_name(g, &g->tmap, g->n_tensors, name);
}

int32_t af_graph_find_node(const af_graph_t *g, const char *name)
{
    return find_name(g, &g->nmap, g->n_nodes, name);
}

const af_attr_t *af_graph_node_attr(const af_graph_t *g, int32_t node, const char *name)
{
    const af_node_info_t *n = af_graph_node(g, node);
    if (!n)
        return NULL;
    for (int32_t i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

const int32_t *af_graph_input_order(const af_graph_t *g)
{
    return g->input_order;
}

const char *af__graph_alias_name(const af_graph_t *g, int32_t tensor)
{
    size_t lo = 0, hi = g->n_aliases; /* aliases[] is in id order: binary search */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->aliases[mid].tensor < tensor)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->n_aliases && g->aliases[lo].tensor == tensor ? g->aliases[lo].base : NULL;
}

int32_t af_graph_alias_root(const af_graph_t *g, int32_t tensor)
{
    if (!g->alias_root || tensor < 0 || (size_t)tensor >= g->n_tensors)
        return tensor;
    return g->alias_root[tensor];
}

int64_t af_graph_alias_root_offset(const af_graph_t *g, int32_t tensor)
{
    if (!g->alias_root_off || tensor < 0 || (size_t)tensor >= g->n_tensors)
        return 0;
    return g->alias_root_off[tensor];
}
