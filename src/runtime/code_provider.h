// Where a Module's machine code comes from: an ahead-of-time shared object
// (DlopenCodeProvider) or the JIT (jit/JitCodeProvider, written with the
// compiler, outside the runtime). The Module asks for the symbols its
// manifest names and, for a binding with no specialization, may ask the
// provider to make one.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "runtime/status.h"

namespace shapeml::runtime {

struct CodeProvider {
  virtual ~CodeProvider();
  /// The address of `symbol` (an common::CompiledEntryFn), or NULL if there is none.
  virtual void* lookup(const std::string& symbol) = 0;
  /// Whether specialize() can make new specializations (a JIT).
  virtual bool can_specialize() const { return false; }
  /// Compiles `entry` for `bindings` (every shape variable of the entry,
  /// already checked by check_binding) and sets `symbol` to a name that
  /// lookup() resolves. The status says why not otherwise, with the code the
  /// C ABI reports (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNIMPLEMENTED,
  /// INTERNAL). May be called from several threads at once, for different
  /// bindings; the Module never asks twice for a binding it holds, and holds
  /// no module-wide lock while this runs.
  virtual Status specialize(const std::string& entry, const std::map<std::string, int64_t>& bindings, std::string& symbol) {
    return unimplemented("this module cannot compile new specializations");
  }
  /// The dispatch plan (src/plan/plan.h, as text) of a device entry's
  /// specialization `symbol` (a manifest `(kind gpu-plan)` or one that
  /// specialize() made for a device entry). NOT_FOUND when there is none.
  virtual Result<std::string> plan_text(const std::string& symbol) { return not_found("no dispatch plan `" + symbol + "`"); }
  /// Frees the machine code of a symbol that specialize() made; the Module
  /// calls it only when no call is running that code.
  virtual void release(const std::string& symbol) {}
};

}  // namespace shapeml::runtime
