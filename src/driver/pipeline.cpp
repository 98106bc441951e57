#include "driver/pipeline.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <unistd.h>

#include "jit/jit_code_provider.h"
#include "lower/cpu/emit_mlir.h"
#include "lower/gpu/generate_kernels.h"
#include "lower/gpu/nvrtc_compiler.h"
#include "lower/gpu/plan_gpu.h"
#include "obs/log.h"
#include "obs/trace.h"
#include "transform/specialize_types.h"

namespace shapeml::driver {

using runtime::Status;

runtime::Result<lower::cpu::CpuTarget> parse_target(const std::string& name) {
  lower::cpu::CpuTarget t;
  if (name == "native") t.native = true;
  else if (name == "x86-64") t.native = false;
  else if (name == "x86-64-v3" || name == "x86-64-v4") t.native = false, t.cpu = name;
  else return runtime::invalid_argument("unknown target `" + name + "` (expected native, x86-64, x86-64-v3 or x86-64-v4)");
  return t;
}

Status validate_specialization(const ir::Module& m, const artifact::Specialization& s) {
  const ir::Function* f = m.find(s.entry);
  if (!f) return runtime::not_found("no function `" + s.entry + "` in module `" + m.name + "`");
  if (auto u = lower::cpu::undetermined_dims(*f); !u.empty())
    return runtime::invalid_argument("`" + s.entry + "` is not an entry point: its shape variable `" + u.front() +
                                     "` is not determined by its parameters; it is called from other functions with `:dims`");
  // A generic entry's dtype and device variables (spec §3.5) are bound too.
  std::map<std::string, int64_t> shapes = s.bindings;
  types::TypeBinding tb;
  std::string type_error;
  if (f->generic() && !transform::split_type_bindings(*f, shapes, tb, type_error)) return runtime::invalid_argument(type_error);
  for (const auto& [k, v] : shapes)
    if (std::find(f->dims.begin(), f->dims.end(), k) == f->dims.end())
      return runtime::invalid_argument("`" + s.entry + "` has no shape variable `" + k + "`" +
                                       (f->generic() ? "" : " (nor dtype or device variables: it is not generic)"));
  for (const auto& d : f->dims) {
    auto it = s.bindings.find(d);
    if (it == s.bindings.end()) return runtime::invalid_argument("the binding of `" + s.entry + "` does not give shape variable `" + d + "`");
    if (it->second < 1) {
      // A dtype or device given for a shape variable reads as its binding value (< 1): name what was given.
      auto dt = types::dtype_from_binding(it->second);
      auto dv = types::device_from_binding(it->second);
      std::string given = dt ? "the dtype " + types::dtype_binding_text(it->second)
                             : dv ? "the device " + types::device_binding_text(it->second) : std::to_string(it->second);
      return runtime::invalid_argument("shape variable `" + d + "` of `" + s.entry + "` is bound to " + given + "; shape variables are >= 1");
    }
  }
  for (const auto& c : f->where) {
    auto holds = c.eval(s.bindings);
    if (holds == true) continue;
    std::string vals;
    for (const auto& d : f->dims) vals += (vals.empty() ? "" : ", ") + d + "=" + std::to_string(s.bindings.at(d));
    return runtime::invalid_argument("the binding " + vals + " of `" + s.entry + "` " +
                                     (holds ? "violates its constraint " : "cannot evaluate its constraint (overflow) ") + c.str());
  }
  return {};
}

runtime::Result<std::string> lower_to_text(const ir::Module& m, const artifact::Specialization& s, LowerStage stage,
                                           const lower::cpu::CpuTarget& target, const lower::gpu::PlanOptions& gpu) {
  if (Status st = validate_specialization(m, s); !st.ok()) return st;
  obs::ModuleScope scope(m.id.empty() ? nullptr : &m.id, &m.name);
  obs::Span span("compiler", "lower to text");
  std::string error, text;
  const ir::Function* f = m.find(s.entry);
  const bool gpu_stage = stage == LowerStage::GpuPlan || stage == LowerStage::GpuKernels;
  if (gpu_stage || (f && lower::gpu::is_device_entry(*f, s.bindings))) {
    if (!gpu_stage)
      return runtime::invalid_argument("`" + s.entry + "` is a device function: it lowers to a dispatch plan (--emit=gpu-plan), not to CPU code");
    if (!f || !lower::gpu::is_device_entry(*f, s.bindings))
      return runtime::invalid_argument("`" + s.entry + "` touches no CUDA device: it is a host function (--emit=mlir or llvm show its code)");
    lower::gpu::PlanOptions options = gpu;
    options.graph = s.gpu_graph;
    auto plan = lower::gpu::plan_function(m, s.entry, s.bindings, error, options);
    if (!plan) return runtime::Status(jit::classify_compile_error(error).code(), "planning `" + s.entry + "` for the GPU: " + error);
    if (stage == LowerStage::GpuPlan) return plan->to_text();
    std::string source = lower::gpu::generated_source(*plan);
    if (source.empty())
      return runtime::invalid_argument("the plan of `" + s.entry + "` has no fused launch, so no generated kernel" +
                                       (!options.fuse ? std::string(" (elementwise fusion is off: --gpu-fuse on)")
                                                      : " (" + lower::gpu::nvrtc_describe() + ")"));
    return source;
  }
  switch (stage) {
    case LowerStage::GpuPlan: case LowerStage::GpuKernels: break;
    case LowerStage::Mlir: text = lower::cpu::emit_mlir(m, s.entry, s.bindings, lower::cpu::emit_options_for(target), &error); break;
    case LowerStage::LoweredMlir: text = lower::cpu::emit_lowered_mlir(m, s.entry, s.bindings, target, error); break;
    case LowerStage::Llvm: text = lower::cpu::emit_llvm(m, s.entry, s.bindings, target, error); break;
  }
  if (text.empty()) return runtime::Status(jit::classify_compile_error(error).code(), "lowering `" + s.entry + "`: " + error);
  return text;
}

runtime::Result<std::shared_ptr<runtime::Module>> jit_module(ir::Module m, const lower::cpu::CpuTarget& target, const std::string& name,
                                                             runtime::MemoryResourcePtr memory, size_t cache_capacity) {
  const std::string id = m.id, module_name = m.name;  // `m` moves into the provider
  obs::ModuleScope scope(id.empty() ? nullptr : &id, &module_name);
  obs::Span span("compiler", "jit module");
  auto provider = std::make_unique<jit::JitCodeProvider>(std::move(m), target);
  std::string manifest = provider->manifest();
  return runtime::Module::create(manifest, std::move(provider), name, std::move(memory), cache_capacity);
}

namespace {
// The directory the shared object goes to must exist and be writable: that
// is the caller's to fix (IO_ERROR), not a bug in a stage.
Status check_output_path(const std::string& out_path) {
  if (out_path.empty()) return runtime::invalid_argument("the output path is empty");
  std::filesystem::path p(out_path);
  std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return runtime::io_error("cannot write " + out_path + ": directory " + dir.string() + " does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    return runtime::io_error("cannot write " + out_path + ": directory " + dir.string() + ": " + std::strerror(errno));
  if (std::filesystem::is_directory(p, ec)) return runtime::io_error("cannot write " + out_path + ": it is a directory");
  return {};
}
}  // namespace

Status build_shared_object(const ir::Module& m, const std::vector<artifact::Specialization>& specs, const lower::cpu::CpuTarget& target,
                           const std::string& out_path, const lower::gpu::PlanOptions& gpu) {
  if (specs.empty()) return runtime::invalid_argument("no specialization to build");
  obs::ModuleScope scope(m.id.empty() ? nullptr : &m.id, &m.name);
  obs::Span span("compiler", "build shared object");
  if (span) span.arg("output", out_path).arg("specializations", static_cast<int64_t>(specs.size()));
  SHAPEML_LOG_AT(Driver, Info, "building a shared object", {"module", m.id}, {"output", out_path},
                 {"specializations", std::to_string(specs.size())});
  std::set<std::pair<std::string, std::map<std::string, int64_t>>> seen;
  for (const auto& s : specs) {
    if (Status st = validate_specialization(m, s); !st.ok()) return st;
    if (!seen.insert({s.entry, s.bindings}).second) {
      std::string b;
      for (const auto& [k, v] : s.bindings) b += (b.empty() ? "" : ",") + k + "=" + std::to_string(v);
      return runtime::invalid_argument("specialization " + s.entry + ":" + b + " is given twice");
    }
  }
  if (Status st = check_output_path(out_path); !st.ok()) return st;
  std::string error;
  // Device entries are planned here; the object then carries each plan.
  std::vector<artifact::Specialization> planned = specs;
  for (auto& s : planned) {
    const ir::Function* f = m.find(s.entry);
    if (!f || !lower::gpu::is_device_entry(*f, s.bindings)) continue;
    lower::gpu::PlanOptions options = gpu;
    options.graph = s.gpu_graph;
    obs::Span plan_span("lower", "gpu plan");
    if (plan_span) plan_span.arg("entry", s.entry);
    auto plan = lower::gpu::plan_function(m, s.entry, s.bindings, error, options);
    if (!plan) return runtime::Status(jit::classify_compile_error(error).code(), "planning `" + s.entry + "` for the GPU: " + error);
    s.gpu_plan = plan->to_text();
  }
  if (!lower::cpu::build_shared_object(m, planned, target, out_path, error)) {
    // The back end's message says whose fault it is (too large, not a CPU
    // program, a linker that is missing); one classification for JIT and AOT.
    runtime::Status st = jit::classify_compile_error(error);
    return runtime::Status(st.code(), "building " + out_path + ": " + error);
  }
  return {};
}

}  // namespace shapeml::driver
