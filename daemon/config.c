/*
 * arenaflowd configuration: one option table, an INI reader (inih) and command-line overrides.
 *
 * Every option is one row of `options[]` (section, key, type, where it lands, bounds, help), so
 * adding an option is one row and configs/arenaflowd.ini documents the same rows. The [planner]
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

typedef enum { OPT_STR, OPT_SIZE, OPT_INT } opt_type_t;

typedef struct option {
    const char *section;
    const char *key;
    opt_type_t type;
    size_t offset;
    size_t size; /* string capacity for OPT_STR */
    int64_t min, max;
} option_t;

#define OFF(f) offsetof(af__dcfg_t, f)
#define STRF(f) OFF(f), sizeof(((af__dcfg_t *)0)->f)

static const option_t options[] = {
    {"server", "listen", OPT_STR, STRF(listen), 0, 0},
    {"server", "state_dir", OPT_STR, STRF(state_dir), 0, 0},
    {"server", "log_level", OPT_STR, STRF(log_level), 0, 0},
    {"server", "tls_cert", OPT_STR, STRF(tls_cert), 0, 0},
    {"server", "tls_key", OPT_STR, STRF(tls_key), 0, 0},
    {"server", "max_connections", OPT_INT, OFF(max_connections), 0, 1, 100000},
    {"server", "request_timeout_ms", OPT_INT, OFF(request_timeout_ms), 0, 100, 3600000},
    {"auth", "tokens_file", OPT_STR, STRF(tokens_file), 0, 0},
    {"limits", "max_body", OPT_SIZE, OFF(lim.max_body), 0, 1024, (int64_t)1 << 40},
    {"limits", "max_nodes", OPT_INT, OFF(lim.max_nodes), 0, 1, 100000000},
    {"limits", "max_tensors", OPT_INT, OFF(lim.max_tensors), 0, 1, 100000000},
    {"limits", "max_attrs_per_node", OPT_INT, OFF(lim.max_attrs), 0, 0, 100000000},
    {"limits", "max_arena_bytes", OPT_SIZE, OFF(lim.max_arena_bytes), 0, 4096, (int64_t)1 << 50},
    {"limits", "max_parse_bytes", OPT_SIZE, OFF(lim.max_parse_bytes), 0, 1 << 20, (int64_t)1 << 44},
    {"limits", "max_plan_ms", OPT_INT, OFF(lim.max_plan_ms), 0, 10, 86400000},
    {"limits", "max_graphs", OPT_INT, OFF(max_graphs), 0, 1, 1000000},
    {"limits", "max_plans_bytes", OPT_SIZE, OFF(max_plans_bytes), 0, 1 << 20, (int64_t)1 << 44},
    {"limits", "max_concurrent_runs", OPT_INT, OFF(max_runs), 0, 1, 4096},
    {"limits", "max_rounds", OPT_INT, OFF(max_rounds), 0, 1, 100000000},
    {"limits", "max_pending_plans", OPT_INT, OFF(max_pending_plans), 0, 1, 4096},
    {"limits", "drain_timeout_ms", OPT_INT, OFF(drain_timeout_ms), 0, 0, 3600000},
    {"limits", "plan_cache_bytes", OPT_SIZE, OFF(plan_cache_bytes), 0, 1 << 20, (int64_t)1 << 40},
    {"runs", "fast_kernels", OPT_STR, STRF(fast_kernels), 0, 0},
    {"models", "repository", OPT_STR, STRF(model_repository), 0, 0},
    {"models", "kernels", OPT_STR, STRF(model_kernels), 0, 0},
    {"models", "max_inflight", OPT_INT, OFF(max_infers), 0, 1, 65536},
};

static const char *const log_levels[] = {"error", "warn", "info", "debug"};

void af__dcfg_init(af__dcfg_t *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->listen, sizeof(c->listen), "127.0.0.1:8080");
    snprintf(c->log_level, sizeof(c->log_level), "info");
    c->max_connections = 256;
    c->request_timeout_ms = 10000;
    c->lim.max_body = 16u << 20;
    c->lim.max_nodes = 100000;
    c->lim.max_tensors = 200000;
    c->lim.max_attrs = 1024;
    c->lim.max_arena_bytes = 1ull << 30;
    c->lim.max_parse_bytes = 320ull << 20;
    c->lim.max_plan_ms = 10000;
    c->max_plans_bytes = 256u << 20;
    c->max_graphs = 1024;
    c->max_runs = 2;
    c->max_rounds = 1000000;
    c->max_pending_plans = 4;
    c->drain_timeout_ms = 10000;
    c->plan_cache_bytes = 256u << 20;
    snprintf(c->fast_kernels, sizeof(c->fast_kernels), "empty");
    snprintf(c->model_kernels, sizeof(c->model_kernels), "%s", af__dcfg_best_kernels());
    c->max_infers = 64;
    af_plan_opts_init(&c->plan_opts);
    af_executor_opts_init(&c->exec_opts);
}

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || *s == '-')
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    }
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

typedef struct parse_ctx {
    af__dcfg_t *cfg;
    char *err;
    size_t errlen;
    int failed;
} parse_ctx_t;

static int set_option(af__dcfg_t *c, const option_t *o, const char *value, char *err, size_t errlen)
{
    char *field = (char *)c + o->offset;
    if (o->type == OPT_STR) {
        if (strlen(value) >= o->size) {
            snprintf(err, errlen, "[%s] %s: value too long", o->section, o->key);
            return -1;
        }
        memcpy(field, value, strlen(value) + 1);
        return 0;
    }
    uint64_t v;
    if (parse_size(value, &v) != 0 || v < (uint64_t)o->min || v > (uint64_t)o->max) {
        snprintf(err, errlen, "[%s] %s: '%s' is not a number in %" PRId64 "..%" PRId64, o->section,
                 o->key, value, o->min, o->max);
        return -1;
    }
    if (o->type == OPT_SIZE)
        *(uint64_t *)(void *)field = v;
    else
        *(int64_t *)(void *)field = (int64_t)v;
    return 0;
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
        size_t i;
        for (i = 0; i < AF_ARRAY_SIZE(options); i++)
            if (strcmp(options[i].section, section) == 0 && strcmp(options[i].key, key) == 0)
                break;
        if (i == AF_ARRAY_SIZE(options))
            snprintf(msg, sizeof(msg), "unknown option [%s] %s", section, key);
        else
            rc = set_option(p->cfg, &options[i], value, msg, sizeof(msg));
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

const char *af__dcfg_best_kernels(void)
{
    /* the fastest real set this build has: "onednn" where it is built in, else "real" */
    static const char *const order[] = {"onednn", "real", "reference"};
    for (size_t i = 0; i < AF_ARRAY_SIZE(order); i++)
        for (const char *const *n = af_kernel_set_names(); *n; n++)
            if (strcmp(*n, order[i]) == 0)
                return order[i];
    return "verify";
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
