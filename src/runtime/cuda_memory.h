// Device memory resources over the CUDA plugin (RMM's cuda_memory_resource
// and cuda_async_memory_resource). Their memory is on a CUDA device: the
// runtime never touches it from the host, only copies to and from it.
//
// A NULL stream given to allocate/deallocate/synchronize means the device's
// default stream (CudaPlugin::default_stream: one non-blocking stream per
// device per process). Failed allocations return NULL and leave the CUDA
// error in MemoryResource::last_failure().
#pragma once
#include <cstdint>

#include "runtime/memory_resource.h"

namespace shapeml::runtime {

/// cudaMalloc/cudaFree on `device` (loads the plugin; UNAVAILABLE without
/// one, INVALID_ARGUMENT for a device that does not exist). cudaFree
/// synchronizes the device: slow; meant as a pool's upstream. Alignment is
/// at most 256 (cudaMalloc's).
Result<MemoryResourcePtr> make_cuda_resource(int32_t device);

/// cudaMallocAsync/cudaFreeAsync on the device's default memory pool, whose
/// release threshold is set to `release_threshold` bytes (UINT64_MAX: keep
/// everything; 0: return freed memory to the driver at each synchronization).
/// The threshold belongs to the device's pool, so the last resource created
/// for a device sets it for all of them.
Result<MemoryResourcePtr> make_cuda_async_resource(int32_t device, uint64_t release_threshold);

/// Allocation alignment the CUDA resources guarantee.
inline constexpr size_t kCudaAlignment = 256;

}  // namespace shapeml::runtime
