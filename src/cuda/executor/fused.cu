// The fused elementwise kernel: one thread per output element (grid-stride)
// interprets a small SSA program (kernels.h FusedProgram, made by the
// compiler's fusion pass: docs/design/gpu-fusion.md) over a register file of
// 8-byte registers. Every op calls the same numerics.cuh function its unfused
// kernel calls, in the same compute type, and stores to a register of the
// node's dtype, so each intermediate is rounded exactly as the unfused plan
// rounds it when it stores the value to memory: results are bit-identical.
// (Ops are dispatched on run-time codes through a register file in local
// memory, so the compiler cannot contract one node's multiply with another's
// add into an FMA either.)
//
// Bool registers hold the raw byte, as bool tensors in memory do: not = x^1,
// and/or = bitwise, select tests the byte, a same-dtype cast copies: the
// unfused kernels' semantics, even for bytes other than 0/1.
#include "cuda/executor/grid.cuh"
#include "cuda/executor/kernels.h"
#include "cuda/executor/numerics.cuh"

namespace shapeml::cuda::kern {
namespace {

// Everything the kernel reads, passed by value as one __grid_constant__
// parameter (about 1.8 KB, under the 4 KB classic parameter limit).
struct FusedArgs {
  FusedProgram p;
  FusedGeom g;
  const void* in[kFusedMaxInputs];
  void* out;
  int64_t n;
};
static_assert(sizeof(FusedArgs) <= 4000, "the fused kernel's parameters must stay under 4 KB");

union Reg {
  double f64;
  float f32;
  int64_t i64;
  int32_t i32;
  uint8_t b;
  uint64_t u;
};

__device__ __forceinline__ Reg zero_reg() {
  Reg r;
  r.u = 0;
  return r;
}

__device__ __forceinline__ Reg do_load(const void* base, int64_t off, int dt) {
  Reg v = zero_reg();
  switch (dt) {
    case static_cast<int>(DT::F32): v.f32 = static_cast<const float*>(base)[off]; break;
    case static_cast<int>(DT::F64): v.f64 = static_cast<const double*>(base)[off]; break;
    case static_cast<int>(DT::I32): v.i32 = static_cast<const int32_t*>(base)[off]; break;
    case static_cast<int>(DT::I64): v.i64 = static_cast<const int64_t*>(base)[off]; break;
    case static_cast<int>(DT::Bool): v.b = static_cast<const uint8_t*>(base)[off]; break;
    default: break;
  }
  return v;
}

__device__ __forceinline__ Reg do_iota(int64_t idx, int dt) {
  Reg v = zero_reg();
  switch (dt) {  // as iota_kernel: cast_value<int64_t, T>(index)
    case static_cast<int>(DT::F32): v.f32 = cast_value<int64_t, float>(idx); break;
    case static_cast<int>(DT::F64): v.f64 = cast_value<int64_t, double>(idx); break;
    case static_cast<int>(DT::I32): v.i32 = cast_value<int64_t, int32_t>(idx); break;
    case static_cast<int>(DT::I64): v.i64 = cast_value<int64_t, int64_t>(idx); break;
    case static_cast<int>(DT::Bool): v.b = cast_value<int64_t, uint8_t>(idx); break;
    default: break;
  }
  return v;
}

__device__ __forceinline__ Reg do_unary(int op, int dt, Reg x) {
  Reg v = zero_reg();
  switch (dt) {  // as UnaryF<T> (T = its own compute type here) and NotF
    case static_cast<int>(DT::F32): v.f32 = unary_op<float>(op, x.f32); break;
    case static_cast<int>(DT::F64): v.f64 = unary_op<double>(op, x.f64); break;
    case static_cast<int>(DT::I32): v.i32 = unary_op<int32_t>(op, x.i32); break;
    case static_cast<int>(DT::I64): v.i64 = unary_op<int64_t>(op, x.i64); break;
    case static_cast<int>(DT::Bool): v.b = x.b ^ 1; break;  // not
    default: break;
  }
  return v;
}

__device__ __forceinline__ Reg do_binary(int op, int dt, Reg x, Reg y) {
  Reg v = zero_reg();
  switch (dt) {  // as BinaryF<T> and LogicalF
    case static_cast<int>(DT::F32): v.f32 = binary_op<float>(op, x.f32, y.f32); break;
    case static_cast<int>(DT::F64): v.f64 = binary_op<double>(op, x.f64, y.f64); break;
    case static_cast<int>(DT::I32): v.i32 = binary_op<int32_t>(op, x.i32, y.i32); break;
    case static_cast<int>(DT::I64): v.i64 = binary_op<int64_t>(op, x.i64, y.i64); break;
    case static_cast<int>(DT::Bool): v.b = op == kFusedAnd ? (x.b & y.b) : (x.b | y.b); break;
    default: break;
  }
  return v;
}

__device__ __forceinline__ Reg do_compare(int op, int sdt, Reg x, Reg y) {
  Reg v = zero_reg();
  switch (sdt) {  // as CompareF<T>: the operands' dtype
    case static_cast<int>(DT::F32): v.b = compare_op<float>(op, x.f32, y.f32); break;
    case static_cast<int>(DT::F64): v.b = compare_op<double>(op, x.f64, y.f64); break;
    case static_cast<int>(DT::I32): v.b = compare_op<int32_t>(op, x.i32, y.i32); break;
    case static_cast<int>(DT::I64): v.b = compare_op<int64_t>(op, x.i64, y.i64); break;
    case static_cast<int>(DT::Bool): v.b = compare_op<uint8_t>(op, x.b, y.b); break;
    default: break;
  }
  return v;
}

template <class From> __device__ __forceinline__ Reg cast_from(int to, From x) {
  Reg v = zero_reg();
  switch (to) {  // as cast_kernel<From, To>
    case static_cast<int>(DT::F32): v.f32 = cast_value<From, float>(x); break;
    case static_cast<int>(DT::F64): v.f64 = cast_value<From, double>(x); break;
    case static_cast<int>(DT::I32): v.i32 = cast_value<From, int32_t>(x); break;
    case static_cast<int>(DT::I64): v.i64 = cast_value<From, int64_t>(x); break;
    case static_cast<int>(DT::Bool): v.b = cast_value<From, uint8_t>(x); break;
    default: break;
  }
  return v;
}

__device__ __forceinline__ Reg do_cast(int from, int to, Reg x) {
  if (from == to) return x;  // the unfused plan copies the bytes
  switch (from) {
    case static_cast<int>(DT::F32): return cast_from<float>(to, x.f32);
    case static_cast<int>(DT::F64): return cast_from<double>(to, x.f64);
    case static_cast<int>(DT::I32): return cast_from<int32_t>(to, x.i32);
    case static_cast<int>(DT::I64): return cast_from<int64_t>(to, x.i64);
    case static_cast<int>(DT::Bool): return cast_from<uint8_t>(to, x.b);
    default: return zero_reg();
  }
}

__device__ __forceinline__ void do_store(void* out, int64_t i, int dt, Reg v) {
  switch (dt) {
    case static_cast<int>(DT::F32): static_cast<float*>(out)[i] = v.f32; break;
    case static_cast<int>(DT::F64): static_cast<double*>(out)[i] = v.f64; break;
    case static_cast<int>(DT::I32): static_cast<int32_t*>(out)[i] = v.i32; break;
    case static_cast<int>(DT::I64): static_cast<int64_t*>(out)[i] = v.i64; break;
    case static_cast<int>(DT::Bool): static_cast<uint8_t*>(out)[i] = v.b; break;
    default: break;
  }
}

// I: the index type, uint32_t when n < 2^31 (then i + the grid stride stays
// below 2^32, and every operand offset, at most the output's numel, fits),
// else int64_t. The output dtype is the last node's, read at run time: one
// instantiation per index width keeps the (large) interpreter compiled
// twice, not ten times, and the store's switch is uniform across the grid.
template <class I> __global__ void fused_kernel(const __grid_constant__ FusedArgs a) {
  const I n = static_cast<I>(a.n);
  const I step = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
  const int nn = a.p.n;
  const int rank = a.g.rank;
  const int out_dt = a.p.node[nn - 1].dt;
  for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < n; i += step) {
    // The element's coordinates in the coalesced iteration space; the
    // outermost one needs no division (i < n).
    I coord[kMaxRank];
    I rem = i;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d < rank) {
        if (d == 0) {
          coord[d] = rem;
        } else {
          const I len = static_cast<I>(a.g.shape[d]);
          const I q = rem / len;
          coord[d] = rem - q * len;
          rem = q;
        }
      } else {
        coord[d] = 0;
      }
    }
    Reg r[kFusedMaxNodes];
    for (int k = 0; k < nn; ++k) {
      const FusedNode nd = a.p.node[k];
      Reg v = zero_reg();
      switch (nd.kind) {
        case FK_LOAD:
        case FK_IOTA: {
          I off = 0;
#pragma unroll
          for (int d = 0; d < kMaxRank; ++d)
            if (d < rank) off += coord[d] * static_cast<I>(a.g.stride[nd.a][d]);
          v = nd.kind == FK_LOAD ? do_load(a.in[nd.a], static_cast<int64_t>(off), nd.dt) : do_iota(static_cast<int64_t>(off), nd.dt);
          break;
        }
        case FK_CONST: v.u = a.p.imm[k]; break;
        case FK_UNARY: v = do_unary(nd.op, nd.dt, r[nd.a]); break;
        case FK_BINARY: v = do_binary(nd.op, nd.dt, r[nd.a], r[nd.b]); break;
        case FK_COMPARE: v = do_compare(nd.op, nd.sdt, r[nd.a], r[nd.b]); break;
        case FK_SELECT: v.u = r[nd.a].b ? r[nd.b].u : r[nd.c].u; break;
        case FK_CAST: v = do_cast(nd.sdt, nd.dt, r[nd.a]); break;
        default: break;
      }
      r[k] = v;
    }
    do_store(a.out, static_cast<int64_t>(i), out_dt, r[nn - 1]);
  }
}

}  // namespace

cudaError_t fused(const FusedProgram& p, const FusedGeom& g, const void* const* in, void* out, int64_t n, int max_blocks, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (p.n < 1 || p.n > kFusedMaxNodes || g.rank < 1 || g.rank > kMaxRank) return cudaErrorInvalidValue;  // prepare guarantees both
  FusedArgs a;
  a.p = p;
  a.g = g;
  for (int k = 0; k < kFusedMaxInputs; ++k) a.in[k] = in[k];
  a.out = out;
  a.n = n;
  int blocks = blocks_for(n, max_blocks);
  if (n < (int64_t{1} << 31)) fused_kernel<uint32_t><<<blocks, kThreads, 0, s>>>(a);
  else fused_kernel<int64_t><<<blocks, kThreads, 0, s>>>(a);
  return cudaGetLastError();
}

}  // namespace shapeml::cuda::kern
