/*
 * Naive ONNX semantics for tests/test_onednn.c: the expected result of every op the oneDNN
 * kernel set runs, written from the ONNX operator specification, independently of both the
 * oneDNN kernels and the reference kernel set (which the test also compares against where it
 * has the op). Every function reads the case's inputs (f32 unless said) and writes out.
 *
 * Windows (Conv, ConvTranspose, pooling) are given explicitly by the case builder (pads already
 * resolved from auto_pad), spatial dims padded to three with 1s.
 */
#ifndef ARENAFLOW_TESTS_ONEDNN_ORACLE_H
#define ARENAFLOW_TESTS_ONEDNN_ORACLE_H

#include "arenaflow/graph.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TC_MAX_IN 6
#define TC_MAX_ATTR 10

typedef struct tc_in {
    char name[16];
    af_dtype_t dt;
    int rank;
    int64_t sh[8];
    int is_const;
    float lo, hi;
    int round;       /* draw integers (comparisons that must see equal values) */
    double fixed[8]; /* n_fixed > 0: these values instead of random ones */
    int n_fixed;
    void *data;
    size_t bytes;
} tc_in_t;

typedef struct tc {
    char op[32];
    int n_in;
    tc_in_t in[TC_MAX_IN];
    af_dtype_t out_dt;
    int out_rank;
    int64_t out_sh[8];
    int n_attr;
    af_attr_t attr[TC_MAX_ATTR];
    int64_t ints[TC_MAX_ATTR][8];
    char strs[TC_MAX_ATTR][32];
    /* resolved parameters for the oracle */
    int sp, group, flag;
    int64_t k[3], s[3], d[3], pl[3], pr[3];
    float alpha, beta;
    int64_t axis;
    int64_t perm[8];
    uint8_t mask[8];
    double cost;          /* the node's estimated cost (FLOPs), 0 unknown */
    int expect_onednn;    /* 1: the node must run on oneDNN; 0: it must fall back */
    const char *why;      /* falling back: words of the reason the kernel report must give */
    int fast;             /* 1: oneDNN's kernel must be a direct one (not its ref, not gemm) */
    const char *ref_skip; /* why the reference kernel is not compared (NULL: compare) */
    void (*oracle)(const struct tc *c, void *out);
} tc_t;

static inline int64_t tc_numel(int rank, const int64_t *sh)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= sh[i];
    return n;
}

static inline const float *tc_f(const tc_t *c, int i)
{
    return (const float *)c->in[i].data;
}

/* ---- elementwise ------------------------------------------------------------------------- */

static inline double or_unary(const char *op, double x, double a, double b)
{
    if (!strcmp(op, "Relu"))
        return x > 0 ? x : 0;
    if (!strcmp(op, "LeakyRelu"))
        return x > 0 ? x : a * x;
    if (!strcmp(op, "Sigmoid"))
        return 1 / (1 + exp(-x));
    if (!strcmp(op, "Tanh"))
        return tanh(x);
    if (!strcmp(op, "Elu"))
        return x > 0 ? x : a * (exp(x) - 1);
    if (!strcmp(op, "Exp"))
        return exp(x);
    if (!strcmp(op, "Log"))
        return log(x);
    if (!strcmp(op, "Sqrt"))
        return sqrt(x);
    if (!strcmp(op, "Abs"))
        return fabs(x);
    if (!strcmp(op, "Neg"))
        return -x;
    if (!strcmp(op, "Reciprocal"))
        return 1 / x;
    if (!strcmp(op, "Softplus"))
        return log(exp(x) + 1);
    if (!strcmp(op, "HardSwish"))
        return x * fmax(0, fmin(1, x / 6 + 0.5));
    if (!strcmp(op, "HardSigmoid"))
        return fmax(0, fmin(1, a * x + b));
    if (!strcmp(op, "Mish"))
        return x * tanh(log(1 + exp(x)));
    if (!strcmp(op, "Gelu"))
        return a > 0 ? 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)))
                     : 0.5 * x * (1 + erf(x / sqrt(2)));
    if (!strcmp(op, "Erf"))
        return erf(x);
    if (!strcmp(op, "Relu6"))
        return fmin(6, fmax(0, x));
    if (!strcmp(op, "Clip"))
        return fmin(b, fmax(a, x));
    if (!strcmp(op, "Pow"))
        return pow(x, b);
    return NAN;
}

/* alpha, beta: the op's parameters (Gelu: alpha > 0 means approximate = tanh). */
static inline void or_unary_all(const tc_t *c, void *out)
{
    const float *x = tc_f(c, 0);
    float *y = out;
    int64_t n = tc_numel(c->out_rank, c->out_sh);
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)or_unary(c->op, x[i], c->alpha, c->beta);
}

static inline double or_binary(const char *op, double a, double b)
{
    if (!strcmp(op, "Add") || !strcmp(op, "Sum"))
        return a + b;
    if (!strcmp(op, "Sub"))
        return a - b;
    if (!strcmp(op, "Mul"))
        return a * b;
    if (!strcmp(op, "Div"))
        return a / b;
    if (!strcmp(op, "Max"))
        return a > b ? a : b;
    if (!strcmp(op, "Min"))
        return a < b ? a : b;
    if (!strcmp(op, "Pow"))
        return pow(a, b);
    if (!strcmp(op, "Equal"))
        return a == b;
    if (!strcmp(op, "Greater"))
        return a > b;
    if (!strcmp(op, "GreaterOrEqual"))
        return a >= b;
    if (!strcmp(op, "Less"))
        return a < b;
    if (!strcmp(op, "LessOrEqual"))
        return a <= b;
    return NAN;
}

/* Offset of output index idx in input i under numpy broadcasting. */
static inline int64_t or_bcast_off(const tc_t *c, int i, const int64_t *idx)
{
    const tc_in_t *t = &c->in[i];
    int64_t off = 0, st = 1;
    for (int k = t->rank - 1, o = c->out_rank - 1; k >= 0; k--, o--) {
        if (t->sh[k] != 1)
            off += idx[o] * st;
        st *= t->sh[k];
    }
    return off;
}

static inline void or_binary_all(const tc_t *c, void *out)
{
    int64_t n = tc_numel(c->out_rank, c->out_sh), idx[8] = {0};
    for (int64_t j = 0; j < n; j++) {
        double v = tc_f(c, 0)[or_bcast_off(c, 0, idx)];
        for (int i = 1; i < c->n_in; i++)
            v = or_binary(c->op, v, tc_f(c, i)[or_bcast_off(c, i, idx)]);
        if (c->out_dt == AF_DTYPE_BOOL)
            ((uint8_t *)out)[j] = v != 0;
        else
            ((float *)out)[j] = (float)v;
        for (int k = c->out_rank - 1; k >= 0; k--) {
            if (++idx[k] < c->out_sh[k])
                break;
            idx[k] = 0;
        }
    }
}

/* ---- convolution and pooling (spatial dims padded to 3) ------------------------------------ */

static inline void or_sp3(int rank, const int64_t *sh, int64_t *s3)
{
    for (int i = 0; i < 3; i++)
        s3[i] = 1;
    for (int i = 2; i < rank; i++)
        s3[3 - (rank - 2) + (i - 2)] = sh[i];
}

/* window parameters of dim i of 3 (missing leading dims: kernel 1, no padding) */
static inline int or_w(const tc_t *c, int i)
{
    return i - (3 - c->sp);
}
#define OR_K(c, i) (or_w(c, i) >= 0 ? (c)->k[or_w(c, i)] : 1)
#define OR_S(c, i) (or_w(c, i) >= 0 ? (c)->s[or_w(c, i)] : 1)
#define OR_D(c, i) (or_w(c, i) >= 0 ? (c)->d[or_w(c, i)] : 1)
#define OR_PL(c, i) (or_w(c, i) >= 0 ? (c)->pl[or_w(c, i)] : 0)

static inline void or_conv(const tc_t *c, void *out)
{
    const float *x = tc_f(c, 0), *w = tc_f(c, 1), *bias = c->n_in > 2 ? tc_f(c, 2) : NULL;
    int64_t N = c->in[0].sh[0], C = c->in[0].sh[1], M = c->out_sh[1], G = c->group;
    int64_t X[3], Y[3];
    or_sp3(c->in[0].rank, c->in[0].sh, X);
    or_sp3(c->out_rank, c->out_sh, Y);
    int64_t Cg = C / G, Mg = M / G, kd = OR_K(c, 0), kh = OR_K(c, 1), kw = OR_K(c, 2);
    float *y = out;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t o0 = 0; o0 < Y[0]; o0++)
                for (int64_t o1 = 0; o1 < Y[1]; o1++)
                    for (int64_t o2 = 0; o2 < Y[2]; o2++) {
                        double acc = bias ? bias[m] : 0;
                        int64_t g = m / Mg;
                        for (int64_t ci = 0; ci < Cg; ci++)
                            for (int64_t a = 0; a < kd; a++)
                                for (int64_t b = 0; b < kh; b++)
                                    for (int64_t e = 0; e < kw; e++) {
                                        int64_t i0 = o0 * OR_S(c, 0) - OR_PL(c, 0) + a * OR_D(c, 0);
                                        int64_t i1 = o1 * OR_S(c, 1) - OR_PL(c, 1) + b * OR_D(c, 1);
                                        int64_t i2 = o2 * OR_S(c, 2) - OR_PL(c, 2) + e * OR_D(c, 2);
                                        if (i0 < 0 || i0 >= X[0] || i1 < 0 || i1 >= X[1] ||
                                            i2 < 0 || i2 >= X[2])
                                            continue;
                                        int64_t xc = n * C + g * Cg + ci;
                                        acc +=
                                            (double)x[((xc * X[0] + i0) * X[1] + i1) * X[2] + i2] *
                                            w[(((m * Cg + ci) * kd + a) * kh + b) * kw + e];
                                    }
                        y[(((n * M + m) * Y[0] + o0) * Y[1] + o1) * Y[2] + o2] = (float)acc;
                    }
}

/* ConvTranspose: every input pixel scatters its kernel (output padding is only extra size). */
static inline void or_deconv(const tc_t *c, void *out)
{
    const float *x = tc_f(c, 0), *w = tc_f(c, 1), *bias = c->n_in > 2 ? tc_f(c, 2) : NULL;
    int64_t N = c->in[0].sh[0], C = c->in[0].sh[1], M = c->out_sh[1], G = c->group;
    int64_t X[3], Y[3];
    or_sp3(c->in[0].rank, c->in[0].sh, X);
    or_sp3(c->out_rank, c->out_sh, Y);
    int64_t Cg = C / G, Mg = M / G, kd = OR_K(c, 0), kh = OR_K(c, 1), kw = OR_K(c, 2);
    int64_t ny = tc_numel(c->out_rank, c->out_sh), per = Y[0] * Y[1] * Y[2];
    double *acc = calloc((size_t)ny, sizeof(double));
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t i0 = 0; i0 < X[0]; i0++)
                for (int64_t i1 = 0; i1 < X[1]; i1++)
                    for (int64_t i2 = 0; i2 < X[2]; i2++) {
                        double xv = x[(((n * C + ch) * X[0] + i0) * X[1] + i1) * X[2] + i2];
                        int64_t g = ch / Cg;
                        for (int64_t mo = 0; mo < Mg; mo++)
                            for (int64_t a = 0; a < kd; a++)
                                for (int64_t b = 0; b < kh; b++)
                                    for (int64_t e = 0; e < kw; e++) {
                                        int64_t o0 = i0 * OR_S(c, 0) - OR_PL(c, 0) + a * OR_D(c, 0);
                                        int64_t o1 = i1 * OR_S(c, 1) - OR_PL(c, 1) + b * OR_D(c, 1);
                                        int64_t o2 = i2 * OR_S(c, 2) - OR_PL(c, 2) + e * OR_D(c, 2);
                                        if (o0 < 0 || o0 >= Y[0] || o1 < 0 || o1 >= Y[1] ||
                                            o2 < 0 || o2 >= Y[2])
                                            continue;
                                        int64_t m = g * Mg + mo;
                                        acc[(n * M + m) * per + (o0 * Y[1] + o1) * Y[2] + o2] +=
                                            xv * w[(((ch * Mg + mo) * kd + a) * kh + b) * kw + e];
                                    }
                    }
    for (int64_t i = 0; i < ny; i++)
        ((float *)out)[i] = (float)(acc[i] + (bias ? bias[(i / per) % M] : 0));
    free(acc);
}

/* flag: 1 max, 0 average excluding pads, 2 average including pads (not the ceil overhang) */
static inline void or_pool(const tc_t *c, void *out)
{
    const float *x = tc_f(c, 0);
    int64_t NC = c->in[0].sh[0] * c->in[0].sh[1], X[3], Y[3];
    or_sp3(c->in[0].rank, c->in[0].sh, X);
    or_sp3(c->out_rank, c->out_sh, Y);
    float *y = out;
    for (int64_t q = 0; q < NC; q++)
        for (int64_t o0 = 0; o0 < Y[0]; o0++)
            for (int64_t o1 = 0; o1 < Y[1]; o1++)
                for (int64_t o2 = 0; o2 < Y[2]; o2++) {
                    double acc = c->flag == 1 ? -INFINITY : 0;
                    int64_t cnt = 0, all = 0;
                    for (int64_t a = 0; a < OR_K(c, 0); a++)
                        for (int64_t b = 0; b < OR_K(c, 1); b++)
                            for (int64_t e = 0; e < OR_K(c, 2); e++) {
                                int64_t i0 = o0 * OR_S(c, 0) - OR_PL(c, 0) + a * OR_D(c, 0);
                                int64_t i1 = o1 * OR_S(c, 1) - OR_PL(c, 1) + b * OR_D(c, 1);
                                int64_t i2 = o2 * OR_S(c, 2) - OR_PL(c, 2) + e * OR_D(c, 2);
                                all++;
                                if (i0 < 0 || i0 >= X[0] || i1 < 0 || i1 >= X[1] || i2 < 0 ||
                                    i2 >= X[2])
                                    continue;
                                double v = x[((q * X[0] + i0) * X[1] + i1) * X[2] + i2];
                                acc = c->flag == 1 ? fmax(acc, v) : acc + v;
                                cnt++;
                            }
                    y[((q * Y[0] + o0) * Y[1] + o1) * Y[2] + o2] =
                        (float)(c->flag == 1 ? acc : acc / (double)(c->flag == 2 ? all : cnt));
                }
}

/* ---- normalisation, softmax, reductions ---------------------------------------------------- */

static inline void or_split(const tc_t *c, int64_t axis, int64_t *outer, int64_t *dim,
                            int64_t *inner)
{
    *outer = *inner = *dim = 1;
    for (int i = 0; i < c->in[0].rank; i++)
        *(i < axis ? outer : i > axis ? inner : dim) *= c->in[0].sh[i];
    if (axis < 0 || axis >= c->in[0].rank)
        *dim = 1;
    else
        *dim = c->in[0].sh[axis];
}

/* flag: 1 LogSoftmax */
static inline void or_softmax(const tc_t *c, void *out)
{
    int64_t outer, dim, inner;
    or_split(c, c->axis, &outer, &dim, &inner);
    const float *x = tc_f(c, 0);
    float *y = out;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < dim; k++)
                mx = fmax(mx, x[(o * dim + k) * inner + i]);
            for (int64_t k = 0; k < dim; k++)
                sum += exp(x[(o * dim + k) * inner + i] - mx);
            for (int64_t k = 0; k < dim; k++) {
                double v = x[(o * dim + k) * inner + i] - mx;
                y[(o * dim + k) * inner + i] = (float)(c->flag ? v - log(sum) : exp(v) / sum);
            }
        }
}

static inline void or_batchnorm(const tc_t *c, void *out)
{
    int64_t outer, dim, inner;
    or_split(c, 1, &outer, &dim, &inner);
    const float *x = tc_f(c, 0), *sc = tc_f(c, 1), *b = tc_f(c, 2), *m = tc_f(c, 3),
                *v = tc_f(c, 4);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < dim; k++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t j = (o * dim + k) * inner + i;
                ((float *)out)[j] =
                    (float)((x[j] - m[k]) / sqrt(v[k] + (double)c->alpha) * sc[k] + b[k]);
            }
}

/* LayerNormalization over dims >= axis (flag 1: bias present); InstanceNormalization when
 * c->op says so (per (n, c) over the spatial dims, scale and bias per channel). */
static inline void or_norm(const tc_t *c, void *out)
{
    int inst = !strcmp(c->op, "InstanceNormalization");
    int64_t groups = 1, len = 1;
    for (int i = 0; i < c->in[0].rank; i++)
        *(i < (inst ? 2 : c->axis) ? &groups : &len) *= c->in[0].sh[i];
    const float *x = tc_f(c, 0), *sc = tc_f(c, 1), *b = c->n_in > 2 ? tc_f(c, 2) : NULL;
    for (int64_t g = 0; g < groups; g++) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < len; i++)
            mean += x[g * len + i];
        mean /= (double)len;
        for (int64_t i = 0; i < len; i++)
            var += (x[g * len + i] - mean) * (x[g * len + i] - mean);
        var /= (double)len;
        for (int64_t i = 0; i < len; i++) {
            int64_t p = inst ? g % c->in[0].sh[1] : i;
            double v = (x[g * len + i] - mean) / sqrt(var + (double)c->alpha) * sc[p];
            ((float *)out)[g * len + i] = (float)(v + (b ? b[p] : 0));
        }
    }
}

/* mask: reduced dims; op: ReduceMax ... ReduceSumSquare */
static inline void or_reduce(const tc_t *c, void *out)
{
    const tc_in_t *t = &c->in[0];
    int64_t n = tc_numel(t->rank, t->sh), ny = tc_numel(c->out_rank, c->out_sh), idx[8] = {0};
    double *acc = malloc((size_t)ny * sizeof(double));
    int64_t *cnt = calloc((size_t)ny, sizeof(int64_t));
    const char *op = c->op;
    for (int64_t j = 0; j < ny; j++)
        acc[j] = !strcmp(op, "ReduceMax")    ? -INFINITY
                 : !strcmp(op, "ReduceMin")  ? INFINITY
                 : !strcmp(op, "ReduceProd") ? 1
                                             : 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t o = 0;
        for (int k = 0; k < t->rank; k++)
            o = o * (c->mask[k] ? 1 : t->sh[k]) + (c->mask[k] ? 0 : idx[k]);
        double v = tc_f(c, 0)[i];
        if (!strcmp(op, "ReduceMax"))
            acc[o] = fmax(acc[o], v);
        else if (!strcmp(op, "ReduceMin"))
            acc[o] = fmin(acc[o], v);
        else if (!strcmp(op, "ReduceProd"))
            acc[o] *= v;
        else if (!strcmp(op, "ReduceL1"))
            acc[o] += fabs(v);
        else if (!strcmp(op, "ReduceL2") || !strcmp(op, "ReduceSumSquare"))
            acc[o] += v * v;
        else
            acc[o] += v;
        cnt[o]++;
        for (int k = t->rank - 1; k >= 0; k--) {
            if (++idx[k] < t->sh[k])
                break;
            idx[k] = 0;
        }
    }
    for (int64_t j = 0; j < ny; j++)
        ((float *)out)[j] = (float)(!strcmp(op, "ReduceMean") ? acc[j] / (double)cnt[j]
                                    : !strcmp(op, "ReduceL2") ? sqrt(acc[j])
                                                              : acc[j]);
    free(acc);
    free(cnt);
}

/* ---- matrix products, data movement ------------------------------------------------------- */

/* MatMul (numpy) — flag 0; Gemm — flag 1 (transA/transB in perm[0..1], alpha, beta, C). */
static inline void or_matmul(const tc_t *c, void *out)
{
    const tc_in_t *A = &c->in[0], *B = &c->in[1];
    float *y = out;
    if (c->flag) {
        int ta = (int)c->perm[0], tb = (int)c->perm[1];
        int64_t m = ta ? A->sh[1] : A->sh[0], k = ta ? A->sh[0] : A->sh[1];
        int64_t n = tb ? B->sh[0] : B->sh[1];
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++)
                    s += (double)tc_f(c, 0)[ta ? p * m + i : i * k + p] *
                         tc_f(c, 1)[tb ? j * k + p : p * n + j];
                double cv = 0;
                if (c->n_in > 2) {
                    int64_t idx[2] = {i, j};
                    cv = tc_f(c, 2)[or_bcast_off(c, 2, idx)];
                }
                y[i * n + j] = (float)(c->alpha * s + c->beta * cv);
            }
        return;
    }
    int ra = A->rank, rb = B->rank, ry = c->out_rank;
    int64_t m = ra > 1 ? A->sh[ra - 2] : 1, k = A->sh[ra - 1], n = rb > 1 ? B->sh[rb - 1] : 1;
    int64_t batch = tc_numel(ry, c->out_sh) / (m * n), idx[8] = {0};
    int nb = ry - (ra > 1) - (rb > 1); /* batch dims of the output */
    for (int64_t bi = 0; bi < batch; bi++) {
        int64_t oa = 0, ob = 0, sa = m * k, sb = k * n;
        for (int d = nb - 1, da = ra - 3, db = rb - 3; d >= 0; d--, da--, db--) {
            if (da >= 0) {
                oa += (A->sh[da] == 1 ? 0 : idx[d]) * sa;
                sa *= A->sh[da];
            }
            if (db >= 0) {
                ob += (B->sh[db] == 1 ? 0 : idx[d]) * sb;
                sb *= B->sh[db];
            }
        }
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++)
                    s += (double)tc_f(c, 0)[oa + i * k + p] * tc_f(c, 1)[ob + p * n + j];
                y[bi * m * n + i * n + j] = (float)s;
            }
        for (int d = nb - 1; d >= 0; d--) {
            if (++idx[d] < c->out_sh[d])
                break;
            idx[d] = 0;
        }
    }
}

static inline void or_concat(const tc_t *c, void *out)
{
    int64_t outer = 1, inner_out = 1;
    for (int i = 0; i < c->out_rank; i++)
        *(i < c->axis ? &outer : &inner_out) *= c->out_sh[i];
    int64_t at = 0;
    for (int i = 0; i < c->n_in; i++) {
        int64_t part = tc_numel(c->in[i].rank, c->in[i].sh) / outer;
        for (int64_t o = 0; o < outer; o++)
            memcpy((float *)out + o * inner_out + at, tc_f(c, i) + o * part,
                   (size_t)part * sizeof(float));
        at += part;
    }
}

static inline void or_transpose(const tc_t *c, void *out)
{
    const tc_in_t *t = &c->in[0];
    int64_t n = tc_numel(t->rank, t->sh), idx[8] = {0}, st[8], acc = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= t->sh[i];
    }
    for (int64_t j = 0; j < n; j++) {
        int64_t src = 0;
        for (int i = 0; i < c->out_rank; i++)
            src += idx[i] * st[c->perm[i]];
        ((float *)out)[j] = tc_f(c, 0)[src];
        for (int i = c->out_rank - 1; i >= 0; i--) {
            if (++idx[i] < c->out_sh[i])
                break;
            idx[i] = 0;
        }
    }
}

/* Resize, per spatial dim: flag 0 nearest, 1 linear; perm[0] coordinate mode (0 half_pixel,
 * 1 pytorch_half_pixel, 2 asymmetric); perm[1] nearest mode (0 round_prefer_floor,
 * 1 round_prefer_ceil, 2 floor). Scale = output / input. */
static inline double or_coord(const tc_t *c, int64_t o, int64_t in, int64_t out)
{
    double s = (double)out / (double)in;
    if (c->perm[0] == 2)
        return (double)o / s;
    if (c->perm[0] == 1 && out == 1)
        return 0;
    return ((double)o + 0.5) / s - 0.5;
}

static inline int64_t or_clampi(int64_t v, int64_t n)
{
    return v < 0 ? 0 : v >= n ? n - 1 : v;
}

static inline void or_resize(const tc_t *c, void *out)
{
    const tc_in_t *t = &c->in[0];
    int sp = t->rank - 2;
    int64_t nc = t->sh[0] * t->sh[1], ny = tc_numel(c->out_rank, c->out_sh) / nc;
    int64_t nx = tc_numel(t->rank, t->sh) / nc;
    for (int64_t q = 0; q < nc; q++)
        for (int64_t j = 0; j < ny; j++) {
            int64_t o[3], rem = j;
            for (int d = sp - 1; d >= 0; d--) {
                o[d] = rem % c->out_sh[2 + d];
                rem /= c->out_sh[2 + d];
            }
            int64_t lo[3], hi[3];
            double r[3];
            for (int d = 0; d < sp; d++) {
                int64_t in = t->sh[2 + d];
                double x = or_coord(c, o[d], in, c->out_sh[2 + d]);
                if (c->flag) {
                    double f = floor(x);
                    r[d] = x - f;
                    lo[d] = or_clampi((int64_t)f, in), hi[d] = or_clampi((int64_t)f + 1, in);
                } else {
                    double f = floor(x), fr = x - f;
                    int64_t k = c->perm[1] == 2 ? (int64_t)f
                                : fr == 0.5     ? (int64_t)f + (c->perm[1] == 1)
                                                : (int64_t)floor(x + 0.5);
                    lo[d] = hi[d] = or_clampi(k, in), r[d] = 0;
                }
            }
            double acc = 0;
            for (int corner = 0; corner < (1 << sp); corner++) {
                double w = 1;
                int64_t off = 0;
                for (int d = 0; d < sp; d++) {
                    int up = (corner >> d) & 1;
                    w *= up ? r[d] : 1 - r[d];
                    off = off * t->sh[2 + d] + (up ? hi[d] : lo[d]);
                }
                acc += w * tc_f(c, 0)[q * nx + off];
            }
            ((float *)out)[q * ny + j] = (float)acc;
        }
}

/* Cast to f32 from the input's dtype (f32, i32, u8, bool). */
static inline void or_cast(const tc_t *c, void *out)
{
    int64_t n = tc_numel(c->out_rank, c->out_sh);
    for (int64_t i = 0; i < n; i++) {
        const void *p = c->in[0].data;
        double v = c->in[0].dt == AF_DTYPE_I32   ? ((const int32_t *)p)[i]
                   : c->in[0].dt == AF_DTYPE_F32 ? ((const float *)p)[i]
                                                 : ((const uint8_t *)p)[i];
        ((float *)out)[i] = (float)v;
    }
}

#endif
