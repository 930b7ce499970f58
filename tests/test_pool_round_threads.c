/*
 * Tests of the pool's learned rounds (af_pool_cache_round) with a second thread: blocks of a
 * learned arena freed by another thread (its cache, af_pool_free) in the recorded order and behind
 * it; two threads each learning its own trace, with deviations and hand-overs. The replay is
 * checked with the runner of pool_round_runner.h (contents, no overlap, the documented rule);
 * TSan runs these. Random inputs come from fixed seeds, printed on failure; under ASan/TSan the
 * stress runs fewer rounds (SCALE).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arenaflow/pool.h"
#include "pool_testutil.h"
#include "pool_round_runner.h"

#ifdef AF_ASAN_BUILD
#include <sanitizer/asan_interface.h>
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The configurations the replay tests run under: the defaults, regions for the classes of
 * 16 KiB or more (where misses go), poison (which also takes the CAS path on every free) with
 * the exact peak (one shared atomic per call). */
static const round_cfg_t CFG_DEFAULT = {.name = "default"},
                         CFG_REGIONS = {.name = "regions", .region_min = 16 * KiB},
                         CFG_POISON = {.name = "poison, exact peak", .poison = 1, .exact_peak = 1};

/* ---- 3. frees from another thread --------------------------------------------------------- */

enum { QCAP = 512 };

typedef struct {
    void *ptr;
    size_t size;
    uint64_t tag;
    int how;
} item_t;

/* A thread that frees what it is handed (through its own cache or af_pool_free). */
typedef struct {
    af_pool_t *pool;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    item_t q[QCAP];
    int head, tail, stop;
    long pushed, done;
    int bad, errors;
} freer_t;

static void *freer_main(void *arg)
{
    freer_t *f = arg;
    af_pool_cache_t *k;
    if (af_pool_cache_create(f->pool, &k))
        return NULL;
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (f->head == f->tail && !f->stop)
            pthread_cond_wait(&f->cv, &f->mu);
        if (f->head == f->tail)
            break;
        item_t it = f->q[f->head];
        f->head = (f->head + 1) % QCAP;
        pthread_mutex_unlock(&f->mu);
        int bad = !check(it.ptr, it.size, it.tag);
        int rc = it.how == HOW_POOL ? af_pool_free(f->pool, it.ptr) : af_pool_cache_free(k, it.ptr);
        pthread_mutex_lock(&f->mu);
        f->bad += bad;
        f->errors += rc != 0;
        f->done++;
        pthread_cond_broadcast(&f->cv);
    }
    pthread_mutex_unlock(&f->mu);
    af_pool_cache_destroy(k);
    return NULL;
}

static void freer_push(freer_t *f, void *ptr, size_t size, uint64_t tag, int how)
{
    pthread_mutex_lock(&f->mu);
    while ((f->tail + 1) % QCAP == f->head)
        pthread_cond_wait(&f->cv, &f->mu);
    f->q[f->tail] = (item_t){ptr, size, tag, how};
    f->tail = (f->tail + 1) % QCAP;
    f->pushed++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void freer_wait(freer_t *f)
{
    pthread_mutex_lock(&f->mu);
    while (f->done < f->pushed)
        pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
}

/* Plays the trace; every third free goes to the freer thread (alternating its cache and
 * af_pool_free); sync: waits until it is done, so the frees keep the trace's order. */
static void run_remote_round(run_t *r, const trace_t *t, freer_t *f, int round, int sync)
{
    run_begin(r, round);
    int nth = 0;
    for (int e = 0; e < t->nev; e++) {
        const ev_t *v = &t->ev[e];
        if (v->op == EV_ALLOC) {
            run_alloc(r, v->id, v->size);
            continue;
        }
        if (v->id % 3) {
            run_free(r, v->id, HOW_CACHE);
            continue;
        }
        int id = v->id;
        assert_true(check(r->ptr[id], r->size[id], r->tag[id]));
        freer_push(f, r->ptr[id], r->size[id], r->tag[id], nth++ % 2 ? HOW_POOL : HOW_CACHE);
        if (sync) {
            freer_wait(f);
            if (r->place[id] >= 0)
                r->busy[r->place[id]] = 0;
        }
        r->ptr[id] = NULL;
    }
}

static void test_round_cross_thread_free(void **state)
{
    trace_t t;
    trace_make(&t, 0xc2055ull, 120, 256, 2 * MiB, 8);
    af_pool_t *p = cfg_pool(state);
    run_t r;
    run_init(&r, p, t.seed, t.n);
    run_learn(&r, &t);
    freer_t *f = calloc(1, sizeof(*f));
    f->pool = p;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, freer_main, f), 0);

    /* frees handed over one at a time, in the trace's order: every place is free in time */
    run_remote_round(&r, &t, f, 3, 1);
    round_delta_t d = run_end(&r);
    assert_int_equal(d.hits, t.n);
    assert_int_equal(d.misses, 0);
    /* frees running behind on the other thread: places may still be taken (misses) and the next
     * round may start with one in use (held); only contents are checked (by the freer) */
    r.known = 0;
    int held_rounds = 0;
    for (int round = 4; round < 8; round++) {
        run_remote_round(&r, &t, f, round, 0);
        d = run_end(&r);
        held_rounds += (int)d.next_held;
        assert_int_equal(d.hits + d.misses <= (uint64_t)t.n, 1);
    }
    freer_wait(f);
    memset(r.busy, 0, (size_t)r.nplaces * sizeof(*r.busy));
    /* everything freed now, but the last round may have ended with a block still out: round 8
     * may be held; round 9 is served from the arena again */
    r.known = 0;
    run_begin(&r, 8);
    run_events(&r, t.ev, t.nev);
    d = run_end(&r);
    r.known = 1;
    run_remote_round(&r, &t, f, 9, 1);
    d = run_end(&r);
    assert_int_equal(d.hits, t.n);
    assert_int_equal(d.misses, 0);

    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    pthread_join(th, NULL);
    printf("cross-thread: %ld frees on the other thread, %d held rounds\n", f->done, held_rounds);
    if (f->bad || f->errors)
        fprintf(stderr, "seed %llx: %d corrupted blocks, %d failed frees on the other thread\n",
                (unsigned long long)t.seed, f->bad, f->errors);
    assert_int_equal(f->bad, 0);
    assert_int_equal(f->errors, 0);
    af_pool_stats_t st;
    af_pool_stats(p, &st);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.allocs, st.frees);
    assert_int_equal(st.double_frees + st.foreign_frees, 0);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
    af_pool_cache_destroy(r.k);
    run_fini(&r);
    af_pool_destroy(p);
    trace_free(&t);
}

/* ---- 8. two threads, each its own learned trace, deviations, hand-overs ------------------- */

typedef struct stress_thr {
    af_pool_t *pool;
    uint64_t seed;
    int rounds;
    struct stress_thr *peer;
    pthread_mutex_t mu; /* the incoming queue */
    item_t q[QCAP];
    int head, tail;
    _Atomic int finished;
    /* results */
    int bad, errors, handed;
    uint64_t allocs;
} stress_thr_t;

/* Frees what the peer handed over (half through the cache, half through af_pool_free). */
static void stress_drain(stress_thr_t *s, af_pool_cache_t *k)
{
    for (;;) {
        pthread_mutex_lock(&s->mu);
        if (s->head == s->tail) {
            pthread_mutex_unlock(&s->mu);
            return;
        }
        item_t it = s->q[s->head];
        s->head = (s->head + 1) % QCAP;
        pthread_mutex_unlock(&s->mu);
        s->bad += !check(it.ptr, it.size, it.tag);
        af_pool_block_info_t bi; /* the block is in use, whatever served it */
        s->errors += af_pool_block_info(s->pool, it.ptr, &bi) != 0 || bi.state == AF_BLOCK_FREE ||
                     bi.block_size < it.size;
        s->errors += (it.how ? af_pool_free(s->pool, it.ptr) : af_pool_cache_free(k, it.ptr)) != 0;
    }
}

static int stress_hand(stress_thr_t *to, item_t it)
{
    pthread_mutex_lock(&to->mu);
    int ok = (to->tail + 1) % QCAP != to->head;
    if (ok) {
        to->q[to->tail] = it;
        to->tail = (to->tail + 1) % QCAP;
    }
    pthread_mutex_unlock(&to->mu);
    return ok;
}

static void *stress_main(void *arg)
{
    stress_thr_t *s = arg;
    trace_t t;
    trace_make(&t, s->seed, 64, 256, 1 * MiB, 8);
    uint64_t rs = s->seed ^ 0x5deece66dull;
    af_pool_cache_t *k;
    if (af_pool_cache_create(s->pool, &k)) {
        s->errors++;
        return NULL;
    }
    void *ptr[64] = {0};
    size_t size[64];
    for (int round = 0; round < s->rounds; round++) {
        int dev_on = round >= 3; /* rounds 0-2: recorded and learned as they are */
        for (int e = 0; e < t.nev; e++) {
            const ev_t *v = &t.ev[e];
            uint64_t x = rng_next(&rs);
            uint64_t tag = ((uint64_t)round << 40) | (s->seed << 8) | (uint64_t)v->id;
            if (v->op == EV_ALLOC) {
                size[v->id] = dev_on && x % 50 == 0 ? 2 * v->size + 4 * KiB : v->size;
                if (af_pool_cache_alloc(k, size[v->id], &ptr[v->id])) {
                    s->errors++;
                    goto out;
                }
                fill(ptr[v->id], size[v->id], tag);
                s->allocs++;
            } else {
                s->bad += !check(ptr[v->id], size[v->id], tag);
                item_t it = {ptr[v->id], size[v->id], tag, (int)(x >> 32) & 1};
                if (dev_on && x % 10 == 1 && stress_hand(s->peer, it))
                    s->handed++;
                else
                    s->errors += af_pool_cache_free(k, ptr[v->id]) != 0;
                ptr[v->id] = NULL;
            }
            stress_drain(s, k);
        }
        s->errors += af_pool_cache_round(k) != 0;
    }
out:
    atomic_store(&s->finished, 1);
    while (!atomic_load(&s->peer->finished))
        stress_drain(s, k);
    stress_drain(s, k);
    for (int i = 0; i < 64; i++)
        if (ptr[i])
            af_pool_cache_free(k, ptr[i]);
    af_pool_cache_destroy(k);
    trace_free(&t);
    return NULL;
}

static void test_round_two_thread_stress(void **state)
{
    af_pool_t *p = cfg_pool(state);
    stress_thr_t *s = calloc(2, sizeof(*s));
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        s[i].pool = p;
        s[i].seed = 0x57e55ull + (uint64_t)i;
        s[i].rounds = 200 / SCALE;
        s[i].peer = &s[1 - i];
        pthread_mutex_init(&s[i].mu, NULL);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, stress_main, &s[i]), 0);
    /* statistics read while the caches run (a daemon's stats request: a snapshot; TSan checks
     * that reading the caches' counters races with nothing) */
    af_pool_stats_t st;
    int polls = 0;
    while (!atomic_load(&s[0].finished) || !atomic_load(&s[1].finished)) {
        af_pool_stats(p, &st);
        polls++;
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    af_pool_stats(p, &st);
    uint64_t allocs = 0;
    for (int i = 0; i < 2; i++) {
        if (s[i].bad || s[i].errors)
            fprintf(stderr, "seed %llx: %d corrupted blocks, %d failed calls\n",
                    (unsigned long long)s[i].seed, s[i].bad, s[i].errors);
        assert_int_equal(s[i].bad, 0);
        assert_int_equal(s[i].errors, 0);
        allocs += s[i].allocs;
    }
    printf("two threads: %llu allocs, %d + %d handed over, %llu hits, %llu misses, %llu held, "
           "learned %llu; %d stats snapshots meanwhile\n",
           (unsigned long long)allocs, s[0].handed, s[1].handed, (unsigned long long)st.round_hits,
           (unsigned long long)st.round_misses, (unsigned long long)st.rounds_held,
           (unsigned long long)st.rounds_learned, polls);
    assert_int_equal(st.rounds_learned, 2);
    assert_true(st.round_hits > 0);
    assert_true(s[0].handed > 0 && s[1].handed > 0);
    assert_int_equal(st.allocs, allocs);
    assert_int_equal(st.allocs, st.frees);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.double_frees + st.foreign_frees, 0);
    /* a cache may be destroyed while the other thread still holds blocks of its arena: the arena
     * is kept until they are freed, and released by the last free */
    assert_int_equal(st.round_arenas, 0);
    assert_int_equal(st.round_arena_bytes, 0);
    for (int i = 0; i < 2; i++)
        pthread_mutex_destroy(&s[i].mu);
    free(s);
    af_pool_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_round_cross_thread_free, (void *)&CFG_DEFAULT),
        cmocka_unit_test_prestate(test_round_cross_thread_free, (void *)&CFG_REGIONS),
        cmocka_unit_test_prestate(test_round_cross_thread_free, (void *)&CFG_POISON),
        cmocka_unit_test_prestate(test_round_two_thread_stress, (void *)&CFG_DEFAULT),
        cmocka_unit_test_prestate(test_round_two_thread_stress, (void *)&CFG_REGIONS),
        cmocka_unit_test_prestate(test_round_two_thread_stress, (void *)&CFG_POISON),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
