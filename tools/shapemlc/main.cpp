// shapemlc: a thin command line over the shapeml driver (src/driver). Each
// subcommand parses its own options (CLI11), so an option a subcommand does
// not take is an error; the pipeline itself lives in the driver.
#include <CLI/CLI.hpp>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "driver/frontend.h"
#include "driver/pipeline.h"
#include "jit/bindings_spec.h"
#include "obs/log.h"
#include "obs/trace.h"
#include "runtime/module.h"
#include "runtime/npy.h"
#include "shapeml.h"
#include "syntax/parser.h"
#include "syntax/sexpr.h"
#include "types/shape_inference.h"

namespace {

namespace rt = shapeml::runtime;

const char* kUsage = R"(usage: shapemlc COMMAND [OPTIONS] FILE...

Commands (each takes only its own options; `shapemlc COMMAND --help`):
  check FILE...          parse and type-check; exit 0 only when every file checks.
                         Diagnostics go to stderr.
        [--format=text|json] [--timeout-ms=N] [--dump-obligations DIR] [--stats]
  fmt FILE               print FILE in canonical layout (comments kept) to stdout.
  build FILE -o OUT.so --bind SPEC... [--entry NAME] [--target T] [--timeout-ms=N]
                         compile ahead of time into a shared object that
                         libshapeml_runtime.so loads (no LLVM/MLIR/Z3 needed).
  run FILE [--entry NAME] [--input P=FILE.npy]... [--random P=SEED]...
           [--bind SPEC] [--output FILE.npy]... [--target T] [--timeout-ms=N]
                         JIT-compile, call NAME, write the results.
  --emit=STAGE FILE [--entry NAME] [--bind SPEC] [--target T] [--timeout-ms=N]
                         run the pipeline up to STAGE and print it to stdout:
                           ast           after parse: the program, canonical layout
                           typed         after elaborate + verify: the typed IR (A-normal form)
                           mlir          after lower: MLIR (linalg on tensors) of --entry at --bind
                           lowered-mlir  after the MLIR pass pipeline (LLVM dialect)
                           llvm          optimized LLVM IR of --entry at --bind
                           gpu-plan      a device function's dispatch plan at --bind
                           gpu-kernels   the CUDA C generated for that plan's fused
                                         launches (with --gpu-fuse on)

Options:
  --entry NAME           the function (default: the last one in the file)
  --bind SPEC            [ENTRY:]VAR=VALUE,... shape variables of a
                         specialization; build takes several; run gives
                         the entry's (given ...) variables from it
  --target native|x86-64|x86-64-v3|x86-64-v4
                          code generation target (default native; v3: AVX2,
                          v4: AVX-512, for modules that ship)
  --gpu-tf32             build, --emit=gpu-plan: device f32 matmuls may use TF32
                         tensor cores (~1e-3 relative error; default full fp32)
  --gpu-graph on|off     device entries: replay plans as CUDA graphs (default on)
  --gpu-graph-branches on|off
                         device entries: in a replayed graph, run launches that
                         share no bytes side by side (default on)
  --gpu-cudnn-attention on|off
                         device entries: bf16 attention on cuDNN's fused
                         attention where the plugin finds cuDNN (default on)
  --gpu-merge-projections on|off
                         device entries: projections of one activation with
                         small weights as one wider GEMM (default on)
  --gpu-group-matmuls on|off
                         device entries: bf16 GEMMs of one activation and
                         weights of one shape as one batched GEMM (default on)
  --gpu-fp32-matmul simt|3xtf32
                         device entries: f32 matmuls on the FP32 cores (simt,
                         the default) or, from 2^31 flops, as 3xTF32 on
                         tensor cores (~1e-5 relative error: between TF32
                         and fp32)
  --gpu-fuse on|off      device entries: fuse elementwise launches into
                         generated kernels (default on; without NVRTC where
                         the module is built, the launches stay unfused)
  --gpu-fuse-codegen on|off
                         device entries: a fused launch runs a kernel generated
                         for it and compiled (NVRTC) into the module; off: the
                         plugin's interpreter (default on)
  --gpu-fuse-patterns on|off
                         device entries: one fused kernel each for RMSNorm,
                         a causal-masked softmax and act(a)*b (default on)
  -o FILE                build: the shared object to write
  --input P=FILE.npy     run: parameter P from a NumPy file
  --random P=SEED        run: parameter P filled with deterministic uniform
                         values in [-1, 1) (integers in [-8, 8]); its shape
                         comes from --bind and the other inputs
  --output FILE.npy      run: where to write each result, in order
  --format=text|json     check: diagnostics as text (default) or one JSON array per file
  --timeout-ms=N         Z3 budget per shape obligation in ms; 0 means the
                         default (2000), as in the C ABI's context options
  --dump-obligations DIR check: write every obligation as SMT-LIB 2 into DIR
  --stats                check: print per-file statistics to stdout
  -h, --help             this text
  --version              the version (of the shapeml headers it was built with)

Environment:
  SHAPEML_TRACE=FILE     record a trace of the compile and the run and write it to
                         FILE as Chrome trace-event JSON (ui.perfetto.dev)
  SHAPEML_TRACE_GPU=1    with SHAPEML_TRACE: time every GPU operation with CUDA events
  SHAPEML_LOG=SPEC       log records to stderr at these levels, e.g. info,smt=debug
                         (levels trace debug info warn error off; components driver
                         parse check smt lower codegen link runtime memory cuda capi)
  SHAPEML_JIT_CACHE=off  run: do not use the on-disk cache of JIT-compiled code
  SHAPEML_JIT_CACHE_DIR=DIR  run: where that cache lives (default
                         $XDG_CACHE_HOME/shapeml/jit or ~/.cache/shapeml/jit)
  SHAPEML_JIT_CACHE_MAX_MB=N  run: its size bound (default 1024); the least
                         recently used entries go first

Exit status: 0 success, 1 the program has errors, 2 bad usage or unreadable file.
)";

bool read_file(const std::string& path, std::string& out, std::string& err) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    err = "is a directory";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err = std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    err = "read error";
    return false;
  }
  out = ss.str();
  return true;
}

void print_diags(const shapeml::check::CheckResult& r, bool json) {
  const auto& src = *r.source;
  if (json) {
    std::string s = "[";
    for (size_t i = 0; i < r.diags.all().size(); ++i) s += (i ? ",\n " : "") + shapeml::syntax::render_json(r.diags.all()[i], src);
    std::cerr << s << "]\n";
    return;
  }
  for (const auto& d : r.diags.all()) std::cerr << shapeml::syntax::render_text(d, src) << "\n";
}

std::string sanitize(const std::string& s) {
  std::string r;
  for (char c : s) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c : '_';
  return r;
}

int dump_obligations(const shapeml::check::CheckResult& r, const std::string& file, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::cerr << "shapemlc: cannot create " << dir << ": " << ec.message() << "\n";
    return 2;
  }
  std::string stem = sanitize(std::filesystem::path(file).stem().string());
  for (size_t i = 0; i < r.obligations.size(); ++i) {
    const auto& o = r.obligations[i];
    using K = shapeml::smt::Outcome::Kind;
    std::string expect = o.outcome.kind == K::Proved ? "unsat" : o.outcome.kind == K::Refuted ? "sat" : "unknown";
    std::ostringstream name;
    name << dir << "/" << stem << "." << sanitize(o.function) << "." << i << ".smt2";
    std::ofstream out(name.str());
    out << "; shapeml obligation\n; source: " << file << ":" << o.line << "\n; function: " << o.function << "\n; rule: " << o.code
        << "\n; goal: " << o.goal << "\n; expect: " << expect << "\n";
    if (o.outcome.kind == K::Refuted) {
      out << "; counterexample:";
      for (const auto& [k, v] : o.outcome.counterexample) out << " " << k << "=" << v;
      out << "\n";
    }
    out << o.smtlib;
    if (!out) {
      std::cerr << "shapemlc: cannot write " << name.str() << "\n";
      return 2;
    }
  }
  return 0;
}

// What the code-generating commands share.
struct CodegenArgs {
  std::string file, entry, out, target = "native", gpu_graph = "on", gpu_fuse = "on", gpu_fuse_patterns = "on", gpu_fuse_attention = "on", gpu_cudnn_attention = "on",
              gpu_graph_branches = "on", gpu_merge_projections = "on", gpu_group_matmuls = "on", gpu_fuse_codegen = "on",
              gpu_fp32_matmul = "simt";
  std::vector<std::string> binds, inputs, randoms, outputs;
  unsigned timeout = 2000;
  bool gpu_tf32 = false;  // --gpu-tf32: device matmuls in f32 may use TF32
  shapeml::lower::gpu::PlanOptions gpu() const {
    shapeml::lower::gpu::PlanOptions o;
    o.allow_tf32 = gpu_tf32;
    o.fuse = gpu_fuse == "on";
    o.generate_kernels = gpu_fuse_codegen == "on";
    o.fuse_patterns = gpu_fuse_patterns == "on";
    o.fuse_attention = gpu_fuse_attention == "on";
    o.cudnn_attention = gpu_cudnn_attention == "on";
    o.graph_branches = gpu_graph_branches == "on";
    o.merge_projections = gpu_merge_projections == "on";
    o.group_matmuls = gpu_group_matmuls == "on";
    o.split_fp32_matmuls = gpu_fp32_matmul == "3xtf32";
    return o;
  }
};

shapeml::check::CheckOptions check_options(unsigned timeout) {
  shapeml::check::CheckOptions o;
  o.obligation_timeout_ms = timeout;  // 0: the driver's default
  return o;
}

std::optional<shapeml::check::CheckResult> load_checked(const std::string& f, unsigned timeout,
                                                        shapeml::driver::FrontendStage stop = shapeml::driver::FrontendStage::Verify) {
  std::string text, err;
  if (!read_file(f, text, err)) {
    std::cerr << "shapemlc: cannot read " << f << ": " << err << "\n";
    return std::nullopt;
  }
  return shapeml::driver::check_source(f, std::move(text), check_options(timeout), stop);
}

int cmd_check(const std::vector<std::string>& files, bool json, unsigned timeout, const std::string& dump, bool stats) {
  int rc = 0;
  for (const auto& f : files) {
    std::string text, err;
    if (!read_file(f, text, err)) {
      std::cerr << "shapemlc: cannot read " << f << ": " << err << "\n";
      rc = 2;
      continue;
    }
    shapeml::check::CheckOptions o = check_options(timeout);
    o.record_obligations = !dump.empty();
    auto r = shapeml::driver::check_source(f, std::move(text), o);
    if (!r.diags.all().empty() || json) print_diags(r, json);
    if (!r.ok() && rc == 0) rc = 1;
    if (!dump.empty()) {
      int d = dump_obligations(r, f, dump);
      if (d) rc = d;
    }
    if (stats) {
      const auto& s = r.stats;
      // The program's obligations (the elaborator's); times include the IR
      // verifier, which discharges them again.
      const auto& v = s.verify_solver;
      std::printf("%s: %s, %zu function(s), %zu binding(s), %zu obligation(s) (%zu by normalization, %zu Z3 queries), "
                  "parse %.2f ms, check %.2f ms (verify %.2f ms), Z3 %.2f ms (verify %zu queries, %.2f ms)\n",
                  f.c_str(), r.ok() ? "ok" : "errors", s.functions, s.bindings, s.solver.obligations - v.obligations,
                  s.solver.syntactic - v.syntactic, s.solver.z3_queries - v.z3_queries, s.parse_seconds * 1e3, s.check_seconds * 1e3,
                  s.verify_seconds * 1e3, s.solver.z3_seconds * 1e3, v.z3_queries, v.z3_seconds * 1e3);
    }
  }
  return rc;
}

int cmd_fmt(const std::string& f) {
  std::string text, err;
  if (!read_file(f, text, err)) {
    std::cerr << "shapemlc: cannot read " << f << ": " << err << "\n";
    return 2;
  }
  shapeml::syntax::SourceFile src(f, text);
  shapeml::syntax::DiagnosticSink diags;
  auto sx = shapeml::syntax::read_sexprs(src, diags);
  if (diags.error_count()) {
    for (const auto& d : diags.all()) std::cerr << shapeml::syntax::render_text(d, src) << "\n";
    return 1;
  }
  std::cout << shapeml::syntax::format_sexprs(sx);
  return 0;
}

std::string default_entry(const shapeml::ir::Module& m, const std::string& entry) {
  if (!entry.empty()) return entry;
  return m.functions.empty() ? "" : m.functions.back().name;
}

// What build, run and --emit share: the target and the checked program.
// Returns the exit status to stop with (2 usage or unreadable file, 1 the
// program has errors), or 0 with `r` and `target` set.
int checked_for_codegen(const CodegenArgs& a, std::optional<shapeml::check::CheckResult>& r, shapeml::lower::cpu::CpuTarget& target) {
  auto t = shapeml::driver::parse_target(a.target);
  if (!t.ok()) {
    std::cerr << "shapemlc: --target: " << t.status().message() << "\n";
    return 2;
  }
  target = *t;
  r = load_checked(a.file, a.timeout);
  if (!r) return 2;
  if (!r->ok()) {
    print_diags(*r, false);
    return 1;
  }
  return 0;
}

// --emit=STAGE: the pipeline up to STAGE.
int cmd_emit(const std::string& stage, const CodegenArgs& a) {
  using shapeml::driver::FrontendStage;
  if (stage == "ast") {
    // Parse only: the AST of a program with type errors is still printable,
    // but not one with syntax errors.
    auto r = load_checked(a.file, a.timeout, FrontendStage::Parse);
    if (!r) return 2;
    if (r->diags.error_count() || !r->ast) {
      print_diags(*r, false);
      return 1;
    }
    std::cout << shapeml::syntax::print_module(*r->ast);
    return 0;
  }
  std::optional<shapeml::check::CheckResult> r;
  shapeml::lower::cpu::CpuTarget target;
  if (int rc = checked_for_codegen(a, r, target)) return rc;
  if (stage == "typed") {
    std::cout << shapeml::ir::print_module(*r->module);
    return 0;
  }
  std::string entry = default_entry(*r->module, a.entry);
  shapeml::artifact::Specialization s;
  std::string err;
  if (!shapeml::jit::parse_specialization(a.binds.empty() ? "" : a.binds[0], entry, s, err)) {
    std::cerr << "shapemlc: --bind: " << err << "\n";
    return 2;
  }
  s.gpu_graph = a.gpu_graph == "on";
  auto lowered = shapeml::driver::lower_to_text(*r->module, s, stage == "mlir"           ? shapeml::driver::LowerStage::Mlir
                                                               : stage == "lowered-mlir" ? shapeml::driver::LowerStage::LoweredMlir
                                                               : stage == "gpu-plan"     ? shapeml::driver::LowerStage::GpuPlan
                                                               : stage == "gpu-kernels"  ? shapeml::driver::LowerStage::GpuKernels
                                                                                         : shapeml::driver::LowerStage::Llvm,
                                                target, a.gpu());
  if (!lowered.ok()) {
    std::cerr << "shapemlc: --emit=" << stage << ": " << lowered.status().message() << "\n";
    return lowered.status().code() == rt::StatusCode::Internal ? 1 : 2;
  }
  std::cout << *lowered;
  return 0;
}

int cmd_build(const CodegenArgs& a) {
  std::optional<shapeml::check::CheckResult> r;
  shapeml::lower::cpu::CpuTarget target;
  if (int rc = checked_for_codegen(a, r, target)) return rc;
  std::string entry = default_entry(*r->module, a.entry);
  std::vector<shapeml::artifact::Specialization> specs;
  for (const auto& b : a.binds) {
    shapeml::artifact::Specialization s;
    std::string err;
    if (!shapeml::jit::parse_specialization(b, entry, s, err)) {
      std::cerr << "shapemlc: --bind " << b << ": " << err << "\n";
      return 2;
    }
    s.gpu_graph = a.gpu_graph == "on";
    specs.push_back(std::move(s));
  }
  auto t0 = std::chrono::steady_clock::now();
  auto st = shapeml::driver::build_shared_object(*r->module, specs, target, a.out, a.gpu());
  if (!st.ok()) {
    std::cerr << "shapemlc: build failed: " << st.message() << "\n";
    return st.code() == rt::StatusCode::Internal ? 1 : 2;
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("built %s: %zu specialization(s) for %s in %.0f ms\n", a.out.c_str(), specs.size(), shapeml::lower::cpu::target_name(target).c_str(), ms);
  return 0;
}

// Deterministic inputs for `--random P=SEED`.
void fill_random(shapeml::runtime::Tensor& t, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::uniform_int_distribution<int> i(-8, 8);
  int64_t n = t.numel();
  void* d = t.data();
  for (int64_t k = 0; k < n; ++k) switch (t.dtype()) {
      case shapeml::types::DType::F32: static_cast<float*>(d)[k] = static_cast<float>(u(g)); break;
      case shapeml::types::DType::F64: static_cast<double*>(d)[k] = u(g); break;
      case shapeml::types::DType::I32: static_cast<int32_t*>(d)[k] = i(g); break;
      case shapeml::types::DType::I64: static_cast<int64_t*>(d)[k] = i(g); break;
      case shapeml::types::DType::Bool: static_cast<uint8_t*>(d)[k] = static_cast<uint8_t>(g() & 1); break;
      case shapeml::types::DType::Var: break;  // never a tensor's
      case shapeml::types::DType::BF16: {
        float x = static_cast<float>(u(g));
        uint32_t bits;
        std::memcpy(&bits, &x, 4);
        static_cast<uint16_t*>(d)[k] = static_cast<uint16_t>(bits >> 16);
        break;
      }
    }
}

bool split_kv(const std::string& kv, std::string& k, std::string& v) {
  size_t eq = kv.find('=');
  if (eq == std::string::npos) return false;
  k = kv.substr(0, eq);
  v = kv.substr(eq + 1);
  return true;
}

int cmd_run(const CodegenArgs& a) {
  std::optional<shapeml::check::CheckResult> r;
  shapeml::lower::cpu::CpuTarget target;
  if (int rc = checked_for_codegen(a, r, target)) return rc;
  std::string entry = default_entry(*r->module, a.entry);
  const shapeml::ir::Function* fn = r->module->find(entry);
  if (!fn) {
    std::cerr << "shapemlc: no function `" << entry << "` in " << a.file << "\n";
    return 2;
  }
  std::map<std::string, int64_t> bound;
  if (!a.binds.empty()) {
    shapeml::artifact::Specialization s;
    std::string err;
    if (!shapeml::jit::parse_specialization(a.binds[0], entry, s, err)) {
      std::cerr << "shapemlc: --bind: " << err << "\n";
      return 2;
    }
    bound = s.bindings;
  }
  std::vector<rt::TensorRef> inputs(fn->params.size());
  auto param_index = [&](const std::string& name) -> int {
    for (size_t i = 0; i < fn->params.size(); ++i)
      if (fn->values[fn->params[i]].name == name) return static_cast<int>(i);
    return -1;
  };
  std::vector<std::vector<int64_t>> given(fn->params.size());
  std::vector<const std::vector<int64_t>*> known_shapes(fn->params.size(), nullptr);
  for (const auto& in : a.inputs) {
    std::string k, v;
    int i = split_kv(in, k, v) ? param_index(k) : -1;
    if (i < 0) {
      std::cerr << "shapemlc: --input " << in << ": expected P=FILE.npy with P a parameter of `" << entry << "`\n";
      return 2;
    }
    auto t = rt::read_npy(v);
    if (!t.ok()) {
      std::cerr << "shapemlc: " << t.status().message() << "\n";
      return 2;
    }
    inputs[i] = t.value();
    given[i].assign(inputs[i]->dl().shape, inputs[i]->dl().shape + inputs[i]->ndim());
    known_shapes[i] = &given[i];
  }
  // The shapes of --random parameters: the binding rule of the language
  // (types/shape_inference.h) on --bind and the inputs that are given.
  std::vector<shapeml::types::Shape> param_shapes;
  for (auto p : fn->params) param_shapes.push_back(fn->values[p].type.shape);
  auto plan = shapeml::types::plan_shape_inference(fn->dims, param_shapes, fn->where, std::set<std::string>(fn->given.begin(), fn->given.end()));
  auto solved = shapeml::types::solve_shape_variables(plan, known_shapes, bound);
  if (!solved.failure) bound = solved.binding;
  for (const auto& in : a.randoms) {
    std::string k, v;
    int i = split_kv(in, k, v) ? param_index(k) : -1;
    if (i < 0) {
      std::cerr << "shapemlc: --random " << in << ": expected P=SEED with P a parameter of `" << entry << "`\n";
      return 2;
    }
    uint64_t seed = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seed);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
      std::cerr << "shapemlc: --random " << in << ": the seed must be a non-negative integer, not `" << v << "`\n";
      return 2;
    }
    std::vector<int64_t> shape;
    for (const auto& d : param_shapes[i]) {
      auto x = d.eval(bound);
      if (!x) {
        std::cerr << "shapemlc: --random " << k << ": dimension " << d.str() << " is unknown; bind its variables with --bind VAR=VALUE\n";
        return 2;
      }
      if (*x < 0) {
        std::cerr << "shapemlc: --random " << k << ": dimension " << d.str() << " is " << *x << " with these bindings\n";
        return 2;
      }
      shape.push_back(*x);
    }
    shapeml::types::DType dt = fn->values[fn->params[i]].type.dtype;
    if (dt == shapeml::types::DType::Var) {  // a generic entry's dtype variable: from --bind T=...
      const std::string& var = fn->values[fn->params[i]].type.dtype_var;
      auto it = bound.find(var);
      auto d = it == bound.end() ? std::nullopt : shapeml::types::dtype_from_binding(it->second);
      if (!d) {
        std::cerr << "shapemlc: --random " << k << ": its dtype is the variable `" << var << "`; give it with --bind " << var << "=f32 (or bf16, ...)\n";
        return 2;
      }
      dt = *d;
    }
    auto t = rt::Tensor::create(dt, shape);
    if (!t.ok()) {
      std::cerr << "shapemlc: " << t.status().message() << "\n";
      return 2;
    }
    fill_random(*t.value(), seed);
    inputs[i] = t.value();
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) {
      std::cerr << "shapemlc: parameter `" << fn->values[fn->params[i]].name << "` of `" << entry << "` has no --input or --random\n";
      return 2;
    }
  auto m = shapeml::driver::jit_module(*r->module, target, a.file);
  if (!m.ok()) {
    std::cerr << "shapemlc: " << m.status().message() << "\n";
    return 1;
  }
  // The entry's `(given ...)` variables come from --bind, as a host passes
  // them in the call options.
  rt::CallOptions co;
  for (const std::string& g : fn->given) {
    auto it = bound.find(g);
    if (it == bound.end()) {
      std::cerr << "shapemlc: `" << entry << "` takes shape variable `" << g << "` at the call: give it with --bind " << g << "=VALUE\n";
      return 2;
    }
    co.dims[g] = it->second;
  }
  const rt::EntrySig* sig = m.value()->manifest().find(entry);
  if (!sig) {  // e.g. a helper only `:dims` calls reach (spec §4.19)
    std::string names;
    for (const auto& x : m.value()->manifest().entries) names += (names.empty() ? "" : ", ") + x.name;
    std::cerr << "shapemlc: no entry `" << entry << "` (entries: " << (names.empty() ? "none" : names) << ")\n";
    return 1;
  }
  std::vector<rt::Tensor*> raw_inputs;
  for (const auto& t : inputs) raw_inputs.push_back(t.get());
  std::vector<rt::TensorRef> outs;
  auto t0 = std::chrono::steady_clock::now();
  auto st = m.value()->call(*sig, raw_inputs, outs, co);
  double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    std::cerr << "shapemlc: " << st.message() << "\n";
    return 1;
  }
  t0 = std::chrono::steady_clock::now();
  st = m.value()->call(*sig, raw_inputs, outs, co);
  double warm_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    std::cerr << "shapemlc: " << st.message() << "\n";
    return 1;
  }
  std::printf("ran %s: first call %.1f ms (includes JIT), second call %.3f ms\n", entry.c_str(), first_ms, warm_ms);
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string shape;
    for (int d = 0; d < outs[i]->ndim(); ++d) shape += (d ? " " : "") + std::to_string(outs[i]->dl().shape[d]);
    std::printf("result %zu: %s (%s)", i, std::string(shapeml::types::dtype_name(outs[i]->dtype())).c_str(), shape.c_str());
    if (i < a.outputs.size()) {
      auto w = rt::write_npy(a.outputs[i], *outs[i]);
      if (!w.ok()) {
        std::cerr << "\nshapemlc: " << w.message() << "\n";
        return 2;
      }
      std::printf(" -> %s", a.outputs[i].c_str());
    }
    std::printf("\n");
  }
  return 0;
}

// --timeout-ms on every command that checks: a non-negative integer.
void add_timeout(CLI::App* app, unsigned& timeout) {
  app->add_option("--timeout-ms", timeout, "Z3 budget per obligation in ms (0: default 2000)")->check(CLI::Range(0u, 3600000u));
}

void add_codegen_options(CLI::App* app, CodegenArgs& a, bool many_binds) {
  app->add_option("--entry", a.entry, "the function (default: the last one)");
  // One value per occurrence: the file that follows is not a second binding.
  auto* b = app->add_option("--bind", a.binds, "[ENTRY:]VAR=VALUE,...")->allow_extra_args(false);
  if (!many_binds) b->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  app->add_option("--target", a.target, "native, x86-64, x86-64-v3 or x86-64-v4")->check(CLI::IsMember({"native", "x86-64", "x86-64-v3", "x86-64-v4"}));
  app->add_flag("--gpu-tf32", a.gpu_tf32, "device f32 matmuls may use TF32 tensor cores (~1e-3 relative error)");
  app->add_option("--gpu-graph", a.gpu_graph, "device entries: replay plans as CUDA graphs by default where safe (on, the default, or off)")
      ->check(CLI::IsMember({"on", "off"}));
  app->add_option("--gpu-graph-branches", a.gpu_graph_branches,
                  "device entries: in a replayed graph, run launches that share no bytes side by side (on, the default, or off)")
      ->check(CLI::IsMember({"on", "off"}));
  app->add_option("--gpu-fuse", a.gpu_fuse, "device entries: merge elementwise launches into kernels generated for them (on: the default, or off)")
      ->check(CLI::IsMember({"on", "off"}));
  app->add_option("--gpu-fuse-codegen", a.gpu_fuse_codegen,
                  "device entries: fused launches run kernels generated and compiled (NVRTC) into the module (on: the default, or off: "
                  "the plugin's interpreter)")
      ->check(CLI::IsMember({"on", "off"}));
  app->add_option("--gpu-fuse-patterns", a.gpu_fuse_patterns,
                  "device entries: one fused kernel each for RMSNorm, a causal-masked softmax and act(a)*b (on: the default, or off)")
      ->check(CLI::IsMember({"on", "off"}));
  app->add_option("--gpu-cudnn-attention", a.gpu_cudnn_attention,
                  "device entries: bf16 attention launches cuDNN takes run on cuDNN's fused attention where the plugin finds cuDNN "
                  "(on, the default, or off: shapeml's own kernel)")
      ->check(CLI::IsMember({"on", "off"}));
  app->add_option("--gpu-merge-projections", a.gpu_merge_projections,
                  "device entries: projections of one activation with small weights as one wider GEMM (on, the default, or off)")
      ->check(CLI::IsMember({"on", "off"}));
  app->add_option("--gpu-group-matmuls", a.gpu_group_matmuls,
                  "device entries: bf16 GEMMs of one activation and weights of one shape as one batched GEMM (on, the default, or off)")
      ->check(CLI::IsMember({"on", "off"}));
  app->add_option("--gpu-fp32-matmul", a.gpu_fp32_matmul,
                  "device entries: large f32 matmuls as 3xTF32 (split operands, one TF32 GEMM on tensor cores: ~1e-5 relative error, "
                  "between TF32's and fp32's) or on the FP32 cores (simt, the default)")
      ->check(CLI::IsMember({"3xtf32", "simt"}));
  app->add_option("--gpu-fuse-attention", a.gpu_fuse_attention,
                  "device entries: attention in one launch, no scores in memory (bf16; f32 up to 256 keys; on: the default, or off)")
      ->check(CLI::IsMember({"on", "off"}));
  add_timeout(app, a.timeout);
}

}  // namespace

int run_main(int argc, char** argv) {
  if (argc <= 1) {
    std::cerr << kUsage;
    return 2;
  }
  CLI::App app{"shapemlc: the shapeml compiler"};
  app.set_help_flag();  // our own usage text, below
  app.set_help_all_flag();
  bool help = false, version = false;
  app.add_flag("-h,--help", help);
  app.add_flag("--version", version);
  std::string emit;
  CodegenArgs emit_args;
  app.add_option("--emit", emit, "stop after STAGE")->check(CLI::IsMember({"ast", "typed", "mlir", "lowered-mlir", "llvm", "gpu-plan", "gpu-kernels"}));
  add_codegen_options(&app, emit_args, false);
  std::vector<std::string> emit_files;
  app.add_option("emit-file", emit_files);
  app.require_subcommand(0, 1);

  auto* check = app.add_subcommand("check", "type-check files");
  std::vector<std::string> check_files;
  std::string format = "text", dump;
  bool stats = false;
  unsigned check_timeout = 2000;
  check->add_option("--format", format)->check(CLI::IsMember({"text", "json"}));
  add_timeout(check, check_timeout);
  check->add_option("--dump-obligations", dump)->type_name("DIR");
  check->add_flag("--stats", stats);
  check->add_option("files", check_files);

  auto* fmt = app.add_subcommand("fmt", "canonical layout");
  std::vector<std::string> fmt_files;
  fmt->add_option("files", fmt_files);

  auto* build = app.add_subcommand("build", "ahead-of-time shared object");
  CodegenArgs build_args;
  add_codegen_options(build, build_args, true);
  build->add_option("-o", build_args.out)->type_name("OUT.so");
  std::vector<std::string> build_files;
  build->add_option("files", build_files);

  auto* run = app.add_subcommand("run", "JIT-compile and call an entry point");
  CodegenArgs run_args;
  add_codegen_options(run, run_args, false);
  run->add_option("--input", run_args.inputs)->allow_extra_args(false)->type_name("P=FILE.npy");
  run->add_option("--random", run_args.randoms)->allow_extra_args(false)->type_name("P=SEED");
  run->add_option("--output", run_args.outputs)->allow_extra_args(false)->type_name("FILE.npy");
  std::vector<std::string> run_files;
  run->add_option("files", run_files);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    std::string sub = check->parsed() ? "check" : fmt->parsed() ? "fmt" : build->parsed() ? "build" : run->parsed() ? "run" : "";
    std::cerr << "shapemlc: " << (sub.empty() ? "" : sub + ": ") << what << " (see --help)\n";
    return 2;
  }
  if (help) {
    std::cout << kUsage;
    return 0;
  }
  if (version) {
    std::printf("shapemlc %d.%d.%d\n", SHAPEML_VERSION_MAJOR, SHAPEML_VERSION_MINOR, SHAPEML_VERSION_PATCH);
    return 0;
  }
  auto one_file = [](const std::vector<std::string>& files, const char* what) -> std::optional<std::string> {
    if (files.empty()) {
      std::cerr << "shapemlc: no input file (see --help)\n";
      return std::nullopt;
    }
    if (files.size() != 1) {
      std::cerr << "shapemlc: " << what << " takes exactly one file\n";
      return std::nullopt;
    }
    return files[0];
  };
  bool top_level_codegen = !emit_args.entry.empty() || !emit_args.binds.empty() || emit_args.target != "native" || emit_args.timeout != 2000;
  if (app.get_subcommands().empty()) {
    if (emit.empty()) {
      if (emit_files.empty()) std::cerr << "shapemlc: no input file (see --help)\n";
      else std::cerr << "shapemlc: expected a command: check, fmt, build, run or --emit=STAGE (see --help)\n";
      return 2;
    }
    auto f = one_file(emit_files, "--emit");
    if (!f) return 2;
    emit_args.file = *f;
    return cmd_emit(emit, emit_args);
  }
  if (!emit.empty() || top_level_codegen || !emit_files.empty()) {
    std::cerr << "shapemlc: options and files go after the command (e.g. `shapemlc build FILE --bind ...`); --emit is not a command's option\n";
    return 2;
  }
  if (check->parsed()) {
    if (check_files.empty()) {
      std::cerr << "shapemlc: no input file (see --help)\n";
      return 2;
    }
    return cmd_check(check_files, format == "json", check_timeout, dump, stats);
  }
  if (fmt->parsed()) {
    auto f = one_file(fmt_files, "fmt");
    return f ? cmd_fmt(*f) : 2;
  }
  if (build->parsed()) {
    auto f = one_file(build_files, "build");
    if (!f) return 2;
    if (build_args.out.empty()) {
      std::cerr << "shapemlc: build needs -o OUT.so\n";
      return 2;
    }
    if (build_args.binds.empty()) {
      std::cerr << "shapemlc: build needs at least one --bind [ENTRY:]VAR=VALUE,...\n";
      return 2;
    }
    build_args.file = *f;
    return cmd_build(build_args);
  }
  auto f = one_file(run_files, "run");
  if (!f) return 2;
  run_args.file = *f;
  return cmd_run(run_args);
}

namespace {
// SHAPEML_LOG: shapemlc prints records to stderr (the library itself never prints).
void stderr_sink(void*, const shapeml::obs::Record& r) {
  std::string line = std::string("shapemlc: [") + shapeml::obs::level_name(r.level) + "] " + shapeml::obs::component_name(r.component) + ": ";
  line.append(r.message);
  for (const auto& f : r.fields) line += " " + f.key + "=" + f.value;
  if (r.context.module_id) line += " module=" + *r.context.module_id;
  line += "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}
}  // namespace

int main(int argc, char** argv) {
  const char* log_spec = std::getenv("SHAPEML_LOG");
  if (log_spec && *log_spec) {
    std::string err;
    if (!shapeml::obs::set_levels(log_spec, &err)) {
      std::cerr << "shapemlc: SHAPEML_LOG: " << err << "\n";
      return 2;
    }
    shapeml::obs::set_sink(stderr_sink, nullptr);
  }
  const char* trace_path = std::getenv("SHAPEML_TRACE");
  bool tracing = trace_path && *trace_path;
  if (tracing) {
    if (!shapeml::obs::kInstrumented) {
      std::cerr << "shapemlc: SHAPEML_TRACE: this shapemlc was built with SHAPEML_INSTRUMENTATION=OFF\n";
      return 2;
    }
    const char* gpu = std::getenv("SHAPEML_TRACE_GPU");
    shapeml::obs::start(shapeml::obs::kTraceOn | (gpu && *gpu && std::strcmp(gpu, "0") != 0 ? shapeml::obs::kGpuTiming : 0u));
  }
  int rc;
  {
    shapeml::obs::Span span("shapemlc", "shapemlc");
    if (span) {
      std::string args;
      for (int i = 1; i < argc; ++i) args += (i > 1 ? " " : "") + std::string(argv[i]);
      span.arg("argv", args);
    }
    rc = run_main(argc, argv);
    if (span) span.arg("exit", static_cast<int64_t>(rc));
  }
  if (tracing) {
    shapeml::obs::stop();
    std::ofstream out(trace_path, std::ios::binary);
    out << shapeml::obs::take_json();
    out.close();
    if (!out) {
      std::cerr << "shapemlc: SHAPEML_TRACE: cannot write " << trace_path << "\n";
      return rc ? rc : 2;
    }
  }
  return rc;
}
