// The plan verifier: every rule a dispatch plan (plan/plan.h) must keep for
// the executor to run it, in one place. The compiler runs it after every
// plan pass (a failure there is a compiler bug: INTERNAL, as
// check/verify.cpp is for the IR); the plan parser runs it on every plan
// text, so the CUDA plugin's plan_create refuses a bad plan with the same
// words before it touches the device; nothing here needs CUDA.
//
// What it checks: slot indices, kinds and byte ranges (temps inside the
// workspace once it is laid out, views inside what they alias, counts that
// fit in int64); per launch, the operand counts, device placement, dtypes,
// shapes (broadcasting, permutations, axes, reductions, matmul sizes), the
// `ints`, `scalar` and `flag` each kind reads, and the kernels' limits
// (plan/limits.h: coalesced rank, copy groups, fused operands, GEMM
// pieces); plan-wide, that `graph on` is only said of a capturable plan.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "plan/plan.h"

namespace shapeml::plan {

/// What is wrong with a plan: the launch (-1: a slot or the plan itself),
/// whether it is over a kernel limit (a valid plan this executor cannot
/// run: UNIMPLEMENTED) rather than malformed (INVALID_ARGUMENT), and the
/// message, which names the launch or slot ("launch 3 (binary add): ...").
struct PlanDefect {
  int32_t launch = -1;
  bool over_limit = false;
  std::string message;
};

/// Whether the workspace layout has run: before it, temps may still
/// overlap and have no offsets, so their byte ranges are not checked.
enum class PlanStage { BeforeLayout, LaidOut };

/// The first defect of `p`, or nullopt when the executor can run it.
std::optional<PlanDefect> verify_plan(const GpuPlan& p, PlanStage stage = PlanStage::LaidOut);

/// verify_plan's message, or "" when the plan is valid (for tests and for
/// callers that only report).
std::string verify_message(const GpuPlan& p, PlanStage stage = PlanStage::LaidOut);

/// Whether the plan can be captured in a CUDA graph at all: "" when it
/// can, else why not (a host slot: its copy reads or writes pageable host
/// memory, which stream capture does not allow; an index launch: the call
/// synchronizes to read its bounds check).
std::string graph_blocker(const GpuPlan& p);

/// The graph-replay policy, decided once for every plan: replay when the
/// compile option allows it and graph_blocker() is empty; sets p.graph and
/// p.graph_why (docs/design/cuda-graphs.md).
void decide_graph_replay(GpuPlan& p, bool allowed);

/// Whether a replayed graph runs independent launches side by side: on when
/// the plan replays as a graph and the compile option allows it; sets
/// p.branches and p.branches_why. After decide_graph_replay.
void decide_graph_branches(GpuPlan& p, bool allowed);

}  // namespace shapeml::plan
