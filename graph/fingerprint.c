/*
 * Graph identity: one XXH3-128 over the fields planning and execution read (constant data
 * included), in id order. The
 * library's plan cache (planner: af_plan_fingerprint, with the planner options as the salt) and
 * anything else that names a graph by its content use this one function, so two components
 * never disagree on whether two graphs are the same.
 *
 * Every variable-length field is preceded by its length, so no two different graphs feed the
 * same byte stream. Numbers are hashed in native byte order.
 *
 * Lock rule: none; a finalized graph is only read.
 */
#define XXH_STATIC_LINKING_ONLY
#include "graph/graph_int.h"

#include <stdio.h>
#include <string.h>
#include <xxhash.h>

static void h_bytes(XXH3_state_t *s, const void *p, size_t n)
{
    XXH3_128bits_update(s, p, n);
}
static void h_u64(XXH3_state_t *s, uint64_t v)
{
    h_bytes(s, &v, sizeof v);
}
static void h_f64(XXH3_state_t *s, double v)
{
    h_bytes(s, &v, sizeof v);
}
static void h_str(XXH3_state_t *s, const char *str)
{
    size_t n = str ? strlen(str) : 0;
    h_u64(s, n);
    h_bytes(s, str ? str : "", n);
}

static void h_attrs(XXH3_state_t *s, const af_node_info_t *ni)
{
    h_u64(s, (uint64_t)ni->n_attrs);
    for (int32_t a = 0; a < ni->n_attrs; a++) {
        const af_attr_t *at = &ni->attrs[a];
        h_str(s, at->name);
        h_u64(s, (uint64_t)at->type);
        h_u64(s, (uint64_t)at->i);
        h_f64(s, at->f);
        h_str(s, at->type == AF_ATTR_STRING ? at->s : NULL);
        h_u64(s, (uint64_t)at->n);
        if (at->type == AF_ATTR_INTS && at->n > 0)
            h_bytes(s, at->ints, (size_t)at->n * sizeof(int64_t));
        if (at->type == AF_ATTR_FLOATS && at->n > 0)
            h_bytes(s, at->floats, (size_t)at->n * sizeof(double));
    }
}

int af_graph_fingerprint(const af_graph_t *g, const void *salt, size_t salt_len,
                         af_fingerprint_t *out)
{
    if (!g || !out || !af_graph_is_finalized(g) || (!salt && salt_len))
        return AF_EINVAL;
    XXH3_state_t s;
    XXH3_128bits_reset(&s);
    h_u64(&s, salt_len);
    h_bytes(&s, salt ? salt : "", salt_len);
    h_str(&s, af_graph_name(g));
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    h_u64(&s, (uint64_t)nt);
    h_u64(&s, (uint64_t)nn);
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        h_str(&s, ti->name);
        uint64_t v[] = {(uint64_t)ti->bytes, (uint64_t)ti->dtype,    (uint64_t)ti->rank,
                        (uint64_t)ti->kind,  (uint64_t)ti->alias_of, (uint64_t)ti->alias_offset};
        h_bytes(&s, v, sizeof v);
        if (ti->rank > 0)
            h_bytes(&s, ti->shape, (size_t)ti->rank * sizeof(int64_t));
        /* Constant data is part of the identity: two models of one structure with different
         * weights are different graphs (the plan cache hands out its own copy of the graph,
         * weights included, so a structure-only key would run one model's weights for the
         * other's). */
        h_u64(&s, ti->data ? 1 : 0);
        if (ti->data && ti->dtype == AF_DTYPE_STRING) /* the strings, not where they are */
            for (size_t k = 0; k < (size_t)ti->bytes / sizeof(af_string_t); k++) {
                const af_string_t *e = (const af_string_t *)ti->data + k;
                h_u64(&s, e->len);
                if (e->len)
                    h_bytes(&s, e->data, (size_t)e->len);
            }
        else if (ti->data)
            h_bytes(&s, ti->data, (size_t)ti->bytes);
    }
    for (int32_t v = 0; v < nn; v++) {
        const af_node_info_t *ni = af_graph_node(g, v);
        h_str(&s, ni->name);
        h_str(&s, ni->op);
        h_u64(&s, (uint64_t)ni->n_inputs);
        h_bytes(&s, ni->inputs, (size_t)ni->n_inputs * sizeof(int32_t));
        h_u64(&s, (uint64_t)ni->n_outputs);
        h_bytes(&s, ni->outputs, (size_t)ni->n_outputs * sizeof(int32_t));
        h_f64(&s, ni->cost);
        h_u64(&s, (uint64_t)ni->n_inplace);
        if (ni->n_inplace > 0)
            h_bytes(&s, ni->inplace, (size_t)ni->n_inplace * sizeof(af_inplace_t));
        h_attrs(&s, ni);
    }
    XXH128_hash_t h = XXH3_128bits_digest(&s);
    out->hi = h.high64;
    out->lo = h.low64;
    return 0;
}

void af_fingerprint_hex(const af_fingerprint_t *fp, char out[AF_FINGERPRINT_HEX])
{
    snprintf(out, AF_FINGERPRINT_HEX, "%016llx%016llx", (unsigned long long)fp->hi,
             (unsigned long long)fp->lo);
}
