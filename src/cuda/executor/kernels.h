// shapeml's own CUDA kernels, as host functions that enqueue one kernel on a
// stream (internal to the executor; see docs/design/gpu-kernels.md). Every
// function returns the launch's cudaError_t (cudaGetLastError after the
// launch) and never synchronizes. Shapes arrive prepared by the executor:
// dimensions coalesced, broadcast strides in elements (0 = stretched).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/executor/ops.h"
#include "plan/limits.h"

namespace shapeml::cuda::kern {

constexpr int kMaxRank = shapeml::plan::kMaxRank;  // plan/limits.h: the verifier checks it


/// An iteration space (row-major over `shape`) and, per operand, the element
/// stride of each dimension. Which operand is which depends on the kernel.
struct Geom {
  int32_t rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[3][kMaxRank] = {};
};

/// A reduction: outputs run over the kept dims (row-major, dense), each
/// reduces the reduced dims; both with the input's element strides.
struct ReduceGeom {
  int32_t keep_rank = 0, red_rank = 0;
  int64_t keep_shape[kMaxRank] = {}, keep_stride[kMaxRank] = {};
  int64_t red_shape[kMaxRank] = {}, red_stride[kMaxRank] = {};
  int64_t n_out = 0, n_red = 0;
  // 1: one block per output (a block reduction; for reduced dims that are
  // innermost in memory); 0: one thread per output (coalesced across
  // threads when the innermost dim is kept).
  int32_t block_per_output = 0;
};

// Elementwise, dense and same shape: out[i] = op(in[i]).
cudaError_t unary(DT dt, int32_t op, const void* in, void* out, int64_t n, int max_blocks, cudaStream_t s);
// out (dense over g.shape) = op(a, b); g.stride[0] = a, [1] = b. `same` = both
// operands dense with out's shape (the vectorized fast path when 16-byte
// aligned; checked at launch).
cudaError_t binary(DT dt, int32_t op, const void* a, const void* b, void* out, const Geom& g, int64_t n, bool same, int max_blocks,
                   cudaStream_t s);
// As binary, writing bool (uint8 0/1).
cudaError_t compare(DT dt, int32_t op, const void* a, const void* b, void* out, const Geom& g, int64_t n, bool same, int max_blocks,
                    cudaStream_t s);
// Bool (uint8 0/1) operands, broadcasting as binary: out = a and/or b.
cudaError_t logical(int32_t op, const void* a, const void* b, void* out, const Geom& g, int64_t n, bool same, int max_blocks, cudaStream_t s);
// Bool, dense: out[i] = !in[i].
cudaError_t logical_not(const void* in, void* out, int64_t n, int max_blocks, cudaStream_t s);
// out = c ? a : b; g.stride[0] = c, [1] = a, [2] = b; elements of `esize` bytes.
cudaError_t select(int64_t esize, const void* c, const void* a, const void* b, void* out, const Geom& g, int64_t n, int max_blocks,
                   cudaStream_t s);
// Dense, same shape: out[i] = cast(in[i]) (language semantics §5).
cudaError_t cast(DT from, DT to, const void* in, void* out, int64_t n, int max_blocks, cudaStream_t s);
// out[i] = the element whose bytes are `bits` (esize bytes).
cudaError_t fill(int64_t esize, uint64_t bits, void* out, int64_t n, int max_blocks, cudaStream_t s);
// out[i] = index along an axis: (i / inner) % dim, converted to dt.
cudaError_t iota(DT dt, void* out, int64_t n, int64_t dim, int64_t inner, int max_blocks, cudaStream_t s);
// For every index of g.shape: out[idx . stride[0]] = in[idx . stride[1]].
cudaError_t strided_copy(int64_t esize, const void* in, void* out, const Geom& g, int64_t n, int max_blocks, cudaStream_t s);
/// Pairs of buffers moved by one strided_copy_group launch.
constexpr int kMaxCopyGroup = shapeml::plan::kMaxCopyGroup;
struct CopyGroup {
  int32_t count = 0;
  const void* in[kMaxCopyGroup] = {};
  void* out[kMaxCopyGroup] = {};
};
// strided_copy for every pair of `pairs` (one geometry), in one launch.
cudaError_t strided_copy_group(int64_t esize, const CopyGroup& pairs, const Geom& g, int64_t n, int max_blocks, cudaStream_t s);
/// Device pointers by value: a matmul group's three arrays of its size each.
struct PointerTable {
  int32_t n = 0;
  void* p[3 * shapeml::plan::kMaxGemmGroup] = {};
};
// dst[i] = t.p[i] for i < t.n, in device memory (one block). Launched as a
// dependent launch that does not wait: dst is bytes no other launch uses.
cudaError_t write_pointers(void** dst, const PointerTable& t, cudaStream_t s);
// in [batch, rows, cols] -> out [batch, cols, rows], 32x32 shared-memory tiles.
// Needs batch <= 65535 and ceil(rows/32) <= 65535.
cudaError_t transpose_tiled(int64_t esize, const void* in, void* out, int64_t batch, int64_t rows, int64_t cols, cudaStream_t s);
// out[o] = reduce over the reduced dims of in (see ReduceGeom).
cudaError_t reduce(DT dt, int32_t op, const void* in, void* out, const ReduceGeom& g, int max_blocks, cudaStream_t s);
// Integral matmul (cuBLASLt has none for i32/i64): out[b] = a[b] . b[b] with
// a [M, K] at a + b*stride_a, b [K, N] at b + b*stride_b, out dense; wraps.
cudaError_t matmul_int(DT dt, const void* a, const void* b, void* out, int64_t batch, int64_t m, int64_t n, int64_t k, int64_t stride_a,
                       int64_t stride_b, cudaStream_t s);

/// A causal mask folded into a softmax over the innermost axis (rows > 0):
/// row r of the [outer, n] rows is at position p = r % rows of the masked
/// axis (the one before the softmax axis) and column j is read as -inf when
/// j > p + offset. rows = 0: no mask.
struct Mask {
  int64_t rows = 0, offset = 0;
};

// Softmax (or log-softmax) along the middle axis of a dense [outer, n, inner]
// tensor, numerically stable (the max along the axis is subtracted first);
// f32/bf16 compute in f32, f64 in f64. A row whose entries are all -inf gives
// NaN, as in PyTorch. A mask needs inner == 1.
cudaError_t softmax(DT dt, bool log, const void* in, void* out, int64_t outer, int64_t n, int64_t inner, Mask mask, int max_blocks,
                    cudaStream_t s);
// Inclusive prefix sums (cumsum) along the middle axis of a dense [outer, n,
// inner] tensor; `reverse`: from the end of the axis. Numeric dtypes.
cudaError_t scan(DT dt, const void* in, void* out, int64_t outer, int64_t n, int64_t inner, bool reverse, int max_blocks, cudaStream_t s);

// RMSNorm over the last axis of a dense [rows, n] tensor, one launch (rows.cu):
// out[r, j] = x[r, j] * (1 / sqrt(mean_j(x[r, j]^2) + eps)) * g[j]. The sum of
// squares accumulates in f32 for f32 and bf16 (f64 for f64); bf16 rounds once,
// at the store.
cudaError_t rmsnorm(DT dt, const void* x, const void* g, void* out, int64_t rows, int64_t n, double eps, int max_blocks, cudaStream_t s);

// A gated elementwise product, dense and same shape (rows.cu): out[i] =
// act(a[i]) * b[i] with act a unary op (U_SILU for SwiGLU, U_GELU for GeGLU),
// computed in the compute type and rounded once.
cudaError_t gated(DT dt, int32_t act, const void* a, const void* b, void* out, int64_t n, int max_blocks, cudaStream_t s);

// The operand of an f32 matmul run as 3xTF32 (tf32_split.cu; plan.h's
// `tf32_split`): x, dense [outer, n, inner], to out [outer, 3n, inner], three
// blocks along the middle axis: (hi, hi', lo') for the left operand (`rhs`
// false), (hi, lo', hi') for the right, hi = x rounded to TF32 (nearest, ties
// away; truncated where that would overflow), lo = TF32 rounding of x - hi,
// primed parts 0 where x is not finite.
cudaError_t tf32_split(bool rhs, const float* x, float* out, int64_t outer, int64_t n, int64_t inner, int max_blocks, cudaStream_t s);

/// A fused attention launch (attention.cu; plan/attention_launch.h is the plan's
/// form): for every batch b and head h, o = softmax(q k^T * scale, masked) v
/// over [sq, dh] x [sk, dh], no scores in memory. Element (b, h, s, d) of
/// operand i (q, k, v, o) is at base_i + b*stride[i][0] + h'*stride[i][1] +
/// s*stride[i][2] + d, h' = h / group for k and v. Causal: key j is masked
/// for query i when j > i + offset; a row with no visible key is NaN.
struct Attention {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  int64_t batch = 0, heads = 0, group = 1, sq = 0, sk = 0, dh = 0;
  int64_t stride[4][3] = {};
  float scale = 1.0f;
  bool causal = false;
  int64_t offset = 0;
  int32_t sms = 0;  // the device's multiprocessors (the launch shape depends on them)
};

// bf16 (attention.cu): dh <= 256, batch and heads <= 65535, sq and sk <
// 2^30 (the plan verifier checks). 16-byte copies when every pointer and
// stride allows.
cudaError_t attention(const Attention& a, cudaStream_t s);
// f32: dh <= 128, fp32 arithmetic throughout; up to
// plan::kAttentionF32ShortKeys keys attention_f32.cu's 16-row blocks,
// beyond them attention_f32_tiled.cu's register-tiled 64-row blocks.
cudaError_t attention_f32(const Attention& a, cudaStream_t s);
cudaError_t attention_f32_tiled(const Attention& a, cudaStream_t s);
cudaError_t attention_f32_tiled_setup();  // attention_setup calls it
// f32 operands on TF32 tensor cores (attention_tf32.cu; the launch's op
// "tf32"): dh <= 128, TF32 products, f32 softmax and accumulation.
cudaError_t attention_tf32(const Attention& a, cudaStream_t s);
cudaError_t attention_tf32_setup();  // attention_setup calls it
// Once before the first attention launch (plan creation; not inside a
// stream capture): lets the kernels use over 48 KiB of shared memory.
cudaError_t attention_setup();

// Index operations with a run-time bounds check. `idx` is i32 or i64
// (idx_dt). An index outside [0, V) is never read through: its output
// elements are written as zero bytes and the lowest flat position of a bad
// index in `idx` is recorded by atomicMin into *first_bad, which the caller
// set to UINT64_MAX before the launch (docs/design/index-checks.md).
//   gather:      table [V, row] (row = product of the trailing dims), idx
//                [n_idx] -> out [n_idx, row]; out[i, j] = table[idx[i], j]
//   take_along:  x [outer, V, inner], idx [outer, inner] -> out [outer, inner];
//                out[o, i] = x[o, idx[o, i], i]
cudaError_t gather(DT idx_dt, int64_t esize, const void* table, const void* idx, void* out, int64_t n_idx, int64_t V, int64_t row,
                   unsigned long long* first_bad, int max_blocks, cudaStream_t s);
cudaError_t take_along(DT idx_dt, int64_t esize, const void* x, const void* idx, void* out, int64_t outer, int64_t V, int64_t inner,
                       unsigned long long* first_bad, int max_blocks, cudaStream_t s);

// ---- fused elementwise groups (fused.cu; plan/fused_program.h is the plan's
// encoding, which the executor decodes and checks into these PODs).
constexpr int kFusedMaxNodes = 32;     // plan::fused::kMaxNodes
constexpr int kFusedMaxInputs = 8;     // plan::fused::kMaxInputs
constexpr int kFusedMaxOperands = shapeml::plan::kFusedMaxOperands;  // inputs, then one pseudo-operand per iota axis

enum FusedKind : int8_t { FK_LOAD, FK_CONST, FK_IOTA, FK_UNARY, FK_BINARY, FK_COMPARE, FK_SELECT, FK_CAST };

// One node: `dt` is its dtype (DT), `sdt` its operand's (compare, cast).
// load: a = operand (input) index; iota: a = operand index of the axis's
// pseudo-operand (its stride is 1 along the axis, 0 elsewhere, so its
// "offset" is the index along the axis); const: imm[] of the program; the
// rest: a, b, c = earlier nodes. Unary op 13 is `not`, binary 7/8 `and`/`or`.
struct FusedNode {
  int8_t kind = 0, op = 0, dt = 0, sdt = 0;
  int16_t a = 0, b = 0, c = 0, pad = 0;
};

struct FusedProgram {
  int32_t n = 0;
  FusedNode node[kFusedMaxNodes];
  uint64_t imm[kFusedMaxNodes] = {};  // const nodes: the value's bits in its dtype (low bytes)
};

// The output's iteration space (coalesced) and each operand's strides in it.
struct FusedGeom {
  int32_t rank = 0, nops = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kFusedMaxOperands][kMaxRank] = {};
};

// out (dense, n elements) = the program's last node at every element;
// in[k] is the base of input k. One launch; 32-bit index math when n < 2^31.
cudaError_t fused(const FusedProgram& p, const FusedGeom& g, const void* const* in, void* out, int64_t n, int max_blocks, cudaStream_t s);

}  // namespace shapeml::cuda::kern
