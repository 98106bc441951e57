// The JIT as a runtime CodeProvider: a module compiled from source whose
// entry points are specialized on their first call for each binding of their
// shape variables (then cached by the runtime Module). This is the one place
// where the compiler (lower/cpu) meets the runtime.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ir/ir.h"
#include "lower/cpu/cpu_backend.h"
#include "runtime/code_provider.h"

namespace shapeml::jit {

class JitCodeProvider final : public runtime::CodeProvider {
 public:
  JitCodeProvider(ir::Module module, lower::cpu::CpuTarget target);
  void* lookup(const std::string& symbol) override;
  bool specialize(const std::string& entry, const std::map<std::string, int64_t>& bindings, std::string& symbol, std::string& error) override;

  /// The manifest of every function of the module, with no specialization
  /// (they are made on demand).
  std::string manifest() const;

 private:
  ir::Module module_;
  lower::cpu::CpuTarget target_;
  lower::cpu::CpuJit jit_;
  std::mutex mu_;
  std::map<std::string, void*> symbols_;
  int next_ = 0;
};

}  // namespace shapeml::jit
