/*
 * arenaflowd limits: what bounds the work and memory one request can cost ([limits]).
 *
 * Parsing: jansson holds a JSON text as a DOM that takes 3 to 80 times the text's bytes (an
 * empty object costs about 230 bytes, "[]" 136, a number 40, a string 80 plus its length;
 * measured with jansson 2.14 on glibc). af__json_cost() adds those up in one pass over the text,
 * without allocating, so a submission can reserve its parser memory from max_parse_bytes
 * before jansson runs; a 16 MB body of "{}" would otherwise take 1.2 GB. ONNX models reserve a
 * fixed multiple of their size: the importer's wire check (graph/onnx_wire.c) refuses models
 * whose decoded messages would take more than 32 times their bytes (the models of the ONNX
 * test data take 16 to 32 times: small messages), and importing them takes a quarter more.
 *
 * Graphs: af__limits_check() applies max_nodes, max_tensors, max_attrs_per_node, and the
 * per-tensor side of max_arena_bytes (a tensor larger than the arena bound can never fit), and
 * rejects graphs whose arena tensors' sizes add up past 2^63 bytes (the JSON reader's bound for
 * one size) as invalid input, so the planner never sums past it.
 *
 * Held bytes: af__held_estimate() is the resident size of a listed graph (the plan cache's copy
 * of the graph, its plan and the cache entry), per tensor and node as their modules allocate
 * them, plus the names and attributes (about the canonical JSON's length). Thread-safe.
 */
#include "daemon/daemon_int.h"

#include <inttypes.h>
#include <stdio.h>

#define COST_OBJECT 232
#define COST_ARRAY 136
#define COST_STRING 80
#define COST_SCALAR 40

uint64_t af__json_cost(const char *s, size_t n)
{
    uint64_t cost = 0;
    size_t i = 0;
    while (i < n) {
        char c = s[i];
        if (c == '"') {
            size_t j = i + 1;
            while (j < n && s[j] != '"')
                j += s[j] == '\\' ? 2 : 1;
            cost += COST_STRING + (j - i);
            i = j + 1;
        } else if (c == '{') {
            cost += COST_OBJECT;
            i++;
        } else if (c == '[') {
            cost += COST_ARRAY;
            i++;
        } else if ((c >= '0' && c <= '9') || c == '-' || c == 't' || c == 'f' || c == 'n') {
            cost += COST_SCALAR;
            while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
                             s[i] == '.' || s[i] == '-' || s[i] == '+' || s[i] == 'E'))
                i++;
        } else {
            i++;
        }
    }
    return cost + cost / 8 + 4096; /* allocator slack */
}

uint64_t af__onnx_cost(size_t len)
{
    return (uint64_t)len * 40 + (2u << 20); /* 32x decoded (the wire check's bound) + import */
}

int af__limits_check(const af__limits_t *lim, const af_graph_t *g, af__derr_t *kind, char *msg,
                     size_t len)
{
    int32_t nt = af_graph_tensor_count(g), nn = af_graph_node_count(g);
    *kind = AF__DERR_LIMIT;
    if (nn > lim->max_nodes) {
        snprintf(msg, len, "the graph has %d nodes; max_nodes is %" PRId64, nn, lim->max_nodes);
        return -1;
    }
    if (nt > lim->max_tensors) {
        snprintf(msg, len, "the graph has %d tensors; max_tensors is %" PRId64, nt,
                 lim->max_tensors);
        return -1;
    }
    for (int32_t v = 0; v < nn; v++) {
        const af_node_info_t *nd = af_graph_node(g, v);
        if (nd->n_attrs > lim->max_attrs) {
            snprintf(msg, len, "node '%.200s' has %d attributes; max_attrs_per_node is %" PRId64,
                     nd->name, nd->n_attrs, lim->max_attrs);
            return -1;
        }
    }
    uint64_t sum = 0;
    for (int32_t t = 0; t < nt; t++) {
        const af_tensor_info_t *ti = af_graph_tensor(g, t);
        if (ti->kind == AF_TENSOR_CONSTANT || ti->alias_of >= 0 || ti->bytes <= 0)
            continue;
        if ((uint64_t)ti->bytes > lim->max_arena_bytes) {
            snprintf(msg, len, "tensor '%.200s' has %" PRId64 " bytes; max_arena_bytes is %" PRIu64,
                     ti->name, ti->bytes, lim->max_arena_bytes);
            return -1;
        }
        if (!af__add_u64(sum, (uint64_t)ti->bytes, &sum) || sum > (uint64_t)INT64_MAX) {
            *kind = AF__DERR_BAD_REQUEST;
            snprintf(msg, len,
                     "invalid graph: the sizes of its tensors add up past 2^63-1 bytes (at "
                     "tensor '%.200s')",
                     ti->name);
            return -1;
        }
    }
    return 0;
}

uint64_t af__held_estimate(const af_graph_t *g, size_t text_len)
{
    uint64_t nt = (uint64_t)af_graph_tensor_count(g), nn = (uint64_t)af_graph_node_count(g);
    uint64_t edges = 0;
    for (uint64_t v = 0; v < nn; v++) {
        const af_node_info_t *nd = af_graph_node(g, (int32_t)v);
        edges += (uint64_t)(nd->n_inputs + nd->n_outputs + nd->n_preds + nd->n_succs);
    }
    /* graph: tensor and node records, name map slots, edge arrays; plan: per tensor plan, group,
     * view links, per node order and step, reuse edges (about one per tensor); cache entry */
    return 4096 + nt * (sizeof(af_tensor_info_t) + 16 + 80) +
           nn * (sizeof(af_node_info_t) + 16 + 16) + edges * 12 + (uint64_t)text_len;
}
