// A runtime Module: the entry points of a compiled program (its manifest),
// the code behind them (a CodeProvider), and the memory resource its outputs
// come from. Module::call checks inputs against an entry's shape-polymorphic
// signature, binds its shape variables, finds (or asks for) the matching
// specialization, allocates the outputs and runs the machine code.
//
// Thread safety: a Module may be called from several threads at once.
#pragma once
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "runtime/code_provider.h"
#include "abi/compiled_entry.h"
#include "runtime/manifest.h"
#include "runtime/memory_resource.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace shapeml::runtime {

class Module {
 public:
  /// A module over `provider` described by `manifest_text`. Every symbol
  /// the manifest names is resolved now (INVALID_ARGUMENT naming it when the
  /// provider lacks one). `origin` names the module in messages; `memory`
  /// (NULL: host) is where outputs are allocated.
  static Result<std::shared_ptr<Module>> create(const std::string& manifest_text, std::unique_ptr<CodeProvider> provider,
                                                const std::string& origin, MemoryResourcePtr memory = nullptr);

  /// Loads an ahead-of-time compiled shared object (DlopenCodeProvider).
  static Result<std::shared_ptr<Module>> load(const std::string& path, MemoryResourcePtr memory = nullptr);

  const Manifest& manifest() const { return manifest_; }
  const std::string& origin() const { return origin_; }
  const MemoryResourcePtr& memory_resource() const { return memory_; }

  /// Runs `entry` on `inputs` (one per parameter, in order). On success
  /// `outputs` is replaced by the results (new tensors from the module's
  /// memory resource); on failure it is left unchanged. Errors:
  ///   NOT_FOUND        no such entry; no specialization for the binding
  ///                    and the provider cannot make one
  ///   INVALID_ARGUMENT wrong input count, a NULL input, wrong dtype, rank,
  ///                    device, non-contiguous data, a dimension that does
  ///                    not match, a violated `where` constraint
  ///   UNIMPLEMENTED    the entry takes or returns device tensors
  ///   OUT_OF_MEMORY    an output could not be allocated
  /// Inputs whose data is not 64-byte aligned are copied to aligned memory
  /// first (the compiled code requires it); contents are never modified.
  Status call(const std::string& entry, std::span<const TensorRef> inputs, std::vector<TensorRef>& outputs);
  Status call(const std::string& entry, std::span<Tensor* const> inputs, std::vector<TensorRef>& outputs);
  Status call(const std::string& entry, std::initializer_list<TensorRef> inputs, std::vector<TensorRef>& outputs) {
    return call(entry, std::span<const TensorRef>(inputs.begin(), inputs.size()), outputs);
  }

  /// Number of resolved specializations of `entry` (listed in the manifest
  /// or made by the provider since).
  size_t specialization_count(const std::string& entry) const;

 private:
  Module() = default;
  Result<abi::CompiledEntryFn> find_specialization(const EntrySig& e, const Binding& b);

  Manifest manifest_;
  std::string origin_;
  std::unique_ptr<CodeProvider> provider_;
  MemoryResourcePtr memory_;
  mutable std::mutex mu_;
  std::map<std::string, std::map<Binding, abi::CompiledEntryFn>> cache_;  // entry -> binding -> code
};

}  // namespace shapeml::runtime
