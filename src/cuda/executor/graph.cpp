// CUDA graph replay of a prepared plan (graph.h, docs/design/cuda-graphs.md).
#include "cuda/executor/graph.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "cuda/cuda_error.h"
#include "cuda/executor/device_guard.h"
#include "cuda/executor/executor.h"
#include "shapeml.h"

namespace {

using shapeml::cuda::DeviceGuard;
using shapeml::cuda::fail;
using shapeml::cuda::fail_with;

int64_t align256(int64_t x) { return (x + 255) / 256 * 256; }

// One executable and the buffer addresses it was captured with.
struct Exec {
  std::vector<void*> key;
  cudaGraphExec_t exec = nullptr;
  uint64_t used = 0;  // recency, for the least recently used victim
};

}  // namespace

struct shapeml_cuda_graph {
  shapeml_cuda_plan* plan = nullptr;
  int32_t rebind = shapeml::cuda::kGraphRebindRecapture;
  int32_t device = 0;
  char* workspace = nullptr;             // the plan's workspace, at the start of the graph's memory
  std::vector<int64_t> bytes;            // per buffer
  std::vector<void*> staging;            // copy-in: the graph's own buffer per buffer (NULL when empty)
  cudaEvent_t done = nullptr;            // recorded at the end of every replay
  std::mutex mu;
  std::vector<Exec> execs;               // recapture: up to kGraphMaxExecs; copy-in: one
  uint64_t clock = 0;
  bool thrashing = false;                // recapture: addresses change too often, run directly
  int64_t captures = 0, replays = 0, updates = 0, direct = 0, hits = 0;
  // copy-in: the outer graph (kept: its memcpy nodes are the handles that
  // cudaGraphExecMemcpyNodeSetParams1D takes) and its node per buffer.
  cudaGraph_t outer = nullptr;
  std::vector<cudaGraphNode_t> copy_nodes;

  ~shapeml_cuda_graph() {
    for (Exec& x : execs)
      if (x.exec) cudaGraphExecDestroy(x.exec);
    if (outer) cudaGraphDestroy(outer);
    if (done) cudaEventDestroy(done);
  }
};

namespace {

const char* kAt = "graph replay of a dispatch plan";

// Captures the plan's launches on `stream` with `buffers` into a new graph
// (*out). With `record_done`, an event record node ends it.
int32_t capture(shapeml_cuda_graph& g, void* const* buffers, cudaStream_t stream, bool record_done, cudaGraph_t* out, char* err, size_t n) {
  *out = nullptr;
  cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) return fail(e, "cudaStreamBeginCapture", err, n, "%s: capturing on stream %p", kAt, static_cast<void*>(stream));
  // With the plan's `branches` on, launches that share no bytes become
  // parallel branches of the graph; otherwise one chain in plan order.
  int32_t rc = shapeml::cuda::plan_graph_facts(g.plan).branches
                   ? shapeml::cuda::plan_execute_branched(g.plan, buffers, g.workspace, stream, err, n)
                   : shapeml::cuda::plan_execute(g.plan, buffers, g.workspace, stream, err, n);
  cudaError_t rec = cudaSuccess;
  if (rc == 0 && record_done) rec = cudaEventRecordWithFlags(g.done, stream, cudaEventRecordExternal);
  cudaGraph_t graph = nullptr;
  cudaError_t end = cudaStreamEndCapture(stream, &graph);  // always: the stream must leave capture mode
  if (rc != 0 || rec != cudaSuccess || end != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    if (rc != 0) {
      // plan_execute named the launch; say that it happened under capture.
      char inner[768];
      std::snprintf(inner, sizeof inner, "%s", err ? err : "");
      (void)cudaGetLastError();
      return fail_with(rc, err, n, "%s: while capturing on stream %p: %s", kAt, static_cast<void*>(stream), inner);
    }
    if (rec != cudaSuccess) return fail(rec, "cudaEventRecordWithFlags", err, n, "%s: the completion event node", kAt);
    return fail(end, "cudaStreamEndCapture", err, n, "%s: capturing on stream %p", kAt, static_cast<void*>(stream));
  }
  ++g.captures;
  *out = graph;
  return 0;
}

int32_t instantiate(cudaGraph_t graph, cudaGraphExec_t* exec, char* err, size_t n) {
  cudaError_t e = cudaGraphInstantiate(exec, graph, 0);
  if (e != cudaSuccess) {
    *exec = nullptr;
    return fail(e, "cudaGraphInstantiate", err, n, "%s", kAt);
  }
  return 0;
}

// Recapture mode: the executable for these addresses (made or updated now
// when there is none).
int32_t exec_for(shapeml_cuda_graph& g, const std::vector<void*>& key, cudaStream_t stream, cudaGraphExec_t* out, char* err, size_t n) {
  for (Exec& x : g.execs)
    if (x.key == key) {
      x.used = ++g.clock;
      ++g.hits;
      *out = x.exec;
      return 0;
    }
  cudaGraph_t graph = nullptr;
  if (int32_t rc = capture(g, key.data(), stream, true, &graph, err, n)) return rc;
  int32_t rc = 0;
  if (g.execs.size() < shapeml::cuda::kGraphMaxExecs) {
    Exec x;
    rc = instantiate(graph, &x.exec, err, n);
    if (rc == 0) {
      x.key = key;
      x.used = ++g.clock;
      g.execs.push_back(std::move(x));
      *out = g.execs.back().exec;
    }
  } else {
    Exec& victim = *std::min_element(g.execs.begin(), g.execs.end(), [](const Exec& a, const Exec& b) { return a.used < b.used; });
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(victim.exec, graph, &info) == cudaSuccess) {
      ++g.updates;
    } else {
      // Another topology (e.g. cuBLASLt's other algorithm for unaligned
      // pointers): a fresh executable. Launches already enqueued keep the old one.
      (void)cudaGetLastError();
      cudaGraphExecDestroy(victim.exec);
      victim.exec = nullptr;
      rc = instantiate(graph, &victim.exec, err, n);
    }
    if (rc == 0) {
      victim.key = key;
      victim.used = ++g.clock;
      *out = victim.exec;
    } else {
      g.execs.erase(std::find_if(g.execs.begin(), g.execs.end(), [](const Exec& x) { return x.exec == nullptr; }));
    }
  }
  cudaGraphDestroy(graph);
  // Addresses that change on (almost) every call make capture cost more than
  // it saves: after enough misses, run the plan directly from now on.
  int64_t misses = g.captures;
  if (misses >= 8 && misses * 2 > g.hits) g.thrashing = true;
  return rc;
}

// Copy-in mode: one executable over the staging buffers, built on the first
// call: input copies -> the captured plan (a child graph) -> output copies ->
// the completion event.
int32_t build_copy_in(shapeml_cuda_graph& g, void* const* buffers, cudaStream_t stream, char* err, size_t n) {
  cudaGraph_t body = nullptr;
  if (int32_t rc = capture(g, g.staging.data(), stream, false, &body, err, n)) return rc;
  cudaError_t e = cudaGraphCreate(&g.outer, 0);
  const char* call = "cudaGraphCreate";
  const size_t nin = g.bytes.size();
  g.copy_nodes.assign(nin, nullptr);
  std::vector<cudaGraphNode_t> ins, outs;
  cudaGraphNode_t child = nullptr;
  // Inputs first, then outputs, as plan_execute's buffers.
  const int32_t plan_inputs = shapeml::cuda::plan_graph_facts(g.plan).num_inputs;
  for (size_t i = 0; e == cudaSuccess && i < static_cast<size_t>(plan_inputs); ++i) {
    if (g.bytes[i] == 0) continue;
    call = "cudaGraphAddMemcpyNode1D";
    e = cudaGraphAddMemcpyNode1D(&g.copy_nodes[i], g.outer, nullptr, 0, g.staging[i], buffers[i], static_cast<size_t>(g.bytes[i]),
                                 cudaMemcpyDeviceToDevice);
    if (e == cudaSuccess) ins.push_back(g.copy_nodes[i]);
  }
  if (e == cudaSuccess) {
    call = "cudaGraphAddChildGraphNode";
    e = cudaGraphAddChildGraphNode(&child, g.outer, ins.data(), ins.size(), body);
  }
  for (size_t i = static_cast<size_t>(plan_inputs); e == cudaSuccess && i < nin; ++i) {
    if (g.bytes[i] == 0) continue;
    call = "cudaGraphAddMemcpyNode1D";
    e = cudaGraphAddMemcpyNode1D(&g.copy_nodes[i], g.outer, &child, 1, buffers[i], g.staging[i], static_cast<size_t>(g.bytes[i]),
                                 cudaMemcpyDeviceToDevice);
    if (e == cudaSuccess) outs.push_back(g.copy_nodes[i]);
  }
  cudaGraphNode_t rec = nullptr;
  if (e == cudaSuccess) {
    call = "cudaGraphAddEventRecordNode";
    if (outs.empty()) outs.push_back(child);
    e = cudaGraphAddEventRecordNode(&rec, g.outer, outs.data(), outs.size(), g.done);
  }
  cudaGraphDestroy(body);  // the child node holds its own copy
  if (e != cudaSuccess) {
    if (g.outer) cudaGraphDestroy(g.outer);
    g.outer = nullptr;
    return fail(e, call, err, n, "%s: building the copy-in graph", kAt);
  }
  Exec x;
  if (int32_t rc = instantiate(g.outer, &x.exec, err, n)) {
    cudaGraphDestroy(g.outer);
    g.outer = nullptr;
    return rc;
  }
  x.key.assign(buffers, buffers + nin);
  g.execs.push_back(std::move(x));
  return 0;
}

// Copy-in mode: points the memcpy nodes at this call's buffers.
int32_t rebind_copy_in(shapeml_cuda_graph& g, void* const* buffers, char* err, size_t n) {
  Exec& x = g.execs.front();
  const size_t plan_inputs = static_cast<size_t>(shapeml::cuda::plan_graph_facts(g.plan).num_inputs);
  bool moved = false;
  for (size_t i = 0; i < x.key.size(); ++i) {
    if (x.key[i] == buffers[i] || g.bytes[i] == 0) continue;
    bool in = i < plan_inputs;
    cudaError_t e = cudaGraphExecMemcpyNodeSetParams1D(x.exec, g.copy_nodes[i], in ? g.staging[i] : buffers[i], in ? buffers[i] : g.staging[i],
                                                       static_cast<size_t>(g.bytes[i]), cudaMemcpyDeviceToDevice);
    if (e != cudaSuccess) return fail(e, "cudaGraphExecMemcpyNodeSetParams1D", err, n, "%s: rebinding buffer %zu", kAt, i);
    x.key[i] = buffers[i];
    moved = true;
  }
  if (moved) ++g.updates;
  else ++g.hits;
  return 0;
}

int32_t run(shapeml_cuda_graph* g, void* const* buffers, void* stream_ptr, int32_t* ran, char* err, size_t n) {
  if (ran) *ran = 0;
  if (!g || !ran) return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, n, "graph_execute: graph or ran is NULL");
  const size_t nbuf = g->bytes.size();
  if (!buffers && nbuf > 0) return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, n, "graph_execute: buffers is NULL");
  cudaStream_t stream = static_cast<cudaStream_t>(stream_ptr);
  std::lock_guard<std::mutex> lock(g->mu);
  DeviceGuard scope(g->device);
  if (scope.status != cudaSuccess) return fail(scope.status, "cudaSetDevice", err, n, "%s on cuda:%d", kAt, g->device);
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaStreamIsCapturing(stream, &cs);
  if (e != cudaSuccess) return fail(e, "cudaStreamIsCapturing", err, n, "%s: stream %p", kAt, stream_ptr);
  if (cs != cudaStreamCaptureStatusNone) return 0;  // someone else's capture: the caller runs the plan into it
  if (g->thrashing) {
    *ran = 1;
    ++g->direct;
    if (int32_t rc = shapeml::cuda::plan_execute(g->plan, buffers, g->workspace, stream, err, n)) return rc;
    e = cudaEventRecord(g->done, stream);  // graph_destroy waits for this run too: it uses the workspace
    if (e != cudaSuccess) return fail(e, "cudaEventRecord", err, n, "%s: after a direct run", kAt);
    return 0;
  }
  cudaGraphExec_t exec = nullptr;
  if (g->rebind == shapeml::cuda::kGraphRebindCopyIn) {
    if (g->execs.empty()) {
      if (int32_t rc = build_copy_in(*g, buffers, stream, err, n)) return rc;
    } else if (int32_t rc = rebind_copy_in(*g, buffers, err, n)) {
      return rc;
    }
    exec = g->execs.front().exec;
  } else {
    std::vector<void*> key(buffers, buffers + nbuf);
    if (int32_t rc = exec_for(*g, key, stream, &exec, err, n)) return rc;
  }
  *ran = 1;
  e = cudaGraphLaunch(exec, stream);
  if (e != cudaSuccess) return fail(e, "cudaGraphLaunch", err, n, "%s on stream %p", kAt, stream_ptr);
  ++g->replays;
  return 0;
}

}  // namespace

namespace shapeml::cuda {

int32_t plan_graph(const shapeml_cuda_plan* plan, char* why, size_t why_size) {
  if (!plan) return -1;
  const PlanGraphFacts& f = plan_graph_facts(plan);
  const std::string& text = f.blocker.empty() ? f.why : f.blocker;
  if (why && why_size) std::snprintf(why, why_size, "%s", text.c_str());
  if (!f.blocker.empty()) return -1;
  return f.on ? 1 : 0;
}

int64_t graph_memory_bytes(const shapeml_cuda_plan* plan, int32_t rebind) {
  if (!plan) return 0;
  int64_t total = align256(plan_workspace_bytes(plan));
  if (rebind == kGraphRebindCopyIn)
    for (int64_t b : plan_graph_facts(plan).buffer_bytes) total += align256(b);
  return total;
}

int32_t graph_create(shapeml_cuda_plan* plan, int32_t rebind, void* memory, shapeml_cuda_graph** graph, char* err, size_t err_size) {
  try {
    if (!graph) return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "graph_create: graph is NULL");
    *graph = nullptr;
    if (!plan) return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "graph_create: plan is NULL");
    if (rebind != kGraphRebindRecapture && rebind != kGraphRebindCopyIn)
      return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "graph_create: rebind mode %d is not 0 (recapture) or 1 (copy-in)", rebind);
    const PlanGraphFacts& f = plan_graph_facts(plan);
    if (!f.blocker.empty())
      return fail_with(SHAPEML_STATUS_FAILED_PRECONDITION, err, err_size, "graph_create: the plan cannot be captured in a CUDA graph: %s",
                       f.blocker.c_str());
    if (!memory && graph_memory_bytes(plan, rebind) > 0)
      return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "graph_create: memory is NULL but the graph needs %lld bytes",
                       static_cast<long long>(graph_memory_bytes(plan, rebind)));
    auto g = std::make_unique<shapeml_cuda_graph>();
    g->plan = plan;
    g->rebind = rebind;
    g->device = f.device;
    g->workspace = static_cast<char*>(memory);
    g->bytes = f.buffer_bytes;
    if (rebind == kGraphRebindCopyIn) {
      int64_t at = align256(plan_workspace_bytes(plan));
      for (int64_t b : g->bytes) {
        g->staging.push_back(b > 0 ? static_cast<char*>(memory) + at : nullptr);
        at += align256(b);
      }
    }
    DeviceGuard scope(g->device);
    if (scope.status != cudaSuccess) return fail(scope.status, "cudaSetDevice", err, err_size, "graph_create on cuda:%d", g->device);
    cudaError_t e = cudaEventCreateWithFlags(&g->done, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      g->done = nullptr;
      return fail(e, "cudaEventCreateWithFlags", err, err_size, "graph_create: the completion event");
    }
    *graph = g.release();
    return 0;
  } catch (const std::bad_alloc&) {
    return fail_with(SHAPEML_STATUS_RESOURCE_EXHAUSTED, err, err_size, "graph_create: out of host memory");
  } catch (...) {
    return fail_with(SHAPEML_STATUS_INTERNAL, err, err_size, "graph_create: unexpected C++ exception");
  }
}

int32_t graph_execute(shapeml_cuda_graph* graph, void* const* buffers, void* stream, int32_t* ran, char* err, size_t err_size) {
  try {
    return run(graph, buffers, stream, ran, err, err_size);
  } catch (const std::bad_alloc&) {
    return fail_with(SHAPEML_STATUS_RESOURCE_EXHAUSTED, err, err_size, "graph_execute: out of host memory");
  } catch (...) {
    return fail_with(SHAPEML_STATUS_INTERNAL, err, err_size, "graph_execute: unexpected C++ exception");
  }
}

int32_t graph_destroy(shapeml_cuda_graph* graph, char* err, size_t err_size) {
  if (!graph) return 0;
  int32_t rc = 0;
  {
    std::lock_guard<std::mutex> lock(graph->mu);
    DeviceGuard scope(graph->device);
    // Never recorded: returns at once. Otherwise the last replay (every one
    // records it, in stream order) has finished with the memory.
    cudaError_t e = graph->done ? cudaEventSynchronize(graph->done) : cudaSuccess;
    if (e != cudaSuccess) rc = fail(e, "cudaEventSynchronize", err, err_size, "graph_destroy: waiting for the last replay");
  }
  delete graph;
  return rc;
}

void graph_counters(const shapeml_cuda_graph* graph, int64_t counters[4]) {
  counters[0] = graph ? graph->captures : 0;
  counters[1] = graph ? graph->replays : 0;
  counters[2] = graph ? graph->updates : 0;
  counters[3] = graph ? graph->direct : 0;
}

}  // namespace shapeml::cuda
