/**
 * @file shapeml_memory.h
 * @brief Memory resources: the C vtable through which shapeml allocates
 * tensor storage (after RAPIDS RMM). Part of the stable C ABI; included by
 * shapeml.h. A user's own resource, written in C, plugs in exactly like the
 * built-in ones (docs/design/runtime.md).
 */
#ifndef SHAPEML_MEMORY_H_
#define SHAPEML_MEMORY_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Counters reported by a resource's `statistics` callback. Every field is
 *  since the resource was created. The resource writes only
 *  min(struct_size, the size it knows) bytes. */
typedef struct shapeml_memory_statistics {
  size_t struct_size;                /**< Set by the caller: sizeof(shapeml_memory_statistics). */
  uint64_t bytes_in_use;             /**< Bytes handed out and not yet returned (as requested). */
  uint64_t peak_bytes_in_use;        /**< Maximum of bytes_in_use. */
  uint64_t allocation_count;         /**< Successful allocate calls. */
  uint64_t deallocation_count;       /**< deallocate calls. */
  uint64_t bytes_allocated_total;    /**< Sum of the sizes of all successful allocations. */
  uint64_t failed_allocation_count;  /**< allocate calls that returned NULL. */
  uint64_t bytes_reserved;           /**< Pools: bytes held from the upstream resource (0 otherwise). */
} shapeml_memory_statistics;

/** Initializer for shapeml_memory_statistics. */
#define SHAPEML_MEMORY_STATISTICS_INIT {sizeof(shapeml_memory_statistics), 0, 0, 0, 0, 0, 0, 0}

/**
 * A memory resource: a C vtable. Rules (docs/design/runtime.md):
 * - `allocate` returns a pointer aligned to at least `alignment` (a power of
 *   two; the runtime always asks for >= 64) to at least `bytes` bytes, or NULL
 *   on failure. The runtime never asks for 0 bytes.
 * - `deallocate` is *sized*: it receives the same `bytes`, `alignment` and
 *   `stream` that the matching allocate received.
 * - `stream` is an execution stream (a cudaStream_t for device resources);
 *   NULL for host memory. Deallocation is stream-ordered: the memory may be
 *   reused by work enqueued on `stream` after the call.
 * - `statistics` may be NULL; otherwise it fills `*out` and returns 1, or
 *   returns 0 when the resource keeps no statistics.
 * - `destroy` may be NULL; it is called exactly once, when the last user of
 *   the resource lets go (never while an allocation is outstanding, when every
 *   allocation came through the runtime).
 * - All callbacks may be called from several threads at once.
 * - A callback of a C++ host that throws is contained: a throwing
 *   `allocate` is a failed allocation (the call's status says it threw);
 *   an exception from the others is dropped. Nothing unwinds through shapeml.
 */
typedef struct shapeml_memory_resource {
  size_t struct_size; /**< sizeof(shapeml_memory_resource) as compiled by the caller. */
  void* user;         /**< Passed to every callback. */
  /** Returns `bytes` bytes aligned to `alignment`, or NULL. */
  void* (*allocate)(void* user, size_t bytes, size_t alignment, void* stream);
  /** Returns memory from `allocate`, with the same bytes, alignment and stream (sized). */
  void (*deallocate)(void* user, void* ptr, size_t bytes, size_t alignment, void* stream);
  /** May be NULL; fills `*out` and returns 1, or returns 0 when no statistics are kept. */
  int32_t (*statistics)(void* user, shapeml_memory_statistics* out);
  /** May be NULL; called once when the last user lets go. */
  void (*destroy)(void* user);
} shapeml_memory_resource;

/** Receives one line of text from the logging adaptor (no trailing newline). */
typedef void (*shapeml_log_callback)(void* user, const char* line);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* SHAPEML_MEMORY_H_ */
