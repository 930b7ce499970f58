/*
 * The dynamic region: tensors whose size is unknown at plan time (the seed's "conservative
 * branch", §5.2). They never enter the planned arena; they are served at run time here.
 *
 * With jemalloc (AF_HAVE_JEMALLOC) the region is its own jemalloc arena, created with
 * mallctl("arenas.create"); blocks come from mallocx(size, MALLOCX_ARENA(i) | MALLOCX_ALIGN(64) |
 * MALLOCX_TCACHE_NONE) — no thread cache, so destroying the arena ("arena.<i>.destroy") returns
 * every page and leaves no stale cached block behind. Without jemalloc (the ASan build) the
 * library's allocator hooks serve the blocks, over-allocated by 64 bytes for alignment.
 *
 * Every live block is recorded in an open-addressing hash set (pointer -> size), so a free of a
 * pointer the region did not hand out is reported (AF_EFOREIGN) without reading memory that may
 * not be ours, and a small ring of recently freed pointers turns a repeated free into
 * AF_EDOUBLEFREE. The region is not a hot path: one mutex guards the set and the counters.
 *
 * Invariants: the set holds exactly the live blocks; destroy frees them all.
 * Lock rule: dr->lock around the set; the allocator calls themselves run outside it.
 */
#include "arenaflow/pool.h"
#include "common/common_int.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#ifdef AF_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#define DYN_ALIGN 64
#define RECENT 1024
#define EMPTY ((uintptr_t)0)
#define TOMB ((uintptr_t)1)

typedef struct {
    uintptr_t key; /* user pointer, EMPTY or TOMB */
    uint64_t size;
    void *raw; /* what the allocator returned */
} slot_t;

struct af_dynregion {
    pthread_mutex_t lock;
    int je;
    unsigned arena;
    slot_t *set;
    size_t cap, used, tombs; /* cap is a power of two */
    uintptr_t recent[RECENT];
    size_t recent_pos;
    uint64_t live, peak, allocs, frees;
};

static size_t hash_ptr(uintptr_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

static slot_t *set_find(af_dynregion_t *dr, uintptr_t key)
{
    for (size_t i = hash_ptr(key, dr->cap), n = 0; n < dr->cap; i = (i + 1) & (dr->cap - 1), n++) {
        if (dr->set[i].key == EMPTY)
            return NULL;
        if (dr->set[i].key == key)
            return &dr->set[i];
    }
    return NULL;
}

static int set_rehash(af_dynregion_t *dr, size_t ncap)
{
    slot_t *ns = af__calloc(ncap, sizeof(*ns));
    if (!ns)
        return AF_ENOMEM;
    for (size_t i = 0; i < dr->cap; i++) {
        if (dr->set[i].key <= TOMB)
            continue;
        size_t j = hash_ptr(dr->set[i].key, ncap);
        while (ns[j].key != EMPTY)
            j = (j + 1) & (ncap - 1);
        ns[j] = dr->set[i];
    }
    af__free(dr->set);
    dr->set = ns;
    dr->cap = ncap;
    dr->tombs = 0;
    return 0;
}

static int set_insert(af_dynregion_t *dr, uintptr_t key, uint64_t size, void *raw)
{
    if ((dr->used + dr->tombs + 1) * 2 > dr->cap) {
        size_t ncap = (dr->used + 1) * 4 > dr->cap ? dr->cap * 2 : dr->cap;
        int rc = set_rehash(dr, ncap);
        if (rc)
            return rc;
    }
    size_t i = hash_ptr(key, dr->cap);
    while (dr->set[i].key > TOMB)
        i = (i + 1) & (dr->cap - 1);
    if (dr->set[i].key == TOMB)
        dr->tombs--;
    dr->set[i] = (slot_t){key, size, raw};
    dr->used++;
    return 0;
}

static void *raw_alloc(af_dynregion_t *dr, uint64_t size)
{
#ifdef AF_HAVE_JEMALLOC
    if (dr->je)
        return mallocx(size,
                       MALLOCX_ARENA(dr->arena) | MALLOCX_ALIGN(DYN_ALIGN) | MALLOCX_TCACHE_NONE);
#endif
    (void)dr;
    return af__malloc(size + DYN_ALIGN);
}

static void raw_free(af_dynregion_t *dr, void *raw)
{
#ifdef AF_HAVE_JEMALLOC
    if (dr->je) {
        dallocx(raw, MALLOCX_TCACHE_NONE);
        return;
    }
#endif
    (void)dr;
    af__free(raw);
}

int af_dynregion_create(af_dynregion_t **out, af_error_t *err)
{
    if (!out)
        return af__err(err, AF_EINVAL, "dynregion: out is NULL");
    af_dynregion_t *dr = af__calloc(1, sizeof(*dr));
    if (!dr)
        return af__err(err, AF_ENOMEM, "dynregion: out of memory");
    dr->cap = 64;
    dr->set = af__calloc(dr->cap, sizeof(slot_t));
    if (!dr->set || pthread_mutex_init(&dr->lock, NULL)) {
        af__free(dr->set);
        af__free(dr);
        return af__err(err, AF_ENOMEM, "dynregion: out of memory");
    }
#ifdef AF_HAVE_JEMALLOC
    size_t sz = sizeof(dr->arena);
    if (mallctl("arenas.create", &dr->arena, &sz, NULL, 0) != 0) {
        pthread_mutex_destroy(&dr->lock);
        af__free(dr->set);
        af__free(dr);
        return af__err(err, AF_EIO, "dynregion: jemalloc refused to create an arena");
    }
    dr->je = 1;
#endif
    *out = dr;
    return 0;
}

void af_dynregion_destroy(af_dynregion_t *dr)
{
    if (!dr)
        return;
    for (size_t i = 0; i < dr->cap; i++)
        if (dr->set[i].key > TOMB)
            raw_free(dr, dr->set[i].raw);
#ifdef AF_HAVE_JEMALLOC
    if (dr->je) {
        char name[64];
        snprintf(name, sizeof(name), "arena.%u.destroy", dr->arena);
        mallctl(name, NULL, NULL, NULL, 0);
    }
#endif
    pthread_mutex_destroy(&dr->lock);
    af__free(dr->set);
    af__free(dr);
}

int af_dynregion_alloc(af_dynregion_t *dr, size_t size, void **out)
{
    if (!dr || !out || size == 0)
        return AF_EINVAL;
    if (size > (SIZE_MAX >> 1))
        return AF_ESIZE;
    void *raw = raw_alloc(dr, size);
    if (!raw)
        return AF_ENOMEM;
    char *user =
        dr->je ? (char *)raw : (char *)(((uintptr_t)raw + DYN_ALIGN) & ~(uintptr_t)(DYN_ALIGN - 1));
    pthread_mutex_lock(&dr->lock);
    int rc = set_insert(dr, (uintptr_t)user, size, raw);
    if (!rc) {
        dr->allocs++;
        dr->live += size;
        if (dr->live > dr->peak)
            dr->peak = dr->live;
        for (size_t i = 0; i < RECENT; i++)
            if (dr->recent[i] == (uintptr_t)user)
                dr->recent[i] = 0;
    }
    pthread_mutex_unlock(&dr->lock);
    if (rc) {
        raw_free(dr, raw);
        return rc;
    }
    *out = user;
    return 0;
}

int af_dynregion_free(af_dynregion_t *dr, void *ptr)
{
    if (!dr)
        return AF_EINVAL;
    pthread_mutex_lock(&dr->lock);
    slot_t *s = ptr ? set_find(dr, (uintptr_t)ptr) : NULL;
    if (!s) {
        int rc = AF_EFOREIGN;
        for (size_t i = 0; i < RECENT && ptr; i++)
            if (dr->recent[i] == (uintptr_t)ptr)
                rc = AF_EDOUBLEFREE;
        pthread_mutex_unlock(&dr->lock);
        return rc;
    }
    void *raw = s->raw;
    dr->live -= s->size;
    dr->frees++;
    s->key = TOMB;
    dr->used--;
    dr->tombs++;
    dr->recent[dr->recent_pos] = (uintptr_t)ptr;
    dr->recent_pos = (dr->recent_pos + 1) % RECENT;
    pthread_mutex_unlock(&dr->lock);
    raw_free(dr, raw);
    return 0;
}

int af_dynregion_stats(af_dynregion_t *dr, af_dynregion_stats_t *st)
{
    if (!dr || !st)
        return AF_EINVAL;
    memset(st, 0, sizeof(*st));
    pthread_mutex_lock(&dr->lock);
    st->live_bytes = dr->live;
    st->peak_bytes = dr->peak;
    st->allocs = dr->allocs;
    st->frees = dr->frees;
    pthread_mutex_unlock(&dr->lock);
    st->jemalloc = dr->je;
    st->arena_index = dr->arena;
#ifdef AF_HAVE_JEMALLOC
    if (dr->je) {
        uint64_t epoch = 1;
        size_t sz = sizeof(epoch), msz = sizeof(size_t), mapped = 0;
        char name[64];
        mallctl("epoch", &epoch, &sz, &epoch, sz);
        snprintf(name, sizeof(name), "stats.arenas.%u.mapped", dr->arena);
        if (mallctl(name, &mapped, &msz, NULL, 0) == 0)
            st->arena_mapped = mapped;
    }
#endif
    return 0;
}
