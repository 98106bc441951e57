// shapeml_module_build (0.3): ahead-of-time builds with a struct of options
// and bindings as arrays. Every failure carries the code of its cause: bad
// options or bindings INVALID_ARGUMENT, an unknown entry NOT_FOUND, an
// unwritable output IO_ERROR, a missing linker UNAVAILABLE, oversized shapes
// RESOURCE_EXHAUSTED; only a failure of code generation itself is INTERNAL.
// libshapeml.so only.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

#include "abi/struct_reader.h"
#include "capi/handles.h"
#include "check/checker.h"
#include "jit/jit_code_provider.h"
#include "runtime/shape_binding.h"

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

// The directory of `path` must exist and be writable, and `path` must not be
// a directory: checked before minutes of code generation.
shapeml_status* check_output_path(const std::string& path) {
  if (path.empty()) return invalid("out_path is empty");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return make_status(SHAPEML_STATUS_IO_ERROR, std::string(kFn) + ": cannot write " + path + ": it is a directory");
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  if (::access(dir.c_str(), W_OK) != 0) {
    int e = errno;
    return make_status(SHAPEML_STATUS_IO_ERROR, std::string(kFn) + ": cannot write " + path + ": directory " + dir + ": " + std::strerror(e));
  }
  return nullptr;
}

// The linker driver lower::cpu::build_shared_object runs (`cc` or $SHAPEML_CC).
shapeml_status* check_linker() {
  const char* env = std::getenv("SHAPEML_CC");
  std::string cc = env && *env ? env : "cc";
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
  return make_status(SHAPEML_STATUS_UNAVAILABLE, std::string(kFn) + ": the C compiler `" + cc +
                                                     "` that links the shared object was not found; install one (e.g. gcc) or "
                                                     "set SHAPEML_CC to its path");
}

}  // namespace

extern "C" {

SHAPEML_API shapeml_status* shapeml_module_build(shapeml_context* context, const char* name, const char* source, size_t length,
                                                 const shapeml_build_options* options, const char* out_path) {
  return guarded(kFn, [&]() -> shapeml_status* {
#define BO_END(f) SHAPEML_FIELD_END(shapeml_build_options, f)
    static constexpr std::initializer_list<size_t> ends = {BO_END(struct_size), BO_END(target), BO_END(bindings), BO_END(num_bindings)};
#undef BO_END
    if (!context) return null_arg(kFn, "context");
    if (!source && length) return null_arg(kFn, "source");
    if (!options) return null_arg(kFn, "options");
    if (!out_path) return null_arg(kFn, "out_path");
    shapeml_build_options o = SHAPEML_BUILD_OPTIONS_INIT;
    if (!shapeml::abi::read_versioned(*options, o, ends))
      return shapeml::capi::bad_struct_size(kFn, "options", options->struct_size, sizeof o, ends);
    if (o.target != SHAPEML_TARGET_NATIVE && o.target != SHAPEML_TARGET_X86_64)
      return invalid("options->target " + std::to_string(o.target) + " is not a shapeml_target");
    if (o.num_bindings == 0) return invalid("options->num_bindings is 0; give at least one specialization to build");
    if (!o.bindings) return invalid("options->bindings is NULL");

    // The bindings, as data: every name once, checked against the signature below.
    std::vector<shapeml::lower::cpu::Specialization> specs;
    for (size_t i = 0; i < o.num_bindings; ++i) {
      const shapeml_binding& b = o.bindings[i];
      std::string at = "bindings[" + std::to_string(i) + "]";
      if (!b.entry) return invalid(at + ".entry is NULL");
      if (b.count && (!b.names || !b.values)) return invalid(at + (b.names ? ".values" : ".names") + " is NULL");
      shapeml::lower::cpu::Specialization s;
      s.entry = b.entry;
      for (size_t k = 0; k < b.count; ++k) {
        if (!b.names[k]) return invalid(at + ".names[" + std::to_string(k) + "] is NULL");
        if (!s.bindings.emplace(b.names[k], b.values[k]).second)
          return invalid(at + " (`" + s.entry + "`) gives shape variable `" + b.names[k] + "` twice");
      }
      specs.push_back(std::move(s));
    }

    shapeml::check::CheckResult r = shapeml::check::check_source(name ? name : "<source>", std::string(source ? source : "", length),
                                                                 shapeml::capi::context_check_options(context));
    if (!r.ok()) {
      std::string text;
      for (const auto& d : r.diags.all()) text += shapeml::syntax::render_text(d, *r.source);
      return make_status(SHAPEML_STATUS_CHECK_FAILED, std::string(kFn) + ": the program does not check:\n" + text);
    }
    shapeml::lower::cpu::CpuTarget target;
    target.native = o.target != SHAPEML_TARGET_X86_64;
    auto sigs = rt::parse_manifest(shapeml::jit::entries_manifest(*r.module, shapeml::lower::cpu::target_name(target)),
                                   name ? name : "<source>");
    if (!sigs.ok()) return to_status(sigs.status());
    std::set<std::pair<std::string, rt::Binding>> seen;
    for (size_t i = 0; i < specs.size(); ++i) {
      const rt::EntrySig* e = sigs->find(specs[i].entry);
      if (!e) {
        std::string have;
        for (const auto& x : sigs->entries) have += (have.empty() ? "" : ", ") + x.name;
        return make_status(SHAPEML_STATUS_NOT_FOUND, std::string(kFn) + ": bindings[" + std::to_string(i) + "]: no function `" + specs[i].entry +
                                                         "` in the program (it has: " + (have.empty() ? "none" : have) + ")");
      }
      rt::Status st = rt::check_binding(*e, specs[i].bindings);
      if (!st.ok()) return make_status(static_cast<shapeml_status_code>(st.code()), std::string(kFn) + ": bindings[" + std::to_string(i) + "]: " + st.message());
      if (!seen.emplace(specs[i].entry, specs[i].bindings).second)
        return invalid("bindings[" + std::to_string(i) + "] repeats " + rt::binding_str(*e, specs[i].bindings) + " of `" + specs[i].entry + "`");
    }
    if (auto* st = check_output_path(out_path)) return st;
    if (auto* st = check_linker()) return st;

    std::string error;
    if (!shapeml::lower::cpu::build_shared_object(*r.module, specs, target, out_path, error)) {
      if (error.rfind("cannot write", 0) == 0) return make_status(SHAPEML_STATUS_IO_ERROR, std::string(kFn) + ": " + error);
      rt::Status st = shapeml::jit::classify_compile_error(error);
      return make_status(static_cast<shapeml_status_code>(st.code()), std::string(kFn) + ": " + st.message());
    }
    return nullptr;
  });
}

}  // extern "C"
