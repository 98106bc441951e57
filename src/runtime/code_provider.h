// Where a Module's machine code comes from: an ahead-of-time shared object
// (DlopenCodeProvider) or, later, the JIT (written with the compiler, outside
// the runtime). The Module asks for the symbols its manifest names and, for a
// binding with no specialization, may ask the provider to make one.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace shapeml::runtime {

struct CodeProvider {
  virtual ~CodeProvider();
  /// The address of `symbol` (a CompiledEntryFn), or NULL if there is none.
  virtual void* lookup(const std::string& symbol) = 0;
  /// Compiles `entry` for `bindings` (every shape variable of the entry)
  /// and sets `symbol` to a name that lookup() resolves. Returns false when
  /// it cannot: `error` says why, or stays empty when the provider does not
  /// specialize at all (an AOT module). Called with the module's
  /// specialization lock held; never for a binding it already specialized.
  virtual bool specialize(const std::string& entry, const std::map<std::string, int64_t>& bindings, std::string& symbol,
                          std::string& error) {
    return false;
  }
};

}  // namespace shapeml::runtime
