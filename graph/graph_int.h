/* Graph-module internals shared by the graph/ sources (builder, JSON reader/writer, importers). */
#ifndef ARENAFLOW_GRAPH_INT_H
#define ARENAFLOW_GRAPH_INT_H

#include "arenaflow/graph.h"
#include "common/common_int.h"

/* Open-addressing name -> id map; keys are the names stored in the graph's records. */
typedef struct af__namemap {
    int32_t *slots; /* id or -1 */
    size_t cap;     /* power of two */
    size_t count;
} af__namemap_t;

typedef struct af__node_pending {
    char **in_names;
    char **out_names;
} af__node_pending_t;

struct af_graph {
    char *name;
    int finalized;

    af_tensor_info_t *tensors;
    size_t n_tensors, cap_tensors;
    char **alias_names; /* per tensor, until finalize */

    af_node_info_t *nodes;
    size_t n_nodes, cap_nodes;
    af__node_pending_t *pending; /* per node, until finalize */
    size_t *attr_cap;            /* per node capacity of nodes[i].attrs */
    /* Attribute names of the nodes with more than AF__ATTR_SCAN attributes, so the duplicate
     * check of af_graph_node_set_attr stays O(1): open addressing, slot = node << 32 | index
     * into the node's attrs, -1 empty. Fewer attributes are scanned. */
    int64_t *attr_slots;
    size_t attr_slot_cap, attr_slot_count;

    af__namemap_t tmap, nmap;

    int32_t *input_order;
    int32_t *alias_root;
    int64_t *alias_root_off;
    int32_t *edge_pool; /* consumers, preds, succs arrays live here */
};

#define AF__ATTR_SCAN 8

/* The JSON format's identification (top-level "format" and "version"). */
#define AF__GRAPH_FORMAT "arenaflow-graph"
#define AF__GRAPH_FORMAT_VERSION 1

/* JSON spelling of a tensor kind ("input"...); shared by the JSON reader and writer. */
const char *af__graph_kind_name(af_tensor_kind_t k);

#endif
