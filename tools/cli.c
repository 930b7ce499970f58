/*
 * Helpers shared by the CLI commands: error printing, number parsing, loading graphs by file
 * type, and reading the INI config file into planner options (inih).
 */
#include "tools/cli.h"

#include "arenaflow/onnx.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("arenaflow: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_parse_long(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_size(const char *s, uint64_t *out)
{
    return af_parse_size(s, out) ? -1 : 0; /* the library's one size grammar */
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

af_graph_t *cli_load_graph(const char *path, char **inputs, int n_inputs)
{
    af_error_t err;
    af_error_clear(&err);
    af_graph_t *g = NULL;
    if (ends_with(path, ".onnx")) { /* ONNX importer (issue #5) */
        af_onnx_opts_t o;
        af_onnx_opts_init(&o);
        o.inputs = (const char *const *)inputs;
        o.n_inputs = n_inputs;
        int orc = af_onnx_load(path, &o, &g, &err);
        if (orc)
            cli_error("%s", err.msg[0] ? err.msg : af_strerror(orc));
        return orc ? NULL : g;
    }
    if (n_inputs > 0) {
        cli_error("--input applies to ONNX models only");
        return NULL;
    }
    int rc = af_graph_load_json(path, &g, &err);
    if (rc) {
        cli_error("%s: %s", path, err.msg[0] ? err.msg : af_strerror(rc));
        return NULL;
    }
    return g;
}

struct cfg_ctx {
    const char *path;
    const char *section;
    cli_cfg_setter set;
    void *opts;
    int failed;
};

/* Debian's inih calls handlers without a line number; ini_parse() reports the line of the
 * first failing handler as its return value. Keys outside `section` belong to other
 * components; the planner also takes keys before any section header. */
static int cfg_handler(void *user, const char *section, const char *name, const char *value)
{
    struct cfg_ctx *c = user;
    int top_level = !section[0] && strcmp(c->section, "planner") == 0;
    if (strcmp(section, c->section) != 0 && !top_level)
        return 1;
    af_error_t err;
    af_error_clear(&err);
    if (c->set(c->opts, name, value, &err)) {
        cli_error("%s: [%s] %s", c->path, c->section, err.msg);
        c->failed = 1;
        return 0;
    }
    return 1;
}

int cli_load_section(const char *path, const char *section, cli_cfg_setter set, void *opts)
{
    struct cfg_ctx c = {path, section, set, opts, 0};
    int rc = ini_parse(path, cfg_handler, &c);
    if (rc < 0) {
        cli_error("%s: cannot open config file", path);
        return -1;
    }
    if (rc > 0 && !c.failed) {
        cli_error("%s:%d: syntax error", path, rc);
        return -1;
    }
    return c.failed ? -1 : 0;
}

static int plan_setter(void *opts, const char *key, const char *value, af_error_t *err)
{
    return af_plan_opts_set(opts, key, value, err);
}

int cli_load_config(const char *path, af_plan_opts_t *opts)
{
    return cli_load_section(path, "planner", plan_setter, opts);
}
