/*
 * Tensor I/O tests: .npy round trips for every dtype NumPy has, headers of format versions
 * 2.0 and 3.0 written by hand, Fortran order and big-endian data read as C order little-endian,
 * the refusals (object arrays, truncated data, bad magic); ONNX TensorProto decoding of
 * raw_data and of the typed fields with ONNX's packing rules (fp16/bool/int8 in int32_data,
 * uint32 in uint64_data), encoding back; and the session I/O API: io_info, name lookup, kept
 * outputs read after a round with no output buffer.
 */
#include "arenaflow/executor.h"
#include "arenaflow/onnx.h"
#include "arenaflow/plan.h"
#include "arenaflow/tensor.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static void fill_tensor(af_tensor_t *t, af_dtype_t dt, int32_t rank, const int64_t *shape)
{
    memset(t, 0, sizeof(*t));
    t->dtype = dt;
    t->rank = rank;
    memcpy(t->shape, shape, sizeof(int64_t) * (size_t)rank);
    t->bytes = af_tensor_numel(t) * af_dtype_size(dt);
    t->data = malloc(t->bytes ? t->bytes : 1);
    for (uint64_t i = 0; i < t->bytes; i++)
        ((uint8_t *)t->data)[i] = (uint8_t)(i * 37 + 11);
    if (dt == AF_DTYPE_BOOL)
        for (uint64_t i = 0; i < t->bytes; i++)
            ((uint8_t *)t->data)[i] &= 1;
}

static void test_tensor_npy_round_trip(void **state)
{
    (void)state;
    const af_dtype_t dts[] = {AF_DTYPE_F32, AF_DTYPE_F64, AF_DTYPE_F16, AF_DTYPE_I8,
                              AF_DTYPE_U8,  AF_DTYPE_I16, AF_DTYPE_U16, AF_DTYPE_I32,
                              AF_DTYPE_U32, AF_DTYPE_I64, AF_DTYPE_U64, AF_DTYPE_BOOL};
    const int64_t shapes[][3] = {{0, 0, 0}, {7, 0, 0}, {2, 3, 4}, {0, 5, 0}};
    const int32_t ranks[] = {0, 1, 3, 2};
    for (size_t d = 0; d < sizeof(dts) / sizeof(*dts); d++)
        for (size_t s = 0; s < 4; s++) {
            af_tensor_t t, back;
            fill_tensor(&t, dts[d], ranks[s], shapes[s]);
            void *buf = NULL;
            size_t len = 0;
            af_error_t err;
            assert_int_equal(af_tensor_npy_encode(&t, &buf, &len, &err), 0);
            assert_int_equal(((size_t)len - t.bytes) % 64, 0); /* header padded as NumPy does */
            assert_int_equal(af_tensor_npy_parse(buf, len, &back, &err), 0);
            assert_int_equal(back.dtype, t.dtype);
            assert_int_equal(back.rank, t.rank);
            for (int32_t i = 0; i < t.rank; i++)
                assert_int_equal(back.shape[i], t.shape[i]);
            assert_int_equal(back.bytes, t.bytes);
            assert_memory_equal(back.data, t.data, t.bytes ? t.bytes : 0);
            af_tensor_clear(&back);
            af_free(buf);
            free(t.data);
        }
}

/* A .npy file with the given version, header dict and data bytes. */
static size_t make_npy(uint8_t *out, int major, const char *dict, const void *data, size_t n)
{
    size_t pre = major == 1 ? 10 : 12, hl = strlen(dict) + 1;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (uint8_t)major;
    out[7] = 0;
    if (major == 1) {
        out[8] = (uint8_t)hl;
        out[9] = 0;
    } else {
        out[8] = (uint8_t)hl;
        out[9] = out[10] = out[11] = 0;
    }
    memcpy(out + pre, dict, hl - 1);
    out[pre + hl - 1] = '\n';
    memcpy(out + pre + hl, data, n);
    return pre + hl + n;
}

static void test_tensor_npy_versions_and_refusals(void **state)
{
    (void)state;
    uint8_t buf[512];
    af_tensor_t t;
    af_error_t err;
    int32_t v[3] = {1, -2, 3};
    size_t n;
    for (int major = 1; major <= 3; major++) {
        n = make_npy(buf, major, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", v,
                     sizeof v);
        assert_int_equal(af_tensor_npy_parse(buf, n, &t, &err), 0);
        assert_int_equal(t.dtype, AF_DTYPE_I32);
        assert_int_equal(t.rank, 1);
        assert_int_equal(t.shape[0], 3);
        assert_true(af_tensor_get(&t, 1) == -2);
        af_tensor_clear(&t);
    }
    /* double quotes, no trailing comma, key order changed */
    n = make_npy(buf, 1, "{\"shape\": (1, 3), \"fortran_order\": False, \"descr\": \"<i4\"}", v,
                 sizeof v);
    assert_int_equal(af_tensor_npy_parse(buf, n, &t, &err), 0);
    assert_int_equal(t.rank, 2);
    af_tensor_clear(&t);
    /* Fortran order (numpy.save of a transposed array) and big-endian elements read as C order,
     * little-endian: a 2x3 int32 array [[1, 2, 3], [4, 5, 6]] stored column by column, big-endian
     */
    const uint8_t fbe[24] = {0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 2,
                             0, 0, 0, 5, 0, 0, 0, 3, 0, 0, 0, 6};
    n = make_npy(buf, 1, "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }", fbe, 24);
    assert_int_equal(af_tensor_npy_parse(buf, n, &t, &err), 0);
    assert_int_equal(t.rank, 2);
    for (int i = 0; i < 6; i++)
        assert_true(af_tensor_get(&t, (uint64_t)i) == i + 1);
    af_tensor_clear(&t);
    /* a 2x2x3 little-endian float32 array in Fortran order: element (i, j, k) at i + 2j + 4k */
    float f3[12], want;
    for (int k = 0; k < 12; k++)
        f3[k] = (float)k;
    n = make_npy(buf, 3, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2, 3), }", f3, 48);
    assert_int_equal(af_tensor_npy_parse(buf, n, &t, &err), 0);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++) {
                want = (float)(i + 2 * j + 4 * k);
                assert_true(af_tensor_get(&t, (uint64_t)(i * 6 + j * 3 + k)) == want);
            }
    af_tensor_clear(&t);
    struct {
        const char *dict;
        size_t data;
        int rc;
        const char *says;
    } bad[] = {
        {"{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", 12, AF_ENOTSUP, "object"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 12, AF_ENOTSUP, "<c8"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", 12, AF_EPARSE, "bytes"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", 8, AF_EPARSE, "bytes"},
        {"{'descr': '<i4', 'fortran_order': False}", 12, AF_EPARSE, "shape"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,2,3,4,5,6,7,8,9), }", 12, AF_ENOTSUP,
         "rank"},
        {"['descr']", 12, AF_EPARSE, "dict"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        n = make_npy(buf, 1, bad[i].dict, v, bad[i].data);
        af_error_clear(&err);
        assert_int_equal(af_tensor_npy_parse(buf, n, &t, &err), bad[i].rc);
        if (!strstr(err.msg, bad[i].says))
            fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, bad[i].says);
        assert_null(t.data);
    }
    assert_int_equal(af_tensor_npy_parse("\x93NUMPX", 6, &t, &err), AF_EPARSE);
    n = make_npy(buf, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", v, 12);
    for (size_t cut = 0; cut < n; cut += 7) /* every truncation is refused, never overread */
        assert_int_not_equal(af_tensor_npy_parse(buf, cut, &t, &err), 0);
}

/* ---- TensorProto -------------------------------------------------------------------------- */

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

/* TensorProto with dims, data_type, and a packed varint field (5 int32_data, 7 int64_data,
 * 11 uint64_data) holding vals. */
static size_t make_pb(uint8_t *out, const int64_t *dims, int nd, int elem, int field,
                      const int64_t *vals, int nv)
{
    size_t n = 0;
    for (int i = 0; i < nd; i++) {
        out[n++] = 1 << 3; /* dims, varint */
        n += put_varint(out + n, (uint64_t)dims[i]);
    }
    out[n++] = 2 << 3;
    n += put_varint(out + n, (uint64_t)elem);
    uint8_t body[256];
    size_t bl = 0;
    for (int i = 0; i < nv; i++)
        bl += put_varint(body + bl, (uint64_t)vals[i]);
    out[n++] = (uint8_t)(field << 3 | 2);
    n += put_varint(out + n, bl);
    memcpy(out + n, body, bl);
    n += bl;
    out[n++] = 8 << 3 | 2; /* name */
    out[n++] = 1;
    out[n++] = 'x';
    return n;
}

static void test_tensor_pb_typed_fields(void **state)
{
    (void)state;
    if (!af_onnx_available())
        skip();
    uint8_t buf[512];
    af_onnx_tensor_t t;
    af_error_t err;
    int64_t d2[] = {2, 2};
    /* fp16 bit patterns in int32_data: 1.0 = 0x3c00, -2.0 = 0xc000, inf, 0 */
    int64_t h[] = {0x3c00, 0xc000, 0x7c00, 0};
    size_t n = make_pb(buf, d2, 2, 10, 5, h, 4);
    assert_int_equal(af_onnx_tensor_decode(buf, n, &t, &err), 0);
    assert_int_equal(t.dtype, AF_DTYPE_F16);
    assert_int_equal(t.bytes, 8);
    assert_string_equal(t.name, "x");
    const uint16_t *hp = t.data;
    assert_int_equal(hp[0], 0x3c00);
    assert_int_equal(hp[1], 0xc000);
    af_onnx_tensor_clear(&t);
    /* int8 and bool in int32_data (negative int8 is sign-extended in the varint) */
    int64_t i8[] = {-1, 5, -128, 127};
    n = make_pb(buf, d2, 2, 3, 5, i8, 4);
    assert_int_equal(af_onnx_tensor_decode(buf, n, &t, &err), 0);
    assert_int_equal(t.dtype, AF_DTYPE_I8);
    assert_int_equal(((int8_t *)t.data)[0], -1);
    assert_int_equal(((int8_t *)t.data)[2], -128);
    af_onnx_tensor_clear(&t);
    int64_t b[] = {1, 0, 1, 1};
    n = make_pb(buf, d2, 2, 9, 5, b, 4);
    assert_int_equal(af_onnx_tensor_decode(buf, n, &t, &err), 0);
    assert_int_equal(t.dtype, AF_DTYPE_BOOL);
    assert_int_equal(((uint8_t *)t.data)[3], 1);
    af_onnx_tensor_clear(&t);
    /* int64 beyond 2^53 exactly; uint32 in uint64_data */
    int64_t big[] = {(int64_t)9007199254740993LL, -3};
    int64_t d1[] = {2};
    n = make_pb(buf, d1, 1, 7, 7, big, 2);
    assert_int_equal(af_onnx_tensor_decode(buf, n, &t, &err), 0);
    assert_true(((int64_t *)t.data)[0] == 9007199254740993LL);
    af_onnx_tensor_clear(&t);
    int64_t u32[] = {4000000000LL, 7};
    n = make_pb(buf, d1, 1, 12, 11, u32, 2);
    assert_int_equal(af_onnx_tensor_decode(buf, n, &t, &err), 0);
    assert_int_equal(t.dtype, AF_DTYPE_U32);
    assert_true(((uint32_t *)t.data)[0] == 4000000000u);
    af_onnx_tensor_clear(&t);
    /* element count disagreeing with the dims; a string tensor without its 2 strings */
    n = make_pb(buf, d2, 2, 7, 7, big, 2);
    assert_int_equal(af_onnx_tensor_decode(buf, n, &t, &err), AF_EPARSE);
    assert_non_null(strstr(err.msg, "dims"));
    n = make_pb(buf, d1, 1, 8, 5, b, 0);
    assert_int_equal(af_onnx_tensor_decode(buf, n, &t, &err), AF_EPARSE);
    assert_non_null(strstr(err.msg, "0 strings in string_data, dims need 2"));
    assert_null(t.data);
}

/* STRING tensors: af_string_t handles out of string_data (NUL, empty and multi-byte strings
 * kept byte for byte), back through the encoder, and read as a .pb file. */
static void test_tensor_pb_strings(void **state)
{
    (void)state;
    if (!af_onnx_available())
        skip();
    static const char nul[] = {'a', 0, 'b'};
    af_string_t src[3] = {{nul, 3}, {NULL, 0}, {"\xe6\xbc\xa2\xf0\x9f\x98\x80", 7}};
    af_onnx_tensor_t t = {.name = "s",
                          .dtype = AF_DTYPE_STRING,
                          .rank = 1,
                          .shape = {3},
                          .data = src,
                          .bytes = sizeof src};
    void *buf = NULL;
    size_t len = 0;
    af_error_t err;
    assert_int_equal(af_onnx_tensor_encode(&t, &buf, &len, &err), 0);
    af_onnx_tensor_t back;
    assert_int_equal(af_onnx_tensor_decode(buf, len, &back, &err), 0);
    assert_int_equal(back.dtype, AF_DTYPE_STRING);
    assert_int_equal(back.bytes, 3 * sizeof(af_string_t));
    const af_string_t *h = back.data;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(h[i].len, src[i].len);
        if (src[i].len)
            assert_memory_equal(h[i].data, src[i].data, src[i].len);
        /* the strings live in the tensor's own block, after the handles */
        assert_true(h[i].data >= (const char *)back.data + back.bytes);
    }
    char path[] = "/tmp/af_test_strings_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
    af_tensor_t ft;
    assert_int_equal(af_tensor_load(path, &ft, &err), 0);
    assert_int_equal(ft.dtype, AF_DTYPE_STRING);
    assert_memory_equal(((const af_string_t *)ft.data)[0].data, nul, 3);
    assert_true(af_tensor_get(&ft, 0) == 0);                          /* no number */
    assert_int_equal(af_tensor_save_npy(path, &ft, &err), AF_EINVAL); /* NumPy has no strings */
    assert_non_null(strstr(err.msg, "no NumPy type"));
    af_tensor_clear(&ft);
    unlink(path);
    af_onnx_tensor_clear(&back);
    af_free(buf);
}

static void test_tensor_pb_encode_and_files(void **state)
{
    (void)state;
    if (!af_onnx_available())
        skip();
    char dir[] = "/tmp/af_tensor_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char npy[128], pb[128];
    snprintf(npy, sizeof npy, "%s/t.npy", dir);
    snprintf(pb, sizeof pb, "%s/t.pb", dir);
    int64_t sh[] = {3, 2};
    af_tensor_t t, a, b;
    fill_tensor(&t, AF_DTYPE_F32, 2, sh);
    t.name = "weights";
    af_error_t err;
    assert_int_equal(af_tensor_save_npy(npy, &t, &err), 0);
    assert_int_equal(af_tensor_save_pb(pb, &t, &err), 0);
    assert_int_equal(af_tensor_load(npy, &a, &err), 0); /* format told by content */
    assert_int_equal(af_tensor_load(pb, &b, &err), 0);
    assert_string_equal(b.name, "weights");
    assert_int_equal(a.bytes, 24);
    assert_memory_equal(a.data, t.data, 24);
    assert_memory_equal(b.data, t.data, 24);
    assert_int_equal(b.rank, 2);
    assert_int_equal(b.shape[1], 2);
    af_tensor_clear(&a);
    af_tensor_clear(&b);
    char missing[160];
    snprintf(missing, sizeof missing, "%s/none.npy", dir);
    assert_int_equal(af_tensor_load(missing, &a, &err), AF_EIO);
    assert_non_null(strstr(err.msg, "none.npy"));
    t.dtype = AF_DTYPE_BF16; /* no NumPy type: refused by the .npy writer, fine for .pb */
    t.bytes = 12;
    assert_int_equal(af_tensor_save_npy(npy, &t, &err), AF_EINVAL);
    assert_int_equal(af_tensor_save_pb(pb, &t, &err), 0);
    assert_int_equal(af_tensor_load(pb, &b, &err), 0);
    assert_int_equal(b.dtype, AF_DTYPE_BF16);
    af_tensor_clear(&b);
    free(t.data);
    unlink(npy);
    unlink(pb);
    rmdir(dir);
}

/* ---- session I/O -------------------------------------------------------------------------- */

static void add_t(af_graph_t *g, const char *name, af_dtype_t dt, int rank, const int64_t *shape,
                  af_tensor_kind_t kind)
{
    af_tensor_desc_t d = {.name = name,
                          .bytes = AF_BYTES_FROM_SHAPE,
                          .dtype = dt,
                          .rank = rank,
                          .shape = shape,
                          .kind = kind};
    assert_int_equal(af_graph_add_tensor(g, &d, NULL, NULL), 0);
}

static void test_tensor_session_io_api(void **state)
{
    (void)state;
    af_graph_t *g;
    assert_int_equal(af_graph_create(&g), 0);
    int64_t s23[] = {2, 3};
    add_t(g, "a", AF_DTYPE_F32, 2, s23, AF_TENSOR_INPUT);
    add_t(g, "b", AF_DTYPE_F32, 2, s23, AF_TENSOR_INPUT);
    add_t(g, "sum", AF_DTYPE_F32, 2, s23, AF_TENSOR_OUTPUT);
    add_t(g, "prod", AF_DTYPE_F32, 2, s23, AF_TENSOR_OUTPUT);
    const char *ab[] = {"a", "b"}, *o1[] = {"sum"}, *o2[] = {"prod"};
    af_node_desc_t n1 = {.op = "Add", .inputs = ab, .n_inputs = 2, .outputs = o1, .n_outputs = 1};
    af_node_desc_t n2 = {.op = "Mul", .inputs = ab, .n_inputs = 2, .outputs = o2, .n_outputs = 1};
    assert_int_equal(af_graph_add_node(g, &n1, NULL, NULL), 0);
    assert_int_equal(af_graph_add_node(g, &n2, NULL, NULL), 0);
    assert_int_equal(af_graph_finalize(g, NULL), 0);
    af_plan_t *p;
    assert_int_equal(af_plan_create(g, NULL, &p, NULL), 0);
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.threads = 2;
    eo.kernels = "reference";
    af_executor_t *ex;
    assert_int_equal(af_executor_create(&eo, &ex, NULL), 0);
    af_session_opts_t so = {.keep_outputs = 1};
    af_session_t *s;
    af_error_t err;
    assert_int_equal(af_session_create(ex, p, &so, &s, &err), 0);
    af_io_info_t io;
    int32_t ia = af_session_find_input(s, "a"), ib = af_session_find_input(s, "b");
    assert_true(ia >= 0 && ib >= 0 && ia != ib);
    assert_int_equal(af_session_find_input(s, "sum"), -1);
    assert_int_equal(af_session_find_input(s, "nope"), -1);
    int32_t isum = af_session_find_output(s, "sum"), iprod = af_session_find_output(s, "prod");
    assert_true(isum >= 0 && iprod >= 0);
    assert_int_equal(af_session_io_info(s, 1, isum, &io), 0);
    assert_string_equal(io.name, "sum");
    assert_int_equal(io.dtype, AF_DTYPE_F32);
    assert_int_equal(io.rank, 2);
    assert_int_equal(io.shape[1], 3);
    assert_int_equal(io.bytes, 24);
    assert_int_equal(io.dynamic, 0);
    assert_int_equal(af_session_io_info(s, 0, 2, &io), AF_EINVAL);
    assert_null(af_session_output_data(s, isum, NULL)); /* no round yet */
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {2, 2, 2, -1, -1, -1}, got[6];
    af_buffer_t in[2];
    in[ia] = (af_buffer_t){a, sizeof a};
    in[ib] = (af_buffer_t){b, sizeof b};
    af_buffer_t out[2] = {{NULL, 0}, {NULL, 0}};
    out[iprod] = (af_buffer_t){got, sizeof got}; /* prod to the caller, sum kept */
    assert_int_equal(af_session_run(s, in, out, &err), 0);
    uint64_t nb = 0;
    const float *sum = af_session_output_data(s, isum, &nb);
    assert_non_null(sum);
    assert_int_equal(nb, 24);
    for (int i = 0; i < 6; i++) {
        assert_true(sum[i] == a[i] + b[i]);
        assert_true(got[i] == a[i] * b[i]);
    }
    assert_null(af_session_output_data(s, iprod, NULL)); /* had a caller buffer */
    float copy[6];
    assert_int_equal(af_session_read_output(s, isum, copy, sizeof copy, &nb), 0);
    assert_memory_equal(copy, sum, 24);
    assert_int_equal(af_session_read_output(s, isum, copy, 8, &nb), AF_EINVAL);
    assert_int_equal(nb, 24);
    assert_int_equal(af_session_read_output(s, iprod, copy, 24, NULL), AF_ENOENT);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_npy_round_trip),
        cmocka_unit_test(test_tensor_npy_versions_and_refusals),
        cmocka_unit_test(test_tensor_pb_typed_fields),
        cmocka_unit_test(test_tensor_pb_strings),
        cmocka_unit_test(test_tensor_pb_encode_and_files),
        cmocka_unit_test(test_tensor_session_io_api),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
