// shapeml-lower-tool: a developer driver for the CPU back end, used by the
// lit tests in tests/lower/lit (until `shapemlc --emit=mlir|llvm` exists it
// accepts the same flags) and for quick benchmarks.
//
//   shapeml-lower-tool --emit=mlir|llvm|llvm-unopt|lowered [--entry F] [--bind B=4,S=8]
//                      [--target=native|CPU] [--naive] FILE
//   shapeml-lower-tool --bench[=REPS] [--entry=F] [--bind=...] FILE   JIT, random inputs, timing
//   shapeml-lower-tool --so=OUT.so --entry=F --bind=... [--bind=...] FILE   AOT shared object
//
// `--entry=F` and `--entry F` (likewise --bind, --target) are both accepted.
// --entry defaults to the last function of the module. Exit status: 0 ok,
// 1 the program or the compilation failed, 2 usage.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "driver/frontend.h"
#include "lower/cpu/cpu_backend.h"

namespace cpu = shapeml::lower::cpu;

namespace {

bool parse_bind(const std::string& s, std::map<std::string, int64_t>& out) {
  std::stringstream ss(s);
  for (std::string kv; std::getline(ss, kv, ',');) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return false;
    char* end = nullptr;
    long long v = std::strtoll(kv.c_str() + eq + 1, &end, 10);
    if (!end || *end) return false;
    out[kv.substr(0, eq)] = v;
  }
  return true;
}

int usage() {
  std::cerr << "usage: shapeml-lower-tool (--emit=mlir|llvm|llvm-unopt|lowered | --bench[=N] | --so=OUT) [--entry=F] [--bind=K=V,...] "
               "[--target=native|CPU] [--naive] FILE\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string emit, file, entry, so, target = "native";
  std::vector<std::map<std::string, int64_t>> binds;
  int bench = 0;
  bool naive = false;
  std::vector<int64_t> tiles_outer, tiles_inner;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // `--entry NAME`, `--bind SPEC`, `--target T` as shapemlc spells them.
    if ((a == "--entry" || a == "--bind" || a == "--target") && i + 1 < argc) a += "=" + std::string(argv[++i]);
    auto val = [&](const char* p) { return a.substr(std::strlen(p)); };
    if (a.rfind("--emit=", 0) == 0) emit = val("--emit=");
    else if (a.rfind("--entry=", 0) == 0) entry = val("--entry=");
    else if (a.rfind("--bind=", 0) == 0) {
      binds.emplace_back();
      if (!parse_bind(val("--bind="), binds.back())) return usage();
    } else if (a.rfind("--target=", 0) == 0) target = val("--target=");
    else if (a == "--naive") naive = true;
    else if (a.rfind("--tiles=", 0) == 0) {  // --tiles=64,128,64/4,16,1
      std::string v = val("--tiles="), outer = v.substr(0, v.find('/')), inner = v.find('/') == std::string::npos ? "" : v.substr(v.find('/') + 1);
      for (auto* p : {&outer, &inner}) {
        std::stringstream ts(*p);
        for (std::string x; std::getline(ts, x, ',');) (p == &outer ? tiles_outer : tiles_inner).push_back(std::atoll(x.c_str()));
      }
    }
    else if (a == "--bench") bench = 10;
    else if (a.rfind("--bench=", 0) == 0) bench = std::atoi(val("--bench=").c_str());
    else if (a.rfind("--so=", 0) == 0) so = val("--so=");
    else if (!a.empty() && a[0] != '-' && file.empty()) file = a;
    else return usage();
  }
  if (file.empty() || (emit.empty() && !bench && so.empty())) return usage();
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << file << ": cannot read\n";
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = shapeml::driver::check_source(file, ss.str());
  if (!r.ok()) {
    for (const auto& d : r.diags.all()) std::cerr << shapeml::syntax::render_text(d, *r.source) << "\n";
    return 1;
  }
  const auto& m = *r.module;
  if (entry.empty()) entry = m.functions.back().name;
  if (binds.empty()) binds.emplace_back();
  cpu::CpuTarget t;
  if (target != "native") {
    t.native = false;
    t.cpu = target;
  }
  cpu::CompileOptions co;
  if (naive) co.matmul = cpu::MatmulStrategy::Naive;
  co.matmul_tile_outer = tiles_outer;
  co.matmul_tile_inner = tiles_inner;
  std::string err;

  if (!emit.empty()) {
    std::string out;
    if (emit == "mlir") out = cpu::emit_mlir(m, entry, binds[0], cpu::emit_options_for(t, co), &err);
    else if (emit == "llvm") out = cpu::emit_llvm(m, entry, binds[0], t, err, co, true);
    else if (emit == "llvm-unopt") out = cpu::emit_llvm(m, entry, binds[0], t, err, co, false);
    else if (emit == "lowered") out = cpu::emit_lowered_mlir(m, entry, binds[0], t, err, co);
    else return usage();
    if (out.empty()) {
      std::cerr << "error: " << err << "\n";
      return 1;
    }
    std::cout << out;
    return 0;
  }
  if (!so.empty()) {
    std::vector<cpu::Specialization> specs;
    for (auto& b : binds) specs.push_back({entry, b});
    if (!cpu::build_shared_object(m, specs, t, so, err, co)) {
      std::cerr << "error: " << err << "\n";
      return 1;
    }
    return 0;
  }
  // --bench
  cpu::ConcreteSignature sig;
  if (!cpu::specialize_signature(m, entry, binds[0], sig, err)) {
    std::cerr << "error: " << err << "\n";
    return 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  cpu::CpuJit jit(t, co);
  auto fn = jit.compile(m, entry, binds[0], err);
  double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!fn) {
    std::cerr << "error: " << err << "\n";
    return 1;
  }
  for (const auto& n : jit.last_notes()) std::cerr << "note: " << n << "\n";
  std::vector<void*> bufs;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const auto& p : sig.params) {
    size_t bytes = (static_cast<size_t>(p.byte_size()) + 63) / 64 * 64;
    void* b = std::aligned_alloc(64, bytes);
    if (p.dtype == shapeml::types::DType::F32)
      for (int64_t i = 0; i < p.num_elements(); ++i) static_cast<float*>(b)[i] = u(rng);
    else std::memset(b, 0, bytes);
    bufs.push_back(b);
  }
  for (const auto& p : sig.results) bufs.push_back(std::aligned_alloc(64, (static_cast<size_t>(p.byte_size()) + 63) / 64 * 64));
  if (sig.error_record) bufs.push_back(std::calloc(1, (sig.error_record * 8 + 63) / 64 * 64));  // index checks
  fn(bufs.data());
  double best = 1e30, total = 0;
  for (int i = 0; i < bench; ++i) {
    auto a = std::chrono::steady_clock::now();
    fn(bufs.data());
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    best = std::min(best, s);
    total += s;
  }
  std::printf("compile %.3f s, run best %.3f ms, mean %.3f ms over %d\n", compile_s, best * 1e3, total / bench * 1e3, bench);
  for (void* b : bufs) std::free(b);
  return 0;
}
