/*
 * Helpers for the reference-kernel tests: build a small graph by hand (tensors with dtype and
 * shape, nodes with attributes), run it once with a kernel set on caller buffers, and read an
 * output. Every graph is planned with the verifier on, and the session is bound with the
 * set's checks, so a refusal shows up as the return code of kt_run().
 */
#ifndef ARENAFLOW_TESTS_KERNEL_TESTUTIL_H
#define ARENAFLOW_TESTS_KERNEL_TESTUTIL_H

#include "arenaflow/executor.h"
#include "arenaflow/plan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* Adds a tensor of the given dtype and dims (rank < 0: unknown rank, dims < 0: unknown). */
static inline void kt_tensor(af_graph_t *g, const char *name, af_dtype_t dt, af_tensor_kind_t kind,
                             int rank, const int64_t *dims)
{
    af_tensor_desc_t d = {.name = name, .dtype = dt, .rank = rank, .shape = dims, .kind = kind};
    int known = rank >= 0;
    for (int i = 0; i < rank; i++)
        known &= dims[i] >= 0;
    d.bytes = known ? AF_BYTES_FROM_SHAPE : AF_BYTES_DYNAMIC;
    af_error_t err;
    int rc = af_graph_add_tensor(g, &d, NULL, &err);
    if (rc)
        fail_msg("add tensor %s: %s", name, err.msg);
}

/* Adds a node reading the comma-separated inputs and writing the outputs. Returns its id. */
static inline int32_t kt_node(af_graph_t *g, const char *op, const char *ins, const char *outs)
{
    static char buf[2][512];
    const char *in[16], *out[16];
    int ni = 0, no = 0;
    snprintf(buf[0], sizeof buf[0], "%s", ins);
    snprintf(buf[1], sizeof buf[1], "%s", outs);
    for (char *p = strtok(buf[0], ","); p && ni < 16; p = strtok(NULL, ","))
        in[ni++] = p;
    for (char *p = strtok(buf[1], ","); p && no < 16; p = strtok(NULL, ","))
        out[no++] = p;
    af_node_desc_t d = {.op = op, .inputs = in, .n_inputs = ni, .outputs = out, .n_outputs = no};
    int32_t id = -1;
    af_error_t err;
    if (af_graph_add_node(g, &d, &id, &err))
        fail_msg("add node %s: %s", op, err.msg);
    return id;
}

static inline void kt_attr_i(af_graph_t *g, int32_t node, const char *name, int64_t v)
{
    af_attr_t a = {.name = name, .type = AF_ATTR_INT, .i = v};
    assert_int_equal(af_graph_node_set_attr(g, node, &a, NULL), 0);
}

static inline void kt_attr_f(af_graph_t *g, int32_t node, const char *name, double v)
{
    af_attr_t a = {.name = name, .type = AF_ATTR_FLOAT, .f = v};
    assert_int_equal(af_graph_node_set_attr(g, node, &a, NULL), 0);
}

static inline void kt_attr_s(af_graph_t *g, int32_t node, const char *name, const char *v)
{
    af_attr_t a = {.name = name, .type = AF_ATTR_STRING, .s = v};
    assert_int_equal(af_graph_node_set_attr(g, node, &a, NULL), 0);
}

static inline void kt_attr_ints(af_graph_t *g, int32_t node, const char *name, const int64_t *v,
                                int32_t n)
{
    af_attr_t a = {.name = name, .type = AF_ATTR_INTS, .ints = v, .n = n};
    assert_int_equal(af_graph_node_set_attr(g, node, &a, NULL), 0);
}

/*
 * Finalizes g, plans it (verified), binds it to `kernels` and runs one round: inputs by name
 * (n_in of them, NULL-terminated names), then copies the output called out_name into out
 * (out_bytes). Returns the first non-zero code of session creation or the round, with the
 * message in err (may be NULL).
 */
static inline int kt_run(af_graph_t *g, const char *kernels, const char *const *in_names,
                         const void *const *in_data, const char *out_name, void *out,
                         size_t out_bytes, af_error_t *err)
{
    af_error_t e;
    af_error_clear(&e);
    if (!af_graph_is_finalized(g) && af_graph_finalize(g, &e))
        fail_msg("finalize: %s", e.msg);
    af_plan_t *p = NULL;
    if (af_plan_create(g, NULL, &p, &e) || af_plan_verify(p, &e))
        fail_msg("plan: %s", e.msg);
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.threads = 2;
    eo.kernels = kernels;
    eo.verify = 1; /* checksums around every kernel: a kernel writing out of place is caught */
    af_executor_t *ex = NULL;
    assert_int_equal(af_executor_create(&eo, &ex, NULL), 0);
    af_session_opts_t so = {.keep_outputs = 1};
    af_session_t *s = NULL;
    int rc = af_session_create(ex, p, &so, &s, err ? err : &e);
    if (rc == 0) {
        af_buffer_t bufs[16];
        int32_t n = af_session_input_count(s);
        assert_true(n <= 16);
        for (int32_t i = 0; i < n; i++)
            bufs[i] = (af_buffer_t){NULL, 0};
        for (int k = 0; in_names && in_names[k]; k++) {
            int32_t i = af_session_find_input(s, in_names[k]);
            af_io_info_t io;
            if (i < 0 || af_session_io_info(s, 0, i, &io))
                fail_msg("no input %s", in_names[k]);
            bufs[i] = (af_buffer_t){(void *)in_data[k], io.bytes};
        }
        rc = af_session_run(s, bufs, NULL, err ? err : &e);
        int32_t o = af_session_find_output(s, out_name);
        uint64_t nb = 0;
        if (rc == 0 &&
            (o < 0 || af_session_read_output(s, o, out, out_bytes, &nb) || nb != out_bytes))
            fail_msg("output %s: %llu bytes, expected %zu", out_name, (unsigned long long)nb,
                     out_bytes);
    }
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    return rc;
}

#endif
