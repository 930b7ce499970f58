/*
 * Name storage of the graph builder: a chunked byte arena for every string and small array a
 * graph keeps until it is destroyed (tensor and node names, op types, alias names, shapes,
 * in-place hints), and the open-addressing name -> id maps.
 *
 * Why an arena: a graph of 10^6 tensors made one heap block per name, shape and pending input
 * name (about ten per node) and freed most of them again in finalize; the arena makes that a
 * bump of a pointer, keeps a node's strings next to each other in memory, and frees everything
 * in one pass. Chunks never move, so pointers into them stay valid for the graph's lifetime.
 *
 * Why tagged slots: a slot holds the id and 32 bits of the name's hash, so a probe compares
 * tags and touches a stored name only when the tags match (almost always the right one), and
 * growing the table re-slots entries without reading a single name.
 *
 * Why a young table: at 10^5+ names the main table outgrows the caches, and an add that probes
 * it waits for one cache miss (~100 ns, the larger part of an add). From YOUNG_FROM slots on,
 * new entries go to a small young table (64 KiB, cache-resident) and set three bits in a filter
 * (one 64-bit word per key, 4 bits per main slot: ~1 MiB at 10^6 names, also cache-resident).
 * The duplicate check probes the young table, then the filter, and the main table only when the
 * filter says the name may be there (a few percent of new names: filter false positives). Every
 * YOUNG_MAX adds the young entries move into the main table with prefetches running ahead, so
 * their misses overlap. Lookups probe both tables. af__graph_map_seal() (finalize) moves the
 * last young entries in and frees the young table and the filter.
 *
 * Lock rule: none; a graph is built by one thread.
 */
#include "graph/graph_int.h"

#include <string.h>
#define XXH_INLINE_ALL /* the hash of a short name inlines to a few instructions */
#include <xxhash.h>

#define EMPTY UINT64_MAX
#define CHUNK_MIN 1024
#define CHUNK_MAX (1u << 20)

struct af__chunk {
    af__chunk_t *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

uint64_t af__graph_hash_str(const char *s)
{
    /* XXH3 reads a short name in a few wide loads: a 10^6-tensor graph hashes ~3.5 10^6 names
     * (every input and output name again), and byte-at-a-time FNV-1a was ~4% of building it. */
    return XXH3_64bits(s, strlen(s));
}

uint64_t af__graph_hash_n(const char *s, size_t len)
{
    return XXH3_64bits(s, len);
}

void *af__graph_alloc(af_graph_t *g, size_t bytes, size_t align)
{
    af__chunk_t *c = g->chunks;
    size_t at = c ? (c->used + align - 1) & ~(align - 1) : 0;
    if (!c || at + bytes > c->cap) {
        size_t cap = c ? c->cap * 2 : CHUNK_MIN;
        if (cap > CHUNK_MAX)
            cap = CHUNK_MAX;
        if (cap < bytes)
            cap = bytes;
        af__chunk_t *n = af__malloc(sizeof(*n) + cap);
        if (!n)
            return NULL;
        n->next = c;
        n->used = 0;
        n->cap = cap;
        g->chunks = c = n;
        at = 0;
    }
    c->used = at + bytes;
    return c->data + at;
}

const char *af__graph_strdup(af_graph_t *g, const char *s)
{
    return af__graph_strndup(g, s, strlen(s));
}

const char *af__graph_strndup(af_graph_t *g, const char *s, size_t len)
{
    char *d = af__graph_alloc(g, len + 1, 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

void af__graph_free_chunks(af_graph_t *g)
{
    for (af__chunk_t *c = g->chunks, *next; c; c = next) {
        next = c->next;
        af__free(c);
    }
    g->chunks = NULL;
}

static const char *name_of(const af_graph_t *g, const af__namemap_t *m, int32_t id)
{
    return m == &g->tmap ? g->tensors[id].name : g->nodes[id].name;
}

/* The young table and the filter (see the file comment). */
#define YOUNG_SLOTS 8192 /* power of two; holds up to YOUNG_MAX entries */
#define YOUNG_MAX (YOUNG_SLOTS / 2)
#define YOUNG_FROM ((size_t)1 << 18) /* main-table slots from which the young table is used */
#define MERGE_AHEAD 32               /* entries the merge prefetches ahead */

static size_t bloom_word(const af__namemap_t *m, uint32_t tag)
{
    return (size_t)(((uint64_t)tag * 0xc2b2ae3d27d4eb4full) >> 40) & m->bloom_mask;
}

/* Three bits of one 64-bit word per key: a probe of the filter is one load. */
static uint64_t bloom_bits(uint32_t tag)
{
    uint64_t h = (uint64_t)tag * 0x9e3779b97f4a7c15ull;
    return 1ull << (h >> 58) | 1ull << ((h >> 52) & 63) | 1ull << ((h >> 46) & 63);
}

static void bloom_set(af__namemap_t *m, uint32_t tag)
{
    m->bloom[bloom_word(m, tag)] |= bloom_bits(tag);
}

/* Linear probe of table t (mask: its slots - 1) for key: the id, or -1. */
static int32_t probe(const af_graph_t *g, const af__namemap_t *m, const uint64_t *t, size_t mask,
                     const char *key, uint32_t tag)
{
    for (size_t i = tag & mask;; i = (i + 1) & mask) {
        uint64_t s = t[i];
        if (s == EMPTY)
            return -1;
        if ((uint32_t)(s >> 32) == tag && strcmp(name_of(g, m, (int32_t)(uint32_t)s), key) == 0)
            return (int32_t)(uint32_t)s;
    }
}

/* Puts slot value s (known absent) into table t. */
static void put(uint64_t *t, size_t mask, uint64_t s)
{
    size_t i = (s >> 32) & mask;
    while (t[i] != EMPTY)
        i = (i + 1) & mask;
    t[i] = s;
}

int32_t af__graph_map_find(const af_graph_t *g, const af__namemap_t *m, const char *key,
                           uint64_t hash)
{
    if (m->cap == 0)
        return -1;
    int32_t id = m->n_young ? probe(g, m, m->young, YOUNG_SLOTS - 1, key, (uint32_t)hash) : -1;
    return id >= 0 ? id : probe(g, m, m->slots, m->cap - 1, key, (uint32_t)hash);
}

void af__graph_map_prefetch(const af__namemap_t *m, uint64_t hash)
{
    if (m->bloom)
        __builtin_prefetch(&m->bloom[bloom_word(m, (uint32_t)hash)]);
    else if (m->cap)
        __builtin_prefetch(&m->slots[(uint32_t)hash & (m->cap - 1)]);
}

/* Moves the young entries into the main table, the slot of each a few entries ahead
 * prefetched: the misses overlap instead of coming one per add. */
static void merge_young(af__namemap_t *m)
{
    if (!m->n_young)
        return;
    const uint64_t *list = m->young + YOUNG_SLOTS; /* the entries in the order they came */
    size_t n = m->n_young, mask = m->cap - 1;
    for (size_t i = 0; i < n; i++) {
        if (i + MERGE_AHEAD < n)
            __builtin_prefetch(&m->slots[(list[i + MERGE_AHEAD] >> 32) & mask], 1);
        put(m->slots, mask, list[i]);
    }
    memset(m->young, 0xff, YOUNG_SLOTS * sizeof(*m->young));
    m->n_young = 0;
}

/* (Re)builds the filter for the current main table and the young entries, allocating the
 * young table first when there is none. 0 or AF_ENOMEM (m unchanged). */
static int bloom_build(af__namemap_t *m)
{
    size_t words = m->cap / 16; /* 4 bits per slot: 8 per entry at the table's fullest */
    uint64_t *bloom = af__calloc(words, sizeof(*bloom));
    uint64_t *young = m->young ? m->young : af__malloc((YOUNG_SLOTS + YOUNG_MAX) * sizeof(*young));
    if (!bloom || !young) {
        af__free(bloom);
        if (young != m->young)
            af__free(young);
        return AF_ENOMEM;
    }
    if (!m->young) {
        memset(young, 0xff, YOUNG_SLOTS * sizeof(*young));
        m->young = young;
    }
    af__free(m->bloom);
    m->bloom = bloom;
    m->bloom_mask = words - 1;
    for (size_t i = 0; i < m->cap && m->count > m->n_young; i++) /* nothing merged: skip */
        if (m->slots[i] != EMPTY)
            bloom_set(m, (uint32_t)(m->slots[i] >> 32));
    for (size_t i = 0; i < m->n_young; i++)
        bloom_set(m, (uint32_t)(m->young[YOUNG_SLOTS + i] >> 32));
    return 0;
}

int af__graph_map_reserve(af__namemap_t *m, size_t count)
{
    if (count * 2 <= m->cap)
        return 0;
    size_t ncap = m->cap ? m->cap : 64;
    while (count * 2 > ncap)
        ncap *= 2;
    uint64_t *ns = af__malloc(ncap * sizeof(*ns));
    if (!ns)
        return AF_ENOMEM;
    /* af__malloc asks for huge pages under a table this big (probes land anywhere in it) */
    memset(ns, 0xff, ncap * sizeof(*ns));
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i] != EMPTY)
            put(ns, ncap - 1, m->slots[i]);
    uint64_t *old = m->slots;
    size_t ocap = m->cap;
    m->slots = ns;
    m->cap = ncap;
    if (ncap >= YOUNG_FROM && bloom_build(m)) {
        m->slots = old; /* as it was: the old table still holds every merged entry */
        m->cap = ocap;
        af__free(ns);
        return AF_ENOMEM;
    }
    af__free(old);
    return 0;
}

void af__graph_map_seal(af__namemap_t *m)
{
    merge_young(m);
    af__free(m->young);
    af__free(m->bloom);
    m->young = m->bloom = NULL;
    m->bloom_mask = 0;
}

int32_t af__graph_map_add(const af_graph_t *g, af__namemap_t *m, const char *key, uint64_t hash,
                          int32_t id)
{
    if (af__graph_map_reserve(m, m->count + 1))
        return -2;
    if (m->cap >= YOUNG_FROM && !m->young && bloom_build(m)) /* sealed, then added to again */
        return -2;
    uint32_t tag = (uint32_t)hash;
    uint64_t s = (uint64_t)tag << 32 | (uint32_t)id;
    if (!m->young) {
        size_t mask = m->cap - 1, i = tag & mask;
        for (;; i = (i + 1) & mask) {
            uint64_t t = m->slots[i];
            if (t == EMPTY)
                break;
            if ((uint32_t)(t >> 32) == tag && strcmp(name_of(g, m, (int32_t)(uint32_t)t), key) == 0)
                return (int32_t)(uint32_t)t;
        }
        m->slots[i] = s;
        m->count++;
        return -1;
    }
    int32_t had = probe(g, m, m->young, YOUNG_SLOTS - 1, key, tag);
    uint64_t bits = bloom_bits(tag), *word = &m->bloom[bloom_word(m, tag)];
    if (had < 0 && (*word & bits) == bits) /* maybe merged already: the one probe that misses */
        had = probe(g, m, m->slots, m->cap - 1, key, tag);
    if (had >= 0)
        return had;
    put(m->young, YOUNG_SLOTS - 1, s);
    m->young[YOUNG_SLOTS + m->n_young] = s;
    *word |= bits;
    m->count++;
    if (++m->n_young == YOUNG_MAX)
        merge_young(m);
    return -1;
}
