/*
 * Building oneDNN node states: steps, reorders through working memory, fixed (constant)
 * arguments and weights prepacked once into the layout a primitive wants. The model is in
 * onednn_int.h.
 *
 * While querying (af_kernels_lower) nothing is created: only the working memory the steps would
 * use is counted, so the sizes are exactly those a session's prepare reserves.
 */
#include "executor/onednn_int.h"

#include <oneapi/dnnl/dnnl_debug.h>
#include <string.h>

/* Keeps an allocation of the state (prepacked data). */
static void *keep_raw(odn_build_t *b, uint64_t bytes, void **aligned)
{
    if (b->st->n_raw >= ODN_MAX_FIXED)
        return NULL;
    void *raw = af__malloc((size_t)bytes + 64);
    if (!raw)
        return NULL;
    b->st->raw[b->st->n_raw++] = raw;
    *aligned = (void *)af__align_up((uintptr_t)raw, 64);
    b->st->const_bytes += bytes;
    return raw;
}

/* Runs a reorder from (have, src) to (want, dst) now, on the first worker's stream. */
static int reorder_now(odn_build_t *b, const dnnl_memory_desc_t *have, const void *src,
                       const dnnl_memory_desc_t *want, void *dst)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t ms = NULL, md = NULL;
    dnnl_engine_t eng = b->ctx->eng;
    int ok = dnnl_reorder_primitive_desc_create(&pd, have, eng, want, eng, NULL) == dnnl_success &&
             dnnl_primitive_create(&prim, pd) == dnnl_success &&
             dnnl_memory_create(&ms, have, eng, (void *)(uintptr_t)src) == dnnl_success &&
             dnnl_memory_create(&md, want, eng, dst) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, ms}, {DNNL_ARG_TO, md}};
        ok = dnnl_primitive_execute(prim, b->ctx->streams[0], 2, a) == dnnl_success &&
             dnnl_stream_wait(b->ctx->streams[0]) == dnnl_success;
    }
    if (md)
        dnnl_memory_destroy(md);
    if (ms)
        dnnl_memory_destroy(ms);
    if (prim)
        dnnl_primitive_destroy(prim);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    return ok ? 0 : af__odn_nosup(b, "cannot reorder the weights to the primitive's layout");
}

int af__odn_arg_const(odn_build_t *b, int arg, int32_t i, const dnnl_memory_desc_t *have,
                      const dnnl_memory_desc_t *want, odn_arg_t *out)
{
    *out = af__odn_arg(arg, ODN_FIXED, i, 0, want);
    if (!af__odn_is_const(b, i))
        return af__odn_nosup(b, "input %d must be a constant (weights)", i);
    if (!b->st)
        return 0; /* querying */
    const void *data = af__odn_const(b, i);
    if (!data)
        return af__odn_nosup(b, "input %d: no constant data", i);
    void *mem = (void *)(uintptr_t)data;
    if (!dnnl_memory_desc_equal(have, want)) {
        if (!keep_raw(b, dnnl_memory_desc_get_size(want), &mem))
            return af__err(b->err, AF_ENOMEM, "out of memory prepacking weights");
        int rc = reorder_now(b, have, data, want, mem);
        if (rc)
            return rc;
    }
    if (dnnl_memory_create(&out->fixed, want, b->ctx->eng, mem) != dnnl_success)
        return af__err(b->err, AF_ENOMEM, "oneDNN: cannot create a memory object");
    return 0;
}

int af__odn_arg_data(odn_build_t *b, int arg, const dnnl_memory_desc_t *md, const void *data,
                     uint64_t n, odn_arg_t *out)
{
    *out = af__odn_arg(arg, ODN_FIXED, 0, 0, md);
    if (!b->st)
        return 0;
    void *mem;
    if (!keep_raw(b, n, &mem))
        return af__err(b->err, AF_ENOMEM, "out of memory for a oneDNN node's constants");
    memcpy(mem, data, (size_t)n);
    if (dnnl_memory_create(&out->fixed, md, b->ctx->eng, mem) != dnnl_success)
        return af__err(b->err, AF_ENOMEM, "oneDNN: cannot create a memory object");
    return 0;
}

/* Drops the fixed memory objects of args that never made it into a step. */
static void drop_fixed(int n, const odn_arg_t *args)
{
    for (int k = 0; k < n; k++)
        if (args[k].where == ODN_FIXED && args[k].fixed)
            dnnl_memory_destroy(args[k].fixed);
}

int af__odn_step(odn_build_t *b, dnnl_primitive_desc_t pd, int n, const odn_arg_t *args)
{
    if (!b->impl[0]) {
        const char *impl = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        snprintf(b->impl, sizeof b->impl, "%s", impl ? impl : "?");
    }
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sps = sp ? dnnl_memory_desc_get_size(sp) : 0;
    uint64_t off = sps ? af__odn_scratch(b, sps) : 0;
    int rc = 0;
    if (b->st && (b->st->n_steps >= ODN_MAX_STEPS || n + (sps > 0) > ODN_MAX_ARGS))
        rc = af__err(b->err, AF_EINVAL, "oneDNN: too many steps or arguments in one node");
    if (!rc && b->st) {
        odn_step_t *s = &b->st->step[b->st->n_steps];
        if (dnnl_primitive_create(&s->prim, pd) != dnnl_success) {
            rc = af__odn_nosup(b, "cannot create the primitive");
        } else {
            memcpy(s->a, args, (size_t)n * sizeof(*args));
            s->n = n;
            if (sps)
                s->a[s->n++] = af__odn_arg(DNNL_ARG_SCRATCHPAD, ODN_SCR, 0, off, sp);
            b->st->n_steps++;
        }
    }
    if (rc || !b->st)
        drop_fixed(n, args);
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* A reorder step from one argument place to another. */
static int reorder_step(odn_build_t *b, odn_arg_t from, odn_arg_t to)
{
    dnnl_primitive_desc_t pd;
    dnnl_primitive_attr_t attr;
    int rc = af__odn_attr_create(b, &attr);
    if (rc)
        return rc;
    dnnl_status_t s =
        dnnl_reorder_primitive_desc_create(&pd, &from.md, b->ctx->eng, &to.md, b->ctx->eng, attr);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success)
        return af__odn_nosup(b, "no reorder between the layouts (%s)", dnnl_status2str(s));
    from.arg = DNNL_ARG_FROM;
    to.arg = DNNL_ARG_TO;
    odn_arg_t a[2] = {from, to};
    return af__odn_step(b, pd, 2, a);
}

int af__odn_main(odn_build_t *b, dnnl_primitive_desc_t pd, int n, odn_arg_t *args)
{
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    snprintf(b->impl, sizeof b->impl, "%s", impl ? impl : "?");
    odn_arg_t post[ODN_MAX_ARGS];
    int n_post = 0, rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        odn_arg_t *g = &args[k];
        if (g->where != ODN_IN && g->where != ODN_OUT)
            continue;
        const dnnl_memory_desc_t *want =
            dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, g->arg);
        if (!want || dnnl_memory_desc_equal(want, &g->md))
            continue;
        odn_arg_t buf = af__odn_arg(g->arg, ODN_SCR, 0,
                                    af__odn_scratch(b, dnnl_memory_desc_get_size(want)), want);
        if (g->where == ODN_IN)
            rc = reorder_step(b, *g, buf);
        else
            post[n_post++] = *g;
        *g = buf; /* the user's place of an output stays in post[] */
    }
    if (rc) {
        dnnl_primitive_desc_destroy(pd);
        drop_fixed(n, args);
        return rc;
    }
    /* Remember which scratch buffer each reordered output went to before the step takes args. */
    odn_arg_t from[ODN_MAX_ARGS];
    for (int j = 0; j < n_post; j++)
        for (int k = 0; k < n; k++)
            if (args[k].arg == post[j].arg)
                from[j] = args[k];
    if ((rc = af__odn_step(b, pd, n, args)))
        return rc;
    for (int j = 0; j < n_post && !rc; j++)
        rc = reorder_step(b, from[j], post[j]);
    return rc;
}
