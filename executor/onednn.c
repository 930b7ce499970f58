/*
 * The oneDNN kernel set: backend context, prepared node states, the one run kernel, and the
 * helpers the op files build nodes with (onednn_int.h has the model).
 *
 * Backend: one CPU engine per program and one stream per worker (a stream is used by one thread
 * only). The Debian build of oneDNN runs on OpenMP: a primitive opens a team of the size the
 * creating thread had (omp_get_max_threads()) when it was made, so teams are set with
 * omp_set_num_threads() around creation (prepare.c) and on the worker before it runs the node
 * (session.c). The OpenMP calls are declared here rather than taken from <omp.h>, which only
 * some compilers ship.
 *
 * Run: per step, each argument's handle is set on the worker's own memory object when it
 * changed since that worker last ran the node (an arena offset stays the same from round to
 * round when the pool hands out the same arena; setting a handle costs about 11 ns anyway,
 * docs/executor.md), then the primitive executes on the worker's stream. Working memory comes
 * from a->scratch (the node's planned scratch tensor) at the offsets reserved while building.
 *
 * Thread-safety: a state is written only while it is built and released (no round runs the
 * program then); at run time each worker touches its own memory objects only.
 */
#include "executor/onednn_int.h"

#include <oneapi/dnnl/dnnl_debug.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int omp_get_max_threads(void);
void omp_set_num_threads(int n);

/* ---- backend ------------------------------------------------------------------------------ */

static void ctx_destroy(void *p)
{
    odn_ctx_t *c = p;
    if (!c)
        return;
    for (int32_t i = 0; c->streams && i < c->workers; i++)
        if (c->streams[i])
            dnnl_stream_destroy(c->streams[i]);
    af__free(c->streams);
    if (c->eng)
        dnnl_engine_destroy(c->eng);
    af__free(c);
}

static int ctx_create(int32_t workers, void **out, af_error_t *err)
{
    odn_ctx_t *c = af__calloc(1, sizeof(*c));
    if (!c || !(c->streams = af__calloc((size_t)workers + 1, sizeof(dnnl_stream_t)))) {
        af__free(c);
        return af__err(err, AF_ENOMEM, "out of memory creating the oneDNN context");
    }
    c->workers = workers;
    dnnl_status_t s = dnnl_engine_create(&c->eng, dnnl_cpu, 0);
    for (int32_t i = 0; s == dnnl_success && i < workers; i++)
        s = dnnl_stream_create(&c->streams[i], c->eng, dnnl_stream_default_flags);
    if (s != dnnl_success) {
        ctx_destroy(c);
        return af__err(err, AF_ENOTSUP, "oneDNN: cannot create a CPU engine and streams: %s",
                       dnnl_status2str(s));
    }
    *out = c;
    return 0;
}

static void set_team(int32_t k)
{
    omp_set_num_threads(k > 0 ? k : 1);
}

static int32_t get_team(void)
{
    return omp_get_max_threads();
}

const af__backend_t af__onednn_backend = {
    .create = ctx_create,
    .destroy = ctx_destroy,
    .set_team = set_team,
    .get_team = get_team,
    .layouts = af__odn_layouts,
};

/* ---- node states -------------------------------------------------------------------------- */

static size_t mem_index(int32_t w, int s, int k)
{
    return ((size_t)w * ODN_MAX_STEPS + (size_t)s) * ODN_MAX_ARGS + (size_t)k;
}

void af__odn_release(void *state)
{
    odn_node_t *st = state;
    if (!st)
        return;
    size_t n = (size_t)st->workers * ODN_MAX_STEPS * ODN_MAX_ARGS;
    for (size_t i = 0; st->mem && i < n; i++)
        if (st->mem[i])
            dnnl_memory_destroy(st->mem[i]);
    for (int s = 0; s < st->n_steps; s++) {
        for (int k = 0; k < st->step[s].n; k++)
            if (st->step[s].a[k].fixed)
                dnnl_memory_destroy(st->step[s].a[k].fixed);
        if (st->step[s].prim)
            dnnl_primitive_destroy(st->step[s].prim);
    }
    for (int i = 0; i < st->n_raw; i++)
        af__free(st->raw[i]);
    af__free(st->mem);
    af__free(st->cur);
    af__free(st);
}

/* Memory objects for the arguments whose handle changes, one per worker. */
static int make_memories(odn_node_t *st)
{
    size_t n = (size_t)st->workers * ODN_MAX_STEPS * ODN_MAX_ARGS;
    st->mem = af__calloc(n, sizeof(dnnl_memory_t));
    st->cur = af__calloc(n, sizeof(void *));
    if (!st->mem || !st->cur)
        return AF_ENOMEM;
    for (int32_t w = 0; w < st->workers; w++)
        for (int s = 0; s < st->n_steps; s++)
            for (int k = 0; k < st->step[s].n; k++) {
                const odn_arg_t *a = &st->step[s].a[k];
                if (a->where == ODN_FIXED)
                    continue;
                if (dnnl_memory_create(&st->mem[mem_index(w, s, k)], &a->md, st->ctx->eng,
                                       DNNL_MEMORY_NONE) != dnnl_success)
                    return AF_ENOMEM;
            }
    return 0;
}

/*
 * One node is built at a time in the process (AF__RANK_ODN_BUILD). oneDNN's primitive cache
 * hands two threads that create the same primitive the same descriptor, published by
 * synchronisation inside libdnnl that ThreadSanitizer cannot see (the library is not
 * instrumented): a daemon building two instances of a model at once got a race report on the
 * memory descriptors read here. Building is prepare-time work, so the lock costs a parallel model
 * load, never a round.
 */
static uv_once_t build_once = UV_ONCE_INIT;
static uv_mutex_t build_mu; /* AF__RANK_ODN_BUILD */
static int build_mu_ok;

static void build_mu_init(void)
{
    build_mu_ok = uv_mutex_init(&build_mu) == 0;
}

static int prepare_locked(odn_prepare_fn fn, odn_build_t *b)
{
    uv_once(&build_once, build_mu_init);
    if (!build_mu_ok)
        return af__err(b->err, AF_ENOMEM, "cannot create the lock oneDNN nodes are built under");
    uv_mutex_lock(&build_mu);
    int rc = fn(b);
    uv_mutex_unlock(&build_mu);
    return rc;
}

int af__odn_prepare(const af__kprep_t *in, af__kprep_out_t *out, af_error_t *err, odn_prepare_fn fn)
{
    odn_build_t b = {.in = in, .ctx = in->backend, .err = err};
    const af_node_info_t *ni = af_graph_node(in->g, in->node);
    b.n_out = ni->n_outputs;
    if (b.n_out && af_graph_tensor(in->g, ni->outputs[b.n_out - 1])->kind == AF_TENSOR_SCRATCH)
        b.n_out--;
    if (!b.ctx)
        return af__err(err, AF_EINVAL, "oneDNN kernels need their backend context");
    /* oneDNN divides by a zero dimension when it creates the primitive (a MatMul of batch 0
     * raised SIGFPE): a node touching a tensor of no elements runs the reference kernel */
    for (int32_t k = 0; k < ni->n_inputs + b.n_out; k++) {
        int32_t t = k < ni->n_inputs ? ni->inputs[k] : ni->outputs[k - ni->n_inputs];
        const af_tensor_info_t *ti = af_graph_tensor(in->g, t);
        if (ti && ti->bytes == 0)
            return af__err(err, AF_ENOTSUP, "tensor '%s' has no elements", ti->name);
    }
    if (!in->query) {
        if (!(b.st = af__calloc(1, sizeof(*b.st))))
            return af__err(err, AF_ENOMEM, "out of memory preparing a oneDNN node");
        b.st->ctx = b.ctx;
        b.st->workers = in->workers;
    }
    int rc = prepare_locked(fn, &b);
    if (!rc && b.st && make_memories(b.st))
        rc = af__err(err, AF_ENOMEM, "out of memory creating oneDNN memory objects");
    if (rc) {
        af__odn_release(b.st);
        return rc;
    }
    if (b.st) {
        b.st->scratch = b.scratch;
        memcpy(b.st->impl, b.impl, sizeof b.impl);
        out->const_bytes = b.st->const_bytes;
    }
    out->state = b.st;
    out->scratch_bytes = b.scratch;
    out->post_fused = b.post_fused;
    memcpy(out->impl, b.impl, sizeof out->impl);
    return 0;
}

static void *arg_ptr(const af_kernel_args_t *a, const odn_arg_t *g)
{
    uint8_t *base = g->where == ODN_IN    ? (uint8_t *)(uintptr_t)a->inputs[g->index]
                    : g->where == ODN_OUT ? (uint8_t *)a->outputs[g->index]
                                          : (uint8_t *)a->scratch;
    return base ? base + g->off : NULL;
}

int af__odn_run(const af_kernel_args_t *a)
{
    odn_node_t *st = a->state;
    if (!st || a->worker < 0 || a->worker >= st->workers)
        return AF_EINVAL; /* not prepared (see af__session_consts_changed) */
    if (st->scratch && (!a->scratch || a->scratch_bytes < st->scratch))
        return AF_EINVAL;
    dnnl_stream_t stream = st->ctx->streams[a->worker];
    for (int s = 0; s < st->n_steps; s++) {
        const odn_step_t *sp = &st->step[s];
        dnnl_exec_arg_t ea[ODN_MAX_ARGS];
        for (int k = 0; k < sp->n; k++) {
            const odn_arg_t *g = &sp->a[k];
            ea[k].arg = g->arg;
            if (g->where == ODN_FIXED) {
                ea[k].memory = g->fixed;
                continue;
            }
            size_t i = mem_index(a->worker, s, k);
            void *p = arg_ptr(a, g);
            if (!p)
                return AF_EINVAL;
            if (st->cur[i] != p && dnnl_memory_set_data_handle(st->mem[i], p) != dnnl_success)
                return AF_EINVAL;
            st->cur[i] = p;
            ea[k].memory = st->mem[i];
        }
        if (dnnl_primitive_execute(sp->prim, stream, sp->n, ea) != dnnl_success)
            return AF_EINVAL;
    }
    return dnnl_stream_wait(stream) == dnnl_success ? 0 : AF_EINVAL;
}

/* ---- helpers for the op files ------------------------------------------------------------- */

int af__odn_nosup(odn_build_t *b, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return af__err(b->err, AF_ENOTSUP, "oneDNN: %s", msg);
}

dnnl_data_type_t af__odn_dtype(af_dtype_t dt)
{
    switch (dt) {
    case AF_DTYPE_F32:
        return dnnl_f32;
    case AF_DTYPE_F16:
        return dnnl_f16;
    case AF_DTYPE_BF16:
        return dnnl_bf16;
    case AF_DTYPE_I8:
        return dnnl_s8;
    case AF_DTYPE_U8:
    case AF_DTYPE_BOOL:
        return dnnl_u8;
    case AF_DTYPE_I32:
        return dnnl_s32;
    default:
        return dnnl_data_type_undef;
    }
}

int af__odn_shape(odn_build_t *b, int32_t t, int *nd, dnnl_dims_t dims)
{
    const af_tensor_info_t *ti = af_graph_tensor(b->in->g, t);
    if (ti->rank < 0 || ti->rank > DNNL_MAX_NDIMS)
        return af__odn_nosup(b, "tensor '%s' has no static shape", ti->name);
    for (int32_t i = 0; i < ti->rank; i++) {
        if (ti->shape[i] < 0)
            return af__odn_nosup(b, "tensor '%s' has a dynamic dim", ti->name);
        dims[i] = ti->shape[i];
    }
    *nd = ti->rank;
    if (*nd == 0)
        dims[(*nd)++] = 1;
    return 0;
}

int af__odn_md_as(odn_build_t *b, int32_t t, int nd, const dnnl_dims_t dims, dnnl_memory_desc_t *md)
{
    const af_tensor_info_t *ti = af_graph_tensor(b->in->g, t);
    dnnl_data_type_t dt = af__odn_dtype(ti->dtype);
    if (dt == dnnl_data_type_undef)
        return af__odn_nosup(b, "tensor '%s': dtype %s", ti->name, af_dtype_name(ti->dtype));
    dnnl_dims_t st;
    int64_t acc = 1;
    for (int i = nd - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= dims[i] > 0 ? dims[i] : 1;
    }
    /* A flat view (one dim) is the same in any layout: elementwise kernels use it. */
    if (b->in->layout && b->in->layout[t] == AF__LAYOUT_CHANNELS_LAST && nd > 1) {
        int same = nd == ti->rank;
        for (int i = 0; same && i < nd; i++)
            same = dims[i] == ti->shape[i];
        if (!same) /* the layout choice keeps such tensors plain: a bug if it happens */
            return af__err(b->err, AF_EINVAL, "oneDNN: channels-last tensor '%s' reshaped",
                           ti->name);
        af__odn_channels_last(nd, dims, st);
    }
    if (acc == 0 || dnnl_memory_desc_init_by_strides(md, nd, dims, dt, st) != dnnl_success)
        return af__odn_nosup(b, "tensor '%s': no memory descriptor (empty?)", ti->name);
    return 0;
}

int af__odn_md(odn_build_t *b, int32_t t, dnnl_memory_desc_t *md)
{
    int nd = 0;
    dnnl_dims_t dims;
    int rc = af__odn_shape(b, t, &nd, dims);
    return rc ? rc : af__odn_md_as(b, t, nd, dims, md);
}

int af__odn_is_const(odn_build_t *b, int32_t i)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    if (i < 0 || i >= ni->n_inputs)
        return 0;
    return af_graph_tensor(b->in->g, ni->inputs[i])->kind == AF_TENSOR_CONSTANT;
}

const void *af__odn_const(odn_build_t *b, int32_t i)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    if (!af__odn_is_const(b, i) || !b->in->constant)
        return NULL;
    return b->in->constant(b->in->cu, ni->inputs[i]);
}

int af__odn_const_scalar(odn_build_t *b, int32_t i, float *v)
{
    const af_node_info_t *ni = af_graph_node(b->in->g, b->in->node);
    if (!af__odn_is_const(b, i))
        return af__odn_nosup(b, "input %d is not a constant", i);
    const af_tensor_info_t *ti = af_graph_tensor(b->in->g, ni->inputs[i]);
    if (ti->dtype != AF_DTYPE_F32 || ti->bytes != 4)
        return af__odn_nosup(b, "input %d is not an f32 scalar", i);
    const float *p = af__odn_const(b, i);
    if (!p && !b->in->query)
        return af__odn_nosup(b, "input %d: no constant data", i);
    *v = p ? *p : 0.0f;
    return 0;
}

const af_attr_t *af__odn_attr(odn_build_t *b, const char *name)
{
    return af_graph_node_attr(b->in->g, b->in->node, name);
}

int64_t af__odn_attr_i(odn_build_t *b, const char *name, int64_t def)
{
    const af_attr_t *a = af__odn_attr(b, name);
    return a && a->type == AF_ATTR_INT ? a->i : def;
}

double af__odn_attr_f(odn_build_t *b, const char *name, double def)
{
    const af_attr_t *a = af__odn_attr(b, name);
    return a && a->type == AF_ATTR_FLOAT ? a->f : def;
}

int af__odn_attr_create(odn_build_t *b, dnnl_primitive_attr_t *attr)
{
    if (dnnl_primitive_attr_create(attr) != dnnl_success ||
        dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user) != dnnl_success)
        return af__err(b->err, AF_ENOMEM, "oneDNN: cannot create primitive attributes");
    return 0;
}

int af__odn_pd(odn_build_t *b, const void *desc, const_dnnl_primitive_attr_t attr,
               dnnl_primitive_desc_t *pd)
{
    dnnl_primitive_attr_t own = NULL;
    if (!attr) {
        int rc = af__odn_attr_create(b, &own);
        if (rc)
            return rc;
        attr = own;
    }
    dnnl_status_t s = dnnl_primitive_desc_create(pd, desc, attr, b->ctx->eng, NULL);
    if (own)
        dnnl_primitive_attr_destroy(own);
    if (s != dnnl_success)
        return af__odn_nosup(b, "no primitive for %s (%s)",
                             af_graph_node(b->in->g, b->in->node)->op, dnnl_status2str(s));
    return 0;
}

uint64_t af__odn_scratch(odn_build_t *b, uint64_t bytes)
{
    uint64_t off = af__align_up(b->scratch, 64);
    b->scratch = off + bytes;
    return off;
}

odn_arg_t af__odn_arg(int arg, odn_where_t where, int index, uint64_t off,
                      const dnnl_memory_desc_t *md)
{
    odn_arg_t a = {.arg = arg, .where = (uint8_t)where, .index = (int16_t)index, .off = off};
    if (md)
        a.md = *md;
    return a;
}

/* ---- the table ---------------------------------------------------------------------------- */

#define ODN_PREP(name, build)                                                                      \
    static int name(const af__kprep_t *in, af__kprep_out_t *out, af_error_t *err)                  \
    {                                                                                              \
        return af__odn_prepare(in, out, err, build);                                               \
    }
ODN_PREP(prep_conv, af__odn_conv)
ODN_PREP(prep_deconv, af__odn_deconv)
ODN_PREP(prep_matmul, af__odn_matmul)
ODN_PREP(prep_gemm, af__odn_gemm)
ODN_PREP(prep_unary, af__odn_unary)
ODN_PREP(prep_binary, af__odn_binary)
ODN_PREP(prep_sum, af__odn_sum)
ODN_PREP(prep_pool, af__odn_pool)
ODN_PREP(prep_softmax, af__odn_softmax)
ODN_PREP(prep_batchnorm, af__odn_batchnorm)
ODN_PREP(prep_layernorm, af__odn_layernorm)
ODN_PREP(prep_instnorm, af__odn_instnorm)
ODN_PREP(prep_reduce, af__odn_reduce)
ODN_PREP(prep_concat, af__odn_concat)
ODN_PREP(prep_transpose, af__odn_transpose)
ODN_PREP(prep_cast, af__odn_cast)
ODN_PREP(prep_resize, af__odn_resize)

#define ODN_ROW(name, prep)                                                                        \
    {                                                                                              \
        .op = name, .fn = af__odn_run, .prepare = prep, .release = af__odn_release                 \
    }

const af__kernel_entry_t af__kernels_onednn[] = {
    ODN_ROW("Conv", prep_conv),
    ODN_ROW("ConvTranspose", prep_deconv),
    ODN_ROW("MatMul", prep_matmul),
    ODN_ROW("Gemm", prep_gemm),
    ODN_ROW("Relu", prep_unary),
    ODN_ROW("LeakyRelu", prep_unary),
    ODN_ROW("Sigmoid", prep_unary),
    ODN_ROW("Tanh", prep_unary),
    ODN_ROW("Elu", prep_unary),
    ODN_ROW("Exp", prep_unary),
    ODN_ROW("Log", prep_unary),
    ODN_ROW("Sqrt", prep_unary),
    ODN_ROW("Abs", prep_unary),
    ODN_ROW("Neg", prep_unary),
    ODN_ROW("Reciprocal", prep_unary),
    ODN_ROW("Softplus", prep_unary),
    ODN_ROW("HardSwish", prep_unary),
    ODN_ROW("Mish", prep_unary),
    ODN_ROW("Gelu", prep_unary),
    ODN_ROW("Relu6", prep_unary),
    ODN_ROW("Clip", prep_unary),
    ODN_ROW("Add", prep_binary),
    ODN_ROW("Sub", prep_binary),
    ODN_ROW("Mul", prep_binary),
    ODN_ROW("Div", prep_binary),
    ODN_ROW("Max", prep_binary),
    ODN_ROW("Min", prep_binary),
    ODN_ROW("Pow", prep_binary),
    ODN_ROW("Equal", prep_binary),
    ODN_ROW("Greater", prep_binary),
    ODN_ROW("GreaterOrEqual", prep_binary),
    ODN_ROW("Less", prep_binary),
    ODN_ROW("LessOrEqual", prep_binary),
    ODN_ROW("Sum", prep_sum),
    ODN_ROW("MaxPool", prep_pool),
    ODN_ROW("AveragePool", prep_pool),
    ODN_ROW("GlobalAveragePool", prep_pool),
    ODN_ROW("GlobalMaxPool", prep_pool),
    ODN_ROW("Softmax", prep_softmax),
    ODN_ROW("LogSoftmax", prep_softmax),
    ODN_ROW("BatchNormalization", prep_batchnorm),
    ODN_ROW("LayerNormalization", prep_layernorm),
    ODN_ROW("InstanceNormalization", prep_instnorm),
    ODN_ROW("ReduceMax", prep_reduce),
    ODN_ROW("ReduceMin", prep_reduce),
    ODN_ROW("ReduceSum", prep_reduce),
    ODN_ROW("ReduceMean", prep_reduce),
    ODN_ROW("ReduceProd", prep_reduce),
    ODN_ROW("ReduceL1", prep_reduce),
    ODN_ROW("ReduceL2", prep_reduce),
    ODN_ROW("ReduceSumSquare", prep_reduce),
    ODN_ROW("Concat", prep_concat),
    ODN_ROW("Transpose", prep_transpose),
    ODN_ROW("Cast", prep_cast),
    ODN_ROW("Resize", prep_resize),
    {.op = NULL},
};
