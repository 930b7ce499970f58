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
 * Why tagged slots: a slot holds the id and 32 bits of the name's hash (its tag), so a probe
 * compares tags and touches a stored name only when the tags match (almost always the right one).
 *
 * Why the maps are built in bulk: at 10^5+ names a table outgrows the caches, and an add that
 * probed it for a duplicate waited for one cache miss (~100 ns, the larger part of an add). An
 * add now only writes its name's tag into a side array (m->tags, in id order). The table is
 * built when a name is first looked up, at the latest by af_graph_finalize(), in one pass over
 * the tags with the slot of each insert prefetched well ahead, so that the cache misses overlap
 * instead of coming one per add. (A counting sort by home slot first, so that the inserts sweep
 * the table region by region, measured slower: the sort's extra pass over the pairs costs more
 * than the misses it saves once they overlap.) Inserting in id order means the first copy of a
 * duplicate name is in the table when the second arrives: finalize refuses it naming both ids.
 * Lookups before finalize are allowed: the map catches up with the adds made since the last one
 * (ids count..n-1 inserted one by one, or a rebuild when the table would be over 3/4 full).
 *
 * Lock rule: none; a graph is built by one thread.
 */
#include "graph/graph_int.h"

#include <string.h>
#define XXH_INLINE_ALL /* the hash of a short name inlines to a few instructions */
#include <xxhash.h>

#define EMPTY 0 /* a fresh zeroed table is empty: its pages are touched first by the inserts */
/* Slot value of id with tag, and the id back: ids are stored + 1 so that no slot is 0. */
#define SLOT(tag, id) ((uint64_t)(tag) << 32 | (uint32_t)((id) + 1))
#define SLOT_ID(s) ((int32_t)(uint32_t)(s)-1)
#define BUILD_AHEAD 32 /* inserts a bulk build prefetches ahead */
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

/* Table size for n names: at most 3/4 full (a probe then reads ~2 slots, a miss ~8). */
static size_t cap_for(size_t n)
{
    size_t cap = 64;
    while (cap / 4 * 3 < n)
        cap *= 2;
    return cap;
}

int af__graph_map_note(af__namemap_t *m, size_t id, uint64_t hash)
{
    if (af__grow((void **)&m->tags, &m->cap_tags, id + 1, sizeof(*m->tags)))
        return AF_ENOMEM;
    m->tags[id] = (uint32_t)hash;
    return 0;
}

int af__graph_map_reserve(af__namemap_t *m, size_t count)
{
    return af__grow((void **)&m->tags, &m->cap_tags, count, sizeof(*m->tags));
}

/* Puts slot value s into table t (mask: its slots - 1) unless a name equal to its id's is
 * there; a duplicate is remembered in m (the pair with the smallest later id) and left out. */
static void insert(const af_graph_t *g, af__namemap_t *m, uint64_t *t, size_t mask, uint64_t s)
{
    uint32_t tag = (uint32_t)(s >> 32);
    int32_t id = SLOT_ID(s);
    for (size_t i = tag & mask;; i = (i + 1) & mask) {
        uint64_t o = t[i];
        if (o == EMPTY) {
            t[i] = s;
            return;
        }
        if ((uint32_t)(o >> 32) == tag &&
            strcmp(name_of(g, m, SLOT_ID(o)), name_of(g, m, id)) == 0) {
            if (!m->dup_later || id < m->dup_later) {
                m->dup_earlier = SLOT_ID(o);
                m->dup_later = id;
            }
            return;
        }
    }
}

/* A new table for ids [0, n) in place of m's. 0 or AF_ENOMEM (m unchanged). */
static int rebuild(const af_graph_t *g, af__namemap_t *m, size_t n)
{
    size_t cap = cap_for(n), mask = cap - 1;
    uint64_t *t = af__calloc(cap, sizeof(*t));
    if (!t)
        return AF_ENOMEM;
    m->dup_earlier = m->dup_later = 0;
    for (size_t id = 0; id < n; id++) {
        if (id + BUILD_AHEAD < n) /* the misses of the inserts overlap */
            __builtin_prefetch(&t[m->tags[id + BUILD_AHEAD] & mask], 1);
        insert(g, m, t, mask, SLOT(m->tags[id], id));
    }
    af__free(m->slots);
    m->slots = t;
    m->cap = cap;
    m->count = n;
    return 0;
}

int af__graph_map_sync(const af_graph_t *g, af__namemap_t *m, size_t n)
{
    if (m->count == n)
        return 0;
    if (n > m->cap / 4 * 3 || n - m->count > m->count)
        return rebuild(g, m, n); /* first build, growth, or a backlog larger than the table */
    for (size_t id = m->count; id < n; id++)
        insert(g, m, m->slots, m->cap - 1, SLOT(m->tags[id], id));
    m->count = n;
    return 0;
}

int32_t af__graph_map_find(const af_graph_t *g, const af__namemap_t *m, const char *key,
                           uint64_t hash)
{
    if (m->cap == 0)
        return -1;
    uint32_t tag = (uint32_t)hash;
    size_t mask = m->cap - 1;
    for (size_t i = tag & mask;; i = (i + 1) & mask) {
        uint64_t s = m->slots[i];
        if (s == EMPTY)
            return -1;
        if ((uint32_t)(s >> 32) == tag && strcmp(name_of(g, m, SLOT_ID(s)), key) == 0)
            return SLOT_ID(s);
    }
}

int32_t *af__graph_map_lend_tags(af__namemap_t *m, size_t n)
{
    if (af__graph_map_reserve(m, n ? n : 1))
        return NULL;
    return (int32_t *)m->tags;
}

void af__graph_map_restore_tags(const af_graph_t *g, af__namemap_t *m, size_t n)
{
    for (size_t id = 0; id < n; id++) {
        const char *s = name_of(g, m, (int32_t)id);
        m->tags[id] = (uint32_t)af__graph_hash_n(s, strlen(s));
    }
}

void af__graph_map_drop_tags(af__namemap_t *m)
{
    af__free(m->tags);
    m->tags = NULL;
    m->cap_tags = 0;
}

void af__graph_map_free(af__namemap_t *m)
{
    af__graph_map_drop_tags(m);
    af__free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}

int af__graph_names_check(af_graph_t *g, af_error_t *err)
{
    if (af__graph_map_sync(g, &g->tmap, g->n_tensors) ||
        af__graph_map_sync(g, &g->nmap, g->n_nodes))
        return af__err(err, AF_ENOMEM, "out of memory");
    const af__namemap_t *t = &g->tmap, *n = &g->nmap;
    if (t->dup_later)
        return af__err(err, AF_EDUP, "duplicate tensor name '%s' (tensors %d and %d)",
                       g->tensors[t->dup_later].name, t->dup_earlier, t->dup_later);
    if (n->dup_later)
        return af__err(err, AF_EDUP, "duplicate node name '%s' (nodes %d and %d)",
                       g->nodes[n->dup_later].name, n->dup_earlier, n->dup_later);
    return 0;
}
