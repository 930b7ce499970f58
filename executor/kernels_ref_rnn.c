/*
 * Reference kernels — recurrent layers: RNN, GRU (linear_before_reset), LSTM (peepholes,
 * input_forget), forward / reverse / bidirectional, layout 0 ([seq, batch, ...]) and 1
 * ([batch, seq, ...]), sequence_lens (steps past a sequence's length leave its state alone and
 * write zeros to Y), initial_h / initial_c, clip, and the activation functions by name
 * (attribute "activations", which the importer carries as one comma-separated string) with
 * activation_alpha / activation_beta.
 *
 * Gates in ONNX order (LSTM i, o, f, c; GRU z, r, h). Per direction and time step every batch
 * row's gates are computed from its previous state; state and gates live in a bounded stack
 * frame (KR_RNN_MAX doubles: 2 x batch x hidden for H and C plus 4 x hidden for the gates),
 * larger problems are refused at bind time. Pure functions.
 */
#include "executor/kernels_ref.h"

#define KR_RNN_MAX 6144 /* doubles of state on the stack: 48 KiB */

enum { K_RNN, K_GRU, K_LSTM };

typedef struct act {
    int fn; /* index into act_names */
    double alpha, beta;
} act_t;

static const char *const act_names[] = {
    "Sigmoid",    "Tanh",        "Relu", "Affine",   "LeakyRelu", "ThresholdedRelu",
    "ScaledTanh", "HardSigmoid", "Elu",  "Softsign", "Softplus"};

static double act_apply(const act_t *a, double x)
{
    switch (a->fn) {
    case 0:
        return 1.0 / (1.0 + exp(-x));
    case 2:
        return x > 0 ? x : 0;
    case 3:
        return a->alpha * x + a->beta;
    case 4:
        return x >= 0 ? x : a->alpha * x;
    case 5:
        return x > a->alpha ? x : 0;
    case 6:
        return a->alpha * tanh(a->beta * x);
    case 7: {
        double v = a->alpha * x + a->beta;
        return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case 8:
        return x >= 0 ? x : a->alpha * (exp(x) - 1);
    case 9:
        return x / (1 + fabs(x));
    case 10:
        return log1p(exp(x));
    default:
        return tanh(x);
    }
}

/* Default alpha/beta of the activations that take them (ONNX's table). */
static void act_defaults(act_t *a)
{
    static const double al[] = {0, 0, 0, 1.0, 0.01, 1.0, 1.0, 0.2, 1.0, 0, 0};
    static const double be[] = {0, 0, 0, 0, 0, 0, 1.0, 0.5, 0, 0, 0};
    a->alpha = al[a->fn];
    a->beta = be[a->fn];
}

typedef struct rnn {
    int kind, dirs, layout, lbr, input_forget;
    int64_t seq, batch, in, hid, gates;
    double clip;
    act_t act[6]; /* per direction: f, g, h (RNN: f only; GRU: f, g) */
} rnn_t;

/* Activations from the attribute list, or the defaults of the op. 0 or -1 (unknown name). */
static int rnn_acts(const af_graph_t *g, int32_t node, rnn_t *r)
{
    int per = r->kind == K_RNN ? 1 : r->kind == K_GRU ? 2 : 3;
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 3; k++) {
            r->act[d * 3 + k].fn = r->kind == K_RNN || k > 0 ? 1 : 0; /* Tanh, or Sigmoid for f */
            act_defaults(&r->act[d * 3 + k]);
        }
    const char *list = kr_attr_s(g, node, "activations", NULL);
    const af_attr_t *al = af_graph_node_attr(g, node, "activation_alpha");
    const af_attr_t *be = af_graph_node_attr(g, node, "activation_beta");
    for (int i = 0; list && *list && i < per * r->dirs; i++) {
        size_t n = strcspn(list, ",");
        int found = -1;
        for (int k = 0; k < (int)AF_ARRAY_SIZE(act_names); k++)
            if (strlen(act_names[k]) == n && !strncmp(list, act_names[k], n))
                found = k;
        if (found < 0)
            return -1;
        act_t *a = &r->act[(i / per) * 3 + i % per];
        a->fn = found;
        act_defaults(a);
        if (al && al->type == AF_ATTR_FLOATS && i < al->n)
            a->alpha = al->floats[i];
        if (be && be->type == AF_ATTR_FLOATS && i < be->n)
            a->beta = be->floats[i];
        list += n + (list[n] == ',');
    }
    return 0;
}

static int rnn_geom(const af_graph_t *g, int32_t node, int kind, rnn_t *r, af_error_t *err)
{
    kr_shape_t sx, sw;
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->gates = kind == K_RNN ? 1 : kind == K_GRU ? 3 : 4;
    if (kr_shape_of(g, kr_in_tensor(g, node, 0), &sx) ||
        kr_shape_of(g, kr_in_tensor(g, node, 1), &sw) || sx.rank != 3 || sw.rank != 3)
        return kr_unsup(err, "X and W must be static and of rank 3");
    const char *dir = kr_attr_s(g, node, "direction", "forward");
    r->dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
    r->layout = (int)kr_attr_i(g, node, "layout", 0);
    r->seq = sx.d[r->layout ? 1 : 0];
    r->batch = sx.d[r->layout ? 0 : 1];
    r->in = sx.d[2];
    r->hid = kr_attr_i(g, node, "hidden_size", sw.d[1] / r->gates);
    r->lbr = (int)kr_attr_i(g, node, "linear_before_reset", 0);
    r->input_forget = (int)kr_attr_i(g, node, "input_forget", 0);
    r->clip = kr_attr_f(g, node, "clip", 0);
    if (strcmp(dir, "forward") && strcmp(dir, "reverse") && r->dirs != 2)
        return kr_unsup(err, "direction '%s'", dir);
    if (sw.d[0] != r->dirs || sw.d[1] != r->gates * r->hid || sw.d[2] != r->in)
        return kr_unsup(err, "W of shape [%lld, %lld, %lld]", (long long)sw.d[0],
                        (long long)sw.d[1], (long long)sw.d[2]);
    if (2 * r->batch * r->hid + 4 * r->hid > KR_RNN_MAX)
        return kr_unsup(err, "batch x hidden_size %lld above the %d-element stack bound",
                        (long long)(r->batch * r->hid), KR_RNN_MAX / 2);
    if (rnn_acts(g, node, r))
        return kr_unsup(err, "activations '%s'", kr_attr_s(g, node, "activations", ""));
    return 0;
}

/* Element (t, d, b, j) of Y, or (d, b, j) of Y_h / Y_c, under the layout. */
static int64_t y_at(const rnn_t *r, int64_t t, int64_t d, int64_t b, int64_t j)
{
    return r->layout ? ((b * r->seq + t) * r->dirs + d) * r->hid + j
                     : ((t * r->dirs + d) * r->batch + b) * r->hid + j;
}
static int64_t h_at(const rnn_t *r, int64_t d, int64_t b, int64_t j)
{
    return r->layout ? (b * r->dirs + d) * r->hid + j : (d * r->batch + b) * r->hid + j;
}

typedef struct rio {
    const void *x, *w, *rw, *b, *h0, *c0, *p;
    int64_t lens_n;
    af_dtype_t dt;
} rio_t;

/* Wx + Rh + biases of gate row q (0 .. gates*hid) for batch row b at step t, direction d. */
static double gate_in(const rnn_t *r, const rio_t *io, int64_t d, int64_t t, int64_t b,
                      const double *h, int64_t q, int with_r)
{
    double s = 0;
    int64_t xrow = r->layout ? (b * r->seq + t) * r->in : (t * r->batch + b) * r->in;
    if (io->dt == AF_DTYPE_F32) { /* the same sums, without a dtype switch per element */
        const float *x = (const float *)io->x + xrow;
        const float *w = (const float *)io->w + (d * r->gates * r->hid + q) * r->in;
        const float *rw = (const float *)io->rw + (d * r->gates * r->hid + q) * r->hid;
        for (int64_t k = 0; k < r->in; k++)
            s += (double)x[k] * (double)w[k];
        for (int64_t k = 0; with_r && k < r->hid; k++)
            s += h[k] * (double)rw[k];
    }
    for (int64_t k = 0; io->dt != AF_DTYPE_F32 && k < r->in; k++)
        s += af__elem_load(io->dt, io->x, xrow + k) *
             af__elem_load(io->dt, io->w, (d * r->gates * r->hid + q) * r->in + k);
    for (int64_t k = 0; io->dt != AF_DTYPE_F32 && with_r && k < r->hid; k++)
        s += h[k] * af__elem_load(io->dt, io->rw, (d * r->gates * r->hid + q) * r->hid + k);
    if (io->b)
        s += af__elem_load(io->dt, io->b, d * 2 * r->gates * r->hid + q) +
             (with_r ? af__elem_load(io->dt, io->b, (d * 2 + 1) * r->gates * r->hid + q) : 0);
    return s;
}

static double clipv(const rnn_t *r, double v)
{
    return r->clip > 0 ? (v < -r->clip ? -r->clip : v > r->clip ? r->clip : v) : v;
}

/* One step of one batch row: h (and c) updated in place; gate scratch in gt (4 x hid). */
static void step(const rnn_t *r, const rio_t *io, int64_t d, int64_t t, int64_t b, double *h,
                 double *c, double *gt)
{
    const act_t *f = &r->act[d * 3], *g = &r->act[d * 3 + 1], *hh = &r->act[d * 3 + 2];
    int64_t H = r->hid;
    if (r->kind == K_RNN) {
        for (int64_t j = 0; j < H; j++)
            gt[j] = act_apply(f, clipv(r, gate_in(r, io, d, t, b, h, j, 1)));
        memcpy(h, gt, (size_t)H * sizeof(double));
        return;
    }
    if (r->kind == K_GRU) {
        for (int64_t j = 0; j < 2 * H; j++) /* z, r */
            gt[j] = act_apply(f, clipv(r, gate_in(r, io, d, t, b, h, j, 1)));
        for (int64_t j = 0; j < H; j++) {
            int64_t q = 2 * H + j, base = d * r->gates * H + q;
            double rh = 0, xin = gate_in(r, io, d, t, b, h, q, 0);
            double rb = io->b ? af__elem_load(io->dt, io->b, (d * 2 + 1) * r->gates * H + q) : 0;
            for (int64_t k = 0; k < H; k++) {
                double rk = af__elem_load(io->dt, io->rw, base * H + k);
                rh += (r->lbr ? h[k] : gt[H + k] * h[k]) * rk;
            }
            double v = r->lbr ? xin + gt[H + j] * (rh + rb) : xin + rh + rb;
            gt[2 * H + j] = act_apply(g, clipv(r, v));
        }
        for (int64_t j = 0; j < H; j++)
            h[j] = (1 - gt[j]) * gt[2 * H + j] + gt[j] * h[j];
        return;
    }
    for (int64_t j = 0; j < 4 * H; j++) /* i, o, f, c pre-activations */
        gt[j] = gate_in(r, io, d, t, b, h, j, 1);
    for (int64_t j = 0; j < H; j++) {
        double pi = io->p ? af__elem_load(io->dt, io->p, d * 3 * H + j) : 0;
        double po = io->p ? af__elem_load(io->dt, io->p, d * 3 * H + H + j) : 0;
        double pf = io->p ? af__elem_load(io->dt, io->p, d * 3 * H + 2 * H + j) : 0;
        double it = act_apply(f, clipv(r, gt[j] + pi * c[j]));
        double ft = r->input_forget ? 1 - it : act_apply(f, clipv(r, gt[2 * H + j] + pf * c[j]));
        double ct = act_apply(g, clipv(r, gt[3 * H + j]));
        c[j] = ft * c[j] + it * ct;
        double ot = act_apply(f, clipv(r, gt[H + j] + po * c[j]));
        h[j] = ot * act_apply(hh, c[j]);
    }
}

static int recurrent(const af_kernel_args_t *a, int kind)
{
    rnn_t r;
    if (rnn_geom(a->graph, a->node, kind, &r, NULL) || kr_in_ok(a, 0) || kr_in_ok(a, 1) ||
        kr_in_ok(a, 2))
        return AF_ESHAPE;
    rio_t io = {.x = a->inputs[0],
                .w = kr_in(a, 1, NULL, NULL),
                .rw = kr_in(a, 2, NULL, NULL),
                .b = kr_in(a, 3, NULL, NULL),
                .h0 = kr_in(a, 5, NULL, NULL),
                .c0 = kind == K_LSTM ? kr_in(a, 6, NULL, NULL) : NULL,
                .p = kind == K_LSTM ? kr_in(a, 7, NULL, NULL) : NULL,
                .dt = kr_dtype(a->graph, a->info->inputs[0])};
    for (int32_t p = 3; p < 8; p++)
        if (kr_in_index(a->graph, a->node, p) >= 0 && kr_in_ok(a, p))
            return AF_ESHAPE;
    for (int32_t k = 0; k < 3; k++)
        if (kr_out_index(a->graph, a->node, k) >= 0 && kr_out_ok(a, k))
            return AF_ESHAPE;
    void *y = kr_out(a, 0, NULL, NULL), *yh = kr_out(a, 1, NULL, NULL);
    void *yc = kind == K_LSTM ? kr_out(a, 2, NULL, NULL) : NULL;
    int64_t lens[1024], B = r.batch, H = r.hid;
    int32_t nl = kr_in_ints(a, 4, lens, 1024);
    if (nl > 0 && nl != B)
        return AF_ESHAPE;
    double st[KR_RNN_MAX]; /* fits: rnn_geom bounds 2 B H + 4 H */
    double *h = st, *c = st + B * H, *gt = st + 2 * B * H;
    for (int64_t d = 0; d < r.dirs; d++) {
        int rev = d == 1 || !strcmp(kr_attr_s(a->graph, a->node, "direction", ""), "reverse");
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++) {
                h[b * H + j] = io.h0 ? af__elem_load(io.dt, io.h0, h_at(&r, d, b, j)) : 0;
                c[b * H + j] = io.c0 ? af__elem_load(io.dt, io.c0, h_at(&r, d, b, j)) : 0;
            }
        for (int64_t s = 0; s < r.seq; s++)
            for (int64_t b = 0; b < B; b++) {
                int64_t len = nl > 0 ? lens[b] : r.seq;
                int64_t t = rev ? len - 1 - s : s;
                if (s >= len) { /* past this sequence: Y gets zeros, the state stays */
                    for (int64_t j = 0; y && j < H; j++)
                        af__elem_store(io.dt, y, y_at(&r, s, d, b, j), 0);
                    continue;
                }
                step(&r, &io, d, t, b, h + b * H, c + b * H, gt);
                for (int64_t j = 0; y && j < H; j++)
                    af__elem_store(io.dt, y, y_at(&r, t, d, b, j), h[b * H + j]);
            }
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++) {
                if (yh)
                    af__elem_store(io.dt, yh, h_at(&r, d, b, j), h[b * H + j]);
                if (yc)
                    af__elem_store(io.dt, yc, h_at(&r, d, b, j), c[b * H + j]);
            }
    }
    return 0;
}

static int rnn_check(const af_graph_t *g, int32_t node, int kind, af_error_t *err)
{
    rnn_t r;
    int rc = kr_check_in(g, node, 0, KR_FLOATS, err);
    for (int32_t p = 1; !rc && p < 8; p++)
        rc = p == 4 ? kr_check_in(g, node, p, KR_DT(I32) | KR_DT(I64), err)
                    : kr_check_in(g, node, p, KR_FLOATS, err);
    if (rc || (rc = rnn_geom(g, node, kind, &r, err)))
        return rc;
    if (r.batch > 1024)
        return kr_unsup(err, "batch above 1024");
    return 0;
}

#define RECURRENT(NAME, KIND)                                                                      \
    static int k_##NAME(const af_kernel_args_t *a)                                                 \
    {                                                                                              \
        return recurrent(a, KIND);                                                                 \
    }                                                                                              \
    static int c_##NAME(const af_graph_t *g, int32_t n, af_error_t *e)                             \
    {                                                                                              \
        return rnn_check(g, n, KIND, e);                                                           \
    }

RECURRENT(RNN, K_RNN)
RECURRENT(GRU, K_GRU)
RECURRENT(LSTM, K_LSTM)

#define ROW(NAME)                                                                                  \
    {                                                                                              \
        .op = #NAME, .fn = k_##NAME, .check = c_##NAME                                             \
    }

const af__kernel_entry_t af__kref_rnn[] = {
    ROW(RNN),
    ROW(GRU),
    ROW(LSTM),
    {.op = NULL},
};
