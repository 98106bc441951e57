#include "jit/jit_code_provider.h"

namespace shapeml::jit {

JitCodeProvider::JitCodeProvider(ir::Module module, lower::cpu::CpuTarget target) : module_(std::move(module)), target_(target), jit_(target) {}

void* JitCodeProvider::lookup(const std::string& symbol) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = symbols_.find(symbol);
  return it == symbols_.end() ? nullptr : it->second;
}

runtime::Status classify_compile_error(const std::string& error) {
  using runtime::StatusCode;
  auto has = [&](const char* s) { return error.find(s) != std::string::npos; };
  StatusCode code = StatusCode::Internal;
  if (error.rfind("internal:", 0) == 0) code = StatusCode::Internal;
  else if (has("too many elements") || has("cannot be evaluated (unbound variable or overflow)") || has("too large for the CPU back end"))
    code = StatusCode::ResourceExhausted;
  else if (has("not a CPU program")) code = StatusCode::Unimplemented;
  else if (has("is not bound") || has("shape variables are >= 1") || has("has no shape variable") || has("the bindings violate"))
    code = StatusCode::InvalidArgument;
  else if (error.rfind("no function `", 0) == 0) code = StatusCode::NotFound;
  return runtime::Status(code, error.empty() ? "code generation failed without a message" : error);
}

runtime::Status JitCodeProvider::specialize(const std::string& entry, const std::map<std::string, int64_t>& bindings, std::string& symbol) {
  std::string error;
  abi::CompiledEntryFn fn = jit_.compile(module_, entry, bindings, error);
  if (!fn) return classify_compile_error(error);
  std::lock_guard<std::mutex> lock(mu_);
  symbol = "jit_" + entry + "_" + std::to_string(next_++);
  symbols_[symbol] = reinterpret_cast<void*>(fn);
  return {};
}

void JitCodeProvider::release(const std::string& symbol) {
  void* fn = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = symbols_.find(symbol);
    if (it == symbols_.end()) return;
    fn = it->second;
    symbols_.erase(it);
  }
  jit_.release(reinterpret_cast<abi::CompiledEntryFn>(fn));
}

std::string entries_manifest(const ir::Module& module, const std::string& target) {
  // Same format as an AOT manifest (src/abi/compiled_entry.h), every
  // function an entry, no specialization listed.
  std::string s = "(shapeml-module (abi " + std::to_string(abi::kCompiledEntryAbiVersion) + ") (name " + module.name + ") (target \"" + target + "\")";
  for (const auto& f : module.functions) {
    s += "\n  (entry " + f.name + " (dims";
    for (const auto& d : f.dims) s += " " + d;
    s += ") (where";
    for (const auto& c : f.where) s += " " + c.str();
    s += ")\n    (params";
    for (ir::ValueId p : f.params) s += " (" + f.values[p].name + " " + f.values[p].type.str() + ")";
    s += ")\n    (returns";
    for (const auto& t : f.result_types) s += " " + t.str();
    s += "))";
  }
  return s + ")\n";
}

std::string JitCodeProvider::manifest() const { return entries_manifest(module_, lower::cpu::target_name(target_)); }

}  // namespace shapeml::jit
