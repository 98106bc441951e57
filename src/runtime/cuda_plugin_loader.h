// Loads the CUDA plugin (libshapeml_cuda.so, src/plan/plugin_contract.h) the
// first time a CUDA device is asked for. The runtime links no CUDA library:
// a CPU-only user never loads the plugin, the driver or cuBLAS.
//
// Search order (docs/design/cuda-plugin.md):
//   1. $SHAPEML_CUDA_PLUGIN, when set and not empty: that file only;
//   2. libshapeml_cuda.so in the directory of the library (or executable)
//      that holds the runtime (found with dladdr);
//   3. "libshapeml_cuda.so" through the dynamic loader's search path
//      (LD_LIBRARY_PATH, the runpath, the loader cache).
// Every way of failing is UNAVAILABLE with a message naming what is missing:
// the paths tried with dlerror's text, a library without
// shapeml_cuda_plugin_get, a plugin of another ABI, or the CUDA error of
// init() (no driver, no GPU).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "plan/plugin_contract.h"
#include "runtime/status.h"

namespace shapeml::runtime {

/// A loaded and initialized plugin. Lives until the process ends (never dlclosed).
class CudaPlugin {
 public:
  const shapeml_cuda_plugin& api() const { return *api_; }
  /// The file that was loaded (as passed to dlopen).
  const std::string& path() const { return path_; }
  int32_t device_count() const { return device_count_; }

  /// OK when 0 <= device < device_count(); else INVALID_ARGUMENT naming it.
  Status check_device(int32_t device, const char* op) const;
  /// The device's default stream: one non-blocking stream per device, made
  /// on first use and kept for the process's lifetime (thread-safe).
  Result<void*> default_stream(int32_t device) const;
  /// `stream`, or the device's default stream when it is NULL.
  Result<void*> resolve_stream(int32_t device, void* stream) const;
  /// The device's name ("NVIDIA H200"), asked once and kept for the
  /// plugin's lifetime (the pointer stays valid as long).
  Result<const char*> device_name(int32_t device) const;

  CudaPlugin(const shapeml_cuda_plugin* api, std::string path, int32_t device_count, void* handle);
  ~CudaPlugin();

 private:
  const shapeml_cuda_plugin* api_;
  std::string path_;
  int32_t device_count_;
  [[maybe_unused]] void* handle_;  // kept open for the process's lifetime (never dlclosed)
  mutable std::mutex mu_;
  mutable std::vector<void*> streams_;  // per device, NULL until made
  mutable std::vector<std::string> names_;
};

/// A plugin status (the plugin's code and message) as a Status; `op` is
/// prepended ("copy_to_device: cudaMemcpyAsync: ...").
Status plugin_status(int32_t code, const char* err, const std::string& op);

/// Loads the plugin without caching, following the search order with
/// `env_override` standing for $SHAPEML_CUDA_PLUGIN (NULL or "": unset).
/// For tests and for cuda_plugin(); on failure nothing stays loaded.
Result<std::unique_ptr<CudaPlugin>> load_cuda_plugin(const char* env_override);

/// The process's plugin: loaded on the first call (reading
/// $SHAPEML_CUDA_PLUGIN then), once, thread-safe; later calls return the
/// same plugin or the same UNAVAILABLE status.
Result<const CudaPlugin*> cuda_plugin();

/// Whether cuda_plugin() was already attempted and succeeded, without
/// attempting it.
bool cuda_plugin_loaded();

}  // namespace shapeml::runtime
