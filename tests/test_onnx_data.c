/*
 * Tests of the constant data the ONNX importer keeps (graph/onnx_data.c, onnx_map.c,
 * onnx_ext.c) and of the node order (onnx_order.c) and dynamic reasons (onnx_dyn.c).
 *
 * Models are written in memory (tests/onnx_testutil.h) and, where the file matters (zero-copy
 * mapping, external data), saved in a temporary directory. Each test states the bytes it
 * expects: raw_data pointed to in place when aligned (the pointer lies inside the file's
 * mapping, read from /proc/self/maps) and copied when not; every typed field with ONNX's packing
 * (8/16-bit types, bool and fp16 bit patterns in int32_data, uint32 in uint64_data); Constant
 * nodes, folded values (fp16 rounded to nearest even) and views of weights; external files with
 * their offset/length/checksum rules and every refusal (a path leaving the directory, by "..",
 * absolute or through a symlink); a forged location marker; nodes stored in reverse order
 * importing like the sorted model; a real model (libonnx-testdata, skipped when absent) run with
 * its own weights on the reference kernels, matching the output the test data gives, and the
 * same run from its JSON + weights conversion giving identical bytes; out of memory at every
 * allocation of a file load with weights.
 */
#include "arenaflow/executor.h"
#include "arenaflow/onnx.h"
#include "arenaflow/plan.h"
#include "tests/onnx_testutil.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

enum { U8 = 2, I8 = 3, U16 = 4, I16 = 5, I32 = 6, F16 = 10, F64 = 11, U32 = 12, U64 = 13 };

static void pb_fixed(pb_t *p, int field, const void *v, int size)
{
    pb_varint(p, (uint64_t)field << 3 | (size == 4 ? 5 : 1));
    pb_put(p, v, (size_t)size);
}

/* TensorProto header: dims, type, name, and a doc_string of `pad` bytes (moves the payload). */
static void tensor_head(pb_t *t, const char *name, int elem, int rank, const int64_t *dims, int pad)
{
    for (int i = 0; i < rank; i++)
        pb_int(t, 1, dims[i]);
    pb_int(t, 2, elem);
    pb_str(t, 8, name);
    if (pad) {
        char doc[16] = "...............";
        doc[pad] = '\0';
        pb_str(t, 12, doc);
    }
}

/* Initializer with raw_data. */
static void add_raw(pb_t *g, const char *name, int elem, int rank, const int64_t *dims,
                    const void *data, size_t n, int pad)
{
    pb_t t = {0};
    tensor_head(&t, name, elem, rank, dims, pad);
    pb_bytes(&t, 9, data, n);
    pb_msg(g, 5, &t);
}

/* A node of a custom domain that reads every named input: keeps initializers alive. */
static void add_sink(pb_t *g, const char *ins)
{
    add_node(g, "Sink", "sink", ins, "y", NULL, 0, "test.sink");
    add_output(g, "y", F32);
}

static void write_file(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* 1 when p lies in a mapping of the file `path` (/proc/self/maps). */
static int in_mapping_of(const void *p, const char *path)
{
    char real[4096], line[4200];
    if (!realpath(path, real))
        return 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    int found = 0;
    while (!found && fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char *name = strchr(line, '/');
        if (!name || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
            continue;
        name[strcspn(name, "\n")] = '\0';
        found = !strcmp(name, real) && (uintptr_t)p >= lo && (uintptr_t)p < hi;
    }
    fclose(f);
    return found;
}

static char tmpdir[256];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/af_onnx_data.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmpdir, name);
}

static const float wa[6] = {1.5f, -2, 3.25f, 4, 5, -6.5f};
static const float wb[6] = {7, 8, 9, 10.5f, 11, 12};

/* A model with two f32 [2,3] weights whose payloads sit at file offsets = 0 and 2 (mod 4). */
static pb_t model_aligned_pair(void)
{
    int64_t d[] = {2, 3};
    for (int pa = 0; pa < 4; pa++)
        for (int pb = 0; pb < 4; pb++) {
            pb_t g = {0};
            add_raw(&g, "A", F32, 2, d, wa, sizeof wa, pa);
            add_raw(&g, "B", F32, 2, d, wb, sizeof wb, pb);
            add_sink(&g, "A,B");
            pb_t m = make_model(&g);
            uint8_t *a = memmem(m.b, m.n, wa, sizeof wa), *b = memmem(m.b, m.n, wb, sizeof wb);
            if (a && b && (a - m.b) % 4 == 0 && (b - m.b) % 4 == 2)
                return m;
            free(m.b);
        }
    fail_msg("no padding puts A at 0 and B at 2 mod 4");
    return (pb_t){0};
}

static void test_onnx_data_raw_zero_copy(void **state)
{
    (void)state;
    pb_t m = model_aligned_pair();
    char path[300];
    path_in(path, sizeof path, "pair.onnx");
    write_file(path, m.b, m.n);
    af_graph_t *g;
    af_error_t err;
    assert_int_equal(af_onnx_load(path, NULL, &g, &err), 0);
    const af_tensor_info_t *a = tensor(g, "A"), *b = tensor(g, "B");
    assert_int_equal(a->kind, AF_TENSOR_CONSTANT);
    assert_non_null(a->data);
    assert_memory_equal(a->data, wa, sizeof wa);
    assert_memory_equal(b->data, wb, sizeof wb);
    assert_true(in_mapping_of(a->data, path));  /* aligned: pointed to in the mapped file */
    assert_false(in_mapping_of(b->data, path)); /* misaligned: copied */
    assert_int_equal((uintptr_t)b->data % 4, 0);
    assert_int_equal(af_graph_data_bytes(g), 2 * sizeof wa);

    /* A copy sharing the data keeps the mapping alive after the original is destroyed. */
    af_graph_t *c;
    assert_int_equal(af_graph_create(&c), 0);
    af_tensor_desc_t td = {.name = "A",
                           .bytes = AF_BYTES_FROM_SHAPE,
                           .dtype = AF_DTYPE_F32,
                           .rank = 2,
                           .shape = a->shape,
                           .kind = AF_TENSOR_CONSTANT};
    int32_t id;
    assert_int_equal(af_graph_add_tensor(c, &td, &id, NULL), 0);
    assert_int_equal(af_graph_share_data(c, id, g, af_graph_find_tensor(g, "A"), NULL), 0);
    assert_int_equal(af_graph_finalize(c, NULL), 0);
    const void *pa = a->data;
    af_graph_destroy(g);
    assert_ptr_equal(af_graph_tensor(c, id)->data, pa);
    assert_true(in_mapping_of(pa, path));
    assert_memory_equal(pa, wa, sizeof wa);
    af_graph_destroy(c);
    assert_false(in_mapping_of(pa, path)); /* the last reference unmapped it */

    /* From memory the bytes are copied: nothing points into the caller's buffer. */
    assert_int_equal(af_onnx_load_mem(m.b, m.n, NULL, &g, &err), 0);
    a = tensor(g, "A");
    assert_true((const uint8_t *)a->data < m.b || (const uint8_t *)a->data >= m.b + m.n);
    assert_memory_equal(a->data, wa, sizeof wa);
    af_graph_destroy(g);

    /* copy_data: every byte copied, no pointer into the file. */
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    o.copy_data = 1;
    assert_int_equal(af_onnx_load(path, &o, &g, &err), 0);
    a = tensor(g, "A");
    assert_false(in_mapping_of(a->data, path));
    assert_memory_equal(a->data, wa, sizeof wa);
    af_graph_destroy(g);

    /* skip_data: shapes only. */
    af_onnx_opts_init(&o);
    o.skip_data = 1;
    assert_int_equal(af_onnx_load(path, &o, &g, &err), 0);
    assert_null(tensor(g, "A")->data);
    assert_int_equal(tensor(g, "A")->bytes, 24);
    af_graph_destroy(g);
    free(m.b);
}

/* Every typed field, with ONNX's packing rules. */
static void test_onnx_data_typed_fields(void **state)
{
    (void)state;
    pb_t g = {0}, t;
    int64_t d2[] = {2}, d3[] = {3};
    float f[2] = {0.5f, -1.25f};
    double dv[2] = {1e-300, -2.5};
    struct {
        const char *name;
        int elem;
        int64_t v[3];
    } ints[] = {
        {"i8", I8, {-3, 127, -128}},
        {"u8", U8, {200, 0, 255}},
        {"i16", I16, {-30000, 1, 32767}},
        {"u16", U16, {60000, 2, 65535}},
        {"b", BOOL, {1, 0, 1}},
        {"h", F16, {0x3c00, 0xc000, 0x7bff}},
        {"i32", I32, {-7, 2147483647, 0}},
    };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        t = (pb_t){0};
        tensor_head(&t, ints[k].name, ints[k].elem, 1, d3, 0);
        for (int i = 0; i < 3; i++)
            pb_int(&t, 5, ints[k].v[i]);
        pb_msg(&g, 5, &t);
    }
    t = (pb_t){0};
    tensor_head(&t, "f", F32, 1, d2, 0);
    for (int i = 0; i < 2; i++)
        pb_fixed(&t, 4, &f[i], 4);
    pb_msg(&g, 5, &t);
    t = (pb_t){0};
    tensor_head(&t, "d", F64, 1, d2, 0);
    for (int i = 0; i < 2; i++)
        pb_fixed(&t, 10, &dv[i], 8);
    pb_msg(&g, 5, &t);
    int64_t i64[2] = {-5, INT64_MAX};
    t = tensor_i64("l", 2, i64, 0);
    pb_msg(&g, 5, &t);
    t = (pb_t){0};
    tensor_head(&t, "u32", U32, 1, d2, 0);
    pb_int(&t, 11, 4000000000);
    pb_int(&t, 11, 7);
    pb_msg(&g, 5, &t);
    t = (pb_t){0};
    tensor_head(&t, "u64", U64, 1, d2, 0);
    pb_varint(&t, 11 << 3);
    pb_varint(&t, UINT64_MAX);
    pb_int(&t, 11, 9);
    pb_msg(&g, 5, &t);
    add_sink(&g, "i8,u8,i16,u16,b,h,i32,f,d,l,u32,u64");
    pb_t m = make_model(&g);
    af_graph_t *gr;
    af_error_t err;
    int rc = load(&m, NULL, 0, &gr, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    const int8_t e_i8[] = {-3, 127, -128};
    const uint8_t e_u8[] = {200, 0, 255}, e_b[] = {1, 0, 1};
    const int16_t e_i16[] = {-30000, 1, 32767};
    const uint16_t e_u16[] = {60000, 2, 65535}, e_h[] = {0x3c00, 0xc000, 0x7bff};
    const int32_t e_i32[] = {-7, 2147483647, 0};
    const uint32_t e_u32[] = {4000000000u, 7};
    const uint64_t e_u64[] = {UINT64_MAX, 9};
    assert_memory_equal(tensor(gr, "i8")->data, e_i8, 3);
    assert_memory_equal(tensor(gr, "u8")->data, e_u8, 3);
    assert_memory_equal(tensor(gr, "b")->data, e_b, 3);
    assert_memory_equal(tensor(gr, "i16")->data, e_i16, 6);
    assert_memory_equal(tensor(gr, "u16")->data, e_u16, 6);
    assert_memory_equal(tensor(gr, "h")->data, e_h, 6);
    assert_memory_equal(tensor(gr, "i32")->data, e_i32, 12);
    assert_memory_equal(tensor(gr, "f")->data, f, 8);
    assert_memory_equal(tensor(gr, "d")->data, dv, 16);
    assert_memory_equal(tensor(gr, "l")->data, i64, 16);
    assert_memory_equal(tensor(gr, "u32")->data, e_u32, 8);
    assert_memory_equal(tensor(gr, "u64")->data, e_u64, 16);
    assert_int_equal(tensor(gr, "h")->dtype, AF_DTYPE_F16);
    af_graph_destroy(gr);
    free(m.b);

    /* A typed field whose count disagrees with the dims is a parse error naming the tensor. */
    g = (pb_t){0};
    t = (pb_t){0};
    tensor_head(&t, "short", F32, 1, d3, 0);
    pb_fixed(&t, 4, &f[0], 4);
    pb_msg(&g, 5, &t);
    add_sink(&g, "short");
    m = make_model(&g);
    assert_int_equal(load(&m, NULL, 0, &gr, &err), AF_EPARSE);
    assert_non_null(strstr(err.msg, "short"));
    free(m.b);
}

/* Constant nodes, folded shape vectors, a folded fp16 Cast and a view of a weight. */
static void test_onnx_data_constants_folds_views(void **state)
{
    (void)state;
    pb_t g = {0};
    int64_t xd[] = {2, 3, 4, 4}, wd[] = {2, 3}, shp[] = {3, 2}, minus1 = -1;
    float c4[4] = {0.1f, 0.2f, 0.3f, 0.4f}, tenth = 0.1f;
    add_input(&g, "x", F32, 4, xd, NULL);
    add_raw(&g, "W", F32, 2, wd, wa, sizeof wa, 0);
    add_i64_init(&g, "shp", 2, shp);
    add_i64_init(&g, "minus1", 1, &minus1);
    pb_t ct = {0};
    int64_t d4[] = {4}, d1[] = {1};
    tensor_head(&ct, "c4v", F32, 1, d4, 0);
    pb_bytes(&ct, 9, c4, sizeof c4);
    pb_t tt = {0};
    tensor_head(&tt, "tenth", F32, 1, d1, 0);
    pb_bytes(&tt, 9, &tenth, 4);
    attr_t cv = {'t', "value", .sub = &ct}, tv = {'t', "value", .sub = &tt};
    attr_t to16 = {'i', "to", .i = F16}, axis0 = {'i', "axis", .i = 0};
    add_node(&g, "Constant", "c4", "", "c4out", &cv, 1, NULL);
    add_node(&g, "Constant", "ct", "", "t32", &tv, 1, NULL);
    add_node(&g, "Cast", "tohalf", "t32", "t16", &to16, 1, NULL); /* folds: 0.1 in fp16 */
    add_node(&g, "Reshape", "wview", "W,shp", "Wr", NULL, 0, NULL);
    add_node(&g, "Shape", "shape", "x", "s", NULL, 0, NULL);
    add_node(&g, "Gather", "g0", "s,minus1", "n", &axis0, 1, NULL); /* [4] */
    add_node(&g, "Concat", "cat", "n,minus1", "tgt", &axis0, 1, NULL);
    add_node(&g, "Reshape", "rs", "x,tgt", "xr", NULL, 0, NULL);
    add_node(&g, "Sink", "sink", "c4out,t16,Wr,xr", "y", NULL, 0, "test.sink");
    add_output(&g, "y", F32);
    pb_t m = make_model(&g);
    af_graph_t *gr;
    af_error_t err;
    int rc = load(&m, NULL, 0, &gr, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_memory_equal(tensor(gr, "c4out")->data, c4, sizeof c4);
    const uint16_t half_tenth = 0x2e66; /* 0.1 rounded to nearest even in fp16 */
    assert_memory_equal(tensor(gr, "t16")->data, &half_tenth, 2);
    const af_tensor_info_t *wr = tensor(gr, "Wr");
    assert_int_equal(wr->kind, AF_TENSOR_CONSTANT);
    assert_shape(wr, 2, (int64_t)3, (int64_t)2);
    assert_memory_equal(wr->data, wa, sizeof wa); /* a view of W shares W's bytes */
    const int64_t tgt[] = {4, -1};
    assert_memory_equal(tensor(gr, "tgt")->data, tgt, sizeof tgt);
    assert_int_equal(af_graph_find_tensor(gr, "W"), -1); /* read only by the folded view */
    af_graph_destroy(gr);
    free(m.b);
}

/* Writes model.onnx (one f32 [2,3] initializer `W` with the given external_data keys) in the
 * temp dir and returns its path in `path`. */
static void write_ext_model(char *path, size_t n, const char *const *kv, int nkv)
{
    pb_t g = {0}, t = {0};
    int64_t d[] = {2, 3};
    tensor_head(&t, "W", F32, 2, d, 0);
    for (int i = 0; i < nkv; i += 2) {
        pb_t e = {0};
        pb_str(&e, 1, kv[i]);
        pb_str(&e, 2, kv[i + 1]);
        pb_msg(&t, 13, &e);
    }
    pb_int(&t, 14, 1); /* data_location = EXTERNAL */
    pb_msg(&g, 5, &t);
    add_sink(&g, "W");
    pb_t m = make_model(&g);
    path_in(path, n, "ext.onnx");
    write_file(path, m.b, m.n);
    free(m.b);
}

static int load_ext(const char *const *kv, int nkv, af_graph_t **g, af_error_t *err)
{
    char path[300];
    write_ext_model(path, sizeof path, kv, nkv);
    af_error_clear(err);
    *g = NULL;
    return af_onnx_load(path, NULL, g, err);
}

static void expect_ext_error(const char *const *kv, int nkv, int code, const char *needle)
{
    af_graph_t *g;
    af_error_t err;
    int rc = load_ext(kv, nkv, &g, &err);
    if (rc != code || !strstr(err.msg, needle))
        print_error("want %s with '%s', got %s: %s\n", af_err_name(code), needle, af_err_name(rc),
                    err.msg);
    assert_int_equal(rc, code);
    assert_non_null(strstr(err.msg, needle));
    assert_null(g);
}

static void test_onnx_data_external(void **state)
{
    (void)state;
    char bin[300], outside[300], link[300], cmd[700];
    uint8_t blob[64] = {0};
    memcpy(blob + 8, wa, sizeof wa);  /* aligned at 8 */
    memcpy(blob + 34, wb, sizeof wb); /* misaligned at 34 */
    path_in(bin, sizeof bin, "w.bin");
    write_file(bin, blob, sizeof blob);
    af_graph_t *g;
    af_error_t err;

    const char *kv1[] = {"location", "w.bin", "offset", "8", "length", "24"};
    assert_int_equal(load_ext(kv1, 6, &g, &err), 0);
    assert_memory_equal(tensor(g, "W")->data, wa, sizeof wa);
    assert_true(in_mapping_of(tensor(g, "W")->data, bin)); /* zero-copy into w.bin */
    af_graph_destroy(g);
    const char *kv2[] = {"location", "w.bin", "offset", "34", "length", "24"};
    assert_int_equal(load_ext(kv2, 6, &g, &err), 0);
    assert_memory_equal(tensor(g, "W")->data, wb, sizeof wb);
    assert_false(in_mapping_of(tensor(g, "W")->data, bin)); /* misaligned: copied */
    af_graph_destroy(g);

    /* The checksum key is the SHA-1 of the whole file. */
    char sum[64] = "", line[200];
    snprintf(cmd, sizeof cmd, "sha1sum '%s'", bin);
    FILE *p = popen(cmd, "r");
    if (p && fgets(line, sizeof line, p))
        sscanf(line, "%40s", sum);
    if (p)
        pclose(p);
    if (strlen(sum) == 40) {
        const char *kv3[] = {"location", "w.bin", "offset", "8", "checksum", sum};
        assert_int_equal(load_ext(kv3, 6, &g, &err), 0);
        af_graph_destroy(g);
        sum[0] = sum[0] == '0' ? '1' : '0';
        expect_ext_error(kv3, 6, AF_EPARSE, "SHA-1");
    }

    /* Refusals, each naming the tensor. */
    const char *up[] = {"location", "../w.bin"}, *abs_[] = {"location", "/etc/passwd"};
    expect_ext_error(up, 2, AF_EINVAL, "tensor 'W'");
    expect_ext_error(abs_, 2, AF_EINVAL, "not a relative path");
    snprintf(outside, sizeof outside, "%s.outside", tmpdir);
    write_file(outside, blob, sizeof blob);
    path_in(link, sizeof link, "link.bin");
    assert_int_equal(symlink(outside, link), 0);
    const char *viasym[] = {"location", "link.bin"};
    expect_ext_error(viasym, 2, AF_EINVAL, "outside the directory");
    unlink(outside);
    const char *none[] = {"location", "missing.bin"}, *noloc[] = {"offset", "0"};
    expect_ext_error(none, 2, AF_EIO, "missing.bin");
    expect_ext_error(noloc, 2, AF_EPARSE, "location");
    const char *past[] = {"location", "w.bin", "offset", "60", "length", "24"};
    expect_ext_error(past, 6, AF_EPARSE, "outside");
    const char *len[] = {"location", "w.bin", "offset", "0", "length", "20"};
    expect_ext_error(len, 6, AF_EPARSE, "need 24");
    const char *bad[] = {"location", "w.bin", "offset", "-4"};
    expect_ext_error(bad, 4, AF_EPARSE, "offset");

    /* From memory there is no directory to look in. */
    char path[300];
    write_ext_model(path, sizeof path, kv1, 6);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    af_error_clear(&err);
    assert_int_equal(af_onnx_load_mem(buf, n, NULL, &g, &err), AF_ENOTSUP);
    assert_non_null(strstr(err.msg, "w.bin"));
}

/* A marker in the input cannot point a tensor at another tensor's bytes. */
static void test_onnx_data_forged_marker(void **state)
{
    (void)state;
    pb_t g = {0}, t = {0};
    int64_t d2[] = {2}, d6[] = {6};
    float small[2] = {42, 43};
    tensor_head(&t, "S", F32, 1, d2, 0);
    pb_bytes(&t, 9, small, sizeof small); /* 8 bytes: stays inline */
    pb_varint(&t, (uint64_t)536870911 << 3);
    pb_varint(&t, 0); /* "location 0": the big tensor below */
    pb_msg(&g, 5, &t);
    add_raw(&g, "L", F32, 1, d6, wa, sizeof wa, 0);
    add_sink(&g, "S,L");
    pb_t m = make_model(&g);
    af_graph_t *gr;
    af_error_t err;
    assert_int_equal(load(&m, NULL, 0, &gr, &err), 0);
    assert_memory_equal(tensor(gr, "S")->data, small, sizeof small);
    assert_memory_equal(tensor(gr, "L")->data, wa, sizeof wa);
    af_graph_destroy(gr);
    free(m.b);
}

/* A chain stored in order or in reverse: same graph, every tensor static. */
static pb_t model_chain(int reverse)
{
    static const char *const nodes[][4] = {
        {"Relu", "r1", "x", "a"},    {"Conv", "c1", "a,W", "b"}, {"Sigmoid", "s1", "b", "c"},
        {"Add", "add", "c,b", "d"},  {"Shape", "sh", "d", "s"},  {"Reshape", "rs", "d,s", "e"},
        {"MaxPool", "mp", "e", "f"}, {"Relu", "r2", "f", "g2"},  {"Mul", "mul", "g2,f", "h"},
        {"Tanh", "t", "h", "y"},
    };
    pb_t g = {0};
    int64_t xd[] = {1, 2, 8, 8}, wd[] = {3, 2, 3, 3}, k[] = {2, 2};
    float w[54];
    for (int i = 0; i < 54; i++)
        w[i] = (float)i / 8;
    add_input(&g, "x", F32, 4, xd, NULL);
    add_raw(&g, "W", F32, 4, wd, w, sizeof w, 0);
    attr_t ks = {'I', "kernel_shape", .ints = k, .n = 2};
    int n = (int)(sizeof nodes / sizeof nodes[0]);
    for (int i = 0; i < n; i++) {
        const char *const *nd = nodes[reverse ? n - 1 - i : i];
        add_node(&g, nd[0], nd[1], nd[2], nd[3], !strcmp(nd[0], "MaxPool") ? &ks : NULL,
                 !strcmp(nd[0], "MaxPool"), NULL);
    }
    add_output(&g, "y", F32);
    return make_model(&g);
}

static void test_onnx_data_shuffled_nodes(void **state)
{
    (void)state;
    pb_t ms = model_chain(0), mr = model_chain(1);
    af_graph_t *gs, *gr;
    af_error_t err;
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    o.use_declared = 0; /* inferred shapes only: nothing to fall back on */
    assert_int_equal(af_onnx_load_mem(ms.b, ms.n, &o, &gs, &err), 0);
    int rc = af_onnx_load_mem(mr.b, mr.n, &o, &gr, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(af_graph_tensor_count(gs), af_graph_tensor_count(gr));
    assert_int_equal(af_graph_node_count(gs), af_graph_node_count(gr));
    for (int32_t i = 0; i < af_graph_tensor_count(gs); i++) {
        const af_tensor_info_t *a = af_graph_tensor(gs, i), *b = tensor(gr, a->name);
        assert_true(a->bytes >= 0);
        assert_int_equal(a->bytes, b->bytes);
        assert_int_equal(a->kind, b->kind);
        assert_int_equal(a->rank, b->rank);
        for (int32_t k = 0; k < a->rank; k++)
            assert_int_equal(a->shape[k], b->shape[k]);
        assert_int_equal(a->alias_of < 0, b->alias_of < 0);
        if (a->data)
            assert_memory_equal(a->data, b->data, (size_t)a->bytes);
    }
    for (int32_t v = 0; v < af_graph_node_count(gs); v++) {
        const af_node_info_t *a = af_graph_node(gs, v);
        const af_node_info_t *b = af_graph_node(gr, af_graph_find_node(gr, a->name));
        assert_non_null(b);
        assert_string_equal(a->op, b->op);
        assert_int_equal(a->n_inputs, b->n_inputs);
        for (int32_t k = 0; k < a->n_inputs; k++)
            assert_string_equal(af_graph_tensor(gs, a->inputs[k])->name,
                                af_graph_tensor(gr, b->inputs[k])->name);
    }
    /* The sorted model keeps its file order; the reversed one is imported in Kahn's order. */
    assert_string_equal(af_graph_node(gs, af_graph_input_order(gs)[0])->name, "r1");
    assert_string_equal(af_graph_node(gr, 0)->name, "r1");
    af_graph_destroy(gs);
    af_graph_destroy(gr);
    free(ms.b);
    free(mr.b);
}

/* A dynamic tensor says why: the op, the node, the cause. */
static void test_onnx_data_dynamic_reasons(void **state)
{
    (void)state;
    pb_t g = {0};
    int64_t xd[] = {2, 3}, od[] = {1, 3}, sd[] = {2};
    add_input(&g, "x", F32, 2, xd, NULL);
    add_input(&g, "o", F32, 2, od, NULL); /* Expand of a 1 by values known at run time */
    add_input(&g, "s", I64, 1, sd, NULL);
    add_node(&g, "Expand", "grow", "o,s", "e", NULL, 0, NULL);
    add_node(&g, "Relu", "relu", "e", "r", NULL, 0, NULL);
    add_node(&g, "NonZero", "nz", "x", "z", NULL, 0, NULL);
    add_node(&g, "Fancy", "fancy", "x", "f", NULL, 0, "com.example");
    add_node(&g, "Sink", "sink", "r,z,f", "y", NULL, 0, "test.sink");
    add_output(&g, "y", F32);
    pb_t m = make_model(&g);
    af_graph_t *gr;
    af_error_t err;
    assert_int_equal(load(&m, NULL, 0, &gr, &err), 0);
    struct {
        const char *t, *want[3];
    } cases[] = {
        {"e", {"op Expand", "node 'grow'", "input 's'"}},
        {"r", {"op Relu", "node 'relu'", "'e' has an unknown size"}},
        {"z", {"op NonZero", "node 'nz'", "values"}},
        {"f", {"op Fancy", "node 'fancy'", "domain 'com.example'"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *why = af_graph_dynamic_reason(gr, af_graph_find_tensor(gr, cases[i].t));
        if (!why)
            fail_msg("tensor %s: no reason", cases[i].t);
        assert_non_null(why);
        for (int k = 0; k < 3; k++)
            if (!strstr(why, cases[i].want[k]))
                fail_msg("tensor %s: reason '%s' lacks '%s'", cases[i].t, why, cases[i].want[k]);
    }
    assert_null(af_graph_dynamic_reason(gr, af_graph_find_tensor(gr, "x")));
    af_graph_destroy(gr);
    free(m.b);
}

/* ---- a real model with its own weights ------------------------------------------------------ */

#define TD "/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d/"

/* Reads an f32 TensorProto (.pb): raw_data or float_data into out (n floats). 1 when read. */
static int read_pb_f32(const char *path, float *out, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    uint8_t buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf, f), pos = 0, got = 0;
    fclose(f);
    while (pos < len) {
        uint64_t tag = 0, v = 0;
        for (int s = 0; pos < len; s += 7) {
            tag |= (uint64_t)(buf[pos] & 0x7f) << s;
            if (!(buf[pos++] & 0x80))
                break;
        }
        int wt = (int)(tag & 7);
        if (wt == 0 || wt == 2)
            for (int s = 0; pos < len; s += 7) {
                v |= (uint64_t)(buf[pos] & 0x7f) << s;
                if (!(buf[pos++] & 0x80))
                    break;
            }
        if (wt == 2 && (tag >> 3) == 9 && v == n * 4 && pos + v <= len) {
            memcpy(out, buf + pos, (size_t)v);
            got = n;
        }
        pos += wt == 2 ? (size_t)v : wt == 5 ? 4 : wt == 1 ? 8 : 0;
    }
    return got == n;
}

/* Runs g once on the reference kernels with input x; the output in y. */
static void run_once(const af_graph_t *g, const float *x, size_t xn, float *y, size_t yn)
{
    af_plan_t *p;
    af_error_t err;
    assert_int_equal(af_plan_create(g, NULL, &p, &err), 0);
    af_executor_opts_t o;
    af_executor_opts_init(&o);
    o.threads = 1;
    o.kernels = "real";
    af_executor_t *ex;
    assert_int_equal(af_executor_create(&o, &ex, NULL), 0);
    af_session_t *s;
    assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
    af_buffer_t in = {(void *)x, xn * 4}, out = {y, yn * 4};
    int rc = af_session_run(s, &in, &out, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_destroy(p);
}

static void test_onnx_data_real_model_runs(void **state)
{
    (void)state;
    enum { XN = 2 * 3 * 7 * 5, YN = 2 * 4 * 5 * 4 };
    static float x[XN], want[YN], y[YN], yj[YN];
    if (!read_pb_f32(TD "test_data_set_0/input_0.pb", x, XN) ||
        !read_pb_f32(TD "test_data_set_0/output_0.pb", want, YN))
        skip();
    af_graph_t *g, *gj;
    af_error_t err;
    assert_int_equal(af_onnx_load(TD "model.onnx", NULL, &g, &err), 0);
    run_once(g, x, XN, y, YN);
    double maxerr = 0;
    for (int i = 0; i < YN; i++)
        maxerr = fmax(maxerr, fabs((double)y[i] - want[i]));
    print_message("test_Conv2d with its weights: max abs error %g\n", maxerr);
    assert_true(maxerr < 1e-4);

    /* The JSON conversion with its weights file runs to the same bytes. */
    char path[300];
    path_in(path, sizeof path, "conv.json");
    assert_int_equal(af_graph_save_json(g, path, &err), 0);
    int rc = af_graph_load_json(path, &gj, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    run_once(gj, x, XN, yj, YN);
    assert_memory_equal(y, yj, sizeof y);
    af_graph_destroy(gj);
    af_graph_destroy(g);
}

static void test_onnx_data_oom_clean(void **state)
{
    (void)state;
    char path[300], bin[300];
    uint8_t blob[64] = {0};
    memcpy(blob + 8, wa, sizeof wa);
    path_in(bin, sizeof bin, "w.bin");
    write_file(bin, blob, sizeof blob);
    const char *kv[] = {"location", "w.bin", "offset", "8", "length", "24"};
    write_ext_model(path, sizeof path, kv, 6);
    assert_true(oom_run("external data", NULL, 0, path, NULL, 0) > 10);
    pb_t m = model_aligned_pair();
    path_in(path, sizeof path, "pair.onnx");
    write_file(path, m.b, m.n);
    assert_true(oom_run("mapped weights", NULL, 0, path, NULL, 0) > 10);
    assert_true(oom_run("weights from memory", m.b, m.n, NULL, NULL, 0) > 10);
    free(m.b);
    m = model_chain(1);
    assert_true(oom_run("reversed nodes", m.b, m.n, NULL, NULL, 0) > 10);
    free(m.b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_onnx_data_raw_zero_copy),
        cmocka_unit_test(test_onnx_data_typed_fields),
        cmocka_unit_test(test_onnx_data_constants_folds_views),
        cmocka_unit_test(test_onnx_data_external),
        cmocka_unit_test(test_onnx_data_forged_marker),
        cmocka_unit_test(test_onnx_data_shuffled_nodes),
        cmocka_unit_test(test_onnx_data_dynamic_reasons),
        cmocka_unit_test(test_onnx_data_real_model_runs),
        cmocka_unit_test(test_onnx_data_oom_clean),
    };
    if (!af_onnx_available()) {
        printf("ONNX importer not built in: skipping\n");
        return 0;
    }
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
