#include "jit/jit_code_provider.h"

#include "jit/jit_cache.h"

#include "lower/gpu/plan_gpu.h"
#include "runtime/parallel_for.h"
#include "types/shape_inference.h"

namespace shapeml::jit {

namespace {
// The compile uses as many threads as the calls may (SHAPEML_NUM_THREADS, else
// the CPUs of the process; the back end caps it).
lower::cpu::CompileOptions jit_compile_options() {
  lower::cpu::CompileOptions o;
  o.compile_threads = static_cast<unsigned>(runtime::default_num_threads());
  return o;
}
}  // namespace

JitCodeProvider::JitCodeProvider(ir::Module module, lower::cpu::CpuTarget target)
    : module_(std::move(module)), target_(target), jit_(target, jit_compile_options(), jit_cache_from_environment()) {}

void* JitCodeProvider::lookup(const std::string& symbol) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = symbols_.find(symbol);
  return it == symbols_.end() ? nullptr : it->second;
}

runtime::Status classify_compile_error(const std::string& error) {
  using runtime::StatusCode;
  auto has = [&](const char* s) { return error.find(s) != std::string::npos; };
  StatusCode code = StatusCode::Internal;
  if (error.rfind("internal:", 0) == 0) code = StatusCode::Internal;
  else if (has("too many elements") || has("cannot be evaluated (unbound variable or overflow)") || has("too large for the CPU back end"))
    code = StatusCode::ResourceExhausted;
  else if (has("not a CPU program") || has("is not supported by the GPU back end")) code = StatusCode::Unimplemented;
  else if (has("is not bound") || has("shape variables are >= 1") || has("has no shape variable") || has("the bindings violate") ||
           has(types::kBindingOverflows))
    code = StatusCode::InvalidArgument;
  else if (error.rfind("no function `", 0) == 0) code = StatusCode::NotFound;
  else if (has("cannot write ") || has("cannot create ")) code = StatusCode::IoError;  // a full disk, a bad output path
  return runtime::Status(code, error.empty() ? "code generation failed without a message" : error);
}

runtime::Status JitCodeProvider::specialize(const std::string& entry, const std::map<std::string, int64_t>& bindings, std::string& symbol) {
  std::string error;
  if (const ir::Function* f = module_.find(entry); f && lower::gpu::is_device_entry(*f, bindings)) {
    // A device entry: its specialization is a dispatch plan, kept as text.
    auto plan = lower::gpu::plan_function(module_, entry, bindings, error);
    if (!plan) return classify_compile_error(error);
    std::lock_guard<std::mutex> lock(mu_);
    symbol = "jit_" + entry + "_" + std::to_string(next_++);
    plans_[symbol] = plan->to_text();
    return {};
  }
  lower::cpu::HookTables hooks;
  common::CompiledEntryFn fn = jit_.compile(module_, entry, bindings, error, &hooks);
  if (!fn) return classify_compile_error(error);
  std::lock_guard<std::mutex> lock(mu_);
  symbol = "jit_" + entry + "_" + std::to_string(next_++);
  symbols_[symbol] = reinterpret_cast<void*>(fn);
  symbols_[symbol + "_temp_hooks"] = hooks.temp;  // runtime/temp_memory.h
  symbols_[symbol + "_parallel_hooks"] = hooks.parallel;  // runtime/parallel_for.h
  return {};
}

runtime::Result<std::string> JitCodeProvider::plan_text(const std::string& symbol) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(symbol);
  if (it == plans_.end()) return runtime::not_found("no dispatch plan `" + symbol + "` in this JIT module");
  return it->second;
}

void JitCodeProvider::release(const std::string& symbol) {
  void* fn = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (plans_.erase(symbol)) return;
    auto it = symbols_.find(symbol);
    if (it == symbols_.end()) return;
    fn = it->second;
    symbols_.erase(it);
    symbols_.erase(symbol + "_temp_hooks");
    symbols_.erase(symbol + "_parallel_hooks");
  }
  jit_.release(reinterpret_cast<common::CompiledEntryFn>(fn));
}

std::string entries_manifest(const ir::Module& module, const std::string& target) {
  // Every function an entry, no specialization listed (they are made on demand).
  return artifact::manifest_text(module, {}, target, nullptr, /*every_function=*/true);
}

std::string JitCodeProvider::manifest() const { return entries_manifest(module_, lower::cpu::target_name(target_)); }

}  // namespace shapeml::jit
