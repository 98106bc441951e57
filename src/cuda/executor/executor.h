// The plan executor inside the CUDA plugin: the plan functions of
// shapeml_cuda_plugin (src/plan/plugin_contract.h) are exactly these. It turns a
// dispatch plan (src/plan/plan.h) into launches of shapeml's own kernels
// and cuBLASLt matmuls, prepared once at plan_create (descriptors, algorithm
// choice, per-launch shapes and broadcast strides) so that plan_execute only
// enqueues work on the caller's stream: no allocation, no host
// synchronization. Return values and `err` follow plugin_api.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/plugin_contract.h"

namespace shapeml::cuda {

/// What graph replay (graph.h) needs to know of a prepared plan.
struct PlanGraphFacts {
  int32_t device = 0;
  int32_t num_inputs = 0;  ///< buffers[0 .. num_inputs) are inputs, the rest outputs
  bool on = false;      ///< the plan's `graph` line
  std::string why;      ///< its reason
  std::string blocker;  ///< GpuPlan::graph_blocker(): "" when the plan can be captured
  bool branches = false;  ///< the plan's `branches` line: capture with plan_execute_branched
  std::vector<int64_t> buffer_bytes;  ///< bytes per buffer (inputs, then outputs), as plan_execute's `buffers`
};

int32_t plan_create(int32_t device, const char* plan_text, shapeml_cuda_plan** plan, char* err, size_t err_size);
int64_t plan_workspace_bytes(const shapeml_cuda_plan* plan);
int32_t plan_execute(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream, char* err, size_t err_size);
void plan_destroy(shapeml_cuda_plan* plan);
/// The observer of plan_execute (plugin_api.h: set_observer); NULL: none.
void set_observer(const shapeml_cuda_observer* observer);
/// plan_execute for a stream that is being captured into a graph (graph.h):
/// before each launch the capture's dependencies are set to the nodes of
/// the launches it must wait for (plan/launch_dependencies.h, from the bytes
/// each launch touches at these addresses), so launches that share no bytes
/// become parallel branches; at the end the capture depends on every branch.
int32_t plan_execute_branched(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream, char* err, size_t err_size);
/// The plan's graph facts (plan not NULL; valid as long as the plan).
const PlanGraphFacts& plan_graph_facts(const shapeml_cuda_plan* plan);

}  // namespace shapeml::cuda
