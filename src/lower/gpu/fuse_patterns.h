// Pattern fusion: launch groups the planner recognizes as one operation of a
// model and replaces with one of the executor's fused kernels
// (docs/design/gpu-fused-kernels.md):
//   RMSNorm        mul(mul(x, rsqrt(add(reduce_mean(mul(x, x), -1, keepdims), eps))), g)
//                  -> rmsnorm {x, g}, scalar eps (7 launches -> 1)
//   causal softmax softmax(select(cmp(iota i, iota j), s, -inf), -1) with the
//                  comparison keeping j <= i (ge, le) or j < i (gt, lt)
//                  -> softmax {s}, flag causal, ints {axis, offset} (6 -> 1)
//   gated          mul(act(a), b), act a unary op, one shape
//                  -> gated {a, b}, op act (2 -> 1; SwiGLU, GeGLU)
// A group fuses only when its intermediate values are workspace temporaries
// read by nothing else (no view, no second reader, not a result). The
// launches it replaces are left in place, their outputs now unread: the
// planner's dead-launch pass removes them and lays the workspace out again.
//
// Arithmetic: the causal softmax and the gated product compute exactly what
// the unfused launches compute in f32 and f64 (bit-identical); RMSNorm sums
// its squares in another order (f32 accumulation, like PyTorch's), and every
// fused bf16 kernel rounds once, at the store, where the unfused launches
// round after every operation.
//
// Plain data: no CUDA, no IR. Never fails: a group it does not recognize is
// left as it is.
#pragma once
#include "plan/plan.h"

namespace shapeml::lower::gpu {

/// Rewrites the recognized groups of `plan` in place; returns how many.
int fuse_patterns(plan::GpuPlan& plan);

/// Merges permutes of one geometry (input shape, dtype, permutation keeping
/// the last axis in place: a head split or merge) into one `transpose`
/// launch of up to four (input, output) pairs, placed where the last of
/// them was, when no launch in between reads an earlier one's output (the
/// head splits of Q, K and V: 3 launches -> 1). Returns the launches removed.
int group_permutes(plan::GpuPlan& plan);

}  // namespace shapeml::lower::gpu
