/*
 * ONNX importer — shape rules of the data-movement and shape-computing ops: Reshape, Flatten,
 * Transpose, Concat, Split, Slice, Gather, Squeeze/Unsqueeze, Resize/Upsample, reductions,
 * Shape/Size, Constant, ConstantOfShape, Expand, Pad, Range, Tile (TopK, OneHot and
 * DepthToSpace/SpaceToDepth are in onnx_misc.c). The table that dispatches to them is in
 * onnx_shape.c.
 *
 * Rules take the ONNX 1.12 inference as their reference. Attributes win over inputs (older
 * opsets carry axes/pads/splits as attributes, newer ones as inputs): a rule asks
 * af__onnx_int_list() for either. Values of shape vectors may be partly unknown (AF__ONNX_UNK),
 * which makes the matching dims unknown, never guessed. No state; reentrant.
 */
#ifdef AF_HAVE_ONNX /* built only with protobuf-c (graph/onnx.cmake) */
#include "graph/onnx_int.h"

#include <string.h>

#define IN(i) ((i) < c->n_in ? c->in[i] : NULL)
#define OUT(i) ((i) < c->n_out ? c->out[i] : NULL)
#define MAXV AF__ONNX_RANK_MAX

static int64_t prod_range(const af__onnx_val_t *v, int a, int b)
{
    int64_t p = 1;
    for (int i = a; i < b; i++) {
        if (v->dims[i] < 0 || __builtin_mul_overflow(p, v->dims[i], &p))
            return -1; /* unknown, or too many elements to count: treated as unknown */
    }
    return p;
}

/*
 * Reads an input's values as a shape vector: dims[i] = value or -1 when unknown. -1 if absent.
 * Values not known at load time are noted as the reason the output stays dynamic.
 */
static int shape_input(af__onnx_ctx_t *c, const af__onnx_val_t *v, int64_t *dims, int max)
{
    if (v && (v->rank != 1 || v->dims[0] < 0))
        af__onnx_why(c, "the %s of input '%s' are not known", v->rank == 1 ? "length" : "shape",
                     v->name);
    if (!v || v->rank != 1 || v->dims[0] < 0 || v->dims[0] > max)
        return -1;
    int n = (int)v->dims[0];
    for (int i = 0; i < n; i++)
        dims[i] = v->vals && !isnan(v->vals[i]) ? af__onnx_d2i(v->vals[i]) : -1;
    if (!af__onnx_vals_known(v))
        af__onnx_why(c, "the values of input '%s' are known only at run time", v->name);
    return n;
}

int af__onnx_rule_reshape(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    af__onnx_val_t *o = OUT(0);
    if (!x || !o)
        return 0;
    o->elem = x->elem;
    int64_t t[MAXV];
    int n = af__onnx_int_list(c, "shape", -1, t, MAXV);
    int unk[MAXV] = {0};
    if (n < 0) {
        n = shape_input(c, IN(1), t, MAXV);
        if (n < 0)
            return IN(1) && IN(1)->rank == 1 && IN(1)->dims[0] > MAXV
                       ? af__onnx_check_rank(c, (int)IN(1)->dims[0])
                       : 0;
        for (int i = 0; i < n; i++)
            unk[i] = !IN(1)->vals || isnan(IN(1)->vals[i]);
    }
    int allowzero = af__onnx_attr_i(c->node, "allowzero", 0) != 0;
    af__onnx_set_rank(o, n);
    int neg = -1;
    int64_t known = 1;
    int all_known = 1;
    for (int i = 0; i < n; i++) {
        if (unk[i]) {
            all_known = 0;
        } else if (t[i] == -1) {
            if (neg >= 0)
                return af__onnx_node_err(c, AF_ESHAPE, "more than one -1 in the target shape");
            neg = i;
        } else if (t[i] == 0 && !allowzero) {
            if (x->rank >= 0 && i >= x->rank)
                return af__onnx_node_err(c, AF_ESHAPE,
                                         "target dim %d is 0 (copy) but the input has rank %d", i,
                                         x->rank);
            o->dims[i] = x->rank >= 0 ? x->dims[i] : -1;
        } else if (t[i] < 0) {
            return af__onnx_node_err(c, AF_ESHAPE, "invalid target dim %lld", (long long)t[i]);
        } else {
            o->dims[i] = t[i];
        }
        if (i != neg && !unk[i]) {
            if (o->dims[i] < 0)
                all_known = 0;
            else if (__builtin_mul_overflow(known, o->dims[i], &known))
                return af__onnx_node_err(c, AF_ESHAPE, "target shape overflows 64 bits");
        }
    }
    int64_t total = x->rank >= 0 ? prod_range(x, 0, x->rank) : -1;
    if (neg >= 0 && all_known && total >= 0) {
        if (known == 0 || total % known)
            return af__onnx_node_err(c, AF_ESHAPE, "cannot reshape %lld elements into the target",
                                     (long long)total);
        o->dims[neg] = total / known;
    } else if (neg < 0 && all_known && total >= 0 && total != known) {
        return af__onnx_node_err(c, AF_ESHAPE, "reshape of %lld elements into %lld",
                                 (long long)total, (long long)known);
    }
    return 0;
}

int af__onnx_rule_flatten(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    c->out[0]->elem = x->elem;
    if (x->rank < 0)
        return 0;
    int64_t axis = af__onnx_attr_i(c->node, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return af__onnx_node_err(c, AF_ESHAPE, "axis out of range for rank %d", x->rank);
    af__onnx_set_rank(c->out[0], 2);
    c->out[0]->dims[0] = prod_range(x, 0, (int)axis);
    c->out[0]->dims[1] = prod_range(x, (int)axis, x->rank);
    return 0;
}

int af__onnx_rule_transpose(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    c->out[0]->elem = x->elem;
    if (x->rank < 0)
        return 0;
    int64_t perm[MAXV];
    int n = af__onnx_int_list(c, "perm", -1, perm, MAXV);
    if (n < 0) {
        n = x->rank;
        for (int i = 0; i < n; i++)
            perm[i] = n - 1 - i;
    }
    if (n != x->rank)
        return af__onnx_node_err(c, AF_ESHAPE, "perm has %d entries for rank %d", n, x->rank);
    int seen[MAXV] = {0};
    af__onnx_set_rank(c->out[0], n);
    for (int i = 0; i < n; i++) {
        if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]++)
            return af__onnx_node_err(c, AF_ESHAPE, "perm is not a permutation");
        c->out[0]->dims[i] = x->dims[perm[i]];
    }
    return 0;
}

int af__onnx_rule_concat(af__onnx_ctx_t *c)
{
    if (!OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    int rank = -1;
    for (int i = 0; i < c->n_in; i++) {
        if (c->in[i] && c->in[i]->elem)
            o->elem = c->in[i]->elem;
        if (c->in[i] && c->in[i]->rank >= 0) {
            if (rank >= 0 && c->in[i]->rank != rank)
                return af__onnx_node_err(c, AF_ESHAPE, "inputs have ranks %d and %d", rank,
                                         c->in[i]->rank);
            rank = c->in[i]->rank;
        }
    }
    if (rank < 0)
        return 0;
    if (rank == 0)
        return af__onnx_node_err(c, AF_ESHAPE, "cannot concatenate scalars");
    int axis, rc;
    if ((rc = af__onnx_norm_axis(c, af__onnx_attr_i(c->node, "axis", 0), rank, &axis)))
        return rc;
    af__onnx_set_rank(o, rank);
    int64_t sum = 0;
    for (int i = 0; i < c->n_in; i++) {
        const af__onnx_val_t *v = c->in[i];
        if (!v || v->rank < 0) {
            sum = -1;
            continue;
        }
        for (int d = 0; d < rank; d++) {
            if (d == axis || v->dims[d] < 0)
                continue;
            if (o->dims[d] >= 0 && o->dims[d] != v->dims[d])
                return af__onnx_node_err(c, AF_ESHAPE, "dim %d differs: %lld vs %lld", d,
                                         (long long)o->dims[d], (long long)v->dims[d]);
            o->dims[d] = v->dims[d];
        }
        if (sum >= 0 && v->dims[axis] < 0)
            sum = -1;
        else if (sum >= 0 && __builtin_add_overflow(sum, v->dims[axis], &sum))
            return AF__ONNX_OVERFLOW(c);
    }
    o->dims[axis] = sum;
    return 0;
}

int af__onnx_rule_split(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || c->n_out < 1)
        return 0;
    for (int o = 0; o < c->n_out; o++)
        c->out[o]->elem = x->elem;
    if (x->rank < 0)
        return 0;
    int axis, rc;
    if ((rc = af__onnx_norm_axis(c, af__onnx_attr_i(c->node, "axis", 0), x->rank, &axis)))
        return rc;
    int64_t sp[32];
    int n = af__onnx_int_list(c, "split", 1, sp, 32);
    int64_t d = x->dims[axis];
    if (n == -2)
        goto unknown;
    if (n >= 0) {
        if (n != c->n_out)
            return af__onnx_node_err(c, AF_ESHAPE, "split has %d parts for %d outputs", n,
                                     c->n_out);
        int64_t s = 0;
        for (int i = 0; i < n; i++)
            if (sp[i] < 0 || __builtin_add_overflow(s, sp[i], &s))
                return af__onnx_node_err(c, AF_ESHAPE, "bad split sizes");
        if (d >= 0 && s != d)
            return af__onnx_node_err(c, AF_ESHAPE, "split sums to %lld, axis is %lld", (long long)s,
                                     (long long)d);
    } else {
        if (d < 0)
            goto unknown;
        int64_t chunk;
        if (af__onnx_attr(c->node, "num_outputs")) {
            chunk = d / c->n_out + (d % c->n_out != 0);
        } else {
            if (d % c->n_out)
                return af__onnx_node_err(c, AF_ESHAPE, "axis %lld does not split in %d",
                                         (long long)d, c->n_out);
            chunk = d / c->n_out;
        }
        for (int i = 0; i < c->n_out; i++) {
            int64_t left = d - chunk * i; /* chunk * i <= d + chunk: no overflow */
            sp[i] = left < chunk ? (left > 0 ? left : 0) : chunk;
        }
    }
    for (int o = 0; o < c->n_out; o++) {
        af__onnx_copy_shape(c->out[o], x);
        c->out[o]->dims[axis] = sp[o];
    }
    return 0;
unknown:
    for (int o = 0; o < c->n_out; o++) {
        af__onnx_copy_shape(c->out[o], x);
        c->out[o]->dims[axis] = -1;
    }
    return 0;
}

/* Clamps a Slice start/end as numpy does; returns the element count along the axis. */
int64_t af__onnx_slice_len(int64_t dim, int64_t *start, int64_t end, int64_t step)
{
    int64_t s = *start, e = end;
    if (s < 0)
        s += dim;
    if (e < 0)
        e += dim;
    if (step > 0) {
        s = s < 0 ? 0 : (s > dim ? dim : s);
        e = e < 0 ? 0 : (e > dim ? dim : e);
    } else {
        s = s < 0 ? -1 : (s > dim - 1 ? dim - 1 : s);
        e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
    }
    *start = s;
    /* s, e are clamped to [-1, dim]: their difference cannot overflow; step can be anything. */
    int64_t span = step > 0 ? e - s : s - e;
    if (span <= 0)
        return 0;
    uint64_t st = step > 0 ? (uint64_t)step : (uint64_t)0 - (uint64_t)step;
    return (int64_t)(((uint64_t)span - 1) / st + 1);
}

int af__onnx_rule_slice(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    if (x->rank < 0)
        return 0;
    int64_t st[MAXV], en[MAXV], ax[MAXV], sp[MAXV];
    int ns = af__onnx_int_list(c, "starts", 1, st, MAXV);
    int ne = af__onnx_int_list(c, "ends", 2, en, MAXV);
    int na = af__onnx_int_list(c, "axes", 3, ax, MAXV);
    int np = af__onnx_int_list(c, "steps", 4, sp, MAXV);
    af__onnx_set_rank(o, x->rank);
    if (ns < 0 || ne < 0 || na == -2 || np == -2)
        return 0; /* rank known, dims not */
    if (ns != ne || (na >= 0 && na != ns) || (np >= 0 && np != ns))
        return af__onnx_node_err(c, AF_ESHAPE, "starts/ends/axes/steps lengths differ");
    af__onnx_copy_shape(o, x);
    for (int i = 0; i < ns; i++) {
        int axis, rc;
        if ((rc = af__onnx_norm_axis(c, na >= 0 ? ax[i] : i, x->rank, &axis)))
            return rc;
        int64_t step = np >= 0 ? sp[i] : 1;
        if (step == 0)
            return af__onnx_node_err(c, AF_ESHAPE, "step 0");
        if (x->dims[axis] < 0)
            continue;
        int64_t s = st[i];
        o->dims[axis] = af__onnx_slice_len(x->dims[axis], &s, en[i], step);
    }
    return 0;
}

int af__onnx_rule_gather(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *idx = IN(1);
    if (!x || !idx || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    if (!strcmp(c->node->op_type, "GatherElements")) {
        af__onnx_copy_shape(o, idx);
        return 0;
    }
    if (x->rank < 0 || idx->rank < 0)
        return 0;
    int axis, rc;
    if ((rc = af__onnx_norm_axis(c, af__onnx_attr_i(c->node, "axis", 0), x->rank, &axis)))
        return rc;
    int r = x->rank - 1 + idx->rank;
    if ((rc = af__onnx_check_rank(c, r)))
        return rc;
    af__onnx_set_rank(o, r);
    int k = 0;
    for (int i = 0; i < axis; i++)
        o->dims[k++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++)
        o->dims[k++] = idx->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        o->dims[k++] = x->dims[i];
    return 0;
}

int af__onnx_rule_squeeze(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    if (x->rank < 0)
        return 0;
    int64_t ax[MAXV];
    int n = af__onnx_int_list(c, "axes", 1, ax, MAXV);
    if (n == -2)
        return 0;
    int drop[MAXV] = {0};
    for (int i = 0; i < n; i++) {
        int a, rc;
        if ((rc = af__onnx_norm_axis(c, ax[i], x->rank, &a)))
            return rc;
        if (x->dims[a] >= 0 && x->dims[a] != 1)
            return af__onnx_node_err(c, AF_ESHAPE, "cannot squeeze axis %d of size %lld", a,
                                     (long long)x->dims[a]);
        drop[a] = 1;
    }
    if (n < 0) {
        for (int i = 0; i < x->rank; i++) {
            if (x->dims[i] < 0)
                return 0; /* which dims go is not known */
            drop[i] = x->dims[i] == 1;
        }
    }
    int k = 0;
    int64_t dims[MAXV];
    for (int i = 0; i < x->rank; i++)
        if (!drop[i])
            dims[k++] = x->dims[i];
    af__onnx_set_rank(o, k);
    memcpy(o->dims, dims, (size_t)k * sizeof(int64_t));
    return 0;
}

int af__onnx_rule_unsqueeze(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    int64_t ax[MAXV];
    int n = af__onnx_int_list(c, "axes", 1, ax, MAXV);
    if (x->rank < 0 || n < 0)
        return 0;
    int r = x->rank + n, rc;
    if ((rc = af__onnx_check_rank(c, r)))
        return rc;
    int ins[MAXV] = {0};
    for (int i = 0; i < n; i++) {
        int a;
        if ((rc = af__onnx_norm_axis(c, ax[i], r, &a)))
            return rc;
        if (ins[a]++)
            return af__onnx_node_err(c, AF_ESHAPE, "axis %d repeated", a);
    }
    af__onnx_set_rank(o, r);
    for (int i = 0, k = 0; i < r; i++)
        o->dims[i] = ins[i] ? 1 : x->dims[k++];
    return 0;
}

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample (scales attr/input). */
int af__onnx_rule_resize(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    if (x->rank < 0)
        return 0;
    int old = !strcmp(c->node->op_type, "Upsample") || c->opset < 11;
    const af__onnx_val_t *scales = IN(old ? 1 : 2), *sizes = old ? NULL : IN(3);
    const Onnx__AttributeProto *sa = af__onnx_attr(c->node, "scales");
    af__onnx_set_rank(o, x->rank);
    if (sizes && af__onnx_numel(sizes) > 0) {
        int64_t d[MAXV];
        int n = shape_input(c, sizes, d, MAXV);
        if (n >= 0 && n != x->rank)
            return af__onnx_node_err(c, AF_ESHAPE, "sizes has %d values for rank %d", n, x->rank);
        for (int i = 0; n >= 0 && i < n; i++)
            o->dims[i] = d[i];
        return 0;
    }
    float sc[MAXV];
    int n = -1;
    if (sa) {
        n = (int)sa->n_floats;
        for (int i = 0; i < n && i < MAXV; i++)
            sc[i] = sa->floats[i];
    } else if (scales && scales->rank == 1 && scales->vals && af__onnx_vals_known(scales) &&
               scales->dims[0] <= MAXV) {
        n = (int)scales->dims[0];
        for (int i = 0; i < n; i++)
            sc[i] = (float)scales->vals[i];
    }
    if (n < 0) {
        const af__onnx_val_t *why = sizes && af__onnx_numel(sizes) != 0 ? sizes : scales;
        if (why)
            af__onnx_why(c, "the values of input '%s' are known only at run time", why->name);
        return 0;
    }
    if (n != x->rank)
        return af__onnx_node_err(c, AF_ESHAPE, "scales has %d values for rank %d", n, x->rank);
    for (int i = 0; i < n; i++) {
        if (x->dims[i] < 0)
            continue;
        double d = floorf((float)x->dims[i] * sc[i]);
        if (!(d >= 0 && d < 9.2e18))
            return af__onnx_node_err(c, AF_ESHAPE, "scale %g gives an invalid size on axis %d",
                                     (double)sc[i], i);
        o->dims[i] = (int64_t)d;
    }
    return 0;
}

int af__onnx_rule_reduce(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    af__onnx_val_t *o = OUT(0);
    if (!x || !o)
        return 0;
    const char *op = c->node->op_type;
    int arg = !strncmp(op, "Arg", 3);
    o->elem = arg ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64 : x->elem;
    int keep = af__onnx_attr_i(c->node, "keepdims", 1) != 0;
    if (x->rank < 0)
        return 0;
    int64_t ax[MAXV];
    int n;
    if (arg) {
        n = 1;
        ax[0] = af__onnx_attr_i(c->node, "axis", 0);
    } else {
        n = af__onnx_int_list(c, "axes", 1, ax, MAXV);
    }
    if (n == -2) {
        af__onnx_set_rank(o, keep ? x->rank : -1);
        return 0;
    }
    int red[MAXV] = {0};
    if (n <= 0) {
        if (af__onnx_attr_i(c->node, "noop_with_empty_axes", 0)) {
            af__onnx_copy_shape(o, x);
            return 0;
        }
        for (int i = 0; i < x->rank; i++)
            red[i] = 1;
    }
    for (int i = 0; i < n; i++) {
        int a, rc;
        if ((rc = af__onnx_norm_axis(c, ax[i], x->rank, &a)))
            return rc;
        red[a] = 1;
    }
    int k = 0;
    int64_t d[MAXV];
    for (int i = 0; i < x->rank; i++)
        if (!red[i])
            d[k++] = x->dims[i];
        else if (keep)
            d[k++] = 1;
    af__onnx_set_rank(o, k);
    memcpy(o->dims, d, (size_t)k * sizeof(int64_t));
    return 0;
}

int af__onnx_rule_shape(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    af__onnx_val_t *o = OUT(0);
    if (!x || !o)
        return 0;
    o->elem = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    if (!strcmp(c->node->op_type, "Size")) {
        af__onnx_set_rank(o, 0);
        if (af__onnx_vals_alloc(o) < 0)
            return AF_ENOMEM;
        int64_t n = af__onnx_numel(x);
        if (o->vals && n >= 0)
            o->vals[0] = (double)n;
        return 0;
    }
    if (x->rank < 0)
        return 0;
    int64_t r = x->rank, s = af__onnx_attr_i(c->node, "start", 0);
    int64_t e = af__onnx_attr_i(c->node, "end", r);
    s = s < 0 ? s + r : s;
    e = e < 0 ? e + r : e;
    s = s < 0 ? 0 : (s > r ? r : s);
    e = e < 0 ? 0 : (e > r ? r : e);
    int64_t len = e > s ? e - s : 0;
    af__onnx_set_rank(o, 1);
    o->dims[0] = len;
    if (af__onnx_vals_alloc(o) < 0)
        return AF_ENOMEM;
    for (int64_t i = 0; o->vals && i < len; i++)
        o->vals[i] = x->dims[s + i] >= 0 ? (double)x->dims[s + i] : AF__ONNX_UNK;
    return 0;
}

int af__onnx_rule_constant(af__onnx_ctx_t *c)
{
    af__onnx_val_t *o = OUT(0);
    if (!o)
        return 0;
    const Onnx__NodeProto *n = c->node;
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        const char *nm = a->name ? a->name : "";
        int rc = 0;
        if (!strcmp(nm, "value") && a->t) {
            rc = af__onnx_tensor_decode(c->im, a->t, o, c->err);
        } else if (!strcmp(nm, "value_float") || !strcmp(nm, "value_int")) {
            int f = nm[6] == 'f';
            o->elem =
                f ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT : ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
            af__onnx_set_rank(o, 0);
            if (af__onnx_vals_alloc(o) < 0)
                return AF_ENOMEM;
            o->vals[0] = f ? (double)a->f : (double)a->i;
        } else if (!strcmp(nm, "value_floats") || !strcmp(nm, "value_ints")) {
            int f = nm[6] == 'f';
            size_t cnt = f ? a->n_floats : a->n_ints;
            o->elem =
                f ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT : ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
            af__onnx_set_rank(o, 1);
            o->dims[0] = (int64_t)cnt;
            if (af__onnx_vals_alloc(o) < 0)
                return AF_ENOMEM;
            for (size_t k = 0; o->vals && k < cnt; k++)
                o->vals[k] = f ? (double)a->floats[k] : (double)a->ints[k];
        } else if (!strcmp(nm, "value_string") || !strcmp(nm, "value_strings")) {
            o->elem = ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
            af__onnx_set_rank(o, nm[12] ? 1 : 0);
            if (nm[12])
                o->dims[0] = (int64_t)a->n_strings;
            o->strs = nm[12] ? a->strings : a->has_s ? &a->s : NULL; /* onnx_data.c copies them */
            o->n_strs = nm[12] ? a->n_strings : a->has_s ? 1 : 0;
        } else {
            continue;
        }
        if (rc)
            return rc;
        o->is_const = 1;
        return 0;
    }
    return af__onnx_node_err(c, AF_EPARSE, "Constant without a value attribute");
}

int af__onnx_rule_constant_of_shape(af__onnx_ctx_t *c)
{
    af__onnx_val_t *o = OUT(0);
    if (!o)
        return 0;
    const Onnx__AttributeProto *a = af__onnx_attr(c->node, "value");
    o->elem =
        a && a->t && a->t->has_data_type ? a->t->data_type : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    const af__onnx_val_t *s = IN(0);
    int64_t d[MAXV];
    if (s && s->rank == 1 && s->dims[0] > MAXV)
        return af__onnx_check_rank(c, (int)s->dims[0]);
    int n = shape_input(c, s, d, MAXV);
    if (n < 0)
        return 0;
    af__onnx_set_rank(o, n);
    memcpy(o->dims, d, (size_t)n * sizeof(int64_t));
    return 0;
}

int af__onnx_rule_expand(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0), *s = IN(1);
    if (!x || !OUT(0))
        return 0;
    c->out[0]->elem = x->elem;
    af__onnx_val_t t = {.name = s ? s->name : "shape"};
    int n = shape_input(c, s, t.dims, MAXV);
    if (n < 0)
        return s && s->rank == 1 && s->dims[0] > MAXV ? af__onnx_check_rank(c, (int)s->dims[0]) : 0;
    t.rank = n;
    return af__onnx_broadcast(c, x, &t, c->out[0]);
}

int af__onnx_rule_pad(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    af__onnx_val_t *o = c->out[0];
    o->elem = x->elem;
    if (x->rank < 0)
        return 0;
    int64_t p[2 * MAXV], ax[MAXV];
    int n = af__onnx_int_list(c, "pads", 1, p, 2 * MAXV);
    if (n < 0 && c->opset < 11)
        n = af__onnx_int_list(c, "paddings", -1, p, 2 * MAXV);
    int na = af__onnx_int_list(c, NULL, 3, ax, MAXV);
    af__onnx_set_rank(o, x->rank);
    if (n < 0 || na == -2)
        return 0;
    if (na < 0) {
        na = x->rank;
        for (int i = 0; i < na; i++)
            ax[i] = i;
    }
    if (n != 2 * na)
        return af__onnx_node_err(c, AF_ESHAPE, "pads has %d values for %d axes", n, na);
    af__onnx_copy_shape(o, x);
    for (int i = 0; i < na; i++) {
        int a, rc;
        if ((rc = af__onnx_norm_axis(c, ax[i], x->rank, &a)))
            return rc;
        int ovf = 0;
        if (o->dims[a] >= 0)
            o->dims[a] = af__onnx_add(o->dims[a], af__onnx_add(p[i], p[i + na], &ovf), &ovf);
        if (ovf)
            return AF__ONNX_OVERFLOW(c);
        if (o->dims[a] < -1 || (x->dims[a] >= 0 && o->dims[a] < 0))
            return af__onnx_node_err(c, AF_ESHAPE, "negative size after padding axis %d", a);
    }
    return 0;
}

int af__onnx_rule_range(af__onnx_ctx_t *c)
{
    af__onnx_val_t *o = OUT(0);
    if (!o || !IN(0))
        return 0;
    o->elem = c->in[0]->elem;
    af__onnx_set_rank(o, 1);
    double v[3];
    for (int i = 0; i < 3; i++) {
        const af__onnx_val_t *s = IN(i);
        if (!s || af__onnx_numel(s) != 1 || !s->vals || isnan(s->vals[0])) {
            if (s)
                af__onnx_why(c, "the value of input '%s' is known only at run time", s->name);
            return 0;
        }
        v[i] = s->vals[0];
    }
    if (v[2] == 0)
        return af__onnx_node_err(c, AF_ESHAPE, "delta is 0");
    double n = ceil((v[1] - v[0]) / v[2]);
    if (!(n < 9.2e18))
        return af__onnx_node_err(c, AF_ESHAPE, "range of %g elements", n);
    o->dims[0] = n > 0 ? (int64_t)n : 0;
    return 0;
}

int af__onnx_rule_tile(af__onnx_ctx_t *c)
{
    const af__onnx_val_t *x = IN(0);
    if (!x || !OUT(0))
        return 0;
    c->out[0]->elem = x->elem;
    if (x->rank < 0)
        return 0;
    int64_t r[MAXV];
    int n = shape_input(c, IN(1), r, MAXV);
    af__onnx_set_rank(c->out[0], x->rank);
    if (n < 0)
        return 0;
    if (n != x->rank)
        return af__onnx_node_err(c, AF_ESHAPE, "repeats has %d values for rank %d", n, x->rank);
    for (int i = 0; i < n; i++)
        if (x->dims[i] < 0 || r[i] < 0)
            c->out[0]->dims[i] = -1;
        else if (__builtin_mul_overflow(x->dims[i], r[i], &c->out[0]->dims[i]))
            return AF__ONNX_OVERFLOW(c);
    return 0;
}

#endif /* AF_HAVE_ONNX */
