// libshapeml_cuda.so: devices, streams and copies, and the one exported
// symbol, shapeml_cuda_plugin_get (src/plan/plugin_contract.h). Nothing here
// prints, exits or throws: every failure is a status code and a message
// naming the CUDA call.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "cuda/cuda_error.h"
#include "cuda/executor/executor.h"
#include "cuda/plugin_parts.h"
#include "shapeml.h"

namespace shapeml::cuda {
namespace {

int32_t init(int32_t* device_count, char* err, size_t err_size) noexcept {
  if (device_count) *device_count = 0;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return fail(e, "cudaGetDeviceCount", err, err_size, "initializing the CUDA runtime");
  if (n <= 0) return fail_with(SHAPEML_STATUS_UNAVAILABLE, err, err_size, "cudaGetDeviceCount: no CUDA device is visible");
  if (device_count) *device_count = n;
  return 0;
}

int32_t device_name(int32_t device, char* name, size_t name_size, char* err, size_t err_size) noexcept {
  if (!name || name_size == 0) return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "device_name: name buffer is empty");
  name[0] = '\0';
  DeviceScope scope(device, "device_name", err, err_size);
  if (scope.rc()) return scope.rc();
  cudaDeviceProp prop{};
  cudaError_t e = cudaGetDeviceProperties(&prop, device);
  if (e != cudaSuccess) return fail(e, "cudaGetDeviceProperties", err, err_size, "cuda:%d", device);
  std::snprintf(name, name_size, "%s", prop.name);
  return 0;
}

int32_t stream_create(int32_t device, void** stream, char* err, size_t err_size) noexcept {
  if (!stream) return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "stream_create: stream is NULL");
  *stream = nullptr;
  DeviceScope scope(device, "stream_create", err, err_size);
  if (scope.rc()) return scope.rc();
  cudaStream_t s = nullptr;
  // Non-blocking: never implicitly synchronizes with the legacy default stream.
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess) return fail(e, "cudaStreamCreateWithFlags", err, err_size, "creating a stream on cuda:%d", device);
  *stream = s;
  return 0;
}

int32_t stream_destroy(void* stream, char* err, size_t err_size) noexcept {
  if (!stream) return 0;
  cudaError_t e = cudaStreamDestroy(static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) return fail(e, "cudaStreamDestroy", err, err_size, "stream %p", stream);
  return 0;
}

int32_t stream_synchronize(void* stream, char* err, size_t err_size) noexcept {
  cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) return fail(e, "cudaStreamSynchronize", err, err_size, "stream %p", stream);
  return 0;
}

int32_t stream_wait(void* waiter, void* waited, char* err, size_t err_size) noexcept {
  if (waiter == waited) return 0;
  cudaEvent_t ev = nullptr;
  cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  if (e != cudaSuccess) return fail(e, "cudaEventCreateWithFlags", err, err_size, "ordering stream %p after stream %p", waiter, waited);
  e = cudaEventRecord(ev, static_cast<cudaStream_t>(waited));
  if (e == cudaSuccess) e = cudaStreamWaitEvent(static_cast<cudaStream_t>(waiter), ev, 0);
  const char* what = e == cudaSuccess ? nullptr : "cudaEventRecord/cudaStreamWaitEvent";
  // Destroying a recorded event is fine: the wait keeps what it needs.
  cudaEventDestroy(ev);
  if (what) return fail(e, what, err, err_size, "ordering stream %p after stream %p", waiter, waited);
  return 0;
}

int32_t stream_capturing(void* stream, int32_t* capturing, char* err, size_t err_size) noexcept {
  if (!capturing) return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "stream_capturing: capturing is NULL");
  *capturing = 0;
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &cs);
  if (e != cudaSuccess) return fail(e, "cudaStreamIsCapturing", err, err_size, "stream %p", stream);
  *capturing = cs == cudaStreamCaptureStatusNone ? 0 : 1;
  return 0;
}

int32_t memcpy_async(void* dst, const void* src, size_t bytes, int32_t kind, void* stream, char* err, size_t err_size) noexcept {
  static const char* const names[] = {"host to device", "device to host", "device to device"};
  cudaMemcpyKind k;
  switch (kind) {
    case 0: k = cudaMemcpyHostToDevice; break;
    case 1: k = cudaMemcpyDeviceToHost; break;
    case 2: k = cudaMemcpyDeviceToDevice; break;
    default: return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "memcpy_async: kind %d is not 0, 1 or 2", kind);
  }
  if (bytes == 0) return 0;
  if (!dst || !src) return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "memcpy_async: NULL pointer");
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, k, static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess)
    return fail(e, "cudaMemcpyAsync", err, err_size, "copying %zu bytes %s (%p -> %p) on stream %p", bytes, names[kind], src, dst, stream);
  return 0;
}

int32_t memset_async(void* ptr, int32_t value, size_t bytes, void* stream, char* err, size_t err_size) noexcept {
  if (bytes == 0) return 0;
  if (!ptr) return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "memset_async: NULL pointer");
  cudaError_t e = cudaMemsetAsync(ptr, value, bytes, static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) return fail(e, "cudaMemsetAsync", err, err_size, "setting %zu bytes at %p on stream %p", bytes, ptr, stream);
  return 0;
}

const shapeml_cuda_plugin kPlugin = {
    SHAPEML_CUDA_PLUGIN_ABI,
    init,
    device_name,
    stream_create,
    stream_destroy,
    stream_synchronize,
    malloc_raw,
    free_raw,
    malloc_async,
    free_async,
    set_pool_release_threshold,
    memcpy_async,
    plan_create_entry,
    plan_workspace_bytes_entry,
    plan_execute_entry,
    plan_destroy_entry,
    memset_async,
    plan_graph_entry,
    graph_memory_bytes_entry,
    graph_create_entry,
    graph_execute_entry,
    graph_destroy_entry,
    shapeml::cuda::set_observer,
    stream_wait,
    stream_capturing,
};

}  // namespace

DeviceScope::DeviceScope(int32_t device, const char* op, char* err, size_t err_size) noexcept {
  (void)cudaGetLastError();  // the host program's stale error is not ours
  // The count does not change while a process runs: ask the driver once.
  static const int known = [] {
    int c = 0;
    return cudaGetDeviceCount(&c) == cudaSuccess ? c : -1;
  }();
  int n = known;
  cudaError_t e = cudaSuccess;
  if (n < 0 && (e = cudaGetDeviceCount(&n)) != cudaSuccess) {
    rc_ = fail(e, "cudaGetDeviceCount", err, err_size, "%s", op);
    return;
  }
  if (device < 0 || device >= n) {
    rc_ = fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "%s: device cuda:%d does not exist (%d device%s)", op, device, n,
                    n == 1 ? "" : "s");
    return;
  }
  if (cudaGetDevice(&prev_) != cudaSuccess) prev_ = -1;
  if (prev_ == device) return;
  e = cudaSetDevice(device);
  if (e != cudaSuccess) {
    rc_ = fail(e, "cudaSetDevice", err, err_size, "%s on cuda:%d", op, device);
    return;
  }
  switched_ = true;
}

DeviceScope::~DeviceScope() {
  if (switched_ && prev_ >= 0) cudaSetDevice(prev_);
}

}  // namespace shapeml::cuda

extern "C" __attribute__((visibility("default"))) const shapeml_cuda_plugin* shapeml_cuda_plugin_get(uint32_t abi_version) {
  return abi_version == SHAPEML_CUDA_PLUGIN_ABI ? &shapeml::cuda::kPlugin : nullptr;
}
