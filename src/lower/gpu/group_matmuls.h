// GEMMs that share their activation, as one batched GEMM: the q, k and v
// projections of attention (when their weights are too large for
// merge_projections' copy) and SwiGLU's gate and up projections multiply
// one activation A by k weights of one shape. The plan runs them as one
// matmul group (plan.h: ints {transA, transB, k}, inputs A and the k
// weights, the k results): the executor's one cuBLASLt call in pointer-array
// batch mode over the weights, A's pointer repeated, each result written
// where it was (no copy, no new slot, nothing downstream changes).
//
// One batched launch is as fast as one GEMM over concatenated weights and
// faster than the separate ones (bench/gemm_grouping.cu; the measurements:
// docs/design/gpu-grouped-gemms.md).
//
// Which GEMMs: plain matmuls (no scale, bias, residual or op; bf16, the
// dtype measured) of one A slot, with 2-D weights of one shape and dtype,
// the same transposes and result shape, at most kMaxGemmGroup; the group
// runs where its first member ran, so a later member joins only when
// nothing between the two writes A, its weight or its result's bytes, nor
// reads its result.
//
// Plain data, never fails: a plan with nothing to group is left as it is.
#pragma once

#include "plan/plan.h"

namespace shapeml::lower::gpu {

/// Rewrites every group of `plan` in place; returns how many groups.
int group_matmuls(plan::GpuPlan& plan);

}  // namespace shapeml::lower::gpu
