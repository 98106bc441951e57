// The split operands of 3xTF32 matmuls (kernels.h, tf32_split; the planner's
// lower/gpu/split_fp32_matmuls.h): one read of x, three writes, 16-byte
// accesses where the blocks allow. Memory-bound by design: the GEMM that
// follows does the arithmetic.
#include <cstdint>

#include "cuda/executor/grid.cuh"
#include "cuda/executor/kernels.h"

namespace shapeml::cuda::kern {
namespace {

// x rounded to TF32 (10 mantissa bits) to nearest, ties away from zero, as
// cvt.rna.tf32.f32 does; a finite x whose rounding would overflow is
// truncated instead (its lo then carries the rest). inf and NaN stay.
__device__ __forceinline__ float tf32_hi(float x) {
  const unsigned u = __float_as_uint(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;
  const unsigned r = (u + 0x1000u) & 0xffffe000u;
  return (r & 0x7f800000u) == 0x7f800000u ? __uint_as_float(u & 0xffffe000u) : __uint_as_float(r);
}

struct Parts {
  float hi, hi_f, lo_f;  // hi, and hi and lo as 0 where x is not finite
};

__device__ __forceinline__ Parts parts(float x) {
  const float hi = tf32_hi(x);
  if (!isfinite(x)) return {hi, 0.f, 0.f};
  return {hi, hi, tf32_hi(__fsub_rn(x, hi))};  // x - hi is exact (Sterbenz); its rounding to TF32 is lo
}

template <int kV> struct alignas(4 * kV) Pack { float v[kV]; };

// i runs over packs of kV elements of x; block = n * inner elements, a
// multiple of kV.
template <int kV> __global__ void tf32_split_kernel(bool rhs, const float* x, float* out, int64_t packs, int64_t block) {
  using P = Pack<kV>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < packs; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t e = i * kV, o = e / block, at = o * 3 * block + (e - o * block);
    const P v = reinterpret_cast<const P*>(x)[i];
    P b0, b1, b2;
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      const Parts q = parts(v.v[j]);
      b0.v[j] = q.hi;
      b1.v[j] = rhs ? q.lo_f : q.hi_f;
      b2.v[j] = rhs ? q.hi_f : q.lo_f;
    }
    *reinterpret_cast<P*>(out + at) = b0;
    *reinterpret_cast<P*>(out + at + block) = b1;
    *reinterpret_cast<P*>(out + at + 2 * block) = b2;
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

cudaError_t tf32_split(bool rhs, const float* x, float* out, int64_t outer, int64_t n, int64_t inner, int max_blocks, cudaStream_t s) {
  const int64_t block = n * inner, total = outer * block;
  if (total == 0) return cudaSuccess;
  if (block % 4 == 0 && aligned16(x) && aligned16(out))
    tf32_split_kernel<4><<<blocks_for(total / 4, max_blocks), kThreads, 0, s>>>(rhs, x, out, total / 4, block);
  else
    tf32_split_kernel<1><<<blocks_for(total, max_blocks), kThreads, 0, s>>>(rhs, x, out, total, block);
  return cudaGetLastError();
}

}  // namespace shapeml::cuda::kern
