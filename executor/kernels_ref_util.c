/*
 * Reference kernels — the shared helpers of kernels_ref.h: graph and argument access, ONNX
 * positions of optional inputs, element conversion for every dtype (our own IEEE half and
 * bfloat16 conversions, round-to-nearest-even), numpy broadcasting and the bind-time checks.
 *
 * Pure functions; no state.
 */
#include "executor/kernels_ref.h"

#include <float.h>
#include <stdarg.h>
#include <stdio.h>

/* ---- graph access ------------------------------------------------------------------------- */

af_dtype_t kr_dtype(const af_graph_t *g, int32_t t)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    return !ti || ti->dtype == AF_DTYPE_UNKNOWN ? AF_DTYPE_F32 : ti->dtype;
}

int kr_shape_of(const af_graph_t *g, int32_t t, kr_shape_t *s)
{
    const af_tensor_info_t *ti = af_graph_tensor(g, t);
    if (!ti || ti->rank < 0 || ti->rank > AF_MAX_RANK)
        return AF_ESHAPE;
    s->rank = ti->rank;
    for (int32_t i = 0; i < ti->rank; i++) {
        if (ti->shape[i] < 0)
            return AF_ESHAPE;
        s->d[i] = ti->shape[i];
    }
    return 0;
}

int64_t kr_numel(const kr_shape_t *s)
{
    int64_t n = 1;
    for (int32_t i = 0; i < s->rank; i++)
        n *= s->d[i];
    return n;
}

static int32_t pos_index(const af_graph_t *g, int32_t node, int32_t pos, int out)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    const af_attr_t *at = af_graph_node_attr(
        g, node, out ? "arenaflow.output_positions" : "arenaflow.input_positions");
    int32_t n = out ? ni->n_outputs : ni->n_inputs;
    if (pos < 0)
        return -1;
    if (!at || at->type != AF_ATTR_INTS)
        return pos < n ? pos : -1;
    for (int32_t i = 0; i < at->n && i < n; i++)
        if (at->ints[i] == pos)
            return i;
    return -1;
}

int32_t kr_in_index(const af_graph_t *g, int32_t node, int32_t pos)
{
    return pos_index(g, node, pos, 0);
}

int32_t kr_out_index(const af_graph_t *g, int32_t node, int32_t pos)
{
    return pos_index(g, node, pos, 1);
}

int32_t kr_in_tensor(const af_graph_t *g, int32_t node, int32_t pos)
{
    int32_t i = pos_index(g, node, pos, 0);
    return i < 0 ? -1 : af_graph_node(g, node)->inputs[i];
}

int32_t kr_out_tensor(const af_graph_t *g, int32_t node, int32_t pos)
{
    int32_t i = pos_index(g, node, pos, 1);
    return i < 0 ? -1 : af_graph_node(g, node)->outputs[i];
}

int64_t kr_attr_i(const af_graph_t *g, int32_t node, const char *name, int64_t def)
{
    const af_attr_t *at = af_graph_node_attr(g, node, name);
    return at && at->type == AF_ATTR_INT ? at->i : def;
}

double kr_attr_f(const af_graph_t *g, int32_t node, const char *name, double def)
{
    const af_attr_t *at = af_graph_node_attr(g, node, name);
    if (at && at->type == AF_ATTR_INT)
        return (double)at->i;
    return at && at->type == AF_ATTR_FLOAT ? at->f : def;
}

const char *kr_attr_s(const af_graph_t *g, int32_t node, const char *name, const char *def)
{
    const af_attr_t *at = af_graph_node_attr(g, node, name);
    return at && at->type == AF_ATTR_STRING && at->s ? at->s : def;
}

int kr_pick(const char *s, const char *const *names, int n, int def)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return s[0] ? -1 : def;
}

int32_t kr_attr_ints(const af_graph_t *g, int32_t node, const char *name, int64_t *out, int32_t max)
{
    const af_attr_t *at = af_graph_node_attr(g, node, name);
    if (!at)
        return -1;
    if (at->type == AF_ATTR_INT) {
        if (max > 0)
            out[0] = at->i;
        return 1;
    }
    if (at->type != AF_ATTR_INTS)
        return -1;
    for (int32_t i = 0; i < at->n && i < max; i++)
        out[i] = at->ints[i];
    return at->n;
}

/* ---- kernel-side access ------------------------------------------------------------------- */

const void *kr_in(const af_kernel_args_t *a, int32_t pos, uint64_t *bytes, int32_t *tensor)
{
    int32_t i = pos_index(a->graph, a->node, pos, 0);
    if (bytes)
        *bytes = i < 0 ? 0 : a->input_bytes[i];
    if (tensor)
        *tensor = i < 0 ? -1 : a->info->inputs[i];
    return i < 0 ? NULL : a->inputs[i];
}

void *kr_out(const af_kernel_args_t *a, int32_t pos, uint64_t *bytes, int32_t *tensor)
{
    int32_t i = pos_index(a->graph, a->node, pos, 1);
    if (bytes)
        *bytes = i < 0 ? 0 : a->output_bytes[i];
    if (tensor)
        *tensor = i < 0 ? -1 : a->info->outputs[i];
    return i < 0 ? NULL : a->outputs[i];
}

int kr_in_shape(const af_kernel_args_t *a, int32_t pos, kr_shape_t *s)
{
    int32_t t = kr_in_tensor(a->graph, a->node, pos);
    return t < 0 ? AF_ESHAPE : kr_shape_of(a->graph, t, s);
}

int kr_out_shape(const af_kernel_args_t *a, int32_t pos, kr_shape_t *s)
{
    int32_t t = kr_out_tensor(a->graph, a->node, pos);
    return t < 0 ? AF_ESHAPE : kr_shape_of(a->graph, t, s);
}

int32_t kr_in_ints(const af_kernel_args_t *a, int32_t pos, int64_t *out, int32_t max)
{
    uint64_t bytes;
    int32_t t;
    const void *p = kr_in(a, pos, &bytes, &t);
    if (!p && !bytes)
        return t < 0 ? -1 : 0;
    af_dtype_t dt = kr_dtype(a->graph, t);
    uint64_t es = af_dtype_size(dt), n = es ? bytes / es : 0;
    for (uint64_t i = 0; i < n && i < (uint64_t)max; i++)
        out[i] = af__elem_load_i(dt, p, (int64_t)i);
    return n > INT32_MAX ? INT32_MAX : (int32_t)n; /* the count, even beyond max */
}

static int buf_ok(const af_kernel_args_t *a, int32_t pos, int out)
{
    int32_t i = pos_index(a->graph, a->node, pos, out);
    if (i < 0)
        return AF_ESHAPE;
    int32_t t = out ? a->info->outputs[i] : a->info->inputs[i];
    kr_shape_t s;
    if (kr_shape_of(a->graph, t, &s))
        return AF_ESHAPE;
    uint64_t need = (uint64_t)kr_numel(&s) * af_dtype_size(kr_dtype(a->graph, t));
    const void *p = out ? a->outputs[i] : a->inputs[i];
    uint64_t have = out ? a->output_bytes[i] : a->input_bytes[i];
    return (p || !need) && have >= need ? 0 : AF_ESHAPE;
}

int kr_in_ok(const af_kernel_args_t *a, int32_t pos)
{
    return buf_ok(a, pos, 0);
}

int kr_out_ok(const af_kernel_args_t *a, int32_t pos)
{
    return buf_ok(a, pos, 1);
}

/* ---- elements ----------------------------------------------------------------------------- */

float af__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 1023, u;
    if (e == 31) {
        u = sign | 0x7f800000u | (m << 13); /* inf, NaN (payload kept) */
    } else if (e) {
        u = sign | ((e + 112) << 23) | (m << 13);
    } else if (m) { /* subnormal: normalise */
        int sh = 0;
        while (!(m & 0x400)) {
            m <<= 1;
            sh++;
        }
        u = sign | ((uint32_t)(113 - sh) << 23) | ((m & 1023) << 13);
    } else {
        u = sign;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t af__f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000, e = (u >> 23) & 255, m = u & 0x7fffff;
    if (e == 255)
        return (uint16_t)(sign | 0x7c00 | (m ? 0x200 | (m >> 13) : 0));
    int32_t he = (int32_t)e - 112;
    if (he >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (he <= 0) { /* subnormal or zero: shift in the hidden bit, round to nearest even */
        if (he < -10)
            return (uint16_t)sign;
        m |= 0x800000;
        uint32_t shift = (uint32_t)(14 - he), half = 1u << (shift - 1);
        uint32_t r = m >> shift, rest = m & ((1u << shift) - 1);
        if (rest > half || (rest == half && (r & 1)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((uint32_t)he << 10) | (m >> 13), rest = m & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (r & 1)))
        r++; /* may carry into the exponent, up to inf: correct */
    return (uint16_t)(sign | r);
}

float af__bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t af__f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

double af__elem_load(af_dtype_t dt, const void *p, int64_t i)
{
    switch (dt) {
    case AF_DTYPE_F64:
        return ((const double *)p)[i];
    case AF_DTYPE_F16:
        return af__f16_to_f32(((const uint16_t *)p)[i]);
    case AF_DTYPE_BF16:
        return af__bf16_to_f32(((const uint16_t *)p)[i]);
    case AF_DTYPE_F32:
    case AF_DTYPE_UNKNOWN:
        return ((const float *)p)[i];
    case AF_DTYPE_U64:
        return (double)(uint64_t)af__elem_load_i(dt, p, i);
    default: /* the other integers and bool */
        return (double)af__elem_load_i(dt, p, i);
    }
}

int64_t af__elem_load_i(af_dtype_t dt, const void *p, int64_t i)
{
    switch (dt) {
    case AF_DTYPE_I64:
    case AF_DTYPE_U64:
        return ((const int64_t *)p)[i];
    case AF_DTYPE_I8:
        return ((const int8_t *)p)[i];
    case AF_DTYPE_U8:
    case AF_DTYPE_BOOL:
        return ((const uint8_t *)p)[i];
    case AF_DTYPE_I16:
        return ((const int16_t *)p)[i];
    case AF_DTYPE_U16:
        return ((const uint16_t *)p)[i];
    case AF_DTYPE_I32:
        return ((const int32_t *)p)[i];
    case AF_DTYPE_U32:
        return ((const uint32_t *)p)[i];
    default: {
        double v = af__elem_load(dt, p, i);
        if (isnan(v))
            return INT64_MIN;
        return v >= 9.2233720368547758e18    ? INT64_MAX
               : v <= -9.2233720368547758e18 ? INT64_MIN
                                             : (int64_t)v;
    }
    }
}

/* double -> integer of the type's range: truncation toward zero, saturating (NaN -> 0). */
static int64_t sat(double v, double lo, double hi)
{
    if (isnan(v))
        return 0;
    if (v <= lo)
        return (int64_t)lo;
    if (v >= hi)
        return (int64_t)hi;
    return (int64_t)v;
}

void af__elem_store(af_dtype_t dt, void *p, int64_t i, double v)
{
    switch (dt) {
    case AF_DTYPE_F64:
        ((double *)p)[i] = v;
        return;
    case AF_DTYPE_F16:
        ((uint16_t *)p)[i] = af__f32_to_f16((float)v);
        return;
    case AF_DTYPE_BF16:
        ((uint16_t *)p)[i] = af__f32_to_bf16((float)v);
        return;
    case AF_DTYPE_BOOL:
        ((uint8_t *)p)[i] = v != 0;
        return;
    case AF_DTYPE_I8:
        ((int8_t *)p)[i] = (int8_t)sat(v, -128, 127);
        return;
    case AF_DTYPE_U8:
        ((uint8_t *)p)[i] = (uint8_t)sat(v, 0, 255);
        return;
    case AF_DTYPE_I16:
        ((int16_t *)p)[i] = (int16_t)sat(v, -32768, 32767);
        return;
    case AF_DTYPE_U16:
        ((uint16_t *)p)[i] = (uint16_t)sat(v, 0, 65535);
        return;
    case AF_DTYPE_I32:
        ((int32_t *)p)[i] = (int32_t)sat(v, -2147483648.0, 2147483647.0);
        return;
    case AF_DTYPE_U32:
        ((uint32_t *)p)[i] = (uint32_t)sat(v, 0, 4294967295.0);
        return;
    case AF_DTYPE_I64:
        ((int64_t *)p)[i] = isnan(v)                      ? INT64_MIN
                            : v >= 9.2233720368547758e18  ? INT64_MAX
                            : v <= -9.2233720368547758e18 ? INT64_MIN
                                                          : (int64_t)v;
        return;
    case AF_DTYPE_U64:
        ((uint64_t *)p)[i] = isnan(v) || v <= 0           ? 0
                             : v >= 1.8446744073709552e19 ? UINT64_MAX
                                                          : (uint64_t)v;
        return;
    default:
        ((float *)p)[i] = (float)v;
    }
}

void af__elem_store_i(af_dtype_t dt, void *p, int64_t i, int64_t v)
{
    switch (dt) {
    case AF_DTYPE_I64:
    case AF_DTYPE_U64:
        ((int64_t *)p)[i] = v;
        return;
    case AF_DTYPE_I8:
    case AF_DTYPE_U8:
        ((uint8_t *)p)[i] = (uint8_t)v; /* wraps, as integer arithmetic does */
        return;
    case AF_DTYPE_BOOL:
        ((uint8_t *)p)[i] = v != 0;
        return;
    case AF_DTYPE_I16:
    case AF_DTYPE_U16:
        ((uint16_t *)p)[i] = (uint16_t)v;
        return;
    case AF_DTYPE_I32:
    case AF_DTYPE_U32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        return;
    default:
        af__elem_store(dt, p, i, (double)v);
    }
}

int kr_is_float(af_dtype_t dt)
{
    return dt == AF_DTYPE_F32 || dt == AF_DTYPE_F64 || dt == AF_DTYPE_F16 || dt == AF_DTYPE_BF16;
}

int kr_is_int(af_dtype_t dt)
{
    return ((1u << dt) & KR_INTS) != 0;
}

int kr_is_unsigned(af_dtype_t dt)
{
    return dt == AF_DTYPE_U8 || dt == AF_DTYPE_U16 || dt == AF_DTYPE_U32 || dt == AF_DTYPE_U64 ||
           dt == AF_DTYPE_BOOL;
}

/* ---- broadcasting ------------------------------------------------------------------------- */

int kr_broadcast(const kr_shape_t *a, const kr_shape_t *b, kr_shape_t *out)
{
    int32_t r = a->rank > b->rank ? a->rank : b->rank;
    for (int32_t i = 0; i < r; i++) {
        int32_t ia = a->rank - r + i, ib = b->rank - r + i;
        int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return AF_ESHAPE;
        out->d[i] = da == 1 ? db : da;
    }
    out->rank = r;
    return 0;
}

void kr_bcast_init(kr_bcast_t *b, const kr_shape_t *out, const kr_shape_t *ops, int32_t n)
{
    b->rank = out->rank;
    b->n = n;
    memcpy(b->d, out->d, sizeof(b->d));
    memset(b->idx, 0, sizeof(b->idx));
    for (int32_t k = 0; k < n; k++) {
        const kr_shape_t *s = &ops[k];
        int64_t acc = 1;
        b->off[k] = 0;
        for (int32_t i = out->rank - 1, j = s->rank - 1; i >= 0; i--, j--) {
            int64_t dim = j >= 0 ? s->d[j] : 1;
            b->st[k][i] = dim == 1 ? 0 : acc;
            acc *= dim;
        }
    }
}

void kr_bcast_next(kr_bcast_t *b)
{
    for (int32_t i = b->rank - 1; i >= 0; i--) {
        b->idx[i]++;
        for (int32_t k = 0; k < b->n; k++)
            b->off[k] += b->st[k][i];
        if (b->idx[i] < b->d[i])
            return;
        for (int32_t k = 0; k < b->n; k++)
            b->off[k] -= b->st[k][i] * b->d[i];
        b->idx[i] = 0;
    }
}

int32_t kr_axis(int64_t axis, int32_t rank)
{
    if (axis < 0)
        axis += rank;
    return axis < 0 || axis >= rank ? -1 : (int32_t)axis;
}

int kr_split_axis(const kr_shape_t *s, int64_t axis, int64_t *outer, int64_t *dim, int64_t *inner)
{
    int32_t ax = kr_axis(axis, s->rank);
    if (ax < 0)
        return AF_ESHAPE;
    *outer = *inner = 1;
    for (int32_t i = 0; i < ax; i++)
        *outer *= s->d[i];
    *dim = s->d[ax];
    for (int32_t i = ax + 1; i < s->rank; i++)
        *inner *= s->d[i];
    return 0;
}

void kr_red_init(kr_red_t *r, const kr_shape_t *s, const int *reduced)
{
    int64_t st[AF_MAX_RANK], acc = 1;
    for (int32_t i = s->rank - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= s->d[i];
    }
    r->keep.rank = r->red.rank = 0;
    for (int32_t i = 0; i < s->rank; i++) {
        if (reduced[i]) {
            r->rst[r->red.rank] = st[i];
            r->red.d[r->red.rank++] = s->d[i];
        } else {
            r->kst[r->keep.rank] = st[i];
            r->keep.d[r->keep.rank++] = s->d[i];
        }
    }
}

static int64_t flat_off(const kr_shape_t *s, const int64_t *st, int64_t f)
{
    int64_t off = 0;
    for (int32_t i = s->rank - 1; i >= 0; i--) {
        off += (f % s->d[i]) * st[i];
        f /= s->d[i];
    }
    return off;
}

int64_t kr_red_keep(const kr_red_t *r, int64_t k)
{
    return flat_off(&r->keep, r->kst, k);
}

int64_t kr_red_off(const kr_red_t *r, int64_t j)
{
    return flat_off(&r->red, r->rst, j);
}

/* ---- checks ------------------------------------------------------------------------------- */

int kr_unsup(af_error_t *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        err->code = AF_ENOTSUP;
    }
    return AF_ENOTSUP;
}

int kr_check_static(const af_graph_t *g, int32_t node, af_error_t *err)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    kr_shape_t s;
    for (int32_t k = 0; k < ni->n_inputs + ni->n_outputs; k++) {
        int32_t t = k < ni->n_inputs ? ni->inputs[k] : ni->outputs[k - ni->n_inputs];
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if (ti->kind == AF_TENSOR_SCRATCH)
            continue; /* a lowered node's workspace (bytes only): the reference kernels ignore it */
        if (ti->rank > AF_MAX_RANK)
            return kr_unsup(err, "tensor '%s' has rank %d (above %d)", ti->name, (int)ti->rank,
                            AF_MAX_RANK);
        if (kr_shape_of(g, t, &s) || ti->bytes < 0)
            return kr_unsup(err, "tensor '%s' has a dynamic shape (not known at import)", ti->name);
    }
    return 0;
}

static int check_dt(const af_graph_t *g, int32_t t, uint32_t mask, const char *what, int32_t pos,
                    af_error_t *err)
{
    af_dtype_t dt = kr_dtype(g, t);
    if ((1u << dt) & mask)
        return 0;
    return kr_unsup(err, "%s %d ('%s') of dtype %s", what, (int)pos, af_graph_tensor(g, t)->name,
                    af_dtype_name(dt));
}

int kr_check_in(const af_graph_t *g, int32_t node, int32_t pos, uint32_t mask, af_error_t *err)
{
    int rc = kr_check_static(g, node, err);
    int32_t t = kr_in_tensor(g, node, pos);
    return rc ? rc : t < 0 ? 0 : check_dt(g, t, mask, "input", pos, err);
}

int kr_check_out(const af_graph_t *g, int32_t node, int32_t pos, uint32_t mask, af_error_t *err)
{
    int rc = kr_check_static(g, node, err);
    int32_t t = kr_out_tensor(g, node, pos);
    return rc ? rc : t < 0 ? 0 : check_dt(g, t, mask, "output", pos, err);
}

int kr_check_same(const af_graph_t *g, int32_t node, int32_t n_in, uint32_t mask, af_error_t *err)
{
    int rc = kr_check_out(g, node, 0, mask, err);
    if (rc)
        return rc;
    af_dtype_t dt = kr_dtype(g, af_graph_node(g, node)->outputs[0]);
    const af_node_info_t *ni = af_graph_node(g, node);
    for (int32_t i = 0; i < n_in && i < ni->n_inputs; i++)
        if (kr_dtype(g, ni->inputs[i]) != dt)
            return kr_unsup(err, "input %d of dtype %s, output %s", (int)i,
                            af_dtype_name(kr_dtype(g, ni->inputs[i])), af_dtype_name(dt));
    return 0;
}
