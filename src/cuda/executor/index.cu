// Index operations with a run-time bounds check: gather (embedding lookup)
// and take_along (one element per position along an axis). See kernels.h
// and docs/design/index-checks.md: an index outside [0, V) is never read
// through; its outputs become zero bytes and the lowest flat position of a
// bad index is recorded with atomicMin, for the executor to report after the
// plan has run. Negative indices are out of range (no wrapping).
#include "cuda/executor/grid.cuh"
#include "cuda/executor/kernels.h"
#include "cuda/executor/numerics.cuh"

namespace shapeml::cuda::kern {
namespace {

// Elements are moved as raw bits of their size E (1, 2, 4 or 8 bytes).
template <class I, class E> __global__ void gather_kernel(const E* table, const I* idx, E* out, int64_t n_idx, int64_t V, int64_t row,
                                                          unsigned long long* first_bad) {
  const int64_t total = n_idx * row;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = t / row, j = t - i * row;
    const int64_t v = static_cast<int64_t>(idx[i]);
    if (v < 0 || v >= V) {
      out[t] = E(0);
      if (j == 0) atomicMin(first_bad, static_cast<unsigned long long>(i));
    } else {
      out[t] = table[v * row + j];
    }
  }
}

template <class I, class E> __global__ void take_along_kernel(const E* x, const I* idx, E* out, int64_t outer, int64_t V, int64_t inner,
                                                              unsigned long long* first_bad) {
  const int64_t total = outer * inner;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = t / inner, i = t - o * inner;
    const int64_t v = static_cast<int64_t>(idx[t]);
    if (v < 0 || v >= V) {
      out[t] = E(0);
      atomicMin(first_bad, static_cast<unsigned long long>(t));
    } else {
      out[t] = x[(o * V + v) * inner + i];
    }
  }
}

template <class I, class E> cudaError_t launch_gather(const void* table, const void* idx, void* out, int64_t n_idx, int64_t V, int64_t row,
                                                      unsigned long long* bad, int mb, cudaStream_t s) {
  gather_kernel<I, E><<<blocks_for(n_idx * row, mb), kThreads, 0, s>>>(static_cast<const E*>(table), static_cast<const I*>(idx),
                                                                        static_cast<E*>(out), n_idx, V, row, bad);
  return cudaGetLastError();
}

template <class I, class E> cudaError_t launch_take(const void* x, const void* idx, void* out, int64_t outer, int64_t V, int64_t inner,
                                                    unsigned long long* bad, int mb, cudaStream_t s) {
  take_along_kernel<I, E><<<blocks_for(outer * inner, mb), kThreads, 0, s>>>(static_cast<const E*>(x), static_cast<const I*>(idx),
                                                                              static_cast<E*>(out), outer, V, inner, bad);
  return cudaGetLastError();
}

// Dispatch on the index type and the element size.
#define SHAPEML_BY_SIZE(FN, I, ...)                        \
  switch (esize) {                                         \
    case 1: return FN<I, uint8_t>(__VA_ARGS__);            \
    case 2: return FN<I, uint16_t>(__VA_ARGS__);           \
    case 4: return FN<I, uint32_t>(__VA_ARGS__);           \
    case 8: return FN<I, unsigned long long>(__VA_ARGS__); \
    default: return cudaErrorInvalidValue;                 \
  }

}  // namespace

cudaError_t gather(DT idx_dt, int64_t esize, const void* table, const void* idx, void* out, int64_t n_idx, int64_t V, int64_t row,
                   unsigned long long* first_bad, int max_blocks, cudaStream_t s) {
  if (n_idx == 0 || row == 0) return cudaSuccess;
  if (idx_dt == DT::I32) {
    SHAPEML_BY_SIZE(launch_gather, int32_t, table, idx, out, n_idx, V, row, first_bad, max_blocks, s)
  } else if (idx_dt == DT::I64) {
    SHAPEML_BY_SIZE(launch_gather, int64_t, table, idx, out, n_idx, V, row, first_bad, max_blocks, s)
  }
  return cudaErrorInvalidValue;
}

cudaError_t take_along(DT idx_dt, int64_t esize, const void* x, const void* idx, void* out, int64_t outer, int64_t V, int64_t inner,
                       unsigned long long* first_bad, int max_blocks, cudaStream_t s) {
  if (outer == 0 || inner == 0) return cudaSuccess;
  if (idx_dt == DT::I32) {
    SHAPEML_BY_SIZE(launch_take, int32_t, x, idx, out, outer, V, inner, first_bad, max_blocks, s)
  } else if (idx_dt == DT::I64) {
    SHAPEML_BY_SIZE(launch_take, int64_t, x, idx, out, outer, V, inner, first_bad, max_blocks, s)
  }
  return cudaErrorInvalidValue;
}

#undef SHAPEML_BY_SIZE

}  // namespace shapeml::cuda::kern
