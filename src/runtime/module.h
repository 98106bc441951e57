// A runtime Module: the entry points of a compiled program (its manifest),
// the code behind them (a CodeProvider), and the memory resource its outputs
// come from. Module::call checks inputs against an entry's shape-polymorphic
// signature, binds its shape variables, finds (or asks for) the matching
// specialization, allocates the outputs (or checks the caller's) and runs the
// machine code.
//
// Thread safety: a Module may be called from several threads at once. The
// specialization cache is a map from binding to a slot, guarded by a
// module-wide mutex that is held only to find, insert or evict a slot, never
// while code is compiled or run. Each slot is initialized once under its own
// mutex: a call that needs a binding being compiled waits for that binding
// only; calls of bindings already compiled never wait for a compile.
#pragma once
#include <atomic>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/compiled_entry.h"
#include "runtime/code_provider.h"
#include "runtime/context_streams.h"
#include "runtime/manifest.h"
#include "runtime/memory_resource.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace shapeml::runtime {

/// Whether a device call replays its plan as a CUDA graph
/// (shapeml_call_options.graph; docs/design/cuda-graphs.md).
enum class GraphOption : int32_t {
  Default = 0,  ///< as the plan says (its `graph` line); a failed capture falls back to direct execution
  On = 1,       ///< replay even if the plan says off by choice; a plan that cannot be captured, or a failed capture, is an error
  Off = 2,      ///< run the launches directly
};

/// Per-call options (shapeml_call_options without the ABI).
struct CallOptions {
  /// Outputs and the runtime's own temporaries come from here; NULL: the module's resource.
  MemoryResourcePtr memory;
  /// Caller-provided outputs, one per result (empty: allocate new ones).
  std::span<Tensor* const> outputs;
  /// Device entries: the cudaStream_t the plan is enqueued on (NULL: the
  /// module's default stream: its context's stream for the device, or the
  /// runtime's for a module without one). The call returns once the work is
  /// enqueued, except that results on the host are complete on return.
  void* stream = nullptr;
  /// Device entries: CUDA graph replay of the plan.
  GraphOption graph = GraphOption::Default;
  /// Host entries: threads for the parallel loops of the generated code
  /// (parallel_for.h); 0: default_num_threads(), 1: the calling thread only.
  int32_t threads = 0;
  /// The values of the entry's `(given ...)` shape variables (spec §4.19):
  /// exactly those, each >= 1; the others are inferred from the inputs.
  Binding dims;
};

/// The graph decision of one device call: `plan_graph` is what the plan
/// says (1 replay, 0 off by choice, -1 cannot be captured, `why` the
/// reason). True: replay; false: direct execution; FAILED_PRECONDITION for
/// GraphOption::On on a plan that cannot be captured (naming `entry`).
Result<bool> use_graph(GraphOption option, int32_t plan_graph, const std::string& why, const std::string& entry);

class Module {
 public:
  /// Default specialization cache capacity (JIT-made specializations).
  static constexpr size_t kDefaultCacheCapacity = 64;

  /// A module over `provider` described by `manifest_text`. Every symbol
  /// the manifest names is resolved now (INVALID_ARGUMENT naming it when the
  /// provider lacks one). `origin` names the module in messages; `memory`
  /// (NULL: host) is where outputs are allocated; `cache_capacity` (0: the
  /// default) bounds the specializations made by the provider.
  static Result<std::shared_ptr<Module>> create(const std::string& manifest_text, std::unique_ptr<CodeProvider> provider,
                                                const std::string& origin, MemoryResourcePtr memory = nullptr, size_t cache_capacity = 0);

  /// Loads an ahead-of-time compiled shared object (DlopenCodeProvider).
  static Result<std::shared_ptr<Module>> load(const std::string& path, MemoryResourcePtr memory = nullptr);

  const Manifest& manifest() const { return manifest_; }
  /// The module ID (docs/design/observability.md): the manifest's
  /// (module-id ...), or for a module built without one a hash of its name
  /// and manifest. Every trace span of the module's work carries it.
  const std::string& id() const { return id_; }
  const std::string& origin() const { return origin_; }
  const MemoryResourcePtr& memory_resource() const { return memory_; }
  /// The streams device calls without a stream of their own run on: a
  /// context's (set once, by the context that compiled the module, before the
  /// module is shared); NULL: the runtime's stream of each device.
  void set_default_streams(ContextStreamsPtr streams) { streams_ = std::move(streams); }
  size_t cache_capacity() const { return capacity_; }

  /// Runs `entry` on `inputs` (one per parameter, in order). On success
  /// `outputs` is replaced by the results (new tensors from the memory
  /// resource, or new references to the caller-provided ones); on failure it
  /// is left unchanged. Errors:
  ///   NOT_FOUND          no such entry; no specialization for the binding
  ///                      and the provider cannot make one
  ///   INVALID_ARGUMENT   wrong input count, a NULL input, wrong dtype, rank,
  ///                      device, non-contiguous data, a dimension that does
  ///                      not match, a violated `where` constraint; a
  ///                      provided output of the wrong count, dtype, shape,
  ///                      device or layout, or overlapping an input
  ///   FAILED_PRECONDITION a read-only provided output
  ///   UNAVAILABLE        a device entry, and no CUDA plugin/driver/GPU
  ///   RESOURCE_EXHAUSTED an output could not be allocated, a shape is too large
  ///   OUT_OF_RANGE       an index of `gather`/`take_along_axis` was outside its
  ///                      range (docs/design/index-checks.md); the outputs are
  ///                      then unspecified (provided ones may have been written)
  ///   INTERNAL           code generation failed
  /// Inputs whose data is not 64-byte aligned are copied to aligned memory
  /// first (the compiled code requires it), and unaligned provided outputs
  /// are computed into aligned memory and copied back; inputs are never modified.
  Status call(const EntrySig& entry, std::span<Tensor* const> inputs, std::vector<TensorRef>& outputs, const CallOptions& options);
  Status call(const std::string& entry, std::span<const TensorRef> inputs, std::vector<TensorRef>& outputs);
  Status call(const std::string& entry, std::span<Tensor* const> inputs, std::vector<TensorRef>& outputs);
  Status call(const std::string& entry, std::initializer_list<TensorRef> inputs, std::vector<TensorRef>& outputs) {
    return call(entry, std::span<const TensorRef>(inputs.begin(), inputs.size()), outputs);
  }

  /// Makes sure `entry` has a specialization for `binding` (checked with
  /// check_binding first): compiles it now when the provider can, else
  /// NOT_FOUND when the module lacks it.
  Status specialize(const EntrySig& entry, const Binding& binding);

  /// Number of resolved specializations of `entry` (listed in the manifest
  /// or made by the provider and still cached).
  size_t specialization_count(const std::string& entry) const;

 private:
  /// A device specialization's executable plan (the plugin's), made on the
  /// first call so that loading a module loads no CUDA library.
  struct DevicePlan;
  struct Slot {
    std::mutex init;                  // held while this binding is compiled
    std::atomic<bool> ready{false};   // fn (or symbol, for a device entry) is set (release/acquire)
    common::CompiledEntryFn fn = nullptr;
    std::shared_ptr<DevicePlan> plan;  // device entries: guarded by `init`, set once
    std::string symbol;               // provider symbol (JIT-made, or a device entry's plan)
    std::optional<Status> failed;     // the compile failed (seen by waiters)
    bool pinned = false;              // from the manifest: never evicted
    // Guarded by Module::mu_:
    size_t in_use = 0;
    uint64_t last_use = 0;
  };
  /// A slot held by a running call; evictions skip it until it is dropped.
  class Lease {
   public:
    Lease(Module* m, std::shared_ptr<Slot> s) : m_(m), s_(std::move(s)) {}
    Lease(Lease&& o) noexcept : m_(o.m_), s_(std::move(o.s_)) {}
    Lease(const Lease&) = delete;
    ~Lease();
    common::CompiledEntryFn fn() const { return s_->fn; }
    Slot& slot() const { return *s_; }

   private:
    Module* m_;
    std::shared_ptr<Slot> s_;
  };

  Module() = default;
  Status not_found_error(const EntrySig& e, const Binding& b) const;
  Result<Lease> acquire(const EntrySig& e, const Binding& b);
  /// The inputs' shapes after checking count, NULL, dtype, rank, placement
  /// (host or the parameter's CUDA device) and layout (host and device calls).
  static Result<std::vector<std::span<const int64_t>>> check_inputs(const EntrySig& e, std::span<Tensor* const> inputs,
                                                                    const std::string& fn_name);
  /// A caller-provided output `outputs[k]` for result k of concrete `shape`:
  /// dtype, shape, placement (host or the result's CUDA device), layout,
  /// writable, no overlap with an input or an earlier output.
  static Status check_provided_output(const EntrySig& e, const Binding& b, size_t k, const std::vector<int64_t>& shape,
                                      std::span<Tensor* const> inputs, std::span<Tensor* const> outputs, const std::string& fn_name);
  /// Module::call without the trace scope and the error context.
  Status call_unscoped(const EntrySig& entry, std::span<Tensor* const> inputs, std::vector<TensorRef>& outputs, const CallOptions& options);
  /// Module::call for an entry that lives on a CUDA device (module_device.cpp).
  Status call_device(const EntrySig& e, std::span<Tensor* const> inputs, std::vector<TensorRef>& outputs, const CallOptions& options);
  /// The slot's plan, created through the plugin on first use.
  Result<DevicePlan*> device_plan(Slot& slot, const EntrySig& e, int32_t device);
  void evict_locked();

  /// Adds the module, its ID and the entry to a failed call's message.
  Status with_context(Status st, const EntrySig& e) const;

  Manifest manifest_;
  std::string id_;
  std::string origin_;
  std::unique_ptr<CodeProvider> provider_;
  MemoryResourcePtr memory_;
  ContextStreamsPtr streams_;
  size_t capacity_ = kDefaultCacheCapacity;
  mutable std::mutex mu_;
  std::map<std::string, std::map<Binding, std::shared_ptr<Slot>>> cache_;  // entry -> binding -> slot
  /// The instances of generic entries made so far (entry -> dtype/device
  /// binding -> instance); never removed, so references stay valid.
  std::map<std::string, std::map<Binding, std::unique_ptr<EntrySig>>> instances_;
  /// The instance of generic `e` at `type_bind`, made on first use.
  Result<const EntrySig*> instance(const EntrySig& e, const Binding& type_bind);
  size_t made_ = 0;   // slots made by the provider (counted against capacity_)
  uint64_t tick_ = 0; // LRU clock
};

}  // namespace shapeml::runtime
