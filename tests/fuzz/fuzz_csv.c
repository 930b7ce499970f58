/*
 * libFuzzer harness: the MiniMalloc CSV reader (af_intervals_parse_csv) and the interval
 * placers behind it.
 *
 * Every input must either parse or fail with a negative AF_E* code and a message, never crash
 * or read past `size` (the text is not NUL-terminated). Parsed intervals must be well formed
 * (lower < upper, as the header promises). Up to a few hundred of them are then placed with an
 * algorithm chosen from the input (tiny time limit for "search"), and the placement must pass
 * af_intervals_verify() and stay at or above af_intervals_lower_bound(). Broken invariants
 * abort(), which libFuzzer reports as a crash.
 *
 * Built as a libFuzzer target (tests/fuzz/run.sh) and, with AF_FUZZ_ENTRY renamed, into
 * tests/test_fuzz_corpus.c.
 */
#include "tests/fuzz/fuzz_util.h"

#ifndef AF_FUZZ_ENTRY
#define AF_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

/* Placement cost grows with n; parsing is what is fuzzed beyond this. */
#define FUZZ_CSV_PLACE_MAX 400

int AF_FUZZ_ENTRY(const uint8_t *data, size_t size);

int AF_FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    af_interval_t *iv = NULL;
    char **ids = NULL;
    size_t n = 0;
    af_error_t err;
    int rc = af_intervals_parse_csv((const char *)data, size, &iv, &ids, &n, &err);
    if (rc != 0) {
        if (rc >= 0 || err.code != rc || err.msg[0] == '\0')
            AF_FUZZ_FAIL("parse failed with %d (err.code %d, msg '%s')", rc, err.code, err.msg);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (iv[i].lower >= iv[i].upper)
            AF_FUZZ_FAIL("row %zu parsed with lower >= upper", i);
    if (n <= FUZZ_CSV_PLACE_MAX) {
        const char *const *pn = af_place_names();
        size_t key = af_fuzz_key(data, size);
        af_place_opts_t po = {0};
        po.alignment = (key & 1) ? 1 : 64;
        po.time_limit_s = 0.01;
        const char *algo = pn[(key >> 1) % af_fuzz_count_names(pn)];
        uint64_t height = 0;
        rc = af_place_intervals(iv, n, algo, &po, &height, &err);
        if (rc == 0) {
            if (af_intervals_verify(iv, n, height, po.alignment, &err) != 0)
                AF_FUZZ_FAIL("%s: placement does not verify: %s", algo, err.msg);
            if (height < af_intervals_lower_bound(iv, n, po.alignment))
                AF_FUZZ_FAIL("%s: height below the lower bound", algo);
        } else if (rc >= 0) {
            AF_FUZZ_FAIL("%s: returned %d", algo, rc);
        }
    }
    af_free(iv);
    af_free(ids);
    return 0;
}
