// CUDA graph replay of a prepared dispatch plan (docs/design/cuda-graphs.md).
// The graph functions of shapeml_cuda_plugin (src/plan/plugin_contract.h) are
// exactly these. A graph belongs to one plan and owns device memory the
// caller allocates once (graph_memory_bytes): the plan's workspace, so its
// address is stable across replays, plus, in the copy-in mode, staging
// buffers for every input and output. The first graph_execute captures the
// plan's launches (stream capture, mode ThreadLocal, on the call's stream:
// cuBLASLt's algorithms were chosen at plan_create, so no heuristic query
// happens under capture) and instantiates them; later calls replay.
//
// Rebinding (the caller's buffers move):
//   kGraphRebindRecapture  executables cached by the buffer addresses (up to
//       kGraphMaxExecs); a new address set is captured again and, with the
//       cache full, cudaGraphExecUpdate'd into the least recently used one.
//       If most calls miss (addresses change every call), the graph stops
//       capturing and runs the plan directly on its own workspace.
//   kGraphRebindCopyIn  one executable that reads and writes its own staging
//       buffers; device-to-device memcpy nodes copy the inputs in and the
//       outputs out, and a new address only resets those nodes' parameters.
//
// Threads and streams: one graph is used from one stream at a time (the
// runtime keeps one per (plan, stream)); its functions lock it, so two
// threads on the same stream are safe. Every replay records an event (a node
// inside the graph), which graph_destroy waits for before the caller frees
// the memory. Return values and `err` follow plugin_api.h.
#pragma once
#include <cstddef>
#include <cstdint>

#include "plan/plugin_contract.h"

namespace shapeml::cuda {

/// Rebinding modes (graph_create's `rebind`).
constexpr int32_t kGraphRebindRecapture = 0;
constexpr int32_t kGraphRebindCopyIn = 1;
/// Executables a recapture-mode graph keeps, one per buffer address set.
constexpr size_t kGraphMaxExecs = 4;

/// What the plan says about graphs: 1 = replay by default; 0 = off by choice
/// (it can be captured); -1 = it cannot be captured. The reason goes to `why`.
int32_t plan_graph(const shapeml_cuda_plan* plan, char* why, size_t why_size);
/// Device bytes (256-byte aligned) a graph of `plan` in mode `rebind` needs.
int64_t graph_memory_bytes(const shapeml_cuda_plan* plan, int32_t rebind);
/// A graph over `plan` using `memory` (graph_memory_bytes bytes of the
/// plan's device, 256-byte aligned; the caller frees it after
/// graph_destroy). Captures nothing yet. FAILED_PRECONDITION for a plan that
/// cannot be captured.
int32_t graph_create(shapeml_cuda_plan* plan, int32_t rebind, void* memory, shapeml_cuda_graph** graph, char* err, size_t err_size);
/// Runs the plan through the graph on `stream` (buffers as plan_execute's).
/// `*ran` says whether anything was enqueued: on failure with *ran == 0
/// (capture, instantiate or update failed) the stream is untouched and the
/// caller may run the plan directly. Returns 0 with *ran == 0 when `stream`
/// is being captured by someone else: the caller runs the plan directly
/// (into that capture), since a nested capture is not allowed.
int32_t graph_execute(shapeml_cuda_graph* graph, void* const* buffers, void* stream, int32_t* ran, char* err, size_t err_size);
/// Waits for the graph's enqueued work, then frees its executables (graph
/// may be NULL). A failed wait is reported, and everything is freed anyway.
int32_t graph_destroy(shapeml_cuda_graph* graph, char* err, size_t err_size);

/// Counters for tests and benchmarks: captures made, replays launched,
/// executables updated in place, direct runs (thrashing), in that order.
void graph_counters(const shapeml_cuda_graph* graph, int64_t counters[4]);

}  // namespace shapeml::cuda
