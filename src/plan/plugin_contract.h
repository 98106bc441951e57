/* The interface between the runtime (libshapeml_runtime.so / libshapeml.so)
 * and the CUDA plugin (libshapeml_cuda.so), which the runtime loads with
 * dlopen the first time a CUDA device is asked for. Plain C: the plugin is the
 * only binary that links CUDA, and the two sides are built separately.
 *
 * The plugin exports one symbol:
 *
 *   const shapeml_cuda_plugin* shapeml_cuda_plugin_get(uint32_t abi_version);
 *
 * returning NULL when it does not speak `abi_version`. Every fallible
 * function returns 0 on success, or a shapeml status code (include/shapeml.h
 * numbering: UNAVAILABLE for a missing driver/GPU/library, RESOURCE_EXHAUSTED
 * for out of memory, INVALID_ARGUMENT, INTERNAL ...) and writes a NUL-
 * terminated message naming the failing CUDA/cuBLAS call and the operation
 * into `err` (at most `err_size` bytes, always terminated). Nothing in the
 * plugin prints, aborts or exits; no C++ exception crosses this boundary.
 * Every function is thread-safe. Streams are `cudaStream_t` passed as void*
 * (NULL = the legacy default stream is never used: the runtime always passes
 * its own stream).
 */
#ifndef SHAPEML_CUDA_PLUGIN_API_H_
#define SHAPEML_CUDA_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHAPEML_CUDA_PLUGIN_ABI 1

typedef struct shapeml_cuda_plan shapeml_cuda_plan;   /* an executable plan */

/* Observability hooks the runtime hands the plugin (set_observer, below;
 * docs/design/observability.md). flags(): the runtime's trace flags now (bit
 * 0 spans, bit 1 GPU time per operation). span(): records one finished span
 * in the runtime's trace on the calling thread (the runtime adds the module
 * and entry of the call in progress); `args_json` is the inside of a JSON
 * object or "", `thread` 0 for the calling thread or a pseudo-thread number
 * (the GPU timeline). Both are cheap and thread-safe. */
typedef struct shapeml_cuda_observer {
  uint32_t (*flags)(void);
  void (*span)(const char* category, const char* name, uint64_t begin_ns, uint64_t duration_ns, const char* args_json, uint32_t thread);
} shapeml_cuda_observer;
typedef struct shapeml_cuda_graph shapeml_cuda_graph; /* a plan replayed as a CUDA graph */

typedef struct shapeml_cuda_plugin {
  uint32_t abi_version; /* SHAPEML_CUDA_PLUGIN_ABI */

  /* Devices. init() loads the driver; safe to call more than once. */
  int32_t (*init)(int32_t* device_count, char* err, size_t err_size);
  int32_t (*device_name)(int32_t device, char* name, size_t name_size, char* err, size_t err_size);

  /* Streams (one per context by default; callers may pass their own). */
  int32_t (*stream_create)(int32_t device, void** stream, char* err, size_t err_size);
  int32_t (*stream_destroy)(void* stream, char* err, size_t err_size);
  int32_t (*stream_synchronize)(void* stream, char* err, size_t err_size);

  /* Memory. malloc_async/free_async are stream-ordered (cudaMallocAsync on
   * the device's pool, whose release threshold is `release_threshold` bytes,
   * set once per device by set_pool_release_threshold). */
  int32_t (*malloc_raw)(int32_t device, size_t bytes, void** ptr, char* err, size_t err_size);
  int32_t (*free_raw)(int32_t device, void* ptr, char* err, size_t err_size);
  int32_t (*malloc_async)(int32_t device, size_t bytes, void* stream, void** ptr, char* err, size_t err_size);
  int32_t (*free_async)(int32_t device, void* ptr, void* stream, char* err, size_t err_size);
  int32_t (*set_pool_release_threshold)(int32_t device, uint64_t release_threshold, char* err, size_t err_size);

  /* Copies, ordered on `stream`; kind: 0 host->device, 1 device->host,
   * 2 device->device. A copy to host memory is complete only after
   * stream_synchronize. */
  int32_t (*memcpy_async)(void* dst, const void* src, size_t bytes, int32_t kind, void* stream, char* err, size_t err_size);

  /* Plans (src/plan/plan.h, as text). plan_create parses, verifies (plan/verify.h) and
   * prepares (cuBLASLt descriptors, algorithm choice) once; plan_execute
   * runs every launch on `stream` with buffers[0..num_inputs-1] the inputs
   * and buffers[num_inputs..] the outputs (device pointers; host pointers
   * for host_input/host_output slots), `workspace` at least
   * workspace_bytes. It allocates nothing and does not synchronize. */
  int32_t (*plan_create)(int32_t device, const char* plan_text, shapeml_cuda_plan** plan, char* err, size_t err_size);
  int64_t (*plan_workspace_bytes)(const shapeml_cuda_plan* plan);
  int32_t (*plan_execute)(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream, char* err, size_t err_size);
  void (*plan_destroy)(shapeml_cuda_plan* plan);

  /* Appended after the plan entries (same abi_version: both sides are built
   * from one tree). Sets `bytes` bytes at device pointer `ptr` to `value`,
   * ordered on `stream` (zero-filled device tensors without host staging). */
  int32_t (*memset_async)(void* ptr, int32_t value, size_t bytes, void* stream, char* err, size_t err_size);

  /* Appended: CUDA graph replay of a plan (src/cuda/executor/graph.h,
   * docs/design/cuda-graphs.md). plan_graph: 1 the plan says replay, 0 off
   * by choice (capturable), -1 it cannot be captured; the reason in `why`.
   * graph_memory_bytes: device memory a graph needs (its own workspace,
   * plus staging buffers in copy-in mode, rebind 1), which the caller
   * allocates once and frees after graph_destroy. graph_execute: as
   * plan_execute without a workspace; *ran says whether work was enqueued
   * (0 on a failed capture/instantiate: the caller may run the plan
   * directly; 0 with success when the stream is already being captured).
   * graph_destroy waits for the graph's enqueued work. */
  int32_t (*plan_graph)(const shapeml_cuda_plan* plan, char* why, size_t why_size);
  int64_t (*graph_memory_bytes)(const shapeml_cuda_plan* plan, int32_t rebind);
  int32_t (*graph_create)(shapeml_cuda_plan* plan, int32_t rebind, void* memory, shapeml_cuda_graph** graph, char* err, size_t err_size);
  int32_t (*graph_execute)(shapeml_cuda_graph* graph, void* const* buffers, void* stream, int32_t* ran, char* err, size_t err_size);
  int32_t (*graph_destroy)(shapeml_cuda_graph* graph, char* err, size_t err_size);

  /* Appended: observability. The runtime calls set_observer once after
   * init (NULL: none). plan_execute pushes an NVTX range named after each
   * launch whether or not an observer is set (NVTX costs nothing without a
   * tool attached); with an observer whose flags ask for spans, it reports
   * one span per launch (host enqueue time), and with GPU timing one more
   * per launch on the GPU timeline, measured with CUDA events (the plan is
   * then synchronized once at its end; not inside a stream capture). */
  void (*set_observer)(const shapeml_cuda_observer* observer);

  /* Appended: makes later work on `waiter` wait for the work enqueued on
   * `waited` so far, without blocking the host (an event recorded on
   * `waited`, waited for on `waiter`). Both streams of one device. */
  int32_t (*stream_wait)(void* waiter, void* waited, char* err, size_t err_size);
  /* Appended: *capturing = 1 when `stream` is being captured into a CUDA
   * graph (by the caller: torch.cuda.graph, say), else 0. The runtime then
   * neither makes nor replays a cached graph of its own on that stream (its
   * workspace allocation would become part of the caller's graph) but runs
   * the plan into the caller's capture. NULL in an older plugin: never. */
  int32_t (*stream_capturing)(void* stream, int32_t* capturing, char* err, size_t err_size);
} shapeml_cuda_plugin;

typedef const shapeml_cuda_plugin* (*shapeml_cuda_plugin_get_fn)(uint32_t abi_version);

#ifdef __cplusplus
}
#endif

#endif /* SHAPEML_CUDA_PLUGIN_API_H_ */
