/*
 * Common-module tests: the durable write (whole replacement, no temp file left behind, unique
 * temp files for concurrent writers of one path, clear errors), the whole-file reader, the size
 * and bool grammar, and the option-table mechanism (every type, defaults in the row, errors that
 * name the key and leave the struct alone, the canonical format reading back).
 */
#include "arenaflow/common.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include <cmocka.h>

static char dir[256];

static int setup_dir(void **state)
{
    (void)state;
    const char *base = getenv("AF_BINARY_DIR");
    snprintf(dir, sizeof dir, "%s/test_common.%ld.XXXXXX", base ? base : "/tmp", (long)getpid());
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Files in dir whose name ends in suffix. */
static int count_files(const char *suffix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    size_t sl = strlen(suffix);
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        n += l >= sl && strcmp(de->d_name + l - sl, suffix) == 0;
    }
    closedir(d);
    return n;
}

static void test_file_write_durable_replaces_whole_file(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/a.txt", dir);
    af_error_t err;
    assert_int_equal(af_file_write_durable(path, "first version, long", 19, &err), 0);
    assert_int_equal(af_file_write_durable(path, "second", 6, &err), 0);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(af_file_read(path, 1 << 20, &text, &len, &err), 0);
    assert_int_equal(len, 6);
    assert_string_equal(text, "second"); /* NUL-terminated, nothing of the longer old file */
    af_free(text);
    assert_int_equal(count_files(".tmp"), 0);
    /* empty data is a valid file */
    assert_int_equal(af_file_write_durable(path, NULL, 0, &err), 0);
    assert_int_equal(af_file_read(path, 16, &text, &len, &err), 0);
    assert_int_equal(len, 0);
    af_free(text);
}

static void test_file_write_durable_reports_errors(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof path, "%s/no/such/dir/x", dir);
    af_error_t err;
    af_error_clear(&err);
    assert_int_equal(af_file_write_durable(path, "x", 1, &err), AF_EIO);
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(af_file_write_durable(NULL, "x", 1, &err), AF_EINVAL);
    /* reading: missing file, too large */
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(af_file_read(path, 16, &text, &len, &err), AF_EIO);
    snprintf(path, sizeof path, "%s/big", dir);
    assert_int_equal(af_file_write_durable(path, "0123456789", 10, &err), 0);
    assert_int_equal(af_file_read(path, 9, &text, &len, &err), AF_ESIZE);
    assert_null(text);
    assert_int_equal(af_file_read(dir, 1 << 20, &text, &len, &err), AF_EIO); /* a directory */
}

#define WRITERS 4
#define ROUNDS 200

typedef struct {
    int id;
    int failures;
} writer_t;

static void writer(void *arg)
{
    writer_t *w = arg;
    char path[400], body[64];
    snprintf(path, sizeof path, "%s/shared", dir);
    for (int r = 0; r < ROUNDS; r++) {
        int n = snprintf(body, sizeof body, "writer %d round %04d end", w->id, r);
        if (af_file_write_durable(path, body, (size_t)n, NULL))
            w->failures++;
    }
}

/* Two writers of one path must never share a temp file: with a fixed temp name one writer's
 * rename can publish the other's half-written bytes, or fail because the other renamed it. */
static void test_file_write_durable_concurrent_writers(void **state)
{
    (void)state;
    uv_thread_t t[WRITERS];
    writer_t w[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        w[i] = (writer_t){i, 0};
        assert_int_equal(uv_thread_create(&t[i], writer, &w[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++) {
        uv_thread_join(&t[i]);
        assert_int_equal(w[i].failures, 0);
    }
    char path[400], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/shared", dir);
    assert_int_equal(af_file_read(path, 1 << 20, &text, &len, NULL), 0);
    int id = -1, round = -1;
    char end[8] = "";
    assert_int_equal(sscanf(text, "writer %d round %d %7s", &id, &round, end), 3);
    assert_string_equal(end, "end"); /* one writer's complete text */
    assert_int_equal(round, ROUNDS - 1);
    af_free(text);
    assert_int_equal(count_files(".tmp"), 0);
}

static void test_grammar_sizes_and_bools(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t v;
    } ok[] = {{"0", 0},         {"4096", 4096},     {"64K", 65536},
              {"64KiB", 65536}, {"64kb", 65536},    {"2G", 2ull << 30},
              {"3m", 3u << 20}, {"1T", 1ull << 40}, {"16777215T", 16777215ull << 40}};
    static const char *const bad[] = {"",          "-1",  "+1",   " 3",     "1.5",
                                      "64Q",       "K",   "64 K", "64KiBx", "20000000000000000000",
                                      "16777216T", "64iB"};
    uint64_t v;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        assert_int_equal(af_parse_size(ok[i].s, &v), 0);
        assert_int_equal(v, ok[i].v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 7;
        assert_int_equal(af_parse_size(bad[i], &v), AF_EINVAL);
        assert_int_equal(v, 7); /* untouched */
    }
    int b = 5;
    static const char *const yes[] = {"1", "true", "TRUE", "yes", "On"}, *const no[] = {
                                                                             "0", "false", "No",
                                                                             "off"};
    for (size_t i = 0; i < 5; i++)
        assert_true(af_parse_bool(yes[i], &b) == 0 && b == 1);
    for (size_t i = 0; i < 4; i++)
        assert_true(af_parse_bool(no[i], &b) == 0 && b == 0);
    assert_int_equal(af_parse_bool("2", &b), AF_EINVAL);
    assert_int_equal(af_parse_bool("", &b), AF_EINVAL);
    char t[32];
    af_format_bytes(t, sizeof t, 512);
    assert_string_equal(t, "512 B");
    af_format_bytes(t, sizeof t, 1536);
    assert_string_equal(t, "1.50 KiB");
    af_format_bytes(t, sizeof t, 3ull << 30);
    assert_string_equal(t, "3.00 GiB");
}

typedef struct {
    int on, tri;
    uint64_t size, count;
    int32_t small;
    int64_t wide;
    double x;
    const char *name;
    int pick;
    char text[8];
} demo_t;

static const char *const *demo_names(void)
{
    static const char *const n[] = {"red", "green", "blue", NULL};
    return n;
}

#define F(f) offsetof(demo_t, f)
static const af_opt_t demo[] = {
    {"on", AF_OPT_BOOL, F(on), "yes", 0, 0, NULL, 0, 0, ""},
    {"tri", AF_OPT_AUTO_BOOL, F(tri), "auto", 0, 0, NULL, 0, 0, ""},
    {"size", AF_OPT_SIZE, F(size), "64K", 0, 0, NULL, 0, AF_OPT_POW2, ""},
    {"count", AF_OPT_UINT, F(count), "7", 1, 100, NULL, 0, 0, ""},
    {"small", AF_OPT_INT, F(small), "-3", -10, 10, NULL, 0, 0, ""},
    {"wide", AF_OPT_INT64, F(wide), "5000000000", 0, INT64_MAX, NULL, 0, 0, ""},
    {"x", AF_OPT_DOUBLE, F(x), "0.7", 0, 0, NULL, 0, 0, ""},
    {"name", AF_OPT_NAME, F(name), "green", 0, 0, demo_names, 0, 0, ""},
    {"pick", AF_OPT_ENUM, F(pick), "blue", 0, 0, demo_names, 0, 0, ""},
    {"text", AF_OPT_STRING, F(text), "hi", 0, 0, NULL, 8, 0, ""},
};
#undef F
#define NDEMO (sizeof demo / sizeof demo[0])

static void test_option_table_defaults_set_format(void **state)
{
    (void)state;
    demo_t d;
    memset(&d, 0, sizeof d);
    af_error_t err;
    assert_int_equal(af_opts_defaults(demo, NDEMO, &d, &err), 0);
    assert_true(d.on == 1 && d.tri == -1 && d.size == 65536 && d.count == 7 && d.small == -3);
    assert_true(d.wide == 5000000000ll && d.x == 0.7 && d.pick == 2);
    assert_ptr_equal(d.name, demo_names()[1]); /* the list's own static string */
    assert_string_equal(d.text, "hi");
    demo_t keep = d;
    static const char *const bad[][2] = {{"size", "3K"},   {"count", "0"},       {"count", "101"},
                                         {"small", "11"},  {"x", "-1"},          {"x", "nan"},
                                         {"name", "pink"}, {"text", "8 chars!"}, {"on", "maybe"},
                                         {"tri", "autox"}, {"wide", "1e3"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        af_error_clear(&err);
        assert_int_equal(af_opts_set(demo, NDEMO, &d, "demo", bad[i][0], bad[i][1], &err),
                         AF_EINVAL);
        assert_non_null(strstr(err.msg, bad[i][0]));
        assert_non_null(strstr(err.msg, "demo"));
        assert_memory_equal(&d, &keep, sizeof d); /* untouched */
    }
    assert_int_equal(af_opts_set(demo, NDEMO, &d, "demo", "nope", "1", &err), AF_EINVAL);
    assert_non_null(strstr(err.msg, "unknown demo option 'nope'"));
    assert_int_equal(af_opts_set(demo, NDEMO, &d, "demo", "size", "1MiB", &err), 0);
    assert_int_equal(af_opts_set(demo, NDEMO, &d, "demo", "tri", "off", &err), 0);
    assert_int_equal(af_opts_set(demo, NDEMO, &d, "demo", "x", "0.1", &err), 0);
    char a[512], b2[512];
    assert_int_equal(af_opts_format(demo, NDEMO, &d, a, sizeof a), 0);
    assert_string_equal(a, "on=1;tri=0;size=1048576;count=7;small=-3;wide=5000000000;"
                           "x=0.10000000000000001;name=green;pick=blue;text=hi");
    demo_t back;
    memset(&back, 0, sizeof back);
    assert_int_equal(af_opts_defaults(demo, NDEMO, &back, &err), 0);
    char copy[512];
    snprintf(copy, sizeof copy, "%s", a);
    for (char *sv = NULL, *kv = strtok_r(copy, ";", &sv); kv; kv = strtok_r(NULL, ";", &sv)) {
        char *eq = strchr(kv, '=');
        *eq = '\0';
        assert_int_equal(af_opts_set(demo, NDEMO, &back, "demo", kv, eq + 1, &err), 0);
    }
    assert_int_equal(af_opts_format(demo, NDEMO, &back, b2, sizeof b2), 0);
    assert_string_equal(a, b2);
    assert_int_equal(af_opts_format(demo, NDEMO, &d, a, 10), AF_ESIZE);
    /* a table whose default does not parse is refused */
    af_opt_t broken = demo[3];
    broken.def = "1000";
    assert_int_equal(af_opts_defaults(&broken, 1, &back, &err), AF_EINVAL);
}

/* AF_OPT_RATE: a positive double with an optional K/M/G/T suffix (powers of 1000). */
static void test_option_rate_flag(void **state)
{
    (void)state;
    double v = 0;
    af_opt_t rate = {"bw", AF_OPT_DOUBLE, 0, "16e9", 0, 0, NULL, 0, AF_OPT_RATE, ""};
    af_error_t err;
    assert_int_equal(af_opts_defaults(&rate, 1, &v, &err), 0);
    assert_true(v == 16e9);
    static const struct {
        const char *in;
        double want;
    } good[] = {{"16G", 16e9}, {"2.5M", 2.5e6}, {"1K", 1e3}, {"3T", 3e12}, {"0.5", 0.5}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_int_equal(af_opts_set(&rate, 1, &v, "demo", "bw", good[i].in, &err), 0);
        assert_true(v == good[i].want);
    }
    static const char *const bad[] = {"0", "-1", "0G", "16X", "G", "16GG", "inf", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 7;
        af_error_clear(&err);
        assert_int_equal(af_opts_set(&rate, 1, &v, "demo", "bw", bad[i], &err), AF_EINVAL);
        assert_non_null(strstr(err.msg, "positive rate"));
        assert_true(v == 7);
    }
    /* without the flag the suffix is refused and 0 is allowed */
    rate.flags = 0;
    assert_int_equal(af_opts_set(&rate, 1, &v, "demo", "bw", "16G", &err), AF_EINVAL);
    assert_int_equal(af_opts_set(&rate, 1, &v, "demo", "bw", "0", &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_write_durable_replaces_whole_file),
        cmocka_unit_test(test_file_write_durable_reports_errors),
        cmocka_unit_test(test_file_write_durable_concurrent_writers),
        cmocka_unit_test(test_grammar_sizes_and_bools),
        cmocka_unit_test(test_option_table_defaults_set_format),
        cmocka_unit_test(test_option_rate_flag),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
