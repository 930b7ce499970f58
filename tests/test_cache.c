/*
 * Plan cache tests: hits and misses, fingerprints that follow graph and options, the LRU byte
 * bound, persistence across a restart, corrupted and foreign files rejected with a warning,
 * and a session running a cached plan.
 */
#include "arenaflow/cache.h"
#include "arenaflow/executor.h"
#include "tests/randdag.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char tmpdir[256];

static int setup_dir(void **state)
{
    (void)state;
    const char *base = getenv("AF_BINARY_DIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/test_cache.%ld.XXXXXX", base ? base : "/tmp",
             (long)getpid());
    if (!mkdtemp(tmpdir))
        return -1;
    return 0;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static af_plan_cache_t *open_cache(const char *dir, uint64_t max_bytes)
{
    af_plan_cache_opts_t o;
    af_plan_cache_opts_init(&o);
    o.dir = dir;
    if (max_bytes)
        o.max_bytes = max_bytes;
    af_plan_cache_t *c = NULL;
    af_error_t err;
    int rc = af_plan_cache_create(&o, &c, &err);
    if (rc)
        fprintf(stderr, "af_plan_cache_create: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return c;
}

static void test_cache_hit_after_miss(void **state)
{
    (void)state;
    af_plan_cache_t *c = open_cache(NULL, 0);
    af_graph_t *g = rd_graph(11, 30);
    assert_non_null(g);
    const af_plan_t *p1, *p2;
    int hit = -1;
    af_error_t err;
    assert_int_equal(af_plan_cache_get(c, g, NULL, &p1, &hit, &err), 0);
    assert_int_equal(hit, 0);
    assert_int_equal(af_plan_verify(p1, &err), 0);
    assert_int_equal(af_plan_cache_get(c, g, NULL, &p2, &hit, &err), 0);
    assert_int_equal(hit, 1);
    assert_ptr_equal(p1, p2);
    /* the cache planned its own copy: the caller's graph may go */
    assert_ptr_not_equal(af_plan_graph(p1), g);
    assert_int_equal(af_graph_tensor_count(af_plan_graph(p1)), af_graph_tensor_count(g));
    af_graph_destroy(g);
    assert_int_equal(af_plan_verify(p1, &err), 0);
    af_plan_cache_stats_t st;
    af_plan_cache_stats(c, &st);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.misses, 1);
    assert_int_equal(st.entries, 1);
    af_plan_cache_release(c, p1);
    af_plan_cache_release(c, p2);
    af_plan_cache_destroy(c);
}

static void test_cache_fingerprint_follows_graph_and_opts(void **state)
{
    (void)state;
    af_graph_t *a = rd_graph(5, 20), *b = rd_graph(5, 20), *d = rd_graph(6, 20);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(d);
    af_plan_opts_t o;
    af_plan_opts_init(&o);
    uint64_t fa = af_plan_fingerprint(a, &o);
    assert_true(fa == af_plan_fingerprint(b, &o));   /* same structure and sizes */
    assert_true(fa == af_plan_fingerprint(a, NULL)); /* NULL = defaults */
    assert_true(fa != af_plan_fingerprint(d, &o));
    o.parallel_reuse = AF_REUSE_STRICT;
    assert_true(fa != af_plan_fingerprint(a, &o));
    af_plan_opts_init(&o);
    o.alignment = 64;
    assert_true(fa != af_plan_fingerprint(a, &o));
    af_plan_opts_init(&o); /* under a budget, the rewrite's options count too */
    o.budget = 1 << 20;
    uint64_t fb = af_plan_fingerprint(a, &o);
    o.offload = 1;
    assert_true(fb != af_plan_fingerprint(a, &o));
    o.offload = 0;
    o.bandwidth = 1e9;
    assert_true(fb != af_plan_fingerprint(a, &o));
    af_graph_destroy(a);
    af_graph_destroy(b);
    af_graph_destroy(d);
}

static uint64_t file_count(const char *dir)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -c '\\.afplan$'", dir);
    FILE *f = popen(cmd, "r");
    unsigned long long n = 0;
    if (f) {
        if (fscanf(f, "%llu", &n) != 1)
            n = 0;
        pclose(f);
    }
    return n;
}

/* Plans n graphs (seeds seed0...) through c, each released at once; the byte bound holds after
 * every one and, with a directory, the directory holds exactly the cache's entries. */
static void fill_cache(af_plan_cache_t *c, uint64_t seed0, int n, uint64_t max_bytes,
                       const char *dir)
{
    for (int i = 0; i < n; i++) {
        af_graph_t *g = rd_graph(seed0 + (uint64_t)i, 30);
        assert_non_null(g);
        const af_plan_t *p;
        assert_int_equal(af_plan_cache_get(c, g, NULL, &p, NULL, NULL), 0);
        af_plan_cache_release(c, p);
        af_graph_destroy(g);
        af_plan_cache_stats_t st;
        af_plan_cache_stats(c, &st);
        assert_true(st.bytes <= max_bytes);
        if (dir)
            assert_int_equal(file_count(dir), st.entries);
    }
}

/* The graph of `seed` is answered from the cache. */
static void assert_hit(af_plan_cache_t *c, uint64_t seed)
{
    af_graph_t *g = rd_graph(seed, 30);
    const af_plan_t *p;
    int hit = 0;
    assert_int_equal(af_plan_cache_get(c, g, NULL, &p, &hit, NULL), 0);
    assert_int_equal(hit, 1);
    af_plan_cache_release(c, p);
    af_graph_destroy(g);
}

static void test_cache_lru_bounded_by_bytes(void **state)
{
    (void)state;
    af_plan_cache_t *c = open_cache(NULL, 64 * 1024);
    fill_cache(c, 100, 40, 64 * 1024, NULL);
    af_plan_cache_stats_t st;
    af_plan_cache_stats(c, &st);
    assert_true(st.evictions > 0);
    assert_int_equal(st.misses, 40);
    assert_true(st.entries < 40);
    assert_hit(c, 139); /* the most recent entry is still there */
    af_plan_cache_destroy(c);
}

static void test_cache_survives_restart(void **state)
{
    (void)state;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/restart", tmpdir);
    af_graph_t *g = rd_graph(21, 40);
    assert_non_null(g);
    uint64_t arena;
    int32_t nt = af_graph_tensor_count(g);
    uint64_t *offs = calloc((size_t)nt, sizeof(uint64_t));
    {
        af_plan_cache_t *c = open_cache(dir, 0);
        const af_plan_t *p;
        int hit = 1;
        assert_int_equal(af_plan_cache_get(c, g, NULL, &p, &hit, NULL), 0);
        assert_int_equal(hit, 0);
        arena = af_plan_arena_bytes(p);
        for (int32_t t = 0; t < nt; t++)
            offs[t] = af_plan_tensor(p, t)->offset;
        af_plan_cache_stats_t st;
        af_plan_cache_stats(c, &st);
        assert_int_equal(st.files_written, 1);
        af_plan_cache_release(c, p);
        af_plan_cache_destroy(c);
    }
    assert_int_equal(file_count(dir), 1);
    /* restart: the plan comes back from disk */
    af_plan_cache_t *c = open_cache(dir, 0);
    af_plan_cache_stats_t st;
    af_plan_cache_stats(c, &st);
    assert_int_equal(st.files_loaded, 1);
    assert_int_equal(st.files_rejected, 0);
    assert_null(af_plan_cache_warning(c, 0));
    const af_plan_t *p;
    int hit = 0;
    af_error_t err;
    assert_int_equal(af_plan_cache_get(c, g, NULL, &p, &hit, &err), 0);
    assert_int_equal(hit, 1);
    af_plan_cache_stats(c, &st);
    assert_int_equal(st.restored, 1);
    assert_int_equal(st.misses, 0);
    assert_int_equal(af_plan_verify(p, &err), 0);
    assert_int_equal(af_plan_arena_bytes(p), arena);
    for (int32_t t = 0; t < nt; t++)
        assert_int_equal(af_plan_tensor(p, t)->offset, offs[t]);
    /* and it runs */
    af_executor_opts_t eo;
    af_executor_opts_init(&eo);
    eo.threads = 2;
    af_executor_t *ex;
    assert_int_equal(af_executor_create(&eo, &ex, NULL), 0);
    af_session_t *s;
    assert_int_equal(af_session_create(ex, p, NULL, &s, &err), 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(af_session_run(s, NULL, NULL, &err), 0);
    af_session_destroy(s);
    af_executor_destroy(ex);
    af_plan_cache_release(c, p);
    af_plan_cache_destroy(c);
    free(offs);
    af_graph_destroy(g);
}

/* Eviction deletes the evicted plan's file: the directory never holds more plans than the cache. */
static void test_cache_directory_follows_lru(void **state)
{
    (void)state;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/lru", tmpdir);
    af_plan_cache_t *c = open_cache(dir, 64 * 1024);
    fill_cache(c, 300, 40, 64 * 1024, dir);
    af_plan_cache_stats_t st;
    af_plan_cache_stats(c, &st);
    assert_true(st.evictions > 0);
    assert_int_equal(st.files_written, 40);
    assert_int_equal(st.files_removed, st.evictions);
    assert_null(af_plan_cache_warning(c, 0));
    uint64_t entries = st.entries;
    af_plan_cache_destroy(c);
    /* a restart finds exactly the plans the cache still held, and the newest one hits */
    c = open_cache(dir, 64 * 1024);
    af_plan_cache_stats(c, &st);
    assert_int_equal(st.files_loaded, entries);
    assert_int_equal(st.files_rejected, 0);
    assert_hit(c, 339);
    af_plan_cache_destroy(c);
}

static void flip_byte(const char *path, long at)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, at, SEEK_SET), 0);
    int ch = fgetc(f);
    assert_int_equal(fseek(f, at, SEEK_SET), 0);
    fputc(ch ^ 0x5a, f);
    fclose(f);
}

static void test_cache_rejects_corrupted_and_foreign_files(void **state)
{
    (void)state;
    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/corrupt", tmpdir);
    af_graph_t *g = rd_graph(31, 30);
    assert_non_null(g);
    af_plan_cache_t *c = open_cache(dir, 0);
    const af_plan_t *p;
    assert_int_equal(af_plan_cache_get(c, g, NULL, &p, NULL, NULL), 0);
    af_plan_cache_release(c, p);
    af_plan_cache_destroy(c);
    snprintf(path, sizeof path, "%s/%016llx.afplan", dir,
             (unsigned long long)af_plan_fingerprint(g, NULL));
    flip_byte(path, 200); /* inside the order / offsets */
    /* a foreign file and a file with a wrong name */
    char foreign[400];
    snprintf(foreign, sizeof foreign, "%s/0123456789abcdef.afplan", dir);
    FILE *f = fopen(foreign, "wb");
    assert_non_null(f);
    fputs("this is not a plan", f);
    fclose(f);
    c = open_cache(dir, 0);
    af_plan_cache_stats_t st;
    af_plan_cache_stats(c, &st);
    assert_int_equal(st.files_loaded, 0);
    assert_int_equal(st.files_rejected, 2);
    const char *w0 = af_plan_cache_warning(c, 0), *w1 = af_plan_cache_warning(c, 1);
    assert_non_null(w0);
    assert_non_null(w1);
    int saw_checksum = strstr(w0, "checksum") || strstr(w1, "checksum");
    assert_true(saw_checksum);
    /* never trusted: the lookup plans again and rewrites the file */
    int hit = 1;
    af_error_t err;
    assert_int_equal(af_plan_cache_get(c, g, NULL, &p, &hit, &err), 0);
    assert_int_equal(hit, 0);
    assert_int_equal(af_plan_verify(p, &err), 0);
    af_plan_cache_release(c, p);
    af_plan_cache_destroy(c);
    c = open_cache(dir, 0);
    af_plan_cache_stats(c, &st);
    assert_int_equal(st.files_loaded, 1); /* the rewritten one; the foreign file stays rejected */
    assert_int_equal(st.files_rejected, 1);
    af_plan_cache_destroy(c);
    af_graph_destroy(g);
}

/* A plan's record: encode -> decode gives back its order, offsets, counts and names; a flipped
 * byte anywhere is refused; the canonical option string reads back to the same key. */
static void test_cache_plan_record_round_trip(void **state)
{
    (void)state;
    af_graph_t *g = rd_graph(41, 30);
    assert_non_null(g);
    af_plan_t *p = NULL;
    af_error_t err;
    assert_int_equal(af_plan_create(g, NULL, &p, &err), 0);
    void *buf = NULL;
    size_t len = 0;
    assert_int_equal(af_plan_encode(p, 1234, &buf, &len, &err), 0);
    af_plan_record_t rec;
    assert_int_equal(af_plan_decode(buf, len, &rec, &err), 0);
    assert_int_equal(rec.key, 1234);
    assert_int_equal(rec.nodes, af_graph_node_count(g));
    assert_int_equal(rec.tensors, af_graph_tensor_count(g));
    assert_int_equal(rec.arena_bytes, af_plan_arena_bytes(p));
    assert_string_equal(rec.placer, af_plan_report(p)->placer);
    assert_memory_equal(rec.order, af_plan_order(p), (size_t)rec.nodes * sizeof(int32_t));
    for (int32_t t = 0; t < rec.tensors; t++)
        assert_int_equal(rec.offsets[t], af_plan_tensor(p, t)->offset);
    af_plan_t *q = NULL; /* the record rebuilds the plan */
    assert_int_equal(af_plan_restore(g, NULL, rec.order, rec.offsets, &q, &err), 0);
    assert_int_equal(af_plan_arena_bytes(q), af_plan_arena_bytes(p));
    af_plan_destroy(q);
    af_plan_record_free(&rec);
    for (size_t at = 0; at < len; at += len / 17 + 1) {
        ((uint8_t *)buf)[at] ^= 0x40;
        af_plan_record_t bad;
        assert_int_equal(af_plan_decode(buf, len, &bad, &err), AF_EPARSE);
        ((uint8_t *)buf)[at] ^= 0x40;
    }
    assert_int_equal(af_plan_decode(buf, len - 1, &rec, &err), AF_EPARSE);
    af_free(buf);
    /* options: format -> set every key -> equal string and key */
    af_plan_opts_t o, back;
    af_plan_opts_init(&o);
    o.alpha = 0.1;
    o.placer = "greedy-size";
    o.mode = AF_MODE_SHARED;
    char text[512], again[512];
    assert_int_equal(af_plan_opts_format(&o, text, sizeof text), 0);
    af_plan_opts_init(&back);
    char copy[512];
    snprintf(copy, sizeof copy, "%s", text);
    for (char *save = NULL, *kv = strtok_r(copy, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        assert_non_null(eq);
        *eq = '\0';
        assert_int_equal(af_plan_opts_set(&back, kv, eq + 1, &err), 0);
    }
    assert_int_equal(af_plan_opts_format(&back, again, sizeof again), 0);
    assert_string_equal(text, again);
    assert_true(af_plan_fingerprint(g, &o) == af_plan_fingerprint(g, &back));
    assert_int_equal(af_plan_opts_format(&o, text, 20), AF_ESIZE);
    af_plan_destroy(p);
    af_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_hit_after_miss),
        cmocka_unit_test(test_cache_fingerprint_follows_graph_and_opts),
        cmocka_unit_test(test_cache_lru_bounded_by_bytes),
        cmocka_unit_test(test_cache_survives_restart),
        cmocka_unit_test(test_cache_directory_follows_lru),
        cmocka_unit_test(test_cache_rejects_corrupted_and_foreign_files),
        cmocka_unit_test(test_cache_plan_record_round_trip),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
