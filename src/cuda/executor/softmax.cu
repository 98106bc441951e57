// Softmax and log-softmax along one axis (kernels.h). The executor views the
// input as a dense [outer, n, inner] tensor; four launch shapes:
//   warp     inner == 1, n <= 512 (attention's rows): one warp per row, the
//            row held in registers (up to 16 values a lane)
//   block    inner == 1, n <= 8192 (4096 for f64; 16384 for f32 rows of
//            vector loads): one block per row, the row held in registers
//            (16 values a thread, 8 for f64)
//   online   inner == 1, longer rows: one block per row, two reads of the row
//            (max and sum of exponentials together, rescaling the running
//            sum when the running max grows; then the write)
//   columns  inner > 1: one thread per (outer, inner) pair, coalesced across
//            threads, three passes along the strided axis
// The first three read the row with 16-byte vector loads when the row length
// is a multiple of 4 and both buffers are 16-byte aligned (f32), else with
// scalar loads; one read and one write of global memory for warp and block.
//
// Accuracy: compute in f32 for f32 and bf16, f64 for f64. The sum of
// exponentials is added in f32 within a group of 4 consecutive values
// (pairwise: at most 2 roundings, relative error <= 2^-23) and in f64 across
// groups, lanes and warps, so a row of any length keeps ~1e-7 relative
// accuracy (the CPU back end sums in f64; the kernel tests hold 2e-6 against
// float64). The max is subtracted before exp (no overflow for any finite
// input); NaN anywhere in a row makes the row NaN (nan_max), and a row of
// -inf gives NaN, as PyTorch does. log_softmax is (x - max) - log(sum), which
// keeps the small differences of large logits. Measured against cuDNN and
// PyTorch in docs/design/gpu-kernels.md.
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

// log(sum) and 1/sum in the compute type, from the f64 sum rounded once: f32
// logf and division are within an ulp, and far cheaper than f64 log and
// division, which every lane of a row would otherwise compute.
template <class A> __device__ __forceinline__ void row_scale(double sum, bool log, A& lsum, A& inv) {
  const A s = static_cast<A>(sum);
  lsum = log ? k_log(s) : A(0);
  inv = A(1) / s;
}

// The causal mask of a launch (Mask in kernels.h): row r of the [outer, n]
// rows is at position r % rows along the masked axis and keeps the columns
// j <= position + offset; all n without a mask.
__device__ __forceinline__ int64_t row_valid(const Mask& m, int64_t r, int64_t n) {
  if (m.rows <= 0) return n;
  const int64_t keep = r % m.rows + m.offset + 1;
  return keep < 0 ? 0 : keep > n ? n : keep;
}

template <class A, class F> __device__ __forceinline__ A warp_reduce(A v, F f) {
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum of exp(x[k] - m) over kN values: f32 pairs of pairs, f64 across groups
// of 4 (see the accuracy note above). For f64, all in f64.
template <class A, int kN> __device__ __forceinline__ double sum_exp(const A* x, A m) {
  double s = 0;
#pragma unroll
  for (int k = 0; k < kN; k += 4) {
    A e0 = k_exp(x[k] - m), e1 = k + 1 < kN ? k_exp(x[k + 1] - m) : A(0);
    A e2 = k + 2 < kN ? k_exp(x[k + 2] - m) : A(0), e3 = k + 3 < kN ? k_exp(x[k + 3] - m) : A(0);
    s += static_cast<double>((e0 + e1) + (e2 + e3));
  }
  return s;
}

// The row's values this thread holds: kPer values, in runs of kV consecutive
// elements, run i of thread t at element (i * group + t) * kV (coalesced
// across the group). Out-of-row slots, and columns at or past `valid` (the
// causal mask; valid <= n), hold -inf (exp gives 0), exactly as a `select`
// of -inf before the softmax would.
template <class T, int kPer, int kV> __device__ __forceinline__ void load_row(const T* p, int64_t n, int64_t valid, int group, int t,
                                                                            typename Compute<T>::type (&v)[kPer]) {
  using A = typename Compute<T>::type;
#pragma unroll
  for (int i = 0; i < kPer / kV; ++i) {
    const int base = (i * group + t) * kV;  // a held row is at most 16384 long
    if constexpr (kV == 4) {
      static_assert(sizeof(T) == 4, "vector loads are for 4-byte types");
      if (base < n) {  // n % 4 == 0: the whole run is in the row
        const float4 f = *reinterpret_cast<const float4*>(p + base);
        v[4 * i] = f.x, v[4 * i + 1] = f.y, v[4 * i + 2] = f.z, v[4 * i + 3] = f.w;
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (base + e >= valid) v[4 * i + e] = neg_inf<A>();
      } else {
        v[4 * i] = v[4 * i + 1] = v[4 * i + 2] = v[4 * i + 3] = neg_inf<A>();
      }
    } else {
      v[i] = base < valid ? static_cast<A>(to_compute(p[base])) : neg_inf<A>();
    }
  }
}

// Writes out[j] = log ? (x - m) - lsum : exp(x - m) * inv for the held values.
template <class T, int kPer, int kV> __device__ __forceinline__ void store_row(T* q, int64_t n, int group, int t,
                                                                             const typename Compute<T>::type (&v)[kPer],
                                                                             typename Compute<T>::type m, bool log,
                                                                             typename Compute<T>::type lsum,
                                                                             typename Compute<T>::type inv) {
  using A = typename Compute<T>::type;
#pragma unroll
  for (int i = 0; i < kPer / kV; ++i) {
    const int base = (i * group + t) * kV;
    if (base >= n) continue;
    A r[kV];
#pragma unroll
    for (int e = 0; e < kV; ++e) r[e] = log ? (v[kV * i + e] - m) - lsum : k_exp(v[kV * i + e] - m) * inv;
    if constexpr (kV == 4) {
      *reinterpret_cast<float4*>(q + base) = make_float4(r[0], r[1], r[2], r[3]);
    } else {
      q[base] = from_compute<T>(r[0]);
    }
  }
}

// One warp per row; `kPer` values a lane (a row of up to 32 * kPer). (Two
// rows a warp for short rows, as PyTorch does, measured no faster at 128.)
template <class T, int kPer, int kV> __global__ void __launch_bounds__(256) softmax_warp(const T* in, T* out, int64_t rows, int n, bool log, Mask mask) {
  using A = typename Compute<T>::type;
  const int lane = threadIdx.x % 32;
  const int64_t first = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32, step = int64_t(gridDim.x) * blockDim.x / 32;
  auto mx = [](A a, A b) { return nan_max(a, b); };
  auto add = [](double a, double b) { return a + b; };
  for (int64_t r = first; r < rows; r += step) {
    A v[kPer];
    load_row<T, kPer, kV>(in + r * n, n, row_valid(mask, r, n), 32, lane, v);
    A m = neg_inf<A>();
#pragma unroll
    for (int k = 0; k < kPer; ++k) m = nan_max(m, v[k]);
    m = warp_reduce(m, mx);
    const double sum = warp_reduce(sum_exp<A, kPer>(v, m), add);
    A lsum, inv;
    row_scale(sum, log, lsum, inv);
    store_row<T, kPer, kV>(out + r * n, n, 32, lane, v, m, log, lsum, inv);
  }
}

// One block per row; `kPer` values a thread (a row of up to blockDim * kPer).
template <class T, int kPer, int kV, int kMaxThreads> __global__ void __launch_bounds__(kMaxThreads) softmax_block(const T* in, T* out, int64_t rows, int64_t n, bool log, Mask mask) {
  using A = typename Compute<T>::type;
  __shared__ A sh[32];
  __shared__ double shd[32];
  auto mx = [](A a, A b) { return nan_max(a, b); };
  auto add = [](double a, double b) { return a + b; };
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    A v[kPer];
    load_row<T, kPer, kV>(in + r * n, n, row_valid(mask, r, n), blockDim.x, threadIdx.x, v);
    A m = neg_inf<A>();
#pragma unroll
    for (int k = 0; k < kPer; ++k) m = nan_max(m, v[k]);
    m = block_reduce(m, sh, mx, neg_inf<A>());
    const double sum = block_reduce(sum_exp<A, kPer>(v, m), shd, add, 0.0);
    A lsum, inv;
    row_scale(sum, log, lsum, inv);
    store_row<T, kPer, kV>(out + r * n, n, blockDim.x, threadIdx.x, v, m, log, lsum, inv);
  }
}

// One block per row of any length: the running max and sum of exponentials
// of the thread's runs in one read (the sum rescaled when the max grows),
// combined over the block, then a second read to write.
template <class T, int kV> __global__ void __launch_bounds__(512) softmax_online(const T* in, T* out, int64_t rows, int64_t n, bool log, Mask mask) {
  using A = typename Compute<T>::type;
  __shared__ A sh[32];
  __shared__ double shd[32];
  auto mx = [](A a, A b) { return nan_max(a, b); };
  auto add = [](double a, double b) { return a + b; };
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* p = in + r * n;
    T* q = out + r * n;
    const int64_t valid = row_valid(mask, r, n);
    A m = neg_inf<A>();
    double s = 0;
    for (int64_t base = int64_t(threadIdx.x) * kV; base < n; base += int64_t(blockDim.x) * kV) {
      A v[kV];
      load_row<T, kV, kV>(p + base, n - base, valid - base, 1, 0, v);
      A cm = m;
#pragma unroll
      for (int e = 0; e < kV; ++e) cm = nan_max(cm, v[e]);
      // Rescale to the new max (nothing to rescale while the sum is 0, which
      // also avoids -inf - -inf); a NaN max makes everything NaN, as it must.
      if (!(cm == m)) s = s == 0 ? 0.0 : s * static_cast<double>(k_exp(m - cm));
      m = cm;
      if (m != neg_inf<A>()) s += sum_exp<A, kV>(v, m);  // all -inf so far: nothing to add (and -inf - -inf is NaN)
    }
    const A row_max = block_reduce(m, sh, mx, neg_inf<A>());
    // This thread's sum relative to the row's max (0 for a thread that saw
    // nothing, or only values below a finite max at -inf).
    if (!(m == row_max)) s = s == 0 ? 0.0 : s * static_cast<double>(k_exp(m - row_max));
    // A row of -inf: every s is 0, and PyTorch's answer is NaN (row_max is
    // the block's: every thread takes the same branch).
    const double sum = row_max == neg_inf<A>() ? static_cast<double>(NAN) : block_reduce(s, shd, add, 0.0);
    A lsum, inv;
    row_scale(sum, log, lsum, inv);
    for (int64_t base = int64_t(threadIdx.x) * kV; base < n; base += int64_t(blockDim.x) * kV) {
      A v[kV];
      load_row<T, kV, kV>(p + base, n - base, valid - base, 1, 0, v);
      store_row<T, kV, kV>(q + base, n - base, 1, 0, v, row_max, log, lsum, inv);
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
    A lsum, inv;
    row_scale(sum, log, lsum, inv);
    for (int64_t j = 0; j < n; ++j) {
      A d = static_cast<A>(to_compute(p[j * inner])) - m;
      q[j * inner] = from_compute<T>(log ? d - lsum : k_exp(d) * inv);
    }
  }
}

int grid(int64_t want, int max_blocks) { return static_cast<int>(want < max_blocks ? want : max_blocks); }

// The warp kernel for a row of n <= 512: the fewest values a lane (a power
// of two, at least kV) that cover the row.
template <class T, int kV> void launch_warp(bool log, const T* in, T* out, int64_t rows, int n, Mask mask, int max_blocks, cudaStream_t s) {
  const int warps_per_block = 8, blocks = grid((rows + warps_per_block - 1) / warps_per_block, max_blocks), threads = 32 * warps_per_block;
  if constexpr (kV == 1) {
    if (n <= 32) softmax_warp<T, 1, 1><<<blocks, threads, 0, s>>>(in, out, rows, n, log, mask);
    else if (n <= 64) softmax_warp<T, 2, 1><<<blocks, threads, 0, s>>>(in, out, rows, n, log, mask);
    else if (n <= 128) softmax_warp<T, 4, 1><<<blocks, threads, 0, s>>>(in, out, rows, n, log, mask);
    else if (n <= 256) softmax_warp<T, 8, 1><<<blocks, threads, 0, s>>>(in, out, rows, n, log, mask);
    else softmax_warp<T, 16, 1><<<blocks, threads, 0, s>>>(in, out, rows, n, log, mask);
  } else {
    if (n <= 128) softmax_warp<T, 4, 4><<<blocks, threads, 0, s>>>(in, out, rows, n, log, mask);
    else if (n <= 256) softmax_warp<T, 8, 4><<<blocks, threads, 0, s>>>(in, out, rows, n, log, mask);
    else softmax_warp<T, 16, 4><<<blocks, threads, 0, s>>>(in, out, rows, n, log, mask);
  }
}

// The block kernel with `kPer` values a thread: just enough threads (whole
// warps, at most kMaxThreads) for the row.
template <class T, int kPer, int kMaxThreads> void launch_block(bool log, bool vec, const T* in, T* out, int64_t rows, int64_t n, Mask mask, int max_blocks,
                                               cudaStream_t s) {
  const int threads = static_cast<int>((n + 32 * kPer - 1) / (32 * kPer) * 32);
  if constexpr (sizeof(T) == 4) {
    if (vec) {
      softmax_block<T, kPer, 4, kMaxThreads><<<grid(rows, max_blocks), threads, 0, s>>>(in, out, rows, n, log, mask);
      return;
    }
  }
  softmax_block<T, kPer, 1, kMaxThreads><<<grid(rows, max_blocks), threads, 0, s>>>(in, out, rows, n, log, mask);
}

template <class T> cudaError_t launch(bool log, const void* in, void* out, int64_t outer, int64_t n, int64_t inner, Mask mask, int max_blocks,
                                      cudaStream_t s) {
  const T* pi = static_cast<const T*>(in);
  T* po = static_cast<T*>(out);
  if (inner != 1) {
    if (mask.rows > 0) return cudaErrorInvalidValue;  // the executor masks only the innermost axis
    softmax_columns<T><<<grid((outer * inner + 255) / 256, max_blocks), 256, 0, s>>>(pi, po, outer, n, inner, log);
    return cudaGetLastError();
  }
  // 16-byte loads: f32 rows of a multiple of 4 elements in aligned buffers.
  const bool vec = sizeof(T) == 4 && n % 4 == 0 && reinterpret_cast<uintptr_t>(in) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  // At most 16 values a thread (more registers a thread cost occupancy:
  // measured on the H200, docs/design/gpu-kernels.md), in blocks of up to
  // 512 threads, then 1024 for vector rows up to 16384; f64 holds at most 8
  // (more spill at 512 threads).
  if (n <= 512) {
    if constexpr (sizeof(T) == 4) {
      if (vec && n >= 128) {
        launch_warp<T, 4>(log, pi, po, outer, static_cast<int>(n), mask, max_blocks, s);
        return cudaGetLastError();
      }
    }
    launch_warp<T, 1>(log, pi, po, outer, static_cast<int>(n), mask, max_blocks, s);
  } else if (sizeof(T) == 8 ? n <= 512 * 8 : n <= 512 * 16) {
    launch_block<T, sizeof(T) == 8 ? 8 : 16, 512>(log, vec, pi, po, outer, n, mask, max_blocks, s);
  } else if (vec && n <= 1024 * 16) {
    // 1024 threads: only the vector path fits in 64 registers a thread.
    if constexpr (sizeof(T) == 4)
      softmax_block<T, 16, 4, 1024><<<grid(outer, max_blocks), static_cast<int>((n + 511) / 512 * 32), 0, s>>>(pi, po, outer, n, log, mask);
  } else {
    if constexpr (sizeof(T) == 4) {
      if (vec) {
        softmax_online<T, 4><<<grid(outer, max_blocks), 512, 0, s>>>(pi, po, outer, n, log, mask);
        return cudaGetLastError();
      }
    }
    softmax_online<T, 1><<<grid(outer, max_blocks), 512, 0, s>>>(pi, po, outer, n, log, mask);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t softmax(DT dt, bool log, const void* in, void* out, int64_t outer, int64_t n, int64_t inner, Mask mask, int max_blocks,
                    cudaStream_t s) {
  if (outer == 0 || n == 0 || inner == 0) return cudaSuccess;
  switch (dt) {
    case DT::F32: return launch<float>(log, in, out, outer, n, inner, mask, max_blocks, s);
    case DT::F64: return launch<double>(log, in, out, outer, n, inner, mask, max_blocks, s);
    case DT::BF16: return launch<bf16>(log, in, out, outer, n, inner, mask, max_blocks, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace shapeml::cuda::kern
