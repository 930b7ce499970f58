/*
 * Common-module tests: the durable write (whole replacement, no temp file left behind, unique
 * temp files for concurrent writers of one path, clear errors) and the whole-file reader.
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_write_durable_replaces_whole_file),
        cmocka_unit_test(test_file_write_durable_reports_errors),
        cmocka_unit_test(test_file_write_durable_concurrent_writers),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
