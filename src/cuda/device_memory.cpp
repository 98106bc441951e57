// Device allocation: cudaMalloc/cudaFree, and stream-ordered
// cudaMallocAsync/cudaFreeAsync on the device's default memory pool, whose
// release threshold says how many freed bytes the pool keeps instead of
// returning them to the driver at each synchronization.
#include <cuda_runtime_api.h>

#include "cuda/cuda_error.h"
#include "cuda/plugin_parts.h"
#include "shapeml.h"

namespace shapeml::cuda {

int32_t malloc_raw(int32_t device, size_t bytes, void** ptr, char* err, size_t err_size) noexcept {
  if (!ptr) return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "malloc_raw: ptr is NULL");
  *ptr = nullptr;
  DeviceScope scope(device, "malloc_raw", err, err_size);
  if (scope.rc()) return scope.rc();
  cudaError_t e = cudaMalloc(ptr, bytes);
  if (e != cudaSuccess) {
    *ptr = nullptr;
    return fail(e, "cudaMalloc", err, err_size, "allocating %zu bytes on cuda:%d", bytes, device);
  }
  return 0;
}

int32_t free_raw(int32_t device, void* ptr, char* err, size_t err_size) noexcept {
  if (!ptr) return 0;
  DeviceScope scope(device, "free_raw", err, err_size);
  if (scope.rc()) return scope.rc();
  cudaError_t e = cudaFree(ptr);
  if (e != cudaSuccess) return fail(e, "cudaFree", err, err_size, "freeing %p on cuda:%d", ptr, device);
  return 0;
}

int32_t malloc_async(int32_t device, size_t bytes, void* stream, void** ptr, char* err, size_t err_size) noexcept {
  if (!ptr) return fail_with(SHAPEML_STATUS_INVALID_ARGUMENT, err, err_size, "malloc_async: ptr is NULL");
  *ptr = nullptr;
  DeviceScope scope(device, "malloc_async", err, err_size);
  if (scope.rc()) return scope.rc();
  cudaError_t e = cudaMallocAsync(ptr, bytes, static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) {
    *ptr = nullptr;
    return fail(e, "cudaMallocAsync", err, err_size, "allocating %zu bytes on cuda:%d, stream %p", bytes, device, stream);
  }
  return 0;
}

int32_t free_async(int32_t device, void* ptr, void* stream, char* err, size_t err_size) noexcept {
  if (!ptr) return 0;
  DeviceScope scope(device, "free_async", err, err_size);
  if (scope.rc()) return scope.rc();
  cudaError_t e = cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) return fail(e, "cudaFreeAsync", err, err_size, "freeing %p on cuda:%d, stream %p", ptr, device, stream);
  return 0;
}

int32_t set_pool_release_threshold(int32_t device, uint64_t release_threshold, char* err, size_t err_size) noexcept {
  DeviceScope scope(device, "set_pool_release_threshold", err, err_size);
  if (scope.rc()) return scope.rc();
  int supported = 0;
  cudaError_t e = cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device);
  if (e != cudaSuccess)
    return fail(e, "cudaDeviceGetAttribute", err, err_size, "asking whether cuda:%d supports memory pools", device);
  if (!supported)
    return fail_with(SHAPEML_STATUS_UNAVAILABLE, err, err_size,
                     "set_pool_release_threshold: cuda:%d does not support stream-ordered allocation (cudaMallocAsync)", device);
  cudaMemPool_t pool = nullptr;
  e = cudaDeviceGetDefaultMemPool(&pool, device);
  if (e != cudaSuccess) return fail(e, "cudaDeviceGetDefaultMemPool", err, err_size, "cuda:%d", device);
  unsigned long long value = release_threshold;  // the attribute is a cuuint64_t
  e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &value);
  if (e != cudaSuccess)
    return fail(e, "cudaMemPoolSetAttribute", err, err_size, "setting the release threshold of cuda:%d's pool to %llu bytes", device,
                static_cast<unsigned long long>(release_threshold));
  return 0;
}

}  // namespace shapeml::cuda
