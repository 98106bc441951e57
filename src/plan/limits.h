// What the executor's kernels can take, as numbers the plan verifier checks
// (plan/verify.h) and the kernels' parameter blocks are sized by
// (cuda/executor/kernels.h static_asserts against these). A plan over a
// limit is refused at compile time (UNIMPLEMENTED, naming the launch), not
// at the first call.
#pragma once
#include <cstdint>

namespace shapeml::plan {

/// Dimensions of an iteration space after coalescing (plan/geometry.h):
/// the strided kernels keep shape and strides in fixed arrays of this size.
constexpr int kMaxRank = 8;
/// Inputs (and outputs) of one grouped copy: a transpose group, or a
/// concatenation of equal pieces.
constexpr int kMaxCopyGroup = 4;
/// Operands of a fused elementwise launch's iteration space: its inputs,
/// then one pseudo-operand per iota axis (plan/fused_program.h bounds each).
constexpr int kFusedMaxOperands = 16;
/// Separate strided-batched GEMMs one matmul launch may take (a broadcast
/// of batch dimensions that does not coalesce into one batch).
constexpr int64_t kMaxGemmPieces = 65536;
/// The most weights one matmul group (plan.h) multiplies A by.
constexpr int64_t kMaxGemmGroup = 8;

}  // namespace shapeml::plan
