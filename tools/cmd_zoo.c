/*
 * `arenaflow zoo`: writes a model-zoo graph (zoo/, arenaflow/zoo.h) as JSON, or lists the models.
 *
 *   arenaflow zoo --list
 *   arenaflow zoo NAME [--batch N] [--seq N] [--seed N] --out FILE   (FILE "-" = stdout)
 */
#include "tools/cli.h"
#include "arenaflow/zoo.h"

#include <stdio.h>
#include <string.h>

static const char *kind_name[] = {"inference", "random", "training"};

static void usage(FILE *f)
{
    fprintf(f, "usage: arenaflow zoo --list\n"
               "       arenaflow zoo NAME [--batch N] [--seq N] [--seed N] --out FILE\n\n"
               "Writes a model-zoo graph (real shapes and dtypes, weights as constants, FLOP\n"
               "costs, framework-style node order) in the JSON graph format. FILE '-' is stdout.\n"
               "  --batch N  batch size (default 1 for inference models, 8 for training graphs)\n"
               "  --seq N    sequence length for bert/gpt2 (default 128 / 1024)\n"
               "  --seed N   wiring seed for the random networks (default fixed)\n");
}

static int list_models(void)
{
    size_t n;
    const af_zoo_entry_t *e = af_zoo_list(&n);
    for (size_t i = 0; i < n; i++)
        printf("%-16s %-10s %s\n", e[i].name, kind_name[e[i].kind], e[i].help);
    return CLI_OK;
}

static int write_graph(const af_graph_t *g, const char *out)
{
    af_error_t err;
    af_error_clear(&err);
    if (strcmp(out, "-") == 0) {
        char *json = NULL;
        if (af_graph_to_json(g, &json, &err)) {
            cli_error("%s", err.msg);
            return CLI_FAIL;
        }
        fputs(json, stdout);
        af_free(json);
        return ferror(stdout) ? CLI_FAIL : CLI_OK;
    }
    if (af_graph_save_json(g, out, &err)) {
        cli_error("cannot write '%s': %s", out, err.msg);
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cmd_zoo(int argc, char **argv)
{
    af_zoo_opts_t o;
    af_zoo_opts_init(&o);
    const char *name = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v = 0;
        if (cli_is_help(a)) {
            usage(stdout);
            return CLI_OK;
        }
        if (strcmp(a, "--list") == 0)
            return list_models();
        int takes_value = strcmp(a, "--batch") == 0 || strcmp(a, "--seq") == 0 ||
                          strcmp(a, "--seed") == 0 || strcmp(a, "--out") == 0 ||
                          strcmp(a, "-o") == 0;
        if (takes_value && i + 1 >= argc) {
            cli_error("%s needs a value", a);
            return CLI_USAGE;
        }
        if (strcmp(a, "--out") == 0 || strcmp(a, "-o") == 0) {
            out = argv[++i];
        } else if (takes_value) {
            const char *val = argv[++i];
            if (cli_parse_long(val, &v) || v < 1 || v > 65536) {
                cli_error("bad value '%s' for %s (expected 1..65536)", val, a);
                return CLI_USAGE;
            }
            if (strcmp(a, "--batch") == 0)
                o.batch = (int32_t)v;
            else if (strcmp(a, "--seq") == 0)
                o.seq = (int32_t)v;
            else
                o.seed = (uint64_t)v;
        } else if (a[0] == '-' && a[1]) {
            cli_error("unknown option '%s' (try 'arenaflow zoo --help')", a);
            return CLI_USAGE;
        } else if (!name) {
            name = a;
        } else {
            cli_error("more than one model name ('%s', '%s')", name, a);
            return CLI_USAGE;
        }
    }
    if (!name || !out) {
        usage(stderr);
        return CLI_USAGE;
    }
    af_graph_t *g = NULL;
    af_error_t err;
    af_error_clear(&err);
    if (af_zoo_build(name, &o, &g, &err)) {
        cli_error("%s", err.msg);
        return err.code == AF_ENOENT || err.code == AF_EINVAL ? CLI_USAGE : CLI_FAIL;
    }
    int rc = write_graph(g, out);
    af_graph_destroy(g);
    return rc;
}
