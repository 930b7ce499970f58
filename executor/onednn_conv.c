/*
 * oneDNN Conv and ConvTranspose (1-D, 2-D, 3-D; groups, depthwise, dilations, asymmetric pads,
 * auto_pad, output_padding / output_shape), and the window attributes pooling shares.
 *
 * Weights and bias must be constants: the weights are reordered once, at prepare, into the
 * layout the chosen primitive wants (session constant memory, reported as prepacked). The
 * activations stay in the node's tensors' layout; when the primitive for that layout is only
 * oneDNN's gemm or reference fallback while another layout gets a direct (jit / brgemm) kernel,
 * the node reorders its input into working memory, runs the fast kernel and reorders the result
 * back (about 3x faster on the convolutions of the models in bench/, docs/executor.md).
 * ConvTranspose runs as the backward-data pass of the matching convolution, its bias as a
 * binary step after it: oneDNN 2.6's deconvolution allocates on the heap in every run.
 */
#include "executor/onednn_int.h"

#include <stdio.h>
#include <string.h>

static int64_t attr_ik(odn_build_t *b, const char *name, int i, int64_t def)
{
    const af_attr_t *a = af__odn_attr(b, name);
    return a && a->type == AF_ATTR_INTS && i < a->n ? a->ints[i] : def;
}

/* SAME_UPPER puts the odd pixel at the end, SAME_LOWER at the start. */
static void split_pad(int64_t total, int upper, int64_t *pl, int64_t *pr)
{
    *pl = upper ? total / 2 : total - total / 2;
    *pr = total - *pl;
}

/* Kernel, stride, dilation and pads of spatial dim i (before the output check). */
static int window_dim(odn_build_t *b, int i, int sp, const int64_t *kernel, odn_win_t *w)
{
    const af_attr_t *ks = af__odn_attr(b, "kernel_shape");
    if (ks && (ks->type != AF_ATTR_INTS || ks->n != sp))
        return af__odn_nosup(b, "kernel_shape does not match the rank");
    w->k[i] = ks ? ks->ints[i] : kernel ? kernel[i] : -1;
    if (w->k[i] < 1 || (kernel && w->k[i] != kernel[i]))
        return af__odn_nosup(b, "kernel_shape missing or not the weights' shape");
    w->s[i] = attr_ik(b, "strides", i, 1);
    w->d[i] = attr_ik(b, "dilations", i, 1);
    w->pl[i] = attr_ik(b, "pads", i, 0);
    w->pr[i] = attr_ik(b, "pads", sp + i, 0);
    if (w->s[i] < 1 || w->d[i] < 1 || w->pl[i] < 0 || w->pr[i] < 0)
        return af__odn_nosup(b, "bad strides, dilations or pads");
    return 0;
}

int af__odn_window(odn_build_t *b, const dnnl_dims_t x, const dnnl_dims_t y, int sp,
                   const int64_t *kernel, int transposed, int ceil_ok, odn_win_t *w)
{
    const af_attr_t *ap = af__odn_attr(b, "auto_pad");
    const char *mode = ap && ap->type == AF_ATTR_STRING && ap->s ? ap->s : "NOTSET";
    int same = !strncmp(mode, "SAME_", 5), upper = !strcmp(mode, "SAME_UPPER");
    int valid = !strcmp(mode, "VALID");
    if (!same && !valid && strcmp(mode, "NOTSET") && mode[0])
        return af__odn_nosup(b, "auto_pad '%s'", mode);
    const af_attr_t *os = transposed ? af__odn_attr(b, "output_shape") : NULL;
    w->sp = sp;
    for (int i = 0; i < sp; i++) {
        int rc = window_dim(b, i, sp, kernel, w);
        if (rc)
            return rc;
        int64_t in = x[2 + i], out = y[2 + i], ext = (w->k[i] - 1) * w->d[i] + 1;
        int64_t op = transposed ? attr_ik(b, "output_padding", i, 0) : 0;
        if (valid)
            w->pl[i] = w->pr[i] = 0;
        if (!transposed && same) {
            int64_t total = (out - 1) * w->s[i] + ext - in;
            split_pad(total > 0 ? total : 0, upper, &w->pl[i], &w->pr[i]);
        } else if (transposed && (same || os)) {
            int64_t total = w->s[i] * (in - 1) + op + ext - out;
            if (total < 0)
                return af__odn_nosup(b, "output_shape larger than the input allows");
            split_pad(total, same ? upper : 0, &w->pl[i], &w->pr[i]);
        }
        if (transposed) {
            w->pr[i] -= op; /* oneDNN's size formula has no output padding: fewer right pads */
            if (w->pr[i] < 0 || (in - 1) * w->s[i] + ext - w->pl[i] - w->pr[i] != out)
                return af__odn_nosup(b, "output size not expressible (output_padding)");
        } else {
            int64_t num = in + w->pl[i] + w->pr[i] - ext;
            if (num < 0)
                return af__odn_nosup(b, "window larger than the padded input");
            if (num / w->s[i] + 1 != out) {
                if (!ceil_ok || (num + w->s[i] - 1) / w->s[i] + 1 != out)
                    return af__odn_nosup(b, "output size does not follow from the attributes");
                w->pr[i] += (out - 1) * w->s[i] - num; /* ceil_mode: pad the last window */
            }
        }
        w->d[i] -= 1;
    }
    return 0;
}

/* True for oneDNN's slow generic paths. */
static int is_slow(dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    return !impl || strstr(impl, "gemm") || strstr(impl, "ref");
}

typedef struct conv_io {
    dnnl_memory_desc_t x, w_user, b, y;
    int has_bias;
    int32_t affine;         /* fused_affine: input of s (t next), or -1 */
    dnnl_memory_desc_t aff; /* their [1, C, 1...] descriptor */
    odn_win_t win;
} conv_io_t;

/*
 * The attribute of a convolution with its fused ops as post-ops (af_plan_fuse): a folded
 * BatchNormalization's affine first, as binary post-ops (multiply by s, then add t, per channel:
 * the BatchNormalization kernels' two f32 operations), then the sum and the unary ops
 * (af__odn_fused_post). All of them or none: b->post_fused says which; with none the C loop
 * applies them all (fused_post.c).
 */
static int conv_attr(odn_build_t *b, const conv_io_t *io, dnnl_primitive_attr_t *attr)
{
    if (io->affine < 0)
        return af__odn_post_attr(b, attr);
    int rc = af__odn_attr_create(b, attr);
    b->post_fused = 0;
    dnnl_post_ops_t po = NULL;
    if (rc || b->no_post)
        return rc;
    if (dnnl_post_ops_create(&po) != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        return af__err(b->err, AF_ENOMEM, "oneDNN: cannot create post-ops");
    }
    af__post_t pp;
    int ok = !af__post_parse(b->in->g, b->in->node, &pp, NULL) &&
             dnnl_post_ops_append_binary(po, dnnl_binary_mul, &io->aff) == dnnl_success &&
             dnnl_post_ops_append_binary(po, dnnl_binary_add, &io->aff) == dnnl_success;
    if (ok && (pp.n > 0 || pp.sum >= 0)) {
        af__odn_fused_post(b, po);
        ok = b->post_fused;
    }
    b->post_fused = ok && dnnl_primitive_attr_set_post_ops(*attr, po) == dnnl_success;
    dnnl_post_ops_destroy(po);
    return 0;
}

/* Creates the conv/deconv descriptor on src/dst mds (weights "any") and its pd. */
static int conv_pd(odn_build_t *b, const conv_io_t *io, int transposed, const dnnl_memory_desc_t *x,
                   const dnnl_memory_desc_t *y, dnnl_primitive_desc_t *pd)
{
    dnnl_memory_desc_t wany;
    if (dnnl_memory_desc_init_by_tag(&wany, io->w_user.ndims, io->w_user.dims, io->w_user.data_type,
                                     dnnl_format_tag_any) != dnnl_success)
        return af__odn_nosup(b, "weights descriptor");
    const dnnl_memory_desc_t *bias = io->has_bias ? &io->b : NULL;
    const odn_win_t *w = &io->win;
    dnnl_status_t s;
    dnnl_convolution_desc_t d;
    if (transposed) { /* the backward-data pass of the convolution from y to x (no bias) */
        s = dnnl_dilated_convolution_backward_data_desc_init(&d, dnnl_convolution_direct, y, &wany,
                                                             x, w->s, w->d, w->pl, w->pr);
        return s == dnnl_success ? af__odn_pd(b, &d, NULL, pd)
                                 : af__odn_nosup(b, "convolution backward-data descriptor");
    }
    s = dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_inference,
                                                   dnnl_convolution_direct, x, &wany, bias, y, w->s,
                                                   w->d, w->pl, w->pr);
    if (s != dnnl_success)
        return af__odn_nosup(b, "convolution descriptor");
    dnnl_primitive_attr_t attr; /* with the fused ops (af_plan_fuse) as post-ops */
    int rc = conv_attr(b, io, &attr);
    if (rc)
        return rc;
    rc = af__odn_pd(b, &d, attr, pd);
    dnnl_primitive_attr_destroy(attr);
    if (rc == AF_ENOTSUP && b->post_fused) { /* not with these post-ops: the C loop's turn */
        b->post_fused = 0;
        rc = af__odn_pd(b, &d, NULL, pd);
    }
    return rc;
}

/* The implementation of pd, for reports. */
static const char *impl_of(dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    return impl ? impl : "?";
}

/* A fast (not slow) pd with src and dst in format `tag` (any, or both channels-last: depthwise
 * convolutions have a jit kernel there and only ref on mixed layouts), or NULL; what oneDNN
 * offered instead goes to got (for the report when no layout has a fast kernel). */
static dnnl_primitive_desc_t conv_try(odn_build_t *b, const conv_io_t *io, int transposed,
                                      dnnl_format_tag_t tag, char *got, size_t n)
{
    dnnl_memory_desc_t xa, ya;
    dnnl_primitive_desc_t alt = NULL;
    snprintf(got, n, "none");
    if (dnnl_memory_desc_init_by_tag(&xa, io->x.ndims, io->x.dims, io->x.data_type, tag) !=
            dnnl_success ||
        dnnl_memory_desc_init_by_tag(&ya, io->y.ndims, io->y.dims, io->y.data_type, tag) !=
            dnnl_success ||
        conv_pd(b, io, transposed, &xa, &ya, &alt))
        return NULL;
    snprintf(got, n, "%s", impl_of(alt));
    if (is_slow(alt)) {
        dnnl_primitive_desc_destroy(alt);
        return NULL;
    }
    return alt;
}

/* Picks the layout: the tensors' own, unless only a slow kernel exists for it; then both
 * channels-last, then oneDNN's choice. */
static int conv_choose(odn_build_t *b, const conv_io_t *io, int transposed,
                       dnnl_primitive_desc_t *pd)
{
    int rc = conv_pd(b, io, transposed, &io->x, &io->y, pd);
    if (rc || !is_slow(*pd))
        return rc;
    static const dnnl_format_tag_t last[] = {dnnl_nwc, dnnl_nhwc, dnnl_ndhwc};
    int nd = io->x.ndims;
    char own[48], cl[48] = "none", any[48];
    snprintf(own, sizeof own, "%s", impl_of(*pd));
    dnnl_primitive_desc_t alt =
        nd >= 3 && nd <= 5 ? conv_try(b, io, transposed, last[nd - 3], cl, sizeof cl) : NULL;
    if (!alt)
        alt = conv_try(b, io, transposed, dnnl_format_tag_any, any, sizeof any);
    if (!alt && b->post_fused && !b->no_post) {
        /* oneDNN's jit kernels below AVX-512 take a sum post-op only as the first one (after
         * the fused affine's binary ones: ref only): without the post-ops, the C loop applies
         * them (fused_post.c) after a fast kernel */
        dnnl_primitive_desc_t with = *pd;
        b->no_post = 1;
        rc = conv_choose(b, io, transposed, pd);
        if (!rc && !is_slow(*pd)) {
            dnnl_primitive_desc_destroy(with);
            return 0;
        }
        if (!rc)
            dnnl_primitive_desc_destroy(*pd);
        else if (rc != AF_ENOTSUP) {
            dnnl_primitive_desc_destroy(with);
            return rc;
        }
        b->no_post = 0, b->post_fused = 1;
        *pd = with;
    }
    if (!alt) { /* else keep the slow one */
        int post = b->post_fused;
        rc = af__odn_ref_instead(b, pd);
        if (rc == AF_ENOTSUP)
            af__odn_nosup(b,
                          "oneDNN has only slow %s kernels: %s on the tensors' layout, %s "
                          "channels-last, %s in its own layout%s",
                          transposed ? "ConvTranspose" : "Conv", own, cl, any,
                          post ? " (with the fused ops as post-ops)" : "");
        return rc;
    }
    dnnl_primitive_desc_destroy(*pd);
    *pd = alt;
    return 0;
}

/* Shapes, window and descriptors of a Conv (transposed = 0) or ConvTranspose node. */
static int conv_io(odn_build_t *b, int transposed, conv_io_t *io)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    if (ni->n_inputs < 2 || ni->n_outputs < 1)
        return af__odn_nosup(b, "Conv needs X and W");
    int nx, nw, ny;
    dnnl_dims_t x, w, y;
    int rc;
    if ((rc = af__odn_shape(b, ni->inputs[0], &nx, x)) ||
        (rc = af__odn_shape(b, ni->inputs[1], &nw, w)) ||
        (rc = af__odn_shape(b, ni->outputs[0], &ny, y)))
        return rc;
    int64_t g = af__odn_attr_i(b, "group", 1);
    if (nx < 3 || nx > 5 || nw != nx || ny != nx || g < 1)
        return af__odn_nosup(b, "Conv rank %d", nx);
    int64_t cin = x[1], cout = y[1];
    int64_t wi = transposed ? w[0] : w[1] * g, wo = transposed ? w[1] * g : w[0];
    if (cin != wi || cout != wo || cin % g || cout % g)
        return af__odn_nosup(b, "channels do not match the weights and group");
    if ((rc = af__odn_window(b, x, y, nx - 2, w + 2, transposed, 0, &io->win)) ||
        (rc = af__odn_md(b, ni->inputs[0], &io->x)) || (rc = af__odn_md(b, ni->outputs[0], &io->y)))
        return rc;
    /* oneDNN weights: [G,] OC/G, IC/G, k... over the ONNX layout (strides say where); for
     * ConvTranspose those of the backward-data convolution: OC/G = cin/G, IC/G = cout/G, which
     * is the ONNX layout [cin, cout/G, k...] itself. */
    int64_t og = cout / g, ig = cin / g, kk = 1;
    dnnl_dims_t wd, ws;
    int n = 0;
    for (int i = 2; i < nw; i++)
        kk *= w[i];
    if (g > 1)
        wd[n] = g, ws[n++] = og * ig * kk;
    if (transposed) {
        wd[n] = ig, ws[n++] = og * kk;
        wd[n] = og, ws[n++] = kk;
    } else {
        wd[n] = og, ws[n++] = ig * kk;
        wd[n] = ig, ws[n++] = kk;
    }
    int64_t acc = 1;
    for (int i = nw - 1; i >= 2; i--) {
        ws[n + i - 2] = acc;
        acc *= w[i];
    }
    for (int i = 2; i < nw; i++)
        wd[n++] = w[i];
    if (dnnl_memory_desc_init_by_strides(&io->w_user, n, wd, io->x.data_type, ws) != dnnl_success)
        return af__odn_nosup(b, "weights descriptor");
    io->has_bias = ni->n_inputs > 2;
    io->affine = -1;
    const af_attr_t *fa = transposed ? NULL : af__odn_attr(b, "fused_affine");
    if (fa) {
        dnnl_dims_t ad = {1, cout, 1, 1, 1};
        static const dnnl_format_tag_t plain[] = {dnnl_abc, dnnl_abcd, dnnl_abcde};
        io->affine = fa->type == AF_ATTR_INT ? (int32_t)fa->i : -1;
        const af_tensor_info_t *st = io->affine >= 2 && io->affine + 1 < ni->n_inputs
                                         ? af_graph_tensor(b->in->g, ni->inputs[io->affine])
                                         : NULL;
        if (!st || st->dtype != AF_DTYPE_F32 || st->bytes != cout * 4 ||
            dnnl_memory_desc_init_by_tag(&io->aff, nx, ad, dnnl_f32, plain[nx - 3]) != dnnl_success)
            return af__odn_nosup(b, "fused_affine is not two f32 vectors of the channels");
    }
    if (io->has_bias) {
        dnnl_dims_t bd = {cout, 1, 1, 1, 1}; /* ConvTranspose: [1, cout, 1...], a binary's */
        if (transposed)
            bd[0] = 1, bd[1] = cout;
        if ((rc = af__odn_md_as(b, ni->inputs[2], transposed ? nx : 1, bd, &io->b)))
            return rc;
    }
    return 0;
}

/*
 * ConvTranspose's bias: y += b, broadcast over channels, as a binary step in place on the
 * node's output. (oneDNN's deconvolution would add it itself, but each of its runs allocates
 * its nested scratchpad on the heap: a backward-data convolution plus this step allocates
 * nothing, its scratchpad planned like every other.)
 */
static int deconv_bias(odn_build_t *b, const conv_io_t *io)
{
    dnnl_binary_desc_t d;
    if (dnnl_binary_desc_init(&d, dnnl_binary_add, &io->y, &io->b, &io->y) != dnnl_success)
        return af__odn_nosup(b, "bias descriptor");
    dnnl_primitive_desc_t pd;
    int rc = af__odn_pd(b, &d, NULL, &pd);
    odn_arg_t args[3];
    args[0] = af__odn_arg(DNNL_ARG_SRC_0, ODN_OUT, 0, 0, &io->y);
    args[2] = af__odn_arg(DNNL_ARG_DST, ODN_OUT, 0, 0, &io->y);
    if (!rc && (rc = af__odn_arg_const(b, DNNL_ARG_SRC_1, 2, &io->b, &io->b, &args[1])))
        dnnl_primitive_desc_destroy(pd);
    return rc ? rc : af__odn_step(b, pd, 3, args);
}

/* md with a spatial dim of 1 inserted before its last dim `at` (the same bytes: its stride is
 * the next dim's extent, as both plain and channels-last strides have it). */
static int add_unit_dim(dnnl_memory_desc_t *md, int at)
{
    dnnl_dims_t d, st;
    int n = md->ndims;
    if (md->format_kind != dnnl_blocked || n >= DNNL_MAX_NDIMS)
        return -1;
    for (int i = 0, k = 0; i <= n; i++) {
        if (i == at) {
            d[i] = 1;
            st[i] = md->format_desc.blocking.strides[at] * md->dims[at];
            continue;
        }
        d[i] = md->dims[k];
        st[i] = md->format_desc.blocking.strides[k++];
    }
    return dnnl_memory_desc_init_by_strides(md, n + 1, d, md->data_type, st) == dnnl_success ? 0
                                                                                             : -1;
}

/* A 1-D convolution as a 2-D one of height 1 (the same bytes): oneDNN 2.6 has its jit
 * depthwise kernel for 2-D only below AVX-512 (gemm or ref in 1-D; silero VAD v4's 258-channel
 * depthwise layer: ref, 745 us a round, on an AVX2-only AMD EPYC). */
static int lift_1d(conv_io_t *io)
{
    odn_win_t *w = &io->win;
    if (io->x.ndims != 3 || w->sp != 1 || add_unit_dim(&io->x, 2) || add_unit_dim(&io->y, 2) ||
        add_unit_dim(&io->w_user, io->w_user.ndims - 1))
        return -1;
    if (io->affine >= 0) {
        dnnl_dims_t ad = {1, io->y.dims[1], 1, 1};
        if (dnnl_memory_desc_init_by_tag(&io->aff, 4, ad, dnnl_f32, dnnl_abcd) != dnnl_success)
            return -1;
    }
    w->sp = 2;
    w->k[1] = w->k[0], w->s[1] = w->s[0], w->d[1] = w->d[0];
    w->pl[1] = w->pl[0], w->pr[1] = w->pr[0];
    w->k[0] = 1, w->s[0] = 1, w->d[0] = 0, w->pl[0] = 0, w->pr[0] = 0;
    return 0;
}

/* conv_choose, and for a 1-D convolution with only a slow kernel (or none) the 2-D one of
 * height 1 when that has a fast kernel (*io becomes it). */
static int conv_choose_lift(odn_build_t *b, conv_io_t *io, int transposed,
                            dnnl_primitive_desc_t *pd)
{
    int no_post = b->no_post;
    int rc = conv_choose(b, io, transposed, pd);
    conv_io_t io2 = *io;
    if (transposed || (rc && rc != AF_ENOTSUP) || (!rc && !is_slow(*pd)) || lift_1d(&io2))
        return rc;
    af_error_t why = *b->err;
    int post = b->post_fused, no_post1 = b->no_post;
    b->no_post = no_post;
    dnnl_primitive_desc_t pd2 = NULL;
    int rc2 = conv_choose(b, &io2, transposed, &pd2);
    if (!rc2 && !is_slow(pd2)) {
        if (!rc)
            dnnl_primitive_desc_destroy(*pd);
        *pd = pd2;
        *io = io2;
        return 0;
    }
    if (!rc2)
        dnnl_primitive_desc_destroy(pd2);
    else if (rc2 != AF_ENOTSUP) {
        if (!rc)
            dnnl_primitive_desc_destroy(*pd);
        return rc2;
    }
    *b->err = why; /* the 1-D answer stands */
    b->post_fused = post, b->no_post = no_post1;
    return rc;
}

static int conv_common(odn_build_t *b, int transposed)
{
    conv_io_t io;
    memset(&io, 0, sizeof io);
    int rc = conv_io(b, transposed, &io);
    dnnl_primitive_desc_t pd;
    if (rc || (rc = conv_choose_lift(b, &io, transposed, &pd)))
        return rc;
    if (b->post_fused && af_graph_node_attr(b->in->g, b->in->node, "fused_sum") &&
        !dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &io.y)) {
        dnnl_primitive_desc_destroy(pd); /* dst reordered: the sum would not see the addend */
        b->no_post = 1;
        if ((rc = conv_choose(b, &io, transposed, &pd)))
            return rc;
        /* (io may be the lifted 2-D problem already: conv_choose keeps to it) */
    }
    odn_arg_t args[6];
    int n = 0;
    args[n++] = af__odn_arg(transposed ? DNNL_ARG_DIFF_DST : DNNL_ARG_SRC, ODN_IN, 0, 0, &io.x);
    rc = af__odn_arg_const(b, DNNL_ARG_WEIGHTS, 1, &io.w_user,
                           dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &args[n++]);
    if (!rc && io.has_bias && !transposed)
        rc = af__odn_arg_const(b, DNNL_ARG_BIAS, 2, &io.b, &io.b, &args[n++]);
    for (int k = 0; !rc && b->post_fused && io.affine >= 0 && k < 2; k++) /* s, t */
        rc = af__odn_arg_const(b, DNNL_ARG_ATTR_MULTIPLE_POST_OP(k) | DNNL_ARG_SRC_1, io.affine + k,
                               &io.aff, &io.aff, &args[n++]);
    if (rc) {
        for (int k = 0; k < n; k++)
            if (args[k].fixed)
                dnnl_memory_destroy(args[k].fixed);
        dnnl_primitive_desc_destroy(pd);
        return rc;
    }
    args[n++] = af__odn_arg(transposed ? DNNL_ARG_DIFF_SRC : DNNL_ARG_DST, ODN_OUT, 0, 0, &io.y);
    if ((rc = af__odn_main(b, pd, n, args)))
        return rc;
    return transposed && io.has_bias ? deconv_bias(b, &io) : 0;
}

int af__odn_conv(odn_build_t *b)
{
    return conv_common(b, 0);
}

int af__odn_deconv(odn_build_t *b)
{
    return conv_common(b, 1);
}
