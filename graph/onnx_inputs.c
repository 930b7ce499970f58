/*
 * ONNX importer — graph inputs, user dims and the shapes a model declares.
 *
 * User specs "NAME=1,3,224,224" fix a graph input's dims (a dim the model fixes must agree,
 * and the input's symbolic dims get bound to the given values); "PARAM=4" binds a symbolic dim
 * by name wherever it appears. Bound symbols also resolve dims in declared types (value_info,
 * graph outputs), which af__onnx_merge_declared() merges into what inference found: it fills
 * unknown dims and rejects a contradiction (AF_ESHAPE) rather than picking one. An input left
 * with unknown dims is an error naming the input and its symbols, unless allow_dynamic.
 * Reentrant: all state is in the importer.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const Onnx__TypeProto__Tensor *af__onnx_tensor_type(const Onnx__ValueInfoProto *vi)
{
    if (!vi || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return NULL;
    return vi->type->tensor_type;
}

static int bound_param(const af__onnx_imp_t *im, const char *param, int64_t *out)
{
    for (size_t i = 0; param && i < im->n_binds; i++)
        if (!strcmp(im->binds[i].param, param)) {
            *out = im->binds[i].value;
            return 1;
        }
    return 0;
}

/* Dim d of a declared type: value, bound symbolic parameter, or -1. */
static int64_t declared_dim(const af__onnx_imp_t *im, const Onnx__TensorShapeProto__Dimension *d)
{
    int64_t v = -1;
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0)
        return d->dim_value;
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
        bound_param(im, d->dim_param, &v);
    return v;
}

/* Merges what the model declares into v; a contradiction is AF_ESHAPE. */
int af__onnx_merge_declared(af__onnx_imp_t *im, af__onnx_val_t *v, const char *where)
{
    const Onnx__TypeProto__Tensor *t = v->declared;
    if (!t)
        return 0;
    if (!v->elem && t->has_elem_type)
        v->elem = t->elem_type;
    if (!t->shape)
        return 0;
    int r = (int)t->shape->n_dim;
    if (t->shape->n_dim > AF__ONNX_RANK_MAX)
        return af__err(im->err, AF_ENOTSUP, "tensor '%s': rank %zu above %d", v->name,
                       t->shape->n_dim, AF__ONNX_RANK_MAX);
    if (v->rank >= 0 && v->rank != r)
        return af__err(im->err, AF_ESHAPE, "tensor '%s'%s: inferred rank %d, the model declares %d",
                       v->name, where, v->rank, r);
    if (v->rank < 0)
        af__onnx_set_rank(v, r);
    for (int i = 0; i < r; i++) {
        int64_t d = declared_dim(im, t->shape->dim[i]);
        if (d < 0)
            continue;
        if (v->dims[i] >= 0 && v->dims[i] != d)
            return af__err(im->err, AF_ESHAPE,
                           "tensor '%s'%s: inferred dim %d = %lld, the model declares %lld",
                           v->name, where, i, (long long)v->dims[i], (long long)d);
        v->dims[i] = d;
    }
    return 0;
}

static int add_binding(af__onnx_imp_t *im, const char *param, int64_t value)
{
    int64_t old;
    if (bound_param(im, param, &old))
        return old == value
                   ? 0
                   : af__err(im->err, AF_EINVAL, "symbolic dim '%s' set to both %lld and %lld",
                             param, (long long)old, (long long)value);
    if (af__grow((void **)&im->binds, &im->cap_binds, im->n_binds + 1, sizeof(*im->binds)))
        return af__err(im->err, AF_ENOMEM, "out of memory");
    im->binds[im->n_binds++] = (af__onnx_binding_t){param, value};
    return 0;
}

/* Parses "1,3,224,224" (empty = scalar). Returns the count or -1. */
static int parse_dims(const char *s, int64_t *dims)
{
    int n = 0;
    if (!*s)
        return 0;
    for (;;) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0 || errno || n >= AF__ONNX_RANK_MAX)
            return -1;
        dims[n++] = v;
        if (!*end)
            return n;
        if (*end != ',')
            return -1;
        s = end + 1;
    }
}

/* Applies one "NAME=dims" spec: to a graph input, or to a symbolic dim name. */
static int apply_input_spec(af__onnx_imp_t *im, const Onnx__GraphProto *g, const char *spec)
{
    const char *eq = spec ? strrchr(spec, '=') : NULL;
    int64_t dims[AF__ONNX_RANK_MAX];
    int n = eq ? parse_dims(eq + 1, dims) : -1;
    if (!eq || eq == spec || n < 0)
        return af__err(im->err, AF_EINVAL,
                       "bad input spec '%s' (want NAME=1,3,224,224 or SYMBOL=4)", spec ? spec : "");
    size_t nl = (size_t)(eq - spec);
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi->name || strlen(vi->name) != nl || memcmp(vi->name, spec, nl))
            continue;
        const Onnx__TypeProto__Tensor *t = af__onnx_tensor_type(vi);
        if (t && t->shape && (int)t->shape->n_dim != n)
            return af__err(im->err, AF_ESHAPE, "input '%s' has rank %zu, --input gives %d dims",
                           vi->name, t->shape->n_dim, n);
        for (int k = 0; t && t->shape && k < n; k++) {
            const Onnx__TensorShapeProto__Dimension *d = t->shape->dim[k];
            int rc = 0;
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                d->dim_value != dims[k])
                return af__err(
                    im->err, AF_ESHAPE,
                    "input '%s' dim %d is fixed at %lld by the model, --input gives %lld", vi->name,
                    k, (long long)d->dim_value, (long long)dims[k]);
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                d->dim_param && d->dim_param[0] && (rc = add_binding(im, d->dim_param, dims[k])))
                return rc;
        }
        int32_t id = af__onnx_val_get(im, vi->name);
        if (id < 0)
            return af__err(im->err, AF_ENOMEM, "out of memory");
        if (im->vals[id].is_const)
            return af__err(im->err, AF_EINVAL, "--input '%s': an initializer, its shape is fixed",
                           vi->name);
        af__onnx_set_rank(&im->vals[id], n);
        memcpy(im->vals[id].dims, dims, (size_t)n * sizeof(int64_t));
        return 0;
    }
    if (n == 1) { /* a symbolic dim name used by some input? */
        char param[256];
        snprintf(param, sizeof(param), "%.*s", (int)(nl < 255 ? nl : 255), spec);
        for (size_t i = 0; i < g->n_input; i++) {
            const Onnx__TypeProto__Tensor *t = af__onnx_tensor_type(g->input[i]);
            for (size_t k = 0; t && t->shape && k < t->shape->n_dim; k++) {
                const Onnx__TensorShapeProto__Dimension *d = t->shape->dim[k];
                if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                    d->dim_param && !strcmp(d->dim_param, param))
                    return add_binding(im, d->dim_param, dims[0]);
            }
        }
    }
    return af__err(im->err, AF_ENOENT,
                   "--input '%.*s': the model has no input or symbolic dim of that name", (int)nl,
                   spec);
}

/* Graph inputs: declared type + user dims; unknown dims are an error unless allow_dynamic. */
int af__onnx_setup_inputs(af__onnx_imp_t *im, const Onnx__GraphProto *g)
{
    int rc;
    for (int i = 0; i < im->opts->n_inputs; i++)
        if ((rc = apply_input_spec(im, g, im->opts->inputs[i])))
            return rc;
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi->name || !vi->name[0])
            return af__err(im->err, AF_EPARSE, "graph input %zu has no name", i);
        int32_t id = af__onnx_val_get(im, vi->name);
        if (id < 0)
            return af__err(im->err, AF_ENOMEM, "out of memory");
        af__onnx_val_t *v = &im->vals[id];
        if (v->is_const)
            continue; /* an initializer listed as input (IR < 4): a constant */
        v->is_input = v->used = 1;
        v->declared = af__onnx_tensor_type(vi);
        if (!v->declared && !im->opts->allow_dynamic)
            return af__err(im->err, AF_ENOTSUP, "input '%s' is not a tensor (sequence, map...)",
                           vi->name);
        if ((rc = af__onnx_merge_declared(im, v, " (graph input)")))
            return rc;
        if (af__onnx_numel(v) < 0 && !im->opts->allow_dynamic) {
            int all_known = v->rank >= 0;
            for (int k = 0; k < v->rank; k++)
                all_known &= v->dims[k] >= 0;
            if (all_known) /* every dim given, their product is past int64: not a missing dim */
                return af__err(im->err, AF_ESIZE,
                               "input '%s': its dims hold more than 2^63 elements", vi->name);
            char dims[200] = "";
            size_t len = 0;
            for (int k = 0; k < v->rank && len < sizeof(dims) - 40; k++) {
                const Onnx__TensorShapeProto__Dimension *d = v->declared->shape->dim[k];
                const char *p =
                    d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                            d->dim_param
                        ? d->dim_param
                        : "?";
                len += (size_t)snprintf(dims + len, sizeof(dims) - len, "%s%s", k ? "," : "",
                                        v->dims[k] >= 0 ? "" : p);
                if (v->dims[k] >= 0)
                    len += (size_t)snprintf(dims + len, sizeof(dims) - len, "%lld",
                                            (long long)v->dims[k]);
            }
            return af__err(im->err, AF_EINVAL,
                           "input '%s' has unknown dims [%s]: give them with %s%s=d0,d1,...",
                           vi->name, v->rank < 0 ? "unknown rank" : dims, af__onnx_dims_flag(im),
                           vi->name);
        }
    }
    return 0;
}

#endif /* AF_HAVE_ONNX */
