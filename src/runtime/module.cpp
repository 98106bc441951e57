#include "runtime/module.h"
#include "runtime/cpu_level.h"
#include "runtime/parallel_for.h"
#include "runtime/temp_memory.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "obs/log.h"
#include "obs/trace.h"
#include "runtime/dlopen_provider.h"
#include "runtime/shape_binding.h"

namespace shapeml::runtime {

Result<std::shared_ptr<Module>> Module::create(const std::string& manifest_text, std::unique_ptr<CodeProvider> provider,
                                               const std::string& origin, MemoryResourcePtr memory, size_t cache_capacity) {
  return guarded("Module::create", [&]() -> Result<std::shared_ptr<Module>> {
    if (!provider) return invalid_argument(origin + ": no code provider");
    obs::Span span("runtime", "module create");
    auto m = parse_manifest(manifest_text, origin);
    if (!m) return m.status();
    if (std::string missing = missing_cpu_features(m.value().target); !missing.empty())
      return failed_precondition(origin + ": built for " + m.value().target + ", which this CPU cannot run (it lacks " + missing +
                                 "); build it for x86-64 or x86-64-v3 instead");
    std::shared_ptr<Module> mod(new Module());
    mod->manifest_ = std::move(m).value();
    mod->id_ = !mod->manifest_.module_id.empty() ? mod->manifest_.module_id : obs::module_id_for(mod->manifest_.name, manifest_text);
    if (span) span.arg("module", mod->id_).arg("module_name", mod->manifest_.name).arg("origin", origin);
    SHAPEML_LOG_AT(Runtime, Info, "module created", {"module", mod->id_}, {"name", mod->manifest_.name}, {"origin", origin},
                   {"entries", std::to_string(mod->manifest_.entries.size())});
    mod->origin_ = origin;
    mod->provider_ = std::move(provider);
    mod->memory_ = memory ? std::move(memory) : host_memory_resource();
    mod->capacity_ = cache_capacity ? cache_capacity : kDefaultCacheCapacity;
    for (const EntrySig& e : mod->manifest_.entries) {
      auto& slots = mod->cache_[e.name];
      for (const SpecializationSig& s : e.specializations) {
        void* fn = mod->provider_->lookup(s.symbol);
        if (!fn)
          return invalid_argument(origin + ": the manifest names symbol `" + s.symbol + "` for entry `" + e.name + "` (" +
                                  binding_str(e, s.bind) + "), but the module does not export it");
        auto slot = std::make_shared<Slot>();
        if (s.gpu_plan) {  // (a generic entry's specializations say it each: its device is the binding's)
          slot->symbol = s.symbol;  // a plan getter, not code
        } else {
          slot->fn = reinterpret_cast<common::CompiledEntryFn>(fn);
          // Temporaries from the call's memory resource (temp_memory.h); modules made before 0.5 have no table.
          if (void* hooks = mod->provider_->lookup(s.symbol + "_temp_hooks")) install_temp_hooks(hooks);
          // Parallel loops on the runtime's threads (parallel_for.h); modules made before 0.5 run them inline.
          if (void* hooks = mod->provider_->lookup(s.symbol + "_parallel_hooks")) install_parallel_hooks(hooks);
        }
        slot->pinned = true;
        slot->ready.store(true, std::memory_order_release);
        slots[s.bind] = std::move(slot);
      }
    }
    return mod;
  });
}

Result<std::shared_ptr<Module>> Module::load(const std::string& path, MemoryResourcePtr memory) {
  return guarded("Module::load", [&]() -> Result<std::shared_ptr<Module>> {
    obs::Span span("runtime", "module load");
    if (span) span.arg("path", path);
    auto p = DlopenCodeProvider::open(path);
    if (!p) return p.status();
    std::string manifest = (*p)->manifest();
    const uint32_t code_abi = (*p)->code_abi();
    auto m = create(manifest, std::move(p).value(), path, std::move(memory));
    // One shapemlc build writes both; a file whose code and manifest
    // disagree was put together by hand or by two builds.
    if (m && (*m)->manifest().abi != code_abi)
      return incompatible_module(path + ": its code exports module ABI version " + std::to_string(code_abi) + " but its manifest declares (abi " +
                                 std::to_string((*m)->manifest().abi) + "); rebuild it with one shapemlc");
    return m;
  });
}

size_t Module::specialization_count(const std::string& entry) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(entry);
  if (it == cache_.end()) return 0;
  size_t n = 0;
  for (const auto& [b, slot] : it->second) n += slot->ready.load(std::memory_order_acquire) ? 1 : 0;
  return n;
}

Module::Lease::~Lease() {
  if (!s_) return;
  std::lock_guard<std::mutex> lock(m_->mu_);
  --s_->in_use;
}

Status Module::not_found_error(const EntrySig& e, const Binding& b) const {
  std::string have;
  for (const SpecializationSig& s : e.specializations) have += std::string(have.empty() ? "" : "; ") + binding_str(e, s.bind);
  return not_found(origin_ + ": entry `" + e.name + "` has no specialization for " + binding_str(e, b) +
                   " (compiled ahead of time: " + (have.empty() ? "none" : have) + ")");
}

// Evicts least recently used, provider-made, ready slots that no call holds
// until the count is within the capacity (or nothing more can go).
void Module::evict_locked() {
  while (made_ > capacity_) {
    std::map<Binding, std::shared_ptr<Slot>>* where = nullptr;
    std::map<Binding, std::shared_ptr<Slot>>::iterator victim;
    for (auto& [name, slots] : cache_)
      for (auto it = slots.begin(); it != slots.end(); ++it) {
        const Slot& s = *it->second;
        if (s.pinned || s.in_use || !s.ready.load(std::memory_order_acquire)) continue;
        if (!where || s.last_use < victim->second->last_use) where = &slots, victim = it;
      }
    if (!where) return;  // every one is running: grow past the capacity for now
    std::string symbol = victim->second->symbol;
    where->erase(victim);
    --made_;
    provider_->release(symbol);
  }
}

Result<Module::Lease> Module::acquire(const EntrySig& e, const Binding& b) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slots = cache_[e.name];
    auto it = slots.find(b);
    if (it != slots.end()) {
      slot = it->second;
    } else {
      if (!provider_->can_specialize()) return not_found_error(e, b);
      slot = std::make_shared<Slot>();
      slots.emplace(b, slot);
      ++made_;
    }
    ++slot->in_use;
    slot->last_use = ++tick_;
    evict_locked();
  }
  Lease lease(this, slot);
  if (slot->ready.load(std::memory_order_acquire)) return Result<Lease>(std::move(lease));
  // Once-initialization of this binding: other bindings are not blocked.
  std::lock_guard<std::mutex> init(slot->init);
  if (slot->ready.load(std::memory_order_acquire)) return Result<Lease>(std::move(lease));
  if (slot->failed) return *slot->failed;
  auto fail = [&](Status st) -> Status {
    slot->failed = st;
    std::lock_guard<std::mutex> lock(mu_);
    auto& slots = cache_[e.name];
    auto it = slots.find(b);
    if (it != slots.end() && it->second == slot) {
      slots.erase(it);  // a later call tries again
      --made_;
    }
    return st;
  };
  std::string symbol;
  obs::Span span("runtime", "specialize");
  if (span) span.arg("binding", binding_str(e, b));
  SHAPEML_LOG_AT(Runtime, Debug, "specializing", {"module", id_}, {"entry", e.name}, {"binding", binding_str(e, b)});
  Status st = provider_->specialize(e.name, b, symbol);
  if (!st.ok())
    return fail(Status(st.code(), origin_ + ": entry `" + e.name + "` could not be specialized for " + binding_str(e, b) + ": " + st.message()));
  if (e.device) {  // a dispatch plan: its text is fetched when the plan is made
    slot->symbol = symbol;
    slot->ready.store(true, std::memory_order_release);
    return Result<Lease>(std::move(lease));
  }
  void* fn = provider_->lookup(symbol);
  if (!fn)
    return fail(internal_error(origin_ + ": the code provider specialized `" + e.name + "` as `" + symbol + "` but cannot resolve that symbol"));
  slot->fn = reinterpret_cast<common::CompiledEntryFn>(fn);
  if (void* hooks = provider_->lookup(symbol + "_temp_hooks")) install_temp_hooks(hooks);
  if (void* hooks = provider_->lookup(symbol + "_parallel_hooks")) install_parallel_hooks(hooks);
  slot->symbol = symbol;
  slot->ready.store(true, std::memory_order_release);
  return Result<Lease>(std::move(lease));
}

Result<const EntrySig*> Module::instance(const EntrySig& e, const Binding& type_bind) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = instances_[e.name][type_bind];
  if (!slot) {
    auto made = instantiate_entry(e, type_bind);
    if (!made) {
      instances_[e.name].erase(type_bind);
      return made.status();
    }
    slot = std::make_unique<EntrySig>(std::move(made).value());
  }
  return static_cast<const EntrySig*>(slot.get());
}

Status Module::specialize(const EntrySig& e, const Binding& b) {
  return guarded("Module::specialize", [&]() -> Status {
    if (e.generic()) {  // the binding names the instance: its dtype and device values
      Binding tb;
      for (const auto& [v, set] : e.dtype_vars)
        if (b.count(v)) tb[v] = b.at(v);
      for (const auto& v : e.device_vars)
        if (b.count(v)) tb[v] = b.at(v);
      auto inst = instance(e, tb);
      if (!inst) return inst.status();
      return specialize(**inst, b);
    }
    if (Status s = check_binding(e, b); !s.ok()) return s;
    auto lease = acquire(e, b);
    return lease.ok() ? Status() : lease.status();
  });
}

Status Module::call(const std::string& entry, std::span<const TensorRef> inputs, std::vector<TensorRef>& outputs) {
  return guarded("Module::call", [&]() -> Status {
    std::vector<Tensor*> raw;
    raw.reserve(inputs.size());
    for (const TensorRef& t : inputs) raw.push_back(t.get());
    return call(entry, std::span<Tensor* const>(raw), outputs);
  });
}

Status Module::call(const std::string& entry, std::span<Tensor* const> inputs, std::vector<TensorRef>& outputs) {
  return guarded("Module::call", [&]() -> Status {
    const EntrySig* e = manifest_.find(entry);
    if (!e) {
      std::string names;
      for (const EntrySig& x : manifest_.entries) names += (names.empty() ? "" : ", ") + x.name;
      return not_found(origin_ + ": no entry `" + entry + "` (entries: " + (names.empty() ? "none" : names) + ")");
    }
    return call(*e, inputs, outputs, CallOptions{});
  });
}

Result<std::vector<std::span<const int64_t>>> Module::check_inputs(const EntrySig& e, std::span<Tensor* const> inputs,
                                                                   const std::string& fn_name) {
  if (inputs.size() != e.params.size())
    return invalid_argument(fn_name + " takes " + std::to_string(e.params.size()) + " input" + (e.params.size() == 1 ? "" : "s") + ", got " +
                            std::to_string(inputs.size()));
  std::vector<std::span<const int64_t>> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ParamSig& p = e.params[i];
    const Tensor* t = inputs[i];
    std::string what = fn_name + ": input " + std::to_string(i) + " (`" + p.name + "`)";
    if (!t) return invalid_argument(what + " is NULL");
    if (t->dtype() != p.type.dtype)
      return invalid_argument(what + " has dtype " + std::string(types::dtype_name(t->dtype())) + ", expected " +
                              std::string(types::dtype_name(p.type.dtype)) + " (type " + p.type.str() + ")");
    if (static_cast<size_t>(t->ndim()) != p.type.rank())
      return invalid_argument(what + " has rank " + std::to_string(t->ndim()) + " (shape " + t->type_str() + "), expected rank " +
                              std::to_string(p.type.rank()) + " (type " + p.type.str() + ")");
    bool cuda = p.type.device.kind == types::Device::Kind::Cuda;
    DLDevice want = cuda ? DLDevice{kDLCUDA, p.type.device.ordinal} : DLDevice{kDLCPU, 0};
    if (t->dl().device.device_type != want.device_type || (cuda && t->dl().device.device_id != want.device_id))
      return invalid_argument(what + " is on device " + dl_device_str(t->dl().device) + ", expected " + types::device_name(p.type.device) +
                              (cuda ? " (copy it with shapeml_tensor_copy_to_device)" : ""));
    if (!t->is_contiguous()) return invalid_argument(what + " is not contiguous (row-major); make a contiguous copy first");
    shapes.push_back(t->shape());
  }
  return shapes;
}

namespace {

bool overlaps(const Tensor& a, const Tensor& b) {
  if (!a.data() || !b.data() || !a.nbytes() || !b.nbytes()) return false;
  auto a0 = reinterpret_cast<uintptr_t>(a.data()), b0 = reinterpret_cast<uintptr_t>(b.data());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kMinAlignment == 0; }

struct AlignedFree {
  void operator()(int64_t* p) const { ::operator delete(p, std::align_val_t{kMinAlignment}); }
};

// OUT_OF_RANGE from a filled error record {site, index, bound, coords...}:
// "gather at model.sml:12:15: index 70 is out of range [0, 64) at idx[1, 3]".
Status index_error(const EntrySig& e, const int64_t* rec, size_t size) {
  int64_t id = rec[0];
  if (id < 1 || static_cast<size_t>(id) > e.index_sites.size())
    return internal_error("entry `" + e.name + "`: the error record names index check " + std::to_string(id) + ", which the manifest lacks");
  const IndexSite& s = e.index_sites[static_cast<size_t>(id) - 1];
  std::string at = s.operand.empty() ? "the indices" : s.operand;
  at += "[";
  for (size_t i = 0; i < s.rank && 3 + i < size; ++i) at += (i ? ", " : "") + std::to_string(rec[3 + i]);
  at += "]";
  return out_of_range("entry `" + e.name + "`: " + s.op + " at " + s.location + ": index " + std::to_string(rec[1]) + " is out of range [0, " +
                      std::to_string(rec[2]) + ") at " + at + " (indices are not wrapped: a negative index is out of range too)");
}

}  // namespace

Status Module::check_provided_output(const EntrySig& e, const Binding& b, size_t k, const std::vector<int64_t>& shape,
                                     std::span<Tensor* const> inputs, std::span<Tensor* const> outputs, const std::string& fn_name) {
  const types::TensorType& rt = e.returns[k];
  const Tensor* t = outputs[k];
  std::string what = fn_name + ": provided output " + std::to_string(k);
  if (!t) return invalid_argument(what + " is NULL");
  std::string want = "(tensor " + std::string(types::dtype_name(rt.dtype)) + " (";
  for (size_t j = 0; j < shape.size(); ++j) want += (j ? " " : "") + std::to_string(shape[j]);
  want += ") " + types::device_name(rt.device) + ")";
  if (t->dtype() != rt.dtype || !std::equal(t->shape().begin(), t->shape().end(), shape.begin(), shape.end()))
    return invalid_argument(what + " is " + t->type_str() + ", expected " + want + " (result type " + rt.str() + " with " + binding_str(e, b) +
                            ")");
  bool cuda = rt.device.kind == types::Device::Kind::Cuda;
  if (t->dl().device.device_type != (cuda ? kDLCUDA : kDLCPU) || (cuda && t->dl().device.device_id != rt.device.ordinal))
    return invalid_argument(what + " is on device " + dl_device_str(t->dl().device) + ", expected " + types::device_name(rt.device));
  if (!t->is_contiguous()) return invalid_argument(what + " is not contiguous (row-major)");
  if (t->is_read_only()) return failed_precondition(what + " is read-only; a call writes its outputs");
  for (size_t i = 0; i < inputs.size(); ++i)
    if (overlaps(*t, *inputs[i]))
      return invalid_argument(what + " overlaps input " + std::to_string(i) + " (`" + e.params[i].name +
                              "`); the generated code may read an input after writing an output");
  for (size_t j = 0; j < k; ++j)
    if (overlaps(*t, *outputs[j])) return invalid_argument(what + " overlaps provided output " + std::to_string(j));
  return {};
}


Status Module::with_context(Status st, const EntrySig& e) const {
  // "module `mlp` [m-...]: entry `mlp`: <cause>": the chain of causes, outermost first.
  std::string msg = "module `" + manifest_.name + "` [" + id_ + "]: ";
  if (st.message().find("entry `" + e.name + "`") == std::string::npos) msg += "entry `" + e.name + "`: ";
  SHAPEML_LOG_AT(Runtime, Warn, "call failed", {"module", id_}, {"entry", e.name}, {"code", status_code_name(st.code())}, {"message", st.message()});
  return Status(st.code(), msg + st.message());
}

Status Module::call(const EntrySig& entry, std::span<Tensor* const> inputs, std::vector<TensorRef>& outputs, const CallOptions& options) {
  obs::ModuleScope scope(&id_, &manifest_.name, &entry.name);
  obs::Span span("runtime", "call");
  if (span) {
    try {  // outside the guard below: a failed allocation only leaves the span unnamed
      span.rename("call " + entry.name);
    } catch (...) {
    }
    span.arg("device", entry.device ? "cuda" : "host");
  }
  Status st = call_unscoped(entry, inputs, outputs, options);
  if (st.ok()) return st;
  if (span) span.arg("error", status_code_name(st.code()));
  return guarded("Module::call", [&]() -> Status { return with_context(std::move(st), entry); });
}

Status Module::call_unscoped(const EntrySig& entry, std::span<Tensor* const> inputs, std::vector<TensorRef>& outputs, const CallOptions& options) {
  return guarded("Module::call", [&]() -> Status {
    if (entry.generic()) {
      // Spec §3.5: the dtype and device variables from the inputs, then the
      // instance at those values runs as any entry.
      if (inputs.size() != entry.params.size())
        return invalid_argument("entry `" + entry.name + "` takes " + std::to_string(entry.params.size()) + " input" +
                                (entry.params.size() == 1 ? "" : "s") + ", got " + std::to_string(inputs.size()));
      for (size_t i = 0; i < inputs.size(); ++i)
        if (!inputs[i]) return invalid_argument("entry `" + entry.name + "`: input " + std::to_string(i) + " (`" + entry.params[i].name + "`) is NULL");
      auto tb = bind_type_variables(
          entry, inputs.size(), [&](size_t i) { return inputs[i]->dtype(); },
          [&](size_t i) {
            const DLDevice d = inputs[i]->dl().device;
            return d.device_type == kDLCUDA ? types::Device::cuda(d.device_id) : types::Device::host();
          });
      if (!tb) return tb.status();
      auto inst = instance(entry, *tb);
      if (!inst) return inst.status();
      return call_unscoped(**inst, inputs, outputs, options);
    }
    const EntrySig* e = &entry;
    const MemoryResourcePtr& mr = options.memory ? options.memory : memory_;
    std::string fn_name = "entry `" + e->name + "`";
    if (e->device) return call_device(*e, inputs, outputs, options);
    // (Checked here for an instance of a generic entry, whose device is its
    // binding's; the C ABI refuses a concrete host entry's stream itself.)
    if (options.stream)
      return invalid_argument(fn_name + (e->type_bind.empty() ? "" : " bound to the host by its inputs") +
                              " is a host entry, but a stream was given (a stream is for device entries)");
    auto shapes = check_inputs(*e, inputs, fn_name);
    if (!shapes) return shapes.status();
    if (!options.outputs.empty() && options.outputs.size() != e->returns.size())
      return invalid_argument(fn_name + " returns " + std::to_string(e->returns.size()) + " tensor(s), but " +
                              std::to_string(options.outputs.size()) + " outputs were provided");
    auto b = bind_shape_variables(*e, *shapes, options.dims);
    if (!b) return b.status();

    // Outputs: the caller's (checked) or new ones.
    std::vector<TensorRef> results;
    for (size_t k = 0; k < e->returns.size(); ++k) {
      const types::TensorType& rt = e->returns[k];
      auto shape = evaluate_shape(rt.shape, *b);
      if (!shape) return Status(shape.status().code(), fn_name + ": result " + std::to_string(k) + ": " + shape.status().message());
      if (options.outputs.empty()) {
        auto t = Tensor::create(rt.dtype, *shape, mr, /*zero=*/false);
        if (!t) return Status(t.status().code(), fn_name + ": result " + std::to_string(k) + ": " + t.status().message());
        results.push_back(std::move(t).value());
        continue;
      }
      Tensor* t = options.outputs[k];
      if (Status st = check_provided_output(*e, *b, k, *shape, inputs, options.outputs, fn_name); !st.ok()) return st;
      results.push_back(TensorRef::share(t));
    }

    auto lease = acquire(*e, *b);
    if (!lease) return lease.status();

    std::vector<void*> buffers;
    std::vector<TensorRef> temporaries;  // aligned copies, alive for the call
    for (Tensor* t : inputs) {
      void* d = t->data();
      if (!aligned(d)) {
        auto c = t->contiguous_copy(mr);
        if (!c) return Status(c.status().code(), fn_name + ": aligning an input: " + c.status().message());
        d = (*c)->data();
        temporaries.push_back(std::move(c).value());
      }
      buffers.push_back(d);
    }
    std::vector<std::pair<size_t, TensorRef>> copy_back;  // result index, aligned stand-in
    for (size_t k = 0; k < results.size(); ++k) {
      void* d = results[k]->data();
      if (!aligned(d)) {
        auto c = Tensor::create(results[k]->dtype(), results[k]->shape(), mr, /*zero=*/false);
        if (!c) return Status(c.status().code(), fn_name + ": aligning output " + std::to_string(k) + ": " + c.status().message());
        d = (*c)->data();
        copy_back.emplace_back(k, std::move(c).value());
      }
      buffers.push_back(d);
    }
    // The error record of an entry with index checks (index-checks.md):
    // zeroed, after the outputs; the code writes the first bad index there.
    size_t record_size = e->error_record_size();
    std::unique_ptr<int64_t, AlignedFree> record;
    if (record_size) {
      record.reset(static_cast<int64_t*>(::operator new(record_size * sizeof(int64_t), std::align_val_t{kMinAlignment})));
      std::memset(record.get(), 0, record_size * sizeof(int64_t));
      buffers.push_back(record.get());
    }
    {
      obs::Span run("runtime", "run compiled code");
      if (run) run.arg("symbol", lease->slot().symbol);
      int64_t failed = 0;
      CallThreads threads(options.threads);
      if (!run_with_temp_memory(lease->fn(), buffers.data(), mr.get(), failed))
        return resource_exhausted(fn_name + " at " + binding_str(*e, *b) + ": a temporary of " + std::to_string(failed) +
                                  " bytes could not be allocated from memory resource `" + mr->name() + "`");
    }
    if (record && record.get()[0] != 0) return index_error(*e, record.get(), record_size);
    for (auto& [k, tmp] : copy_back) std::memcpy(results[k]->data(), tmp->data(), results[k]->nbytes());
    outputs = std::move(results);
    return Status();
  });
}

}  // namespace shapeml::runtime
