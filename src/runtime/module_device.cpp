// Module::call for entries that live on a CUDA device: the specialization is
// a dispatch plan (src/plan/plan.h) that the CUDA plugin executes on a
// stream. The runtime checks the inputs, binds the shape variables (the same
// rule as host calls), allocates the outputs and one workspace from the
// call's memory resource, and enqueues the plan, or replays it as a CUDA
// graph (one graph, with its own workspace, per plan and stream:
// docs/design/cuda-graphs.md). Nothing synchronizes the host except a result
// that lives on the host (a host boundary).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "obs/trace.h"
#include "runtime/cuda_memory.h"
#include "runtime/cuda_plugin_loader.h"
#include "runtime/device_copy.h"
#include "runtime/module.h"
#include "runtime/shape_binding.h"

namespace shapeml::runtime {

namespace {

constexpr size_t kErr = 1024;
// Streams one plan keeps a graph for; calls on further streams run directly
// (each graph holds a workspace until the specialization is dropped).
constexpr size_t kMaxGraphStreams = 16;
// How a graph follows the caller's buffers (src/cuda/executor/graph.h): 0 =
// recapture per address set (cached, cudaGraphExecUpdate), the cheaper one
// when addresses repeat, the default; 1 = copy-in staging buffers (one
// capture ever). $SHAPEML_CUDA_GRAPH_REBIND=copy-in picks 1, read once per
// process. bench/gpu_graph_bench measures both.
int32_t rebind_mode() {
  static const int32_t mode = [] {
    const char* v = std::getenv("SHAPEML_CUDA_GRAPH_REBIND");
    return v && std::string(v) == "copy-in" ? 1 : 0;
  }();
  return mode;
}

// The plan's graph on one stream and the memory it owns. Shared by the calls
// that use it, so a graph whose capture failed can be dropped from the cache
// while another thread still holds it.
struct GraphEntry {
  const CudaPlugin* plugin = nullptr;
  shapeml_cuda_graph* graph = nullptr;  // NULL: graph replay failed on this stream; run directly
  void* memory = nullptr;
  size_t bytes = 0;
  MemoryResourcePtr mr;
  int32_t device = 0;
  // Where the memory is freed: NULL, the runtime's stream for the device (a
  // long-lived graph outlives the stream of the call that made it); the
  // call's stream while that call still holds the entry.
  std::atomic<void*> free_stream{nullptr};
  ~GraphEntry() {
    char err[kErr] = {0};
    // Waits for the graph's last replay, so the memory is idle when freed.
    if (graph) plugin->api().graph_destroy(graph, err, sizeof err);
    if (memory) {
      void* s = free_stream.load();
      if (!s) {
        auto d = plugin->default_stream(device);
        s = d ? *d : nullptr;
      }
      mr->deallocate(memory, bytes, 256, s);
    }
  }
};

}  // namespace

struct Module::DevicePlan {
  const CudaPlugin* plugin = nullptr;
  shapeml_cuda_plan* plan = nullptr;
  int32_t device = 0;
  int64_t workspace = 0;
  int32_t graph_mode = -1;  // plan_graph(): 1 replay, 0 off by choice, -1 cannot be captured
  std::string graph_why;
  std::mutex graphs_mu;
  std::map<void*, std::shared_ptr<GraphEntry>> graphs;  // by stream

  // The graph for `stream`, made on first use with its memory from `mr`
  // (the call's device resource). NULL (and OK) when the plan keeps no more
  // graphs or replay failed on this stream before; an error only when making
  // it fails.
  Result<std::shared_ptr<GraphEntry>> graph_for(void* stream, const MemoryResourcePtr& mr, const std::string& fn_name) {
    std::lock_guard<std::mutex> lock(graphs_mu);
    auto it = graphs.find(stream);
    if (it != graphs.end()) return it->second->graph ? it->second : nullptr;
    if (graphs.size() >= kMaxGraphStreams) return std::shared_ptr<GraphEntry>();
    auto g = std::make_shared<GraphEntry>();
    g->plugin = plugin;
    g->device = device;
    g->mr = mr;
    g->free_stream = stream;  // until it is cached: allocated on this stream, maybe not yet in its order elsewhere
    g->bytes = static_cast<size_t>(plugin->api().graph_memory_bytes(plan, rebind_mode()));
    if (g->bytes) {
      g->memory = mr->allocate(g->bytes, 256, stream);
      if (!g->memory)
        return resource_exhausted(fn_name + ": the CUDA graph's workspace of " + std::to_string(g->bytes) + " bytes could not be allocated from " +
                                  mr->name() + (MemoryResource::last_failure().empty() ? "" : ": " + MemoryResource::last_failure()));
    }
    char err[kErr] = {0};
    if (int32_t code = plugin->api().graph_create(plan, rebind_mode(), g->memory, &g->graph, err, sizeof err))
      return plugin_status(code, err, fn_name + ": making its CUDA graph");
    g->free_stream = nullptr;
    graphs[stream] = g;
    return g;
  }

  // After a failed capture: this stream runs the plan directly from now on.
  void drop_graph(void* stream) {
    auto failed = std::make_shared<GraphEntry>();
    failed->plugin = plugin;
    std::lock_guard<std::mutex> lock(graphs_mu);
    auto it = graphs.find(stream);
    if (it != graphs.end()) it->second->free_stream = stream;  // the caller still holds it: freed on its stream
    graphs[stream] = failed;  // the old entry is freed when its last user lets go
  }

  ~DevicePlan() {
    graphs.clear();  // before the plan they replay
    if (plan) plugin->api().plan_destroy(plan);
  }
};

namespace {

// The device every device-resident parameter or result of `e` lives on (a
// plan runs on one device; the checker and the planner enforce it too).
int32_t entry_device(const EntrySig& e) {
  for (const ParamSig& p : e.params)
    if (p.type.device.kind == types::Device::Kind::Cuda) return p.type.device.ordinal;
  for (const auto& r : e.returns)
    if (r.device.kind == types::Device::Kind::Cuda) return r.device.ordinal;
  return 0;
}

// One stream-ordered pool resource per device for outputs and workspaces
// when the call's resource is host memory (the module's default).
Result<MemoryResourcePtr> default_device_resource(int32_t device) {
  static std::mutex mu;
  static std::map<int32_t, MemoryResourcePtr> by_device;
  std::lock_guard<std::mutex> lock(mu);
  auto it = by_device.find(device);
  if (it != by_device.end()) return it->second;
  // Keep freed memory in the pool (no release to the driver between calls):
  // a warmed-up call then allocates nothing from the driver.
  auto r = make_cuda_async_resource(device, UINT64_MAX);
  if (!r) return r.status();
  by_device[device] = *r;
  return *r;
}

bool on_device(const types::TensorType& t) { return t.device.kind == types::Device::Kind::Cuda; }

}  // namespace

Result<Module::DevicePlan*> Module::device_plan(Slot& slot, const EntrySig& e, int32_t device) {
  std::lock_guard<std::mutex> lock(slot.init);
  if (slot.plan) return slot.plan.get();
  auto plugin = cuda_plugin();
  if (!plugin) return plugin.status();
  auto text = provider_->plan_text(slot.symbol);
  if (!text) return Status(text.status().code(), origin_ + ": entry `" + e.name + "`: " + text.status().message());
  auto p = std::make_shared<DevicePlan>();
  p->plugin = *plugin;
  p->device = device;
  char err[kErr] = {0};
  obs::Span span("runtime", "gpu plan create");
  if (int32_t code = (*plugin)->api().plan_create(device, text->c_str(), &p->plan, err, sizeof err))
    return plugin_status(code, err, origin_ + ": entry `" + e.name + "`: preparing its dispatch plan");
  p->workspace = (*plugin)->api().plan_workspace_bytes(p->plan);
  if (p->workspace < 0) return internal_error(origin_ + ": entry `" + e.name + "`: the plugin reports no workspace size");
  char why[kErr] = {0};
  p->graph_mode = (*plugin)->api().plan_graph(p->plan, why, sizeof why);
  p->graph_why = why;
  slot.plan = std::move(p);
  return slot.plan.get();
}

Result<bool> use_graph(GraphOption option, int32_t plan_graph, const std::string& why, const std::string& entry) {
  switch (option) {
    case GraphOption::Off: return false;
    case GraphOption::Default: return plan_graph == 1;
    case GraphOption::On:
      if (plan_graph < 0)
        return failed_precondition(entry + ": graph replay was asked for (SHAPEML_GRAPH_ON), but its plan cannot be captured in a CUDA graph: " + why);
      return true;
  }
  return invalid_argument(entry + ": unknown graph option " + std::to_string(static_cast<int32_t>(option)));
}

namespace {

// Orders a call on `own` (a stream shapeml owns) against its tensors: waits
// for the inputs' pending writers on other streams, and records the use of
// tensors whose memory lives on another stream, so that their release waits
// for this call (Tensor::note_use_on). `runtime_stream` stands for a home of
// NULL.
Status order_on_stream(int32_t device, const StreamRef& own, void* runtime_stream, std::span<Tensor* const> inputs,
                       const std::vector<TensorRef>& results, const std::string& fn_name) {
  auto order = [&](const Tensor& t, bool read) -> Status {
    if (t.dl().device.device_type != kDLCUDA) return {};
    if (read) {
      StreamRef w = t.writer();
      if (w.stream && w.stream != own.stream)
        if (Status st = device_order_after(device, own.stream, w.stream); !st.ok())
          return Status(st.code(), fn_name + ": waiting for the work that writes an input: " + st.message());
    }
    void* home = t.home_stream() ? t.home_stream() : runtime_stream;
    if (home != own.stream) t.note_use_on(own);
    return {};
  };
  for (Tensor* t : inputs)
    if (Status st = order(*t, true); !st.ok()) return st;
  for (const TensorRef& t : results)
    if (Status st = order(*t, false); !st.ok()) return st;
  return {};
}

Status finish_device_call(const CudaPlugin& plugin, void* stream, bool host_result, const std::string& fn_name, std::vector<TensorRef>& results,
                          std::vector<TensorRef>& outputs, const StreamRef& writer) {
  // The device results may still be being written by the enqueued work:
  // later readers on other streams (and copies) wait for `writer`. For a
  // caller's stream, the caller orders (empty writer).
  for (const TensorRef& t : results)
    if (t->dl().device.device_type == kDLCUDA) t->set_writer(writer);
  if (host_result) {
    char serr[kErr] = {0};
    if (int32_t c = plugin.api().stream_synchronize(stream, serr, sizeof serr))
      return plugin_status(c, serr, fn_name + ": waiting for a result copied to the host");
  }
  outputs = std::move(results);
  return Status();
}

}  // namespace

Status Module::call_device(const EntrySig& e, std::span<Tensor* const> inputs, std::vector<TensorRef>& outputs, const CallOptions& options) {
  std::string fn_name = "entry `" + e.name + "`";
  auto plugin = cuda_plugin();
  if (!plugin) return Status(plugin.status().code(), fn_name + " runs on a CUDA device: " + plugin.status().message());
  int32_t device = entry_device(e);
  if (Status st = (*plugin)->check_device(device, "call"); !st.ok()) return st;
  // The call's stream. Work on a stream shapeml owns (the module's context's,
  // or the runtime's) is ordered here against the inputs' writers and the
  // outputs' memory; a caller's stream is ordered by the caller (shapeml.h).
  auto runtime_stream = (*plugin)->default_stream(device);
  if (!runtime_stream) return runtime_stream.status();
  StreamRef call_stream;
  bool owned = true;
  if (options.stream) {
    call_stream.stream = options.stream;
    owned = options.stream == *runtime_stream || (streams_ && streams_->owns(options.stream));
    if (owned && options.stream != *runtime_stream) call_stream.owner = streams_;
  } else if (streams_) {
    auto s = streams_->stream(device);
    if (!s) return Status(s.status().code(), fn_name + ": " + s.status().message());
    call_stream = {*s, streams_};
  } else {
    call_stream.stream = *runtime_stream;
  }
  if (!options.outputs.empty() && options.outputs.size() != e.returns.size())
    return invalid_argument(fn_name + " returns " + std::to_string(e.returns.size()) + " tensor(s), but " +
                            std::to_string(options.outputs.size()) + " outputs were provided");
  auto shapes = check_inputs(e, inputs, fn_name);
  if (!shapes) return shapes.status();
  auto b = bind_shape_variables(e, *shapes, options.dims);
  if (!b) return b.status();

  // Device memory for outputs and the workspace: the call's resource when it
  // is memory of this device, else the runtime's pool for the device.
  MemoryResourcePtr mr = options.memory ? options.memory : memory_;
  MemoryResourcePtr dev_mr = mr;
  if (!dev_mr || dev_mr->device().device_type != kDLCUDA || dev_mr->device().device_id != device) {
    auto d = default_device_resource(device);
    if (!d) return d.status();
    dev_mr = *d;
  }
  MemoryResourcePtr host_mr = mr && mr->device().device_type == kDLCPU ? mr : host_memory_resource();

  std::vector<TensorRef> results;
  bool host_result = false;
  for (size_t k = 0; k < e.returns.size(); ++k) {
    const types::TensorType& rt = e.returns[k];
    auto shape = evaluate_shape(rt.shape, *b);
    if (!shape) return Status(shape.status().code(), fn_name + ": result " + std::to_string(k) + ": " + shape.status().message());
    host_result |= !on_device(rt);
    if (!options.outputs.empty()) {  // destination passing: the plan writes into the caller's tensors
      if (Status st = check_provided_output(e, *b, k, *shape, inputs, options.outputs, fn_name); !st.ok()) return st;
      results.push_back(TensorRef::share(options.outputs[k]));
      continue;
    }
    // A device output of an owned stream is allocated in order on it (usable
    // there at once, no wait); otherwise as any new tensor (the runtime's
    // stream, synchronized: usable on the caller's stream).
    auto t = on_device(rt) && owned ? Tensor::create_on_stream(rt.dtype, *shape, dev_mr, call_stream)
                                    : Tensor::create(rt.dtype, *shape, on_device(rt) ? dev_mr : host_mr, /*zero=*/false);
    if (!t) return Status(t.status().code(), fn_name + ": result " + std::to_string(k) + ": " + t.status().message());
    results.push_back(std::move(t).value());
  }

  auto lease = acquire(e, *b);
  if (!lease) return lease.status();
  auto plan = device_plan(lease->slot(), e, device);
  if (!plan) return plan.status();

  if (owned)
    if (Status st = order_on_stream(device, call_stream, *runtime_stream, inputs, results, fn_name); !st.ok()) return st;

  std::vector<void*> buffers;
  for (Tensor* t : inputs) buffers.push_back(t->data());
  for (const TensorRef& t : results) buffers.push_back(t->data());
  auto graph = use_graph(options.graph, (*plan)->graph_mode, (*plan)->graph_why, fn_name);
  if (!graph) return graph.status();
  const bool strict = options.graph == GraphOption::On;
  // The caller is capturing this stream into a graph of its own: the plan's
  // launches go into that capture directly. Making a cached graph now would
  // allocate its workspace inside the caller's capture.
  int32_t capturing = 0;
  if (*graph && (*plugin)->api().stream_capturing) {
    char err[kErr] = {0};
    if (int32_t code = (*plugin)->api().stream_capturing(call_stream.stream, &capturing, err, sizeof err))
      return plugin_status(code, err, fn_name + ": asking whether its stream is being captured");
    if (capturing && strict)
      return failed_precondition(fn_name + ": graph replay was asked for (SHAPEML_GRAPH_ON), but the call's stream is being captured into the "
                                           "caller's CUDA graph: the plan's launches can only go into that capture (SHAPEML_GRAPH_DEFAULT)");
  }
  if (*graph && !capturing) {
    auto g = (*plan)->graph_for(call_stream.stream, dev_mr, fn_name);
    if (!g && strict) return g.status();
    if (g && *g) {
      char err[kErr] = {0};
      int32_t ran = 0;
      obs::Span span("runtime", "gpu graph replay");
      int32_t code = (*plugin)->api().graph_execute((*g)->graph, buffers.data(), call_stream.stream, &ran, err, sizeof err);
      if (code && (ran || strict)) return plugin_status(code, err, fn_name + ": replaying its dispatch plan as a CUDA graph");
      if (code) (*plan)->drop_graph(call_stream.stream);  // Default: documented fallback to direct execution
      if (ran) return finish_device_call(**plugin, call_stream.stream, host_result, fn_name, results, outputs, owned ? call_stream : StreamRef{});
      // Not enqueued (a failed capture, or the stream is being captured by
      // the caller): run directly below.
    } else if (strict && g) {
      return failed_precondition(fn_name + ": graph replay was asked for (SHAPEML_GRAPH_ON), but no graph is available on this stream (its capture "
                                           "failed before, or the plan already keeps graphs for " + std::to_string(kMaxGraphStreams) + " streams)");
    }
  }
  void* workspace = nullptr;
  size_t ws = static_cast<size_t>((*plan)->workspace);
  if (ws) {
    workspace = dev_mr->allocate(ws, 256, call_stream.stream);
    if (!workspace)
      return resource_exhausted(fn_name + ": the plan's workspace of " + std::to_string(ws) + " bytes could not be allocated from " +
                                dev_mr->name() + (MemoryResource::last_failure().empty() ? "" : ": " + MemoryResource::last_failure()));
  }
  char err[kErr] = {0};
  int32_t code;
  {
    obs::Span span("runtime", "gpu plan execute");
    code = (*plugin)->api().plan_execute((*plan)->plan, buffers.data(), workspace, call_stream.stream, err, sizeof err);
  }
  // Stream-ordered: the workspace is reused only by work enqueued after the plan.
  if (workspace) dev_mr->deallocate(workspace, ws, 256, call_stream.stream);
  if (code) return plugin_status(code, err, fn_name + ": executing its dispatch plan");
  return finish_device_call(**plugin, call_stream.stream, host_result, fn_name, results, outputs, owned ? call_stream : StreamRef{});
}

}  // namespace shapeml::runtime
