/*
 * Reference kernels — data movement, any dtype (elements are copied as bytes): views
 * (Reshape, Flatten, Squeeze, Unsqueeze, Identity, the importer's arenaflow.IfGate), Transpose,
 * Concat, Split, Slice, Pad, Tile, Expand, DepthToSpace, SpaceToDepth, Trilu, Shape, Size,
 * EyeLike, Range, OneHot, ConstantOfShape, If (the importer's form: both branches planned, the
 * executor runs the taken one, this kernel copies its outputs).
 *
 * Output shapes come from the graph (the importer inferred them or the model declared them);
 * where an op's result also depends on input values (Slice starts, Pad pads, Trilu k, Range
 * bounds), the kernel recomputes the shape from those values and returns AF_ESHAPE when it
 * disagrees, so a wrong static shape is an error, never a short or overlong copy.
 *
 * The walk used by most of them: an output odometer, the source offset computed per element
 * from per-dim strides. Pure functions; no temporaries beyond fixed-size index arrays.
 */
#include "executor/kernels_ref.h"

/* C-order strides of a shape. */
static void strides(const kr_shape_t *s, int64_t *st)
{
    int64_t acc = 1;
    for (int32_t i = s->rank - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= s->d[i];
    }
}

/* Advances idx over shape s; returns 0 when it wrapped. */
static int odo_next(const kr_shape_t *s, int64_t *idx)
{
    for (int32_t i = s->rank - 1; i >= 0; i--) {
        if (++idx[i] < s->d[i])
            return 1;
        idx[i] = 0;
    }
    return 0;
}

static size_t esize(const af_kernel_args_t *a)
{
    return af_dtype_size(kr_dtype(a->graph, a->info->outputs[0]));
}

/* Input 0 and output 0 have the same dtype; shapes static. */
static int c_same01(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_static(g, node, err);
    const af_node_info_t *ni = af_graph_node(g, node);
    if (rc || ni->n_inputs < 1 || ni->n_outputs < 1)
        return rc ? rc : kr_unsup(err, "no input or output");
    if (kr_dtype(g, ni->inputs[0]) != kr_dtype(g, ni->outputs[0]))
        return kr_unsup(err, "input of dtype %s, output %s",
                        af_dtype_name(kr_dtype(g, ni->inputs[0])),
                        af_dtype_name(kr_dtype(g, ni->outputs[0])));
    return 0;
}

/* ---- views -------------------------------------------------------------------------------- */

/* Nothing to do when the planner made the output a view of the input, else a copy. */
static int k_view(const af_kernel_args_t *a)
{
    if (a->n_inputs < 1 || a->n_outputs < 1 || a->input_bytes[0] != a->output_bytes[0])
        return AF_ESHAPE;
    if (a->outputs[0] != a->inputs[0])
        memmove(a->outputs[0], a->inputs[0], (size_t)a->output_bytes[0]);
    return 0;
}

static int c_view(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = c_same01(g, node, err);
    const af_node_info_t *ni = af_graph_node(g, node);
    if (!rc &&
        af_graph_tensor(g, ni->inputs[0])->bytes != af_graph_tensor(g, ni->outputs[0])->bytes)
        return kr_unsup(err, "input and output sizes differ");
    return rc;
}

/* ---- Transpose ---------------------------------------------------------------------------- */

/* perm attribute, or the reversal; graphs built for planning without perm whose dims are not a
 * reversal get the permutation that matches dims in order (first unused equal dim). */
static int get_perm(const af_graph_t *g, int32_t node, const kr_shape_t *sx, const kr_shape_t *so,
                    int64_t *perm)
{
    int32_t r = sx->rank;
    int np = kr_attr_ints(g, node, "perm", perm, AF_MAX_RANK);
    if (np >= 0 && np != r)
        return -1;
    if (np < 0) {
        int reversed = 1, used[AF_MAX_RANK] = {0};
        for (int32_t i = 0; i < r; i++) {
            perm[i] = r - 1 - i;
            reversed &= so->d[i] == sx->d[r - 1 - i];
        }
        for (int32_t i = 0; !reversed && i < r; i++) {
            perm[i] = -1;
            for (int32_t j = 0; j < r && perm[i] < 0; j++)
                if (!used[j] && sx->d[j] == so->d[i])
                    perm[i] = j, used[j] = 1;
        }
    }
    int seen[AF_MAX_RANK] = {0};
    for (int32_t i = 0; i < r; i++) {
        if (perm[i] < 0)
            perm[i] += r;
        if (perm[i] < 0 || perm[i] >= r || seen[perm[i]]++ || so->d[i] != sx->d[perm[i]])
            return -1;
    }
    return 0;
}

static int k_Transpose(const af_kernel_args_t *a)
{
    kr_shape_t sx, so;
    int64_t perm[AF_MAX_RANK], st[AF_MAX_RANK], idx[AF_MAX_RANK] = {0};
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &so) || sx.rank != so.rank ||
        get_perm(a->graph, a->node, &sx, &so, perm) || kr_in_ok(a, 0) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    strides(&sx, st);
    size_t es = esize(a);
    int64_t n = kr_numel(&so);
    const uint8_t *x = a->inputs[0];
    uint8_t *y = a->outputs[0];
    for (int64_t o = 0; o < n; o++, odo_next(&so, idx)) {
        int64_t src = 0;
        for (int32_t i = 0; i < so.rank; i++)
            src += idx[i] * st[perm[i]];
        memcpy(y + (size_t)o * es, x + (size_t)src * es, es);
    }
    return 0;
}

static int c_Transpose(const af_graph_t *g, int32_t node, af_error_t *err)
{
    kr_shape_t sx, so;
    int64_t perm[AF_MAX_RANK];
    int rc = c_same01(g, node, err);
    if (rc)
        return rc;
    kr_shape_of(g, kr_in_tensor(g, node, 0), &sx);
    kr_shape_of(g, kr_out_tensor(g, node, 0), &so);
    if (sx.rank != so.rank || get_perm(g, node, &sx, &so, perm))
        return kr_unsup(err, "perm does not map the input shape onto the output shape");
    return 0;
}

/* ---- Concat, Split ------------------------------------------------------------------------ */

/* Concat's axis; graphs built for planning (the model zoo) omit it: then the one axis along
 * which the inputs' dims add up to the output's while every other dim agrees. -1 if none. */
static int32_t concat_axis(const af_graph_t *g, int32_t node, const kr_shape_t *so)
{
    const af_attr_t *at = af_graph_node_attr(g, node, "axis");
    if (at && at->type == AF_ATTR_INT)
        return kr_axis(at->i, so->rank);
    const af_node_info_t *ni = af_graph_node(g, node);
    for (int32_t ax = 0; ax < so->rank; ax++) {
        int64_t sum = 0;
        int ok = 1;
        for (int32_t i = 0; i < ni->n_inputs && ok; i++) {
            kr_shape_t si;
            ok = !kr_shape_of(g, ni->inputs[i], &si) && si.rank == so->rank;
            for (int32_t d = 0; ok && d < so->rank; d++)
                ok = d == ax || si.d[d] == so->d[d];
            sum += ok ? si.d[ax] : 0;
        }
        if (ok && sum == so->d[ax])
            return ax;
    }
    return -1;
}

static int k_Concat(const af_kernel_args_t *a)
{
    kr_shape_t so, si;
    int64_t outer, dim, inner;
    int32_t ax = kr_out_shape(a, 0, &so) ? -1 : concat_axis(a->graph, a->node, &so);
    if (ax < 0 || kr_out_ok(a, 0) || kr_split_axis(&so, ax, &outer, &dim, &inner))
        return AF_ESHAPE;
    size_t es = esize(a);
    uint64_t row = (uint64_t)dim * (uint64_t)inner * es, at = 0;
    for (int32_t i = 0; i < a->n_inputs; i++) {
        if (kr_shape_of(a->graph, a->info->inputs[i], &si) || si.rank != so.rank || kr_in_ok(a, i))
            return AF_ESHAPE;
        uint64_t part = (uint64_t)si.d[ax] * (uint64_t)inner * es;
        if (at + part > row)
            return AF_ESHAPE;
        for (int64_t o = 0; o < outer; o++)
            memcpy((uint8_t *)a->outputs[0] + (uint64_t)o * row + at,
                   (const uint8_t *)a->inputs[i] + (uint64_t)o * part, (size_t)part);
        at += part;
    }
    return at == row ? 0 : AF_ESHAPE;
}

static int c_Concat(const af_graph_t *g, int32_t node, af_error_t *err)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    int rc = kr_check_same(g, node, ni->n_inputs, KR_ALL | KR_DT(STRING), err);
    kr_shape_t so;
    if (!rc && (kr_shape_of(g, ni->outputs[0], &so) || concat_axis(g, node, &so) < 0))
        return kr_unsup(err, "axis out of range, or input shapes that do not concatenate");
    return rc;
}

/* Split into the outputs' shapes along axis (the split sizes are what the outputs hold). */
static int k_Split(const af_kernel_args_t *a)
{
    kr_shape_t sx, sk;
    int64_t outer, dim, inner;
    if (kr_in_shape(a, 0, &sx) || kr_in_ok(a, 0) ||
        kr_split_axis(&sx, kr_attr_i(a->graph, a->node, "axis", 0), &outer, &dim, &inner))
        return AF_ESHAPE;
    int32_t ax = kr_axis(kr_attr_i(a->graph, a->node, "axis", 0), sx.rank);
    size_t es = esize(a);
    uint64_t in_row = (uint64_t)dim * (uint64_t)inner * es, at = 0;
    for (int32_t k = 0; k < a->n_outputs; k++) {
        if (kr_shape_of(a->graph, a->info->outputs[k], &sk) || sk.rank != sx.rank ||
            kr_out_ok(a, k))
            return AF_ESHAPE;
        uint64_t part = (uint64_t)sk.d[ax] * (uint64_t)inner * es;
        if (at + part > in_row)
            return AF_ESHAPE;
        for (int64_t o = 0; o < outer; o++)
            memcpy((uint8_t *)a->outputs[k] + (uint64_t)o * part,
                   (const uint8_t *)a->inputs[0] + (uint64_t)o * in_row + at, (size_t)part);
        at += part;
    }
    return at == in_row ? 0 : AF_ESHAPE;
}

static int c_Split(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = c_same01(g, node, err);
    kr_shape_t sx;
    if (!rc && (kr_shape_of(g, kr_in_tensor(g, node, 0), &sx) ||
                kr_axis(kr_attr_i(g, node, "axis", 0), sx.rank) < 0))
        return kr_unsup(err, "axis out of range");
    return rc;
}

/* ---- Slice -------------------------------------------------------------------------------- */

/* Per-dim start and step of a Slice from its inputs (opset >= 10) or attributes (opset 1).
 * Fails when the counts they give disagree with the output shape. */
static int slice_params(const af_kernel_args_t *a, const kr_shape_t *sx, const kr_shape_t *so,
                        int64_t *start, int64_t *step)
{
    int64_t st[AF_MAX_RANK], en[AF_MAX_RANK], ax[AF_MAX_RANK], sp[AF_MAX_RANK];
    int32_t r = sx->rank, ns, ne, na, nsp;
    if (a->n_inputs >= 3) {
        ns = kr_in_ints(a, 1, st, AF_MAX_RANK);
        ne = kr_in_ints(a, 2, en, AF_MAX_RANK);
        na = kr_in_ints(a, 3, ax, AF_MAX_RANK);
        nsp = kr_in_ints(a, 4, sp, AF_MAX_RANK);
    } else {
        ns = kr_attr_ints(a->graph, a->node, "starts", st, AF_MAX_RANK);
        ne = kr_attr_ints(a->graph, a->node, "ends", en, AF_MAX_RANK);
        na = kr_attr_ints(a->graph, a->node, "axes", ax, AF_MAX_RANK);
        nsp = -1;
    }
    if (ns < 0 || ns != ne || ns > r || (na >= 0 && na != ns) || (nsp >= 0 && nsp != ns))
        return AF_ESHAPE;
    int sliced[AF_MAX_RANK] = {0};
    for (int32_t i = 0; i < r; i++)
        start[i] = 0, step[i] = 1;
    for (int32_t i = 0; i < ns; i++) {
        int32_t d = na >= 0 ? kr_axis(ax[i], r) : i;
        int64_t s = nsp >= 0 ? sp[i] : 1, dim = sx->d[d > 0 ? d : 0], b = st[i], e = en[i];
        if (d < 0 || s == 0)
            return AF_ESHAPE;
        b = b < 0 ? b + dim : b;
        e = e < 0 ? (e < -dim ? -1 : e + dim) : e; /* INT64_MIN ends stay below the range */
        if (s > 0) {
            b = b < 0 ? 0 : b > dim ? dim : b;
            e = e < 0 ? 0 : e > dim ? dim : e;
        } else {
            b = b < 0 ? -1 : b > dim - 1 ? dim - 1 : b;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        }
        int64_t cnt =
            s > 0 ? (e > b ? (e - b + s - 1) / s : 0) : (b > e ? (b - e - s - 1) / -s : 0);
        if (cnt != so->d[d])
            return AF_ESHAPE;
        start[d] = b;
        step[d] = s;
        sliced[d] = 1;
    }
    for (int32_t i = 0; i < r; i++)
        if (!sliced[i] && so->d[i] != sx->d[i])
            return AF_ESHAPE; /* an axis not sliced keeps its size */
    return 0;
}

/* Copies output element idx from input element start + idx * step per dim (Slice), or
 * idx mod the input dim when wrap (Tile). */
static void strided_copy(const af_kernel_args_t *a, const kr_shape_t *sx, const kr_shape_t *so,
                         const int64_t *start, const int64_t *step, int wrap)
{
    int64_t st[AF_MAX_RANK], idx[AF_MAX_RANK] = {0};
    strides(sx, st);
    size_t es = esize(a);
    /* A slice with step 1 on the last dim copies whole rows of it at once. */
    int32_t r = so->rank;
    kr_shape_t outer = *so;
    int64_t inner = r > 0 && !wrap && step[r - 1] == 1 ? so->d[r - 1] : 1;
    if (inner > 1)
        outer.d[r - 1] = 1;
    int64_t n = kr_numel(&outer);
    for (int64_t o = 0; o < n; o++, odo_next(&outer, idx)) {
        int64_t src = 0;
        for (int32_t i = 0; i < sx->rank; i++)
            src += (wrap ? idx[i] % sx->d[i] : start[i] + idx[i] * step[i]) * st[i];
        memcpy((uint8_t *)a->outputs[0] + (size_t)(o * inner) * es,
               (const uint8_t *)a->inputs[0] + (size_t)src * es, (size_t)inner * es);
    }
}

static int k_Slice(const af_kernel_args_t *a)
{
    kr_shape_t sx, so;
    int64_t start[AF_MAX_RANK], step[AF_MAX_RANK];
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &so) || sx.rank != so.rank || kr_in_ok(a, 0) ||
        kr_out_ok(a, 0) || slice_params(a, &sx, &so, start, step))
        return AF_ESHAPE;
    strided_copy(a, &sx, &so, start, step, 0);
    return 0;
}

static int c_Slice(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = c_same01(g, node, err);
    for (int32_t p = 1; !rc && p < 5; p++)
        rc = kr_check_in(g, node, p, KR_DT(I32) | KR_DT(I64), err);
    return rc;
}

/* ---- Pad ---------------------------------------------------------------------------------- */

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

static int pad_mode(const af_graph_t *g, int32_t node)
{
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
    return kr_pick(kr_attr_s(g, node, "mode", ""), modes, 4, PAD_CONSTANT);
}

/* Source index along one dim for output position o with begin pad pb; -1 for the constant. */
static int64_t pad_src(int mode, int64_t o, int64_t pb, int64_t dim)
{
    int64_t i = o - pb;
    if (i >= 0 && i < dim)
        return i;
    if (mode == PAD_CONSTANT || dim == 0)
        return -1;
    if (mode == PAD_EDGE)
        return i < 0 ? 0 : dim - 1;
    if (mode == PAD_WRAP)
        return ((i % dim) + dim) % dim;
    if (dim == 1)
        return 0;
    int64_t period = 2 * (dim - 1); /* reflect without repeating the edge */
    i = ((i % period) + period) % period;
    return i < dim ? i : period - i;
}

static int k_Pad(const af_kernel_args_t *a)
{
    const af_graph_t *g = a->graph;
    kr_shape_t sx, so;
    int64_t pads[2 * AF_MAX_RANK], axes[AF_MAX_RANK], pb[AF_MAX_RANK] = {0}, st[AF_MAX_RANK];
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &so) || sx.rank != so.rank || kr_in_ok(a, 0) ||
        kr_out_ok(a, 0))
        return AF_ESHAPE;
    int32_t r = sx.rank;
    int32_t np = a->n_inputs >= 2 ? kr_in_ints(a, 1, pads, 2 * AF_MAX_RANK)
                                  : kr_attr_ints(g, a->node, "pads", pads, 2 * AF_MAX_RANK);
    int32_t na = kr_in_ints(a, 3, axes, AF_MAX_RANK);
    int32_t nax = na >= 0 ? na : r;
    if (np != 2 * nax || nax > r)
        return AF_ESHAPE;
    for (int32_t i = 0; i < nax; i++) {
        int32_t d = na >= 0 ? kr_axis(axes[i], r) : i;
        if (d < 0 || sx.d[d] + pads[i] + pads[i + nax] != so.d[d])
            return AF_ESHAPE;
        pb[d] = pads[i];
    }
    af_dtype_t dt = kr_dtype(g, a->info->outputs[0]);
    size_t es = af_dtype_size(dt);
    uint8_t cval[8] = {0};
    uint64_t cb;
    const void *cv = kr_in(a, 2, &cb, NULL);
    if (cv && cb >= es)
        memcpy(cval, cv, es);
    else if (!cv)
        af__elem_store(dt, cval, 0, kr_attr_f(g, a->node, "value", 0.0));
    int mode = pad_mode(g, a->node);
    strides(&sx, st);
    int64_t idx[AF_MAX_RANK] = {0}, n = kr_numel(&so);
    for (int64_t o = 0; o < n; o++, odo_next(&so, idx)) {
        int64_t src = 0;
        for (int32_t i = 0; i < r && src >= 0; i++) {
            int64_t s = pad_src(mode, idx[i], pb[i], sx.d[i]);
            src = s < 0 ? -1 : src + s * st[i];
        }
        memcpy((uint8_t *)a->outputs[0] + (size_t)o * es,
               src < 0 ? cval : (const uint8_t *)a->inputs[0] + (size_t)src * es, es);
    }
    return 0;
}

static int c_Pad(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = c_same01(g, node, err);
    if (!rc)
        rc = kr_check_in(g, node, 1, KR_DT(I64), err);
    if (!rc && pad_mode(g, node) < 0)
        return kr_unsup(err, "mode '%s'", kr_attr_s(g, node, "mode", ""));
    return rc;
}

/* ---- Tile, Expand, DepthToSpace, SpaceToDepth ---------------------------------------------- */

static int k_Tile(const af_kernel_args_t *a)
{
    kr_shape_t sx, so;
    int64_t rep[AF_MAX_RANK];
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &so) || sx.rank != so.rank || kr_in_ok(a, 0) ||
        kr_out_ok(a, 0) || kr_in_ints(a, 1, rep, AF_MAX_RANK) != sx.rank)
        return AF_ESHAPE;
    for (int32_t i = 0; i < sx.rank; i++)
        if (rep[i] < 0 || sx.d[i] * rep[i] != so.d[i])
            return AF_ESHAPE;
    strided_copy(a, &sx, &so, NULL, NULL, 1);
    return 0;
}

static int k_Expand(const af_kernel_args_t *a)
{
    kr_shape_t sx, so, bs;
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &so) || kr_in_ok(a, 0) || kr_out_ok(a, 0) ||
        kr_broadcast(&sx, &so, &bs) || bs.rank != so.rank || kr_numel(&bs) != kr_numel(&so))
        return AF_ESHAPE;
    size_t es = esize(a);
    kr_bcast_t b;
    kr_bcast_init(&b, &so, &sx, 1);
    int64_t n = kr_numel(&so);
    for (int64_t o = 0; o < n; o++, kr_bcast_next(&b))
        memcpy((uint8_t *)a->outputs[0] + (size_t)o * es,
               (const uint8_t *)a->inputs[0] + (size_t)b.off[0] * es, es);
    return 0;
}

/*
 * DepthToSpace / SpaceToDepth on [N, C, H, W] with block b. DCR: input channel
 * (i * b + j) * C' + c; CRD: c * b * b + i * b + j (i, j: the position inside the block).
 */
static int depth_space(const af_kernel_args_t *a, int to_space)
{
    kr_shape_t sx, so;
    int64_t b = kr_attr_i(a->graph, a->node, "blocksize", 0);
    int crd = !strcmp(kr_attr_s(a->graph, a->node, "mode", "DCR"), "CRD");
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &so) || sx.rank != 4 || so.rank != 4 ||
        b < 1 || kr_in_ok(a, 0) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    const kr_shape_t *big = to_space ? &so : &sx; /* the spatial side: [N, C', H*b, W*b] */
    const kr_shape_t *deep = to_space ? &sx : &so;
    int64_t n = big->d[0], c = big->d[1], h = deep->d[2], w = deep->d[3];
    if (deep->d[1] != c * b * b || big->d[2] != h * b || big->d[3] != w * b || deep->d[0] != n)
        return AF_ESHAPE;
    size_t es = esize(a);
    for (int64_t in = 0; in < n; in++)
        for (int64_t ic = 0; ic < c; ic++)
            for (int64_t y = 0; y < h * b; y++)
                for (int64_t x = 0; x < w * b; x++) {
                    int64_t i = y % b, j = x % b;
                    int64_t dc = crd ? (ic * b + i) * b + j : (i * b + j) * c + ic;
                    int64_t di = ((in * c * b * b + dc) * h + y / b) * w + x / b;
                    int64_t si = ((in * c + ic) * h * b + y) * w * b + x;
                    const uint8_t *src = (const uint8_t *)a->inputs[0];
                    uint8_t *dst = (uint8_t *)a->outputs[0];
                    if (to_space)
                        memcpy(dst + (size_t)si * es, src + (size_t)di * es, es);
                    else
                        memcpy(dst + (size_t)di * es, src + (size_t)si * es, es);
                }
    return 0;
}

static int k_DepthToSpace(const af_kernel_args_t *a)
{
    return depth_space(a, 1);
}
static int k_SpaceToDepth(const af_kernel_args_t *a)
{
    return depth_space(a, 0);
}

/* ---- Trilu, Shape, Size, EyeLike, Range, OneHot ------------------------------------------- */

static int k_Trilu(const af_kernel_args_t *a)
{
    kr_shape_t sx;
    int64_t k = 0;
    if (kr_in_shape(a, 0, &sx) || sx.rank < 2 || kr_in_ok(a, 0) || kr_out_ok(a, 0) ||
        a->input_bytes[0] != a->output_bytes[0] || kr_in_ints(a, 1, &k, 1) > 1)
        return AF_ESHAPE;
    int upper = (int)kr_attr_i(a->graph, a->node, "upper", 1);
    int64_t r = sx.d[sx.rank - 2], c = sx.d[sx.rank - 1], n = kr_numel(&sx);
    size_t es = esize(a);
    for (int64_t i = 0; i < n; i++) {
        int64_t row = i / c % r, col = i % c;
        int keep = upper ? col - row >= k : col - row <= k;
        uint8_t *y = (uint8_t *)a->outputs[0] + (size_t)i * es;
        if (keep)
            memmove(y, (const uint8_t *)a->inputs[0] + (size_t)i * es, es);
        else
            memset(y, 0, es);
    }
    return 0;
}

static int c_Trilu(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = c_same01(g, node, err);
    return rc ? rc : kr_check_in(g, node, 1, KR_DT(I64), err);
}

static int k_Shape(const af_kernel_args_t *a)
{
    kr_shape_t sx, so;
    if (kr_in_shape(a, 0, &sx) || kr_out_shape(a, 0, &so) || kr_out_ok(a, 0) || so.rank != 1)
        return AF_ESHAPE;
    int64_t s = kr_attr_i(a->graph, a->node, "start", 0);
    int64_t e = kr_attr_i(a->graph, a->node, "end", sx.rank);
    s = s < 0 ? s + sx.rank : s;
    e = e < 0 ? e + sx.rank : e;
    s = s < 0 ? 0 : s > sx.rank ? sx.rank : s;
    e = e < 0 ? 0 : e > sx.rank ? sx.rank : e;
    if ((e > s ? e - s : 0) != so.d[0])
        return AF_ESHAPE;
    for (int64_t i = s; i < e; i++)
        ((int64_t *)a->outputs[0])[i - s] = sx.d[i];
    return 0;
}

static int c_int64_out(const af_graph_t *g, int32_t node, af_error_t *err)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    const af_tensor_info_t *ti = ni->n_inputs ? af_graph_tensor(g, ni->inputs[0]) : NULL;
    if (!ti || ti->rank < 0)
        return kr_unsup(err, "input of unknown rank");
    for (int32_t i = 0; i < ti->rank; i++)
        if (ti->shape[i] < 0)
            return kr_unsup(err, "input '%s' has a dynamic shape", ti->name);
    return kr_check_out(g, node, 0, KR_DT(I64), err);
}

static int k_Size(const af_kernel_args_t *a)
{
    kr_shape_t sx;
    if (kr_in_shape(a, 0, &sx) || a->output_bytes[0] < 8)
        return AF_ESHAPE;
    *(int64_t *)a->outputs[0] = kr_numel(&sx);
    return 0;
}

static int k_EyeLike(const af_kernel_args_t *a)
{
    kr_shape_t so;
    if (kr_out_shape(a, 0, &so) || so.rank != 2 || kr_out_ok(a, 0))
        return AF_ESHAPE;
    int64_t k = kr_attr_i(a->graph, a->node, "k", 0);
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    for (int64_t i = 0; i < so.d[0]; i++)
        for (int64_t j = 0; j < so.d[1]; j++)
            af__elem_store_i(dt, a->outputs[0], i * so.d[1] + j, j - i == k);
    return 0;
}

static int c_EyeLike(const af_graph_t *g, int32_t node, af_error_t *err)
{
    return kr_check_out(g, node, 0, KR_ALL, err);
}

static int k_Range(const af_kernel_args_t *a)
{
    kr_shape_t so;
    if (kr_out_shape(a, 0, &so) || so.rank != 1 || kr_out_ok(a, 0))
        return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    const void *v[3];
    for (int32_t i = 0; i < 3; i++) {
        uint64_t b;
        v[i] = kr_in(a, i, &b, NULL);
        if (!v[i] || b < af_dtype_size(dt))
            return AF_ESHAPE;
    }
    double s = af__elem_load(dt, v[0], 0), l = af__elem_load(dt, v[1], 0);
    double d = af__elem_load(dt, v[2], 0);
    double cnt = d != 0 ? ceil((l - s) / d) : -1;
    if (cnt < 0 ? so.d[0] != 0 : cnt != (double)so.d[0])
        return AF_ESHAPE;
    for (int64_t i = 0; i < so.d[0]; i++)
        af__elem_store(dt, a->outputs[0], i, s + (double)i * d);
    return 0;
}

static int c_Range(const af_graph_t *g, int32_t node, af_error_t *err)
{
    return kr_check_same(g, node, 3, KR_NUMERIC, err);
}

/* OneHot(indices, depth, values=[off, on]), axis (default -1) where the new dim goes. */
static int k_OneHot(const af_kernel_args_t *a)
{
    kr_shape_t si, so;
    if (kr_in_shape(a, 0, &si) || kr_out_shape(a, 0, &so) || so.rank != si.rank + 1 ||
        kr_in_ok(a, 0) || kr_out_ok(a, 0))
        return AF_ESHAPE;
    int32_t ax = kr_axis(kr_attr_i(a->graph, a->node, "axis", -1), so.rank);
    af_dtype_t di = kr_dtype(a->graph, a->info->inputs[0]);
    af_dtype_t dv = kr_dtype(a->graph, a->info->outputs[0]);
    uint64_t vb, db;
    const void *vals = kr_in(a, 2, &vb, NULL), *dp = kr_in(a, 1, &db, NULL);
    int32_t td = kr_in_tensor(a->graph, a->node, 1);
    if (ax < 0 || !vals || vb < 2 * af_dtype_size(dv) || !dp || !db)
        return AF_ESHAPE;
    double depth = af__elem_load(kr_dtype(a->graph, td), dp, 0);
    if ((int64_t)depth != so.d[ax])
        return AF_ESHAPE;
    int64_t outer = 1, inner = 1, d = so.d[ax];
    for (int32_t i = 0; i < ax; i++)
        outer *= so.d[i];
    for (int32_t i = ax + 1; i < so.rank; i++)
        inner *= so.d[i];
    size_t es = af_dtype_size(dv);
    const uint8_t *off = vals, *on = (const uint8_t *)vals + es;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < d; j++)
            for (int64_t i = 0; i < inner; i++) {
                double ix = af__elem_load(di, a->inputs[0], o * inner + i);
                ix = ix < 0 ? ix + (double)d : ix;
                memcpy((uint8_t *)a->outputs[0] + (size_t)((o * d + j) * inner + i) * es,
                       (int64_t)ix == j ? on : off, es);
            }
    return 0;
}

static int c_OneHot(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_in(g, node, 0, KR_NUMERIC, err);
    const af_node_info_t *ni = af_graph_node(g, node);
    if (!rc && (ni->n_inputs != 3 || kr_dtype(g, ni->inputs[2]) != kr_dtype(g, ni->outputs[0])))
        return kr_unsup(err, "values and output of different dtypes");
    return rc;
}

/* ConstantOfShape: the output (its shape from the graph, checked against the shape input)
 * filled with the `value` attribute (the importer carries the one-element tensor; default 0). */
static int k_ConstantOfShape(const af_kernel_args_t *a)
{
    kr_shape_t so;
    int64_t dims[AF_MAX_RANK];
    if (kr_out_shape(a, 0, &so) || kr_out_ok(a, 0) ||
        kr_in_ints(a, 0, dims, AF_MAX_RANK) != so.rank)
        return AF_ESHAPE;
    for (int32_t i = 0; i < so.rank; i++)
        if (dims[i] != so.d[i])
            return AF_ESHAPE;
    af_dtype_t dt = kr_dtype(a->graph, a->info->outputs[0]);
    double v = kr_attr_f(a->graph, a->node, "value", 0.0);
    int64_t n = kr_numel(&so);
    for (int64_t i = 0; i < n; i++)
        af__elem_store(dt, a->outputs[0], i, v);
    return 0;
}

static int c_ConstantOfShape(const af_graph_t *g, int32_t node, af_error_t *err)
{
    int rc = kr_check_in(g, node, 0, KR_DT(I64), err);
    return rc ? rc : kr_check_out(g, node, 0, KR_ALL, err);
}

/* If whose condition is known only at run time: the importer keeps both branches and gives
 * this node [cond, then outputs..., else outputs...]; each output copies the taken branch's.
 * With arenaflow.if_live B, one branch could not run for the model's input shapes and the node
 * reads [cond, branch B's outputs...]: a round whose condition takes the other branch fails. */
static int if_live(const af_graph_t *g, int32_t node)
{
    return (int)kr_attr_i(g, node, "arenaflow.if_live", -1);
}

static int k_If(const af_kernel_args_t *a)
{
    int32_t no = a->n_outputs;
    int live = if_live(a->graph, a->node);
    if (a->n_inputs != 1 + (live < 0 ? 2 : 1) * no || a->input_bytes[0] < 1)
        return AF_ESHAPE;
    int then = ((const uint8_t *)a->inputs[0])[0] != 0;
    if (live >= 0 && then != live)
        return AF_ESHAPE; /* the branch that cannot run for these shapes (arenaflow.if_dead) */
    for (int32_t k = 0; k < no; k++) {
        int32_t src = 1 + (then || live >= 0 ? 0 : no) + k;
        if (a->input_bytes[src] != a->output_bytes[k])
            return AF_ESHAPE;
        if (a->outputs[k] != a->inputs[src])
            memmove(a->outputs[k], a->inputs[src], (size_t)a->output_bytes[k]);
    }
    return 0;
}

static int c_If(const af_graph_t *g, int32_t node, af_error_t *err)
{
    const af_node_info_t *ni = af_graph_node(g, node);
    int live = if_live(g, node), nb = live < 0 ? 2 : 1;
    int rc = kr_check_static(g, node, err);
    if (!rc && ni->n_inputs != 1 + nb * ni->n_outputs)
        return kr_unsup(err, "an If node with %d inputs for %d outputs (not the importer's form)",
                        (int)ni->n_inputs, (int)ni->n_outputs);
    if (!rc)
        rc = kr_check_in(g, node, 0, KR_DT(BOOL), err);
    for (int32_t k = 0; !rc && k < ni->n_outputs; k++) {
        int64_t b = af_graph_tensor(g, ni->outputs[k])->bytes;
        if (af_graph_tensor(g, ni->inputs[1 + k])->bytes != b ||
            af_graph_tensor(g, ni->inputs[1 + (nb - 1) * ni->n_outputs + k])->bytes != b)
            return kr_unsup(err, "branch outputs of different sizes (output %d)", (int)k);
    }
    return rc;
}

#define ROW(NAME)                                                                                  \
    {                                                                                              \
        .op = #NAME, .fn = k_##NAME, .check = c_##NAME                                             \
    }
#define VIEW(NAME)                                                                                 \
    {                                                                                              \
        .op = #NAME, .fn = k_view, .check = c_view, .strings = 1                                   \
    }
#define MOVE(NAME, CHECK)                                                                          \
    {                                                                                              \
        .op = #NAME, .fn = k_##NAME, .check = CHECK, .strings = 1                                  \
    }

const af__kernel_entry_t af__kref_data[] = {
    VIEW(Reshape),
    VIEW(Flatten),
    VIEW(Squeeze),
    VIEW(Unsqueeze),
    VIEW(Identity),
    /* the importer's gate before an If branch (graph/onnx_gate.c): (value, condition) -> view */
    {.op = "arenaflow.IfGate", .fn = k_view, .check = c_view, .strings = 1},
    MOVE(Transpose, c_Transpose),
    MOVE(Concat, c_Concat),
    MOVE(Split, c_Split),
    MOVE(Slice, c_Slice),
    ROW(Pad), /* the pad value is a number */
    MOVE(Tile, c_same01),
    MOVE(Expand, c_same01),
    MOVE(DepthToSpace, c_same01),
    MOVE(SpaceToDepth, c_same01),
    ROW(Trilu),
    MOVE(Shape, c_int64_out), /* reads the input's shape only */
    MOVE(Size, c_int64_out),
    ROW(EyeLike),
    ROW(Range),
    ROW(OneHot),
    ROW(ConstantOfShape),
    MOVE(If, c_If),
    {.op = NULL},
};
