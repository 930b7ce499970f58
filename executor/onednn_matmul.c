/*
 * oneDNN MatMul (numpy semantics: 1-D operands, batch dims broadcast) and Gemm (transA/transB
 * as strides, alpha as the output scale, C with beta = 1 as a broadcast bias).
 *
 * A constant B (weights) is handed to the primitive in the layout it chooses, reordered once at
 * prepare; a B computed at run time is read in place, row-major. Gemm with beta other than 0 or
 * 1 (and a C) is not expressed: it falls back to the reference kernel.
 *
 * Fused ops (af_plan_fuse): a MatMul's fused_bias is the primitive's bias, its fused_sum a sum
 * post-op (the dst is plain, so it holds the addend), fused_post eltwise post-ops after them. The
 * primitive applies all of them or none (then the executor's C loop does: fused_post.c).
 */
#include "executor/onednn_int.h"

#include <string.h>

/* Row-major descriptor of dims with the last two swapped in memory when trans. */
static int md_2d(odn_build_t *b, int32_t t, int nd, const dnnl_dims_t dims, int trans,
                 dnnl_memory_desc_t *md)
{
    int rc = af__odn_md_as(b, t, nd, dims, md);
    if (rc || !trans)
        return rc;
    dnnl_dims_t st;
    for (int i = 0; i < nd; i++)
        st[i] = md->format_desc.blocking.strides[i];
    st[nd - 2] = 1;
    st[nd - 1] = dims[nd - 2];
    return dnnl_memory_desc_init_by_strides(md, nd, dims, md->data_type, st) == dnnl_success
               ? 0
               : af__odn_nosup(b, "transposed operand");
}

/* Weights argument: constant inputs in the primitive's layout, others in place. */
static int weights_arg(odn_build_t *b, dnnl_primitive_desc_t pd, int32_t i,
                       const dnnl_memory_desc_t *user, odn_arg_t *out)
{
    if (!af__odn_is_const(b, i)) {
        *out = af__odn_arg(DNNL_ARG_WEIGHTS, ODN_IN, i, 0, user);
        return 0;
    }
    return af__odn_arg_const(b, DNNL_ARG_WEIGHTS, i, user,
                             dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), out);
}

/* The fused sum and unary ops (af_plan_fuse) after the bias post-op, when there is one, in attr. */
static int fused_post(odn_build_t *b, dnnl_primitive_attr_t attr, int post,
                      const dnnl_memory_desc_t *bias)
{
    b->post_fused = 0;
    if (!af_graph_node_attr(b->in->g, b->in->node, "fused_post") &&
        !af_graph_node_attr(b->in->g, b->in->node, "fused_sum"))
        return 0;
    dnnl_post_ops_t po = NULL;
    if (dnnl_post_ops_create(&po) != dnnl_success)
        return af__err(b->err, AF_ENOMEM, "oneDNN: cannot create post-ops");
    int rc = post && dnnl_post_ops_append_binary(po, dnnl_binary_add, bias) != dnnl_success
                 ? af__odn_nosup(b, "bias post-op")
                 : af__odn_fused_post(b, po);
    if (!rc && b->post_fused && dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success)
        b->post_fused = 0;
    dnnl_post_ops_destroy(po);
    return rc;
}

/* Creates the matmul pd: weights "any" when constant (so they can be prepacked). oneDNN scales
 * the bias with the output scale, so with alpha != 1 a bias comes as a binary-add post-op
 * (post = 1), applied after the scale: alpha * A B + C exactly as Gemm says. */
static int matmul_pd(odn_build_t *b, const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *w,
                     int w_const, const dnnl_memory_desc_t *bias, const dnnl_memory_desc_t *y,
                     float alpha, int post, dnnl_primitive_desc_t *pd)
{
    dnnl_memory_desc_t wq = *w;
    if (w_const && dnnl_memory_desc_init_by_tag(&wq, w->ndims, w->dims, w->data_type,
                                                dnnl_format_tag_any) != dnnl_success)
        return af__odn_nosup(b, "weights descriptor");
    dnnl_matmul_desc_t d;
    if (dnnl_matmul_desc_init(&d, a, &wq, post ? NULL : bias, y) != dnnl_success)
        return af__odn_nosup(b, "matmul descriptor");
    dnnl_primitive_attr_t attr;
    int rc = af__odn_attr_create(b, &attr);
    if (rc)
        return rc;
    if (alpha != 1.0f && dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha) != dnnl_success)
        rc = af__odn_nosup(b, "output scale");
    dnnl_post_ops_t po = NULL;
    if (!rc && post &&
        (dnnl_post_ops_create(&po) != dnnl_success ||
         dnnl_post_ops_append_binary(po, dnnl_binary_add, bias) != dnnl_success ||
         dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success))
        rc = af__odn_nosup(b, "bias post-op");
    if (po)
        dnnl_post_ops_destroy(po);
    rc = rc ? rc : fused_post(b, attr, post, bias);
    if (!rc)
        rc = af__odn_pd(b, &d, attr, pd);
    dnnl_primitive_attr_destroy(attr);
    return rc;
}

static int run_matmul(odn_build_t *b, const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *w,
                      const dnnl_memory_desc_t *bias, const dnnl_memory_desc_t *y, float alpha)
{
    dnnl_primitive_desc_t pd;
    int wc = af__odn_is_const(b, 1), post = bias && alpha != 1.0f;
    int rc = matmul_pd(b, a, w, wc, bias, y, alpha, post, &pd);
    if (rc)
        return rc;
    odn_arg_t args[4];
    int n = 0;
    args[n++] = af__odn_arg(DNNL_ARG_SRC, ODN_IN, 0, 0, a);
    rc = weights_arg(b, pd, 1, w, &args[n++]);
    if (!rc && post) {
        args[n++] =
            af__odn_arg(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, ODN_IN, 2, 0, bias);
    } else if (!rc && bias) {
        if (af__odn_is_const(b, 2))
            rc = af__odn_arg_const(b, DNNL_ARG_BIAS, 2, bias, bias, &args[n++]);
        else
            args[n++] = af__odn_arg(DNNL_ARG_BIAS, ODN_IN, 2, 0, bias);
    }
    if (rc) {
        for (int k = 0; k < n; k++)
            if (args[k].where == ODN_FIXED && args[k].fixed)
                dnnl_memory_destroy(args[k].fixed);
        dnnl_primitive_desc_destroy(pd);
        return rc;
    }
    args[n++] = af__odn_arg(DNNL_ARG_DST, ODN_OUT, 0, 0, y);
    return af__odn_main(b, pd, n, args);
}

/* Pads dims to rank r with leading 1s. */
static void lead_ones(int *nd, dnnl_dims_t d, int r)
{
    int k = r - *nd;
    if (k <= 0)
        return;
    memmove(d + k, d, (size_t)*nd * sizeof(d[0]));
    for (int i = 0; i < k; i++)
        d[i] = 1;
    *nd = r;
}

/* oneDNN has the node's fused sum and unary ops, or there are none. */
static int post_all(odn_build_t *b, const af__post_t *pp)
{
    if (pp->sum < 0 && !pp->n)
        return 1;
    dnnl_post_ops_t po = NULL;
    if (dnnl_post_ops_create(&po) != dnnl_success)
        return 0;
    af__odn_fused_post(b, po);
    int all = b->post_fused;
    b->post_fused = 0;
    dnnl_post_ops_destroy(po);
    return all;
}

/* MatMul's dims as oneDNN takes them, rank r (1-D operands promoted, batch dims broadcast). */
static int matmul_dims(odn_build_t *b, const af_node_info_t *ni, int *r, dnnl_dims_t da,
                       dnnl_dims_t db, dnnl_dims_t dy)
{
    int na, nb, rc;
    if ((rc = af__odn_shape(b, ni->inputs[0], &na, da)) ||
        (rc = af__odn_shape(b, ni->inputs[1], &nb, db)))
        return rc;
    if (af_graph_tensor(b->in->g, ni->inputs[0])->rank == 1) /* [K] -> [1, K] */
        da[1] = da[0], da[0] = 1, na = 2;
    if (af_graph_tensor(b->in->g, ni->inputs[1])->rank == 1) /* [K] -> [K, 1] */
        db[1] = 1, nb = 2;
    *r = na > nb ? na : nb;
    lead_ones(&na, da, *r);
    lead_ones(&nb, db, *r);
    for (int i = 0; i < *r - 2; i++) {
        if (da[i] != db[i] && da[i] != 1 && db[i] != 1)
            return af__odn_nosup(b, "batch dims do not broadcast");
        dy[i] = da[i] > db[i] ? da[i] : db[i];
    }
    dy[*r - 2] = da[*r - 2];
    dy[*r - 1] = db[*r - 1];
    if (da[*r - 1] != db[*r - 2])
        return af__odn_nosup(b, "inner dims differ");
    int64_t elems = 1;
    for (int i = 0; i < *r; i++)
        elems *= dy[i];
    if (elems * (int64_t)af_dtype_size(af_graph_tensor(b->in->g, ni->outputs[0])->dtype) !=
        af_graph_tensor(b->in->g, ni->outputs[0])->bytes)
        return af__odn_nosup(b, "output shape is not the product's");
    return 0;
}

int af__odn_matmul(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    af__post_t pp;
    if (af__post_parse(b->in->g, b->in->node, &pp, NULL))
        return af__odn_nosup(b, "bad fused attributes");
    if (ni->n_inputs != 2 + (pp.bias >= 0) + (pp.sum >= 0) || ni->n_outputs < 1)
        return af__odn_nosup(b, "MatMul needs two inputs");
    int r, rc;
    dnnl_dims_t da, db, dy, dc;
    if ((rc = matmul_dims(b, ni, &r, da, db, dy)))
        return rc;
    dnnl_memory_desc_t a, w, y, c;
    if ((rc = af__odn_md_as(b, ni->inputs[0], r, da, &a)) ||
        (rc = af__odn_md_as(b, ni->inputs[1], r, db, &w)) ||
        (rc = af__odn_md_as(b, ni->outputs[0], r, dy, &y)))
        return rc;
    /* the fused bias in the primitive only when the rest is too (else the C loop adds it) */
    int fb = pp.bias == 2 && !b->no_post && post_all(b, &pp);
    for (int i = 0; i < r; i++)
        dc[i] = i == r - 1 ? dy[i] : 1;
    if (fb && (rc = af__odn_md_as(b, ni->inputs[2], r, dc, &c)))
        return rc;
    if ((rc = run_matmul(b, &a, &w, fb ? &c : NULL, &y, 1.0f)))
        return rc;
    if (fb && !b->post_fused && (pp.sum >= 0 || pp.n))
        return af__odn_nosup(b, "fused bias without its post-ops");
    b->post_fused = b->post_fused || fb;
    return 0;
}

int af__odn_gemm(odn_build_t *b)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    if (ni->n_inputs < 2 || ni->n_outputs < 1)
        return af__odn_nosup(b, "Gemm needs A and B");
    int ta = (int)af__odn_attr_i(b, "transA", 0), tb = (int)af__odn_attr_i(b, "transB", 0);
    float alpha = (float)af__odn_attr_f(b, "alpha", 1.0);
    float beta = (float)af__odn_attr_f(b, "beta", 1.0);
    int na, nb, rc;
    dnnl_dims_t da, db;
    if ((rc = af__odn_shape(b, ni->inputs[0], &na, da)) ||
        (rc = af__odn_shape(b, ni->inputs[1], &nb, db)))
        return rc;
    if (nb != 2 || na < 2 || (na > 2 && ta))
        return af__odn_nosup(b, "Gemm operands of rank %d and %d", na, nb);
    int64_t m = ta ? da[1] : 1, k = ta ? da[0] : da[na - 1];
    for (int i = 0; !ta && i < na - 1; i++)
        m *= da[i]; /* A of rank > 2: its leading dims are rows */
    int64_t n = tb ? db[0] : db[1];
    if ((tb ? db[1] : db[0]) != k)
        return af__odn_nosup(b, "inner dims differ");
    dnnl_dims_t la = {m, k}, lb = {k, n}, ly = {m, n};
    dnnl_memory_desc_t a, w, y, c;
    if ((rc = md_2d(b, ni->inputs[0], 2, la, ta, &a)) ||
        (rc = md_2d(b, ni->inputs[1], 2, lb, tb, &w)) ||
        (rc = af__odn_md_as(b, ni->outputs[0], 2, ly, &y)))
        return rc;
    int has_c = ni->n_inputs > 2 && beta != 0.0f;
    if (has_c && beta != 1.0f)
        return af__odn_nosup(b, "Gemm with beta %g", (double)beta);
    if (has_c) {
        int nc;
        dnnl_dims_t dc;
        if ((rc = af__odn_shape(b, ni->inputs[2], &nc, dc)))
            return rc;
        dnnl_dims_t cd = {nc == 2 ? dc[0] : 1, dc[nc - 1]};
        if ((cd[0] != 1 && cd[0] != m) || (cd[1] != 1 && cd[1] != n) || nc > 2)
            return af__odn_nosup(b, "C does not broadcast to [M, N]");
        if ((rc = af__odn_md_as(b, ni->inputs[2], 2, cd, &c)))
            return rc;
    }
    return run_matmul(b, &a, &w, has_c ? &c : NULL, &y, alpha);
}
