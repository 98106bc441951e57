// f32 matmuls on TF32 tensor cores, far more accurate than TF32 ("3xTF32"):
// each operand x is split into its TF32 part hi and the TF32 rounding of the
// rest lo = x - hi, and one cuBLASLt TF32 GEMM over a K axis three times as
// long computes hi_a hi_b + hi_a lo_b + lo_a hi_b (the lo_a lo_b term, ~2^-22
// relative, dropped). `tf32_split` launches (plan/plan.h) write the split
// operands into the workspace just before the GEMM; an operand that several
// GEMMs read (the activation of the q, k and v projections) is split once
// while its bytes stay unwritten.
//
// Not fp32's accuracy: measured on the H200, the tensor cores' accumulation
// truncates, so the error grows with K (2e-5 max-relative at K = 2048, against
// 2.8e-6 on the FP32 cores and 2.8e-4 in TF32), at 2-2.7x the FP32 cores'
// speed. So it is a precision of its own that a user asks for (as PyTorch's
// float32_matmul_precision "high"), off by default; the measurements are in
// docs/design/fp32-tensor-core-matmul.md.
//
// Only f32 matmuls without TF32 (op ""), with rank >= 2 operands and at
// least `min_flops` floating-point operations (2 M N K per batch): below it
// the two extra launches cost more than the GEMM saves. Plain data, never
// fails: a plan without such matmuls is left as it is.
#pragma once
#include <cstdint>

#include "plan/plan.h"

namespace shapeml::lower::gpu {

/// The smallest matmul (2 M N K x batch) the planner splits by default.
constexpr int64_t kSplitMinFlops = int64_t{1} << 31;

/// Rewrites every qualifying matmul of `plan` in place; returns how many.
int split_fp32_matmuls(plan::GpuPlan& plan, int64_t min_flops = kSplitMinFlops);

}  // namespace shapeml::lower::gpu
