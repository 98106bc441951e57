// The `attention` launch of a GPU plan (plan/plan.h): softmax(q k^T *
// scale, masked) v for every batch and head in one launch, with no [Sq, Sk]
// scores in memory (docs/design/gpu-attention.md). What the planner writes
// (src/lower/gpu/fuse_attention.cpp), what the plan verifier (plan/verify.h) checks,
// in one place.
//
// The launch reads q, k, v and writes o through strided accesses into its
// slots (so that the head split and merge permutes around attention need no
// copies): element (b, h, s, d) of operand X is element
//   X.offset + b * X.batch + h' * X.head + s * X.row + d
// of its slot, counted in elements of the slot's dtype, where h' = h for q
// and o and h / group for k and v (grouped-query attention: `group` query
// heads share one key/value head, as repeat_interleave would give them).
// The head dimension is contiguous.
//
// ints = {batch, heads, group, sq, sk, dh, offset,
//         q.offset, q.batch, q.head, q.row,  k..., v..., o...}   (23)
// flag = causal: key j is masked (-inf before the softmax) for the query at
// position i when j > i + offset. scalar = scale (the score multiplier, > 0).
// op = "tf32" (f32 only): the two products may run on TF32 tensor cores, as
// the matmuls it replaced would have (a `--gpu-tf32` plan); "" (`-`): full
// f32 (bf16: the bf16 tensor cores).
// A row whose keys are all masked is NaN, as the unfused softmax gives.
// library = "shapeml": the own kernels; "cudnn": cuDNN's fused attention
// where the executor finds cuDNN (src/cuda/executor/cudnn_attention.h), the
// own kernel otherwise (the same contract), for the launches
// cudnn_attention_refusal accepts.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace shapeml::plan {

/// Where one operand of an attention launch reads or writes (elements).
struct AttentionAccess {
  int64_t offset = 0, batch = 0, head = 0, row = 0;
};

struct AttentionLayout {
  int64_t batch = 0, heads = 0, group = 1, sq = 0, sk = 0, dh = 0, offset = 0;
  AttentionAccess q, k, v, o;

  static constexpr size_t kInts = 23;

  std::vector<int64_t> to_ints() const {
    std::vector<int64_t> r = {batch, heads, group, sq, sk, dh, offset};
    for (const AttentionAccess* a : {&q, &k, &v, &o}) r.insert(r.end(), {a->offset, a->batch, a->head, a->row});
    return r;
  }
  /// False when `ints` has the wrong length.
  bool from_ints(const std::vector<int64_t>& ints) {
    if (ints.size() != kInts) return false;
    batch = ints[0], heads = ints[1], group = ints[2], sq = ints[3], sk = ints[4], dh = ints[5], offset = ints[6];
    size_t i = 7;
    for (AttentionAccess* a : {&q, &k, &v, &o}) a->offset = ints[i], a->batch = ints[i + 1], a->head = ints[i + 2], a->row = ints[i + 3], i += 4;
    return true;
  }
};

/// The largest head dimension the attention kernels take: bf16, f32.
constexpr int64_t kAttentionMaxHeadDim = 256;
constexpr int64_t kAttentionMaxHeadDimF32 = 128;
/// f32 (not TF32) attention: up to this many keys the kernel of 16-row
/// blocks (short sequences: it fills the GPU), beyond it the register-tiled
/// kernel of 64-row blocks, which the planner uses only for 64 query rows or
/// more (a decode row against a long cache keeps the GEMMs).
constexpr int64_t kAttentionF32ShortKeys = 256;
constexpr int64_t kAttentionF32TiledMinRows = 64;

namespace attention_detail {
// Whether every element an access reaches lies in [0, numel): the strides
// are non-negative, so the largest index is the sum of the last ones.
inline bool access_fits(const AttentionAccess& a, int64_t batch, int64_t heads, int64_t rows, int64_t dh, int64_t numel) {
  if (a.offset < 0 || a.batch < 0 || a.head < 0 || a.row < 0) return false;
  int64_t last = a.offset, t = 0;
  const int64_t ext[3] = {batch - 1, heads - 1, rows - 1}, str[3] = {a.batch, a.head, a.row};
  for (int i = 0; i < 3; ++i)
    if (__builtin_mul_overflow(ext[i], str[i], &t) || __builtin_add_overflow(last, t, &last)) return false;
  return !__builtin_add_overflow(last, dh - 1, &last) && last < numel;
}
}  // namespace attention_detail

/// "" when cuDNN's fused attention takes a launch (what its composite graph
/// expresses and its flash engine runs, measured faster than the own kernel:
/// docs/design/gpu-attention.md), else what it does not take. `dt` is q's.
inline std::string cudnn_attention_refusal(const AttentionLayout& a, GpuDType dt, bool causal) {
  if (dt != GpuDType::BF16) return "operands that are not bf16";
  if (causal && a.offset != 0) return "a causal mask with an offset (decode rows)";
  if (a.dh % 8 != 0 || a.dh > 128) return "a head dimension that is not a multiple of 8 up to 128";
  if (a.sq < 64) return "fewer than 64 query rows";
  for (const AttentionAccess* x : {&a.q, &a.k, &a.v, &a.o})
    if (x->offset % 8 != 0 || x->batch % 8 != 0 || x->head % 8 != 0 || x->row % 8 != 0) return "an offset or stride that is not a multiple of 16 bytes";
  return "";
}

/// The checks of an attention launch (operand counts already checked): ""
/// when the executor can run it, else what is wrong.
inline std::string check_attention(const GpuPlan& p, const GpuLaunch& l) {
  AttentionLayout a;
  if (!a.from_ints(l.ints)) return "attention needs " + std::to_string(AttentionLayout::kInts) + " ints (see plan/attention_launch.h)";
  if (a.batch < 1 || a.heads < 1 || a.group < 1 || a.sq < 1 || a.sk < 1 || a.dh < 1)
    return "attention needs batch, heads, group, query and key lengths and the head dimension >= 1";
  if (a.heads % a.group != 0) return "attention: heads (" + std::to_string(a.heads) + ") is not a multiple of the group (" + std::to_string(a.group) + ")";
  if (a.dh > kAttentionMaxHeadDim) return "attention: head dimension " + std::to_string(a.dh) + " is over " + std::to_string(kAttentionMaxHeadDim);
  if (a.batch > 65535 || a.heads > 65535 || a.sq > (int64_t{1} << 30) || a.sk > (int64_t{1} << 30))
    return "attention: batch and heads must be <= 65535 and the sequence lengths <= 2^30";
  if (a.offset < -(int64_t{1} << 31) || a.offset > (int64_t{1} << 31)) return "attention: the mask offset must lie in [-2^31, 2^31]";
  // Positive: the bf16 kernel takes the row max of the raw scores and folds
  // the scale into the exponent's FMA (max(s) scale = max(s scale) only for
  // scale > 0); a chain with another scale stays unfused.
  if (!std::isfinite(l.scalar) || !(l.scalar > 0)) return "attention: the scale must be positive and finite";
  const char* names[4] = {"q", "k", "v", "o"};
  const AttentionAccess* acc[4] = {&a.q, &a.k, &a.v, &a.o};
  const int32_t slot[4] = {l.inputs[0], l.inputs[1], l.inputs[2], l.outputs[0]};
  const GpuDType dt = p.slots[static_cast<size_t>(slot[0])].dtype;
  if (dt != GpuDType::BF16 && dt != GpuDType::F32) return std::string("attention: q is ") + gpu_dtype_name(dt) + "; the kernels take bf16 and f32";
  if (!l.op.empty() && l.op != "tf32") return "attention: unknown op `" + l.op + "` (\"-\" or tf32)";
  if (l.op == "tf32" && dt != GpuDType::F32) return "attention: op tf32 needs f32 operands";
  if (l.library != "shapeml" && l.library != "cudnn") return "attention: unknown library `" + l.library + "` (shapeml or cudnn)";
  if (l.library == "cudnn")
    if (std::string r = cudnn_attention_refusal(a, dt, l.flag); !r.empty()) return "attention: library cudnn, but cuDNN does not take " + r;
  if (dt == GpuDType::F32 && a.dh > kAttentionMaxHeadDimF32)
    return "attention: head dimension " + std::to_string(a.dh) + " is over " + std::to_string(kAttentionMaxHeadDimF32) + " for f32";
  for (int i = 0; i < 4; ++i) {
    const GpuSlot& s = p.slots[static_cast<size_t>(slot[i])];
    if (s.dtype != dt) return std::string("attention: ") + names[i] + " is " + gpu_dtype_name(s.dtype) + ", q is " + gpu_dtype_name(dt);
    int64_t heads = (i == 1 || i == 2) ? a.heads / a.group : a.heads;
    int64_t rows = i == 0 || i == 3 ? a.sq : a.sk;
    if (!attention_detail::access_fits(*acc[i], a.batch, heads, rows, a.dh, s.numel()))
      return std::string("attention: ") + names[i] + "'s strided access reaches outside its slot (" + std::to_string(s.numel()) + " elements)";
  }
  return "";
}

}  // namespace shapeml::plan
