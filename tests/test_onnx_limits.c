/*
 * The ONNX importer against hostile models (issue 16, items 2 and 7), through af_onnx_load_mem
 * with models written byte by byte on the protobuf wire:
 *   - 3,000 levels of AttributeProto.g -> GraphProto.node -> NodeProto.attribute (31 KB) is
 *     refused before decoding (protobuf-c's unpack recursed until the stack overflowed);
 *   - 4 MB of empty attributes (2 bytes each, 248 bytes decoded) is refused before decoding;
 *   - dims whose byte size overflows int64 are the JSON reader's AF_ESIZE, not a silently
 *     dynamic tensor;
 *   - every model of Debian's ONNX backend test data passes the wire check (the bounds do not
 *     refuse real models).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "arenaflow/onnx.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pb {
    uint8_t *b;
    size_t n, cap;
} pb_t;

static void pb_byte(pb_t *p, uint8_t v)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 256;
        p->b = realloc(p->b, p->cap);
        assert_non_null(p->b);
    }
    p->b[p->n++] = v;
}

static void pb_varint(pb_t *p, uint64_t v)
{
    do {
        pb_byte(p, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
        v >>= 7;
    } while (v);
}

static void pb_int(pb_t *p, int field, uint64_t v)
{
    pb_varint(p, (uint64_t)field << 3);
    pb_varint(p, v);
}

static void pb_bytes(pb_t *p, int field, const void *data, size_t n)
{
    pb_varint(p, (uint64_t)field << 3 | 2);
    pb_varint(p, n);
    for (size_t i = 0; i < n; i++)
        pb_byte(p, ((const uint8_t *)data)[i]);
}

static void pb_str(pb_t *p, int field, const char *s)
{
    pb_bytes(p, field, s, strlen(s));
}

/* Appends sub as an embedded message (field) of p and frees sub. */
static void pb_msg(pb_t *p, int field, pb_t *sub)
{
    pb_bytes(p, field, sub->b, sub->n);
    free(sub->b);
    *sub = (pb_t){0};
}

/* ValueInfoProto: name, float tensor of the given dims. */
static void value_info(pb_t *graph, int field, const char *name, const int64_t *dims, int rank)
{
    pb_t shape = {0}, tt = {0}, type = {0}, vi = {0};
    for (int i = 0; i < rank; i++) {
        pb_t dim = {0};
        pb_int(&dim, 1, (uint64_t)dims[i]); /* Dimension.dim_value */
        pb_msg(&shape, 1, &dim);            /* TensorShapeProto.dim */
    }
    pb_int(&tt, 1, 1);      /* TypeProto.Tensor.elem_type = FLOAT */
    pb_msg(&tt, 2, &shape); /* .shape */
    pb_msg(&type, 1, &tt);  /* TypeProto.tensor_type */
    pb_str(&vi, 1, name);   /* ValueInfoProto.name */
    pb_msg(&vi, 2, &type);  /* .type */
    pb_msg(graph, field, &vi);
}

/* ModelProto { ir_version 8, opset 13, graph } around a GraphProto. */
static void model_of(pb_t *model, pb_t *graph)
{
    pb_t opset = {0};
    pb_int(model, 1, 8);      /* ir_version */
    pb_int(&opset, 2, 13);    /* OperatorSetIdProto.version */
    pb_msg(model, 8, &opset); /* opset_import */
    pb_msg(model, 7, graph);  /* graph */
}

/* Relu X -> Y with X of the given dims. */
static void relu_model(pb_t *model, const int64_t *dims, int rank)
{
    pb_t graph = {0}, node = {0};
    pb_str(&node, 1, "X");    /* NodeProto.input */
    pb_str(&node, 2, "Y");    /* .output */
    pb_str(&node, 4, "Relu"); /* .op_type */
    pb_msg(&graph, 1, &node); /* GraphProto.node */
    pb_str(&graph, 2, "g");   /* .name */
    value_info(&graph, 11, "X", dims, rank);
    value_info(&graph, 12, "Y", dims, rank);
    model_of(model, &graph);
}

static void test_onnx_limits_small_model_loads(void **state)
{
    (void)state;
    if (!af_onnx_available())
        skip();
    pb_t m = {0};
    const int64_t dims[] = {2, 3};
    relu_model(&m, dims, 2);
    af_graph_t *g = NULL;
    af_error_t err;
    if (af_onnx_load_mem(m.b, m.n, NULL, &g, &err) != 0)
        fail_msg("the hand-written model does not load: %s", err.msg);
    assert_int_equal(af_graph_tensor(g, af_graph_find_tensor(g, "X"))->bytes, 24);
    af_graph_destroy(g);
    free(m.b);
}

static void test_onnx_limits_overflowing_dims_are_esize(void **state)
{
    (void)state;
    if (!af_onnx_available())
        skip();
    pb_t m = {0};
    const int64_t dims[] = {(int64_t)1 << 31, (int64_t)1 << 31}; /* 2^62 floats: 2^64 bytes */
    relu_model(&m, dims, 2);
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = af_onnx_load_mem(m.b, m.n, NULL, &g, &err);
    if (rc == 0) {
        int64_t bytes = af_graph_tensor(g, af_graph_find_tensor(g, "X"))->bytes;
        af_graph_destroy(g);
        fail_msg("dims of 2^64 bytes accepted (tensor bytes %lld): the JSON reader says "
                 "AF_ESIZE",
                 (long long)bytes);
    }
    assert_int_equal(rc, AF_ESIZE);
    assert_non_null(strstr(err.msg, "overflow"));
    free(m.b);
}

static void test_onnx_limits_deep_nesting_refused(void **state)
{
    (void)state;
    if (!af_onnx_available())
        skip();
    pb_t cur = {0}; /* an empty AttributeProto */
    for (int i = 0; i < 3000; i++) {
        pb_t node = {0}, graph = {0}, attr = {0};
        pb_msg(&node, 5, &cur);   /* NodeProto.attribute */
        pb_msg(&graph, 1, &node); /* GraphProto.node */
        pb_msg(&attr, 6, &graph); /* AttributeProto.g */
        cur = attr;
    }
    pb_t node = {0}, graph = {0}, model = {0};
    pb_msg(&node, 5, &cur);
    pb_msg(&graph, 1, &node);
    pb_msg(&model, 7, &graph);
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = af_onnx_load_mem(model.b, model.n, NULL, &g, &err);
    assert_int_not_equal(rc, 0);
    if (!strstr(err.msg, "nest"))
        fail_msg("%zu-byte model: refused with '%s', not for its nesting", model.n, err.msg);
    free(model.b);
}

static void test_onnx_limits_amplification_refused(void **state)
{
    (void)state;
    if (!af_onnx_available())
        skip();
    pb_t node = {0}, graph = {0}, model = {0};
    pb_str(&node, 4, "Relu");
    for (int i = 0; i < 2 << 20; i++) { /* 2M empty AttributeProto: 4 MB on the wire */
        pb_byte(&node, 5 << 3 | 2);
        pb_byte(&node, 0);
    }
    pb_msg(&graph, 1, &node);
    pb_msg(&model, 7, &graph);
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = af_onnx_load_mem(model.b, model.n, NULL, &g, &err);
    af_graph_destroy(g);
    if (rc != AF_ESIZE || !strstr(err.msg, "decode"))
        fail_msg("%zu bytes of empty attributes (%zu MB decoded): rc %d '%s', want AF_ESIZE "
                 "before decoding",
                 model.n, (size_t)(2 << 20) * 256 >> 20, rc, rc ? err.msg : "");
    free(model.b);
}

static size_t check_dir(const char *dir, size_t *refused)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s/model.onnx", dir, de->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fclose(f);
        af_graph_t *g = NULL;
        af_error_t err;
        af_error_clear(&err);
        int rc = af_onnx_load(path, NULL, &g, &err);
        af_graph_destroy(g);
        n++;
        if (rc != 0 && (strstr(err.msg, "to decode") || strstr(err.msg, "nests messages"))) {
            print_error("refused by the wire check: %s\n", err.msg);
            (*refused)++;
        }
    }
    closedir(d);
    return n;
}

static void test_onnx_limits_testdata_passes_wire_check(void **state)
{
    (void)state;
    if (!af_onnx_available())
        skip();
    static const char *const dirs[] = {
        "/usr/share/libonnx-testdata/data/node",
        "/usr/share/libonnx-testdata/data/pytorch-converted",
        "/usr/share/libonnx-testdata/data/pytorch-operator",
        "/usr/share/libonnx-testdata/data/simple",
        "/usr/share/libonnx-testdata/data/real",
    };
    size_t n = 0, refused = 0;
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
        n += check_dir(dirs[i], &refused);
    if (n == 0)
        skip(); /* libonnx-testdata not installed */
    print_message("  %zu models of the ONNX test data, %zu refused by the wire check\n", n,
                  refused);
    assert_int_equal(refused, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_onnx_limits_small_model_loads),
        cmocka_unit_test(test_onnx_limits_overflowing_dims_are_esize),
        cmocka_unit_test(test_onnx_limits_amplification_refused),
        cmocka_unit_test(test_onnx_limits_testdata_passes_wire_check),
        cmocka_unit_test(test_onnx_limits_deep_nesting_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
