// Inclusive prefix sums (cumsum) along the middle axis of a dense
// [outer, n, inner] tensor, forwards or from the end. Two launch shapes:
//   row    inner == 1 and n >= kRowMin: one block per row, cub::BlockScan
//          over chunks of kThreads elements, the running total carried from
//          chunk to chunk (coalesced reads and writes)
//   lanes  otherwise: one thread per (outer, inner) lane walking the axis,
//          coalesced across threads when inner > 1
// Accumulation as the CPU back end's (spec §4.27): f32 in f64, bf16 in f32,
// f64 in f64, integers in their own type (wrapping); every output is the
// running sum rounded once to the storage type.
#include <cub/block/block_scan.cuh>

#include "cuda/executor/grid.cuh"
#include "cuda/executor/kernels.h"
#include "cuda/executor/numerics.cuh"

namespace shapeml::cuda::kern {
namespace {

constexpr int64_t kRowMin = 64;  // shorter rows: one thread walks a row

template <class T> struct ScanAcc { using type = typename Compute<T>::type; };
template <> struct ScanAcc<float> { using type = double; };

template <class A> struct WrapAdd {
  __device__ __forceinline__ A operator()(A a, A b) const { return wrap_add(a, b); }
};

template <class T, class A> __device__ __forceinline__ T store(A acc) {
  return from_compute<T>(static_cast<typename Compute<T>::type>(acc));
}

template <class T> __global__ void scan_lanes(const T* __restrict__ in, T* __restrict__ out, int64_t outer, int64_t n, int64_t inner, bool reverse) {
  using A = typename ScanAcc<T>::type;
  const int64_t lanes = outer * inner;
  for (int64_t lane = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; lane < lanes; lane += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = lane / inner, i = lane - o * inner;
    const T* src = in + o * n * inner + i;
    T* dst = out + o * n * inner + i;
    A acc = A(0);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t at = (reverse ? n - 1 - k : k) * inner;
      acc = wrap_add(acc, static_cast<A>(to_compute(src[at])));
      dst[at] = store<T>(acc);
    }
  }
}

template <class T> __global__ void scan_rows(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t n, bool reverse) {
  using A = typename ScanAcc<T>::type;
  using Scan = cub::BlockScan<A, kThreads>;
  __shared__ typename Scan::TempStorage tmp;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* src = in + r * n;
    T* dst = out + r * n;
    A carry = A(0);
    for (int64_t c = 0; c < n; c += kThreads) {
      const int64_t k = c + threadIdx.x;
      const int64_t at = reverse ? n - 1 - k : k;
      A v = k < n ? static_cast<A>(to_compute(src[at])) : A(0);
      A total;
      Scan(tmp).InclusiveScan(v, v, WrapAdd<A>(), total);
      v = wrap_add(v, carry);
      if (k < n) dst[at] = store<T>(v);
      carry = wrap_add(carry, total);
      __syncthreads();  // tmp is reused by the next chunk
    }
  }
}

template <class T> cudaError_t launch(const void* in, void* out, int64_t outer, int64_t n, int64_t inner, bool reverse, int max_blocks, cudaStream_t s) {
  const T* pi = static_cast<const T*>(in);
  T* po = static_cast<T*>(out);
  if (inner == 1 && n >= kRowMin) {
    const int64_t b = outer < max_blocks ? outer : max_blocks;
    scan_rows<T><<<static_cast<int>(b), kThreads, 0, s>>>(pi, po, outer, n, reverse);
  } else {
    scan_lanes<T><<<blocks_for(outer * inner, max_blocks), kThreads, 0, s>>>(pi, po, outer, n, inner, reverse);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t scan(DT dt, const void* in, void* out, int64_t outer, int64_t n, int64_t inner, bool reverse, int max_blocks, cudaStream_t s) {
  if (outer == 0 || n == 0 || inner == 0) return cudaSuccess;
  switch (dt) {
    case DT::F32: return launch<float>(in, out, outer, n, inner, reverse, max_blocks, s);
    case DT::F64: return launch<double>(in, out, outer, n, inner, reverse, max_blocks, s);
    case DT::BF16: return launch<bf16>(in, out, outer, n, inner, reverse, max_blocks, s);
    case DT::I32: return launch<int32_t>(in, out, outer, n, inner, reverse, max_blocks, s);
    case DT::I64: return launch<int64_t>(in, out, outer, n, inner, reverse, max_blocks, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace shapeml::cuda::kern
