/*
 * Helpers shared by the executing commands (`arenaflow run`, `arenaflow diagnose`): loading a
 * graph that may be a zoo model, reading the [executor] section of a config file, counting
 * system allocator calls through the library's allocator hooks.
 */
#ifndef ARENAFLOW_TOOLS_RUN_UTIL_H
#define ARENAFLOW_TOOLS_RUN_UTIL_H

#include "arenaflow/executor.h"
#include "tools/cli.h"

#include <stdint.h>

/* Model run when no graph is given: the bundled default (a zoo graph). */
#define RUN_DEFAULT_GRAPH "zoo:resnet50"

/*
 * Loads GRAPH: "zoo:NAME" builds a model-zoo graph (batch 1 unless batch > 0), anything else
 * goes to cli_load_graph() (JSON or ONNX). Prints the error and returns NULL on failure.
 */
af_graph_t *run_load_graph(const char *path, int32_t batch);

/*
 * The graph lowered for kernel set `set` on `threads` workers (af_kernels_lower: the kernels'
 * working memory becomes planned scratch tensors). Takes g (destroyed); prints the error and
 * returns NULL on failure (cmd_diagnose.c).
 */
af_graph_t *run_lower_graph(af_graph_t *g, const char *set, int32_t threads);

/* Reads the [executor] section of an INI file into opts. Prints errors; returns 0 or -1. */
int run_load_exec_config(const char *path, af_executor_opts_t *opts);

/* Installs counting allocator hooks (before any arenaflow object exists). */
void run_count_allocs(void);
/* System allocator calls made through the library's hooks since run_count_allocs(). */
uint64_t run_alloc_calls(void);

#endif
