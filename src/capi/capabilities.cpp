// shapeml_get_capabilities: what this library can do. Compiled into both
// libraries; libshapeml.so defines SHAPEML_HAS_COMPILER (JIT and AOT builds).
#include "common/compiled_entry.h"
#include "common/struct_reader.h"
#include "capi/status.h"
#include "runtime/cuda_plugin_loader.h"

#ifndef SHAPEML_HAS_COMPILER
#define SHAPEML_HAS_COMPILER 0
#endif

extern "C" SHAPEML_API shapeml_status* shapeml_get_capabilities(shapeml_capabilities* out) {
  return shapeml::capi::guarded("shapeml_get_capabilities", [&]() -> shapeml_status* {
#define CAP_END(f) SHAPEML_FIELD_END(shapeml_capabilities, f)
    static constexpr std::initializer_list<size_t> ends = {CAP_END(struct_size), CAP_END(abi_major),          CAP_END(abi_minor),
                                                           CAP_END(abi_patch),   CAP_END(module_abi_version), CAP_END(jit),
                                                           CAP_END(aot_build),   CAP_END(cuda_plugin)};
#undef CAP_END
    if (!out) return shapeml::capi::null_arg("shapeml_get_capabilities", "out");
    shapeml_capabilities full{sizeof full,
                              SHAPEML_VERSION_MAJOR,
                              SHAPEML_VERSION_MINOR,
                              SHAPEML_VERSION_PATCH,
                              shapeml::common::kCompiledEntryAbiVersion,
                              SHAPEML_HAS_COMPILER,
                              SHAPEML_HAS_COMPILER,
                              /*cuda_plugin=*/shapeml::runtime::cuda_plugin().ok() ? 1 : 0};
    if (!shapeml::common::write_versioned(full, out, ends))
      return shapeml::capi::bad_struct_size("shapeml_get_capabilities", "out", out->struct_size, sizeof full, ends);
    return nullptr;
  });
}
