// shapeml_module_build (0.3): ahead-of-time builds with a struct of options
// and bindings as arrays, through the driver (src/driver: check_source, then
// build_shared_object, which validates the bindings and the output path).
// Every failure carries the code of its cause: bad options or bindings
// INVALID_ARGUMENT, an unknown entry NOT_FOUND, an unwritable output
// IO_ERROR, a missing linker UNAVAILABLE, oversized shapes
// RESOURCE_EXHAUSTED; only a failure of code generation itself is INTERNAL.
// libshapeml.so only.
#include <unistd.h>

#include <cstdlib>

#include "common/struct_reader.h"
#include "capi/handles.h"
#include "driver/frontend.h"
#include "driver/pipeline.h"
#include "jit/jit_code_provider.h"
#include "runtime/shape_binding.h"

namespace shapeml::capi {
// module_compile.cpp: the CPU target of a shapeml_target.
lower::cpu::CpuTarget cpu_target(shapeml_target t);
}  // namespace shapeml::capi

using shapeml::capi::guarded;
using shapeml::capi::make_status;
using shapeml::capi::null_arg;
using shapeml::capi::to_status;
namespace rt = shapeml::runtime;

struct shapeml_context;  // defined in capi.cpp
namespace shapeml::capi {
const check::CheckOptions& context_check_options(const shapeml_context* c);
}

namespace {

constexpr const char* kFn = "shapeml_module_build";

shapeml_status* invalid(const std::string& m) { return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(kFn) + ": " + m); }

// The shared object is linked in process with LLD; only when SHAPEML_CC
// asks for an external compiler driver must that driver exist.
shapeml_status* check_linker() {
  const char* env = std::getenv("SHAPEML_CC");
  if (!env || !*env) return nullptr;
  std::string cc = env;
  if (cc.find('/') != std::string::npos) {
    if (::access(cc.c_str(), X_OK) == 0) return nullptr;
  } else if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t b = 0; b <= p.size();) {
      size_t e = p.find(':', b);
      if (e == std::string::npos) e = p.size();
      std::string dir = e > b ? p.substr(b, e - b) : ".";
      if (::access((dir + "/" + cc).c_str(), X_OK) == 0) return nullptr;
      b = e + 1;
    }
  }
  return make_status(SHAPEML_STATUS_UNAVAILABLE, std::string(kFn) + ": SHAPEML_CC names the compiler driver `" + cc +
                                                     "`, which was not found; install it, point SHAPEML_CC at it, or unset "
                                                     "SHAPEML_CC to link in process with LLD");
}

}  // namespace

extern "C" {

SHAPEML_API shapeml_status* shapeml_module_build(shapeml_context* context, const char* name, const char* source, size_t length,
                                                 const shapeml_build_options* options, const char* out_path) {
  return guarded(kFn, [&]() -> shapeml_status* {
#define BO_END(f) SHAPEML_FIELD_END(shapeml_build_options, f)
    static constexpr std::initializer_list<size_t> ends = {BO_END(struct_size), BO_END(target), BO_END(bindings), BO_END(num_bindings),
                                                             BO_END(gpu_graph)};
#undef BO_END
    if (!context) return null_arg(kFn, "context");
    if (!source && length) return null_arg(kFn, "source");
    if (!options) return null_arg(kFn, "options");
    if (!out_path) return null_arg(kFn, "out_path");
    shapeml_build_options o = SHAPEML_BUILD_OPTIONS_INIT;
    if (!shapeml::common::read_versioned(*options, o, ends))
      return shapeml::capi::bad_struct_size(kFn, "options", options->struct_size, sizeof o, ends);
    if (!shapeml::capi::is_target(o.target))
      return invalid("options->target " + std::to_string(o.target) + " is not a shapeml_target (" + shapeml::capi::kTargetsExpected + ")");
    if (o.gpu_graph != SHAPEML_GRAPH_DEFAULT && o.gpu_graph != SHAPEML_GRAPH_ON && o.gpu_graph != SHAPEML_GRAPH_OFF)
      return invalid("options->gpu_graph " + std::to_string(o.gpu_graph) + " is not a shapeml_graph_mode");
    if (o.num_bindings == 0) return invalid("options->num_bindings is 0; give at least one specialization to build");
    if (!o.bindings) return invalid("options->bindings is NULL");

    // The bindings, as data: every name once, checked against the signature below.
    std::vector<shapeml::artifact::Specialization> specs;
    for (size_t i = 0; i < o.num_bindings; ++i) {
      const shapeml_binding& b = o.bindings[i];
      std::string at = "bindings[" + std::to_string(i) + "]";
      if (!b.entry) return invalid(at + ".entry is NULL");
      if (b.count && (!b.names || !b.values)) return invalid(at + (b.names ? ".values" : ".names") + " is NULL");
      shapeml::artifact::Specialization s;
      s.entry = b.entry;
      s.gpu_graph = o.gpu_graph != SHAPEML_GRAPH_OFF;
      for (size_t k = 0; k < b.count; ++k) {
        if (!b.names[k]) return invalid(at + ".names[" + std::to_string(k) + "] is NULL");
        if (!s.bindings.emplace(b.names[k], b.values[k]).second)
          return invalid(at + " (`" + s.entry + "`) gives shape variable `" + b.names[k] + "` twice");
      }
      specs.push_back(std::move(s));
    }

    if (auto* st = shapeml::capi::check_source_arg(kFn, source, length)) return st;
    shapeml::check::CheckResult r = shapeml::driver::check_source(name ? name : "<source>", std::string(source ? source : "", length),
                                                                 shapeml::capi::context_check_options(context));
    if (!r.ok()) {
      std::string text;
      for (const auto& d : r.diags.all()) text += shapeml::syntax::render_text(d, *r.source);
      return make_status(SHAPEML_STATUS_CHECK_FAILED, std::string(kFn) + ": the program does not check:\n" + text);
    }
    shapeml::lower::cpu::CpuTarget target = shapeml::capi::cpu_target(o.target);
    auto sigs = rt::parse_manifest(shapeml::jit::entries_manifest(*r.module, shapeml::lower::cpu::target_name(target)),
                                   name ? name : "<source>");
    if (!sigs.ok()) return to_status(sigs.status());
    // The driver validates the bindings (variables, values, `where`); on top
    // of that every tensor of the signature must be representable.
    for (size_t i = 0; i < specs.size(); ++i) {
      std::string at = std::string(kFn) + ": bindings[" + std::to_string(i) + "]: ";
      if (rt::Status st = shapeml::driver::validate_specialization(*r.module, specs[i]); !st.ok())
        return make_status(static_cast<shapeml_status_code>(st.code()), at + st.message());
      if (rt::Status st = rt::check_binding(*sigs->find(specs[i].entry), specs[i].bindings); !st.ok())
        return make_status(static_cast<shapeml_status_code>(st.code()), at + st.message());
    }
    if (auto* st = check_linker()) return st;
    rt::Status built = shapeml::driver::build_shared_object(*r.module, specs, target, out_path);
    if (!built.ok()) return make_status(static_cast<shapeml_status_code>(built.code()), std::string(kFn) + ": " + built.message());
    return nullptr;
  });
}

}  // extern "C"
