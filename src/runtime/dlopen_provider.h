// The ahead-of-time code provider: a shared object that exports
//   const char* shapeml_module_manifest(void);
//   uint32_t    shapeml_module_abi_version(void);
// and the entry symbols its manifest names (common/compiled_entry.h).
#pragma once
#include <memory>
#include <string>

#include "runtime/code_provider.h"
#include "runtime/status.h"

namespace shapeml::runtime {

/// Checks, without mapping it, that `path` is a regular file holding a
/// complete 64-bit little-endian ELF shared object for this machine whose
/// program headers and segments lie inside the file. INVALID_ARGUMENT names
/// what is wrong; IO_ERROR/NOT_FOUND when it cannot be read.
Status validate_elf_file(const std::string& path);

class DlopenCodeProvider final : public CodeProvider {
 public:
  /// dlopen(path, RTLD_NOW | RTLD_LOCAL), then checks that the object itself
  /// (not a library it depends on) exports both functions and that its ABI
  /// version is kCompiledEntryAbiVersion. Errors:
  ///   NOT_FOUND        no file at `path`
  ///   INVALID_ARGUMENT dlopen failed (its message is included), or the
  ///                    object is not a shapeml module (a symbol is missing),
  ///                    or its manifest function returned NULL
  ///   INCOMPATIBLE_MODULE the module was built for another ABI version
  static Result<std::unique_ptr<DlopenCodeProvider>> open(const std::string& path);
  ~DlopenCodeProvider() override;

  void* lookup(const std::string& symbol) override;
  /// A `(kind gpu-plan)` specialization: `const char* SYMBOL(void)` returns
  /// its plan text.
  Result<std::string> plan_text(const std::string& symbol) override;

  const std::string& path() const { return path_; }
  /// The manifest text (copied out of the object).
  const std::string& manifest() const { return manifest_; }
  /// The module ABI version its code exports (shapeml_module_abi_version).
  uint32_t code_abi() const { return code_abi_; }

 private:
  DlopenCodeProvider(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* symbol_in_object(const char* name) const;
  void* handle_;
  std::string path_, manifest_;
  uint32_t code_abi_ = 0;
};

}  // namespace shapeml::runtime
