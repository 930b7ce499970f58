/*
 * arenaflow — umbrella header: every public module header. Each of them also compiles alone.
 *
 *   common.h    error codes, allocator hooks, clock
 *   graph.h     the graph model, JSON format, validation
 *   onnx.h      ONNX importer with static shape inference
 *   plan.h      scheduling, lifetimes, placement, verifier, event table
 *   tight.h     tight placement instances with a known optimum
 *   render.h    memory-map pictures of plans (SVG/HTML)
 *   pool.h      size-class buffer pool and dynamic region
 *   executor.h  worker pool, sessions, kernels
 *   cache.h     plan cache
 */
#ifndef ARENAFLOW_ARENAFLOW_H
#define ARENAFLOW_ARENAFLOW_H

#include "arenaflow/common.h"
#include "arenaflow/graph.h"
#include "arenaflow/onnx.h"
#include "arenaflow/plan.h"
#include "arenaflow/tight.h"
#include "arenaflow/render.h"
#include "arenaflow/pool.h"
#include "arenaflow/executor.h"
#include "arenaflow/cache.h"

#endif
