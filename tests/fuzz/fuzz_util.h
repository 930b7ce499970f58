/*
 * Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c) and their corpus replay
 * (tests/test_fuzz_corpus.c): plan a fuzzed graph cheaply and check the plan.
 *
 * Every scheduler and placer is reached by rotating through the name tables with a key taken
 * from the input, under caps that keep one input fast (tiny DP and search budgets). A plan the
 * planner returns must pass af_plan_verify(); anything else aborts, so libFuzzer reports it.
 */
#ifndef AF_FUZZ_UTIL_H
#define AF_FUZZ_UTIL_H

#include "arenaflow/graph.h"
#include "arenaflow/pack.h"
#include "arenaflow/plan.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A broken invariant: say which, then abort() so libFuzzer (or the replay test) reports it. */
#define AF_FUZZ_FAIL(...)                                                                          \
    do {                                                                                           \
        fprintf(stderr, "fuzz invariant broken: " __VA_ARGS__);                                    \
        fputc('\n', stderr);                                                                       \
        abort();                                                                                   \
    } while (0)

/* Graphs above this many nodes are not planned (speed); parsing is what is fuzzed there. */
#define AF_FUZZ_PLAN_MAX_NODES 64

static inline size_t af_fuzz_count_names(const char *const *names)
{
    size_t n = 0;
    while (names[n])
        n++;
    return n;
}

/* Plans g with the scheduler and placer chosen by key; aborts when the plan does not verify. */
static inline void af_fuzz_plan_graph(const af_graph_t *g, size_t key)
{
    if (af_graph_node_count(g) > AF_FUZZ_PLAN_MAX_NODES)
        return;
    const char *const *sn = af_schedule_names(), *const *pn = af_place_names();
    size_t ns = af_fuzz_count_names(sn), np = af_fuzz_count_names(pn);
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    o.schedule = sn[key % ns];
    o.placer = pn[(key / ns) % np];
    o.time_limit_s = 0.01;
    o.dp_max_states = 20000;
    o.verify = 0; /* verified explicitly below */
    af_error_t err;
    af_plan_t *p = NULL;
    int rc = af_plan_create(g, &o, &p, &err);
    if (rc != 0) {
        if (p != NULL || rc >= 0)
            AF_FUZZ_FAIL("af_plan_create returned %d and set *out", rc);
        return;
    }
    if (af_plan_verify(p, &err) != 0) /* a plan the planner's own verifier rejects */
        AF_FUZZ_FAIL("schedule=%s placer=%s: plan does not verify: %s", o.schedule, o.placer,
                     err.msg);
    af_plan_destroy(p);
}

/* FNV-1a of the input: the rotation key. */
static inline size_t af_fuzz_key(const uint8_t *data, size_t size)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ull;
    return (size_t)(h >> 8);
}

#endif
