/*
 * Reference kernels — indexing: Gather, GatherElements, GatherND, ScatterElements (and the
 * deprecated Scatter), ScatterND (reduction none/add/mul/max/min), TopK, ReverseSequence; and
 * the ops whose output shape depends on input values (NonZero, Unique, Compress,
 * NonMaxSuppression), refused at bind time with that reason.
 *
 * Indices may be negative (counted from the end, as ONNX allows); an index outside the dim is
 * AF_EINVAL for the round, never an out-of-bounds read. Any dtype for the data (bytes copied);
 * scatter reductions convert through double (int64 exactly). Pure functions: TopK selects by
 * repeated scans (O(k n)) so it needs no temporary.
 */
#include "executor/kernels_ref.h"

static int64_t load_index(const af_kernel_args_t *a, int32_t pos, int64_t i)
{
    int32_t t = kr_in_tensor(a->graph, a->node, pos);
    return af__elem_load_i(kr_dtype(a->graph, t), kr_in(a, pos, NULL, NULL), i);
}

/* Normalises index ix against dim; -1 when outside. */
static int64_t fix_index(int64_t ix, int64_t dim)
{
    ix = ix < 0 ? ix + dim : ix;
    return ix < 0 || ix >= dim ? -1 : ix;
}

static int c_indexed(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_static(g, node, err);
    const af_node_info_t *ni = af_graph_node(g, node);
    if (!rc)
        rc = kr_check_in(g, node, 1, KR_DT(I32) | KR_DT(I64), err);
    if (!rc && kr_dtype(g, ni->inputs[0]) != kr_dtype(g, ni->outputs[0]))
        return kr_unsup(err, "data and output of different dtypes");
    if (!rc && ni->n_inputs > 2 && kr_dtype(g, ni->inputs[2]) != kr_dtype(g, ni->inputs[0]))
        return kr_unsup(err, "updates and data of different dtypes");
    return rc;
}

/* ---- Gather, GatherElements, GatherND ----------------------------------------------------- */

static int k_Gather(const af_kernel_args_t *a)
{
    kr_shape_t sd, si, so;
    int64_t outer, dim, inner;
    if (kr_in_shape(a, 0, &sd) || kr_in_shape(a, 1, &si) || kr_out_shape(a, 0, &so) ||
        kr_in_ok(a, 0) || kr_in_ok(a, 1) || kr_out_ok(a, 0) ||
        kr_split_axis(&sd, kr_attr_i(a->graph, a->node, "axis", 0), &outer, &dim, &inner))
        return AF_ESHAPE;
    int64_t ni = kr_numel(&si);
    if (kr_numel(&so) != outer * ni * inner)
        return AF_ESHAPE;
    size_t row = (size_t)inner * af_dtype_size(kr_dtype(a->graph, a->info->outputs[0]));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < ni; k++) {
            int64_t ix = fix_index(load_index(a, 1, k), dim);
            if (ix < 0)
                return AF_EINVAL;
            memcpy((uint8_t *)a->outputs[0] + (size_t)(o * ni + k) * row,
                   (const uint8_t *)a->inputs[0] + (size_t)(o * dim + ix) * row, row);
        }
    return 0;
}

/* Flat offset in shape s of the multi-index of flat position f in shape t, with dim `ax`
 * replaced by v. */
static int64_t remap(const kr_shape_t *s, const kr_shape_t *t, int64_t f, int32_t ax, int64_t v)
{
    int64_t off = 0, stride = 1;
    for (int32_t i = t->rank - 1; i >= 0; i--) {
        int64_t ix = f % t->d[i];
        f /= t->d[i];
        off += (i == ax ? v : ix) * stride;
        stride *= s->d[i];
    }
    return off;
}

static int k_GatherElements(const af_kernel_args_t *a)
{
    kr_shape_t sd, si, so;
    if (kr_in_shape(a, 0, &sd) || kr_in_shape(a, 1, &si) || kr_out_shape(a, 0, &so) ||
        si.rank != sd.rank || kr_in_ok(a, 0) || kr_in_ok(a, 1) || kr_out_ok(a, 0) ||
        kr_numel(&so) != kr_numel(&si))
        return AF_ESHAPE;
    int32_t ax = kr_axis(kr_attr_i(a->graph, a->node, "axis", 0), sd.rank);
    if (ax < 0)
        return AF_ESHAPE;
    size_t es = af_dtype_size(kr_dtype(a->graph, a->info->outputs[0]));
    int64_t n = kr_numel(&si);
    for (int64_t i = 0; i < n; i++) {
        int64_t ix = fix_index(load_index(a, 1, i), sd.d[ax]);
        if (ix < 0)
            return AF_EINVAL;
        memcpy((uint8_t *)a->outputs[0] + (size_t)i * es,
               (const uint8_t *)a->inputs[0] + (size_t)remap(&sd, &si, i, ax, ix) * es, es);
    }
    return 0;
}

/* GatherND / ScatterND: the data offset of index tuple t (q = last indices dim) after the
 * batch prefix b, in units of the slice that follows; -1 when an index is outside. */
static int64_t nd_offset(const af_kernel_args_t *a, const kr_shape_t *sd, int64_t bdims, int64_t b,
                         int64_t t, int64_t q)
{
    int64_t off = b;
    for (int64_t k = 0; k < q; k++) {
        int64_t dim = sd->d[bdims + k], ix = fix_index(load_index(a, 1, t * q + k), dim);
        if (ix < 0)
            return -1;
        off = off * dim + ix;
    }
    return off;
}

static int k_GatherND(const af_kernel_args_t *a)
{
    kr_shape_t sd, si, so;
    if (kr_in_shape(a, 0, &sd) || kr_in_shape(a, 1, &si) || kr_out_shape(a, 0, &so) ||
        si.rank < 1 || kr_in_ok(a, 0) || kr_in_ok(a, 1) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    int64_t bd = kr_attr_i(a->graph, a->node, "batch_dims", 0), q = si.d[si.rank - 1];
    if (bd < 0 || bd + q > sd.rank || bd >= si.rank)
        return AF_ESHAPE;
    int64_t batch = 1, slice = 1, tuples = 1;
    for (int32_t i = 0; i < bd; i++)
        batch *= sd.d[i];
    for (int32_t i = (int32_t)(bd + q); i < sd.rank; i++)
        slice *= sd.d[i];
    for (int32_t i = (int32_t)bd; i < si.rank - 1; i++)
        tuples *= si.d[i];
    if (kr_numel(&so) != batch * tuples * slice)
        return AF_ESHAPE;
    size_t sb = (size_t)slice * af_dtype_size(kr_dtype(a->graph, a->info->outputs[0]));
    for (int64_t b = 0; b < batch; b++)
        for (int64_t t = 0; t < tuples; t++) {
            int64_t off = nd_offset(a, &sd, bd, b, b * tuples + t, q);
            if (off < 0)
                return AF_EINVAL;
            memcpy((uint8_t *)a->outputs[0] + (size_t)(b * tuples + t) * sb,
                   (const uint8_t *)a->inputs[0] + (size_t)off * sb, sb);
        }
    return 0;
}

/* ---- scatters ----------------------------------------------------------------------------- */

enum { SC_NONE, SC_ADD, SC_MUL, SC_MAX, SC_MIN };

static int sc_reduction(const af_graph_t *g, int32_t node)
{
    static const char *const reds[] = {"none", "add", "mul", "max", "min"};
    return kr_pick(kr_attr_s(g, node, "reduction", ""), reds, 5, SC_NONE);
}

/* y[at] = red(y[at], updates[u]) */
static void sc_apply(af_dtype_t dt, void *y, int64_t at, const void *upd, int64_t u, int red)
{
    size_t es = af_dtype_size(dt);
    if (red == SC_NONE) {
        memcpy((uint8_t *)y + (size_t)at * es, (const uint8_t *)upd + (size_t)u * es, es);
        return;
    }
    if (kr_is_int(dt)) {
        int64_t o = af__elem_load_i(dt, y, at), v = af__elem_load_i(dt, upd, u);
        int64_t r = red == SC_ADD   ? (int64_t)((uint64_t)o + (uint64_t)v)
                    : red == SC_MUL ? (int64_t)((uint64_t)o * (uint64_t)v)
                    : red == SC_MAX ? (o > v ? o : v)
                                    : (o < v ? o : v);
        af__elem_store_i(dt, y, at, r);
        return;
    }
    double o = af__elem_load(dt, y, at), v = af__elem_load(dt, upd, u);
    double r = red == SC_ADD   ? o + v
               : red == SC_MUL ? o * v
               : red == SC_MAX ? fmax(o, v)
                               : fmin(o, v);
    af__elem_store(dt, y, at, r);
}

static int k_ScatterElements(const af_kernel_args_t *a)
{
    kr_shape_t sd, si, su;
    if (kr_in_shape(a, 0, &sd) || kr_in_shape(a, 1, &si) || kr_in_shape(a, 2, &su) ||
        si.rank != sd.rank || kr_numel(&si) != kr_numel(&su) || kr_in_ok(a, 0) || kr_in_ok(a, 1) ||
        kr_in_ok(a, 2) || kr_out_ok(a, 0) || a->output_bytes[0] != a->input_bytes[0])
        return AF_ESHAPE;
    int32_t ax = kr_axis(kr_attr_i(a->graph, a->node, "axis", 0), sd.rank);
    int red = sc_reduction(a->graph, a->node);
    if (ax < 0 || red < 0)
        return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    if (a->outputs[0] != a->inputs[0])
        memcpy(a->outputs[0], a->inputs[0], (size_t)a->output_bytes[0]);
    int64_t n = kr_numel(&si);
    for (int64_t i = 0; i < n; i++) {
        int64_t ix = fix_index(load_index(a, 1, i), sd.d[ax]);
        if (ix < 0)
            return AF_EINVAL;
        sc_apply(dt, a->outputs[0], remap(&sd, &si, i, ax, ix), a->inputs[2], i, red);
    }
    return 0;
}

static int k_ScatterND(const af_kernel_args_t *a)
{
    kr_shape_t sd, si;
    if (kr_in_shape(a, 0, &sd) || kr_in_shape(a, 1, &si) || si.rank < 1 || kr_in_ok(a, 0) ||
        kr_in_ok(a, 1) || kr_in_ok(a, 2) || kr_out_ok(a, 0) ||
        a->output_bytes[0] != a->input_bytes[0])
        return AF_ESHAPE;
    int64_t q = si.d[si.rank - 1], slice = 1, tuples = kr_numel(&si) / (q ? q : 1);
    int red = sc_reduction(a->graph, a->node);
    if (q > sd.rank || red < 0)
        return AF_ESHAPE;
    for (int32_t i = (int32_t)q; i < sd.rank; i++)
        slice *= sd.d[i];
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    if ((uint64_t)(tuples * slice) * af_dtype_size(dt) > a->input_bytes[2])
        return AF_ESHAPE;
    if (a->outputs[0] != a->inputs[0])
        memcpy(a->outputs[0], a->inputs[0], (size_t)a->output_bytes[0]);
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off = nd_offset(a, &sd, 0, 0, t, q);
        if (off < 0)
            return AF_EINVAL;
        for (int64_t j = 0; j < slice; j++)
            sc_apply(dt, a->outputs[0], off * slice + j, a->inputs[2], t * slice + j, red);
    }
    return 0;
}

static int c_scatter(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = c_indexed(g, node, err);
    if (!rc && sc_reduction(g, node) < 0)
        return kr_unsup(err, "reduction '%s'", kr_attr_s(g, node, "reduction", ""));
    return rc;
}

/* ---- TopK, ReverseSequence ---------------------------------------------------------------- */

/* 1 when (v, i) comes before (bv, bi) in TopK order (ties: the lower index first). */
static int topk_before(double v, int64_t i, double bv, int64_t bi, int largest)
{
    if (v != bv)
        return largest ? v > bv : v < bv;
    return i < bi;
}

static int k_TopK(const af_kernel_args_t *a)
{
    kr_shape_t sx, sv;
    int64_t outer, dim, inner, k = 0;
    uint64_t ib;
    int64_t *idx = kr_out(a, 1, &ib, NULL);
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &sv) || kr_in_ok(a, 0) || kr_out_ok(a, 0) ||
        kr_in_ints(a, 1, &k, 1) != 1 ||
        kr_split_axis(&sx, kr_attr_i(a->graph, a->node, "axis", -1), &outer, &dim, &inner) ||
        k < 0 || k > dim || kr_numel(&sv) != outer * k * inner ||
        (idx && ib < (uint64_t)(outer * k * inner) * 8))
        return AF_ESHAPE;
    int largest = (int)kr_attr_i(a->graph, a->node, "largest", 1);
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * dim * inner + in, pi = -1;
            double pv = 0;
            for (int64_t r = 0; r < k; r++) {
                int64_t bi = -1;
                double bv = 0;
                for (int64_t i = 0; i < dim; i++) {
                    double v = af__elem_load(dt, a->inputs[0], base + i * inner);
                    if (pi >= 0 && !topk_before(pv, pi, v, i, largest))
                        continue; /* taken already */
                    if (bi < 0 || topk_before(v, i, bv, bi, largest))
                        bi = i, bv = v;
                }
                int64_t at = (o * k + r) * inner + in;
                memcpy((uint8_t *)a->outputs[0] + (size_t)at * af_dtype_size(dt),
                       (const uint8_t *)a->inputs[0] +
                           (size_t)(base + bi * inner) * af_dtype_size(dt),
                       af_dtype_size(dt));
                if (idx)
                    idx[at] = bi;
                pi = bi, pv = bv;
            }
        }
    return 0;
}

static int c_TopK(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_same(g, node, 1, KR_NUMERIC, err);
    if (!rc)
        rc = kr_check_out(g, node, 1, KR_DT(I64), err);
    if (!rc && !kr_attr_i(g, node, "sorted", 1))
        return kr_unsup(err, "sorted = 0");
    return rc;
}

static int k_ReverseSequence(const af_kernel_args_t *a)
{
    kr_shape_t sx;
    if (kr_in_shape(a, 0, &sx) || sx.rank < 2 || kr_in_ok(a, 0) || kr_out_ok(a, 0) ||
        a->output_bytes[0] != a->input_bytes[0])
        return AF_ESHAPE;
    int32_t ba = kr_axis(kr_attr_i(a->graph, a->node, "batch_axis", 1), sx.rank);
    int32_t ta = kr_axis(kr_attr_i(a->graph, a->node, "time_axis", 0), sx.rank);
    if (ba < 0 || ta < 0 || ba == ta)
        return AF_ESHAPE;
    size_t es = af_dtype_size(kr_dtype(a->graph, a->info->outputs[0]));
    int64_t n = kr_numel(&sx), st[AF_MAX_RANK], acc = 1;
    for (int32_t i = sx.rank - 1; i >= 0; i--)
        st[i] = acc, acc *= sx.d[i];
    for (int64_t i = 0; i < n; i++) {
        int64_t b = i / st[ba] % sx.d[ba], t = i / st[ta] % sx.d[ta];
        int64_t len = load_index(a, 1, b), src = i;
        if (len < 0 || len > sx.d[ta])
            return AF_EINVAL;
        if (t < len)
            src = i + (len - 1 - 2 * t) * st[ta];
        memcpy((uint8_t *)a->outputs[0] + (size_t)i * es,
               (const uint8_t *)a->inputs[0] + (size_t)src * es, es);
    }
    return 0;
}

/* ---- data-dependent output shapes --------------------------------------------------------- */

static int k_data_dependent(const af_kernel_args_t *a)
{
    (void)a;
    return AF_ENOTSUP;
}

static int c_data_dependent(const af_graph_t *g, int32_t node, af_error_t *err)
{
    (void)g;
    (void)node;
    return kr_unsup(err, "the output shape depends on input values (not supported by the "
                         "static planner)");
}

#define ROW(NAME, CHECK)                                                                           \
    {                                                                                              \
        .op = #NAME, .fn = k_##NAME, .check = CHECK                                                \
    }
#define MOVE(NAME, CHECK)                                                                          \
    {                                                                                              \
        .op = #NAME, .fn = k_##NAME, .check = CHECK, .strings = 1                                  \
    }
#define DATA_DEP(NAME)                                                                             \
    {                                                                                              \
        .op = #NAME, .fn = k_data_dependent, .check = c_data_dependent                             \
    }

const af__kernel_entry_t af__kref_gather[] = {
    MOVE(Gather, c_indexed),
    MOVE(GatherElements, c_indexed),
    MOVE(GatherND, c_indexed),
    ROW(ScatterElements, c_scatter),
    {.op = "Scatter", .fn = k_ScatterElements, .check = c_scatter},
    ROW(ScatterND, c_scatter),
    ROW(TopK, c_TopK),
    MOVE(ReverseSequence, c_indexed),
    DATA_DEP(NonZero),
    DATA_DEP(Unique),
    DATA_DEP(Compress),
    DATA_DEP(NonMaxSuppression),
    {.op = NULL},
};
