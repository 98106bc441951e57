// Data movement: one strided copy (out[idx . so] = in[idx . si] over an
// iteration space) serves broadcast_to, slice, concat (one launch per
// piece) and general permutes (a group of up to four permutes of one
// geometry in one launch: the head split of Q, K and V); a 32x32 shared-memory tiled kernel serves
// the batched 2-D transpose (coalesced reads and writes). Elements are moved
// as raw bits of their size (1, 2, 4 or 8 bytes).
#include <algorithm>
#include <cstdint>

#include "cuda/executor/dependent_launch.cuh"
#include "cuda/executor/kernels.h"

namespace shapeml::cuda::kern {
namespace {

constexpr int kThreads = 256;

// I: the index type of the divisions (uint32_t below 2^32 elements: a 32-bit
// division is several times cheaper, and this kernel is bound by index math).
template <class T, class I> __global__ void strided_copy_kernel(const T* __restrict__ in, T* __restrict__ out, const __grid_constant__ Geom g,
                                                                int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    I rem = static_cast<I>(i);
    int64_t oo = 0, oi = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      I dim = static_cast<I>(g.shape[d]);
      I q = d > 0 ? rem / dim : I(0), r = d > 0 ? rem - q * dim : rem;  // the outermost index is what is left
      rem = q;
      oo += static_cast<int64_t>(r) * g.stride[0][d];
      oi += static_cast<int64_t>(r) * g.stride[1][d];
    }
    out[oo] = in[oi];
  }
}

// Up to kMaxCopyGroup copies of one geometry in one launch: blockIdx.y
// picks the pair (the head split of Q, K and V).
template <class T, class I> __global__ void strided_copy_group_kernel(CopyGroup pairs, const __grid_constant__ Geom g, int64_t n) {
  const T* __restrict__ in = static_cast<const T*>(pairs.in[blockIdx.y]);
  T* __restrict__ out = static_cast<T*>(pairs.out[blockIdx.y]);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    I rem = static_cast<I>(i);
    int64_t oo = 0, oi = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      I dim = static_cast<I>(g.shape[d]);
      I q = d > 0 ? rem / dim : I(0), r = d > 0 ? rem - q * dim : rem;
      rem = q;
      oo += static_cast<int64_t>(r) * g.stride[0][d];
      oi += static_cast<int64_t>(r) * g.stride[1][d];
    }
    out[oo] = in[oi];
  }
}

template <class T> void launch_group(const CopyGroup& p, const Geom& g, int64_t n, dim3 blocks, cudaStream_t s) {
  if (n <= int64_t{UINT32_MAX}) strided_copy_group_kernel<T, uint32_t><<<blocks, kThreads, 0, s>>>(p, g, n);
  else strided_copy_group_kernel<T, uint64_t><<<blocks, kThreads, 0, s>>>(p, g, n);
}

template <class T> void launch_strided(const void* in, void* out, const Geom& g, int64_t n, int blocks, cudaStream_t s) {
  if (n <= int64_t{UINT32_MAX}) strided_copy_kernel<T, uint32_t><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(in), static_cast<T*>(out), g, n);
  else strided_copy_kernel<T, uint64_t><<<blocks, kThreads, 0, s>>>(static_cast<const T*>(in), static_cast<T*>(out), g, n);
}

// When the innermost dim is contiguous on both sides, `w` elements of it move
// as one wider element (up to 16 bytes): w times fewer index computations and
// vector loads/stores. Needs the innermost size, every other stride and both
// pointers to be multiples of the wider element.
int64_t widening(int64_t esize, const void* in, const void* out, const Geom& g) {
  const int last = g.rank - 1;
  if (g.rank < 1 || g.stride[0][last] != 1 || g.stride[1][last] != 1) return 1;
  for (int64_t w = 16 / esize; w > 1; w /= 2) {
    int64_t bytes = w * esize;
    bool ok = g.shape[last] % w == 0 && reinterpret_cast<uintptr_t>(in) % bytes == 0 && reinterpret_cast<uintptr_t>(out) % bytes == 0;
    for (int d = 0; d < last && ok; ++d) ok = g.stride[0][d] % w == 0 && g.stride[1][d] % w == 0;
    if (ok) return w;
  }
  return 1;
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

cudaError_t strided_copy(int64_t esize, const void* in, void* out, const Geom& g_in, int64_t n, int max_blocks, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  Geom g = g_in;
  if (int64_t w = widening(esize, in, out, g); w > 1) {
    const int last = g.rank - 1;
    g.shape[last] /= w;
    for (int d = 0; d < last; ++d) g.stride[0][d] /= w, g.stride[1][d] /= w;
    esize *= w;
    n /= w;
  }
  int64_t b = (n + kThreads - 1) / kThreads;
  int blocks = static_cast<int>(b < max_blocks ? b : max_blocks);
  switch (esize) {
    case 1: launch_strided<uint8_t>(in, out, g, n, blocks, s); break;
    case 2: launch_strided<uint16_t>(in, out, g, n, blocks, s); break;
    case 4: launch_strided<uint32_t>(in, out, g, n, blocks, s); break;
    case 8: launch_strided<uint64_t>(in, out, g, n, blocks, s); break;
    case 16: launch_strided<uint4>(in, out, g, n, blocks, s); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t strided_copy_group(int64_t esize, const CopyGroup& pairs, const Geom& g_in, int64_t n, int max_blocks, cudaStream_t s) {
  if (n == 0 || pairs.count == 0) return cudaSuccess;
  if (pairs.count < 0 || pairs.count > kMaxCopyGroup) return cudaErrorInvalidValue;
  Geom g = g_in;
  int64_t w = 16 / esize;  // the widest element every pair allows
  for (int k = 0; k < pairs.count; ++k) w = std::min(w, widening(esize, pairs.in[k], pairs.out[k], g_in));
  if (w > 1) {
    const int last = g.rank - 1;
    g.shape[last] /= w;
    for (int d = 0; d < last; ++d) g.stride[0][d] /= w, g.stride[1][d] /= w;
    esize *= w;
    n /= w;
  }
  // The blocks of one launch are shared by the pairs.
  int64_t b = (n + kThreads - 1) / kThreads, per = std::max<int64_t>(1, max_blocks / pairs.count);
  dim3 blocks(static_cast<unsigned>(b < per ? b : per), static_cast<unsigned>(pairs.count));
  switch (esize) {
    case 1: launch_group<uint8_t>(pairs, g, n, blocks, s); break;
    case 2: launch_group<uint16_t>(pairs, g, n, blocks, s); break;
    case 4: launch_group<uint32_t>(pairs, g, n, blocks, s); break;
    case 8: launch_group<uint64_t>(pairs, g, n, blocks, s); break;
    case 16: launch_group<uint4>(pairs, g, n, blocks, s); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

namespace {
__global__ void write_pointers_kernel(void** dst, PointerTable t) {
  // No wait_for_predecessor(): dst is a matmul group's own table (nothing
  // else reads or writes it), so this may overlap the launch before it;
  // the GEMM after it is an ordinary launch, which waits for it.
  if (static_cast<int32_t>(threadIdx.x) < t.n) dst[threadIdx.x] = t.p[threadIdx.x];
}
}  // namespace

cudaError_t write_pointers(void** dst, const PointerTable& t, cudaStream_t s) {
  return launch_dependent(write_pointers_kernel, dim3(1), dim3(32), 0, s, dst, t);
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
