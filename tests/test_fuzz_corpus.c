/*
 * Replays every file of the fuzz corpora (tests/fuzz/corpus/<target>/) through the same entry
 * points the libFuzzer harnesses use (tests/fuzz/fuzz_<target>.c, compiled in here with their
 * entry renamed), so each input a fuzzer ever found interesting — and every crash input, once
 * fixed and added as corpus/<target>/regress_* — is a regression test of the normal run, and of
 * the ASan and TSan builds. A harness reports a broken invariant by printing it and aborting.
 *
 * The daemon harnesses (request handling, config loader) join only when the daemon core is
 * built: tests/fuzz/fuzz.cmake links it and defines AF_FUZZ_HAVE_DAEMON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define AF_FUZZ_ENTRY fuzz_json_one
#include "tests/fuzz/fuzz_json.c"
#undef AF_FUZZ_ENTRY
#define AF_FUZZ_ENTRY fuzz_onnx_one
#include "tests/fuzz/fuzz_onnx.c"
#undef AF_FUZZ_ENTRY
#define AF_FUZZ_ENTRY fuzz_csv_one
#include "tests/fuzz/fuzz_csv.c"
#undef AF_FUZZ_ENTRY
#define AF_FUZZ_ENTRY fuzz_config_one
#include "tests/fuzz/fuzz_config.c"
#undef AF_FUZZ_ENTRY
#ifdef AF_FUZZ_HAVE_DAEMON
#define AF_FUZZ_ENTRY fuzz_daemon_one
#include "tests/fuzz/fuzz_daemon.c"
#undef AF_FUZZ_ENTRY
#define AF_FUZZ_ENTRY fuzz_dconfig_one
#include "tests/fuzz/fuzz_dconfig.c"
#undef AF_FUZZ_ENTRY
#endif

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*entry_fn)(const uint8_t *data, size_t size);

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    uint8_t *b = malloc((size_t)n + 1); /* +1: a zero-length file still gets a pointer */
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Runs every file of corpus/<target> (sorted, so failures reproduce in order) through fn. */
static void replay(const char *target, entry_fn fn, size_t min_files)
{
    const char *src = getenv("AF_SOURCE_DIR");
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", src && src[0] ? src : ".", target);
    DIR *d = opendir(dir);
    if (!d)
        print_error("cannot open %s (is AF_SOURCE_DIR set?)\n", dir);
    assert_non_null(d);
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof(*names));
            assert_non_null(names);
        }
        names[n] = strdup(e->d_name);
        assert_non_null(names[n]);
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof(*names), by_name);
    size_t regress = 0;
    for (size_t i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        size_t len;
        uint8_t *data = slurp(path, &len);
        /* printed before the call: if the harness aborts, the culprit is the last line */
        if (getenv("AF_FUZZ_VERBOSE"))
            print_message("%s: %s\n", target, names[i]);
        fn(data, len);
        free(data);
        regress += strncmp(names[i], "regress_", 8) == 0;
        free(names[i]);
    }
    free(names);
    print_message("corpus %-8s %5zu files replayed (%zu regression inputs)\n", target, n, regress);
    assert_true(n >= min_files); /* an emptied corpus would test nothing */
}

static void test_fuzz_corpus_json(void **state)
{
    (void)state;
    replay("json", fuzz_json_one, 10);
}

static void test_fuzz_corpus_onnx(void **state)
{
    (void)state;
    replay("onnx", fuzz_onnx_one, 10);
}

static void test_fuzz_corpus_csv(void **state)
{
    (void)state;
    replay("csv", fuzz_csv_one, 5);
}

static void test_fuzz_corpus_config(void **state)
{
    (void)state;
    replay("config", fuzz_config_one, 3);
}

#ifdef AF_FUZZ_HAVE_DAEMON
static void test_fuzz_corpus_daemon(void **state)
{
    (void)state;
    replay("daemon", fuzz_daemon_one, 3);
}

static void test_fuzz_corpus_dconfig(void **state)
{
    (void)state;
    replay("dconfig", fuzz_dconfig_one, 3);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuzz_corpus_json),   cmocka_unit_test(test_fuzz_corpus_onnx),
        cmocka_unit_test(test_fuzz_corpus_csv),    cmocka_unit_test(test_fuzz_corpus_config),
#ifdef AF_FUZZ_HAVE_DAEMON
        cmocka_unit_test(test_fuzz_corpus_daemon), cmocka_unit_test(test_fuzz_corpus_dconfig),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
