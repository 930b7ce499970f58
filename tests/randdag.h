/*
 * Terse forms of the zoo's synthetic graphs for property tests (the generators live in the
 * library: zoo/dag.c, include/arenaflow/zoo.h): a graph or NULL, so a test reads
 * `af_graph_t *g = rd_graph(seed, 40);` and asserts on NULL with its seed.
 */
#ifndef ARENAFLOW_TESTS_RANDDAG_H
#define ARENAFLOW_TESTS_RANDDAG_H

#include "arenaflow/zoo.h"

#include <stdint.h>

static inline af_graph_t *rd_graph(uint64_t seed, int max_nodes)
{
    af_graph_t *g = NULL;
    return af_zoo_random_dag(seed, max_nodes, &g, NULL) ? NULL : g;
}

static inline af_graph_t *rd_layered_graph(uint64_t seed, int n_tensors)
{
    af_graph_t *g = NULL;
    return af_zoo_residual_chain(seed, n_tensors, &g, NULL) ? NULL : g;
}

/* A random topological order: 0, or AF_ENOMEM (the order is then undefined). */
static inline int rd_random_order(const af_graph_t *g, uint64_t seed, int32_t *order)
{
    return af_zoo_random_order(g, seed, order);
}

#endif
