/*
 * The grid of tests/test_onednn.c: one function per op family, each building cases with the
 * helpers of test_onednn.c (tc_new, tc_in, tc_out, tc_a*, tc_check) and the oracles of
 * tests/onednn_oracle.h. Included once, by test_onednn.c.
 */
#ifndef ARENAFLOW_TESTS_ONEDNN_CASES_H
#define ARENAFLOW_TESTS_ONEDNN_CASES_H

#define F32 AF_DTYPE_F32
#define SH(...) ((const int64_t[]){__VA_ARGS__})
#define NSH(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), SH(__VA_ARGS__)

/* ---- elementwise ------------------------------------------------------------------------- */

typedef struct urow {
    const char *op;
    float lo, hi, alpha, beta;
    const char *attr_a; /* attribute carrying alpha */
} urow_t;

static void cases_unary(void)
{
    static const urow_t rows[] = {
        {"Relu", -2, 2, 0, 0, NULL},         {"LeakyRelu", -2, 2, 0.2f, 0, "alpha"},
        {"Sigmoid", -6, 6, 0, 0, NULL},      {"Tanh", -3, 3, 0, 0, NULL},
        {"Elu", -3, 3, 0.5f, 0, "alpha"},    {"Exp", -3, 3, 0, 0, NULL},
        {"Log", 0.1f, 4, 0, 0, NULL},        {"Sqrt", 0.01f, 4, 0, 0, NULL},
        {"Abs", -2, 2, 0, 0, NULL},          {"Neg", -2, 2, 0, 0, NULL},
        {"Reciprocal", 0.5f, 2, 0, 0, NULL}, {"Reciprocal", -2, -0.5f, 0, 0, NULL},
        {"Softplus", -4, 4, 0, 0, NULL},     {"HardSwish", -5, 5, 0, 0, NULL},
        {"Mish", -4, 4, 0, 0, NULL},         {"Gelu", -3, 3, 0, 0, NULL},
        {"Relu6", -3, 9, 0, 6, NULL},        {"LeakyRelu", -2, 2, 0.01f, 0, NULL},
    };
    const int64_t shapes[3][4] = {{7}, {2, 3, 5}, {1, 24, 7, 9}};
    const int ranks[3] = {1, 3, 4};
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
        for (int s = 0; s < 3; s++) {
            tc_t *c = tc_new(rows[r].op);
            /* Log falls back: oneDNN's is 1.4e-6 off at log(1) (test_log_example) */
            c->expect_onednn = strcmp(rows[r].op, "Log") != 0;
            tc_in(c, F32, ranks[s], shapes[s], 0, rows[r].lo, rows[r].hi);
            tc_out(c, ranks[s], shapes[s]);
            c->alpha = rows[r].alpha;
            c->beta = rows[r].beta;
            if (rows[r].attr_a)
                tc_af(c, rows[r].attr_a, rows[r].alpha);
            c->oracle = or_unary_all;
            tc_check(c);
        }
    /* Gelu approximate = tanh */
    tc_t *c = tc_new("Gelu");
    tc_in(c, F32, NSH(3, 50), 0, -4, 4);
    tc_out(c, NSH(3, 50));
    tc_as(c, "approximate", "tanh");
    c->alpha = 1;
    c->ref_skip = "the reference Gelu ignores approximate";
    c->oracle = or_unary_all;
    tc_check(c);
    /* Clip: bounds as attributes (opset 6), as constant inputs (opset 11) */
    c = tc_new("Clip");
    tc_in(c, F32, NSH(4, 9), 0, -3, 3);
    tc_out(c, NSH(4, 9));
    tc_af(c, "min", -1.5);
    tc_af(c, "max", 0.5);
    c->alpha = -1.5f, c->beta = 0.5f, c->oracle = or_unary_all;
    tc_check(c);
    c = tc_new("Clip");
    tc_in(c, F32, NSH(2, 3, 8), 0, -3, 3);
    tc_in(c, F32, 0, NULL, 1, -1, -1);
    tc_in(c, F32, 0, NULL, 1, 1.25f, 1.25f);
    tc_out(c, NSH(2, 3, 8));
    c->alpha = -1, c->beta = 1.25f, c->oracle = or_unary_all;
    tc_check(c);
    /* Clip with one bound input: min or max cannot be told apart after import -> fallback */
    c = tc_new("Clip");
    tc_in(c, F32, NSH(16), 0, -3, 3);
    tc_in(c, F32, 0, NULL, 1, -0.5f, -0.5f);
    tc_out(c, NSH(16));
    c->alpha = -0.5f, c->beta = INFINITY, c->oracle = or_unary_all, c->expect_onednn = 0;
    c->why = "Clip with one bound input";
    tc_check(c);
}

static void binary_case(const char *op, int ra, const int64_t *a, int rb, const int64_t *b, int ry,
                        const int64_t *y, int b_const, int expect)
{
    tc_t *c = tc_new(op);
    int div = !strcmp(op, "Div");
    tc_in(c, F32, ra, a, 0, -2, 2);
    tc_in(c, F32, rb, b, b_const, div ? 0.5f : -2, 2);
    tc_out(c, ry, y);
    if (strstr(op, "Greater") || strstr(op, "Less") || !strcmp(op, "Equal")) {
        c->out_dt = AF_DTYPE_BOOL;
        c->in[0].lo = c->in[1].lo = -2, c->in[0].hi = c->in[1].hi = 2;
    }
    c->oracle = or_binary_all;
    c->expect_onednn = expect;
    tc_check(c);
}

static void cases_binary(void)
{
    static const char *ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};
    static const char *cmp[] = {"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        int comm = strcmp(ops[i], "Sub") && strcmp(ops[i], "Div");
        binary_case(ops[i], NSH(2, 3, 4), NSH(2, 3, 4), NSH(2, 3, 4), 0, 1);
        binary_case(ops[i], NSH(2, 3, 4), NSH(4), NSH(2, 3, 4), 1, 1);
        binary_case(ops[i], NSH(2, 3, 4), NSH(3, 1), NSH(2, 3, 4), 0, 1);
        binary_case(ops[i], NSH(1, 24, 7, 9), NSH(1, 24, 1, 1), NSH(1, 24, 7, 9), 1, 1);
        binary_case(ops[i], NSH(1, 24, 7, 9), 0, NULL, NSH(1, 24, 7, 9), 1, 1);
        /* the first operand broadcast: commutative ops swap, Sub and Div fall back */
        binary_case(ops[i], NSH(4), NSH(2, 3, 4), NSH(2, 3, 4), 0, comm);
        /* both broadcast: fall back (where this branch's reference set has the op) */
        if (i < 4)
            binary_case(ops[i], NSH(3, 1), NSH(1, 5), NSH(3, 5), 0, 0);
    }
    for (size_t i = 0; i < sizeof cmp / sizeof *cmp; i++) {
        binary_case(cmp[i], NSH(3, 8), NSH(3, 8), NSH(3, 8), 0, 1);
        binary_case(cmp[i], NSH(3, 8), NSH(8), NSH(3, 8), 0, 1);
        binary_case(cmp[i], NSH(8), NSH(3, 8), NSH(3, 8), 0, 1); /* mirrored */
    }
    for (int i = 0; i < 3; i++) { /* values that collide: integers */
        tc_t *c = tc_new(i == 0 ? "Equal" : i == 1 ? "GreaterOrEqual" : "LessOrEqual");
        tc_in(c, F32, NSH(4, 6), 0, -2, 2);
        tc_in(c, F32, NSH(6), 0, -2, 2);
        c->in[0].round = c->in[1].round = 1;
        tc_out(c, NSH(4, 6));
        c->out_dt = AF_DTYPE_BOOL, c->oracle = or_binary_all;
        tc_check(c);
    }
    /* Pow with a constant scalar exponent */
    const float ex[] = {2.0f, 3.0f, 0.5f, -1.0f};
    for (int i = 0; i < 4; i++) {
        tc_t *c = tc_new("Pow");
        tc_in(c, F32, NSH(5, 7), 0, 0.2f, 2);
        tc_in(c, F32, 0, NULL, 1, ex[i], ex[i]);
        tc_out(c, NSH(5, 7));
        c->beta = ex[i];
        c->oracle = or_binary_all;
        tc_check(c);
    }
    /* Sum */
    for (int n = 1; n <= 4; n++) {
        tc_t *c = tc_new("Sum");
        for (int i = 0; i < n; i++)
            tc_in(c, F32, NSH(2, 3, 5), 0, -2, 2);
        tc_out(c, NSH(2, 3, 5));
        c->oracle = or_binary_all;
        tc_check(c);
    }
}

/* ---- convolution ------------------------------------------------------------------------- */

typedef struct conv_spec {
    int sp;
    int64_t n, c, m, g;
    int64_t x[3], k[3], s[3], d[3], pl[3], pr[3];
    const char *auto_pad; /* NULL: explicit pads */
    int bias, w_const;
} conv_spec_t;

static void conv_case_k(const conv_spec_t *p, int expect, const char *why, int fast)
{
    tc_t *c = tc_new("Conv");
    int r = p->sp + 2;
    int64_t xs[5] = {p->n, p->c}, ws[5] = {p->m, p->c / p->g}, ys[5] = {p->n, p->m};
    c->sp = p->sp, c->group = (int)p->g;
    for (int i = 0; i < p->sp; i++) {
        int64_t ext = (p->k[i] - 1) * p->d[i] + 1, pl = p->pl[i], pr = p->pr[i], out;
        if (p->auto_pad && !strncmp(p->auto_pad, "SAME", 4)) {
            out = (p->x[i] + p->s[i] - 1) / p->s[i];
            int64_t total = (out - 1) * p->s[i] + ext - p->x[i];
            total = total > 0 ? total : 0;
            pl = !strcmp(p->auto_pad, "SAME_UPPER") ? total / 2 : total - total / 2;
            pr = total - pl;
        } else if (p->auto_pad) {
            pl = pr = 0;
        }
        out = (p->x[i] + pl + pr - ext) / p->s[i] + 1;
        xs[2 + i] = p->x[i], ws[2 + i] = p->k[i], ys[2 + i] = out;
        c->k[i] = p->k[i], c->s[i] = p->s[i], c->d[i] = p->d[i], c->pl[i] = pl, c->pr[i] = pr;
    }
    tc_in(c, F32, r, xs, 0, -1, 1);
    tc_in(c, F32, r, ws, p->w_const, -1, 1);
    if (p->bias)
        tc_in(c, F32, 1, SH(p->m), 1, -1, 1);
    tc_out(c, r, ys);
    tc_ai(c, "group", p->g);
    tc_aints(c, "kernel_shape", p->sp, p->k);
    tc_aints(c, "strides", p->sp, p->s);
    tc_aints(c, "dilations", p->sp, p->d);
    if (p->auto_pad) {
        tc_as(c, "auto_pad", p->auto_pad);
    } else {
        int64_t pads[6];
        for (int i = 0; i < p->sp; i++)
            pads[i] = p->pl[i], pads[p->sp + i] = p->pr[i];
        tc_aints(c, "pads", 2 * p->sp, pads);
    }
    c->oracle = or_conv;
    c->expect_onednn = expect;
    c->why = why;
    c->fast = fast;
    tc_check(c);
}

static void conv_case(const conv_spec_t *p, int expect, const char *why)
{
    conv_case_k(p, expect, why, 0);
}

/* On oneDNN with a direct kernel (not ref, not gemm). */
static void conv_case_fast(const conv_spec_t *p)
{
    conv_case_k(p, 1, NULL, 1);
}

static void cases_conv(void)
{
    static const int64_t cm[][3] = {{3, 8, 1}, {8, 8, 2}, {6, 6, 6}, {4, 6, 2}, {1, 24, 1}};
    static const int64_t kk[][2] = {{3, 3}, {1, 1}, {1, 3}, {3, 1}, {5, 3}};
    int i = 0;
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++, i++) {
            conv_spec_t p = {.sp = 2,
                             .n = 1 + (i % 2),
                             .c = cm[a][0],
                             .m = cm[a][1],
                             .g = cm[a][2],
                             .x = {9 + (i % 3), 8 + (i % 4)},
                             .k = {kk[b][0], kk[b][1]},
                             .s = {1 + (i % 2), 1 + (i / 2) % 2},
                             .d = {1 + (i / 3) % 2, 1},
                             .pl = {i % 2, (i / 2) % 3},
                             .pr = {(i / 3) % 2, i % 3},
                             .bias = i % 3 != 0,
                             .w_const = 1};
            conv_case(&p, 1, NULL);
        }
    static const char *aps[] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
    for (int a = 0; a < 3; a++) {
        conv_spec_t p = {.sp = 2,
                         .n = 1,
                         .c = 4,
                         .m = 5,
                         .g = 1,
                         .x = {11, 10},
                         .k = {3, 4},
                         .s = {2, 2},
                         .d = {1, 1},
                         .auto_pad = aps[a],
                         .bias = 1,
                         .w_const = 1};
        conv_case(&p, 1, NULL);
    }
    conv_spec_t p1 = {.sp = 1,
                      .n = 1,
                      .c = 1,
                      .m = 7,
                      .g = 1,
                      .x = {160},
                      .k = {16},
                      .s = {8},
                      .d = {1},
                      .w_const = 1}; /* the melspectrogram's STFT shape */
    conv_case(&p1, 1, NULL);
    conv_spec_t p1b = {.sp = 1,
                       .n = 2,
                       .c = 4,
                       .m = 4,
                       .g = 4,
                       .x = {20},
                       .k = {3},
                       .s = {1},
                       .d = {2},
                       .pl = {2},
                       .pr = {1},
                       .bias = 1,
                       .w_const = 1};
    conv_case(&p1b, 1, NULL);
    /* 1-D depthwise (silero VAD's layers): a direct kernel on every CPU (below AVX-512 as a 2-D
     * convolution of height 1), over channel counts that are no multiple of 8, strides,
     * dilations, asymmetric pads, with and without bias, batch 2 */
    static const int64_t dwc[] = {13, 258, 5, 24, 16};
    for (int a = 0; a < 5; a++) {
        conv_spec_t q = {.sp = 1,
                         .n = 1 + (a == 3),
                         .c = dwc[a],
                         .m = dwc[a],
                         .g = dwc[a],
                         .x = {a == 1 ? 8 : 9 + 4 * a},
                         .k = {a == 2 ? 3 : 5},
                         .s = {1 + (a % 2)},
                         .d = {1 + (a == 2 || a == 4)},
                         .pl = {a == 0 ? 1 : 2},
                         .pr = {2},
                         .bias = a != 3,
                         .w_const = 1};
        conv_case_fast(&q);
    }
    conv_spec_t p3 = {.sp = 3,
                      .n = 1,
                      .c = 2,
                      .m = 4,
                      .g = 1,
                      .x = {5, 6, 7},
                      .k = {3, 3, 2},
                      .s = {1, 2, 1},
                      .d = {1, 1, 2},
                      .pl = {1, 0, 1},
                      .pr = {1, 1, 0},
                      .bias = 1,
                      .w_const = 1};
    conv_case(&p3, 1, NULL);
    /* weights computed at run time: not prepackable, left to the reference kernel */
    conv_spec_t pw = {.sp = 2,
                      .n = 1,
                      .c = 3,
                      .m = 4,
                      .g = 1,
                      .x = {6, 6},
                      .k = {3, 3},
                      .s = {1, 1},
                      .d = {1, 1},
                      .pl = {1, 1},
                      .pr = {1, 1},
                      .w_const = 0};
    conv_case(&pw, 0, "input 1 must be a constant (weights)");
}

static void deconv_case(int sp, int64_t cin, int64_t m, int64_t g, const int64_t *x,
                        const int64_t *k, const int64_t *s, const int64_t *d, const int64_t *pl,
                        const int64_t *pr, const int64_t *op, int use_output_shape)
{
    tc_t *c = tc_new("ConvTranspose");
    int r = sp + 2;
    int64_t xs[5] = {1, cin}, ws[5] = {cin, m / g}, ys[5] = {1, m}, pads[6];
    c->sp = sp, c->group = (int)g;
    for (int i = 0; i < sp; i++) {
        int64_t ext = (k[i] - 1) * d[i] + 1;
        xs[2 + i] = x[i], ws[2 + i] = k[i];
        ys[2 + i] = s[i] * (x[i] - 1) + op[i] + ext - pl[i] - pr[i];
        c->k[i] = k[i], c->s[i] = s[i], c->d[i] = d[i], c->pl[i] = pl[i], c->pr[i] = pr[i];
        pads[i] = pl[i], pads[sp + i] = pr[i];
    }
    tc_in(c, F32, r, xs, 0, -1, 1);
    tc_in(c, F32, r, ws, 1, -1, 1);
    tc_in(c, F32, 1, SH(m), 1, -1, 1);
    tc_out(c, r, ys);
    tc_ai(c, "group", g);
    tc_aints(c, "strides", sp, s);
    tc_aints(c, "dilations", sp, d);
    if (use_output_shape) { /* pads follow from output_shape (NOTSET: odd pixel at the start) */
        tc_aints(c, "output_shape", sp, ys + 2);
        tc_aints(c, "output_padding", sp, op);
    } else {
        tc_aints(c, "pads", 2 * sp, pads);
        tc_aints(c, "output_padding", sp, op);
    }
    c->oracle = or_deconv;
    tc_check(c);
}

static void cases_deconv(void)
{
    deconv_case(2, 4, 6, 1, SH(5, 6), SH(3, 3), SH(1, 1), SH(1, 1), SH(1, 1), SH(1, 1), SH(0, 0),
                0);
    deconv_case(2, 4, 6, 2, SH(5, 4), SH(3, 2), SH(2, 2), SH(1, 1), SH(1, 0), SH(1, 1), SH(1, 0),
                0);
    deconv_case(2, 3, 3, 3, SH(4, 4), SH(4, 4), SH(2, 2), SH(1, 1), SH(1, 1), SH(1, 1), SH(0, 0),
                0);
    deconv_case(2, 2, 4, 1, SH(4, 5), SH(3, 3), SH(2, 1), SH(2, 1), SH(0, 2), SH(1, 2), SH(1, 0),
                0);
    deconv_case(1, 3, 2, 1, SH(9), SH(5), SH(3), SH(1), SH(2), SH(2), SH(2), 0);
    /* output_shape: total padding 2 split as ONNX says for NOTSET (start gets the larger half) */
    deconv_case(2, 2, 3, 1, SH(4, 4), SH(3, 3), SH(2, 2), SH(1, 1), SH(1, 1), SH(1, 1), SH(1, 1),
                1);
}

/* ---- matrix products ---------------------------------------------------------------------- */

static void matmul_case(int ra, const int64_t *a, int rb, const int64_t *b, int ry,
                        const int64_t *y, int b_const)
{
    tc_t *c = tc_new("MatMul");
    tc_in(c, F32, ra, a, 0, -1, 1);
    tc_in(c, F32, rb, b, b_const, -1, 1);
    tc_out(c, ry, y);
    c->oracle = or_matmul;
    if (ra > 3 || rb > 3 || (ra == 3 && rb == 3 && a[0] != b[0]))
        c->ref_skip = "the reference broadcasts batch dims as one flat modulo";
    tc_check(c);
}

static void gemm_case(int64_t m, int64_t k, int64_t n, int ta, int tb, float alpha, float beta,
                      int rc, const int64_t *cs, int expect)
{
    tc_t *c = tc_new("Gemm");
    tc_in(c, F32, 2, ta ? SH(k, m) : SH(m, k), 0, -1, 1);
    tc_in(c, F32, 2, tb ? SH(n, k) : SH(k, n), 1, -1, 1);
    if (rc >= 0)
        tc_in(c, F32, rc, cs, 1, -1, 1);
    tc_out(c, NSH(m, n));
    tc_ai(c, "transA", ta);
    tc_ai(c, "transB", tb);
    tc_af(c, "alpha", alpha);
    tc_af(c, "beta", beta);
    c->alpha = alpha, c->beta = beta, c->flag = 1, c->perm[0] = ta, c->perm[1] = tb;
    c->oracle = or_matmul;
    c->expect_onednn = expect;
    tc_check(c);
}

static void cases_matmul(void)
{
    for (int bc = 0; bc < 2; bc++) {
        matmul_case(NSH(3, 4), NSH(4, 5), NSH(3, 5), bc);
        matmul_case(NSH(2, 3, 4), NSH(4, 5), NSH(2, 3, 5), bc);
        matmul_case(NSH(2, 3, 4), NSH(2, 4, 5), NSH(2, 3, 5), bc);
        matmul_case(NSH(1, 3, 4), NSH(2, 4, 5), NSH(2, 3, 5), bc);
        matmul_case(NSH(2, 1, 3, 4), NSH(3, 4, 2), NSH(2, 3, 3, 2), bc);
        matmul_case(NSH(4), NSH(4, 5), NSH(5), bc);
        matmul_case(NSH(3, 4), NSH(4), NSH(3), bc);
        matmul_case(NSH(1, 1, 5, 257), NSH(257, 32), NSH(1, 1, 5, 32), bc); /* melspectrogram */
    }
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            gemm_case(3, 5, 4, ta, tb, 1, 1, 1, SH(4), 1);
            gemm_case(3, 5, 4, ta, tb, 0.5f, 1, 2, SH(3, 4), 1);
            gemm_case(3, 5, 4, ta, tb, 2, 1, 2, SH(3, 1), 1);
            gemm_case(3, 5, 4, ta, tb, 1, 1, 2, SH(1, 4), 1);
            gemm_case(3, 5, 4, ta, tb, 1.5f, 0, 1, SH(4), 1); /* beta 0: C ignored */
            gemm_case(3, 5, 4, ta, tb, 1, 1, -1, NULL, 1);    /* no C */
            gemm_case(3, 5, 4, ta, tb, 1, 0.5f, 1, SH(4), 0); /* beta: reference */
        }
    gemm_case(1, 1536, 128, 0, 1, 1, 1, 1, SH(128), 1); /* the wake-word classifiers */
    gemm_case(2, 3, 1, 0, 0, 1, 1, 0, NULL, 1);         /* scalar C */
}

/* ---- pooling, normalisation -------------------------------------------------------------- */

static void pool_case(const char *op, int sp, const int64_t *x, const int64_t *k, const int64_t *s,
                      const int64_t *d, const int64_t *pl, const int64_t *pr, int ceil, int incl,
                      int expect)
{
    tc_t *c = tc_new(op);
    int global = !strncmp(op, "Global", 6);
    int64_t xs[5] = {2, 3}, ys[5] = {2, 3}, pads[6];
    c->sp = sp;
    c->flag = strstr(op, "Max") ? 1 : incl ? 2 : 0;
    for (int i = 0; i < sp; i++) {
        xs[2 + i] = x[i];
        if (global) {
            c->k[i] = x[i], c->s[i] = 1, c->d[i] = 1, ys[2 + i] = 1;
            continue;
        }
        int64_t ext = (k[i] - 1) * d[i] + 1, num = x[i] + pl[i] + pr[i] - ext;
        ys[2 + i] = (ceil ? (num + s[i] - 1) / s[i] : num / s[i]) + 1;
        c->k[i] = k[i], c->s[i] = s[i], c->d[i] = d[i], c->pl[i] = pl[i], c->pr[i] = pr[i];
        pads[i] = pl[i], pads[sp + i] = pr[i];
    }
    tc_in(c, F32, sp + 2, xs, 0, -2, 2);
    tc_out(c, sp + 2, ys);
    if (!global) {
        tc_aints(c, "kernel_shape", sp, k);
        tc_aints(c, "strides", sp, s);
        tc_aints(c, "pads", 2 * sp, pads);
        if (c->flag == 1)
            tc_aints(c, "dilations", sp, d);
        tc_ai(c, "ceil_mode", ceil);
        if (c->flag != 1)
            tc_ai(c, "count_include_pad", incl);
    }
    c->oracle = expect ? or_pool : NULL;
    if (sp != 2 || incl || (d && c->flag == 1 && (d[0] > 1 || d[1] > 1)))
        c->ref_skip = "the reference pools 2-D, without dilations, excluding pads";
    c->expect_onednn = expect;
    tc_check(c);
}

static void cases_pool(void)
{
    const int64_t one[3] = {1, 1, 1}, zero[3] = {0, 0, 0};
    for (int m = 0; m < 2; m++) {
        const char *op = m ? "MaxPool" : "AveragePool";
        pool_case(op, 2, SH(8, 8), SH(2, 2), SH(2, 2), one, zero, zero, 0, 0, 1);
        pool_case(op, 2, SH(7, 9), SH(3, 3), SH(1, 1), one, SH(1, 1), SH(1, 1), 0, 0, 1);
        pool_case(op, 2, SH(7, 9), SH(3, 3), SH(2, 2), one, zero, zero, 1, 0, 1);
        pool_case(op, 2, SH(9, 10), SH(3, 2), SH(2, 3), one, SH(1, 0), SH(0, 1), 0, 0, 1);
        pool_case(op, 1, SH(17), SH(4), SH(3), one, SH(2), SH(1), 0, 0, 1);
        pool_case(op, 3, SH(5, 6, 7), SH(2, 3, 2), SH(2, 1, 2), one, SH(1, 1, 0), SH(0, 1, 1), 0, 0,
                  1);
    }
    pool_case("MaxPool", 2, SH(9, 9), SH(3, 3), SH(1, 1), SH(2, 2), SH(1, 1), SH(1, 1), 0, 0, 1);
    pool_case("AveragePool", 2, SH(7, 9), SH(3, 3), SH(1, 2), one, SH(1, 1), SH(1, 1), 0, 1, 1);
    pool_case("AveragePool", 1, SH(12), SH(5), SH(2), one, SH(2), SH(2), 0, 1, 1);
    /* ceil_mode with count_include_pad: ONNX's count of the overhang is not oneDNN's */
    pool_case("AveragePool", 2, SH(7, 9), SH(3, 3), SH(2, 2), one, SH(1, 1), SH(1, 1), 1, 1, 0);
    pool_case("GlobalAveragePool", 2, SH(7, 5), NULL, NULL, NULL, NULL, NULL, 0, 0, 1);
    pool_case("GlobalMaxPool", 2, SH(7, 5), NULL, NULL, NULL, NULL, NULL, 0, 0, 1);
    pool_case("GlobalAveragePool", 1, SH(11), NULL, NULL, NULL, NULL, NULL, 0, 0, 1);
}

static void cases_norm(void)
{
    for (int ax = -1; ax < 3; ax++)
        for (int l = 0; l < 2; l++) {
            tc_t *c = tc_new(l ? "LogSoftmax" : "Softmax");
            tc_in(c, F32, NSH(2, 3, 5), 0, -3, 3);
            tc_out(c, NSH(2, 3, 5));
            tc_ai(c, "axis", ax);
            c->axis = ax < 0 ? 2 : ax, c->flag = l, c->oracle = or_softmax;
            if (l)
                c->ref_skip = "the reference has no LogSoftmax";
            tc_check(c);
        }
    const int64_t bn[3][4] = {{2, 3, 4, 5}, {4, 3}, {1, 4, 6}};
    const int bnr[3] = {4, 2, 3};
    for (int i = 0; i < 3; i++) {
        tc_t *c = tc_new("BatchNormalization");
        int64_t ch = bn[i][1];
        tc_in(c, F32, bnr[i], bn[i], 0, -2, 2);
        tc_in(c, F32, 1, SH(ch), 1, 0.5f, 1.5f);
        tc_in(c, F32, 1, SH(ch), 1, -1, 1);
        tc_in(c, F32, 1, SH(ch), 1, -1, 1);
        tc_in(c, F32, 1, SH(ch), 1, 0.5f, 2);
        tc_out(c, bnr[i], bn[i]);
        tc_af(c, "epsilon", 1e-3);
        c->alpha = 1e-3f, c->oracle = or_batchnorm;
        tc_check(c);
    }
    const int64_t axes[3] = {-1, 1, 2};
    for (int i = 0; i < 3; i++)
        for (int bias = 0; bias < 2; bias++) {
            tc_t *c = tc_new("LayerNormalization");
            int64_t ax = axes[i] < 0 ? 2 : axes[i], len = ax == 1 ? 4 * 6 : ax == 2 ? 6 : 6;
            tc_in(c, F32, NSH(3, 4, 6), 0, -2, 2);
            tc_in(c, F32, 1, SH(len), 1, 0.5f, 1.5f);
            if (bias)
                tc_in(c, F32, 1, SH(len), 1, -1, 1);
            tc_out(c, NSH(3, 4, 6));
            tc_ai(c, "axis", axes[i]);
            c->axis = ax, c->alpha = 1e-5f, c->oracle = or_norm;
            if (ax != 2)
                c->ref_skip = "the reference takes a scale of the last dim's size";
            tc_check(c);
        }
    const int64_t in_sh[2][4] = {{2, 3, 4, 5}, {1, 2, 6}};
    for (int i = 0; i < 2; i++) {
        tc_t *c = tc_new("InstanceNormalization");
        int r = i ? 3 : 4;
        tc_in(c, F32, r, in_sh[i], 0, -2, 2);
        tc_in(c, F32, 1, SH(in_sh[i][1]), 1, 0.5f, 1.5f);
        tc_in(c, F32, 1, SH(in_sh[i][1]), 1, -1, 1);
        tc_out(c, r, in_sh[i]);
        tc_af(c, "epsilon", 1e-4);
        c->alpha = 1e-4f, c->oracle = or_norm;
        tc_check(c);
    }
    static const char *red[] = {"ReduceMax",  "ReduceMin", "ReduceSum", "ReduceMean",
                                "ReduceProd", "ReduceL1",  "ReduceL2",  "ReduceSumSquare"};
    const int64_t rax[3][2] = {{1, -1}, {0, 2}, {-1, -1}};
    for (size_t o = 0; o < sizeof red / sizeof *red; o++)
        for (int a = 0; a < 3; a++)
            for (int keep = 0; keep < 2; keep++) {
                tc_t *c = tc_new(red[o]);
                const int64_t x[3] = {3, 4, 5};
                float lo = strstr(red[o], "Prod") ? 0.5f : -2,
                      hi = strstr(red[o], "Prod") ? 1.5f : 2;
                tc_in(c, F32, 3, x, 0, lo, hi);
                int64_t y[3];
                int ny = 0;
                int na = a == 2 ? 0 : rax[a][1] < 0 ? 1 : 2;
                for (int k = 0; k < 3; k++) {
                    c->mask[k] = na == 0 || rax[a][0] == k || (na == 2 && rax[a][1] == k);
                    if (!c->mask[k] || keep)
                        y[ny++] = c->mask[k] ? 1 : x[k];
                }
                tc_out(c, ny, y);
                if (na)
                    tc_aints(c, "axes", na, rax[a]);
                tc_ai(c, "keepdims", keep);
                c->oracle = or_reduce;
                /* oneDNN 2.6 has a jit reduction only over trailing axes and not for the
                 * p-norms: elsewhere only its ref, and the reference kernel runs the node */
                c->expect_onednn = a == 2 && o < 5;
                tc_check(c);
            }
}

/* ---- data movement ------------------------------------------------------------------------- */

static void cases_data(void)
{
    for (int ax = -1; ax < 3; ax++) {
        tc_t *c = tc_new("Concat");
        int64_t a = ax < 0 ? 2 : ax;
        int64_t s0[3] = {2, 3, 4}, s1[3] = {2, 3, 4}, s2[3] = {2, 3, 4}, y[3] = {2, 3, 4};
        s1[a] = 1, s2[a] = 5, y[a] = s0[a] + 1 + 5;
        tc_in(c, F32, 3, s0, 0, -1, 1);
        tc_in(c, F32, 3, s1, 0, -1, 1);
        tc_in(c, F32, 3, s2, 1, -1, 1);
        tc_out(c, 3, y);
        tc_ai(c, "axis", ax);
        c->axis = a, c->oracle = or_concat;
        tc_check(c);
    }
    const int64_t perms[5][4] = {{1, 0}, {0, 2, 1}, {2, 0, 1}, {0, 1, 3, 2}, {3, 1, 0, 2}};
    const int ranks[5] = {2, 3, 3, 4, 4};
    const int64_t x[4] = {2, 3, 4, 5};
    for (int i = 0; i < 6; i++) {
        tc_t *c = tc_new("Transpose");
        int r = i < 5 ? ranks[i] : 3;
        int64_t y[4];
        for (int k = 0; k < r; k++) {
            c->perm[k] = i < 5 ? perms[i][k] : r - 1 - k; /* the last: no perm = reverse */
            y[k] = x[c->perm[k]];
        }
        tc_in(c, F32, r, x, 0, -1, 1);
        tc_out(c, r, y);
        if (i < 5)
            tc_aints(c, "perm", r, c->perm);
        c->oracle = or_transpose;
        tc_check(c);
    }
    const af_dtype_t from[4] = {AF_DTYPE_F32, AF_DTYPE_I32, AF_DTYPE_U8, AF_DTYPE_BOOL};
    for (int i = 0; i < 4; i++) {
        tc_t *c = tc_new("Cast");
        tc_in(c, from[i], NSH(3, 7), 0,
              from[i] == AF_DTYPE_BOOL ? 0
              : from[i] == AF_DTYPE_U8 ? 0
                                       : -50,
              from[i] == AF_DTYPE_BOOL ? 1.99f : 200);
        tc_out(c, NSH(3, 7));
        tc_ai(c, "to", 1);
        c->oracle = or_cast;
        tc_check(c);
    }
}

static void resize_case(int linear, int coord, int nearest, int r, const int64_t *x,
                        const int64_t *y, int scales_input)
{
    static const char *coords[] = {"half_pixel", "pytorch_half_pixel", "asymmetric"};
    static const char *nmodes[] = {"round_prefer_floor", "round_prefer_ceil", "floor"};
    tc_t *c = tc_new("Resize");
    tc_in(c, F32, r, x, 0, -2, 2);
    /* as imported: the omitted roi dropped, then scales (f32) or sizes (i64) */
    tc_in(c, scales_input ? F32 : AF_DTYPE_I64, 1, SH(r), 1, 0, 0);
    for (int i = 0; i < r; i++)
        c->in[1].fixed[i] = scales_input ? (double)y[i] / (double)x[i] : (double)y[i];
    c->in[1].n_fixed = r;
    tc_out(c, r, y);
    tc_as(c, "mode", linear ? "linear" : "nearest");
    tc_as(c, "coordinate_transformation_mode", coords[coord]);
    if (!linear)
        tc_as(c, "nearest_mode", nmodes[nearest]);
    c->flag = linear, c->perm[0] = coord, c->perm[1] = nearest, c->oracle = or_resize;
    tc_check(c);
}

static void cases_resize(void)
{
    resize_case(0, 0, 0, 4, SH(1, 2, 3, 4), SH(1, 2, 6, 8), 0);
    /* Scales given as an input are checked against output / input at session creation, from
     * the constants a session starts with; until graphs carry their weights (the session fills
     * them with a pattern) only sizes inputs can be tested here. */
    resize_case(0, 0, 1, 4, SH(1, 2, 3, 4), SH(1, 2, 9, 8), 0);
    resize_case(0, 2, 2, 4, SH(2, 1, 3, 4), SH(2, 1, 9, 12), 0);
    resize_case(0, 1, 0, 3, SH(1, 3, 5), SH(1, 3, 10), 0);
    resize_case(1, 0, 0, 4, SH(1, 2, 3, 4), SH(1, 2, 6, 8), 0);
    resize_case(1, 0, 0, 4, SH(1, 2, 5, 4), SH(1, 2, 7, 9), 0);
    resize_case(1, 1, 0, 4, SH(1, 2, 5, 4), SH(1, 2, 3, 9), 0);
    resize_case(1, 0, 0, 5, SH(1, 1, 2, 3, 4), SH(1, 1, 4, 5, 6), 0);
}

/* ---- teams and concurrency ----------------------------------------------------------------- */

static void cases_teams(void)
{
    /* Large nodes on two workers: each runs with a team of two (a chain: intra-op). */
    tc_t *c = tc_new("Conv");
    c->sp = 2;
    for (int i = 0; i < 2; i++)
        c->k[i] = 3, c->s[i] = 1, c->d[i] = 1, c->pl[i] = 1, c->pr[i] = 1;
    tc_in(c, F32, NSH(1, 16, 40, 40), 0, -1, 1);
    tc_in(c, F32, NSH(32, 16, 3, 3), 1, -1, 1);
    tc_in(c, F32, NSH(32), 1, -1, 1);
    tc_out(c, NSH(1, 32, 40, 40));
    tc_aints(c, "pads", 4, SH(1, 1, 1, 1));
    c->oracle = or_conv;
    c->cost = 2.0 * 32 * 16 * 9 * 40 * 40; /* FLOPs, as the ONNX importer estimates them */
    tc_check_threads(c, 2);
    assert_int_equal(last_team, 2);
    c = tc_new("MatMul");
    tc_in(c, F32, NSH(256, 96), 0, -1, 1);
    tc_in(c, F32, NSH(96, 256), 1, -1, 1);
    tc_out(c, NSH(256, 256));
    c->oracle = or_matmul;
    c->cost = 2.0 * 256 * 96 * 256;
    tc_check_threads(c, 2);
    assert_int_equal(last_team, 2);
    /* a small node runs alone even with two workers */
    c = tc_new("Relu");
    tc_in(c, F32, NSH(64), 0, -1, 1);
    tc_out(c, NSH(64));
    c->oracle = or_unary_all;
    c->cost = 64;
    tc_check_threads(c, 2);
    assert_int_equal(last_team, 1);
}

#endif
