/*
 * Planner options: defaults and the config-file table. Each option is one row: its key, how to
 * parse the value and where it goes (Redis static_configs[] style), so adding an option is one
 * row plus its field in af_plan_opts_t.
 */
#include "planner/planner_int.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void af_plan_opts_init(af_plan_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->schedule = "best";
    o->placer = "portfolio";
    o->mode = AF_MODE_OFFSET;
    o->alignment = 256;
    o->alpha = 0.7;
    o->beta = 0.3;
    o->time_limit_s = 10.0;
    o->inplace = 1;
    o->parallel_reuse = AF_REUSE_FENCE;
    o->dp_max_nodes = 24;
    o->dp_max_states = 2000000;
    o->verify = 1;
    o->search_effort = AF_PLAN_SEARCH_EFFORT;
    o->recompute = 1;
    o->bandwidth = AF_PLAN_BANDWIDTH;
    o->compute_rate = AF_PLAN_COMPUTE_RATE;
}

typedef enum {
    T_SCHED,
    T_PLACER,
    T_MODE,
    T_REUSE,
    T_SIZE,
    T_DOUBLE,
    T_BOOL,
    T_I32,
    T_COUNT, /* uint64_t count, plain decimal */
    T_RATE,  /* double > 0, optional K/M/G/T suffix (powers of 1000) */
} opt_type_t;

static const struct {
    const char *key;
    opt_type_t type;
    size_t off;
    const char *help;
} opt_table[] = {
    {"schedule", T_SCHED, offsetof(af_plan_opts_t, schedule), "scheduler name"},
    {"placer", T_PLACER, offsetof(af_plan_opts_t, placer), "placement algorithm"},
    {"mode", T_MODE, offsetof(af_plan_opts_t, mode), "offset | shared"},
    {"alignment", T_SIZE, offsetof(af_plan_opts_t, alignment), "offset alignment (power of 2)"},
    {"alpha", T_DOUBLE, offsetof(af_plan_opts_t, alpha), "seed scheduler: bytes freed weight"},
    {"beta", T_DOUBLE, offsetof(af_plan_opts_t, beta), "seed scheduler: critical path weight"},
    {"budget", T_SIZE, offsetof(af_plan_opts_t, budget), "memory budget, 0 = none"},
    {"time_limit", T_DOUBLE, offsetof(af_plan_opts_t, time_limit_s), "search time limit (s)"},
    {"capacity", T_SIZE, offsetof(af_plan_opts_t, capacity), "search: target height"},
    {"inplace", T_BOOL, offsetof(af_plan_opts_t, inplace), "honour in-place hints"},
    {"safe_mode", T_BOOL, offsetof(af_plan_opts_t, safe_mode), "no reuse at all"},
    {"parallel_reuse", T_REUSE, offsetof(af_plan_opts_t, parallel_reuse), "fence | strict"},
    {"dp_max_nodes", T_I32, offsetof(af_plan_opts_t, dp_max_nodes), "exact DP node cap"},
    {"dp_max_states", T_SIZE, offsetof(af_plan_opts_t, dp_max_states), "exact DP state cap"},
    {"verify", T_BOOL, offsetof(af_plan_opts_t, verify), "verify every plan"},
    {"search_effort", T_COUNT, offsetof(af_plan_opts_t, search_effort),
     "portfolio: search nodes per 100 tensors of its last member, 0 = off"},
    {"recompute", T_BOOL, offsetof(af_plan_opts_t, recompute), "under a budget: recompute"},
    {"offload", T_BOOL, offsetof(af_plan_opts_t, offload), "under a budget: swap to host"},
    {"bandwidth", T_RATE, offsetof(af_plan_opts_t, bandwidth), "host link bytes/s"},
    {"compute_rate", T_RATE, offsetof(af_plan_opts_t, compute_rate), "node cost units/s"},
};

static const char *opt_keys[AF_ARRAY_SIZE(opt_table) + 1];

const char *const *af_plan_opts_keys(void)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(opt_table); i++)
        opt_keys[i] = opt_table[i].key;
    return opt_keys;
}

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned shift = 0;
    if (*end) {
        const char *u = "KMGT";
        const char *hit = strchr(u, *end >= 'a' ? *end - 32 : *end);
        if (!hit)
            return -1;
        shift = 10u * (unsigned)(hit - u + 1);
        end++;
        if (*end == 'i')
            end++;
        if (*end == 'B' || *end == 'b')
            end++;
    }
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static const char *static_name(const char *const *names, const char *v)
{
    for (size_t i = 0; names[i]; i++)
        if (strcmp(names[i], v) == 0)
            return names[i];
    return NULL;
}

int af_plan_opts_set(af_plan_opts_t *o, const char *key, const char *value, af_error_t *err)
{
    size_t i = 0;
    while (i < AF_ARRAY_SIZE(opt_table) && strcmp(opt_table[i].key, key) != 0)
        i++;
    if (i == AF_ARRAY_SIZE(opt_table))
        return af__err(err, AF_EINVAL, "unknown planner option '%s'", key);
    void *field = (char *)o + opt_table[i].off;
    char *end;
    switch (opt_table[i].type) {
    case T_SCHED:
    case T_PLACER: {
        const char *const *names =
            opt_table[i].type == T_SCHED ? af_schedule_names() : af_place_names();
        const char *n = static_name(names, value);
        if (!n)
            return af__err(err, AF_EINVAL, "%s: unknown name '%s'", key, value);
        *(const char **)field = n;
        return 0;
    }
    case T_MODE:
        if (strcmp(value, "offset") == 0)
            *(af_place_mode_t *)field = AF_MODE_OFFSET;
        else if (strcmp(value, "shared") == 0)
            *(af_place_mode_t *)field = AF_MODE_SHARED;
        else
            return af__err(err, AF_EINVAL, "mode: '%s' is not offset or shared", value);
        return 0;
    case T_REUSE:
        if (strcmp(value, "fence") == 0)
            *(af_parallel_reuse_t *)field = AF_REUSE_FENCE;
        else if (strcmp(value, "strict") == 0)
            *(af_parallel_reuse_t *)field = AF_REUSE_STRICT;
        else
            return af__err(err, AF_EINVAL, "parallel_reuse: '%s' is not fence or strict", value);
        return 0;
    case T_SIZE: {
        uint64_t v;
        if (parse_size(value, &v))
            return af__err(err, AF_EINVAL, "%s: '%s' is not a size (e.g. 256, 64K, 2G)", key,
                           value);
        if (strcmp(key, "alignment") == 0 && (v == 0 || (v & (v - 1))))
            return af__err(err, AF_EINVAL, "alignment: %s is not a power of two", value);
        *(uint64_t *)field = v;
        return 0;
    }
    case T_DOUBLE: {
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(v) || v < 0)
            return af__err(err, AF_EINVAL, "%s: '%s' is not a non-negative number", key, value);
        *(double *)field = v;
        return 0;
    }
    case T_BOOL:
        if (!strcasecmp(value, "1") || !strcasecmp(value, "true") || !strcasecmp(value, "yes") ||
            !strcasecmp(value, "on"))
            *(int *)field = 1;
        else if (!strcasecmp(value, "0") || !strcasecmp(value, "false") ||
                 !strcasecmp(value, "no") || !strcasecmp(value, "off"))
            *(int *)field = 0;
        else
            return af__err(err, AF_EINVAL, "%s: '%s' is not a boolean", key, value);
        return 0;
    case T_I32: {
        errno = 0;
        long v = strtol(value, &end, 10);
        if (errno || end == value || *end || v < 0 || v > INT32_MAX)
            return af__err(err, AF_EINVAL, "%s: '%s' is not a non-negative integer", key, value);
        *(int32_t *)field = (int32_t)v;
        return 0;
    }
    case T_RATE: {
        errno = 0;
        double v = strtod(value, &end);
        const char *si = "KMGT", *hit = *end ? strchr(si, *end) : NULL;
        if (hit)
            v *= pow(1000, (double)(hit - si + 1)), end++;
        if (errno || end == value || *end || !isfinite(v) || v <= 0)
            return af__err(err, AF_EINVAL, "%s: '%s' is not a positive rate (e.g. 16e9, 16G)", key,
                           value);
        *(double *)field = v;
        return 0;
    }
    case T_COUNT: {
        errno = 0;
        unsigned long long v = strtoull(value, &end, 10);
        if (value[0] < '0' || value[0] > '9' || errno || *end)
            return af__err(err, AF_EINVAL, "%s: '%s' is not a non-negative integer (0 = off)", key,
                           value);
        *(uint64_t *)field = (uint64_t)v;
        return 0;
    }
    }
    return af__err(err, AF_EINVAL, "%s: unsupported option type", key);
}
