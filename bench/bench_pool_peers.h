/*
 * bench_pool_peers.h — the peer allocators of bench_pool, each tuned not to give memory back
 * (a pool never does during a run, so a peer that purges would be measured paying for a policy
 * the pool does not have), and what each holds from the OS. Every count starts at the
 * allocator's start and nothing is subtracted: memory an allocator reserves at start-up and then
 * serves the trace from is counted, as the pool's count starts at af_pool_create.
 *
 *   jemalloc  linked in (arenaflow links it), so it is this process's malloc; called through
 *             mallocx/dallocx. Tuned through bench_pool's malloc_conf symbol, read by jemalloc
 *             when it starts: dirty_decay_ms:-1,muzzy_decay_ms:-1 (freed pages are never purged)
 *             and tcache_max:8388608 (the thread cache keeps blocks up to 8 MiB instead of
 *             32 KiB). Reserved = stats.arenas.<i>.mapped (after an epoch refresh) of an arena
 *             made for the --frag-peer replay (arenas.create, thread.arena): jemalloc is also
 *             the bench's own malloc, so its process-wide stats.mapped holds the bench's memory.
 *   glibc     __libc_malloc/__libc_free, glibc's own entry points (jemalloc does not replace
 *             them). Tuned with mallopt before the first call: M_TRIM_THRESHOLD = 1 GiB (the top
 *             of the heap is not trimmed), M_MMAP_THRESHOLD = 32 MiB (the largest glibc accepts:
 *             blocks below it come from the heap and stay there; larger ones are still mmapped
 *             and unmapped at free, glibc cannot do otherwise). Reserved = mallinfo2 arena +
 *             hblkhd (chunk headers in-band, so included).
 *   tcmalloc  gperftools' libtcmalloc_minimal.so.4 (Debian libgoogle-perftools-dev);
 *             mimalloc  libmimalloc.so.2 (Debian libmimalloc-dev). Both are loaded with
 *             dlopen(RTLD_LOCAL | RTLD_DEEPBIND): their malloc symbols are not added to the
 *             process's scope, so the process keeps jemalloc as its malloc, while each
 *             library's own internal calls bind to its own allocator. They are called through
 *             tc_malloc/tc_free and mi_malloc/mi_free. Loading in-process (rather than one
 *             process per peer under LD_PRELOAD) keeps every column in the same harness, on
 *             the same trace copy, in the same run; a call through a dlsym pointer costs what
 *             jemalloc's call through the PLT costs. tcmalloc is tuned with
 *             TCMALLOC_RELEASE_RATE=0 (never returns free spans to the OS), mimalloc with
 *             MIMALLOC_ALLOW_DECOMMIT=0 (never decommits): set in the environment before the
 *             libraries load, which is when they read it. Reserved = tcmalloc's
 *             generic.heap_size - tcmalloc.pageheap_unmapped_bytes (its page heap; its metadata
 *             is apart, as the pool's is); mimalloc: the process's data mappings less
 *             jemalloc's, counted from before mimalloc loaded (see reserved_mi; its metadata is
 *             in it). mimalloc 2.0.9 maps every block above its
 *             large-object limit on its own and unmaps it at free; only a reserved arena
 *             (MIMALLOC_RESERVE_OS_MEMORY) would keep them, and that reserves memory up front,
 *             so the column keeps that behaviour and says so.
 *
 * A library that is missing or lacks a symbol leaves its column out, with the reason printed.
 */
#ifndef BENCH_POOL_PEERS_H
#define BENCH_POOL_PEERS_H

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef AF_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

typedef struct {
    const char *lib; /* what was loaded, or why not */
    int ok;
    void *h;
    void *(*malloc_fn)(size_t);
    void (*free_fn)(void *);
    int (*tc_prop)(const char *, size_t *);
} peer_lib_t;

static peer_lib_t g_tc = {.lib = "not loaded"}, g_mi = {.lib = "not loaded"};

static void *peer_sym(void *h, const char *name, peer_lib_t *p)
{
    void *s = h ? dlsym(h, name) : NULL;
    if (!s && p->ok) {
        p->ok = 0;
        p->lib = name;
    }
    return s;
}

static void peer_open(peer_lib_t *p, const char *so, const char *m, const char *f)
{
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) {
        p->lib = "library not found";
        return;
    }
    p->ok = 1;
    p->h = h;
    p->lib = so;
    p->malloc_fn = (void *(*)(size_t))peer_sym(h, m, p);
    p->free_fn = (void (*)(void *))peer_sym(h, f, p);
}

static size_t g_mi_base; /* see reserved_mi */
static size_t data_not_je(void);

/* Tunes glibc and loads tcmalloc and mimalloc (once, before any trace runs). */
static void peers_load(void)
{
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    setenv("TCMALLOC_RELEASE_RATE", "0", 1);
    setenv("MIMALLOC_ALLOW_DECOMMIT", "0", 1);
    peer_open(&g_tc, "libtcmalloc_minimal.so.4", "tc_malloc", "tc_free");
    g_tc.tc_prop = (int (*)(const char *, size_t *))peer_sym(
        g_tc.h, "MallocExtension_GetNumericProperty", &g_tc);
    g_mi_base = data_not_je(); /* after tcmalloc's load, before mimalloc's */
    peer_open(&g_mi, "libmimalloc.so.2", "mi_malloc", "mi_free");
}

/* The process's data mappings (/proc/self/statm, field 6, pages), in bytes; 0 when unknown. */
static size_t statm_data(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long v[6] = {0};
    if (!f)
        return 0;
    int n = fscanf(f, "%lu %lu %lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
    fclose(f);
    return n == 6 ? (size_t)v[5] * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

#ifdef AF_HAVE_JEMALLOC
static size_t je_mapped(void)
{
    uint64_t epoch = 1;
    size_t sz = sizeof epoch, mapped = 0, msz = sizeof mapped;
    mallctl("epoch", &epoch, &sz, &epoch, sz);
    return mallctl("stats.mapped", &mapped, &msz, NULL, 0) ? 0 : mapped;
}
#endif

/* Data mappings not made by jemalloc (the process's malloc), taken before mimalloc is loaded:
 * what reserved_mi counts from. */
static size_t data_not_je(void)
{
#ifdef AF_HAVE_JEMALLOC
    return statm_data() - je_mapped();
#else
    return statm_data();
#endif
}

/* jemalloc measured on an arena of its own (--frag-peer jemalloc): the process's malloc is
 * jemalloc, so its process-wide counters include the bench's own memory. UINT_MAX: none. */
static unsigned g_je_arena = UINT32_MAX;

/* Makes a fresh jemalloc arena this thread allocates from. Returns 0, or -1 (message printed). */
static int je_isolate(void)
{
#ifdef AF_HAVE_JEMALLOC
    unsigned a = 0;
    size_t sz = sizeof a;
    if (mallctl("arenas.create", &a, &sz, NULL, 0) ||
        mallctl("thread.tcache.flush", NULL, NULL, NULL, 0) ||
        mallctl("thread.arena", NULL, NULL, &a, sizeof a)) {
        fprintf(stderr, "jemalloc: cannot make an arena of its own\n");
        return -1;
    }
    g_je_arena = a;
    return 0;
#else
    return -1;
#endif
}

/* Bytes each peer holds from the OS now (see the header comment); 0 when unknown. */
static size_t reserved_glibc(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.arena + mi.hblkhd;
}

#ifdef AF_HAVE_JEMALLOC
/* jemalloc: the mapped bytes of the arena --frag-peer made for the replay (je_isolate). */
static size_t reserved_je(void)
{
    uint64_t epoch = 1;
    size_t sz = sizeof epoch, mapped = 0, msz = sizeof mapped;
    char name[64];
    mallctl("epoch", &epoch, &sz, &epoch, sz);
    if (g_je_arena == UINT32_MAX)
        return 0;
    snprintf(name, sizeof name, "stats.arenas.%u.mapped", g_je_arena);
    if (mallctl(name, &mapped, &msz, NULL, 0))
        return 0;
    return mapped;
}
#endif

static size_t reserved_tc(void)
{
    size_t heap = 0, unmapped = 0;
    if (!g_tc.tc_prop || !g_tc.tc_prop("generic.heap_size", &heap))
        return 0;
    g_tc.tc_prop("tcmalloc.pageheap_unmapped_bytes", &unmapped);
    return heap - unmapped;
}

/* mimalloc 2.0.9's own commit counter does not drop when it unmaps a huge block (it reads
 * ~16 GB after 2000 rounds of 110 MiB live), so mimalloc is measured by what the process has
 * mapped for data (/proc/self/statm, field 6) less what jemalloc mapped, counted from before
 * mimalloc was loaded (g_mi_base): its start-up is in the figure. */
static size_t reserved_mi(void)
{
    size_t now = data_not_je();
    return now > g_mi_base ? now - g_mi_base : 0;
}

/* The tuned settings as the allocators report them (proof the tuning took). */
static void peers_describe(void)
{
#ifdef AF_HAVE_JEMALLOC
    ssize_t dirty = 0, muzzy = 0;
    size_t tmax = 0, sz = sizeof dirty, tsz = sizeof tmax;
    mallctl("opt.dirty_decay_ms", &dirty, &sz, NULL, 0);
    sz = sizeof muzzy;
    mallctl("opt.muzzy_decay_ms", &muzzy, &sz, NULL, 0);
    mallctl("opt.tcache_max", &tmax, &tsz, NULL, 0);
    printf("jemalloc settings in effect: opt.dirty_decay_ms %zd, opt.muzzy_decay_ms %zd, "
           "opt.tcache_max %zu\n",
           dirty, muzzy, tmax);
#endif
    printf("glibc settings: M_TRIM_THRESHOLD %d, M_MMAP_THRESHOLD %d (mallopt)\n", 1 << 30,
           32 << 20);
    printf("tcmalloc: %s%s; mimalloc: %s%s\n", g_tc.lib,
           g_tc.ok ? " (TCMALLOC_RELEASE_RATE=0)" : " (column skipped)", g_mi.lib,
           g_mi.ok ? " (MIMALLOC_ALLOW_DECOMMIT=0)" : " (column skipped)");
}

#endif
