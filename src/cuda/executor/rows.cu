// Fused row and gated kernels the planner chooses for recognized patterns
// (kernels.h; docs/design/gpu-fused-kernels.md):
//   rmsnorm  one block per row (whole warps, just enough for the row in
//            16-byte loads where the row allows): the sum of squares over the
//            block, then the row scaled and stored; one launch instead of
//            seven. Rows of up to 2048 16-byte packs stay in registers (one
//            read); longer ones are read a second time (from L1/L2)
//   gated    act(a) * b elementwise, 16-byte loads when both inputs and the
//            output are aligned and the length allows; one launch and one
//            pass over the product instead of two
// Compute in f32 for f32 and bf16, f64 for f64; bf16 is rounded once, when
// stored. 64-bit indices throughout (rows * n may exceed 2^32).
#include <cstdint>

#include "cuda/executor/dependent_launch.cuh"
#include "cuda/executor/grid.cuh"
#include "cuda/executor/kernels.h"
#include "cuda/executor/numerics.cuh"

namespace shapeml::cuda::kern {
namespace {

template <class T, int kV> struct alignas(sizeof(T) * kV) Pack { T v[kV]; };

template <class A> __device__ __forceinline__ A block_sum(A v, A* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warps = blockDim.x / 32, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (warps == 1) return v;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  v = lane < warps ? sh[lane] : A(0);
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();  // sh is reused by the next row
  return v;
}

// kV elements a load; n % kV == 0 and every pointer aligned to kV elements
// when kV > 1.
template <class T, int kV> __global__ void __launch_bounds__(1024) rmsnorm_rows(const T* x, const T* g, T* out, int64_t rows, int64_t n, double eps) {
  wait_for_predecessor();
  using A = typename Compute<T>::type;
  using P = Pack<T, kV>;
  __shared__ A sh[32];
  const int64_t packs = n / kV;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const P* xr = reinterpret_cast<const P*>(x + r * n);
    A ss = 0;
    for (int64_t k = threadIdx.x; k < packs; k += blockDim.x) {
      const P p = xr[k];
#pragma unroll
      for (int e = 0; e < kV; ++e) {
        const A v = to_compute(p.v[e]);
        ss += v * v;
      }
    }
    ss = block_sum(ss, sh);
    const A inv = A(1) / k_sqrt(ss / static_cast<A>(n) + static_cast<A>(eps));
    P* o = reinterpret_cast<P*>(out + r * n);
    const P* gp = reinterpret_cast<const P*>(g);
    for (int64_t k = threadIdx.x; k < packs; k += blockDim.x) {
      const P p = xr[k], w = gp[k];
      P q;
#pragma unroll
      for (int e = 0; e < kV; ++e) q.v[e] = from_compute<T>((to_compute(p.v[e]) * inv) * to_compute(w.v[e]));
      o[k] = q;
    }
  }
}

// The row held in registers: kPer packs a thread (pack k = threadIdx.x +
// j * blockDim.x), read once from memory, g's packs read before the block
// reduction so that their latency hides behind it; rows of up to
// kPer * blockDim.x packs (launch_rmsnorm picks the block).
template <class T, int kV, int kPer>
__global__ void __launch_bounds__(1024) rmsnorm_rows_held(const T* x, const T* g, T* out, int64_t rows, int64_t n, double eps) {
  wait_for_predecessor();
  using A = typename Compute<T>::type;
  using P = Pack<T, kV>;
  __shared__ A sh[32];
  const int64_t packs = n / kV;
  const P* gp = reinterpret_cast<const P*>(g);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const P* xr = reinterpret_cast<const P*>(x + r * n);
    P held[kPer], w[kPer];
    A ss = 0;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t k = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
      if (k < packs) {
        held[j] = xr[k];
#pragma unroll
        for (int e = 0; e < kV; ++e) {
          const A v = to_compute(held[j].v[e]);
          ss += v * v;
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t k = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
      if (k < packs) w[j] = gp[k];
    }
    ss = block_sum(ss, sh);
    const A inv = A(1) / k_sqrt(ss / static_cast<A>(n) + static_cast<A>(eps));
    P* o = reinterpret_cast<P*>(out + r * n);
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t k = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
      if (k < packs) {
        P q;
#pragma unroll
        for (int e = 0; e < kV; ++e) q.v[e] = from_compute<T>((to_compute(held[j].v[e]) * inv) * to_compute(w[j].v[e]));
        o[k] = q;
      }
    }
  }
}

bool aligned(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0; }

template <class T> cudaError_t launch_rmsnorm(const void* x, const void* g, void* out, int64_t rows, int64_t n, double eps, int max_blocks,
                                              cudaStream_t s) {
  constexpr int kV = 16 / sizeof(T);
  const bool vec = n % kV == 0 && aligned(x, 16) && aligned(g, 16) && aligned(out, 16);
  const int64_t packs = vec ? n / kV : n;
  // Whole warps, one or two packs a thread, at most 1024 threads.
  int64_t threads = (packs + 63) / 64 * 32;
  threads = threads < 32 ? 32 : threads > 1024 ? 1024 : threads;
  const int blocks = static_cast<int>(rows < max_blocks ? rows : max_blocks);
  const T* px = static_cast<const T*>(x);
  const T* pg = static_cast<const T*>(g);
  T* po = static_cast<T*>(out);
  constexpr int kPer = 2;
  if (vec && packs <= 1024 * kPer) {  // the row fits in the block's registers: one read of it
    int64_t held = (packs + kPer - 1) / kPer;
    held = (held + 31) / 32 * 32;
    return launch_dependent(rmsnorm_rows_held<T, kV, kPer>, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(held)), 0, s, px, pg,
                            po, rows, n, eps);
  }
  return launch_dependent(vec ? rmsnorm_rows<T, kV> : rmsnorm_rows<T, 1>, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads)), 0, s,
                          px, pg, po, rows, n, eps);
}

// kAct >= 0: the activation fixed at compile time (silu, gelu: the switch
// folds away); -1: `act` chosen at run time.
template <class T, int kV, int kAct> __global__ void gated_kernel(int32_t act, const T* a, const T* b, T* out, int64_t packs) {
  wait_for_predecessor();
  if constexpr (kAct >= 0) act = kAct;
  using P = Pack<T, kV>;
  const P* pa = reinterpret_cast<const P*>(a);
  const P* pb = reinterpret_cast<const P*>(b);
  P* po = reinterpret_cast<P*>(out);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < packs; i += int64_t(gridDim.x) * blockDim.x) {
    const P x = pa[i], y = pb[i];
    P q;
#pragma unroll
    for (int e = 0; e < kV; ++e) q.v[e] = from_compute<T>(unary_op(act, to_compute(x.v[e])) * to_compute(y.v[e]));
    po[i] = q;
  }
}

template <class T, int kAct>
cudaError_t launch_gated_as(int32_t act, const void* a, const void* b, void* out, int64_t n, int max_blocks, cudaStream_t s) {
  constexpr int kV = 16 / sizeof(T);
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  T* po = static_cast<T*>(out);
  if (n % kV == 0 && aligned(a, 16) && aligned(b, 16) && aligned(out, 16))
    return launch_dependent(gated_kernel<T, kV, kAct>, dim3(static_cast<unsigned>(blocks_for(n / kV, max_blocks))), dim3(kThreads), 0, s, act, pa, pb, po,
                            n / kV);
  return launch_dependent(gated_kernel<T, 1, kAct>, dim3(static_cast<unsigned>(blocks_for(n, max_blocks))), dim3(kThreads), 0, s, act, pa, pb, po, n);
}

template <class T> cudaError_t launch_gated(int32_t act, const void* a, const void* b, void* out, int64_t n, int max_blocks, cudaStream_t s) {
  if (act == U_SILU) return launch_gated_as<T, U_SILU>(act, a, b, out, n, max_blocks, s);
  if (act == U_GELU) return launch_gated_as<T, U_GELU>(act, a, b, out, n, max_blocks, s);
  return launch_gated_as<T, -1>(act, a, b, out, n, max_blocks, s);
}

}  // namespace

cudaError_t rmsnorm(DT dt, const void* x, const void* g, void* out, int64_t rows, int64_t n, double eps, int max_blocks, cudaStream_t s) {
  if (rows == 0 || n == 0) return cudaSuccess;
  switch (dt) {
    case DT::F32: return launch_rmsnorm<float>(x, g, out, rows, n, eps, max_blocks, s);
    case DT::F64: return launch_rmsnorm<double>(x, g, out, rows, n, eps, max_blocks, s);
    case DT::BF16: return launch_rmsnorm<bf16>(x, g, out, rows, n, eps, max_blocks, s);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t gated(DT dt, int32_t act, const void* a, const void* b, void* out, int64_t n, int max_blocks, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (dt) {
    case DT::F32: return launch_gated<float>(act, a, b, out, n, max_blocks, s);
    case DT::F64: return launch_gated<double>(act, a, b, out, n, max_blocks, s);
    case DT::BF16: return launch_gated<bf16>(act, a, b, out, n, max_blocks, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace shapeml::cuda::kern
