/*
 * Model-zoo builder core: tensor and node creation with shape tracking and scoped names, and
 * the zoo registry (af_zoo_build). Invariant: after the first failing call z->rc holds the error
 * and no further tensor or node is added, so generators need no per-call error checks. The
 * recorded op list (z->ops) mirrors the node insertion order; zb_backward() walks it backwards.
 */
#include "zoo/zoo_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int zb_init(zb_t *z, af_error_t *err)
{
    memset(z, 0, sizeof(*z));
    z->err = err;
    z->rng = 0x9E3779B97F4A7C15ull;
    z->rc = af_graph_create(&z->g);
    if (z->rc && err) {
        err->code = z->rc;
        snprintf(err->msg, sizeof(err->msg), "out of memory");
    }
    return z->rc;
}

static void zb_free(zb_t *z)
{
    for (size_t i = 0; i < z->n_t; i++)
        af__free(z->t[i].name);
    af__free(z->t);
    af__free(z->ops);
    z->t = NULL;
    z->ops = NULL;
}

int zb_finish(zb_t *z, af_graph_t **out)
{
    if (!z->rc)
        z->rc = af_graph_finalize(z->g, z->err);
    zb_free(z);
    if (z->rc) {
        af_graph_destroy(z->g);
        z->g = NULL;
        return z->rc;
    }
    *out = z->g;
    z->g = NULL;
    return 0;
}

void zb_scope(zb_t *z, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(z->scope, sizeof(z->scope), fmt, ap);
    va_end(ap);
}

static zshape_t zs_make(int rank, int64_t a, int64_t b, int64_t c, int64_t d)
{
    zshape_t s;
    memset(&s, 0, sizeof(s));
    s.rank = rank;
    s.d[0] = a;
    s.d[1] = b;
    s.d[2] = c;
    s.d[3] = d;
    return s;
}

zshape_t zs1(int64_t a)
{
    return zs_make(1, a, 0, 0, 0);
}

zshape_t zs2(int64_t a, int64_t b)
{
    return zs_make(2, a, b, 0, 0);
}

zshape_t zs3(int64_t a, int64_t b, int64_t c)
{
    return zs_make(3, a, b, c, 0);
}

zshape_t zs4(int64_t a, int64_t b, int64_t c, int64_t d)
{
    return zs_make(4, a, b, c, d);
}

int64_t zs_numel(const zshape_t *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->d[i];
    return n;
}

static const zshape_t zero_shape;

const zshape_t *zb_shape(const zb_t *z, zt t)
{
    if (z->rc || t < 0 || (size_t)t >= z->n_t)
        return &zero_shape;
    return &z->t[t].s;
}

uint64_t zb_rand(zb_t *z)
{
    uint64_t x = (z->rng += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static zt add_tensor(zb_t *z, char *name, af_dtype_t dt, zshape_t s, af_tensor_kind_t kind,
                     const char *alias_of)
{
    if (z->rc) {
        af__free(name);
        return 0;
    }
    if (!name) {
        z->rc = AF_ENOMEM;
        return 0;
    }
    if (z->n_t == z->cap_t) {
        size_t cap = z->cap_t ? z->cap_t * 2 : 256;
        zb_rec_t *t = af__realloc(z->t, cap * sizeof(*t));
        if (!t) {
            af__free(name);
            z->rc = AF_ENOMEM;
            return 0;
        }
        z->t = t;
        z->cap_t = cap;
    }
    af_tensor_desc_t d = {.name = name,
                          .bytes = AF_BYTES_FROM_SHAPE,
                          .dtype = dt,
                          .rank = s.rank,
                          .shape = s.d,
                          .kind = kind,
                          .alias_of = alias_of};
    z->rc = af_graph_add_tensor(z->g, &d, NULL, z->err);
    if (z->rc) {
        af__free(name);
        return 0;
    }
    z->t[z->n_t] = (zb_rec_t){.name = name, .s = s, .dt = dt, .kind = kind};
    return (zt)z->n_t++;
}

static char *fmt_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *fmt_name(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return af__strdup(buf);
}

zt zb_input(zb_t *z, const char *name, af_dtype_t dt, zshape_t s)
{
    return add_tensor(z, fmt_name("%s", name), dt, s, AF_TENSOR_INPUT, NULL);
}

zt zb_const(zb_t *z, const char *suffix, af_dtype_t dt, zshape_t s)
{
    return add_tensor(z, fmt_name("%s/%s%d.%s", z->scope, "w", z->counter, suffix), dt, s,
                      AF_TENSOR_CONSTANT, NULL);
}

static int record_op(zb_t *z, const char *op, const zt *in, int n_in, const zt *out, int n_out,
                     double flops)
{
    if (!z->record)
        return 0;
    if (z->n_ops == z->cap_ops) {
        size_t cap = z->cap_ops ? z->cap_ops * 2 : 256;
        zb_op_t *o = af__realloc(z->ops, cap * sizeof(*o));
        if (!o)
            return z->rc = AF_ENOMEM;
        z->ops = o;
        z->cap_ops = cap;
    }
    zb_op_t *o = &z->ops[z->n_ops++];
    o->op = op;
    o->n_in = n_in;
    o->n_out = n_out;
    o->flops = flops;
    memcpy(o->in, in, (size_t)n_in * sizeof(zt));
    memcpy(o->out, out, (size_t)n_out * sizeof(zt));
    return 0;
}

/* A Reshape-like op whose single output is a view (alias) of input 0. */
static zt zb_view_op(zb_t *z, const char *op, zt x, zshape_t s)
{
    if (z->rc)
        return 0;
    int32_t k = ++z->counter;
    char node[200];
    snprintf(node, sizeof(node), "%s/%s%d", z->scope, op, k);
    zt y =
        add_tensor(z, fmt_name("%s:0", node), z->t[x].dt, s, AF_TENSOR_INTERMEDIATE, z->t[x].name);
    if (z->rc)
        return 0;
    const char *in[1] = {z->t[x].name}, *out[1] = {z->t[y].name};
    af_node_desc_t d = {.name = node,
                        .op = op,
                        .inputs = in,
                        .n_inputs = 1,
                        .outputs = out,
                        .n_outputs = 1,
                        .cost = 1};
    z->rc = af_graph_add_node(z->g, &d, NULL, z->err);
    if (!z->rc)
        record_op(z, op, &x, 1, &y, 1, 1);
    return z->rc ? 0 : y;
}

zt L_reshape(zb_t *z, zt x, zshape_t s)
{
    return zb_view_op(z, "Reshape", x, s);
}

zt zb_op(zb_t *z, const char *op, const zt *in, int n_in, const zshape_t *out_s, int n_out,
         af_dtype_t out_dt, double flops, int inplace_in, zt *outs)
{
    if (z->rc)
        return 0;
    if (n_in > ZB_MAX_IO || n_out > ZB_MAX_IO || n_out < 1) {
        z->rc = AF_EINVAL;
        return 0;
    }
    int32_t k = ++z->counter;
    char node[200];
    snprintf(node, sizeof(node), "%s/%s%d", z->scope, op, k);
    zt o[ZB_MAX_IO];
    const char *in_names[ZB_MAX_IO], *out_names[ZB_MAX_IO];
    for (int i = 0; i < n_in; i++)
        in_names[i] = z->t[in[i]].name;
    af_dtype_t dt = out_dt != AF_DTYPE_UNKNOWN ? out_dt : (n_in ? z->t[in[0]].dt : AF_DTYPE_F32);
    for (int i = 0; i < n_out; i++) {
        af_tensor_kind_t kind = z->use_out_kind ? z->out_kind[i] : AF_TENSOR_INTERMEDIATE;
        o[i] = add_tensor(z, fmt_name("%s:%d", node, i), dt, out_s[i], kind, NULL);
        if (z->rc)
            return 0;
        out_names[i] = z->t[o[i]].name;
    }
    z->use_out_kind = 0;
    af_inplace_t hint = {.output = 0, .input = inplace_in};
    af_node_desc_t d = {.name = node,
                        .op = op,
                        .inputs = in_names,
                        .n_inputs = n_in,
                        .outputs = out_names,
                        .n_outputs = n_out,
                        .cost = flops > 1 ? flops : 1,
                        .inplace = inplace_in >= 0 ? &hint : NULL,
                        .n_inplace = inplace_in >= 0 ? 1 : 0};
    z->rc = af_graph_add_node(z->g, &d, NULL, z->err);
    if (z->rc)
        return 0;
    record_op(z, op, in, n_in, o, n_out, flops);
    if (outs)
        memcpy(outs, o, (size_t)n_out * sizeof(zt));
    return o[0];
}

zt zb_output(zb_t *z, zt t, const char *name)
{
    if (z->rc)
        return 0;
    zt y = add_tensor(z, fmt_name("%s", name), z->t[t].dt, z->t[t].s, AF_TENSOR_OUTPUT, NULL);
    if (z->rc)
        return 0;
    const char *in[1] = {z->t[t].name}, *out[1] = {name};
    char node[200];
    snprintf(node, sizeof(node), "%s/Identity%d", z->scope, ++z->counter);
    af_node_desc_t d = {.name = node,
                        .op = "Identity",
                        .inputs = in,
                        .n_inputs = 1,
                        .outputs = out,
                        .n_outputs = 1,
                        .cost = (double)zs_numel(&z->t[t].s)};
    z->rc = af_graph_add_node(z->g, &d, NULL, z->err);
    return z->rc ? 0 : y;
}

/* ---- registry ---------------------------------------------------------------------------- */

typedef int (*zoo_fn)(zb_t *z, const af_zoo_opts_t *o);

/* One row per model; zoo_fns[] is parallel to it. */
static const af_zoo_entry_t zoo_entries[] = {
    {"resnet50", AF_ZOO_INFERENCE, "ResNet-50 v1.5, 224x224 (Conv/BN/Relu unfused)"},
    {"mobilenetv2", AF_ZOO_INFERENCE, "MobileNetV2 1.0, 224x224 (inverted residuals)"},
    {"inception3", AF_ZOO_INFERENCE, "Inception-v3, 299x299 (A/B/C/D/E blocks, concats)"},
    {"unet", AF_ZOO_INFERENCE, "UNet, 256x256, 64..1024 channels, long skip connections"},
    {"bert", AF_ZOO_INFERENCE, "BERT-base, 12 layers, hidden 768, 12 heads, seq 128"},
    {"gpt2", AF_ZOO_INFERENCE, "GPT-2 small, 12 layers, hidden 768, seq 1024, LM head"},
    {"randwire", AF_ZOO_RANDOM, "RandWire-WS(32,4,0.75), 3 random stages, 224x224"},
    {"darts", AF_ZOO_RANDOM, "DARTS-V2 cell network, 20 cells, C=36, 32x32 (NAS)"},
    {"resnet50-train", AF_ZOO_TRAINING, "ResNet-50 forward + backward, saved activations"},
    {"bert-train", AF_ZOO_TRAINING, "BERT-base forward + backward, saved activations"},
    {"vgg16-train", AF_ZOO_TRAINING, "VGG-16, 224x224, forward + backward"},
    {"vgg19-train", AF_ZOO_TRAINING, "VGG-19, 224x224, forward + backward"},
    {"mobilenetv2-train", AF_ZOO_TRAINING, "MobileNetV2 1.0, 224x224, forward + backward"},
    {"unet-train", AF_ZOO_TRAINING, "UNet 256x256 segmentation, forward + backward (batch 2)"},
    {"bert20-train", AF_ZOO_TRAINING,
     "BERT-base width, 20 layers, forward + backward (~1,000 nodes)"},
    {"resmlp-train", AF_ZOO_TRAINING,
     "residual MLP, 3 blocks of 256, batch 512, forward + backward"},
    {"convnet-train", AF_ZOO_TRAINING, "small CNN, 32x32, 6 Conv-BN-Relu, forward + backward"},
};
static const zoo_fn zoo_fns[] = {
    zoo_resnet50,
    zoo_mobilenetv2,
    zoo_inception3,
    zoo_unet,
    zoo_bert,
    zoo_gpt2,
    zoo_randwire,
    zoo_darts,
    zoo_resnet50_train,
    zoo_bert_train,
    zoo_vgg16_train,
    zoo_vgg19_train,
    zoo_mobilenetv2_train,
    zoo_unet_train,
    zoo_bert20_train,
    zoo_resmlp_train,
    zoo_convnet_train,
};
_Static_assert(sizeof(zoo_entries) / sizeof(zoo_entries[0]) == sizeof(zoo_fns) / sizeof(zoo_fns[0]),
               "zoo tables out of step");

#define ZOO_COUNT (sizeof(zoo_fns) / sizeof(zoo_fns[0]))

void af_zoo_opts_init(af_zoo_opts_t *o)
{
    memset(o, 0, sizeof(*o));
}

const af_zoo_entry_t *af_zoo_list(size_t *n)
{
    if (n)
        *n = ZOO_COUNT;
    return zoo_entries;
}

const af_zoo_entry_t *af_zoo_find(const char *name)
{
    for (size_t i = 0; name && i < ZOO_COUNT; i++)
        if (strcmp(zoo_entries[i].name, name) == 0)
            return &zoo_entries[i];
    return NULL;
}

static int set_err(af_error_t *err, int code, const char *msg)
{
    if (err) {
        err->code = code;
        snprintf(err->msg, sizeof(err->msg), "%s", msg);
    }
    return code;
}

int af_zoo_build(const char *name, const af_zoo_opts_t *o, af_graph_t **out, af_error_t *err)
{
    af_zoo_opts_t def;
    if (!o) {
        af_zoo_opts_init(&def);
        o = &def;
    }
    if (!out)
        return set_err(err, AF_EINVAL, "af_zoo_build: out is NULL");
    const af_zoo_entry_t *e = af_zoo_find(name);
    if (!e) {
        char msg[AF_ERROR_MSG_MAX];
        int len = snprintf(msg, sizeof(msg), "unknown zoo model '%s' (known:", name ? name : "");
        for (size_t i = 0; i < ZOO_COUNT && len > 0 && (size_t)len < sizeof(msg); i++)
            len += snprintf(msg + len, sizeof(msg) - (size_t)len, " %s", zoo_entries[i].name);
        if (len > 0 && (size_t)len < sizeof(msg) - 1)
            snprintf(msg + len, sizeof(msg) - (size_t)len, ")");
        return set_err(err, AF_ENOENT, msg);
    }
    if (o->batch < 0 || o->batch > 4096)
        return set_err(err, AF_EINVAL, "batch must be in 1..4096");
    if (o->seq < 0 || o->seq > 65536)
        return set_err(err, AF_EINVAL, "seq must be in 1..65536");
    zb_t z;
    if (zb_init(&z, err))
        return z.rc;
    if (o->seed)
        z.rng = o->seed;
    af_graph_set_name(z.g, e->name);
    int rc = zoo_fns[e - zoo_entries](&z, o);
    if (rc && !z.rc)
        z.rc = rc;
    if (z.rc == AF_ENOMEM && err && !err->msg[0])
        set_err(err, AF_ENOMEM, "out of memory building the model");
    return zb_finish(&z, out);
}
