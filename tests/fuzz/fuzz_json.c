/*
 * libFuzzer harness: the JSON graph reader (af_graph_parse_json).
 *
 * Every input must either parse into a finalized graph or fail with a negative AF_E* code, a
 * message, and *out untouched; never crash, leak or read past `size` (the buffer is not
 * NUL-terminated). A graph that parses must survive the round trip: af_graph_to_json() then
 * af_graph_parse_json() gives the same tensor and node counts. Small graphs are also planned
 * (fuzz_util.h) and the plan verified, so the planner sees fuzzed graphs too. Broken
 * invariants abort(), which libFuzzer reports as a crash.
 *
 * Built twice: as a libFuzzer target (tests/fuzz/run.sh) and, with AF_FUZZ_ENTRY renamed, into
 * tests/test_fuzz_corpus.c, which replays the corpus in the normal test run.
 */
#include "tests/fuzz/fuzz_util.h"

#include <string.h>

#ifndef AF_FUZZ_ENTRY
#define AF_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

int AF_FUZZ_ENTRY(const uint8_t *data, size_t size);

int AF_FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = af_graph_parse_json((const char *)data, size, &g, &err);
    if (rc != 0) {
        if (g != NULL || rc >= 0 || err.code != rc || err.msg[0] == '\0')
            AF_FUZZ_FAIL("parse failed with %d (err.code %d, msg '%s') or set *out", rc, err.code,
                         err.msg);
        return 0;
    }
    char *text = NULL;
    if (af_graph_to_json(g, &text, &err) == 0) {
        af_graph_t *g2 = NULL;
        if (af_graph_parse_json(text, strlen(text), &g2, &err) != 0)
            AF_FUZZ_FAIL("af_graph_to_json output does not parse back: %s", err.msg);
        if (af_graph_tensor_count(g2) != af_graph_tensor_count(g) ||
            af_graph_node_count(g2) != af_graph_node_count(g))
            AF_FUZZ_FAIL("round trip changed the counts");
        af_graph_destroy(g2);
        af_free(text);
    }
    af_fuzz_plan_graph(g, af_fuzz_key(data, size));
    af_graph_destroy(g);
    return 0;
}
