// Data movement: one strided copy (out[idx . so] = in[idx . si] over an
// iteration space) serves broadcast_to, slice, concat (one launch per
// piece) and general permutes; a 32x32 shared-memory tiled kernel serves
// the batched 2-D transpose (coalesced reads and writes). Elements are moved
// as raw bits of their size (1, 2, 4 or 8 bytes).
#include "cuda/executor/kernels.h"

namespace shapeml::cuda::kern {
namespace {

constexpr int kThreads = 256;

template <class T> __global__ void strided_copy_kernel(const T* __restrict__ in, T* __restrict__ out, const __grid_constant__ Geom g,
                                                       int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, oo = 0, oi = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      int64_t q = rem / g.shape[d], r = rem - q * g.shape[d];
      rem = q;
      oo += r * g.stride[0][d];
      oi += r * g.stride[1][d];
    }
    out[oo] = in[oi];
  }
}

constexpr int kTile = 32, kRows = 8;

// in [B, R, C] -> out [B, C, R]. Block (32, 8) moves one 32x32 tile.
template <class T> __global__ void transpose_tiled_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t cols) {
  __shared__ T tile[kTile][kTile + 1];  // +1: no bank conflicts on the column reads
  const int64_t b = blockIdx.z;
  const T* src = in + b * rows * cols;
  T* dst = out + b * rows * cols;
  const int64_t c0 = int64_t(blockIdx.x) * kTile, r0 = int64_t(blockIdx.y) * kTile;
  for (int j = threadIdx.y; j < kTile; j += kRows) {
    int64_t r = r0 + j, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[j][threadIdx.x] = src[r * cols + c];
  }
  __syncthreads();
  for (int j = threadIdx.y; j < kTile; j += kRows) {
    int64_t c = c0 + j, r = r0 + threadIdx.x;  // out row c, column r
    if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][j];
  }
}

}  // namespace

cudaError_t strided_copy(int64_t esize, const void* in, void* out, const Geom& g, int64_t n, int max_blocks, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  int64_t b = (n + kThreads - 1) / kThreads;
  int blocks = static_cast<int>(b < max_blocks ? b : max_blocks);
  switch (esize) {
    case 1: strided_copy_kernel<uint8_t><<<blocks, kThreads, 0, s>>>(static_cast<const uint8_t*>(in), static_cast<uint8_t*>(out), g, n); break;
    case 2: strided_copy_kernel<uint16_t><<<blocks, kThreads, 0, s>>>(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(out), g, n); break;
    case 4: strided_copy_kernel<uint32_t><<<blocks, kThreads, 0, s>>>(static_cast<const uint32_t*>(in), static_cast<uint32_t*>(out), g, n); break;
    case 8: strided_copy_kernel<uint64_t><<<blocks, kThreads, 0, s>>>(static_cast<const uint64_t*>(in), static_cast<uint64_t*>(out), g, n); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t transpose_tiled(int64_t esize, const void* in, void* out, int64_t batch, int64_t rows, int64_t cols, cudaStream_t s) {
  if (batch == 0 || rows == 0 || cols == 0) return cudaSuccess;
  dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>((rows + kTile - 1) / kTile), static_cast<unsigned>(batch));
  dim3 block(kTile, kRows);
  switch (esize) {
    case 1: transpose_tiled_kernel<uint8_t><<<grid, block, 0, s>>>(static_cast<const uint8_t*>(in), static_cast<uint8_t*>(out), rows, cols); break;
    case 2: transpose_tiled_kernel<uint16_t><<<grid, block, 0, s>>>(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(out), rows, cols); break;
    case 4: transpose_tiled_kernel<uint32_t><<<grid, block, 0, s>>>(static_cast<const uint32_t*>(in), static_cast<uint32_t*>(out), rows, cols); break;
    case 8: transpose_tiled_kernel<uint64_t><<<grid, block, 0, s>>>(static_cast<const uint64_t*>(in), static_cast<uint64_t*>(out), rows, cols); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace shapeml::cuda::kern
