/*
 * arenaflow convert — imports an ONNX model (graph/onnx.c) and writes it in the JSON graph
 * format (with a weights file beside it when the model has constant data), or as a table of
 * inferred shapes (--shapes, used by tests/onnx_shapes.py to compare with ONNX's own shape
 * inference), or as a table of constant-data checksums (--data-sums, used by
 * tests/onnx_data.py to compare the weights with onnx.numpy_helper's).
 */
#include "arenaflow/onnx.h"
#include "tools/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: arenaflow convert MODEL.onnx [--input NAME=d0,d1,...]... [--out GRAPH.json]\n"
        "                         [--shapes FILE] [--data-sums FILE] [--dynamic] [--no-declared]\n"
        "                         [--keep-folded] [--opaque-loops] [--copy-data] [--skip-data]\n\n"
        "Imports an ONNX model with static shape inference and writes the graph as JSON\n"
        "(to stdout when --out is not given). With --out, the model's weights go to a weights\n"
        "file beside the JSON (GRAPH.weights) that the JSON references, so the converted graph\n"
        "runs with the same constants; on stdout only the structure is written.\n\n"
        "  --input NAME=DIMS  dims of graph input NAME (\"NAME=\" for a scalar), or the value of\n"
        "                     a symbolic dim (\"batch_size=1\"); may be repeated\n"
        "  --out FILE         JSON output file ('-' = stdout)\n"
        "  --shapes FILE      write 'name kind dtype rank dims bytes' lines instead ('-' = "
        "stdout)\n"
        "  --data-sums FILE   write 'name dtype bytes checksum' lines, one per constant with\n"
        "                     data ('-' = stdout; checksum: see tests/onnx_data.py)\n"
        "  --dynamic          allow inputs with unknown dims (their tensors become dynamic)\n"
        "  --no-declared      ignore the shapes the model declares; inferred shapes only\n"
        "  --keep-folded      keep the nodes whose outputs fold to constants\n"
        "  --opaque-loops     import Loop/Scan as one opaque node (dynamic outputs)\n"
        "  --copy-data        copy the weights into memory instead of mapping the model file\n"
        "  --skip-data        do not load the weights at all (shapes only)\n");
}

static const char *kind_name(af_tensor_kind_t k)
{
    static const char *names[] = {"intermediate", "input", "output", "constant", "scratch"};
    return (unsigned)k < 5 ? names[k] : "?";
}

/* 'name kind dtype rank dims bytes' per tensor. */
static void put_shapes(const af_graph_t *g, FILE *f)
{
    for (int32_t i = 0; i < af_graph_tensor_count(g); i++) {
        const af_tensor_info_t *t = af_graph_tensor(g, i);
        fprintf(f, "%s\t%s\t%s\t%d\t", t->name, kind_name(t->kind), af_dtype_name(t->dtype),
                t->rank);
        for (int32_t k = 0; k < t->rank; k++)
            fprintf(f, "%s%lld", k ? "," : "", (long long)t->shape[k]);
        fprintf(f, "\t%lld\n", (long long)t->bytes);
    }
}

/* 'name dtype bytes checksum' per constant with data. */
static void put_sums(const af_graph_t *g, FILE *f)
{
    for (int32_t i = 0; i < af_graph_tensor_count(g); i++) {
        const af_tensor_info_t *t = af_graph_tensor(g, i);
        if (!t->data)
            continue;
        /* tests/onnx_data.py computes the same with numpy: zero-padded little-endian words w_i,
         * h = bytes ^ sum (w_i ^ w_i >> 29) * (2i + 1) * K mod 2^64. */
        uint64_t h = 0;
        const unsigned char *p = t->data;
        for (int64_t k = 0; k < t->bytes; k += 8) {
            uint64_t w = 0;
            for (int64_t j = 0; j < 8 && k + j < t->bytes; j++)
                w |= (uint64_t)p[k + j] << (8 * j);
            h += (w ^ (w >> 29)) * (((uint64_t)k / 8 * 2 + 1) * 0x9E3779B97F4A7C15ull);
        }
        h ^= (uint64_t)t->bytes;
        fprintf(f, "%s\t%s\t%lld\t%016llx\n", t->name, af_dtype_name(t->dtype), (long long)t->bytes,
                (unsigned long long)h);
    }
}

/* Writes a table with put() to path ('-' = stdout). */
static int write_table(const af_graph_t *g, const char *path,
                       void (*put)(const af_graph_t *, FILE *))
{
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!f) {
        cli_error("%s: cannot open for writing", path);
        return CLI_FAIL;
    }
    put(g, f);
    int bad = ferror(f);
    if (f != stdout && fclose(f))
        bad = 1;
    if (bad) {
        cli_error("%s: write error", path);
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cmd_convert(int argc, char **argv)
{
    const char *model = NULL, *out = NULL, *shapes = NULL, *sums = NULL;
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    const char **inputs = calloc((size_t)argc + 1, sizeof(*inputs));
    if (!inputs) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    int rc = CLI_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            rc = CLI_OK;
            goto done;
        } else if (!strcmp(a, "--input") && i + 1 < argc) {
            inputs[o.n_inputs++] = argv[++i];
        } else if (!strncmp(a, "--input=", 8)) {
            inputs[o.n_inputs++] = a + 8;
        } else if (!strcmp(a, "--out") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(a, "--shapes") && i + 1 < argc) {
            shapes = argv[++i];
        } else if (!strcmp(a, "--data-sums") && i + 1 < argc) {
            sums = argv[++i];
        } else if (!strcmp(a, "--dynamic")) {
            o.allow_dynamic = 1;
        } else if (!strcmp(a, "--no-declared")) {
            o.use_declared = 0;
        } else if (!strcmp(a, "--keep-folded")) {
            o.keep_folded = 1;
        } else if (!strcmp(a, "--opaque-loops")) {
            o.opaque_control_flow = 1;
        } else if (!strcmp(a, "--copy-data")) {
            o.copy_data = 1;
        } else if (!strcmp(a, "--skip-data")) {
            o.skip_data = 1;
        } else if (a[0] == '-' && a[1]) {
            cli_error("convert: unknown option '%s'", a);
            usage(stderr);
            goto done;
        } else if (!model) {
            model = a;
        } else {
            cli_error("convert: more than one model given");
            goto done;
        }
    }
    if (!model) {
        usage(stderr);
        goto done;
    }
    o.inputs = inputs;
    af_error_t err;
    af_error_clear(&err);
    af_graph_t *g = NULL;
    int r = af_onnx_load(model, &o, &g, &err);
    if (r) {
        cli_error("%s", err.msg[0] ? err.msg : af_strerror(r));
        rc = CLI_FAIL;
        goto done;
    }
    if (shapes || sums) {
        rc = shapes ? write_table(g, shapes, put_shapes) : CLI_OK;
        if (sums && rc == CLI_OK)
            rc = write_table(g, sums, put_sums);
    } else if (!out || !strcmp(out, "-")) {
        char *json = NULL;
        r = af_graph_to_json(g, &json, &err);
        if (!r)
            fputs(json, stdout);
        af_free(json);
        rc = r ? CLI_FAIL : CLI_OK;
        if (!r && af_graph_data_bytes(g))
            fprintf(stderr,
                    "arenaflow: note: %llu bytes of constant data were not written (stdout gets "
                    "the structure only; --out FILE.json also writes FILE.weights)\n",
                    (unsigned long long)af_graph_data_bytes(g));
    } else {
        r = af_graph_save_json(g, out, &err);
        rc = r ? CLI_FAIL : CLI_OK;
    }
    if (r)
        cli_error("%s", err.msg[0] ? err.msg : af_strerror(r));
    af_graph_destroy(g);
done:
    free(inputs);
    return rc;
}
