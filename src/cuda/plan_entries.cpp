// The plan and graph entries of the vtable: the executor's functions
// (src/cuda/executor/executor.h, graph.h).
#include "cuda/cuda_error.h"
#include "cuda/plugin_parts.h"
#include "shapeml.h"

#include "cuda/executor/executor.h"
#include "cuda/executor/graph.h"

namespace shapeml::cuda {

int32_t plan_create_entry(int32_t device, const char* plan_text, shapeml_cuda_plan** plan, char* err, size_t err_size) {
  return plan_create(device, plan_text, plan, err, err_size);
}
int64_t plan_workspace_bytes_entry(const shapeml_cuda_plan* plan) { return plan_workspace_bytes(plan); }
int32_t plan_execute_entry(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream, char* err, size_t err_size) {
  return plan_execute(plan, buffers, workspace, stream, err, err_size);
}
void plan_destroy_entry(shapeml_cuda_plan* plan) { plan_destroy(plan); }
int32_t plan_graph_entry(const shapeml_cuda_plan* plan, char* why, size_t why_size) { return plan_graph(plan, why, why_size); }
int64_t graph_memory_bytes_entry(const shapeml_cuda_plan* plan, int32_t rebind) { return graph_memory_bytes(plan, rebind); }
int32_t graph_create_entry(shapeml_cuda_plan* plan, int32_t rebind, void* memory, shapeml_cuda_graph** graph, char* err, size_t err_size) {
  return graph_create(plan, rebind, memory, graph, err, err_size);
}
int32_t graph_execute_entry(shapeml_cuda_graph* graph, void* const* buffers, void* stream, int32_t* ran, char* err, size_t err_size) {
  return graph_execute(graph, buffers, stream, ran, err, err_size);
}
int32_t graph_destroy_entry(shapeml_cuda_graph* graph, char* err, size_t err_size) { return graph_destroy(graph, err, err_size); }

}  // namespace shapeml::cuda
