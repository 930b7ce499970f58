/*
 * The JSON graph format (docs/graph-format.md): the writer.
 *
 * A finalized graph is turned into one small jansson DOM per tensor and per node, each printed
 * on its own line (so files stay diffable and a change is one line), wrapped in the top-level
 * object by hand. Every field the reader (graph/json.c) reads is written, so parse -> write ->
 * parse gives the same graph. Fields that hold their default are left out (kind intermediate,
 * no alias, cost 0); a dynamic tensor is written "dynamic": true instead of "bytes".
 *
 * Saving goes through the library's durable write (common/file.c: a temp file unique per
 * writer, fsync, rename, fsync of the directory), so a reader sees the old file or the new one,
 * never half of one.
 * A graph with constant data gets a weights file beside the JSON (GRAPH.weights), written the
 * same way and first, holding each tensor's bytes at a 64-byte aligned offset in tensor order;
 * the JSON names it ("weights": {"file", "bytes"}) and gives each tensor's "data" range.
 *
 * Memory: the output buffer uses the af__ hooks; the per-line DOMs use jansson's allocator
 * and are freed before returning. Threading: no shared state; a finalized graph may be written
 * from several threads at once.
 */
#include "graph/graph_int.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AF__STR_(x) #x
#define AF__STR(x) AF__STR_(x)

/* json_object_set_new that records failure instead of returning it at every call site. */
static void put(json_t *obj, const char *key, json_t *val, int *oom)
{
    if (!val || json_object_set_new(obj, key, val))
        *oom = 1;
}

/* Where the weights file holds each tensor's data (save_json), or NULL (structure only). */
typedef struct wlayout {
    const char *file; /* the weights file's name, as the JSON records it */
    uint64_t total;   /* its size */
    uint64_t *off;    /* per tensor: offset of its data */
} wlayout_t;

static json_t *tensor_to_json(const af_graph_t *g, const af_tensor_info_t *t, const wlayout_t *w,
                              int *oom)
{
    json_t *o = json_object();
    if (!o) {
        *oom = 1;
        return NULL;
    }
    put(o, "name", json_string(t->name), oom);
    if (t->kind != AF_TENSOR_INTERMEDIATE)
        put(o, "kind", json_string(af__graph_kind_name(t->kind)), oom);
    if (t->dtype != AF_DTYPE_UNKNOWN)
        put(o, "dtype", json_string(af_dtype_name(t->dtype)), oom);
    if (t->rank >= 0) {
        json_t *s = json_array();
        for (int32_t i = 0; s && i < t->rank; i++)
            if (json_array_append_new(s, json_integer(t->shape[i] < 0 ? -1 : t->shape[i])))
                *oom = 1;
        put(o, "shape", s, oom);
    }
    if (t->bytes == AF_BYTES_DYNAMIC)
        put(o, "dynamic", json_true(), oom);
    else
        put(o, "bytes", json_integer(t->bytes), oom);
    if (t->alias_of >= 0) {
        put(o, "alias_of", json_string(g->tensors[t->alias_of].name), oom);
        if (t->alias_offset)
            put(o, "offset", json_integer(t->alias_offset), oom);
    }
    if (t->bytes == AF_BYTES_DYNAMIC && t->dynamic_reason)
        put(o, "dynamic_reason", json_string(t->dynamic_reason), oom);
    if (w && t->data) {
        json_t *d = json_object();
        if (d) {
            put(d, "offset", json_integer((json_int_t)w->off[t - g->tensors]), oom);
            put(d, "bytes", json_integer(t->bytes), oom);
        }
        put(o, "data", d, oom);
    }
    return o;
}

/* NULL only when out of memory: non-finite floats are rejected before writing starts. */
static json_t *attr_to_json(const af_attr_t *a)
{
    switch (a->type) {
    case AF_ATTR_INT:
        return json_integer(a->i);
    case AF_ATTR_FLOAT:
        return json_real(a->f);
    case AF_ATTR_STRING:
        return json_string(a->s ? a->s : "");
    case AF_ATTR_INTS:
    case AF_ATTR_FLOATS: {
        json_t *arr = json_array();
        for (int32_t i = 0; arr && i < a->n; i++) {
            json_t *e =
                a->type == AF_ATTR_INTS ? json_integer(a->ints[i]) : json_real(a->floats[i]);
            if (!e || json_array_append_new(arr, e)) {
                json_decref(arr);
                return NULL;
            }
        }
        return arr;
    }
    }
    return NULL;
}

static json_t *names_to_json(const af_graph_t *g, const int32_t *ids, int32_t n, int *oom)
{
    json_t *arr = json_array();
    for (int32_t i = 0; arr && i < n; i++)
        if (json_array_append_new(arr, json_string(g->tensors[ids[i]].name)))
            *oom = 1;
    return arr;
}

static json_t *node_to_json(const af_graph_t *g, const af_node_info_t *n, int *oom)
{
    json_t *o = json_object();
    if (!o) {
        *oom = 1;
        return NULL;
    }
    put(o, "name", json_string(n->name), oom);
    put(o, "op", json_string(n->op), oom);
    put(o, "inputs", names_to_json(g, n->inputs, n->n_inputs, oom), oom);
    put(o, "outputs", names_to_json(g, n->outputs, n->n_outputs, oom), oom);
    if (n->cost > 0) /* whole costs print as integers, the way people write them */
        put(o, "cost",
            n->cost < 9007199254740992.0 && n->cost == floor(n->cost)
                ? json_integer((json_int_t)n->cost)
                : json_real(n->cost),
            oom);
    if (n->n_inplace > 0) {
        json_t *arr = json_array();
        for (int32_t i = 0; arr && i < n->n_inplace; i++) {
            json_t *h = json_object();
            if (h) {
                put(h, "output", json_integer(n->inplace[i].output), oom);
                put(h, "input", json_integer(n->inplace[i].input), oom);
            }
            if (json_array_append_new(arr, h))
                *oom = 1;
        }
        put(o, "inplace", arr, oom);
    }
    if (n->n_attrs > 0) {
        json_t *attrs = json_object();
        for (int32_t i = 0; attrs && i < n->n_attrs; i++) {
            json_t *v = attr_to_json(&n->attrs[i]);
            put(attrs, n->attrs[i].name, v, oom);
        }
        put(o, "attrs", attrs, oom);
    }
    return o;
}

/* Growable output buffer fed by json_dump_callback. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf_t;

static int sbuf_add(const char *s, size_t n, void *data)
{
    sbuf_t *b = data;
    if (b->oom || af__grow((void **)&b->p, &b->cap, b->len + n + 1, 1)) {
        b->oom = 1;
        return -1;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

static int sbuf_str(sbuf_t *b, const char *s)
{
    return sbuf_add(s, strlen(s), b);
}

/* Appends one value on a single line ("key": value, ", " separators). */
static int sbuf_json(sbuf_t *b, const json_t *v)
{
    if (json_dump_callback(v, sbuf_add, b,
                           JSON_INDENT(0) | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17)))
        b->oom = 1;
    return b->oom ? -1 : 0;
}

/* JSON has no NaN or infinity: refuse such attributes before writing anything. */
static int check_finite(const af_graph_t *g, af_error_t *err)
{
    for (size_t i = 0; i < g->n_nodes; i++)
        for (int32_t k = 0; k < g->nodes[i].n_attrs; k++) {
            const af_attr_t *a = &g->nodes[i].attrs[k];
            int ok = a->type != AF_ATTR_FLOAT || isfinite(a->f);
            for (int32_t j = 0; ok && a->type == AF_ATTR_FLOATS && j < a->n; j++)
                ok = isfinite(a->floats[j]);
            if (!ok)
                return af__err(err, AF_EINVAL,
                               "node '%s': attribute '%s' holds NaN or infinity, which JSON "
                               "cannot represent",
                               g->nodes[i].name, a->name);
        }
    return 0;
}

/* 1 when s is well-formed UTF-8 as jansson accepts it (no overlong form, surrogate or code
 * point above U+10FFFF). */
static int utf8_ok(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    while (*s) {
        unsigned c = *s;
        int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0)
            return 0;
        uint32_t cp = n == 1 ? c : c & (0x7Fu >> n);
        for (int i = 1; i < n; i++) {
            if ((s[i] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i] & 0x3F);
        }
        if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        s += n;
    }
    return 1;
}

/* JSON strings are UTF-8: refuse names that are not (an ONNX model may carry any bytes) with
 * AF_EINVAL rather than letting jansson's NULL look like out of memory. */
static int check_utf8(const af_graph_t *g, af_error_t *err)
{
    if (!utf8_ok(af_graph_name(g)))
        return af__err(err, AF_EINVAL, "the graph name is not valid UTF-8, which JSON requires");
    for (size_t i = 0; i < g->n_tensors; i++)
        if (!utf8_ok(g->tensors[i].name))
            return af__err(err, AF_EINVAL,
                           "tensor %zu: name is not valid UTF-8, which JSON "
                           "requires",
                           i);
    for (size_t i = 0; i < g->n_nodes; i++) {
        const af_node_info_t *n = &g->nodes[i];
        int ok = utf8_ok(n->name) && utf8_ok(n->op);
        for (int32_t k = 0; ok && k < n->n_attrs; k++)
            ok = utf8_ok(n->attrs[k].name) &&
                 (n->attrs[k].type != AF_ATTR_STRING || !n->attrs[k].s || utf8_ok(n->attrs[k].s));
        if (!ok)
            return af__err(err, AF_EINVAL,
                           "node %zu: a name, op or string attribute is not valid "
                           "UTF-8, which JSON requires",
                           i);
    }
    return 0;
}

static int to_json(const af_graph_t *g, const wlayout_t *w, char **out, af_error_t *err)
{
    if (!g || !out)
        return af__err(err, AF_EINVAL, "af_graph_to_json: NULL argument");
    if (!g->finalized)
        return af__err(err, AF_EINVAL, "af_graph_to_json: graph is not finalized");
    int rc = check_finite(g, err);
    if (rc == 0)
        rc = check_utf8(g, err);
    if (rc)
        return rc;
    sbuf_t b = {0};
    int oom = 0;
    json_t *name = json_string(af_graph_name(g));
    if (!name)
        oom = 1;
    sbuf_str(&b, "{\n  \"format\": \"" AF__GRAPH_FORMAT
                 "\",\n  \"version\": " AF__STR(AF__GRAPH_FORMAT_VERSION) ",\n  \"name\": ");
    if (name)
        sbuf_json(&b, name);
    json_decref(name);
    if (w) {
        json_t *wj = json_object();
        if (wj) {
            put(wj, "file", json_string(w->file), &oom);
            put(wj, "bytes", json_integer((json_int_t)w->total), &oom);
            sbuf_str(&b, ",\n  \"weights\": ");
            sbuf_json(&b, wj);
        }
        json_decref(wj);
        oom |= !wj;
    }
    sbuf_str(&b, ",\n  \"tensors\": [");
    for (size_t i = 0; i < g->n_tensors && !oom && !b.oom; i++) {
        json_t *t = tensor_to_json(g, &g->tensors[i], w, &oom);
        sbuf_str(&b, i ? ",\n    " : "\n    ");
        if (t && !oom)
            sbuf_json(&b, t);
        json_decref(t);
    }
    sbuf_str(&b, g->n_tensors ? "\n  ],\n  \"nodes\": [" : "],\n  \"nodes\": [");
    for (size_t i = 0; i < g->n_nodes && !oom && !b.oom; i++) {
        json_t *n = node_to_json(g, &g->nodes[i], &oom);
        sbuf_str(&b, i ? ",\n    " : "\n    ");
        if (n && !oom)
            sbuf_json(&b, n);
        json_decref(n);
    }
    sbuf_str(&b, g->n_nodes ? "\n  ]\n}\n" : "]\n}\n");
    if (oom || b.oom) {
        af__free(b.p);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    *out = b.p;
    return 0;
}

int af_graph_to_json(const af_graph_t *g, char **out, af_error_t *err)
{
    return to_json(g, NULL, out, err);
}

typedef struct wctx {
    const af_graph_t *g;
    const wlayout_t *w;
} wctx_t;

/* The weights file: each tensor's data at its offset, zero padding between. */
static int fill_weights(int fd, void *ctx)
{
    const wctx_t *c = ctx;
    static const char zeros[64];
    uint64_t at = 0;
    for (size_t i = 0; i < c->g->n_tensors; i++) {
        const af_tensor_info_t *t = &c->g->tensors[i];
        if (!t->data)
            continue;
        if (af_file_write_all(fd, zeros, (size_t)(c->w->off[i] - at)) ||
            af_file_write_all(fd, t->data, (size_t)t->bytes))
            return -1;
        at = c->w->off[i] + (uint64_t)t->bytes;
    }
    return af_file_write_all(fd, zeros, (size_t)(c->w->total - at));
}

/* PATH.json -> PATH.weights; any other name gets ".weights" appended. af__malloc'd. */
static char *weights_path(const char *path)
{
    size_t n = strlen(path);
    if (n > 5 && !strcmp(path + n - 5, ".json"))
        n -= 5;
    char *w = af__malloc(n + 9);
    if (w) {
        memcpy(w, path, n);
        memcpy(w + n, ".weights", 9);
    }
    return w;
}

int af_graph_save_json(const af_graph_t *g, const char *path, af_error_t *err)
{
    if (!path || !g)
        return af__err(err, AF_EINVAL, "af_graph_save_json: NULL argument");
    wlayout_t lay = {0};
    char *wpath = NULL, *text = NULL;
    int rc = 0;
    for (size_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].data && g->tensors[i].dtype == AF_DTYPE_STRING)
            return af__err(err, AF_ENOTSUP,
                           "tensor '%s': a string constant has no weights-file form (its "
                           "elements are handles to bytes elsewhere); keep the model as ONNX",
                           g->tensors[i].name);
    if (af_graph_data_bytes(g)) { /* the weights first: the JSON names a complete file */
        wpath = weights_path(path);
        lay.off = af__calloc(g->n_tensors + 1, sizeof(*lay.off));
        if (!wpath || !lay.off) {
            rc = af__err(err, AF_ENOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < g->n_tensors; i++)
            if (g->tensors[i].data) {
                lay.off[i] = af__align_up(lay.total, 64); /* every tensor 64-byte aligned */
                lay.total = lay.off[i] + (uint64_t)g->tensors[i].bytes;
            }
        const char *slash = strrchr(wpath, '/');
        lay.file = slash ? slash + 1 : wpath;
        wctx_t wc = {g, &lay};
        if ((rc = af_file_write_durable_fn(wpath, fill_weights, &wc, err)))
            goto out;
    }
    if (!(rc = to_json(g, lay.off ? &lay : NULL, &text, err)))
        rc = af_file_write_durable(path, text, strlen(text), err);
out:
    af__free(text);
    af__free(wpath);
    af__free(lay.off);
    return rc;
}
