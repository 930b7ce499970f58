/*
 * libFuzzer harness: the configuration parser as the CLI drives it — inih's ini_parse_string()
 * feeding [planner] keys to af_plan_opts_set() (tools/cli.c) and [executor] keys to
 * af_executor_opts_set().
 *
 * Every line must either be accepted or rejected with a negative AF_E* code and a message;
 * never crash. The option structs must never point into the parsed text (the header promises
 * static names), which ASan checks: the text is freed before the options are used. When the
 * whole file is accepted, a small fixed graph is planned with the options (time limit and DP
 * budget capped for speed) and the plan must verify; a failure must be a clean AF_E* code
 * (a budget too small is AF_EBUDGET, for instance).
 *
 * Built as a libFuzzer target (tests/fuzz/run.sh) and, with AF_FUZZ_ENTRY renamed, into
 * tests/test_fuzz_corpus.c.
 */
#include "arenaflow/executor.h"
#include "tests/fuzz/fuzz_util.h"

#include <ini.h>
#include <string.h>

#ifndef AF_FUZZ_ENTRY
#define AF_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

int AF_FUZZ_ENTRY(const uint8_t *data, size_t size);

typedef struct fuzz_cfg_ctx {
    af_plan_opts_t plan;
    af_executor_opts_t exec;
    int failed;
} fuzz_cfg_ctx_t;

static int fuzz_cfg_handler(void *user, const char *section, const char *name, const char *value)
{
    fuzz_cfg_ctx_t *c = user;
    af_error_t err;
    int rc;
    if (!section[0] || strcmp(section, "planner") == 0)
        rc = af_plan_opts_set(&c->plan, name, value, &err);
    else if (strcmp(section, "executor") == 0)
        rc = af_executor_opts_set(&c->exec, name, value, &err);
    else
        return 1; /* other sections belong to the daemon */
    if (rc != 0) {
        if (rc >= 0 || err.code != rc || err.msg[0] == '\0')
            AF_FUZZ_FAIL("[%s] %s = %s: rejected with %d but no message", section, name, value, rc);
        c->failed = 1;
        return 0;
    }
    return 1;
}

/* The diamond of seed 1 (examples/diamond.json), small enough for every planner. */
static const char fuzz_cfg_graph[] =
    "{\"format\":\"arenaflow-graph\",\"version\":1,\"name\":\"d\",\"tensors\":["
    "{\"name\":\"x\",\"kind\":\"input\",\"bytes\":65536},{\"name\":\"A\",\"bytes\":4194304},"
    "{\"name\":\"D\",\"bytes\":4194304},{\"name\":\"b\",\"bytes\":262144},"
    "{\"name\":\"c\",\"bytes\":262144},{\"name\":\"e\",\"bytes\":262144},"
    "{\"name\":\"f\",\"bytes\":262144},{\"name\":\"y\",\"kind\":\"output\",\"bytes\":65536}],"
    "\"nodes\":[{\"name\":\"mA\",\"op\":\"Conv\",\"inputs\":[\"x\"],\"outputs\":[\"A\"]},"
    "{\"name\":\"mD\",\"op\":\"Conv\",\"inputs\":[\"x\"],\"outputs\":[\"D\"]},"
    "{\"name\":\"B\",\"op\":\"Conv\",\"inputs\":[\"A\"],\"outputs\":[\"b\"]},"
    "{\"name\":\"C\",\"op\":\"Conv\",\"inputs\":[\"A\"],\"outputs\":[\"c\"]},"
    "{\"name\":\"E\",\"op\":\"Conv\",\"inputs\":[\"D\"],\"outputs\":[\"e\"]},"
    "{\"name\":\"F\",\"op\":\"Conv\",\"inputs\":[\"D\"],\"outputs\":[\"f\"]},"
    "{\"name\":\"j\",\"op\":\"Concat\",\"inputs\":[\"b\",\"c\",\"e\",\"f\"],"
    "\"outputs\":[\"y\"]}]}";

static void fuzz_cfg_plan(const af_plan_opts_t *opts)
{
    af_graph_t *g = NULL;
    af_error_t err;
    if (af_graph_parse_json(fuzz_cfg_graph, sizeof(fuzz_cfg_graph) - 1, &g, &err) != 0)
        AF_FUZZ_FAIL("fixed graph: %s", err.msg);
    af_plan_opts_t o = *opts;
    if (o.time_limit_s > 0.01)
        o.time_limit_s = 0.01;
    if (o.dp_max_states > 20000)
        o.dp_max_states = 20000;
    af_plan_t *p = NULL;
    int rc = af_plan_create(g, &o, &p, &err);
    if (rc == 0) {
        if (af_plan_verify(p, &err) != 0)
            AF_FUZZ_FAIL("plan does not verify: %s", err.msg);
        af_plan_destroy(p);
    } else if (rc >= 0 || p != NULL || err.msg[0] == '\0') {
        AF_FUZZ_FAIL("af_plan_create returned %d, *out %p, msg '%s'", rc, (void *)p, err.msg);
    }
    af_graph_destroy(g);
}

int AF_FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    fuzz_cfg_ctx_t c;
    memset(&c, 0, sizeof(c));
    af_plan_opts_init(&c.plan);
    af_executor_opts_init(&c.exec);
    int line = ini_parse_string(text, fuzz_cfg_handler, &c);
    free(text); /* from here on, any pointer into the text is a use after free */
    if (line < 0)
        AF_FUZZ_FAIL("ini_parse_string returned %d (no file here)", line);
    if (line == 0 && !c.failed) {
        if (strlen(c.plan.schedule) == 0 || strlen(c.plan.placer) == 0 ||
            (c.exec.kernels && strlen(c.exec.kernels) == 0))
            AF_FUZZ_FAIL("an option string is empty");
        fuzz_cfg_plan(&c.plan);
    }
    return 0;
}
