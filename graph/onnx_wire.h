/* ONNX importer: the protobuf wire-format check run before protobuf-c decodes a model. */
#ifndef ARENAFLOW_GRAPH_ONNX_WIRE_H
#define ARENAFLOW_GRAPH_ONNX_WIRE_H

#include "arenaflow/common.h"

#include <stddef.h>
#include <stdint.h>

/* Deepest nesting of embedded messages accepted (protobuf's own default recursion limit). */
#define AF__ONNX_WIRE_MAX_DEPTH 100
/* The decoded messages may take at most this many times the model's bytes (plus 1 MiB). */
#define AF__ONNX_WIRE_MAX_RATIO 32

/*
 * Walks len bytes as an ONNX ModelProto on the wire, without decoding it: every tag, varint
 * and length must be well formed and inside its message, embedded messages may nest at most
 * AF__ONNX_WIRE_MAX_DEPTH deep, and the memory protobuf-c would allocate for them (messages,
 * repeated slots, strings, unknown fields) must stay within AF__ONNX_WIRE_MAX_RATIO times len
 * plus 1 MiB. Iterative (its stack is bounded), no allocation. Returns 0, AF_EPARSE (malformed
 * or nested too deep) or AF_ESIZE (would decode to too much), with a message. Thread-safe.
 */
int af__onnx_wire_check(const void *data, size_t len, af_error_t *err);

#endif
