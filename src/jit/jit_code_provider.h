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

/// The status code for an error message of the CPU back end (lower/cpu
/// reports errors as text): "internal: ..." and unrecognized failures are
/// INTERNAL; "too many elements" and overflowing dimensions
/// RESOURCE_EXHAUSTED; "not a CPU program" and "... is not supported by the GPU
/// back end" UNIMPLEMENTED; bindings that name
/// unknown variables, miss one, are < 1 or violate a constraint
/// INVALID_ARGUMENT; a missing function NOT_FOUND. Used by the JIT and by
/// AOT builds, so both report the same code for the same failure.
runtime::Status classify_compile_error(const std::string& error);

/// The manifest (src/common/compiled_entry.h) of every function of `module` as
/// an entry, with no specialization: what a JIT module serves, and the
/// signatures AOT build bindings are checked against.
std::string entries_manifest(const ir::Module& module, const std::string& target);

class JitCodeProvider final : public runtime::CodeProvider {
 public:
  JitCodeProvider(ir::Module module, lower::cpu::CpuTarget target);
  void* lookup(const std::string& symbol) override;
  bool can_specialize() const override { return true; }
  /// Compiles through lower::cpu::CpuJit (which serializes compiles of one
  /// module; calls of compiled code never wait for it). The compiler's error
  /// is classified by classify_compile_error().
  runtime::Status specialize(const std::string& entry, const std::map<std::string, int64_t>& bindings, std::string& symbol) override;
  void release(const std::string& symbol) override;
  /// A device entry's specialization: the dispatch plan's text.
  runtime::Result<std::string> plan_text(const std::string& symbol) override;

  /// The manifest of every function of the module, with no specialization
  /// (they are made on demand).
  std::string manifest() const;

 private:
  ir::Module module_;
  lower::cpu::CpuTarget target_;
  lower::cpu::CpuJit jit_;
  std::mutex mu_;
  std::map<std::string, void*> symbols_;
  std::map<std::string, std::string> plans_;  // device specializations: symbol -> plan text
  int next_ = 0;
};

}  // namespace shapeml::jit
