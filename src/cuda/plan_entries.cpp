// The plan entries of the vtable. With the executor built in
// (SHAPEML_CUDA_HAS_EXECUTOR) they are its functions; without it (a tree
// without src/cuda/executor) every plan call is UNIMPLEMENTED, saying so.
#include "cuda/cuda_error.h"
#include "cuda/plugin_parts.h"
#include "shapeml.h"

#if SHAPEML_CUDA_HAS_EXECUTOR
#include "cuda/executor/executor.h"
#endif

namespace shapeml::cuda {

#if SHAPEML_CUDA_HAS_EXECUTOR
int32_t plan_create_entry(int32_t device, const char* plan_text, shapeml_cuda_plan** plan, char* err, size_t err_size) {
  return plan_create(device, plan_text, plan, err, err_size);
}
int64_t plan_workspace_bytes_entry(const shapeml_cuda_plan* plan) { return plan_workspace_bytes(plan); }
int32_t plan_execute_entry(shapeml_cuda_plan* plan, void* const* buffers, void* workspace, void* stream, char* err, size_t err_size) {
  return plan_execute(plan, buffers, workspace, stream, err, err_size);
}
void plan_destroy_entry(shapeml_cuda_plan* plan) { plan_destroy(plan); }
#else
namespace {
constexpr const char* kNotBuilt =
    "%s: the plan executor is not built into this libshapeml_cuda.so (src/cuda/executor was absent when it was built)";
}
int32_t plan_create_entry(int32_t, const char*, shapeml_cuda_plan** plan, char* err, size_t err_size) {
  if (plan) *plan = nullptr;
  return fail_with(SHAPEML_STATUS_UNIMPLEMENTED, err, err_size, kNotBuilt, "plan_create");
}
int64_t plan_workspace_bytes_entry(const shapeml_cuda_plan*) { return -1; }
int32_t plan_execute_entry(shapeml_cuda_plan*, void* const*, void*, void*, char* err, size_t err_size) {
  return fail_with(SHAPEML_STATUS_UNIMPLEMENTED, err, err_size, kNotBuilt, "plan_execute");
}
void plan_destroy_entry(shapeml_cuda_plan*) {}
#endif

}  // namespace shapeml::cuda
