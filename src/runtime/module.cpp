#include "runtime/module.h"

#include <cstring>

#include "runtime/dlopen_provider.h"
#include "runtime/shape_binding.h"

namespace shapeml::runtime {

Result<std::shared_ptr<Module>> Module::create(const std::string& manifest_text, std::unique_ptr<CodeProvider> provider,
                                               const std::string& origin, MemoryResourcePtr memory) {
  return guarded("Module::create", [&]() -> Result<std::shared_ptr<Module>> {
    if (!provider) return invalid_argument(origin + ": no code provider");
    auto m = parse_manifest(manifest_text, origin);
    if (!m) return m.status();
    std::shared_ptr<Module> mod(new Module());
    mod->manifest_ = std::move(m).value();
    mod->origin_ = origin;
    mod->provider_ = std::move(provider);
    mod->memory_ = memory ? std::move(memory) : host_memory_resource();
    for (const EntrySig& e : mod->manifest_.entries) {
      auto& slot = mod->cache_[e.name];
      for (const SpecializationSig& s : e.specializations) {
        void* fn = mod->provider_->lookup(s.symbol);
        if (!fn)
          return invalid_argument(origin + ": the manifest names symbol `" + s.symbol + "` for entry `" + e.name + "` (" +
                                  binding_str(e, s.bind) + "), but the module does not export it");
        slot[s.bind] = reinterpret_cast<abi::CompiledEntryFn>(fn);
      }
    }
    return mod;
  });
}

Result<std::shared_ptr<Module>> Module::load(const std::string& path, MemoryResourcePtr memory) {
  return guarded("Module::load", [&]() -> Result<std::shared_ptr<Module>> {
    auto p = DlopenCodeProvider::open(path);
    if (!p) return p.status();
    std::string manifest = (*p)->manifest();
    return create(manifest, std::move(p).value(), path, std::move(memory));
  });
}

size_t Module::specialization_count(const std::string& entry) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(entry);
  return it == cache_.end() ? 0 : it->second.size();
}

Result<abi::CompiledEntryFn> Module::find_specialization(const EntrySig& e, const Binding& b) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = cache_[e.name];
  if (auto it = slot.find(b); it != slot.end()) return it->second;
  std::string symbol, error;
  if (!provider_->specialize(e.name, b, symbol, error)) {
    if (!error.empty())
      return Status(StatusCode::NotFound, origin_ + ": entry `" + e.name + "` could not be specialized for " + binding_str(e, b) +
                                              ": " + error);
    std::string have;
    for (const auto& [bind, fn] : slot) have += std::string(have.empty() ? "" : "; ") + binding_str(e, bind);
    return Status(StatusCode::NotFound, origin_ + ": entry `" + e.name + "` has no specialization for " + binding_str(e, b) +
                                            " (compiled ahead of time: " + (have.empty() ? "none" : have) + ")");
  }
  void* fn = provider_->lookup(symbol);
  if (!fn)
    return internal_error(origin_ + ": the code provider specialized `" + e.name + "` as `" + symbol +
                          "` but cannot resolve that symbol");
  auto f = reinterpret_cast<abi::CompiledEntryFn>(fn);
  slot[b] = f;
  return f;
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
    std::string fn_name = "entry `" + entry + "`";
    for (const ParamSig& p : e->params)
      if (p.type.device.kind != types::Device::Kind::Host)
        return unimplemented(fn_name + ": parameter `" + p.name + "` lives on " + types::device_name(p.type.device) +
                             "; this runtime runs host code only");
    for (const types::TensorType& r : e->returns)
      if (r.device.kind != types::Device::Kind::Host)
        return unimplemented(fn_name + ": it returns a tensor on " + types::device_name(r.device) +
                             "; this runtime runs host code only");
    if (inputs.size() != e->params.size())
      return invalid_argument(fn_name + " takes " + std::to_string(e->params.size()) + " input" +
                              (e->params.size() == 1 ? "" : "s") + ", got " + std::to_string(inputs.size()));
    std::vector<std::span<const int64_t>> shapes;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ParamSig& p = e->params[i];
      const Tensor* t = inputs[i];
      std::string what = fn_name + ": input " + std::to_string(i) + " (`" + p.name + "`)";
      if (!t) return invalid_argument(what + " is NULL");
      if (t->dtype() != p.type.dtype)
        return invalid_argument(what + " has dtype " + std::string(types::dtype_name(t->dtype())) + ", expected " +
                                std::string(types::dtype_name(p.type.dtype)) + " (type " + p.type.str() + ")");
      if (static_cast<size_t>(t->ndim()) != p.type.rank())
        return invalid_argument(what + " has rank " + std::to_string(t->ndim()) + " (shape " + t->type_str() + "), expected rank " +
                                std::to_string(p.type.rank()) + " (type " + p.type.str() + ")");
      if (t->dl().device.device_type != kDLCPU)
        return invalid_argument(what + " is on device " + dl_device_str(t->dl().device) + ", expected " +
                                types::device_name(p.type.device));
      if (!t->is_contiguous())
        return invalid_argument(what + " is not contiguous (row-major); make a contiguous copy first");
      shapes.push_back(t->shape());
    }
    auto b = bind_shape_variables(*e, shapes);
    if (!b) return b.status();
    auto fn = find_specialization(*e, *b);
    if (!fn) return fn.status();

    std::vector<TensorRef> results;
    for (size_t k = 0; k < e->returns.size(); ++k) {
      auto shape = evaluate_shape(e->returns[k].shape, *b);
      if (!shape) return Status(shape.status().code(), fn_name + ": result " + std::to_string(k) + ": " + shape.status().message());
      auto t = Tensor::create(e->returns[k].dtype, *shape, memory_, /*zero=*/false);
      if (!t) return Status(t.status().code(), fn_name + ": result " + std::to_string(k) + ": " + t.status().message());
      results.push_back(std::move(t).value());
    }
    std::vector<void*> buffers;
    std::vector<TensorRef> aligned_copies;  // keeps copies alive for the call
    for (Tensor* t : inputs) {
      void* d = t->data();
      if (reinterpret_cast<uintptr_t>(d) % kMinAlignment != 0) {
        auto c = t->contiguous_copy(memory_);
        if (!c) return Status(c.status().code(), fn_name + ": aligning an input: " + c.status().message());
        d = (*c)->data();
        aligned_copies.push_back(std::move(c).value());
      }
      buffers.push_back(d);
    }
    for (const TensorRef& r : results) buffers.push_back(r->data());
    (*fn)(buffers.data());
    outputs = std::move(results);
    return Status();
  });
}

}  // namespace shapeml::runtime
