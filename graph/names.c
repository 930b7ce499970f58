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
 * Lock rule: none; a graph is built by one thread.
 */
#include "graph/graph_int.h"

#include <string.h>

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
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
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
    size_t n = strlen(s) + 1;
    char *d = af__graph_alloc(g, n, 1);
    if (d)
        memcpy(d, s, n);
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

int32_t af__graph_map_find(const af_graph_t *g, const af__namemap_t *m, const char *key,
                           uint64_t hash)
{
    if (m->cap == 0)
        return -1;
    size_t mask = m->cap - 1;
    uint32_t tag = (uint32_t)hash;
    for (size_t i = tag & mask;; i = (i + 1) & mask) {
        uint64_t s = m->slots[i];
        if (s == EMPTY)
            return -1;
        if ((uint32_t)(s >> 32) == tag && strcmp(name_of(g, m, (int32_t)(uint32_t)s), key) == 0)
            return (int32_t)(uint32_t)s;
    }
}

void af__graph_map_prefetch(const af__namemap_t *m, uint64_t hash)
{
    if (m->cap)
        __builtin_prefetch(&m->slots[(uint32_t)hash & (m->cap - 1)]);
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
    for (size_t i = 0; i < m->cap; i++) {
        uint64_t s = m->slots[i];
        if (s == EMPTY)
            continue;
        size_t j = (s >> 32) & (ncap - 1);
        while (ns[j] != EMPTY)
            j = (j + 1) & (ncap - 1);
        ns[j] = s;
    }
    af__free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

int32_t af__graph_map_add(const af_graph_t *g, af__namemap_t *m, const char *key, uint64_t hash,
                          int32_t id)
{
    if (af__graph_map_reserve(m, m->count + 1))
        return -2;
    size_t mask = m->cap - 1;
    uint32_t tag = (uint32_t)hash;
    size_t i = tag & mask;
    for (;; i = (i + 1) & mask) {
        uint64_t s = m->slots[i];
        if (s == EMPTY)
            break;
        if ((uint32_t)(s >> 32) == tag && strcmp(name_of(g, m, (int32_t)(uint32_t)s), key) == 0)
            return (int32_t)(uint32_t)s;
    }
    m->slots[i] = (uint64_t)tag << 32 | (uint32_t)id;
    m->count++;
    return -1;
}
