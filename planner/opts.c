/*
 * Planner options: one table (common/options.c's mechanism, Redis static_configs[] style). Each
 * row is an option's key, type, field, default and help, so adding an option is one row plus
 * its field in af_plan_opts_t, and af_plan_opts_init, af_plan_opts_set, af_plan_opts_keys and
 * af_plan_opts_format all read the same row.
 *
 * Lock rule: the defaults and the key list are built once (af__opts_ready) and read-only
 * afterwards, so every function here may be called from any thread.
 */
#include "planner/planner_int.h"

#include <stddef.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

static const char *const *mode_names(void)
{
    static const char *const n[] = {"offset", "shared", NULL}; /* = af_place_mode_t values */
    return n;
}
static const char *const *reuse_names(void)
{
    static const char *const n[] = {"fence", "strict", NULL}; /* = af_parallel_reuse_t values */
    return n;
}
static const char *const *fuse_names(void)
{
    static const char *const n[] = {"auto", "off", "on", NULL}; /* = af_fuse_mode_t values */
    return n;
}
_Static_assert(AF_FUSE_OFF == 1 && AF_FUSE_ON == 2 && sizeof(af_fuse_mode_t) == sizeof(int),
               "fuse rows follow the name list");
static const char *const *fuse_bn_names(void)
{
    static const char *const n[] = {"affine", "weights", NULL}; /* = af_fuse_bn_t values */
    return n;
}
_Static_assert(AF_FUSE_BN_WEIGHTS == 1 && sizeof(af_fuse_bn_t) == sizeof(int),
               "fuse_bn rows follow the name list");
_Static_assert(AF_MODE_SHARED == 1 && AF_REUSE_STRICT == 1, "enum rows follow the name lists");
_Static_assert(sizeof(af_place_mode_t) == sizeof(int) && sizeof(af_parallel_reuse_t) == sizeof(int),
               "enum options are stored as int");

#define F(field) offsetof(af_plan_opts_t, field)
static const af_opt_t opt_table[] = {
    {"schedule", AF_OPT_NAME, F(schedule), "best", 0, 0, af_schedule_names, 0, 0, "scheduler name"},
    {"placer", AF_OPT_NAME, F(placer), "portfolio", 0, 0, af_place_names, 0, 0,
     "placement algorithm"},
    {"mode", AF_OPT_ENUM, F(mode), "offset", 0, 0, mode_names, 0, 0, "offset | shared"},
    {"alignment", AF_OPT_SIZE, F(alignment), "256", 0, 0, NULL, 0, AF_OPT_POW2,
     "offset alignment (power of 2)"},
    {"alpha", AF_OPT_DOUBLE, F(alpha), "0.7", 0, 0, NULL, 0, 0,
     "seed scheduler: bytes freed weight"},
    {"beta", AF_OPT_DOUBLE, F(beta), "0.3", 0, 0, NULL, 0, 0,
     "seed scheduler: critical path weight"},
    {"budget", AF_OPT_SIZE, F(budget), "0", 0, 0, NULL, 0, 0, "memory budget, 0 = none"},
    {"time_limit", AF_OPT_DOUBLE, F(time_limit_s), "10", 0, 0, NULL, 0, 0, "search time limit (s)"},
    {"capacity", AF_OPT_SIZE, F(capacity), "0", 0, 0, NULL, 0, 0, "search: target height"},
    {"inplace", AF_OPT_BOOL, F(inplace), "1", 0, 0, NULL, 0, 0, "honour in-place hints"},
    {"safe_mode", AF_OPT_BOOL, F(safe_mode), "0", 0, 0, NULL, 0, 0, "no reuse at all"},
    {"parallel_reuse", AF_OPT_ENUM, F(parallel_reuse), "fence", 0, 0, reuse_names, 0, 0,
     "fence | strict"},
    {"dp_max_nodes", AF_OPT_INT, F(dp_max_nodes), "24", 0, INT32_MAX, NULL, 0, 0,
     "exact DP node cap"},
    {"dp_max_states", AF_OPT_SIZE, F(dp_max_states), "2000000", 0, 0, NULL, 0, 0,
     "exact DP state cap"},
    {"verify", AF_OPT_BOOL, F(verify), "1", 0, 0, NULL, 0, 0, "verify every plan"},
    {"search_effort", AF_OPT_UINT, F(search_effort), STR(AF_PLAN_SEARCH_EFFORT), 0, INT64_MAX, NULL,
     0, 0, "portfolio: search nodes per 100 tensors of its last member, 0 = off"},
    {"recompute", AF_OPT_BOOL, F(recompute), "1", 0, 0, NULL, 0, 0, "under a budget: recompute"},
    {"offload", AF_OPT_BOOL, F(offload), "0", 0, 0, NULL, 0, 0, "under a budget: swap to host"},
    {"bandwidth", AF_OPT_DOUBLE, F(bandwidth), STR(AF_PLAN_BANDWIDTH), 0, 0, NULL, 0, AF_OPT_RATE,
     "host link bytes/s"},
    {"compute_rate", AF_OPT_DOUBLE, F(compute_rate), STR(AF_PLAN_COMPUTE_RATE), 0, 0, NULL, 0,
     AF_OPT_RATE, "node cost units/s"},
    {"fuse", AF_OPT_ENUM, F(fuse), "auto", 0, 0, fuse_names, 0, 0,
     "operator fusion: auto (on with real kernels) | off | on"},
    {"fuse_bn", AF_OPT_ENUM, F(fuse_bn), "affine", 0, 0, fuse_bn_names, 0, 0,
     "BatchNormalization into Conv: affine (exact) | weights (faster, other roundings)"},
};
#undef F
#define N_OPTS AF_ARRAY_SIZE(opt_table)

static af_plan_opts_t defaults; /* zero except for the table's fields */
static const char *keys[N_OPTS + 1];
static af__opts_cache_t built = {opt_table, N_OPTS, &defaults, keys, 0};

void af_plan_opts_init(af_plan_opts_t *o)
{
    *o = *(const af_plan_opts_t *)af__opts_ready(&built)->defaults;
}

const char *const *af_plan_opts_keys(void)
{
    return af__opts_ready(&built)->keys;
}

int af_plan_opts_set(af_plan_opts_t *o, const char *key, const char *value, af_error_t *err)
{
    return af_opts_set(opt_table, N_OPTS, o, "planner", key, value, err);
}

int af_plan_opts_format(const af_plan_opts_t *o, char *buf, size_t len)
{
    return af_opts_format(opt_table, N_OPTS, o, buf, len);
}

void af_plan_opts_resolve(af_plan_opts_t *o, const char *kernels)
{
    if (!o || o->fuse != AF_FUSE_AUTO)
        return;
    int real = kernels && (!strcmp(kernels, "real") || !strcmp(kernels, "onednn"));
    o->fuse = real ? AF_FUSE_ON : AF_FUSE_OFF;
}
