// The compiler half of the module ABI: JIT compilation and AOT builds.
#include "capi/handles.h"

using shapeml::capi::guarded;
using shapeml::capi::make_status;

extern "C" {

SHAPEML_API shapeml_status* shapeml_module_compile(shapeml_context* context, const char* name, const char* source, size_t length,
                                                   const shapeml_module_options* options, shapeml_module** out) {
  return guarded("shapeml_module_compile", [&]() -> shapeml_status* {
    if (out) *out = nullptr;
    return make_status(SHAPEML_STATUS_UNIMPLEMENTED, "shapeml_module_compile: the CPU back end is not linked into this build");
  });
}

SHAPEML_API shapeml_status* shapeml_module_build_shared_object(shapeml_context* context, const char* name, const char* source, size_t length,
                                                               const char* bindings, shapeml_target target, const char* out_path) {
  return guarded("shapeml_module_build_shared_object", [&]() -> shapeml_status* {
    return make_status(SHAPEML_STATUS_UNIMPLEMENTED, "shapeml_module_build_shared_object: the CPU back end is not linked into this build");
  });
}

}  // extern "C"
