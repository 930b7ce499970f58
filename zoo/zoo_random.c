/*
 * Randomly wired and searched-cell networks, the graphs where operator order matters most.
 *
 * RandWire-WS (Xie et al. 2019, small regime, C=78): each of the three random stages is a
 * Watts-Strogatz graph WS(N=32, K=4, P=0.75) whose edges are oriented from lower to higher node
 * index; a node sums its inputs, then runs ReLU -> 3x3 depthwise -> 1x1 -> BN. Nodes without
 * predecessors read the stage input (stride 2), nodes without successors are averaged into the
 * stage output. Node order is the node index, as the reference forward() loops over them.
 *
 * DARTS (Liu et al. 2019): the CIFAR network of 20 cells, C=36, with the published DARTS_V2
 * genotype; reduction cells at 1/3 and 2/3 of the depth. Wiring follows the reference code.
 */
#include "zoo/zoo_int.h"

#include <stdlib.h>
#include <string.h>

static int64_t batch_of(const af_zoo_opts_t *o, int64_t def)
{
    return o->batch > 0 ? o->batch : def;
}

/* ---- RandWire ----------------------------------------------------------------------------- */

#define RW_N 32
#define RW_K 4

/* adj[i][j] = 1 for an edge i -> j (i < j) after Watts-Strogatz rewiring. */
static void ws_graph(zb_t *z, unsigned char adj[RW_N][RW_N], double p)
{
    unsigned char und[RW_N][RW_N];
    memset(und, 0, sizeof(und));
    for (int i = 0; i < RW_N; i++)
        for (int j = 1; j <= RW_K / 2; j++) {
            int k = (i + j) % RW_N;
            und[i][k] = und[k][i] = 1;
        }
    for (int j = 1; j <= RW_K / 2; j++)
        for (int i = 0; i < RW_N; i++) {
            int k = (i + j) % RW_N;
            if ((double)(zb_rand(z) >> 11) / (double)(1ull << 53) >= p || !und[i][k])
                continue;
            int t = (int)(zb_rand(z) % RW_N), tries = 0;
            while ((t == i || und[i][t]) && tries++ < 4 * RW_N)
                t = (int)(zb_rand(z) % RW_N);
            if (t == i || und[i][t])
                continue;
            und[i][k] = und[k][i] = 0;
            und[i][t] = und[t][i] = 1;
        }
    memset(adj, 0, sizeof(unsigned char) * RW_N * RW_N);
    for (int i = 0; i < RW_N; i++)
        for (int k = i + 1; k < RW_N; k++)
            adj[i][k] = und[i][k];
}

static zt rw_node(zb_t *z, zt x, int64_t c, int stride)
{
    zt y = L_act(z, "Relu", x);
    y = L_conv(z, y, zb_shape(z, y)->d[1], 3, stride, 1, 1, (int)zb_shape(z, y)->d[1], 0);
    return L_bn(z, L_conv(z, y, c, 1, 1, 0, 1, 1, 0));
}

static zt sum_of(zb_t *z, const zt *xs, int n, const char *op)
{
    if (n == 1)
        return xs[0];
    zshape_t s = *zb_shape(z, xs[0]);
    return zb_op(z, op, xs, n, &s, 1, AF_DTYPE_UNKNOWN, (double)zs_numel(&s) * n, 0, NULL);
}

static zt rw_stage(zb_t *z, zt x, int64_t c, int stage)
{
    unsigned char adj[RW_N][RW_N];
    ws_graph(z, adj, 0.75);
    zt out[RW_N], ins[RW_N], ends[RW_N];
    int n_ends = 0;
    for (int j = 0; j < RW_N; j++) {
        zb_scope(z, "stage%d.node%d", stage, j);
        int n_in = 0;
        for (int i = 0; i < j; i++)
            if (adj[i][j])
                ins[n_in++] = out[i];
        out[j] = n_in ? rw_node(z, sum_of(z, ins, n_in, "Sum"), c, 1) : rw_node(z, x, c, 2);
        int has_succ = 0;
        for (int k = j + 1; k < RW_N; k++)
            has_succ |= adj[j][k];
        if (!has_succ)
            ends[n_ends++] = out[j];
    }
    zb_scope(z, "stage%d.out", stage);
    return sum_of(z, ends, n_ends, "Mean");
}

int zoo_randwire(zb_t *z, const af_zoo_opts_t *o)
{
    const int64_t c = 78;
    zt x = zb_input(z, "image", AF_DTYPE_F32, zs4(batch_of(o, 1), 3, 224, 224));
    zb_scope(z, "conv1");
    x = L_bn(z, L_conv(z, x, c / 2, 3, 2, 1, 1, 1, 0));
    zb_scope(z, "conv2");
    x = L_bn(z, L_conv(z, L_act(z, "Relu", x), c, 3, 2, 1, 1, 1, 0));
    for (int st = 0; st < 3; st++)
        x = rw_stage(z, x, c << st, st + 3);
    zb_scope(z, "conv_last");
    x = L_conv_bn_act(z, L_act(z, "Relu", x), 1280, 1, 1, 0, "Relu");
    zb_scope(z, "head");
    zt p = L_gap(z, x);
    zt f = L_reshape(z, p, zs2(zb_shape(z, p)->d[0], 1280));
    zb_output(z, L_linear(z, f, 1000, 1), "logits");
    return z->rc;
}

/* ---- DARTS -------------------------------------------------------------------------------- */

enum { OP_SEP3, OP_DIL3, OP_MAX3, OP_SKIP };

/* DARTS_V2 genotype: (op, input state) pairs, two per intermediate node. */
static const int darts_normal[8][2] = {{OP_SEP3, 0}, {OP_SEP3, 1}, {OP_SEP3, 0}, {OP_SEP3, 1},
                                       {OP_SEP3, 1}, {OP_SKIP, 0}, {OP_SKIP, 0}, {OP_DIL3, 2}};
static const int darts_reduce[8][2] = {{OP_MAX3, 0}, {OP_MAX3, 1}, {OP_SKIP, 2}, {OP_MAX3, 1},
                                       {OP_MAX3, 0}, {OP_SKIP, 2}, {OP_SKIP, 2}, {OP_MAX3, 1}};

static zt relu_conv_bn(zb_t *z, zt x, int64_t c)
{
    return L_bn(z, L_conv(z, L_act(z, "Relu", x), c, 1, 1, 0, 1, 1, 0));
}

static zt factorized_reduce(zb_t *z, zt x, int64_t c)
{
    zt r = L_act(z, "Relu", x);
    zt h[2] = {L_conv(z, r, c / 2, 1, 2, 0, 1, 1, 0), L_conv(z, r, c - c / 2, 1, 2, 0, 1, 1, 0)};
    return L_bn(z, L_concat(z, h, 2, 1));
}

static zt dw_pw(zb_t *z, zt x, int64_t c, int stride, int pad, int dil)
{
    int64_t cin = zb_shape(z, x)->d[1];
    zt y = L_conv(z, L_act(z, "Relu", x), cin, 3, stride, pad, dil, (int)cin, 0);
    return L_bn(z, L_conv(z, y, c, 1, 1, 0, 1, 1, 0));
}

static zt darts_op(zb_t *z, int op, zt x, int64_t c, int stride)
{
    switch (op) {
    case OP_SEP3:
        return dw_pw(z, dw_pw(z, x, c, stride, 1, 1), c, 1, 1, 1);
    case OP_DIL3:
        return dw_pw(z, x, c, stride, 2, 2);
    case OP_MAX3:
        return L_maxpool(z, x, 3, stride, 1);
    default:
        return stride == 1 ? x : factorized_reduce(z, x, c);
    }
}

static zt darts_cell(zb_t *z, zt s0, zt s1, int64_t c, int reduction, int reduction_prev)
{
    zt st[6];
    st[0] = reduction_prev ? factorized_reduce(z, s0, c) : relu_conv_bn(z, s0, c);
    st[1] = relu_conv_bn(z, s1, c);
    const int(*g)[2] = reduction ? darts_reduce : darts_normal;
    for (int i = 0; i < 4; i++) {
        zt h[2];
        for (int k = 0; k < 2; k++) {
            int op = g[2 * i + k][0], src = g[2 * i + k][1];
            h[k] = darts_op(z, op, st[src], c, (reduction && src < 2) ? 2 : 1);
        }
        st[2 + i] = L_add(z, h[0], h[1]);
    }
    return L_concat(z, st + 2, 4, 1);
}

int zoo_darts(zb_t *z, const af_zoo_opts_t *o)
{
    const int64_t c0 = 36;
    const int layers = 20;
    zt x = zb_input(z, "image", AF_DTYPE_F32, zs4(batch_of(o, 1), 3, 32, 32));
    zb_scope(z, "stem");
    zt s1 = L_bn(z, L_conv(z, x, 3 * c0, 3, 1, 1, 1, 1, 0)), s0 = s1;
    int64_t c = c0;
    int reduction_prev = 0;
    for (int i = 0; i < layers; i++) {
        int reduction = (i == layers / 3 || i == 2 * layers / 3);
        if (reduction)
            c *= 2;
        zb_scope(z, "cells.%d", i);
        zt out = darts_cell(z, s0, s1, c, reduction, reduction_prev);
        s0 = s1;
        s1 = out;
        reduction_prev = reduction;
    }
    zb_scope(z, "head");
    zt p = L_gap(z, s1);
    zt f = L_reshape(z, p, zs2(zb_shape(z, p)->d[0], zb_shape(z, p)->d[1]));
    zb_output(z, L_linear(z, f, 10, 1), "logits");
    return z->rc;
}
