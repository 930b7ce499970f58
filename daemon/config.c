/*
 * arenaflowd configuration: one option table, an INI reader (inih) and command-line overrides.
 *
 * Every option is one row of its section's table in the library's option-table form
 * (arenaflow/common.h af_opt_t: key, type, where it lands, default, bounds, help; sizes in the
 * one size grammar, af_parse_size), so adding an option is one row and configs/arenaflowd.ini
 * documents the same rows. The [planner]
 * section is not in the table: its keys go to af_plan_opts_set(), which owns their meaning, and
 * are also kept verbatim, because the planner settings are part of every graph's fingerprint and
 * are stored with each graph in the state directory.
 *
 * Loading is all-or-nothing: a configuration is parsed into a fresh struct and only replaces the
 * running one when every line was valid (SIGHUP relies on this: a bad file keeps the old config).
 * Loop thread only.
 */
#include "daemon/daemon_int.h"

#include <ini.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One table per section, in the library's option-table form (common/options.c): the default
 * sits in the row and goes through the same grammar (af_parse_size for sizes), so defaults,
 * config files and --help cannot drift apart. */
#define F(f) offsetof(af__dcfg_t, f)
#define S(f) sizeof(((af__dcfg_t *)0)->f)
#define STR(key, f, def, help)                                                                     \
    {                                                                                              \
        key, AF_OPT_STRING, F(f), def, 0, 0, NULL, S(f), 0, help                                   \
    }
#define I64(key, f, def, lo, hi, help)                                                             \
    {                                                                                              \
        key, AF_OPT_INT64, F(f), def, lo, hi, NULL, 0, 0, help                                     \
    }
#define SIZE(key, f, def, lo, hi, help)                                                            \
    {                                                                                              \
        key, AF_OPT_SIZE, F(f), def, lo, hi, NULL, 0, 0, help                                      \
    }
static const af_opt_t server_opts[] = {
    STR("listen", listen, "127.0.0.1:8080", "HOST:PORT to listen on"),
    STR("state_dir", state_dir, "", "state directory; empty = memory only"),
    STR("log_level", log_level, "info", "error, warn, info or debug"),
    STR("tls_cert", tls_cert, "", "PEM certificate chain; empty = plain HTTP"),
    STR("tls_key", tls_key, "", "PEM private key"),
    I64("max_connections", max_connections, "256", 1, 100000, "open client connections"),
    I64("request_timeout_ms", request_timeout_ms, "10000", 100, 3600000,
        "time for a request's headers and body"),
};
static const af_opt_t auth_opts[] = {
    STR("tokens_file", tokens_file, "", "bearer tokens; empty = no authentication"),
};
static const af_opt_t limits_opts[] = {
    SIZE("max_body", lim.max_body, "16M", 1024, (int64_t)1 << 40, "request body bytes"),
    I64("max_nodes", lim.max_nodes, "100000", 1, 100000000, "nodes per graph"),
    I64("max_tensors", lim.max_tensors, "200000", 1, 100000000, "tensors per graph"),
    I64("max_attrs_per_node", lim.max_attrs, "1024", 0, 100000000, "attributes per node"),
    SIZE("max_arena_bytes", lim.max_arena_bytes, "1G", 4096, (int64_t)1 << 50,
         "planned arena per graph"),
    SIZE("max_parse_bytes", lim.max_parse_bytes, "320M", 1 << 20, (int64_t)1 << 44,
         "parser memory of all submissions at once"),
    I64("max_plan_ms", lim.max_plan_ms, "10000", 10, 86400000, "planning time per graph"),
    I64("max_graphs", max_graphs, "1024", 1, 1000000, "graphs kept"),
    SIZE("max_plans_bytes", max_plans_bytes, "256M", 1 << 20, (int64_t)1 << 44,
         "bytes of graphs and plans kept"),
    I64("max_concurrent_runs", max_runs, "2", 1, 4096, "runs at once"),
    I64("max_rounds", max_rounds, "1000000", 1, 100000000, "rounds per run request"),
    I64("max_pending_plans", max_pending_plans, "4", 1, 4096, "submissions in progress at once"),
    I64("drain_timeout_ms", drain_timeout_ms, "10000", 0, 3600000, "SIGTERM drain time"),
    SIZE("plan_cache_bytes", plan_cache_bytes, "256M", 1 << 20, (int64_t)1 << 40,
         "plan cache LRU bound"),
};
static const af_opt_t runs_opts[] = {
    STR("fast_kernels", fast_kernels, "empty", "kernel set of runs without verify"),
};
static const af_opt_t models_opts[] = {
    STR("repository", model_repository, "", "OIP model repository; empty = no models"),
    STR("kernels", model_kernels, "real", "kernel set of the models (real: the fastest built in)"),
    I64("max_inflight", max_infers, "64", 1, 65536, "inference requests in flight"),
    I64("max_shapes", max_shapes, "8", 1, 4096, "plans kept per model with symbolic dims"),
    I64("max_plan_files", max_plan_files, "64", 0, 1 << 20,
        "model plans kept in <state_dir>/model_plans; 0 = none"),
    I64("loop_max_us", loop_max_us, "200", 0, 10000000,
        "serve an inference alone on the event loop when its model's average under this; 0 = "
        "never"),
};
#undef F
#undef S
#undef STR
#undef I64
#undef SIZE

static const struct {
    const char *name;
    const af_opt_t *table;
    size_t n;
} sections[] = {
    {"server", server_opts, AF_ARRAY_SIZE(server_opts)},
    {"auth", auth_opts, AF_ARRAY_SIZE(auth_opts)},
    {"limits", limits_opts, AF_ARRAY_SIZE(limits_opts)},
    {"runs", runs_opts, AF_ARRAY_SIZE(runs_opts)},
    {"models", models_opts, AF_ARRAY_SIZE(models_opts)},
};

static const char *const log_levels[] = {"error", "warn", "info", "debug"};

void af__dcfg_init(af__dcfg_t *c)
{
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < AF_ARRAY_SIZE(sections); i++)
        (void)af_opts_defaults(sections[i].table, sections[i].n, c, NULL); /* tested */
    af_plan_opts_init(&c->plan_opts);
    af_executor_opts_init(&c->exec_opts);
}

typedef struct parse_ctx {
    af__dcfg_t *cfg;
    char *err;
    size_t errlen;
    int failed;
} parse_ctx_t;

static int set_option(af__dcfg_t *c, const char *section, const char *key, const char *value,
                      char *err, size_t errlen)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(sections); i++) {
        if (strcmp(sections[i].name, section) != 0)
            continue;
        if (!af_opts_find(sections[i].table, sections[i].n, key))
            break;
        af_error_t e = {0};
        if (af_opts_set(sections[i].table, sections[i].n, c, section, key, value, &e) == 0)
            return 0;
        snprintf(err, errlen, "%s", e.msg);
        return -1;
    }
    snprintf(err, errlen, "unknown option [%s] %s", section, key);
    return -1;
}

static int set_planner(af__dcfg_t *c, const char *key, const char *value, char *err, size_t errlen)
{
    af_error_t e;
    af_error_clear(&e);
    if (af_plan_opts_set(&c->plan_opts, key, value, &e) != 0) {
        snprintf(err, errlen, "[planner] %s", e.msg[0] ? e.msg : "bad option");
        return -1;
    }
    int i;
    for (i = 0; i < c->n_planner; i++)
        if (strcmp(c->planner_key[i], key) == 0)
            break;
    if (i == AF__DCFG_MAX_PLANNER || strlen(key) >= sizeof(c->planner_key[0]) ||
        strlen(value) >= sizeof(c->planner_val[0])) {
        snprintf(err, errlen, "[planner] %s: too many or too long entries", key);
        return -1;
    }
    snprintf(c->planner_key[i], sizeof(c->planner_key[i]), "%s", key);
    snprintf(c->planner_val[i], sizeof(c->planner_val[i]), "%s", value);
    if (i == c->n_planner)
        c->n_planner++;
    return 0;
}

static int set_executor(af__dcfg_t *c, const char *key, const char *value, char *err, size_t errlen)
{
    af_error_t e;
    af_error_clear(&e);
    if (strcmp(key, "kernels") == 0) {
        snprintf(err, errlen,
                 "[executor] kernels: set by the daemon (verify runs use \"verify\", "
                 "others [runs] fast_kernels)");
        return -1;
    }
    if (af_executor_opts_set(&c->exec_opts, key, value, &e) != 0) {
        snprintf(err, errlen, "[executor] %s", e.msg[0] ? e.msg : "bad option");
        return -1;
    }
    if (c->n_exec == AF__DCFG_MAX_PLANNER || strlen(key) >= sizeof(c->exec_key[0]) ||
        strlen(value) >= sizeof(c->exec_val[0])) {
        snprintf(err, errlen, "[executor] %s: too many or too long entries", key);
        return -1;
    }
    snprintf(c->exec_key[c->n_exec], sizeof(c->exec_key[0]), "%s", key);
    snprintf(c->exec_val[c->n_exec], sizeof(c->exec_val[0]), "%s", value);
    c->n_exec++;
    return 0;
}

static int on_ini(void *user, const char *section, const char *key, const char *value)
{
    parse_ctx_t *p = user;
    if (p->failed)
        return 1; /* keep only the first error */
    char msg[AF_ERROR_MSG_MAX + 160];
    int rc = -1;
    if (strcmp(section, "planner") == 0) {
        rc = set_planner(p->cfg, key, value, msg, sizeof(msg));
    } else if (strcmp(section, "executor") == 0) {
        rc = set_executor(p->cfg, key, value, msg, sizeof(msg));
    } else {
        rc = set_option(p->cfg, section, key, value, msg, sizeof(msg));
    }
    if (rc != 0) {
        snprintf(p->err, p->errlen, "%s", msg);
        p->failed = 1;
        return 0;
    }
    return 1;
}

static int check(const af__dcfg_t *c, char *err, size_t errlen)
{
    if (!c->tls_cert[0] != !c->tls_key[0]) {
        snprintf(err, errlen, "[server] tls_cert and tls_key go together (one is empty)");
        return -1;
    }
    const char *sets[2] = {c->fast_kernels, c->model_kernels};
    for (int s = 0; s < 2; s++) {
        int known = 0;
        for (const char *const *n = af_kernel_set_names(); *n; n++)
            known |= strcmp(*n, sets[s]) == 0;
        if (!known) {
            snprintf(err, errlen, "[%s] %s: '%s' is not a built-in kernel set",
                     s ? "models" : "runs", s ? "kernels" : "fast_kernels", sets[s]);
            return -1;
        }
    }
    for (size_t i = 0; i < AF_ARRAY_SIZE(log_levels); i++)
        if (strcmp(c->log_level, log_levels[i]) == 0)
            return 0;
    snprintf(err, errlen, "[server] log_level: '%s' is not error, warn, info or debug",
             c->log_level);
    return -1;
}

int af__dcfg_load(af__dcfg_t *c, const af__dcli_t *cli, char *err, size_t errlen)
{
    af__dcfg_t n;
    af__dcfg_init(&n);
    if (cli && cli->config) {
        parse_ctx_t p = {&n, err, errlen, 0};
        int line = ini_parse(cli->config, on_ini, &p);
        if (line < 0) {
            snprintf(err, errlen, "%s: cannot open: %s", cli->config, strerror(errno));
            return -1;
        }
        if (p.failed) {
            char tmp[1024];
            snprintf(tmp, sizeof(tmp), "%s", err);
            snprintf(err, errlen, "%s:%d: %s", cli->config, line, tmp);
            return -1;
        }
        if (line > 0) {
            snprintf(err, errlen, "%s:%d: syntax error", cli->config, line);
            return -1;
        }
    }
    if (cli && cli->listen)
        snprintf(n.listen, sizeof(n.listen), "%s", cli->listen);
    if (cli && cli->state_dir)
        snprintf(n.state_dir, sizeof(n.state_dir), "%s", cli->state_dir);
    if (cli && cli->model_repository)
        snprintf(n.model_repository, sizeof(n.model_repository), "%s", cli->model_repository);
    if (check(&n, err, errlen) != 0)
        return -1;
    *c = n;
    return 0;
}

void af__dcfg_planner_string(const af__dcfg_t *c, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < c->n_planner && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s=%s", i ? ";" : "", c->planner_key[i],
                         c->planner_val[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

int af__dcfg_exec_differs(const af__dcfg_t *a, const af__dcfg_t *b)
{
    if (strcmp(a->fast_kernels, b->fast_kernels) != 0 || a->n_exec != b->n_exec)
        return 1;
    for (int i = 0; i < a->n_exec; i++)
        if (strcmp(a->exec_key[i], b->exec_key[i]) != 0 ||
            strcmp(a->exec_val[i], b->exec_val[i]) != 0)
            return 1;
    return 0;
}
