// Sets a device current on the calling thread for a scope and restores the
// previous one: the current device is per thread, and another library in the
// process (PyTorch) may rely on its own choice.
#pragma once
#include <cuda_runtime_api.h>

namespace shapeml::cuda {

/// `status` is cudaSetDevice's result (cudaSuccess when `dev` was current).
struct DeviceGuard {
  int prev = -1;
  cudaError_t status = cudaSuccess;
  explicit DeviceGuard(int dev) {
    if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
    if (prev != dev) status = cudaSetDevice(dev);
  }
  ~DeviceGuard() {
    if (prev >= 0 && status == cudaSuccess) cudaSetDevice(prev);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
};

}  // namespace shapeml::cuda
