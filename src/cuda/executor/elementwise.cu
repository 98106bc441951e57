// Elementwise kernels: unary, binary (broadcasting), compare, select, cast,
// fill and iota. One template family: a functor F maps the operands'
// storage values to the output's; three launch shapes:
//   vec      dense same-shape operands, 16-byte aligned: 16-byte loads
//   contig   dense same-shape operands, any alignment
//   general  out dense over g.shape, operands through strides (0 = broadcast)
// All loops are grid-stride with 64-bit indices. No __restrict__: plans may
// run these in place (out is one of the inputs, element for element).
#include <cstdint>
#include <type_traits>

#include "cuda/executor/grid.cuh"
#include "cuda/executor/kernels.h"
#include "cuda/executor/numerics.cuh"

namespace shapeml::cuda::kern {
namespace {

template <class T, int N> struct alignas(16) Vec { T v[N]; };

// Element offsets of linear index i of the iteration space for operand k.
// I is the index type of the divisions: uint32_t when the space has fewer
// than 2^32 elements (a 32-bit division is several times cheaper than a
// 64-bit one, and these kernels are bound by that index math).
template <int NOPS, class I> __device__ __forceinline__ void offsets(const Geom& g, I i, int64_t (&off)[NOPS]) {
#pragma unroll
  for (int k = 0; k < NOPS; ++k) off[k] = 0;
  for (int d = g.rank - 1; d >= 0; --d) {
    // the outermost index is what is left: no division
    I n = static_cast<I>(g.shape[d]);
    I q = d > 0 ? i / n : I(0), r = d > 0 ? i - q * n : i;
    i = q;
#pragma unroll
    for (int k = 0; k < NOPS; ++k) off[k] += r * g.stride[k][d];
  }
}

// ---- functors: storage values in, storage value out.
template <class T> struct UnaryF {
  int32_t op;
  __device__ __forceinline__ T operator()(T x, T) const { return from_compute<T>(unary_op(op, to_compute(x))); }
};
template <class T> struct BinaryF {
  int32_t op;
  __device__ __forceinline__ T operator()(T a, T b) const { return from_compute<T>(binary_op(op, to_compute(a), to_compute(b))); }
};
template <class T> struct CompareF {
  int32_t op;
  __device__ __forceinline__ uint8_t operator()(T a, T b) const { return compare_op(op, to_compute(a), to_compute(b)); }
};

template <class T> struct LogicalF {
  int32_t op;
  __device__ __forceinline__ uint8_t operator()(uint8_t a, uint8_t b) const { return op == L_AND ? (a & b) : (a | b); }
};
template <class T> struct NotF {
  __device__ __forceinline__ uint8_t operator()(uint8_t a, uint8_t) const { return a ^ 1; }
};

// ---- two-operand launch shapes (unary passes its input twice).
template <class T, class O, class F> __global__ void ew2_contig(const T* a, const T* b, O* out,
                                                               int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) out[i] = f(a[i], b[i]);
}

template <class T, class O, class F> __global__ void ew2_vec(const T* a, const T* b, O* out,
                                                            int64_t n, F f) {
  constexpr int N = 16 / sizeof(T);
  const int64_t nvec = n / N;
  const int64_t tid = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, step = int64_t(gridDim.x) * blockDim.x;
  const Vec<T, N>* va = reinterpret_cast<const Vec<T, N>*>(a);
  const Vec<T, N>* vb = reinterpret_cast<const Vec<T, N>*>(b);
  for (int64_t v = tid; v < nvec; v += step) {
    Vec<T, N> x = va[v], y = vb[v];
    if constexpr (sizeof(O) == sizeof(T)) {
      Vec<O, N> r;
#pragma unroll
      for (int j = 0; j < N; ++j) r.v[j] = f(x.v[j], y.v[j]);
      reinterpret_cast<Vec<O, N>*>(out)[v] = r;
    } else {
#pragma unroll
      for (int j = 0; j < N; ++j) out[v * N + j] = f(x.v[j], y.v[j]);
    }
  }
  for (int64_t i = nvec * N + tid; i < n; i += step) out[i] = f(a[i], b[i]);
}

template <class T, class O, class F, class I> __global__ void ew2_general(const T* a, const T* b, O* out,
                                                                const __grid_constant__ Geom g, int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[2];
    offsets<2>(g, static_cast<I>(i), off);
    out[i] = f(a[off[0]], b[off[1]]);
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

template <class T, class O, class F>
cudaError_t launch2(const void* a, const void* b, void* out, const Geom* g, int64_t n, F f, int max_blocks, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  O* po = static_cast<O*>(out);
  int blocks = blocks_for(n, max_blocks);
  if (g) {
    if (n <= int64_t{UINT32_MAX}) ew2_general<T, O, F, uint32_t><<<blocks, kThreads, 0, s>>>(pa, pb, po, *g, n, f);
    else ew2_general<T, O, F, uint64_t><<<blocks, kThreads, 0, s>>>(pa, pb, po, *g, n, f);
  } else if (aligned16(a) && aligned16(b) && aligned16(out)) {
    constexpr int N = 16 / sizeof(T);
    ew2_vec<T, O, F><<<blocks_for((n + N - 1) / N, max_blocks), kThreads, 0, s>>>(pa, pb, po, n, f);
  } else {
    ew2_contig<T, O, F><<<blocks, kThreads, 0, s>>>(pa, pb, po, n, f);
  }
  return cudaGetLastError();
}

// Dispatch on the dtype: Fn is a template functor, Out(T) the output type.
template <template <class> class Fn, bool ToBool>
cudaError_t dispatch2(DT dt, int32_t op, const void* a, const void* b, void* out, const Geom* g, int64_t n, int max_blocks, cudaStream_t s) {
#define SHAPEML_CASE(E, T) \
  case DT::E: return launch2<T, std::conditional_t<ToBool, uint8_t, T>>(a, b, out, g, n, Fn<T>{op}, max_blocks, s);
  switch (dt) {
    SHAPEML_CASE(F32, float)
    SHAPEML_CASE(F64, double)
    SHAPEML_CASE(BF16, bf16)
    SHAPEML_CASE(I32, int32_t)
    SHAPEML_CASE(I64, int64_t)
    case DT::Bool:  // only comparisons take bool operands
      if constexpr (ToBool) return launch2<uint8_t, uint8_t>(a, b, out, g, n, Fn<uint8_t>{op}, max_blocks, s);
      else return cudaErrorInvalidValue;
  }
#undef SHAPEML_CASE
  return cudaErrorInvalidValue;
}

// ---- select: raw element bits.
template <class T, class I> __global__ void select_general(const uint8_t* c, const T* a, const T* b,
                                                  T* out, const __grid_constant__ Geom g, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[3];
    offsets<3>(g, static_cast<I>(i), off);
    out[i] = c[off[0]] ? a[off[1]] : b[off[2]];
  }
}

// ---- cast, fill, iota: dense outputs.
template <class From, class To> __global__ void cast_kernel(const From* in, To* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = cast_value<From, To>(in[i]);
}

template <class From>
cudaError_t cast_from(DT to, const void* in, void* out, int64_t n, int blocks, cudaStream_t s) {
  const From* p = static_cast<const From*>(in);
  switch (to) {
    case DT::F32: cast_kernel<From, float><<<blocks, kThreads, 0, s>>>(p, static_cast<float*>(out), n); break;
    case DT::F64: cast_kernel<From, double><<<blocks, kThreads, 0, s>>>(p, static_cast<double*>(out), n); break;
    case DT::BF16: cast_kernel<From, bf16><<<blocks, kThreads, 0, s>>>(p, static_cast<bf16*>(out), n); break;
    case DT::I32: cast_kernel<From, int32_t><<<blocks, kThreads, 0, s>>>(p, static_cast<int32_t*>(out), n); break;
    case DT::I64: cast_kernel<From, int64_t><<<blocks, kThreads, 0, s>>>(p, static_cast<int64_t*>(out), n); break;
    case DT::Bool: cast_kernel<From, uint8_t><<<blocks, kThreads, 0, s>>>(p, static_cast<uint8_t*>(out), n); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

template <class T> __global__ void fill_kernel(T* out, T v, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) out[i] = v;
}

template <class T> __global__ void iota_kernel(T* out, int64_t n, int64_t dim, int64_t inner) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = cast_value<int64_t, T>((i / inner) % dim);
}

}  // namespace

cudaError_t unary(DT dt, int32_t op, const void* in, void* out, int64_t n, int max_blocks, cudaStream_t s) {
  return dispatch2<UnaryF, false>(dt, op, in, in, out, nullptr, n, max_blocks, s);
}

cudaError_t binary(DT dt, int32_t op, const void* a, const void* b, void* out, const Geom& g, int64_t n, bool same, int max_blocks,
                   cudaStream_t s) {
  return dispatch2<BinaryF, false>(dt, op, a, b, out, same ? nullptr : &g, n, max_blocks, s);
}

cudaError_t compare(DT dt, int32_t op, const void* a, const void* b, void* out, const Geom& g, int64_t n, bool same, int max_blocks,
                    cudaStream_t s) {
  return dispatch2<CompareF, true>(dt, op, a, b, out, same ? nullptr : &g, n, max_blocks, s);
}

cudaError_t logical(int32_t op, const void* a, const void* b, void* out, const Geom& g, int64_t n, bool same, int max_blocks, cudaStream_t s) {
  return launch2<uint8_t, uint8_t>(a, b, out, same ? nullptr : &g, n, LogicalF<uint8_t>{op}, max_blocks, s);
}

cudaError_t logical_not(const void* in, void* out, int64_t n, int max_blocks, cudaStream_t s) {
  return launch2<uint8_t, uint8_t>(in, in, out, nullptr, n, NotF<uint8_t>{}, max_blocks, s);
}

cudaError_t select(int64_t esize, const void* c, const void* a, const void* b, void* out, const Geom& g, int64_t n, int max_blocks,
                   cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const uint8_t* pc = static_cast<const uint8_t*>(c);
  int blocks = blocks_for(n, max_blocks);
  switch (esize) {
#define SHAPEML_CASE(S, T)                                                                                                       \
  case S:                                                                                                                        \
    if (n <= int64_t{UINT32_MAX})                                                                                                \
      select_general<T, uint32_t><<<blocks, kThreads, 0, s>>>(pc, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), g, n); \
    else                                                                                                                         \
      select_general<T, uint64_t><<<blocks, kThreads, 0, s>>>(pc, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), g, n); \
    break;
    SHAPEML_CASE(1, uint8_t)
    SHAPEML_CASE(2, uint16_t)
    SHAPEML_CASE(4, uint32_t)
    SHAPEML_CASE(8, uint64_t)
#undef SHAPEML_CASE
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t cast(DT from, DT to, const void* in, void* out, int64_t n, int max_blocks, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  int blocks = blocks_for(n, max_blocks);
  switch (from) {
    case DT::F32: return cast_from<float>(to, in, out, n, blocks, s);
    case DT::F64: return cast_from<double>(to, in, out, n, blocks, s);
    case DT::BF16: return cast_from<bf16>(to, in, out, n, blocks, s);
    case DT::I32: return cast_from<int32_t>(to, in, out, n, blocks, s);
    case DT::I64: return cast_from<int64_t>(to, in, out, n, blocks, s);
    case DT::Bool: return cast_from<uint8_t>(to, in, out, n, blocks, s);
  }
  return cudaErrorInvalidValue;
}

cudaError_t fill(int64_t esize, uint64_t bits, void* out, int64_t n, int max_blocks, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  int blocks = blocks_for(n, max_blocks);
  switch (esize) {
    case 1: fill_kernel<uint8_t><<<blocks, kThreads, 0, s>>>(static_cast<uint8_t*>(out), static_cast<uint8_t>(bits), n); break;
    case 2: fill_kernel<uint16_t><<<blocks, kThreads, 0, s>>>(static_cast<uint16_t*>(out), static_cast<uint16_t>(bits), n); break;
    case 4: fill_kernel<uint32_t><<<blocks, kThreads, 0, s>>>(static_cast<uint32_t*>(out), static_cast<uint32_t>(bits), n); break;
    case 8: fill_kernel<uint64_t><<<blocks, kThreads, 0, s>>>(static_cast<uint64_t*>(out), bits, n); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t iota(DT dt, void* out, int64_t n, int64_t dim, int64_t inner, int max_blocks, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  int blocks = blocks_for(n, max_blocks);
  switch (dt) {
    case DT::F32: iota_kernel<float><<<blocks, kThreads, 0, s>>>(static_cast<float*>(out), n, dim, inner); break;
    case DT::F64: iota_kernel<double><<<blocks, kThreads, 0, s>>>(static_cast<double*>(out), n, dim, inner); break;
    case DT::BF16: iota_kernel<bf16><<<blocks, kThreads, 0, s>>>(static_cast<bf16*>(out), n, dim, inner); break;
    case DT::I32: iota_kernel<int32_t><<<blocks, kThreads, 0, s>>>(static_cast<int32_t*>(out), n, dim, inner); break;
    case DT::I64: iota_kernel<int64_t><<<blocks, kThreads, 0, s>>>(static_cast<int64_t*>(out), n, dim, inner); break;
    case DT::Bool: iota_kernel<uint8_t><<<blocks, kThreads, 0, s>>>(static_cast<uint8_t*>(out), n, dim, inner); break;
  }
  return cudaGetLastError();
}

}  // namespace shapeml::cuda::kern
