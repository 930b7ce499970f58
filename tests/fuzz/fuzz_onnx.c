/*
 * libFuzzer harness: the ONNX importer, from memory (af_onnx_load_mem).
 *
 * Inputs are raw .onnx files (protobuf). Every input must either load into a finalized graph or
 * fail with a negative AF_E* code, a message and *out untouched; never crash or leak. Symbolic
 * dims are allowed (they become dynamic tensors), and one input bit picks keep_folded so both
 * folding paths run. Small imported graphs are planned and verified (fuzz_util.h).
 *
 * Built as a libFuzzer target (tests/fuzz/run.sh) and, with AF_FUZZ_ENTRY renamed, into
 * tests/test_fuzz_corpus.c. Without the importer (AF_HAVE_ONNX unset) the loader must say
 * AF_ENOTSUP for everything.
 */
#include "arenaflow/onnx.h"
#include "tests/fuzz/fuzz_util.h"

#ifndef AF_FUZZ_ENTRY
#define AF_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

int AF_FUZZ_ENTRY(const uint8_t *data, size_t size);

int AF_FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    size_t key = af_fuzz_key(data, size);
    af_onnx_opts_t o;
    af_onnx_opts_init(&o);
    o.allow_dynamic = 1;
    o.keep_folded = (int)(key & 1);
    af_graph_t *g = NULL;
    af_error_t err;
    int rc = af_onnx_load_mem(data, size, &o, &g, &err);
    if (rc != 0) {
        if (g != NULL || rc >= 0)
            AF_FUZZ_FAIL("load returned %d and set *out", rc);
        if (!af_onnx_available() && rc != AF_ENOTSUP)
            AF_FUZZ_FAIL("no importer, yet %d instead of AF_ENOTSUP", rc);
        return 0;
    }
    if (!af_graph_is_finalized(g))
        AF_FUZZ_FAIL("imported graph is not finalized");
    af_fuzz_plan_graph(g, key >> 1);
    af_graph_destroy(g);
    return 0;
}
