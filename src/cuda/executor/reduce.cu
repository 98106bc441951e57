// Reductions (sum, max, min, mean) over any set of axes. The executor splits the
// input's dims into kept dims (the outputs, row-major) and reduced dims,
// each with the input's strides; two launch shapes:
//   thread per output  coalesced when the innermost input dim is kept
//   block per output   256 threads stride over the reduced elements, then a
//                      shared-memory tree; for innermost reductions
// Accumulation: f32 and bf16 in f32, f64 in f64, integers in their own type
// (wrapping); max/min propagate NaN and start from -inf/+inf or the integer
// minimum/maximum;
// mean divides the sum by the count (0/0 = NaN for an empty reduction).
#include <climits>
#include <type_traits>

#include "cuda/executor/kernels.h"
#include "cuda/executor/numerics.cuh"

namespace shapeml::cuda::kern {
namespace {

constexpr int kThreads = 256;

template <class A> __device__ __forceinline__ A lowest() {
  if constexpr (std::is_same_v<A, float>) return -INFINITY;
  else if constexpr (std::is_same_v<A, double>) return -static_cast<double>(INFINITY);
  else if constexpr (std::is_same_v<A, int32_t>) return INT32_MIN;
  else return INT64_MIN;
}

template <class A> __device__ __forceinline__ A highest() {
  if constexpr (std::is_same_v<A, float>) return INFINITY;
  else if constexpr (std::is_same_v<A, double>) return static_cast<double>(INFINITY);
  else if constexpr (std::is_same_v<A, int32_t>) return INT32_MAX;
  else return INT64_MAX;
}

template <class A> __device__ __forceinline__ A init(int32_t op) { return op == R_MAX ? lowest<A>() : op == R_MIN ? highest<A>() : A(0); }
template <class A> __device__ __forceinline__ A combine(int32_t op, A acc, A x) {
  return op == R_MAX ? nan_max(acc, x) : op == R_MIN ? nan_min(acc, x) : wrap_add(acc, x);
}
template <class T, class A> __device__ __forceinline__ T finish(int32_t op, A acc, int64_t count) {
  if constexpr (is_floating_v<A>) {
    if (op == R_MEAN) acc = acc / static_cast<A>(count);
  }
  return from_compute<T>(acc);
}

__device__ __forceinline__ int64_t keep_offset(const ReduceGeom& g, int64_t o) {
  int64_t off = 0;
  for (int d = g.keep_rank - 1; d >= 0; --d) {
    int64_t q = o / g.keep_shape[d];
    off += (o - q * g.keep_shape[d]) * g.keep_stride[d];
    o = q;
  }
  return off;
}

__device__ __forceinline__ int64_t red_offset(const ReduceGeom& g, int64_t j) {
  if (g.red_rank == 1) return j * g.red_stride[0];
  int64_t off = 0;
  for (int d = g.red_rank - 1; d >= 0; --d) {
    int64_t q = j / g.red_shape[d];
    off += (j - q * g.red_shape[d]) * g.red_stride[d];
    j = q;
  }
  return off;
}

template <class T> __global__ void reduce_thread(const T* __restrict__ in, T* __restrict__ out, const __grid_constant__ ReduceGeom g,
                                                 int32_t op) {
  using A = typename Compute<T>::type;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < g.n_out; o += int64_t(gridDim.x) * blockDim.x) {
    const T* p = in + keep_offset(g, o);
    A acc = init<A>(op);
    for (int64_t j = 0; j < g.n_red; ++j) acc = combine(op, acc, static_cast<A>(to_compute(p[red_offset(g, j)])));
    out[o] = finish<T>(op, acc, g.n_red);
  }
}

template <class T> __global__ void reduce_block(const T* __restrict__ in, T* __restrict__ out, const __grid_constant__ ReduceGeom g,
                                                int32_t op) {
  using A = typename Compute<T>::type;
  __shared__ A sh[kThreads];
  for (int64_t o = blockIdx.x; o < g.n_out; o += gridDim.x) {
    const T* p = in + keep_offset(g, o);
    A acc = init<A>(op);
    for (int64_t j = threadIdx.x; j < g.n_red; j += blockDim.x) acc = combine(op, acc, static_cast<A>(to_compute(p[red_offset(g, j)])));
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int w = kThreads / 2; w > 0; w >>= 1) {
      if (threadIdx.x < w) sh[threadIdx.x] = combine(op, sh[threadIdx.x], sh[threadIdx.x + w]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[o] = finish<T>(op, sh[0], g.n_red);
    __syncthreads();  // sh is reused by the next output
  }
}

template <class T> cudaError_t launch(const void* in, void* out, const ReduceGeom& g, int32_t op, int max_blocks, cudaStream_t s) {
  const T* pi = static_cast<const T*>(in);
  T* po = static_cast<T*>(out);
  if (g.block_per_output) {
    int64_t b = g.n_out < max_blocks ? g.n_out : max_blocks;
    reduce_block<T><<<static_cast<int>(b), kThreads, 0, s>>>(pi, po, g, op);
  } else {
    int64_t b = (g.n_out + kThreads - 1) / kThreads;
    if (b > max_blocks) b = max_blocks;
    reduce_thread<T><<<static_cast<int>(b), kThreads, 0, s>>>(pi, po, g, op);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t reduce(DT dt, int32_t op, const void* in, void* out, const ReduceGeom& g, int max_blocks, cudaStream_t s) {
  if (g.n_out == 0) return cudaSuccess;
  switch (dt) {
    case DT::F32: return launch<float>(in, out, g, op, max_blocks, s);
    case DT::F64: return launch<double>(in, out, g, op, max_blocks, s);
    case DT::BF16: return launch<bf16>(in, out, g, op, max_blocks, s);
    case DT::I32: return launch<int32_t>(in, out, g, op, max_blocks, s);
    case DT::I64: return launch<int64_t>(in, out, g, op, max_blocks, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace shapeml::cuda::kern
