// Integral matmul: cuBLASLt has no i32/i64 GEMM, so a plain kernel does it
// (floating matmuls go to cuBLASLt; see executor.cpp).
#include "cuda/executor/kernels.h"
#include "cuda/executor/numerics.cuh"

namespace shapeml::cuda::kern {

// One thread per output, 16x16 blocks over (rows of all batches, cols);
// wrapping arithmetic. Simple, not fast.
namespace {
template <class T> __global__ void matmul_int_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, int64_t batch,
                                                     int64_t m, int64_t n, int64_t k, int64_t stride_a, int64_t stride_b) {
  const int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  for (int64_t row = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; row < batch * m; row += int64_t(gridDim.y) * blockDim.y) {
    if (col >= n) continue;
    const int64_t bi = row / m, r = row - bi * m;
    const T* pa = a + bi * stride_a + r * k;
    const T* pb = b + bi * stride_b + col;
    T acc = 0;
    for (int64_t j = 0; j < k; ++j) acc = wrap_add(acc, wrap_mul(pa[j], pb[j * n]));
    out[row * n + col] = acc;
  }
}
}  // namespace

cudaError_t matmul_int(DT dt, const void* a, const void* b, void* out, int64_t batch, int64_t m, int64_t n, int64_t k, int64_t stride_a,
                       int64_t stride_b, cudaStream_t s) {
  if (batch == 0 || m == 0 || n == 0) return cudaSuccess;
  dim3 block(16, 16);
  int64_t gy = (batch * m + 15) / 16;
  dim3 grid(static_cast<unsigned>((n + 15) / 16), static_cast<unsigned>(gy < 65535 ? gy : 65535));
  if (dt == DT::I32)
    matmul_int_kernel<int32_t><<<grid, block, 0, s>>>(static_cast<const int32_t*>(a), static_cast<const int32_t*>(b), static_cast<int32_t*>(out),
                                                      batch, m, n, k, stride_a, stride_b);
  else if (dt == DT::I64)
    matmul_int_kernel<int64_t><<<grid, block, 0, s>>>(static_cast<const int64_t*>(a), static_cast<const int64_t*>(b), static_cast<int64_t*>(out),
                                                      batch, m, n, k, stride_a, stride_b);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

}  // namespace shapeml::cuda::kern
