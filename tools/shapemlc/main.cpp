// shapemlc: a thin command line over the shapeml library.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <chrono>
#include <optional>
#include <set>
#include <random>

#include "check/checker.h"
#include "jit/bindings_spec.h"
#include "jit/jit_code_provider.h"
#include "lower/cpu/cpu_backend.h"
#include "runtime/module.h"
#include "runtime/npy.h"
#include "syntax/parser.h"
#include "syntax/sexpr.h"

namespace {

const char* kUsage = R"(usage: shapemlc COMMAND [OPTIONS] FILE...

Commands:
  check FILE...          parse and type-check; exit 0 only when every file checks.
                         Diagnostics go to stderr.
  fmt FILE               print FILE in canonical layout (comments kept) to stdout.
  build FILE -o OUT.so --bind SPEC...
                         compile ahead of time into a shared object that
                         libshapeml_runtime.so loads (no LLVM/MLIR/Z3 needed).
  run FILE --entry NAME [--input P=FILE.npy]... [--random P=SEED]...
          [--bind SPEC] [--output FILE.npy]...
                         JIT-compile, call NAME, write the results.
  --emit=STAGE FILE      stop after STAGE and print it to stdout:
                           ast    the parsed program, canonical layout
                           typed  the typed IR in A-normal form
                           mlir   MLIR (linalg on tensors) of --entry at --bind
                           llvm   optimized LLVM IR of --entry at --bind

Options for build, run and --emit=mlir|llvm:
  --entry NAME           the function (default: the last one in the file)
  --bind SPEC            [ENTRY:]VAR=VALUE,... shape variables of a
                         specialization; build takes several
  --target native|x86-64 code generation target (default native)
  -o FILE                build: the shared object to write
  --input P=FILE.npy     run: parameter P from a NumPy file
  --random P=SEED        run: parameter P filled with deterministic uniform
                         values in [-1, 1) (integers in [-8, 8]); its shape
                         comes from --bind and the other inputs
  --output FILE.npy      run: where to write each result, in order

Options for check:
  --format=text|json     diagnostics as text (default) or one JSON array per file
  --timeout-ms=N         Z3 budget per shape obligation (default 2000)
  --dump-obligations DIR write every discharged obligation as SMT-LIB 2 into DIR
  --stats                print per-file statistics to stdout

Other:
  -h, --help             this text
  --version              the version

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

int cmd_check(const std::vector<std::string>& files, bool json, unsigned timeout, const std::string& dump, bool stats) {
  int rc = 0;
  for (const auto& f : files) {
    std::string text, err;
    if (!read_file(f, text, err)) {
      std::cerr << "shapemlc: cannot read " << f << ": " << err << "\n";
      rc = 2;
      continue;
    }
    shapeml::check::CheckOptions o;
    o.obligation_timeout_ms = timeout;
    o.record_obligations = !dump.empty();
    auto r = shapeml::check::check_source(f, std::move(text), o);
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

int cmd_emit(const std::string& stage, const std::string& f, unsigned timeout) {
  std::string text, err;
  if (!read_file(f, text, err)) {
    std::cerr << "shapemlc: cannot read " << f << ": " << err << "\n";
    return 2;
  }
  if (stage == "ast") {
    // Parse only: the AST of a program with type errors is still printable,
    // but not one with syntax errors.
    shapeml::syntax::SourceFile src(f, text);
    shapeml::syntax::DiagnosticSink diags;
    auto sx = shapeml::syntax::read_sexprs(src, diags);
    auto ast = shapeml::syntax::parse_module(sx, diags);
    if (diags.error_count() || !ast) {
      for (const auto& d : diags.all()) std::cerr << shapeml::syntax::render_text(d, src) << "\n";
      return 1;
    }
    std::cout << shapeml::syntax::print_module(*ast);
    return 0;
  }
  shapeml::check::CheckOptions o;
  o.obligation_timeout_ms = timeout;
  auto r = shapeml::check::check_source(f, std::move(text), o);
  if (!r.ok()) {
    print_diags(r, false);
    return 1;
  }
  std::cout << shapeml::ir::print_module(*r.module);
  return 0;
}


struct CodegenArgs {
  std::string entry, out, target = "native";
  std::vector<std::string> binds, inputs, randoms, outputs;
};

std::optional<shapeml::check::CheckResult> load_checked(const std::string& f, unsigned timeout) {
  std::string text, err;
  if (!read_file(f, text, err)) {
    std::cerr << "shapemlc: cannot read " << f << ": " << err << "\n";
    return std::nullopt;
  }
  shapeml::check::CheckOptions o;
  o.obligation_timeout_ms = timeout;
  auto r = shapeml::check::check_source(f, std::move(text), o);
  if (!r.ok()) {
    print_diags(r, false);
    return std::nullopt;
  }
  return r;
}

std::string default_entry(const shapeml::ir::Module& m, const std::string& entry) {
  if (!entry.empty()) return entry;
  return m.functions.empty() ? "" : m.functions.back().name;
}

bool target_of(const std::string& t, shapeml::lower::cpu::CpuTarget& out) {
  if (t == "native") out.native = true;
  else if (t == "x86-64") out.native = false;
  else {
    std::cerr << "shapemlc: unknown --target `" << t << "` (expected native or x86-64)\n";
    return false;
  }
  return true;
}

int cmd_build(const std::string& f, const CodegenArgs& a, unsigned timeout) {
  if (a.out.empty()) {
    std::cerr << "shapemlc: build needs -o OUT.so\n";
    return 2;
  }
  if (a.binds.empty()) {
    std::cerr << "shapemlc: build needs at least one --bind [ENTRY:]VAR=VALUE,...\n";
    return 2;
  }
  shapeml::lower::cpu::CpuTarget target;
  if (!target_of(a.target, target)) return 2;
  auto r = load_checked(f, timeout);
  if (!r) return 1;
  std::string entry = default_entry(*r->module, a.entry);
  std::vector<shapeml::lower::cpu::Specialization> specs;
  for (const auto& b : a.binds) {
    shapeml::lower::cpu::Specialization s;
    std::string err;
    if (!shapeml::jit::parse_specialization(b, entry, s, err)) {
      std::cerr << "shapemlc: --bind " << b << ": " << err << "\n";
      return 2;
    }
    if (!r->module->find(s.entry)) {
      std::cerr << "shapemlc: no function `" << s.entry << "` in " << f << "\n";
      return 2;
    }
    specs.push_back(std::move(s));
  }
  std::string err;
  auto t0 = std::chrono::steady_clock::now();
  if (!shapeml::lower::cpu::build_shared_object(*r->module, specs, target, a.out, err)) {
    std::cerr << "shapemlc: build failed: " << err << "\n";
    return 1;
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("built %s: %zu specialization(s) for %s in %.0f ms\n", a.out.c_str(), specs.size(), shapeml::lower::cpu::target_name(target).c_str(), ms);
  return 0;
}

int cmd_emit_code(const std::string& stage, const std::string& f, const CodegenArgs& a, unsigned timeout) {
  shapeml::lower::cpu::CpuTarget target;
  if (!target_of(a.target, target)) return 2;
  auto r = load_checked(f, timeout);
  if (!r) return 1;
  std::string entry = default_entry(*r->module, a.entry);
  shapeml::lower::cpu::Specialization s;
  std::string err;
  if (!shapeml::jit::parse_specialization(a.binds.empty() ? "" : a.binds[0], entry, s, err)) {
    std::cerr << "shapemlc: --bind: " << err << "\n";
    return 2;
  }
  std::string text = stage == "mlir"
                         ? shapeml::lower::cpu::emit_mlir(*r->module, s.entry, s.bindings, shapeml::lower::cpu::emit_options_for(target), &err)
                         : shapeml::lower::cpu::emit_llvm(*r->module, s.entry, s.bindings, target, err);
  if (text.empty()) {
    std::cerr << "shapemlc: --emit=" << stage << ": " << err << "\n";
    return 1;
  }
  std::cout << text;
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
      case shapeml::types::DType::BF16: {
        float x = static_cast<float>(u(g));
        uint32_t bits;
        std::memcpy(&bits, &x, 4);
        static_cast<uint16_t*>(d)[k] = static_cast<uint16_t>(bits >> 16);
        break;
      }
    }
}

int cmd_run(const std::string& f, const CodegenArgs& a, unsigned timeout) {
  namespace rt = shapeml::runtime;
  shapeml::lower::cpu::CpuTarget target;
  if (!target_of(a.target, target)) return 2;
  auto r = load_checked(f, timeout);
  if (!r) return 1;
  std::string entry = default_entry(*r->module, a.entry);
  const shapeml::ir::Function* fn = r->module->find(entry);
  if (!fn) {
    std::cerr << "shapemlc: no function `" << entry << "` in " << f << "\n";
    return 2;
  }
  std::map<std::string, int64_t> bound;
  if (!a.binds.empty()) {
    shapeml::lower::cpu::Specialization s;
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
  auto split = [](const std::string& kv, std::string& k, std::string& v) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) return false;
    k = kv.substr(0, eq);
    v = kv.substr(eq + 1);
    return true;
  };
  for (const auto& in : a.inputs) {
    std::string k, v;
    int i = split(in, k, v) ? param_index(k) : -1;
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
    // Bind shape variables that are lone dimensions of this parameter.
    const auto& pt = fn->values[fn->params[i]].type;
    for (size_t d = 0; d < pt.rank() && d < static_cast<size_t>(inputs[i]->ndim()); ++d) {
      std::set<std::string> vs;
      pt.shape[d].free_vars(vs);
      if (vs.size() == 1 && pt.shape[d] == shapeml::types::Poly::var(*vs.begin()) && !bound.count(*vs.begin()))
        bound[*vs.begin()] = inputs[i]->dl().shape[d];
    }
  }
  for (const auto& in : a.randoms) {
    std::string k, v;
    int i = split(in, k, v) ? param_index(k) : -1;
    if (i < 0) {
      std::cerr << "shapemlc: --random " << in << ": expected P=SEED with P a parameter of `" << entry << "`\n";
      return 2;
    }
    const auto& pt = fn->values[fn->params[i]].type;
    std::vector<int64_t> shape;
    for (const auto& d : pt.shape) {
      auto x = d.eval(bound);
      if (!x) {
        std::cerr << "shapemlc: --random " << k << ": dimension " << d.str() << " is unknown; bind its variables with --bind VAR=VALUE\n";
        return 2;
      }
      shape.push_back(*x);
    }
    auto t = rt::Tensor::create(pt.dtype, shape);
    if (!t.ok()) {
      std::cerr << "shapemlc: " << t.status().message() << "\n";
      return 2;
    }
    fill_random(*t.value(), std::strtoull(v.c_str(), nullptr, 10));
    inputs[i] = t.value();
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) {
      std::cerr << "shapemlc: parameter `" << fn->values[fn->params[i]].name << "` of `" << entry << "` has no --input or --random\n";
      return 2;
    }
  auto provider = std::make_unique<shapeml::jit::JitCodeProvider>(*r->module, target);
  std::string manifest = provider->manifest();
  auto m = rt::Module::create(manifest, std::move(provider), f);
  if (!m.ok()) {
    std::cerr << "shapemlc: " << m.status().message() << "\n";
    return 1;
  }
  std::vector<rt::TensorRef> outs;
  auto t0 = std::chrono::steady_clock::now();
  auto st = m.value()->call(entry, std::span<const rt::TensorRef>(inputs), outs);
  double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    std::cerr << "shapemlc: " << st.message() << "\n";
    return 1;
  }
  t0 = std::chrono::steady_clock::now();
  st = m.value()->call(entry, std::span<const rt::TensorRef>(inputs), outs);
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

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  std::string cmd, emit, dump;
  bool json = false, stats = false;
  unsigned timeout = 2000;
  std::vector<std::string> files;
  CodegenArgs cg;
  auto value = [&](size_t& i, const char* opt) -> std::optional<std::string> {
    if (i + 1 >= args.size()) {
      std::cerr << "shapemlc: " << opt << " needs a value\n";
      return std::nullopt;
    }
    return args[++i];
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--version") {
      std::cout << "shapemlc 0.2.0\n";
      return 0;
    } else if (a.rfind("--emit=", 0) == 0) {
      emit = a.substr(7);
      if (emit != "ast" && emit != "typed" && emit != "mlir" && emit != "llvm") {
        std::cerr << "shapemlc: unknown stage `" << emit << "` for --emit (expected ast, typed, mlir or llvm)\n";
        return 2;
      }
    } else if (a == "--format=json") {
      json = true;
    } else if (a == "--format=text") {
      json = false;
    } else if (a.rfind("--timeout-ms=", 0) == 0) {
      try {
        timeout = static_cast<unsigned>(std::stoul(a.substr(13)));
      } catch (...) {
        std::cerr << "shapemlc: --timeout-ms needs a number\n";
        return 2;
      }
    } else if (a == "--dump-obligations") {
      if (i + 1 >= args.size()) {
        std::cerr << "shapemlc: --dump-obligations needs a directory\n";
        return 2;
      }
      dump = args[++i];
    } else if (a == "--stats") {
      stats = true;
    } else if (a == "--entry" || a == "--bind" || a == "-o" || a == "--target" || a == "--input" || a == "--random" || a == "--output") {
      auto v = value(i, a.c_str());
      if (!v) return 2;
      if (a == "--entry") cg.entry = *v;
      else if (a == "--bind") cg.binds.push_back(*v);
      else if (a == "-o") cg.out = *v;
      else if (a == "--target") cg.target = *v;
      else if (a == "--input") cg.inputs.push_back(*v);
      else if (a == "--random") cg.randoms.push_back(*v);
      else cg.outputs.push_back(*v);
    } else if (a.size() > 1 && a[0] == '-') {
      std::cerr << "shapemlc: unknown option `" << a << "` (see --help)\n";
      return 2;
    } else if (cmd.empty() && emit.empty() && (a == "check" || a == "fmt" || a == "build" || a == "run")) {
      cmd = a;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::cerr << "shapemlc: no input file (see --help)\n";
    return 2;
  }
  if (!emit.empty()) {
    if (files.size() != 1) {
      std::cerr << "shapemlc: --emit takes exactly one file\n";
      return 2;
    }
    if (emit == "mlir" || emit == "llvm") return cmd_emit_code(emit, files[0], cg, timeout);
    return cmd_emit(emit, files[0], timeout);
  }
  if (cmd == "build" || cmd == "run") {
    if (files.size() != 1) {
      std::cerr << "shapemlc: " << cmd << " takes exactly one file\n";
      return 2;
    }
    return cmd == "build" ? cmd_build(files[0], cg, timeout) : cmd_run(files[0], cg, timeout);
  }
  if (cmd == "fmt") {
    if (files.size() != 1) {
      std::cerr << "shapemlc: fmt takes exactly one file\n";
      return 2;
    }
    return cmd_fmt(files[0]);
  }
  if (cmd == "check") return cmd_check(files, json, timeout, dump, stats);
  std::cerr << "shapemlc: expected a command: check, fmt, build, run or --emit=STAGE (see --help)\n";
  return 2;
}
