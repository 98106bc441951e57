// The compiler half of the module ABI: JIT compilation and AOT builds.

#include "capi/handles.h"
#include "driver/frontend.h"
#include "driver/pipeline.h"
#include "jit/bindings_spec.h"

using shapeml::capi::guarded;
using shapeml::capi::make_status;
using shapeml::capi::memory_of;
using shapeml::capi::null_arg;
using shapeml::capi::to_status;

struct shapeml_context;  // defined in capi.cpp
namespace shapeml::capi {
const check::CheckOptions& context_check_options(const shapeml_context* c);
std::shared_ptr<runtime::ContextStreams> context_streams(const shapeml_context* c);
}

namespace {

}  // namespace

namespace shapeml::capi {
shapeml::lower::cpu::CpuTarget cpu_target(shapeml_target t) {
  shapeml::lower::cpu::CpuTarget c;
  c.native = t == SHAPEML_TARGET_NATIVE;
  if (t == SHAPEML_TARGET_X86_64_V3) c.cpu = "x86-64-v3";
  if (t == SHAPEML_TARGET_X86_64_V4) c.cpu = "x86-64-v4";
  return c;
}
}  // namespace shapeml::capi
using shapeml::capi::cpu_target;

namespace {

// Checks `source`; on errors returns CHECK_FAILED carrying every diagnostic.
shapeml_status* checked(const char* fn, shapeml_context* ctx, const char* name, const char* source, size_t length,
                        shapeml::check::CheckResult& r) {
  if (auto* st = shapeml::capi::check_source_arg(fn, source, length)) return st;
  r = shapeml::driver::check_source(name ? name : "<source>", std::string(source ? source : "", length),
                                    shapeml::capi::context_check_options(ctx));
  if (r.ok()) return nullptr;
  std::string text;
  for (const auto& d : r.diags.all()) text += shapeml::syntax::render_text(d, *r.source);
  return make_status(SHAPEML_STATUS_CHECK_FAILED, std::string(fn) + ": the program does not check:\n" + text);
}

}  // namespace

extern "C" {

SHAPEML_API shapeml_status* shapeml_module_compile(shapeml_context* context, const char* name, const char* source, size_t length,
                                                   const shapeml_module_options* options, shapeml_module** out) {
  return guarded("shapeml_module_compile", [&]() -> shapeml_status* {
    const char* fn = "shapeml_module_compile";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!context) return null_arg(fn, "context");
    if (!source && length) return null_arg(fn, "source");
    shapeml_module_options o = SHAPEML_MODULE_OPTIONS_INIT;
    if (auto* st = shapeml::capi::read_module_options(fn, options, o)) return st;
    if (!shapeml::capi::is_target(o.target))
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": unknown target " + std::to_string(o.target) +
                                                              " in options (expected " + shapeml::capi::kTargetsExpected + ")");
    shapeml::check::CheckResult r;
    if (auto* st = checked(fn, context, name, source, length, r)) return st;
    auto m = shapeml::driver::jit_module(std::move(*r.module), cpu_target(o.target), name ? name : "<source>", memory_of(o.memory),
                                         o.specialization_cache_capacity);
    if (!m.ok()) return to_status(m.status());
    m.value()->set_default_streams(shapeml::capi::context_streams(context));  // NULL-stream device calls run on the context's streams
    auto* h = new shapeml_module;
    h->module = m.value();
    *out = h;
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_module_build_shared_object(shapeml_context* context, const char* name, const char* source, size_t length,
                                                               const char* bindings, shapeml_target target, const char* out_path) {
  return guarded("shapeml_module_build_shared_object", [&]() -> shapeml_status* {
    const char* fn = "shapeml_module_build_shared_object";
    if (!context) return null_arg(fn, "context");
    if (!source && length) return null_arg(fn, "source");
    if (!bindings) return null_arg(fn, "bindings");
    if (!out_path) return null_arg(fn, "out_path");
    if (!shapeml::capi::is_target(target))
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": unknown target " + std::to_string(target) + " (expected " +
                                                              shapeml::capi::kTargetsExpected + ")");
    std::vector<shapeml::artifact::Specialization> specs;
    std::string error;
    if (!shapeml::jit::parse_specializations(bindings, "", specs, error))
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": bindings: " + error);
    shapeml::check::CheckResult r;
    if (auto* st = checked(fn, context, name, source, length, r)) return st;
    auto built = shapeml::driver::build_shared_object(*r.module, specs, cpu_target(target), out_path);
    if (!built.ok()) return to_status(shapeml::runtime::Status(built.code(), std::string(fn) + ": " + built.message()));
    return nullptr;
  });
}

}  // extern "C"
