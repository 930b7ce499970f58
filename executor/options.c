/*
 * Executor options ([executor] in config files): one table of common/options.c rows, the
 * default of each option in its row, so af_executor_opts_init, af_executor_opts_set and
 * af_executor_opts_keys read the same row. Fields without a config spelling (pool,
 * debug_ignore_reuse_edges) start zeroed.
 *
 * Lock rule: the defaults and the key list are built once (af__opts_ready), read-only afterwards.
 */
#include "executor/executor_int.h"

#include <stddef.h>
#include <string.h>

#define F(field) offsetof(af_executor_opts_t, field)
static const af_opt_t opt_table[] = {
    {"threads", AF_OPT_INT, F(threads), "0", 0, 1024, NULL, 0, 0, "worker threads, 0 = all CPUs"},
    {"kernels", AF_OPT_NAME, F(kernels), "verify", 0, 0, af_kernel_set_names, 0, 0,
     "built-in kernel set"},
    {"max_inflight", AF_OPT_INT, F(max_inflight), "4", 1, 1024, NULL, 0, 0,
     "rounds in flight per session"},
    {"replan_after_warmup", AF_OPT_INT, F(replan_after_warmup), "0", 0, 1 << 30, NULL, 0, 0,
     "re-plan dynamic tensors after this many rounds, 0 = never"},
    {"dynamic_default_bytes", AF_OPT_SIZE, F(dynamic_default_bytes), "4096", 1, 1ll << 40, NULL, 0,
     0, "verify kernels: bytes of a dynamic output"},
    {"history", AF_OPT_BOOL, F(history), "0", 0, 0, NULL, 0, 0, "record per-buffer history"},
    {"verify", AF_OPT_AUTO_BOOL, F(verify), "auto", 0, 0, NULL, 0, 0,
     "check every input's checksum: auto = with the verify kernels"},
    {"intra_op_threads", AF_OPT_INT, F(intra_op_threads), "0", 0, 1024, NULL, 0, 0,
     "OpenMP team of a large node (kernel sets with a backend), 0 = chosen per graph"},
    {"inline_rounds", AF_OPT_AUTO_BOOL, F(inline_rounds), "auto", 0, 0, NULL, 0, 0,
     "run small rounds on the calling thread: auto = small or chain plans, real kernels"},
};
#undef F
#define N_OPTS AF_ARRAY_SIZE(opt_table)

static af_executor_opts_t defaults; /* zero except for the table's fields */
static const char *keys[N_OPTS + 1];
static af__opts_cache_t built = {opt_table, N_OPTS, &defaults, keys, 0};

void af_executor_opts_init(af_executor_opts_t *o)
{
    *o = *(const af_executor_opts_t *)af__opts_ready(&built)->defaults;
}

int af_executor_opts_set(af_executor_opts_t *o, const char *key, const char *value, af_error_t *err)
{
    if (!o)
        return af__err(err, AF_EINVAL, "executor option: no options");
#ifndef AF_HAVE_ONEDNN
    if (key && value && !strcmp(key, "kernels") && !strcmp(value, "onednn"))
        return af__err(err, AF_EINVAL,
                       "kernel set 'onednn' is not in this build: it was configured without "
                       "oneDNN (install libdnnl-dev, e.g. with scripts/deps.sh, and configure "
                       "again)");
#endif
    return af_opts_set(opt_table, N_OPTS, o, "executor", key, value, err);
}

const char *const *af_executor_opts_keys(void)
{
    return af__opts_ready(&built)->keys;
}
