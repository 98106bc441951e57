// The workspace layout of a dispatch plan, once, as the last pass of every
// plan (the planner's and the elementwise fusion's): each temp slot gets a
// 256-byte-aligned offset into the call's one workspace allocation, first
// fit over live ranges, so temps whose lives do not overlap share bytes.
// (TVM's memory planning in one pass.) The live range of a temp is computed
// from the launch list as it is now: from its first write to its last read,
// directly or through a view; a launch's second output (an index launch's
// bounds-check record) is read after the plan and lives to its end. A
// launch's output never shares bytes with its own inputs: both are live at
// that launch.
#pragma once
#include "plan/plan.h"

namespace shapeml::plan {

/// Sets every temp slot's offset and p.workspace_bytes.
void layout_workspace(GpuPlan& p);

}  // namespace shapeml::plan
