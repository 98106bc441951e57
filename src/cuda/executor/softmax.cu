// Softmax and log-softmax along one axis (kernels.h). The executor views the
// input as a dense [outer, n, inner] tensor; three launch shapes:
//   warp     inner == 1 and n <= 1024 (attention's rows): one warp per row,
//            the row held in registers (n/32 values a lane): one read and
//            one write of global memory, warp-shuffle reductions, no
//            shared memory or block barriers
//   rows     inner == 1, longer rows: one block per row,
//            three passes over the row (max, sum of exponentials, write),
//            block reductions through warp shuffles
//   columns  inner > 1: one thread per (outer, inner) pair, coalesced across
//            threads, the same three passes along the strided axis
// Compute: f32 for f32 and bf16, f64 for f64, and the sum of exponentials
// in f64 for every dtype (as the CPU back end: long rows keep ~1e-8
// relative accuracy; f64 adds are cheap next to the exp). The max is subtracted before
// exp (no overflow for any finite input); NaN anywhere in a row makes the row
// NaN (nan_max), and a row of -inf gives NaN, as PyTorch does. log_softmax is
// (x - max) - log(sum), which keeps the small differences of large logits.
#include "cuda/executor/kernels.h"
#include "cuda/executor/numerics.cuh"

namespace shapeml::cuda::kern {
namespace {

template <class A> __device__ __forceinline__ A neg_inf() { return -static_cast<A>(INFINITY); }

// Reduces `v` over the block (blockDim.x a multiple of 32, at most 1024);
// every thread gets the result. `sh` has 32 slots; `identity` is f's neutral
// element (lanes past the number of warps contribute it: a copy of a warp's
// partial result would be counted twice in a sum).
template <class A, class F> __device__ __forceinline__ A block_reduce(A v, A* sh, F f, A identity) {
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warps = blockDim.x / 32, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (warps == 1) return v;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < warps ? sh[lane] : identity;
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();  // sh is reused by the next reduction
  return v;
}

template <class T> __global__ void softmax_rows(const T* in, T* out, int64_t rows, int64_t n, bool log) {
  using A = typename Compute<T>::type;
  __shared__ A sh[32];
  __shared__ double shd[32];
  auto mx = [](A a, A b) { return nan_max(a, b); };
  auto add = [](double a, double b) { return a + b; };
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* p = in + r * n;
    T* q = out + r * n;
    A m = neg_inf<A>();
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = nan_max(m, static_cast<A>(to_compute(p[j])));
    m = block_reduce(m, sh, mx, neg_inf<A>());
    double sum = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += k_exp(static_cast<A>(to_compute(p[j])) - m);
    sum = block_reduce(sum, shd, add, 0.0);
    const A lsum = log ? static_cast<A>(k_log(sum)) : A(0), inv = static_cast<A>(1.0 / sum);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      A d = static_cast<A>(to_compute(p[j])) - m;
      q[j] = from_compute<T>(log ? d - lsum : k_exp(d) * inv);
    }
  }
}

template <class T, int kPer> __global__ void softmax_warp(const T* in, T* out, int64_t rows, int n, bool log) {
  using A = typename Compute<T>::type;
  const int lane = threadIdx.x % 32;
  const int64_t first = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32, step = int64_t(gridDim.x) * blockDim.x / 32;
  for (int64_t r = first; r < rows; r += step) {
    const T* p = in + r * n;
    T* q = out + r * n;
    A v[kPer];
    A m = neg_inf<A>();
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int j = lane + 32 * k;
      v[k] = j < n ? static_cast<A>(to_compute(p[j])) : neg_inf<A>();
      m = nan_max(m, v[k]);
    }
    for (int o = 16; o > 0; o >>= 1) m = nan_max(m, __shfl_xor_sync(0xffffffffu, m, o));
    double sum = 0;
#pragma unroll
    for (int k = 0; k < kPer; ++k)
      if (lane + 32 * k < n) sum += k_exp(v[k] - m);
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const A lsum = log ? static_cast<A>(k_log(sum)) : A(0), inv = static_cast<A>(1.0 / sum);
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int j = lane + 32 * k;
      if (j < n) q[j] = from_compute<T>(log ? (v[k] - m) - lsum : k_exp(v[k] - m) * inv);
    }
  }
}

template <class T> __global__ void softmax_columns(const T* in, T* out, int64_t outer, int64_t n, int64_t inner, bool log) {
  using A = typename Compute<T>::type;
  const int64_t total = outer * inner;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = t / inner, i = t - o * inner;
    const T* p = in + o * n * inner + i;
    T* q = out + o * n * inner + i;
    A m = neg_inf<A>();
    for (int64_t j = 0; j < n; ++j) m = nan_max(m, static_cast<A>(to_compute(p[j * inner])));
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += k_exp(static_cast<A>(to_compute(p[j * inner])) - m);
    const A lsum = log ? static_cast<A>(k_log(sum)) : A(0), inv = static_cast<A>(1.0 / sum);
    for (int64_t j = 0; j < n; ++j) {
      A d = static_cast<A>(to_compute(p[j * inner])) - m;
      q[j * inner] = from_compute<T>(log ? d - lsum : k_exp(d) * inv);
    }
  }
}

template <class T> cudaError_t launch(bool log, const void* in, void* out, int64_t outer, int64_t n, int64_t inner, int max_blocks,
                                      cudaStream_t s) {
  const T* pi = static_cast<const T*>(in);
  T* po = static_cast<T*>(out);
  if (inner == 1 && n <= 1024) {
    const int warps_per_block = 4;
    int64_t b = (outer + warps_per_block - 1) / warps_per_block;
    if (b > max_blocks) b = max_blocks;
    const int ni = static_cast<int>(n), blocks = static_cast<int>(b), threads = 32 * warps_per_block;
    if (n <= 32) softmax_warp<T, 1><<<blocks, threads, 0, s>>>(pi, po, outer, ni, log);
    else if (n <= 64) softmax_warp<T, 2><<<blocks, threads, 0, s>>>(pi, po, outer, ni, log);
    else if (n <= 128) softmax_warp<T, 4><<<blocks, threads, 0, s>>>(pi, po, outer, ni, log);
    else if (n <= 256) softmax_warp<T, 8><<<blocks, threads, 0, s>>>(pi, po, outer, ni, log);
    else if (n <= 512) softmax_warp<T, 16><<<blocks, threads, 0, s>>>(pi, po, outer, ni, log);
    else softmax_warp<T, 32><<<blocks, threads, 0, s>>>(pi, po, outer, ni, log);
  } else if (inner == 1) {
    // Enough threads to cover short rows in one sweep, at most 256.
    int threads = n >= 256 ? 256 : static_cast<int>((n + 31) / 32 * 32);
    int64_t b = outer < max_blocks ? outer : max_blocks;
    softmax_rows<T><<<static_cast<int>(b), threads, 0, s>>>(pi, po, outer, n, log);
  } else {
    int64_t b = (outer * inner + 255) / 256;
    if (b > max_blocks) b = max_blocks;
    softmax_columns<T><<<static_cast<int>(b), 256, 0, s>>>(pi, po, outer, n, inner, log);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t softmax(DT dt, bool log, const void* in, void* out, int64_t outer, int64_t n, int64_t inner, int max_blocks, cudaStream_t s) {
  if (outer == 0 || n == 0 || inner == 0) return cudaSuccess;
  switch (dt) {
    case DT::F32: return launch<float>(log, in, out, outer, n, inner, max_blocks, s);
    case DT::F64: return launch<double>(log, in, out, outer, n, inner, max_blocks, s);
    case DT::BF16: return launch<bf16>(log, in, out, outer, n, inner, max_blocks, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace shapeml::cuda::kern
