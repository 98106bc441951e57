// What the fused attention kernels share (attention.cu, attention_tf32.cu,
// attention_f32.cu): asynchronous 16-byte copies into shared memory and the
// alignment test that decides whether a launch may use them.
#pragma once
#include <cstdint>

#include "cuda/executor/dependent_launch.cuh"

namespace shapeml::cuda::kern::attention_detail {

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// 16 bytes from global to shared memory, or 16 zero bytes when !valid (past
// the end of a tile).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most kN committed groups are still in flight.
template <int kN> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(kN) : "memory"); }

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace shapeml::cuda::kern::attention_detail
