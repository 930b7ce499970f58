/*
 * The JSON graph format (docs/graph-format.md): the reader, on jansson. The writer is in
 * graph/json_write.c.
 *
 * Reading is two steps. jansson parses the text into a DOM (duplicate keys rejected, so a
 * repeated key is a syntax error with line and column); then the DOM is walked against a
 * strict schema and fed to the builder (af_graph_add_tensor/add_node/node_set_attr) and
 * af_graph_finalize(), which does the graph-level validation. Every object is checked for
 * unknown keys first, so a misspelt key ("byts") is an error, never silently ignored.
 *
 * Integers too large for int64 are a syntax error in jansson ("too big integer"), which cannot
 * name the tensor. On that error the text is parsed once more with every number read as a
 * double; the schema walk then meets the oversized value in its field and reports AF_ESIZE
 * with the tensor's name. (The first error found in that second pass is reported; if the walk
 * finds none, the original syntax error is.)
 *
 * Memory: the library's own allocations go through the af__ hooks; jansson's DOM uses
 * jansson's allocator (the process-wide json_set_alloc_funcs is left alone, since other
 * modules use jansson too). Every path frees the DOM and the half-built graph.
 *
 * Threading: no shared state; concurrent calls on different graphs are safe.
 */
#include "graph/graph_int.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parsing context: mode for the second pass after an integer overflow, the weights file. */
typedef struct ctx {
    af_error_t *err;
    int ints_as_real;     /* numbers were decoded as doubles (second pass) */
    const char *dir;      /* directory of the JSON file (weights), NULL when read from memory */
    af__store_t *weights; /* the mapped weights file, when the graph names one */
} ctx_t;

/* ---- schema helpers --------------------------------------------------------------------- */

/*
 * Rejects keys of obj not in the NULL-terminated list `allowed`. The object is named in the
 * message as `what` followed by `name` in quotes (when name is not NULL), e.g. tensor 'x'.
 */
static int check_keys(const json_t *obj, const char *const *allowed, const char *what,
                      const char *name, af_error_t *err)
{
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val)
    {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(*a, key) == 0;
        if (!ok) {
            char list[200];
            size_t len = 0;
            list[0] = '\0';
            for (const char *const *a = allowed; *a && len < sizeof(list); a++)
                len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
                                        a == allowed ? "" : ", ", *a);
            return af__err(err, AF_EPARSE, "%s%s%s%s: unknown key '%s' (expected one of: %s)", what,
                           name ? " '" : "", name ? name : "", name ? "'" : "", key, list);
        }
    }
    return 0;
}

/*
 * Reads an integer field. Accepts a JSON integer, or (second pass only) an integral double.
 * Returns 0 and *out, 1 when the value is a number out of int64 range or not integral
 * (the caller decides the error code), or -1 when it is not a number.
 */
static int get_int(const ctx_t *c, const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return 0;
    }
    if (!json_is_real(v))
        return -1;
    double d = json_real_value(v);
    /* 9223372036854775808.0 == 2^63 is the first double above INT64_MAX. */
    if (!c->ints_as_real || d != floor(d) || d >= 9223372036854775808.0 ||
        d < -9223372036854775808.0)
        return 1;
    *out = (int64_t)d;
    return 0;
}

/* Reads a byte count (bytes, offset): an integer in [0, INT64_MAX], else AF_ESIZE. */
static int read_size(const ctx_t *c, const json_t *v, const char *tensor, const char *field,
                     int64_t *out)
{
    int r = get_int(c, v, out);
    if (r == 0 && *out >= 0)
        return 0;
    if (r == 0)
        return af__err(c->err, AF_ESIZE, "tensor '%s': negative %s %lld", tensor, field,
                       (long long)*out);
    if (r > 0 && json_real_value(v) != floor(json_real_value(v)))
        return af__err(c->err, AF_ESIZE, "tensor '%s': %s %g is not a whole number of bytes",
                       tensor, field, json_real_value(v));
    if (r > 0)
        return af__err(c->err, AF_ESIZE, "tensor '%s': %s %.0f is larger than 2^63-1", tensor,
                       field, json_real_value(v));
    return af__err(c->err, AF_ESIZE, "tensor '%s': %s must be an integer", tensor, field);
}

/* ---- tensors ---------------------------------------------------------------------------- */

static const char *const tensor_keys[] = {"name",    "bytes", "dtype",          "shape",
                                          "dynamic", "kind",  "alias_of",       "offset",
                                          "comment", "data",  "dynamic_reason", NULL};

static const struct {
    const char *name;
    af_tensor_kind_t kind;
} kind_table[] = {
    {"intermediate", AF_TENSOR_INTERMEDIATE},
    {"input", AF_TENSOR_INPUT},
    {"output", AF_TENSOR_OUTPUT},
    {"constant", AF_TENSOR_CONSTANT},
    {"scratch", AF_TENSOR_SCRATCH},
};

const char *af__graph_kind_name(af_tensor_kind_t k)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(kind_table); i++)
        if (kind_table[i].kind == k)
            return kind_table[i].name;
    return "intermediate";
}

static int read_shape(const ctx_t *c, const json_t *shape, const char *name, int64_t *dims,
                      int *rank)
{
    af_error_t *err = c->err;
    if (!json_is_array(shape))
        return af__err(err, AF_EPARSE, "tensor '%s': 'shape' must be an array", name);
    size_t n = json_array_size(shape);
    if (n > AF_MAX_RANK)
        return af__err(err, AF_EINVAL, "tensor '%s': rank %zu exceeds the maximum %d", name, n,
                       AF_MAX_RANK);
    for (size_t i = 0; i < n; i++) {
        const json_t *d = json_array_get(shape, i);
        if (json_is_string(d)) { /* symbolic dim ("batch"): unknown until run time */
            dims[i] = -1;
            continue;
        }
        int r = get_int(c, d, &dims[i]);
        if (r < 0)
            return af__err(err, AF_EPARSE,
                           "tensor '%s': shape[%zu] must be an integer or a dimension name", name,
                           i);
        if (r > 0 || dims[i] < -1)
            return af__err(err, AF_ESIZE,
                           "tensor '%s': shape[%zu] is not a valid dimension (want >= 0, or -1 "
                           "for unknown)",
                           name, i);
    }
    *rank = (int)n;
    return 0;
}

/* "data": {"offset": O, "bytes": B}: the tensor's bytes in the weights file. */
static int read_data(const ctx_t *c, af_graph_t *g, int32_t id, const char *name, const json_t *v)
{
    static const char *const keys[] = {"offset", "bytes", NULL};
    int rc;
    if (!json_is_object(v))
        return af__err(c->err, AF_EPARSE, "tensor '%s': 'data' must be an object", name);
    if ((rc = check_keys(v, keys, "data of tensor", name, c->err)))
        return rc;
    if (!c->weights)
        return af__err(c->err, AF_EPARSE, "tensor '%s' has 'data' but the graph names no weights",
                       name);
    int64_t off, bytes;
    const json_t *jo = json_object_get(v, "offset"), *jb = json_object_get(v, "bytes");
    if (!jo || !jb)
        return af__err(c->err, AF_EPARSE, "tensor '%s': 'data' needs 'offset' and 'bytes'", name);
    if ((rc = read_size(c, jo, name, "data offset", &off)) ||
        (rc = read_size(c, jb, name, "data bytes", &bytes)))
        return rc;
    if ((uint64_t)off > c->weights->len || (uint64_t)bytes > c->weights->len - (uint64_t)off)
        return af__err(c->err, AF_EPARSE,
                       "tensor '%s': data at %lld (+%lld bytes) lies outside the weights file "
                       "(%zu bytes)",
                       name, (long long)off, (long long)bytes, c->weights->len);
    const af_tensor_info_t *t = &g->tensors[id];
    if (t->dtype == AF_DTYPE_STRING) /* the file would hold handles: addresses, not strings */
        return af__err(c->err, AF_ENOTSUP,
                       "tensor '%s': a string constant cannot come from a weights file", name);
    if (t->bytes != bytes)
        return af__err(c->err, AF_ESIZE, "tensor '%s': %lld bytes of data for a %lld-byte tensor",
                       name, (long long)bytes, (long long)t->bytes);
    const uint8_t *p = c->weights->base + off;
    uint32_t es = af_dtype_size(t->dtype);
    if (es > 1 && ((uintptr_t)p & (es - 1))) /* misaligned (not written by us): a copy */
        return af_graph_set_data(g, id, p, bytes, AF_DATA_COPY, c->err);
    return af__graph_attach(g, id, c->weights, p, c->err); /* zero-copy into the mapping */
}

static int read_tensor(const ctx_t *c, af_graph_t *g, const json_t *t, size_t idx)
{
    af_error_t *err = c->err;
    if (!json_is_object(t))
        return af__err(err, AF_EPARSE, "tensors[%zu] must be an object", idx);
    const json_t *jname = json_object_get(t, "name");
    if (!json_is_string(jname) || !json_string_value(jname)[0])
        return af__err(err, AF_EPARSE, "tensors[%zu] has no 'name' (a non-empty string)", idx);
    const char *name = json_string_value(jname);
    int rc = check_keys(t, tensor_keys, "tensor", name, err);
    if (rc)
        return rc;

    af_tensor_desc_t d = {0};
    int64_t dims[AF_MAX_RANK];
    d.name = name;
    d.rank = -1;
    d.shape = dims;
    d.dtype = AF_DTYPE_UNKNOWN;

    const json_t *v;
    if ((v = json_object_get(t, "kind"))) {
        size_t i = 0;
        if (json_is_string(v))
            for (; i < AF_ARRAY_SIZE(kind_table); i++)
                if (strcmp(json_string_value(v), kind_table[i].name) == 0)
                    break;
        if (!json_is_string(v) || i == AF_ARRAY_SIZE(kind_table))
            return af__err(err, AF_EPARSE,
                           "tensor '%s': 'kind' must be one of input, output, constant, "
                           "intermediate",
                           name);
        d.kind = kind_table[i].kind;
    }
    if ((v = json_object_get(t, "dtype"))) {
        if (!json_is_string(v) || af_dtype_parse(json_string_value(v), &d.dtype))
            return af__err(err, AF_EPARSE, "tensor '%s': unknown dtype %s%s%s", name,
                           json_is_string(v) ? "'" : "",
                           json_is_string(v) ? json_string_value(v) : "(not a string)",
                           json_is_string(v) ? "'" : "");
    }
    if ((v = json_object_get(t, "shape")) && (rc = read_shape(c, v, name, dims, &d.rank)))
        return rc;

    const json_t *jbytes = json_object_get(t, "bytes");
    const json_t *jdyn = json_object_get(t, "dynamic");
    if (jdyn && !json_is_boolean(jdyn))
        return af__err(err, AF_EPARSE, "tensor '%s': 'dynamic' must be true or false", name);
    int dynamic = json_is_true(jdyn);
    if (jbytes && dynamic)
        return af__err(err, AF_EINVAL, "tensor '%s': 'bytes' and \"dynamic\": true conflict", name);
    if (jbytes) {
        if ((rc = read_size(c, jbytes, name, "bytes", &d.bytes)))
            return rc;
    } else if (dynamic) {
        d.bytes = AF_BYTES_DYNAMIC;
    } else if (d.rank >= 0 && d.dtype != AF_DTYPE_UNKNOWN) {
        d.bytes = AF_BYTES_FROM_SHAPE; /* the builder multiplies (and checks for overflow) */
    } else {
        return af__err(err, AF_ESIZE,
                       "tensor '%s' has no size: give 'bytes', 'dtype' and 'shape', or "
                       "\"dynamic\": true",
                       name);
    }

    const json_t *jalias = json_object_get(t, "alias_of");
    const json_t *joff = json_object_get(t, "offset");
    if (jalias) {
        if (!json_is_string(jalias) || !json_string_value(jalias)[0])
            return af__err(err, AF_EPARSE, "tensor '%s': 'alias_of' must be a tensor name", name);
        d.alias_of = json_string_value(jalias);
    }
    if (joff) {
        if (!jalias)
            return af__err(err, AF_EPARSE,
                           "tensor '%s': 'offset' is only meaningful with 'alias_of'", name);
        if ((rc = read_size(c, joff, name, "offset", &d.alias_offset)))
            return rc;
    }
    if ((v = json_object_get(t, "comment")) && !json_is_string(v))
        return af__err(err, AF_EPARSE, "tensor '%s': 'comment' must be a string", name);
    const json_t *why = json_object_get(t, "dynamic_reason");
    if (why && !json_is_string(why))
        return af__err(err, AF_EPARSE, "tensor '%s': 'dynamic_reason' must be a string", name);
    int32_t id;
    if ((rc = af_graph_add_tensor(g, &d, &id, err)))
        return rc;
    if (why && d.bytes == AF_BYTES_DYNAMIC &&
        (rc = af_graph_set_dynamic_reason(g, id, json_string_value(why), err)))
        return rc;
    return (v = json_object_get(t, "data")) ? read_data(c, g, id, name, v) : 0;
}

/* ---- nodes ------------------------------------------------------------------------------ */

static const char *const node_keys[] = {"name",  "op",      "inputs",  "outputs", "cost",
                                        "attrs", "inplace", "comment", NULL};
static const char *const inplace_keys[] = {"output", "input", NULL};

/* Fills *names (af__malloc'd array of borrowed strings) from a JSON array of names. */
static int read_names(const json_t *arr, const char *node, const char *field, const char ***names,
                      int32_t *n, af_error_t *err)
{
    *names = NULL;
    *n = 0;
    if (!arr)
        return 0;
    if (!json_is_array(arr))
        return af__err(err, AF_EPARSE, "node '%s': '%s' must be an array of tensor names", node,
                       field);
    size_t cnt = json_array_size(arr);
    if (cnt > INT32_MAX / 2)
        return af__err(err, AF_EINVAL, "node '%s': too many %s", node, field);
    const char **v = af__malloc((cnt ? cnt : 1) * sizeof(*v));
    if (!v)
        return af__err(err, AF_ENOMEM, "out of memory");
    for (size_t i = 0; i < cnt; i++) {
        const json_t *s = json_array_get(arr, i);
        if (!json_is_string(s) || !json_string_value(s)[0]) {
            af__free(v);
            return af__err(err, AF_EPARSE, "node '%s': %s[%zu] must be a tensor name", node, field,
                           i);
        }
        v[i] = json_string_value(s);
    }
    *names = v;
    *n = (int32_t)cnt;
    return 0;
}

static int read_inplace(const ctx_t *c, const json_t *arr, const char *node, af_inplace_t **out,
                        int32_t *n)
{
    af_error_t *err = c->err;
    *out = NULL;
    *n = 0;
    if (!arr)
        return 0;
    if (!json_is_array(arr))
        return af__err(err, AF_EPARSE, "node '%s': 'inplace' must be an array", node);
    size_t cnt = json_array_size(arr);
    if (cnt > INT32_MAX / 2)
        return af__err(err, AF_EINVAL, "node '%s': too many in-place hints", node);
    af_inplace_t *v = af__malloc((cnt ? cnt : 1) * sizeof(*v));
    if (!v)
        return af__err(err, AF_ENOMEM, "out of memory");
    for (size_t i = 0; i < cnt; i++) {
        const json_t *h = json_array_get(arr, i);
        int64_t o = -1, in = -1;
        int rc = 0;
        if (!json_is_object(h))
            rc = af__err(err, AF_EPARSE, "node '%s': inplace[%zu] must be an object", node, i);
        else if (!(rc = check_keys(h, inplace_keys, "in-place hint of node", node, err)) &&
                 (get_int(c, json_object_get(h, "output"), &o) != 0 ||
                  get_int(c, json_object_get(h, "input"), &in) != 0 || o < 0 || in < 0 ||
                  o > INT32_MAX || in > INT32_MAX))
            rc = af__err(err, AF_EPARSE,
                         "node '%s': inplace[%zu] needs integer 'output' and 'input' indexes >= 0",
                         node, i);
        if (rc) {
            af__free(v);
            return rc;
        }
        v[i].output = (int32_t)o;
        v[i].input = (int32_t)in;
    }
    *out = v;
    *n = (int32_t)cnt;
    return 0;
}

/* Reads one attribute value. Arrays of integers are INTS, arrays with any real are FLOATS. */
static int read_attr(const ctx_t *c, af_graph_t *g, int32_t node, const char *key, const json_t *v)
{
    af_error_t *err = c->err;
    const char *nname = af_graph_node(g, node)->name;
    af_attr_t a = {0};
    a.name = key;
    if (json_is_integer(v) || json_is_boolean(v)) {
        a.type = AF_ATTR_INT;
        a.i = json_is_boolean(v) ? json_is_true(v) : (int64_t)json_integer_value(v);
    } else if (json_is_real(v)) {
        a.type = AF_ATTR_FLOAT;
        a.f = json_real_value(v);
    } else if (json_is_string(v)) {
        a.type = AF_ATTR_STRING;
        a.s = json_string_value(v);
    } else if (json_is_array(v)) {
        size_t n = json_array_size(v);
        int any_real = 0;
        for (size_t i = 0; i < n; i++) {
            const json_t *e = json_array_get(v, i);
            if (!json_is_number(e))
                return af__err(err, AF_EPARSE,
                               "node '%s': attribute '%s'[%zu] must be a number (lists hold "
                               "ints or floats)",
                               nname, key, i);
            any_real |= json_is_real(e);
        }
        if (n > INT32_MAX / 2)
            return af__err(err, AF_EINVAL, "node '%s': attribute '%s' is too long", nname, key);
        a.type = any_real ? AF_ATTR_FLOATS : AF_ATTR_INTS;
        a.n = (int32_t)n;
        void *buf = af__malloc((n ? n : 1) * (any_real ? sizeof(double) : sizeof(int64_t)));
        if (!buf)
            return af__err(err, AF_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
            const json_t *e = json_array_get(v, i);
            if (any_real)
                ((double *)buf)[i] = json_number_value(e);
            else
                ((int64_t *)buf)[i] = (int64_t)json_integer_value(e);
        }
        if (any_real)
            a.floats = buf;
        else
            a.ints = buf;
        int rc = af_graph_node_set_attr(g, node, &a, err);
        af__free(buf);
        return rc;
    } else {
        return af__err(err, AF_EPARSE,
                       "node '%s': attribute '%s' must be an int, float, string or list of "
                       "numbers",
                       nname, key);
    }
    return af_graph_node_set_attr(g, node, &a, err);
}

static int read_node(const ctx_t *c, af_graph_t *g, const json_t *n, size_t idx)
{
    af_error_t *err = c->err;
    char autoname[32];
    if (!json_is_object(n))
        return af__err(err, AF_EPARSE, "nodes[%zu] must be an object", idx);
    const json_t *jname = json_object_get(n, "name");
    if (jname && (!json_is_string(jname) || !json_string_value(jname)[0]))
        return af__err(err, AF_EPARSE, "nodes[%zu]: 'name' must be a non-empty string", idx);
    /* Unnamed nodes are named "node<index>" by the builder; messages use the same label. */
    const char *label = autoname;
    if (jname)
        label = json_string_value(jname);
    else
        snprintf(autoname, sizeof(autoname), "node%zu", idx);
    int rc = check_keys(n, node_keys, "node", label, err);
    if (rc)
        return rc;
    const json_t *op = json_object_get(n, "op");
    if (!json_is_string(op) || !json_string_value(op)[0])
        return af__err(err, AF_EPARSE, "node '%s' has no 'op' (a non-empty string)", label);

    af_node_desc_t d = {0};
    d.name = jname ? json_string_value(jname) : NULL;
    d.op = json_string_value(op);
    const json_t *v;
    if ((v = json_object_get(n, "cost"))) {
        if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
            return af__err(err, AF_EPARSE, "node '%s': 'cost' must be a number >= 0", label);
        d.cost = json_number_value(v);
    }
    if ((v = json_object_get(n, "comment")) && !json_is_string(v))
        return af__err(err, AF_EPARSE, "node '%s': 'comment' must be a string", label);
    const json_t *attrs = json_object_get(n, "attrs");
    if (attrs && !json_is_object(attrs))
        return af__err(err, AF_EPARSE, "node '%s': 'attrs' must be an object", label);

    const char **ins = NULL, **outs = NULL;
    af_inplace_t *ip = NULL;
    int32_t id = -1;
    if ((rc = read_names(json_object_get(n, "inputs"), label, "inputs", &ins, &d.n_inputs, err)) ||
        (rc = read_names(json_object_get(n, "outputs"), label, "outputs", &outs, &d.n_outputs,
                         err)) ||
        (rc = read_inplace(c, json_object_get(n, "inplace"), label, &ip, &d.n_inplace)))
        goto out;
    d.inputs = ins;
    d.outputs = outs;
    d.inplace = ip;
    if ((rc = af_graph_add_node(g, &d, &id, err)))
        goto out;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)attrs, key, val)
    {
        if ((rc = read_attr(c, g, id, key, val)))
            goto out;
    }
out:
    af__free(ins);
    af__free(outs);
    af__free(ip);
    return rc;
}

/* ---- top level -------------------------------------------------------------------------- */

static const char *const top_keys[] = {"format", "version", "name",    "tensors",
                                       "nodes",  "comment", "weights", NULL};

/* "weights": {"file": NAME, "bytes": N}: maps NAME (next to the JSON file) into c->weights. */
static int open_weights(ctx_t *c, const json_t *w)
{
    static const char *const keys[] = {"file", "bytes", NULL};
    int rc;
    if (!json_is_object(w))
        return af__err(c->err, AF_EPARSE, "graph: 'weights' must be an object");
    if ((rc = check_keys(w, keys, "weights", NULL, c->err)))
        return rc;
    const json_t *f = json_object_get(w, "file"), *b = json_object_get(w, "bytes");
    int64_t bytes;
    if (!json_is_string(f) || !b || get_int(c, b, &bytes) || bytes < 0)
        return af__err(c->err, AF_EPARSE,
                       "graph: 'weights' needs 'file' (a file name) and 'bytes' (its size)");
    if (!c->dir)
        return af__err(c->err, AF_ENOTSUP,
                       "the graph's constants are in the weights file '%s': load the graph from "
                       "its file so the weights can be found",
                       json_string_value(f));
    char *path = NULL;
    if ((rc = af__store_resolve(c->dir, json_string_value(f), &path, c->err)))
        return rc;
    rc = af__store_map(path, &c->weights, c->err);
    if (!rc && c->weights->len != (uint64_t)bytes)
        rc = af__err(c->err, AF_EPARSE,
                     "weights file '%s' has %zu bytes, the graph says %lld (not the file written "
                     "with this graph)",
                     path, c->weights->len, (long long)bytes);
    af__free(path);
    return rc;
}

static int read_graph(ctx_t *c, const json_t *root, af_graph_t *g)
{
    af_error_t *err = c->err;
    if (!json_is_object(root))
        return af__err(err, AF_EPARSE, "a graph file must hold one JSON object");
    int rc = check_keys(root, top_keys, "graph", NULL, err);
    if (rc)
        return rc;
    const json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), AF__GRAPH_FORMAT) != 0)
        return af__err(err, AF_EPARSE, "not an arenaflow graph: \"format\" must be \"%s\"",
                       AF__GRAPH_FORMAT);
    const json_t *ver = json_object_get(root, "version");
    int64_t version = 0;
    if (get_int(c, ver, &version) != 0)
        return af__err(err, AF_EPARSE, "\"version\" must be an integer (this reader knows %d)",
                       AF__GRAPH_FORMAT_VERSION);
    if (version != AF__GRAPH_FORMAT_VERSION)
        return af__err(err, AF_ENOTSUP, "graph format version %lld is not supported (only %d)",
                       (long long)version, AF__GRAPH_FORMAT_VERSION);
    const json_t *v;
    if ((v = json_object_get(root, "comment")) && !json_is_string(v))
        return af__err(err, AF_EPARSE, "graph: 'comment' must be a string");
    if ((v = json_object_get(root, "name"))) {
        if (!json_is_string(v))
            return af__err(err, AF_EPARSE, "graph: 'name' must be a string");
        if (af_graph_set_name(g, json_string_value(v)))
            return af__err(err, AF_ENOMEM, "out of memory");
    }
    if ((v = json_object_get(root, "weights")) && (rc = open_weights(c, v)))
        return rc;
    const json_t *tensors = json_object_get(root, "tensors");
    const json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(tensors))
        return af__err(err, AF_EPARSE, "graph: 'tensors' must be an array");
    if (!json_is_array(nodes))
        return af__err(err, AF_EPARSE, "graph: 'nodes' must be an array");
    for (size_t i = 0; i < json_array_size(tensors); i++)
        if ((rc = read_tensor(c, g, json_array_get(tensors, i), i)))
            return rc;
    for (size_t i = 0; i < json_array_size(nodes); i++)
        if ((rc = read_node(c, g, json_array_get(nodes, i), i)))
            return rc;
    return af_graph_finalize(g, err);
}

/* Builds a graph from a parsed DOM; *out set only on success. */
static int graph_from_dom(ctx_t *c, const json_t *root, af_graph_t **out)
{
    af_graph_t *g = NULL;
    if (af_graph_create(&g))
        return af__err(c->err, AF_ENOMEM, "out of memory");
    int rc = read_graph(c, root, g);
    af__store_unref(c->weights); /* the tensors hold their own references */
    c->weights = NULL;
    if (rc) {
        af_graph_destroy(g);
        return rc;
    }
    *out = g;
    return 0;
}

/* Parses text; dir is the directory weights files are looked up in (NULL: none). */
static int parse(const char *text, size_t len, const char *dir, af_graph_t **out, af_error_t *err)
{
    if (!text || !out)
        return af__err(err, AF_EINVAL, "af_graph_parse_json: NULL argument");
    json_error_t jerr;
    ctx_t c = {err, 0, dir, NULL};
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root) {
        int rc = graph_from_dom(&c, root, out);
        json_decref(root);
        return rc;
    }
    int rc = af__err(err, AF_EPARSE, "malformed JSON at line %d, column %d: %s", jerr.line,
                     jerr.column, jerr.text);
    if (json_error_code(&jerr) != json_error_numeric_overflow)
        return rc;
    /* Second pass to name the field whose integer overflowed (see the file comment). */
    af_error_t second;
    af_error_clear(&second);
    c.err = &second;
    c.ints_as_real = 1;
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &jerr);
    if (!root)
        return rc;
    af_graph_t *g = NULL;
    int rc2 = graph_from_dom(&c, root, &g);
    json_decref(root);
    af_graph_destroy(g);
    if (rc2 == 0 || rc2 == AF_ENOMEM)
        return rc;
    if (err)
        *err = second;
    return rc2;
}

int af_graph_parse_json(const char *text, size_t len, af_graph_t **out, af_error_t *err)
{
    return parse(text, len, NULL, out, err);
}

/* Reads a whole file (or stdin for "-") into an af__malloc'd buffer. */
static int read_file(const char *path, char **buf, size_t *len, af_error_t *err)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return af__err(err, AF_EIO, "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 0, n = 0;
    char *b = NULL;
    int rc = 0;
    for (;;) {
        if (af__grow((void **)&b, &cap, n + 65536, 1)) {
            rc = af__err(err, AF_ENOMEM, "out of memory reading '%s'", path);
            break;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                rc = af__err(err, AF_EIO, "cannot read '%s': %s", path, strerror(errno));
            break;
        }
    }
    if (f != stdin)
        fclose(f);
    if (rc) {
        af__free(b);
        return rc;
    }
    *buf = b;
    *len = n;
    return 0;
}

int af_graph_load_json(const char *path, af_graph_t **out, af_error_t *err)
{
    if (!path || !out)
        return af__err(err, AF_EINVAL, "af_graph_load_json: NULL argument");
    char *buf = NULL;
    size_t len = 0;
    int rc = read_file(path, &buf, &len, err);
    if (rc)
        return rc;
    char *dir = af__path_dir(strcmp(path, "-") ? path : "./-"); /* stdin: the cwd */
    if (!dir) {
        af__free(buf);
        return af__err(err, AF_ENOMEM, "out of memory");
    }
    rc = parse(buf, len, dir, out, err);
    af__free(dir);
    af__free(buf);
    return rc;
}
