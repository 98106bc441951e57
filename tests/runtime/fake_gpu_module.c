/* A hand-written AOT module with one device entry (a dispatch plan), for
 * tests/capi/obs_device_error_test.c with the fake CUDA plugin. */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT const char* shapeml_module_manifest(void) {
  return "(shapeml-module (abi 2) (name fakegpu) (target \"x86-64\") (module-id m-00000000000000ff)\n"
         "  (entry scale (dims N) (where)\n"
         "    (params (x (tensor f32 (N) (cuda 0))))\n"
         "    (returns (tensor f32 (N) (cuda 0))) (kind gpu-plan)\n"
         "    (specialization (bind (N 4)) (symbol fake_plan_0) (kind gpu-plan))))\n";
}
EXPORT uint32_t shapeml_module_abi_version(void) { return 2; }
EXPORT const char* fake_plan_0(void) { return "(the fake plugin ignores the plan)"; }
