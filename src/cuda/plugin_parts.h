// The functions behind the plugin's vtable (src/plan/plugin_contract.h), one file
// per idea: plugin.cpp (devices, streams, copies, the vtable),
// device_memory.cpp (allocation), plan_entries.cpp (plans). Every function
// follows plugin_api.h: 0 or a status code plus a message in `err`.
#pragma once
#include <cstddef>
#include <cstdint>

#include "plan/plugin_contract.h"

namespace shapeml::cuda {

/// Makes `device` current on this thread for the scope, after checking
/// 0 <= device < cudaGetDeviceCount(), and makes the caller's device current
/// again at its end (the current device is per thread, and the host program
/// -- PyTorch, say -- relies on its own choice). A CUDA error left over from
/// the host program's earlier calls is cleared first, so that a failure is
/// never blamed on the call that follows it. rc(): 0, or the status code
/// with the message in `err`.
class DeviceScope {
 public:
  DeviceScope(int32_t device, const char* op, char* err, size_t err_size) noexcept;
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  int32_t rc() const noexcept { return rc_; }

 private:
  int prev_ = -1;
  bool switched_ = false;
  int32_t rc_ = 0;
};

int32_t malloc_raw(int32_t device, size_t bytes, void** ptr, char* err, size_t err_size) noexcept;
int32_t free_raw(int32_t device, void* ptr, char* err, size_t err_size) noexcept;
int32_t malloc_async(int32_t device, size_t bytes, void* stream, void** ptr, char* err, size_t err_size) noexcept;
int32_t free_async(int32_t device, void* ptr, void* stream, char* err, size_t err_size) noexcept;
int32_t set_pool_release_threshold(int32_t device, uint64_t release_threshold, char* err, size_t err_size) noexcept;

/// The plan entries: the executor's (src/cuda/executor/executor.h) when it is
/// built into the plugin, else ones that say it is not.
int32_t plan_create_entry(int32_t device, const char* plan_text, shapeml_cuda_plan** plan, char* err, size_t err_size);
int64_t plan_workspace_bytes_entry(const shapeml_cuda_plan* plan);
int32_t plan_execute_entry(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream, char* err, size_t err_size);
void plan_destroy_entry(shapeml_cuda_plan* plan);
int32_t plan_graph_entry(const shapeml_cuda_plan* plan, char* why, size_t why_size);
int64_t graph_memory_bytes_entry(const shapeml_cuda_plan* plan, int32_t rebind);
int32_t graph_create_entry(shapeml_cuda_plan* plan, int32_t rebind, void* memory, shapeml_cuda_graph** graph, char* err, size_t err_size);
int32_t graph_execute_entry(shapeml_cuda_graph* graph, void* const* buffers, void* stream, int32_t* ran, char* err, size_t err_size);
int32_t graph_destroy_entry(shapeml_cuda_graph* graph, char* err, size_t err_size);

}  // namespace shapeml::cuda
