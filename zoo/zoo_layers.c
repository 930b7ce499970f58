/*
 * Model-zoo layers: each helper computes its output shape and FLOP estimate the way the
 * framework op would (ONNX semantics, NCHW), creates its weights as constants and adds one node.
 * FLOPs count a multiply-add as 2. Elementwise ops carry the in-place hint output 0 <- input 0.
 */
#include "zoo/zoo_int.h"

#include <string.h>

static int64_t conv_out(int64_t in, int k, int stride, int pad, int dil)
{
    return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

static zt conv_gen(zb_t *z, zt x, int64_t cout, int kh, int kw, int stride, int ph, int pw, int dil,
                   int groups, int bias)
{
    if (z->rc || groups < 1)
        return 0; /* after an error shapes read as zeros: do not divide by them */
    const zshape_t *s = zb_shape(z, x);
    int64_t n = s->d[0], cin = s->d[1];
    int64_t ho = conv_out(s->d[2], kh, stride, ph, dil),
            wo = conv_out(s->d[3], kw, stride, pw, dil);
    zt in[3];
    int n_in = 0;
    in[n_in++] = x;
    in[n_in++] =
        zb_const(z, "weight", AF_DTYPE_F32, zs4(cout, cin / groups, (int64_t)kh, (int64_t)kw));
    if (bias)
        in[n_in++] = zb_const(z, "bias", AF_DTYPE_F32, zs1(cout));
    zshape_t o = zs4(n, cout, ho, wo);
    double flops =
        2.0 * (double)n * (double)cout * (double)ho * (double)wo * (double)(cin / groups) * kh * kw;
    return zb_op(z, "Conv", in, n_in, &o, 1, AF_DTYPE_UNKNOWN, flops, -1, NULL);
}

zt L_conv(zb_t *z, zt x, int64_t cout, int k, int stride, int pad, int dil, int groups, int bias)
{
    if (z->rc)
        return 0;
    return conv_gen(z, x, cout, k, k, stride, pad, pad, dil, groups, bias);
}

zt L_conv2(zb_t *z, zt x, int64_t cout, int kh, int kw, int stride, int ph, int pw)
{
    if (z->rc)
        return 0;
    return conv_gen(z, x, cout, kh, kw, stride, ph, pw, 1, 1, 0);
}

zt L_convT(zb_t *z, zt x, int64_t cout, int k, int stride)
{
    const zshape_t *s = zb_shape(z, x);
    int64_t n = s->d[0], cin = s->d[1], ho = s->d[2] * stride, wo = s->d[3] * stride;
    zt in[3] = {x, zb_const(z, "weight", AF_DTYPE_F32, zs4(cin, cout, (int64_t)k, (int64_t)k)),
                zb_const(z, "bias", AF_DTYPE_F32, zs1(cout))};
    zshape_t o = zs4(n, cout, ho, wo);
    double flops = 2.0 * (double)n * (double)cin * (double)s->d[2] * (double)s->d[3] * cout * k * k;
    return zb_op(z, "ConvTranspose", in, 3, &o, 1, AF_DTYPE_UNKNOWN, flops, -1, NULL);
}

zt L_bn(zb_t *z, zt x)
{
    if (z->rc)
        return 0;
    zshape_t s = *zb_shape(z, x);
    zt in[2] = {x, zb_const(z, "bn", AF_DTYPE_F32, zs2((int64_t)4, s.d[1]))};
    return zb_op(z, "BatchNormalization", in, 2, &s, 1, AF_DTYPE_UNKNOWN,
                 2.0 * (double)zs_numel(&s), 0, NULL);
}

zt L_act(zb_t *z, const char *op, zt x)
{
    if (z->rc)
        return 0;
    zshape_t s = *zb_shape(z, x);
    return zb_op(z, op, &x, 1, &s, 1, AF_DTYPE_UNKNOWN, (double)zs_numel(&s), 0, NULL);
}

zt L_add(zb_t *z, zt a, zt b)
{
    if (z->rc)
        return 0;
    zshape_t s = *zb_shape(z, a);
    zt in[2] = {a, b};
    return zb_op(z, "Add", in, 2, &s, 1, AF_DTYPE_UNKNOWN, (double)zs_numel(&s), 0, NULL);
}

zt L_mul(zb_t *z, zt a, zt b)
{
    if (z->rc)
        return 0;
    zshape_t s = *zb_shape(z, a);
    zt in[2] = {a, b};
    return zb_op(z, "Mul", in, 2, &s, 1, AF_DTYPE_UNKNOWN, (double)zs_numel(&s), 0, NULL);
}

static zt pool(zb_t *z, const char *op, zt x, int k, int stride, int pad)
{
    if (z->rc)
        return 0;
    const zshape_t *s = zb_shape(z, x);
    zshape_t o = zs4(s->d[0], s->d[1], conv_out(s->d[2], k, stride, pad, 1),
                     conv_out(s->d[3], k, stride, pad, 1));
    return zb_op(z, op, &x, 1, &o, 1, AF_DTYPE_UNKNOWN, (double)zs_numel(&o) * k * k, -1, NULL);
}

zt L_maxpool(zb_t *z, zt x, int k, int stride, int pad)
{
    if (z->rc)
        return 0;
    return pool(z, "MaxPool", x, k, stride, pad);
}

zt L_avgpool(zb_t *z, zt x, int k, int stride, int pad)
{
    if (z->rc)
        return 0;
    return pool(z, "AveragePool", x, k, stride, pad);
}

zt L_gap(zb_t *z, zt x)
{
    if (z->rc)
        return 0;
    const zshape_t *s = zb_shape(z, x);
    zshape_t o = zs4(s->d[0], s->d[1], (int64_t)1, (int64_t)1);
    return zb_op(z, "GlobalAveragePool", &x, 1, &o, 1, AF_DTYPE_UNKNOWN, (double)zs_numel(s), -1,
                 NULL);
}

zt L_concat(zb_t *z, const zt *xs, int n, int axis)
{
    if (z->rc)
        return 0;
    zshape_t o = *zb_shape(z, xs[0]);
    o.d[axis] = 0;
    for (int i = 0; i < n; i++)
        o.d[axis] += zb_shape(z, xs[i])->d[axis];
    return zb_op(z, "Concat", xs, n, &o, 1, AF_DTYPE_UNKNOWN, (double)zs_numel(&o), -1, NULL);
}

zt L_transpose(zb_t *z, zt x, const int *perm)
{
    if (z->rc)
        return 0;
    const zshape_t *s = zb_shape(z, x);
    zshape_t o = *s;
    for (int i = 0; i < s->rank; i++)
        o.d[i] = s->d[perm[i]];
    return zb_op(z, "Transpose", &x, 1, &o, 1, AF_DTYPE_UNKNOWN, (double)zs_numel(&o), -1, NULL);
}

zt L_linear(zb_t *z, zt x, int64_t nout, int bias)
{
    if (z->rc)
        return 0;
    zshape_t o = *zb_shape(z, x);
    int64_t k = o.d[o.rank - 1];
    o.d[o.rank - 1] = nout;
    zt in[3] = {x, zb_const(z, "weight", AF_DTYPE_F32, zs2(k, nout)), 0};
    if (bias)
        in[2] = zb_const(z, "bias", AF_DTYPE_F32, zs1(nout));
    double flops = 2.0 * (double)zs_numel(&o) * (double)k;
    return zb_op(z, bias ? "Gemm" : "MatMul", in, bias ? 3 : 2, &o, 1, AF_DTYPE_UNKNOWN, flops, -1,
                 NULL);
}

zt L_matmul(zb_t *z, zt a, zt b)
{
    if (z->rc)
        return 0;
    zshape_t o = *zb_shape(z, a);
    const zshape_t *sb = zb_shape(z, b);
    int64_t k = o.d[o.rank - 1];
    o.d[o.rank - 1] = sb->d[sb->rank - 1];
    zt in[2] = {a, b};
    return zb_op(z, "MatMul", in, 2, &o, 1, AF_DTYPE_UNKNOWN,
                 2.0 * (double)zs_numel(&o) * (double)k, -1, NULL);
}

zt L_softmax(zb_t *z, zt x)
{
    if (z->rc)
        return 0;
    zshape_t s = *zb_shape(z, x);
    return zb_op(z, "Softmax", &x, 1, &s, 1, AF_DTYPE_UNKNOWN, 5.0 * (double)zs_numel(&s), 0, NULL);
}

zt L_layernorm(zb_t *z, zt x)
{
    if (z->rc)
        return 0;
    zshape_t s = *zb_shape(z, x);
    zt in[2] = {x, zb_const(z, "ln", AF_DTYPE_F32, zs2((int64_t)2, s.d[s.rank - 1]))};
    return zb_op(z, "LayerNormalization", in, 2, &s, 1, AF_DTYPE_UNKNOWN,
                 8.0 * (double)zs_numel(&s), 0, NULL);
}

zt L_scale(zb_t *z, zt x)
{
    if (z->rc)
        return 0;
    zshape_t s = *zb_shape(z, x);
    zt in[2] = {x, zb_const(z, "scale", AF_DTYPE_F32, zs1((int64_t)1))};
    return zb_op(z, "Mul", in, 2, &s, 1, AF_DTYPE_UNKNOWN, (double)zs_numel(&s), 0, NULL);
}

zt L_embedding(zb_t *z, zt ids, int64_t vocab, int64_t dim)
{
    if (z->rc)
        return 0;
    zshape_t o = *zb_shape(z, ids);
    o.d[o.rank++] = dim;
    zt in[2] = {zb_const(z, "table", AF_DTYPE_F32, zs2(vocab, dim)), ids};
    return zb_op(z, "Gather", in, 2, &o, 1, AF_DTYPE_F32, (double)zs_numel(&o), -1, NULL);
}

zt L_conv_bn_act(zb_t *z, zt x, int64_t cout, int k, int stride, int pad, const char *act)
{
    if (z->rc)
        return 0;
    zt y = L_bn(z, L_conv(z, x, cout, k, stride, pad, 1, 1, 0));
    return act ? L_act(z, act, y) : y;
}
