// Elementwise fusion: a dispatch plan -> an equivalent plan with fewer
// launches (docs/design/gpu-fusion.md). A group of elementwise launches
// (unary, binary, compare, select, cast, with fill and iota inlined as
// immediates and index expressions) whose intermediate values are
// workspace temporaries read only inside the group becomes one `fused`
// launch that evaluates the group's expression per output element
// (plan/fused_program.h). Every node computes in its own dtype exactly as its
// unfused launch does, so results are bit-identical; bf16 groups are left
// alone (bf16 rounds after every op and is kept on the unfused kernels).
//
// Plain data in, plain data out: no CUDA, no IR. Never fails: a plan it does
// not understand (a launch writing a view, a slot written twice, in-place
// launches) comes back unchanged, as does one where nothing fuses.
#pragma once
#include "plan/plan.h"

namespace shapeml::lower::gpu {

/// `plan` with its elementwise groups fused, dead temporaries dropped (slots
/// renumbered) and the workspace laid out again (first fit over the new live
/// ranges, as the planner does: a fused launch reads its inputs later than
/// the launches it replaces did).
plan::GpuPlan fuse_elementwise(const plan::GpuPlan& plan);

}  // namespace shapeml::lower::gpu
