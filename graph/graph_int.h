/* Graph-module internals shared by the graph/ sources (builder, JSON reader/writer, importers). */
#ifndef ARENAFLOW_GRAPH_INT_H
#define ARENAFLOW_GRAPH_INT_H

#include "arenaflow/graph.h"
#include "common/common_int.h"

#include <stdatomic.h>

/* Open-addressing name -> id map (graph/names.c); keys are the names stored in the graph's
 * records. A slot is (32 bits of the name's hash, its tag) << 32 | (id + 1), 0 when empty.
 * Adds only record the tag (tags[id]); the table catches up with them when a name is looked up
 * or the graph is finalized (af__graph_map_sync). */
typedef struct af__namemap {
    uint64_t *slots;
    size_t cap;   /* power of two; 0 until the table is first built */
    size_t count; /* ids [0, count) are in the table (but for the later of a duplicate pair) */
    uint32_t *tags;
    size_t cap_tags;
    /* dup_later > 0: ids dup_earlier < dup_later share a name (the pair with the smallest
     * dup_later found so far); only dup_earlier is in the table. */
    int32_t dup_earlier, dup_later;
} af__namemap_t;

/* A node's input or output name that named no tensor yet when the node was added; finalize
 * resolves it into io[at]. */
typedef struct af__unresolved {
    size_t at;
    const char *name; /* in the graph's arena */
} af__unresolved_t;

/* A tensor that is a view, and the name of its base (in the graph's arena). */
typedef struct af__alias {
    int32_t tensor;
    const char *base;
} af__alias_t;

typedef struct af__chunk af__chunk_t;

#define AF__RECENT_NAMES 1024 /* power of two */
#define AF__OP_CACHE 64       /* power of two */

/* Storage constant data points into (graph/store.c): a heap block or a read-only file mapping,
 * shared by reference count between the graphs whose tensors point into it. */
typedef struct af__store {
    atomic_int refs;
    int kind;      /* heap block or file mapping */
    void *mem;     /* what to free / unmap */
    size_t len;    /* bytes usable from base (the file size for a mapping) */
    uint8_t *base; /* start of the bytes; 64-byte aligned for heap blocks, page-aligned maps */
} af__store_t;

struct af_graph {
    char *name;
    int finalized;
    /* some tensor has a dynamic reason / some node has attributes: destroy walks the records
     * only then (at 10^6 tensors the walk alone touches every record again) */
    uint8_t any_dynamic_reason, any_attrs;

    af_tensor_info_t *tensors;
    size_t n_tensors, cap_tensors;
    /* The views among the tensors, in id order, with their base's name (in the arena), until
     * finalize resolves them: a graph without views pays nothing per tensor for them. */
    af__alias_t *aliases;
    size_t n_aliases, cap_aliases;

    af_node_info_t *nodes;
    size_t n_nodes, cap_nodes;
    /* Every node's input ids then output ids, in node order (node i's start where node i-1's
     * end); nodes[i].inputs and .outputs point here once finalize has resolved the names of
     * unresolved[]. n_inputs_total: the input ids among them. */
    int32_t *io;
    size_t n_io, cap_io, n_inputs_total;
    af__unresolved_t *unresolved;
    size_t n_unresolved, cap_unresolved;
    af__chunk_t *chunks; /* the arena: names, op types, shapes, in-place hints */
    /* Attribute names of the nodes with more than AF__ATTR_SCAN attributes, so the duplicate
     * check of af_graph_node_set_attr stays O(1): open addressing, slot = node << 32 | index
     * into the node's attrs, -1 empty. Fewer attributes are scanned. */
    int64_t *attr_slots;
    size_t attr_slot_cap, attr_slot_count;

    af__namemap_t tmap, nmap;
    /* The tensors added last, by the low bits of their name's hash: id + 1, 0 empty. Node
     * inputs mostly name tensors added just before; a hit here resolves the name at once,
     * anything else is left to finalize (g->unresolved), when tmap is complete. */
    int32_t recent[AF__RECENT_NAMES];
    size_t missed; /* node inputs and outputs neither recent nor in tmap since its last sync */
    /* Op types already in the arena, by first letter and length: a graph has a few dozen, and
     * its nodes share one copy of each instead of one per node. NULL: empty. */
    const char *ops[AF__OP_CACHE];

    int32_t *input_order;
    int32_t *alias_root;
    int64_t *alias_root_off;
    int32_t *edge_pool; /* consumers, preds, succs arrays live here */

    af__store_t **stores; /* per tensor: the store its data points into (one reference), or NULL */
    size_t cap_stores;    /* entries of stores[] that exist (grown on demand, new ones NULL) */
};

/* Hash of a string (name tables): XXH3-64; af__graph_hash_n of its first len bytes. */
uint64_t af__graph_hash_str(const char *s);
uint64_t af__graph_hash_n(const char *s, size_t len);
/* Records the tag of id's name (hash: af__graph_hash_n of it) for the table; 0 or AF_ENOMEM. */
int af__graph_map_note(af__namemap_t *m, size_t id, uint64_t hash);
/* Room for count tags without growing; 0 or AF_ENOMEM (m unchanged). */
int af__graph_map_reserve(af__namemap_t *m, size_t count);
/* Brings the table up to ids [0, n) (g's records, which m indexes: g->tmap or g->nmap), noting
 * a duplicate in m->dup_*. 0 or AF_ENOMEM (m unchanged but still correct for its count). */
int af__graph_map_sync(const af_graph_t *g, af__namemap_t *m, size_t n);
/* The id whose name is key (hash: af__graph_hash_str(key)) among m's first m->count ids, or -1. */
int32_t af__graph_map_find(const af_graph_t *g, const af__namemap_t *m, const char *key,
                           uint64_t hash);
/* The tags as scratch for n int32 entries (finalize, once the table holds every id: they are
 * only read again to add or rebuild), or NULL when out of memory. Until
 * af__graph_map_restore_tags() (n: the ids m indexes) the table must not grow or catch up. */
int32_t *af__graph_map_lend_tags(af__namemap_t *m, size_t n);
void af__graph_map_restore_tags(const af_graph_t *g, af__namemap_t *m, size_t n);
/* Frees the tags (finalize: nothing is added any more); the table stays. */
void af__graph_map_drop_tags(af__namemap_t *m);
void af__graph_map_free(af__namemap_t *m);
/* af_graph_find_node() that says when the map could not be brought up to date: 0 (*id: the
 * node or -1) or AF_ENOMEM (the importer's way to ask whether a node name is taken). */
int af__graph_find_node_checked(af_graph_t *g, const char *name, int32_t *id);
/* Syncs both maps of g with its records (finalize): 0, AF_ENOMEM, or AF_EDUP with a message
 * naming the duplicate and its two ids. */
int af__graph_names_check(af_graph_t *g, af_error_t *err);
/* bytes from the graph's arena, aligned to align (a power of two up to 16); NULL when out of
 * memory. Freed only by af_graph_destroy (af__graph_free_chunks). */
void *af__graph_alloc(af_graph_t *g, size_t bytes, size_t align);
/* A copy of s in the arena, or NULL when out of memory. */
const char *af__graph_strdup(af_graph_t *g, const char *s);
/* The first len bytes of s and a NUL, in the arena; NULL when out of memory. */
const char *af__graph_strndup(af_graph_t *g, const char *s, size_t len);
void af__graph_free_chunks(af_graph_t *g);
/* Min-heap of ids (validate.c): push v, pop the smallest. h holds at least *n + 1 entries. */
void af__graph_heap_push(int32_t *h, size_t *n, int32_t v);
int32_t af__graph_heap_pop(int32_t *h, size_t *n);
#define AF__ATTR_SCAN 8

/* The JSON format's identification (top-level "format" and "version"). */
#define AF__GRAPH_FORMAT "arenaflow-graph"
#define AF__GRAPH_FORMAT_VERSION 1

/* A new heap store of `bytes` bytes (base 64-byte aligned), one reference. 0 or AF_ENOMEM. */
int af__store_heap(size_t bytes, af__store_t **out);
/* Maps the whole regular file `path` read-only, one reference. AF_EIO/AF_ESIZE/AF_ENOMEM. */
int af__store_map(const char *path, af__store_t **out, af_error_t *err);
/*
 * The resolved path (af__malloc'd) of file `name` that a model or graph in directory `dir`
 * refers to. name must be relative without a ".." component, and once symlinks are resolved the
 * file must lie inside dir (AF_EINVAL otherwise); AF_EIO when it does not exist.
 */
int af__store_resolve(const char *dir, const char *name, char **out, af_error_t *err);
/* The directory part of a file path ("." when there is none), af__malloc'd; NULL on OOM. */
char *af__path_dir(const char *path);
/*
 * Tells the kernel this process no longer needs the whole pages of [p, p+len) of a mapped store
 * (after copying them elsewhere): they leave its resident set and are read again from the file
 * if touched. A no-op for heap stores. The bytes stay valid.
 */
void af__store_release_pages(af__store_t *s, const void *p, size_t len);
void af__store_ref(af__store_t *s);
/* Drops one reference; the last one frees the block or unmaps the file. NULL is a no-op. */
void af__store_unref(af__store_t *s);
/*
 * Points constant `tensor` at data (its bytes' worth) inside store, taking a reference (store
 * NULL: borrowed bytes). Same checks as af_graph_set_data(). Before finalize.
 */
int af__graph_attach(af_graph_t *g, int32_t tensor, af__store_t *store, const void *data,
                     af_error_t *err);
/* The base name of view `tensor` before finalize, or NULL when it is no view. */
const char *af__graph_alias_name(const af_graph_t *g, int32_t tensor);
/* Releases every tensor's store reference (af_graph_destroy). */
void af__graph_free_stores(af_graph_t *g);

/* JSON spelling of a tensor kind ("input"...); shared by the JSON reader and writer. */
const char *af__graph_kind_name(af_tensor_kind_t k);

#endif
