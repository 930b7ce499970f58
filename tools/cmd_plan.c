/*
 * arenaflow plan GRAPH: plan a graph and print its memory report (text or one JSON object),
 * with every tensor the arena does not cover because its size is unknown: its op, dtype, the
 * dims known so far and the reason the importer recorded, so nothing is dynamic silently.
 */
#include "arenaflow/pack.h"
#include "tools/cli.h"
#include "tools/run_util.h"

#include "arenaflow/render.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INPUTS 64

static void usage(FILE *f)
{
    fprintf(f,
            "usage: arenaflow plan GRAPH [options]\n\n"
            "Plans GRAPH (a JSON graph, or an .onnx model) — the order its nodes run in and the\n"
            "offset of every tensor in one arena — verifies the plan and prints the report.\n\n"
            "options:\n"
            "  --algo NAME        placement algorithm (default portfolio):");
    for (const char *const *n = af_place_names(); *n; n++)
        fprintf(f, " %s", *n);
    fprintf(f, "\n  --schedule NAME    scheduler (default best):");
    for (const char *const *n = af_schedule_names(); *n; n++)
        fprintf(f, " %s", *n);
    fprintf(f, "\n"
               "  --mode offset|shared  one arena with offsets, or shared buffers (objects)\n"
               "  --alignment N      offset alignment in bytes (default 256)\n"
               "  --budget BYTES     fit the arena in BYTES (K/M/G ok): when no order does, drop\n"
               "                     tensors after an early use and recompute them (and with\n"
               "                     --offload swap them to host memory and back) before a\n"
               "                     later one; a budget that cannot be met fails (exit 1)\n"
               "                     naming the smallest budget that can\n"
               "  --no-recompute     under --budget: do not recompute\n"
               "  --offload          under --budget: also consider host offload (SwapOut/SwapIn)\n"
               "  --bandwidth B/S    host link bytes/s, one stream for swap-out and swap-in\n"
               "                     (default 16e9; 16G ok)\n"
               "  --compute-rate R   node cost units per second (default 1e12: costs as FLOPs\n"
               "                     on a 1 TFLOP/s device) for the modelled time\n"
               "  --time-limit S     time limit of --algo search (default 10)\n"
               "  --capacity BYTES   --algo search: target arena height\n"
               "  --safe             safe mode: no reuse at all (every tensor its own bytes)\n"
               "  --no-inplace       ignore in-place hints\n"
               "  --config FILE      read planner options from an INI file ([planner] section);\n"
               "                     command-line options override it\n"
               "  --input NAME=DIMS  ONNX: fix a symbolic input shape, e.g. input=1,3,224,224\n"
               "  --kernels SET      plan for kernel set SET (onednn, reference, real...): the\n"
               "                     kernels' working memory (scratch) becomes planned tensors\n"
               "                     and the report says how many arena bytes it takes\n"
               "  --fuse on|off|auto operator fusion: BatchNormalization folded into Conv, unary\n"
               "                     ops (Relu, Clip, Sigmoid...) applied by the node before\n"
               "                     them, so their inputs take no arena bytes; the report\n"
               "                     gives the bytes saved (default auto: on with --kernels\n"
               "                     real or onednn, else off)\n"
               "  --fuse-bn affine|weights   BatchNormalization into Conv as the affine after\n"
               "                     it (default: the unfused plan's floats exactly) or into\n"
               "                     its weights (one pass less, other roundings)\n"
               "  --events FILE      write the event table (CSV) to FILE ('-' = stdout)\n"
               "  --svg FILE         write the memory map (steps x arena offset) as SVG\n"
               "  --html FILE        the same map in a self-contained HTML page (hover, zoom)\n"
               "  --compare NAME     also draw the plan of placer or scheduler NAME beside it\n"
               "  --json             print one JSON object instead of the text report\n"
               "  -h, --help         this help\n\n"
               "exit status: 0 planned, 1 rejected input or failed plan, 2 usage error\n");
}

/* The dynamic tensors the arena leaves to run time (roots; their views follow them). */
static int is_uncovered(const af_graph_t *g, const af_plan_t *p, int32_t t)
{
    return af_plan_tensor(p, t)->where == AF_WHERE_DYNAMIC && af_graph_tensor(g, t)->alias_of < 0;
}

/* "f32 [?,3,224,224]" and the bytes the known dims give per unit of the unknown ones (0: none
 * known, the dtype or rank is unknown). */
static uint64_t describe(const af_tensor_info_t *t, char *out, size_t n)
{
    size_t len = (size_t)snprintf(out, n, "%s ", af_dtype_name(t->dtype));
    uint64_t known = af_dtype_size(t->dtype);
    if (t->rank < 0) {
        snprintf(out + len, n - len, "[rank unknown]");
        return 0;
    }
    len += (size_t)snprintf(out + len, n - len, "[");
    for (int32_t i = 0; i < t->rank && len < n; i++) {
        if (t->shape[i] >= 0) {
            len += (size_t)snprintf(out + len, n - len, "%s%lld", i ? "," : "",
                                    (long long)t->shape[i]);
            known *= (uint64_t)t->shape[i];
        } else {
            len += (size_t)snprintf(out + len, n - len, "%s?", i ? "," : "");
        }
    }
    if (len < n)
        snprintf(out + len, n - len, "]");
    return known;
}

static const char *producer_op(const af_graph_t *g, const af_tensor_info_t *t)
{
    return t->producer >= 0 ? af_graph_node(g, t->producer)->op : "(input)";
}

static void print_dynamic(const af_graph_t *g, const af_plan_t *p)
{
    const af_plan_report_t *r = af_plan_report(p);
    if (!r->dynamic_tensors)
        return;
    printf("not in the arena  %d dynamic tensors, sizes unknown until run time (served by the "
           "dynamic region):\n",
           r->dynamic_tensors);
    for (int32_t t = 0; t < af_graph_tensor_count(g); t++) {
        if (!is_uncovered(g, p, t))
            continue;
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        char shape[200];
        uint64_t per = describe(ti, shape, sizeof shape);
        printf("  %-24s %-12s %s", ti->name, producer_op(g, ti), shape);
        if (per && ti->rank >= 0)
            printf(" = %llu bytes x the unknown dims", (unsigned long long)per);
        printf("\n    why: %s\n", af_graph_dynamic_reason(g, t));
    }
}

/* The same list as JSON objects. NULL when out of memory. */
static json_t *dynamic_json(const af_graph_t *g, const af_plan_t *p)
{
    json_t *arr = json_array();
    for (int32_t t = 0; arr && t < af_graph_tensor_count(g); t++) {
        if (!is_uncovered(g, p, t))
            continue;
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        char shape[200];
        uint64_t per = describe(ti, shape, sizeof shape);
        json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:s}", "tensor", ti->name, "op",
                              producer_op(g, ti), "type", shape, "known_bytes_per_unknown",
                              (json_int_t)per, "reason", af_graph_dynamic_reason(g, t));
        if (!o || json_array_append_new(arr, o)) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* Under a budget: what the rewrite cost. */
static void print_budget(const af_plan_report_t *r)
{
    if (!r->budget_method)
        return;
    char a[32], b[32], c[32];
    af_format_bytes(a, sizeof a, r->unbudgeted_bytes);
    af_format_bytes(b, sizeof b, r->swapped_bytes);
    af_format_bytes(c, sizeof c, r->host_bytes);
    printf("under budget      %s (%.3f ms)\n", r->budget_method, r->budget_ms);
    printf("without budget    %12llu  %s\n", (unsigned long long)r->unbudgeted_bytes, a);
    printf("recomputed nodes  %d\n", r->recomputed_nodes);
    printf("swapped bytes     %12llu  %s in %d swap nodes (host tier %s)\n",
           (unsigned long long)r->swapped_bytes, b, r->swap_nodes, c);
    printf("extra compute     %.6g (%.2f%% of one plain round of %.6g)\n", r->extra_cost,
           r->base_cost > 0 ? 100.0 * r->extra_cost / r->base_cost : 0.0, r->base_cost);
    printf("modelled time     %.6g s (plain round %.6g s, overhead %.2f%%)\n", r->modelled_s,
           r->plain_modelled_s,
           r->plain_modelled_s > 0 ? 100.0 * (r->modelled_s / r->plain_modelled_s - 1) : 0.0);
}

/* With fusion: what it folded and the arena it saved against the unfused graph. */
static void print_fusion(const af_plan_report_t *r)
{
    if (!r->unfused_bytes)
        return;
    char a[32], b[32];
    uint64_t saved = r->unfused_bytes > r->arena_bytes ? r->unfused_bytes - r->arena_bytes : 0;
    af_format_bytes(a, sizeof a, r->unfused_bytes);
    af_format_bytes(b, sizeof b, saved);
    printf("fused nodes       %d (%d BatchNormalization into Conv, %d bias Add into Conv/MatMul, "
           "%d residual Add into Conv/MatMul/Gemm, %d unary ops as post-ops; %d intermediates "
           "gone)\n",
           r->fused_nodes, r->bn_folded, r->biases_folded, r->sums_folded,
           r->fused_nodes - r->bn_folded - r->biases_folded - r->sums_folded, r->fused_tensors);
    printf("without fusion    %12llu  %s\n", (unsigned long long)r->unfused_bytes, a);
    printf("fusion saved      %12llu  %s (%.2f%% of the arena without fusion)\n",
           (unsigned long long)saved, b, 100.0 * (double)saved / (double)r->unfused_bytes);
}

static void print_text(const af_graph_t *g, const af_plan_report_t *r)
{
    char a[32], b[32], c[32], d[32], e[32], f[32];
    af_format_bytes(a, sizeof a, r->naive_bytes);
    af_format_bytes(b, sizeof b, r->input_order_bytes);
    af_format_bytes(c, sizeof c, r->shared_object_bytes);
    af_format_bytes(d, sizeof d, r->arena_bytes);
    af_format_bytes(e, sizeof e, r->lower_bound_bytes);
    af_format_bytes(f, sizeof f, r->any_order_bound_bytes);
    printf("graph             %s\n", af_graph_name(g)[0] ? af_graph_name(g) : "(unnamed)");
    printf("tensors           %d (%d in the arena, %d dynamic)\n", r->tensors, r->arena_tensors,
           r->dynamic_tensors);
    printf("nodes             %d\n", r->nodes);
    printf("schedule          %s%s\n", r->schedule, r->schedule_optimal ? " (proven optimal)" : "");
    printf("placer            %s\n", r->placer);
    printf("naive bytes       %12llu  %s\n", (unsigned long long)r->naive_bytes, a);
    if (r->input_order_bytes)
        printf("input order       %12llu  %s\n", (unsigned long long)r->input_order_bytes, b);
    else
        printf("input order       (not computed: rewritten, restored or over 100,000 "
               "tensors)\n");
    if (r->shared_object_bytes)
        printf("shared objects    %12llu  %s\n", (unsigned long long)r->shared_object_bytes, c);
    else
        printf("shared objects    (not computed above 100,000 tensors)\n");
    printf("arena bytes       %12llu  %s\n", (unsigned long long)r->arena_bytes, d);
    printf("lower bound       %12llu  %s  (max live bytes in this order)\n",
           (unsigned long long)r->lower_bound_bytes, e);
    printf("any-order bound   %12llu  %s  (max over nodes of inputs + outputs)\n",
           (unsigned long long)r->any_order_bound_bytes, f);
    printf("arena / lower     %.4f\n",
           r->lower_bound_bytes ? (double)r->arena_bytes / (double)r->lower_bound_bytes : 1.0);
    printf("arena / naive     %.4f\n",
           r->naive_bytes ? (double)r->arena_bytes / (double)r->naive_bytes : 1.0);
    printf("peak step         %d\n", r->peak_step);
    printf("constants         %llu bytes (outside the arena; %llu bytes of data carried by the "
           "graph)\n",
           (unsigned long long)r->constant_bytes, (unsigned long long)af_graph_data_bytes(g));
    if (r->scratch_tensors) {
        char sb[32];
        af_format_bytes(sb, sizeof sb, r->scratch_bytes);
        printf("scratch           %12llu  %s of the arena host kernel working memory (%d "
               "tensors, largest %llu bytes)\n",
               (unsigned long long)r->scratch_bytes, sb, r->scratch_tensors,
               (unsigned long long)r->scratch_max_bytes);
    }
    printf("reuse edges       %d\n", r->reuse_edges);
    print_fusion(r);
    print_budget(r);
    printf("planning time     %.3f ms (schedule %.3f, lifetimes %.3f, place %.3f, verify %.3f)\n",
           r->total_ms + r->verify_ms, r->schedule_ms, r->lifetime_ms, r->place_ms, r->verify_ms);
}

static int print_json(const af_graph_t *g, const af_plan_t *p)
{
    const af_plan_report_t *r = af_plan_report(p);
    json_t *o = json_pack(
        "{s:s, s:i, s:i, s:i, s:i, s:s, s:b, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:i, s:I, "
        "s:i, s:f, s:f, s:f, s:f, s:f, s:f}",
        "graph", af_graph_name(g), "tensors", r->tensors, "nodes", r->nodes, "arena_tensors",
        r->arena_tensors, "dynamic_tensors", r->dynamic_tensors, "schedule", r->schedule,
        "schedule_optimal", r->schedule_optimal, "placer", r->placer, "naive_bytes",
        (json_int_t)r->naive_bytes, "input_order_bytes", (json_int_t)r->input_order_bytes,
        "shared_object_bytes", (json_int_t)r->shared_object_bytes, "arena_bytes",
        (json_int_t)r->arena_bytes, "lower_bound_bytes", (json_int_t)r->lower_bound_bytes,
        "any_order_bound_bytes", (json_int_t)r->any_order_bound_bytes, "arena_over_lower_bound",
        r->lower_bound_bytes ? (double)r->arena_bytes / (double)r->lower_bound_bytes : 1.0,
        "peak_step", r->peak_step, "constant_bytes", (json_int_t)r->constant_bytes, "reuse_edges",
        r->reuse_edges, "planning_ms", r->total_ms + r->verify_ms, "schedule_ms", r->schedule_ms,
        "lifetime_ms", r->lifetime_ms, "place_ms", r->place_ms, "verify_ms", r->verify_ms,
        "arena_over_naive", r->naive_bytes ? (double)r->arena_bytes / (double)r->naive_bytes : 1.0);
    if (!o ||
        json_object_set_new(o, "constant_data_bytes",
                            json_integer((json_int_t)af_graph_data_bytes(g))) ||
        json_object_set_new(o, "scratch_tensors", json_integer(r->scratch_tensors)) ||
        json_object_set_new(o, "scratch_bytes", json_integer((json_int_t)r->scratch_bytes)) ||
        json_object_set_new(o, "scratch_max_bytes",
                            json_integer((json_int_t)r->scratch_max_bytes)) ||
        json_object_set_new(o, "dynamic", dynamic_json(g, p))) {
        json_decref(o);
        return -1;
    }
    if (r->unfused_bytes &&
        json_object_set_new(
            o, "fusion",
            json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:I}", "fused_nodes", r->fused_nodes,
                      "bn_folded", r->bn_folded, "biases_folded", r->biases_folded, "post_ops",
                      r->fused_nodes - r->bn_folded - r->biases_folded - r->sums_folded,
                      "sums_folded", r->sums_folded, "fused_tensors", r->fused_tensors,
                      "unfused_bytes", (json_int_t)r->unfused_bytes, "saved_bytes",
                      (json_int_t)(r->unfused_bytes > r->arena_bytes
                                       ? r->unfused_bytes - r->arena_bytes
                                       : 0)))) {
        json_decref(o);
        return -1;
    }
    if (r->budget_method &&
        json_object_set_new(
            o, "budget",
            json_pack("{s:s, s:I, s:i, s:i, s:I, s:I, s:f, s:f, s:f, s:f, s:f}", "method",
                      r->budget_method, "unbudgeted_bytes", (json_int_t)r->unbudgeted_bytes,
                      "recomputed_nodes", r->recomputed_nodes, "swap_nodes", r->swap_nodes,
                      "swapped_bytes", (json_int_t)r->swapped_bytes, "host_bytes",
                      (json_int_t)r->host_bytes, "base_cost", r->base_cost, "extra_cost",
                      r->extra_cost, "modelled_s", r->modelled_s, "plain_modelled_s",
                      r->plain_modelled_s, "budget_ms", r->budget_ms))) {
        json_decref(o);
        return -1;
    }
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!s)
        return -1;
    puts(s);
    free(s);
    return 0;
}

/* Name of a placer or scheduler: sets it in o. Returns 0, or -1 when NAME is neither. */
static int set_compare(af_plan_opts_t *o, const char *name)
{
    for (const char *const *n = af_place_names(); *n; n++)
        if (!strcmp(*n, name)) {
            o->placer = *n;
            return 0;
        }
    for (const char *const *n = af_schedule_names(); *n; n++)
        if (!strcmp(*n, name)) {
            o->schedule = *n;
            return 0;
        }
    return -1;
}

/* --svg / --html (and --compare): the memory map of the plan, beside a second plan if asked. */
static int write_pictures(const af_graph_t *g, const af_plan_t *p, const af_plan_opts_t *opts,
                          const char *compare, const char *svg, const char *html)
{
    af_plan_t *q = NULL;
    af_error_t err;
    af_error_clear(&err);
    if (compare) {
        af_plan_opts_t o2 = *opts;
        if (set_compare(&o2, compare)) {
            cli_error("plan: --compare %s: not a placer or scheduler name", compare);
            return CLI_FAIL;
        }
        if (af_plan_create(g, &o2, &q, &err)) {
            cli_error("plan: --compare %s: %s", compare, err.msg);
            return CLI_FAIL;
        }
    }
    int status = CLI_OK;
    for (int k = 0; k < 2; k++) {
        const char *path = k ? html : svg;
        if (!path)
            continue;
        FILE *f = fopen(path, "w");
        int rc = !f ? AF_EIO : (k ? af_plan_render_html : af_plan_render_svg)(p, q, NULL, f, &err);
        if ((f && fclose(f)) || rc) {
            cli_error("%s: %s", path, rc && err.msg[0] ? err.msg : "cannot write the picture");
            status = CLI_FAIL;
        }
    }
    af_plan_destroy(q);
    return status;
}

/* Options that map 1:1 onto planner config keys. */
static const struct {
    const char *flag;
    const char *key;
} flag_keys[] = {
    {"--algo", "placer"},         {"--schedule", "schedule"},   {"--mode", "mode"},
    {"--alignment", "alignment"}, {"--budget", "budget"},       {"--time-limit", "time_limit"},
    {"--capacity", "capacity"},   {"--bandwidth", "bandwidth"}, {"--compute-rate", "compute_rate"},
    {"--fuse", "fuse"},           {"--fuse-bn", "fuse_bn"},
};

int cmd_plan(int argc, char **argv)
{
    const char *path = NULL, *config = NULL, *events = NULL, *kernels = NULL;
    const char *svg = NULL, *html = NULL, *compare = NULL;
    const char *set_key[16], *set_val[16];
    char *inputs[MAX_INPUTS];
    int n_set = 0, n_inputs = 0, json = 0, safe = 0, no_inplace = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return CLI_OK;
        }
        size_t k = 0;
        while (k < sizeof(flag_keys) / sizeof(flag_keys[0]) && strcmp(a, flag_keys[k].flag))
            k++;
        if (k < sizeof(flag_keys) / sizeof(flag_keys[0])) {
            if (i + 1 >= argc || n_set >= 16) {
                cli_error("plan: %s needs a value", a);
                return CLI_USAGE;
            }
            set_key[n_set] = flag_keys[k].key;
            set_val[n_set++] = argv[++i];
        } else if (!strcmp(a, "--config") || !strcmp(a, "--events") || !strcmp(a, "--input") ||
                   !strcmp(a, "--kernels")) {
            if (i + 1 >= argc) {
                cli_error("plan: %s needs a value", a);
                return CLI_USAGE;
            }
            if (!strcmp(a, "--kernels"))
                kernels = argv[++i];
            else if (!strcmp(a, "--config"))
                config = argv[++i];
            else if (!strcmp(a, "--events"))
                events = argv[++i];
            else if (n_inputs < MAX_INPUTS)
                inputs[n_inputs++] = argv[++i];
        } else if (!strcmp(a, "--svg") || !strcmp(a, "--html") || !strcmp(a, "--compare")) {
            if (i + 1 >= argc) {
                cli_error("plan: %s needs a value", a);
                return CLI_USAGE;
            }
            const char **dst = a[2] == 's' ? &svg : a[2] == 'h' ? &html : &compare;
            *dst = argv[++i];
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--safe")) {
            safe = 1;
        } else if (!strcmp(a, "--no-inplace")) {
            no_inplace = 1;
        } else if ((!strcmp(a, "--no-recompute") || !strcmp(a, "--offload")) && n_set < 16) {
            set_key[n_set] = a[2] == 'n' ? "recompute" : "offload";
            set_val[n_set++] = a[2] == 'n' ? "0" : "1";
        } else if (a[0] == '-' && a[1]) {
            cli_error("plan: unknown option '%s' (see 'arenaflow plan --help')", a);
            return CLI_USAGE;
        } else if (!path) {
            path = a;
        } else {
            cli_error("plan: more than one graph given ('%s' and '%s')", path, a);
            return CLI_USAGE;
        }
    }
    if (!path) {
        usage(stderr);
        return CLI_USAGE;
    }
    af_plan_opts_t opts;
    af_plan_opts_init(&opts);
    if (config && cli_load_config(config, &opts))
        return CLI_FAIL;
    af_error_t err;
    af_error_clear(&err);
    for (int k = 0; k < n_set; k++)
        if (af_plan_opts_set(&opts, set_key[k], set_val[k], &err)) {
            cli_error("plan: %s", err.msg);
            return CLI_USAGE;
        }
    if (safe)
        opts.safe_mode = 1;
    if (no_inplace)
        opts.inplace = 0;
    af_plan_opts_resolve(&opts, kernels);

    af_graph_t *g = cli_load_graph(path, inputs, n_inputs);
    if (g && kernels)
        g = run_lower_graph(g, kernels, 0);
    if (!g)
        return CLI_FAIL;
    af_plan_t *p = NULL;
    int rc = af_plan_create(g, &opts, &p, &err);
    if (rc) {
        cli_error("%s: %s", path, err.msg[0] ? err.msg : af_strerror(rc));
        af_graph_destroy(g);
        return CLI_FAIL;
    }
    int status = CLI_OK;
    if (events) {
        FILE *f = strcmp(events, "-") ? fopen(events, "w") : stdout;
        if (!f) {
            cli_error("%s: cannot write the event table", events);
            status = CLI_FAIL;
        } else {
            if (af_plan_write_events_csv(p, f, &err)) {
                cli_error("%s: %s", events, err.msg);
                status = CLI_FAIL;
            }
            if (f != stdout && fclose(f)) {
                cli_error("%s: write failed", events);
                status = CLI_FAIL;
            }
        }
    }
    if (status == CLI_OK && (svg || html))
        status = write_pictures(g, p, &opts, compare, svg, html);
    if (!events || strcmp(events, "-")) {
        const af_graph_t *pg = af_plan_graph(p); /* fused or rewritten: the plan's ids */
        if (json) {
            if (print_json(pg, p)) {
                cli_error("out of memory");
                status = CLI_FAIL;
            }
        } else {
            print_text(pg, af_plan_report(p));
            print_dynamic(pg, p);
        }
    }
    af_plan_destroy(p);
    af_graph_destroy(g);
    return status;
}
