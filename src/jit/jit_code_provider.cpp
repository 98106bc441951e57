#include "jit/jit_code_provider.h"

namespace shapeml::jit {

JitCodeProvider::JitCodeProvider(ir::Module module, lower::cpu::CpuTarget target) : module_(std::move(module)), target_(target), jit_(target) {}

void* JitCodeProvider::lookup(const std::string& symbol) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = symbols_.find(symbol);
  return it == symbols_.end() ? nullptr : it->second;
}

bool JitCodeProvider::specialize(const std::string& entry, const std::map<std::string, int64_t>& bindings, std::string& symbol,
                                 std::string& error) {
  abi::CompiledEntryFn fn = jit_.compile(module_, entry, bindings, error);
  if (!fn) return false;
  std::lock_guard<std::mutex> lock(mu_);
  symbol = "jit_" + entry + "_" + std::to_string(next_++);
  symbols_[symbol] = reinterpret_cast<void*>(fn);
  return true;
}

std::string JitCodeProvider::manifest() const {
  // Same format as an AOT manifest (src/abi/compiled_entry.h), every
  // function an entry, no specialization listed.
  std::string s = "(shapeml-module (abi " + std::to_string(abi::kCompiledEntryAbiVersion) + ") (name " + module_.name + ") (target \"" +
                  lower::cpu::target_name(target_) + "\")";
  for (const auto& f : module_.functions) {
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

}  // namespace shapeml::jit
