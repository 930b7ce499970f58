/*
 * ONNX importer — shape rules of the quantisation ops and of the indexing ops whose output
 * size may depend on values: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * QLinearMatMul (ConvInteger, MatMulInteger and QLinearConv share Conv's and MatMul's rules in
 * onnx_shape.c), GatherND, ScatterElements/ScatterND/Scatter, NonZero, Unique, Compress,
 * NonMaxSuppression, Einsum.
 *
 * Reference: the ONNX operator specification (onnx/defs, opsets up to 18). A rule writes a dim
 * only when it follows from known dims and values; an output whose size depends on values
 * known only at run time (NonZero, Unique, NonMaxSuppression, Compress by a run-time
 * condition) keeps unknown dims and says so (af__onnx_why). Lookup: af__onnx_rule_quant().
 * No state; reentrant.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <stdio.h>
#include <string.h>

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)
#define OUT(i) ((i) < c->n_out ? c->out[i] : NULL)
#define T(x) ONNX__TENSOR_PROTO__DATA_TYPE__##x

static void same_shape(af__onnx_val_t *o, const af__onnx_val_t *x, int32_t elem)
{
    af__onnx_copy_shape(o, x);
    o->elem = elem;
}

/* y = saturate(round(x / scale) + zero_point): x's shape, the zero point's type (uint8 when
 * absent; opset 19+ output_dtype when given). */
static int rule_quantize(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *zp = IN(2);
    if (!x || !OUT(0))
        return 0;
    int32_t elem = zp ? zp->elem : (int32_t)af__onnx_attr_i(c->node, "output_dtype", T(UINT8));
    same_shape(c->out[0], x, elem ? elem : T(UINT8));
    return 0;
}

/* y = (x - zero_point) * scale: x's shape, the scale's type (float before opset 19). */
static int rule_dequantize(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *scale = IN(1);
    if (!x || !OUT(0))
        return 0;
    same_shape(c->out[0], x, scale && scale->elem ? scale->elem : T(FLOAT));
    return 0;
}

/* y (uint8, x's shape), y_scale (float scalar), y_zero_point (uint8 scalar). */
static int rule_dynamic_quantize(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x)
        return 0;
    if (OUT(0))
        same_shape(c->out[0], x, T(UINT8));
    for (int o = 1; o < 3 && o < c->n_out; o++) {
        af__onnx_set_rank(c->out[o], 0);
        c->out[o]->elem = o == 1 ? T(FLOAT) : T(UINT8);
    }
    return 0;
}

/* QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): MatMul of a and b. */
static int rule_qlinear_matmul(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *a = IN(0), *b = IN(3), *yzp = IN(7);
    if (!a || !b || !OUT(0))
        return 0;
    c->out[0]->elem = yzp ? yzp->elem : a->elem;
    return af__onnx_matmul_shape(c, a, b, c->out[0]);
}

/* out = indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:] */
static int rule_gather_nd(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *idx = IN(1);
    if (!x || !idx || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    if (x->rank < 0 || idx->rank < 1)
        return 0;
    int64_t b = af__onnx_attr_i(c->node, "batch_dims", 0), k = idx->dims[idx->rank - 1];
    if (k < 0) {
        af__onnx_why(c, "the last dim of indices '%s' is not known", idx->name);
        return 0;
    }
    if (b < 0 || b >= idx->rank || b + k > x->rank)
        return af__onnx_node_err(c, AF_ESHAPE, "batch_dims %lld and index depth %lld for rank %d",
                                 (long long)b, (long long)k, x->rank);
    int r = idx->rank - 1 + x->rank - (int)(b + k), rc;
    if ((rc = af__onnx_check_rank(c, r)))
        return rc;
    af__onnx_set_rank(o, r);
    int n = 0;
    for (int i = 0; i < idx->rank - 1; i++)
        o->dims[n++] = idx->dims[i];
    for (int i = (int)(b + k); i < x->rank; i++)
        o->dims[n++] = x->dims[i];
    return 0;
}

/* Scatter*, and other ops whose output is shaped like input 0. */
static int rule_like_input0(af__onnx_ctx_t *c)
{
    if (IN(0) && OUT(0))
        same_shape(c->out[0], c->in[0], c->in[0]->elem);
    return 0;
}

static int64_t count_nonzero(const af__onnx_val_t *v, int64_t limit)
{
    int64_t n = af__onnx_numel(v), k = 0;
    if (n < 0 || !af__onnx_vals_known(v))
        return -1;
    for (int64_t i = 0; i < n && i < limit; i++)
        k += v->vals[i] != 0;
    return k;
}

/* [rank(x), number of nonzero elements] (int64). */
static int rule_nonzero(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = T(INT64);
    af__onnx_set_rank(o, 2);
    o->dims[0] = x->rank;
    o->dims[1] = count_nonzero(x, INT64_MAX);
    if (o->dims[1] < 0)
        af__onnx_why(c, "the number of nonzero elements depends on the values of '%s'", x->name);
    return 0;
}

/* Y, indices, inverse_indices, counts: the number of distinct values is known at run time. */
static int rule_unique(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x)
        return 0;
    const Onnx__AttributeProto *ax = af__onnx_attr(c->node, "axis");
    int axis = 0, rc;
    if (ax && x->rank >= 0 && (rc = af__onnx_norm_axis(c, ax->i, x->rank, &axis)))
        return rc;
    for (int o = 0; o < c->n_out && o < 4; o++) {
        af__onnx_val_t *v = c->out[o];
        v->elem = o ? T(INT64) : x->elem;
        if (o == 0 && ax && x->rank >= 0) {
            af__onnx_copy_shape(v, x);
            v->dims[axis] = -1;
        } else {
            af__onnx_set_rank(v, 1);
            if (o == 2) /* inverse_indices: one per input element (or slice along axis) */
                v->dims[0] = ax ? (x->rank >= 0 ? x->dims[axis] : -1) : af__onnx_numel(x);
        }
    }
    af__onnx_why(c, "the number of distinct values depends on the values of '%s'", x->name);
    return 0;
}

/* The slices (or elements) of input whose condition is true. */
static int rule_compress(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *cond = IN(1);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    const Onnx__AttributeProto *ax = af__onnx_attr(c->node, "axis");
    int axis = 0, rc;
    if (ax && x->rank < 0)
        return 0;
    if (ax && (rc = af__onnx_norm_axis(c, ax->i, x->rank, &axis)))
        return rc;
    int64_t len = ax ? x->dims[axis] : af__onnx_numel(x);
    int64_t k = cond && len >= 0 ? count_nonzero(cond, len) : -1;
    if (k < 0)
        af__onnx_why(c, "the output length depends on the values of the condition");
    if (ax) {
        af__onnx_copy_shape(o, x);
        o->dims[axis] = k;
    } else {
        af__onnx_set_rank(o, 1);
        o->dims[0] = k;
    }
    return 0;
}

/* [number of selected boxes, 3] (int64). */
static int rule_nms(af__onnx_ctx_t *c)
{
    if (!OUT(0))
        return 0;
    af__onnx_set_rank(c->out[0], 2);
    c->out[0]->dims[1] = 3;
    c->out[0]->elem = T(INT64);
    af__onnx_why(c, "the number of boxes selected depends on the scores");
    return 0;
}

/* ---- Einsum ------------------------------------------------------------------------------ */

typedef struct term {
    char letters[AF__ONNX_RANK_MAX];
    int n;        /* letters, in order */
    int ellipsis; /* position of "..." among the letters, or -1 */
} term_t;

/* Parses one term ("ij", "...ij", "i...j") up to a ',' '-' or end; spaces are skipped. */
static int parse_term(const char **p, term_t *t)
{
    t->n = 0;
    t->ellipsis = -1;
    for (; **p && **p != ',' && **p != '-'; (*p)++) {
        char ch = **p;
        if (ch == ' ')
            continue;
        if (ch == '.') {
            if (strncmp(*p, "...", 3) || t->ellipsis >= 0)
                return -1;
            t->ellipsis = t->n;
            *p += 2;
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
            if (t->n >= AF__ONNX_RANK_MAX)
                return -1;
            t->letters[t->n++] = ch;
        } else {
            return -1;
        }
    }
    return 0;
}

typedef struct einsum {
    int64_t dim[128]; /* per letter: size, -1 unknown, -2 not seen */
    int count[128];   /* per letter: occurrences over the inputs */
    int64_t ell[AF__ONNX_RANK_MAX];
    int n_ell; /* rank of the broadcast ellipsis, -1 unknown */
} einsum_t;

/* Binds one input's dims to its term's letters and ellipsis. */
static int bind_input(af__onnx_ctx_t *c, const af__onnx_val_t *x, const term_t *t, einsum_t *e)
{
    int er = x->rank - t->n;
    if (t->ellipsis < 0 ? er != 0 : er < 0)
        return af__onnx_node_err(c, AF_ESHAPE, "input '%s' has rank %d, its term %d letters",
                                 x->name, x->rank, t->n);
    for (int i = 0, d = 0; i < t->n; i++, d++) {
        if (i == t->ellipsis)
            d += er;
        int ch = t->letters[i];
        int64_t v = x->dims[d];
        e->count[ch]++;
        if (e->dim[ch] == -2 || e->dim[ch] == 1)
            e->dim[ch] = v;
        else if (v >= 0 && v != 1 && e->dim[ch] >= 0 && e->dim[ch] != v)
            return af__onnx_node_err(c, AF_ESHAPE, "letter '%c' is %lld and %lld", ch,
                                     (long long)e->dim[ch], (long long)v);
        else if (e->dim[ch] == -1 && v > 1)
            e->dim[ch] = v; /* the unknown one equals it (or is a broadcast 1) */
    }
    if (t->ellipsis < 0)
        return 0;
    af__onnx_val_t a = {.name = "...", .rank = e->n_ell}, b = {.name = x->name, .rank = er};
    memcpy(a.dims, e->ell, sizeof e->ell);
    memcpy(b.dims, x->dims + t->ellipsis, (size_t)er * sizeof(int64_t));
    af__onnx_val_t out;
    int rc = af__onnx_broadcast(c, &a, &b, &out);
    e->n_ell = out.rank;
    memcpy(e->ell, out.dims, sizeof e->ell);
    return rc;
}

static int rule_einsum(af__onnx_ctx_t *c)
{
    const Onnx__AttributeProto *eq = af__onnx_attr(c->node, "equation");
    if (!OUT(0) || !IN(0) || !eq || !eq->has_s)
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = c->in[0]->elem;
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)(eq->s.len < 255 ? eq->s.len : 255), eq->s.data);
    einsum_t e = {.n_ell = 0};
    for (int i = 0; i < 128; i++)
        e.dim[i] = -2;
    const char *p = buf;
    int rc;
    for (int k = 0; k < c->n_in; k++) {
        term_t t;
        if (parse_term(&p, &t) || (k + 1 < c->n_in ? *p != ',' : *p && *p != '-'))
            return af__onnx_node_err(c, AF_ESHAPE, "equation '%s' does not fit %d inputs", buf,
                                     c->n_in);
        if (*p == ',')
            p++;
        if (!c->in[k] || c->in[k]->rank < 0)
            return 0;
        if ((rc = bind_input(c, c->in[k], &t, &e)))
            return rc;
    }
    term_t out = {.n = 0, .ellipsis = 0};
    if (*p == '-') { /* explicit output */
        if (p[1] != '>')
            return af__onnx_node_err(c, AF_ESHAPE, "equation '%s': '-' without '>'", buf);
        p += 2;
        if (parse_term(&p, &out) || *p)
            return af__onnx_node_err(c, AF_ESHAPE, "bad output term in '%s'", buf);
        if (out.ellipsis < 0 && e.n_ell > 0)
            return af__onnx_node_err(c, AF_ESHAPE, "'%s' drops the '...' dims", buf);
    } else { /* implicit: "..." then the letters seen once, in alphabetical (ASCII) order */
        for (int ch = 0; ch < 128; ch++)
            if (e.count[ch] == 1 && out.n < AF__ONNX_RANK_MAX)
                out.letters[out.n++] = (char)ch;
    }
    int r = out.n + (out.ellipsis >= 0 ? e.n_ell : 0);
    if ((rc = af__onnx_check_rank(c, r)))
        return rc;
    af__onnx_set_rank(o, r);
    for (int i = 0, d = 0; i <= out.n; i++) {
        if (i == out.ellipsis)
            for (int k = 0; k < e.n_ell; k++)
                o->dims[d++] = e.ell[k];
        if (i == out.n)
            break;
        int ch = out.letters[i];
        if (e.dim[ch] == -2)
            return af__onnx_node_err(c, AF_ESHAPE, "output letter '%c' is in no input", ch);
        o->dims[d++] = e.dim[ch];
    }
    return 0;
}

/* ---- lookup ------------------------------------------------------------------------------ */

static const struct {
    const char *op;
    af__onnx_rule_fn fn;
} rules[] = {
    {"QuantizeLinear", rule_quantize},
    {"DequantizeLinear", rule_dequantize},
    {"DynamicQuantizeLinear", rule_dynamic_quantize},
    {"QLinearMatMul", rule_qlinear_matmul},
    {"GatherND", rule_gather_nd},
    {"ScatterElements", rule_like_input0},
    {"ScatterND", rule_like_input0},
    {"Scatter", rule_like_input0},
    {"NonZero", rule_nonzero},
    {"Unique", rule_unique},
    {"Compress", rule_compress},
    {"NonMaxSuppression", rule_nms},
    {"Einsum", rule_einsum},
};

af__onnx_rule_fn af__onnx_rule_quant(const char *op)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(rules); i++)
        if (!strcmp(rules[i].op, op))
            return rules[i].fn;
    return NULL;
}

#endif /* AF_HAVE_ONNX */
