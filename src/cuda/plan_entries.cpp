// The plan entries of the vtable: the executor's functions
// (src/cuda/executor/executor.h).
#include "cuda/cuda_error.h"
#include "cuda/plugin_parts.h"
#include "shapeml.h"

#include "cuda/executor/executor.h"

namespace shapeml::cuda {

int32_t plan_create_entry(int32_t device, const char* plan_text, shapeml_cuda_plan** plan, char* err, size_t err_size) {
  return plan_create(device, plan_text, plan, err, err_size);
}
int64_t plan_workspace_bytes_entry(const shapeml_cuda_plan* plan) { return plan_workspace_bytes(plan); }
int32_t plan_execute_entry(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream, char* err, size_t err_size) {
  return plan_execute(plan, buffers, workspace, stream, err, err_size);
}
void plan_destroy_entry(shapeml_cuda_plan* plan) { plan_destroy(plan); }

}  // namespace shapeml::cuda
