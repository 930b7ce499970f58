/*
 * arenaflow — umbrella header: every public module header. Each of them also compiles alone.
 *
 *   common.h    error codes, allocator hooks, clock
 *   graph.h     the graph model, JSON format, validation
 *   onnx.h      ONNX importer with static shape inference
 *   pack.h      interval packing: placers, search, interval verifier, CSV, tight instances
 *   plan.h      scheduling, lifetimes, graph placement through pack, verifier, event table
 *   render.h    memory-map pictures of plans (SVG/HTML)
 *   pool.h      size-class buffer pool and dynamic region
 *   executor.h  worker pool, sessions, kernels
 *   cache.h     plan cache
 *   zoo.h       model zoo and synthetic graphs (random DAGs, residual chains)
 */
#ifndef ARENAFLOW_ARENAFLOW_H
#define ARENAFLOW_ARENAFLOW_H

#include "arenaflow/common.h"
#include "arenaflow/graph.h"
#include "arenaflow/onnx.h"
#include "arenaflow/pack.h"
#include "arenaflow/plan.h"
#include "arenaflow/render.h"
#include "arenaflow/pool.h"
#include "arenaflow/executor.h"
#include "arenaflow/cache.h"
#include "arenaflow/zoo.h"

#endif
