// LLVM side of the CPU back end: the `void SYMBOL(void**)` wrapper, LLVM
// optimization, the ORC JIT, object emission, the manifest and the link into
// a shared object. Includes LLVM headers only; MLIR stays in pipeline.cpp.
#include "lower/cpu/cpu_backend.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <fstream>
#include <mutex>
#include <system_error>
#include <thread>
#include <set>
#include <sstream>

#include "common/cpu_count.h"
#include "fs/output_path.h"
#include "shapeml.h"
#include "lower/cpu/cap_full_unroll.h"
#include "lower/cpu/link_elf.h"
#include "obs/log.h"
#include "obs/trace.h"
#include "lower/cpu/parallel_calls.h"
#include "lower/cpu/pipeline.h"
#include "lower/cpu/split_module.h"

extern char** environ;

namespace shapeml::lower::cpu {

namespace {

// ---- LLVM fatal errors become statuses --------------------------------------
//
// LLVM and MLIR report some failures with report_fatal_error, which by default
// prints and exits the process, and out-of-memory with a bad-alloc handler
// that aborts. A library must do neither. The approach (docs/design/
// llvm-fatal-errors.md): handlers are installed once, here, in the one place
// LLVM is initialized. While the calling thread is inside shapeml code
// generation (a CodegenScope is live), the fatal-error handler throws
// LlvmFatalError and the bad-alloc handler throws std::bad_alloc; the
// exception unwinds through LLVM's frames (built with unwind tables, without
// cleanups) to the CodegenScope's caller, which turns it into an error
// message (and the C ABI's guard turns std::bad_alloc into
// RESOURCE_EXHAUSTED). No longjmp and no signal handlers are involved. The
// LLVM objects of that compilation are then discarded; a JIT that hit one is
// not used again. On any other thread (a host that also uses LLVM) the
// handlers return and LLVM behaves as it would without them.
struct LlvmFatalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

thread_local int t_codegen_depth = 0;

struct CodegenScope {
  CodegenScope() { ++t_codegen_depth; }
  ~CodegenScope() { --t_codegen_depth; }
  CodegenScope(const CodegenScope&) = delete;
  CodegenScope& operator=(const CodegenScope&) = delete;
};

void fatal_error_handler(void*, const char* reason, bool) {
  if (t_codegen_depth > 0) throw LlvmFatalError(reason ? reason : "unknown LLVM fatal error");
  // Not ours: LLVM prints nothing itself when a handler is installed, so say
  // what it would have said before it exits.
  llvm::errs() << "LLVM ERROR: " << (reason ? reason : "") << "\n";
}

void bad_alloc_handler(void*, const char*, bool) {
  if (t_codegen_depth > 0) throw std::bad_alloc();
}

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::install_fatal_error_handler(&fatal_error_handler, nullptr);
    llvm::install_bad_alloc_error_handler(&bad_alloc_handler, nullptr);
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

// Runs `f` (which returns a T and reports errors through `error`) inside a
// CodegenScope; an LLVM fatal error becomes `fail` with `error` set.
template <class T, class F>
T guarded_codegen(std::string& error, T fail, F&& f) {
  CodegenScope scope;
  try {
    return f();
  } catch (const LlvmFatalError& e) {
    error = std::string("code generation failed: LLVM reported a fatal error: ") + e.what();
    return fail;
  }
}

struct TargetDesc {
  std::string triple, cpu, features, name;
  int vector_bits = 128;
};

TargetDesc describe(const CpuTarget& t) {
  TargetDesc d;
  d.triple = llvm::sys::getProcessTriple();
  llvm::Triple tr(d.triple);
  if (t.native) {
    d.cpu = llvm::sys::getHostCPUName().str();
    auto feats = llvm::sys::getHostCPUFeatures();
    {
      std::vector<std::string> fs;
      for (auto& f : feats) fs.push_back((f.second ? "+" : "-") + f.first().str());
      std::sort(fs.begin(), fs.end());
      for (size_t i = 0; i < fs.size(); ++i) d.features += (i ? "," : "") + fs[i];
    }
    if (!t.features.empty()) d.features += (d.features.empty() ? "" : ",") + t.features;
  } else {
    d.cpu = !t.cpu.empty() ? t.cpu : (tr.getArch() == llvm::Triple::x86_64 ? "x86-64" : "generic");
    d.features = t.features;
  }
  d.name = d.cpu;
  // The SIMD width the matmul micro-tiles are chosen for.
  auto has = [&](const std::string& f) { return ("," + d.features + ",").find(",+" + f + ",") != std::string::npos; };
  if (tr.isX86()) {
    std::string cpu = d.cpu;
    bool v4 = cpu == "x86-64-v4" || has("avx512f");
    bool v3 = v4 || cpu == "x86-64-v3" || has("avx2") || has("avx");
    if (t.native) {
      v4 = has("avx512f");
      v3 = v4 || has("avx2");
    }
    d.vector_bits = v4 ? 512 : v3 ? 256 : 128;
  }
  return d;
}

std::unique_ptr<llvm::TargetMachine> make_tm(const TargetDesc& d, unsigned opt, std::string& error) {
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(d.triple, err);
  if (!target) {
    error = "no LLVM target for " + d.triple + ": " + err;
    return nullptr;
  }
  llvm::TargetOptions to;
  llvm::CodeGenOptLevel level = opt >= 3 ? llvm::CodeGenOptLevel::Aggressive
                                : opt == 2 ? llvm::CodeGenOptLevel::Default
                                : opt == 1 ? llvm::CodeGenOptLevel::Less
                                           : llvm::CodeGenOptLevel::None;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(d.triple, d.cpu, d.features, to, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm) error = "cannot create a target machine for " + d.triple + " cpu " + d.cpu;
  return tm;
}

std::string sanitize(const std::string& s) {
  std::string r;
  for (char c : s) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return r;
}

// Heap temporaries through the specialization's hook table (abi/
// compiled_entry.h, runtime/temp_memory.h): `SYMBOL_temp_hooks` = {alloc,
// free}, exported, zero-initialized; every malloc/free of the lowered code
// calls through it, or malloc/free while it is empty.
void route_temporaries(llvm::Module& mod, const std::string& symbol) {
  llvm::LLVMContext& ctx = mod.getContext();
  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto* i64 = llvm::Type::getInt64Ty(ctx);
  llvm::GlobalVariable* table = add_hook_table(mod, symbol + "_temp_hooks", 2);
  auto* table_ty = table->getValueType();
  struct Route {
    const char* name;
    llvm::FunctionType* ty;
    int slot;
  };
  const Route routes[] = {{"malloc", llvm::FunctionType::get(ptr, {i64}, false), 0},
                          {"free", llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false), 1}};
  for (const Route& r : routes) {
    llvm::Function* libc = mod.getFunction(r.name);
    if (!libc || libc->getFunctionType() != r.ty) continue;
    auto* f = llvm::Function::Create(r.ty, llvm::GlobalValue::InternalLinkage, symbol + "_temp_" + r.name, mod);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    if (r.slot == 0) f->addRetAttr(llvm::Attribute::NoAlias);
    libc->replaceAllUsesWith(f);  // before the body below adds its own call of libc
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
    llvm::Value* hook = b.CreateAlignedLoad(ptr, b.CreateConstInBoundsGEP2_64(table_ty, table, 0, r.slot), llvm::MaybeAlign(8));
    llvm::BasicBlock* direct = llvm::BasicBlock::Create(ctx, "libc", f);
    llvm::BasicBlock* hooked = llvm::BasicBlock::Create(ctx, "hook", f);
    b.CreateCondBr(b.CreateIsNull(hook), direct, hooked);
    std::vector<llvm::Value*> args;
    for (llvm::Argument& a : f->args()) args.push_back(&a);
    for (int k = 0; k < 2; ++k) {
      b.SetInsertPoint(k == 0 ? direct : hooked);
      llvm::CallInst* c = k == 0 ? b.CreateCall(libc, args) : b.CreateCall(r.ty, hook, args);
      if (r.ty->getReturnType()->isVoidTy()) b.CreateRetVoid();
      else b.CreateRet(c);
    }
  }
}

// emit_mlir -> MLIR pipeline -> LLVM IR, plus the `void symbol(void**)`
// wrapper around the lowered `symbol_body` (bare pointers, inputs then outputs).
std::unique_ptr<llvm::Module> build_spec_module(const ir::Module& m, const Specialization& s, const std::string& symbol, const TargetDesc& td,
                                                const CompileOptions& co, llvm::LLVMContext& ctx, std::string& error,
                                                std::vector<std::string>& notes) {
  EmitOptions eo;
  eo.func_name = symbol + "_body";
  eo.matmul = co.matmul;
  eo.vector_bits = td.vector_bits;
  eo.matmul_tile_outer = co.matmul_tile_outer;
  eo.matmul_tile_inner = co.matmul_tile_inner;
  std::string text;
  {
    obs::Span span("lower", "emit mlir");
    if (span) span.arg("entry", s.entry);
    text = emit_mlir(m, s.entry, s.bindings, eo, &error);
  }
  if (text.empty()) return nullptr;
  detail::PipelineOptions po;
  po.apply_matmul_strategy = co.matmul == MatmulStrategy::Auto;
  po.parallel_min_iterations = co.parallel_min_iterations;
  detail::PipelineResult pr;
  {
    obs::Span span("lower", "mlir to llvm");
    pr = detail::mlir_to_llvm(text, ctx, po);
  }
  for (auto& n : pr.notes) notes.push_back(n);
  if (!pr.module) {
    error = pr.error;
    return nullptr;
  }
  llvm::Module& mod = *pr.module;
  llvm::Function* body = mod.getFunction(eo.func_name);
  const ir::Function* f = m.find(s.entry);
  // + the error record of an entry with index checks (index-checks.md).
  size_t nbuf = f->params.size() + f->results.size() + (index_sites(m, s.entry).empty() ? 0 : 1);
  if (!body || body->arg_size() != nbuf) {
    error = "internal: the lowered function has an unexpected signature";
    return nullptr;
  }
  body->setLinkage(llvm::GlobalValue::InternalLinkage);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  auto* ptr = llvm::PointerType::get(ctx, 0);
  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
  auto* w = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, symbol, mod);
  w->setVisibility(llvm::GlobalValue::DefaultVisibility);
  w->addFnAttr(llvm::Attribute::NoUnwind);
  w->addParamAttr(0, llvm::Attribute::NoCapture);
  w->addParamAttr(0, llvm::Attribute::ReadOnly);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", w));
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < nbuf; ++i) {
    llvm::Value* slot = b.CreateConstInBoundsGEP1_64(ptr, w->getArg(0), i);
    args.push_back(b.CreateAlignedLoad(ptr, slot, llvm::MaybeAlign(8), "buf" + std::to_string(i)));
  }
  b.CreateCall(body, args);
  b.CreateRetVoid();
  route_temporaries(mod, symbol);
  route_parallel_loops(mod, symbol);
  return std::move(pr.module);
}

void set_target(llvm::Module& m, llvm::TargetMachine& tm, const TargetDesc& td) {
  m.setDataLayout(tm.createDataLayout());
  m.setTargetTriple(td.triple);
  for (auto& f : m)
    if (!f.isDeclaration()) {
      f.addFnAttr("target-cpu", td.cpu);
      if (!td.features.empty()) f.addFnAttr("target-features", td.features);
    }
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm, unsigned level) {
  obs::Span span("codegen", "llvm optimize");
  if (span) span.arg("opt_level", static_cast<int64_t>(level));
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = level >= 2;
  pto.SLPVectorization = level >= 2;
  // While tracing, one span per LLVM pass run (category `llvm pass`; pass
  // managers and adaptors are passes too, so the spans nest).
  llvm::PassInstrumentationCallbacks pic;
  std::vector<std::pair<std::string, uint64_t>> open;
  if (span) {
    pic.registerBeforeNonSkippedPassCallback([&open](llvm::StringRef name, llvm::Any) { open.push_back({name.str(), obs::now_ns()}); });
    auto close = [&open]() {
      if (open.empty()) return;
      auto o = std::move(open.back());
      open.pop_back();
      obs::record_complete("llvm pass", std::move(o.first), o.second, obs::now_ns() - o.second, "");
    };
    pic.registerAfterPassCallback([close](llvm::StringRef, llvm::Any, const llvm::PreservedAnalyses&) { close(); });
    pic.registerAfterPassInvalidatedCallback([close](llvm::StringRef, const llvm::PreservedAnalyses&) { close(); });
  }
  llvm::PassBuilder pb(&tm, pto, std::nullopt, span ? &pic : nullptr);
  // Just before LLVM's full unrolling: long loops stay loops (cap_full_unroll.h).
  pb.registerLateLoopOptimizationsEPCallback([](llvm::LoopPassManager& lpm, llvm::OptimizationLevel) { lpm.addPass(CapFullUnroll()); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel ol = level >= 3 ? llvm::OptimizationLevel::O3
                               : level == 2 ? llvm::OptimizationLevel::O2
                               : level == 1 ? llvm::OptimizationLevel::O1
                                            : llvm::OptimizationLevel::O0;
  llvm::ModulePassManager mpm = level == 0 ? pb.buildO0DefaultPipeline(ol) : pb.buildPerModuleDefaultPipeline(ol);
  mpm.run(m, mam);
}

bool verify(llvm::Module& m, std::string& error) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (llvm::verifyModule(m, &os)) {
    os.flush();
    error = "internal: invalid LLVM IR: " + s;
    return false;
  }
  return true;
}

// The object file of `m` (already optimized) for `tm`.
bool emit_object(llvm::Module& m, llvm::TargetMachine& tm, llvm::SmallVector<char, 0>& out, std::string& error) {
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit object files";
    return false;
  }
  pm.run(m);
  return true;
}

// More threads split the module finer than its loop nests warrant and cost
// a partition's fixed work (bitcode, pass pipeline, target machine) each.
constexpr unsigned kMaxCompileThreads = 8;

unsigned compile_threads_for(const CompileOptions& o) {
  const unsigned n = o.compile_threads > 0 ? o.compile_threads : static_cast<unsigned>(common::cpus_available());
  return std::min(n, kMaxCompileThreads);
}

// Optimizes and emits each partition (bitcode from split_module_for_codegen)
// on a thread of its own, each with its own LLVMContext and TargetMachine
// (neither is shared between threads); the calling thread takes one too.
// LLVM fatal errors on a worker become its error, as on the calling thread;
// any other exception (std::bad_alloc) is rethrown here.
bool compile_partitions(const std::vector<llvm::SmallString<0>>& parts, const TargetDesc& td, unsigned opt,
                        std::vector<llvm::SmallVector<char, 0>>& objects, std::string& error) {
  obs::Span span("codegen", "jit parallel compile");
  if (span) span.arg("partitions", static_cast<int64_t>(parts.size()));
  objects.assign(parts.size(), {});
  std::vector<std::string> errors(parts.size());
  std::vector<std::exception_ptr> thrown(parts.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < parts.size();) {
      try {
        guarded_codegen<bool>(errors[i], false, [&] {
          obs::Span one("codegen", "jit partition");
          if (one) one.arg("partition", static_cast<int64_t>(i));
          llvm::LLVMContext ctx;
          auto mod = llvm::parseBitcodeFile(llvm::MemoryBufferRef(llvm::StringRef(parts[i].data(), parts[i].size()), "partition"), ctx);
          if (!mod) {
            errors[i] = "internal: a partition's bitcode does not read back: " + llvm::toString(mod.takeError());
            return false;
          }
          auto tm = make_tm(td, opt, errors[i]);
          if (!tm) return false;
          (*mod)->setDataLayout(tm->createDataLayout());
          optimize(**mod, *tm, opt);
          obs::Span mc("codegen", "jit machine code");
          return emit_object(**mod, *tm, objects[i], errors[i]);
        });
      } catch (...) {
        thrown[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < parts.size(); ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread to be had (a process or memory limit): fewer helpers, the work is shared out dynamically
    }
  }
  work();
  for (auto& t : helpers) t.join();
  for (auto& e : thrown)
    if (e) std::rethrow_exception(e);
  for (auto& e : errors)
    if (!e.empty()) {
      error = e;
      return false;
    }
  return true;
}

std::string print_module(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  os.flush();
  return s;
}

}  // namespace

EmitOptions emit_options_for(const CpuTarget& target, const CompileOptions& options) {
  init_llvm();
  EmitOptions eo;
  eo.matmul = options.matmul;
  eo.vector_bits = describe(target).vector_bits;
  eo.matmul_tile_outer = options.matmul_tile_outer;
  eo.matmul_tile_inner = options.matmul_tile_inner;
  return eo;
}

std::string target_name(const CpuTarget& t) {
  init_llvm();
  return describe(t).name;
}

// ---- JIT ---------------------------------------------------------------------

struct CpuJit::Impl {
  bool jit_broken = false;  // an LLVM fatal error unwound through the JIT
  CpuTarget target;
  CompileOptions options;
  TargetDesc td;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string init_error;
  mutable std::mutex mu;
  uint64_t counter = 0;
  std::vector<std::string> notes;
  unsigned partitions = 0;  // of the last compile
  // The code of each compiled function, so that release() can free it.
  std::map<void*, llvm::orc::ResourceTrackerSP> trackers;
  std::shared_ptr<ObjectCache> cache;
  std::map<void*, std::string> key_of;  // cached specializations loaded now, by function
};

namespace {

// What identifies this build of the compiler: its version, LLVM's, and the
// file the compiler's code was loaded from (size, modification time, inode),
// so that any rebuild, even at the same version, misses every key of the
// previous one.
const std::string& build_identity() {
  static const std::string id = [] {
    std::string s = std::to_string(SHAPEML_VERSION_MAJOR) + "." + std::to_string(SHAPEML_VERSION_MINOR) + "." +
                    std::to_string(SHAPEML_VERSION_PATCH) + " llvm " LLVM_VERSION_STRING;
    Dl_info info{};
    struct stat st{};
    if (dladdr(reinterpret_cast<void*>(&init_llvm), &info) && info.dli_fname && stat(info.dli_fname, &st) == 0)
      s += " " + std::string(info.dli_fname) + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(st.st_ino);
    return s;
  }();
  return id;
}

// The cache key of a specialization: SHA-256 over every input of its code.
std::string cache_key(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings, const TargetDesc& td,
                      const CompileOptions& o) {
  llvm::SHA256 h;
  auto part = [&](std::string_view s) {
    h.update(std::to_string(s.size()) + ":");
    h.update(llvm::StringRef(s.data(), s.size()));
  };
  part("shapeml jit objects 2");
  part(build_identity());
  part(td.triple), part(td.cpu), part(td.features), part(std::to_string(td.vector_bits));
  std::string opts = std::to_string(static_cast<int>(o.matmul)) + " " + std::to_string(o.opt_level) + " " + std::to_string(o.parallel_min_iterations);
  for (int64_t t : o.matmul_tile_outer) opts += " o" + std::to_string(t);
  for (int64_t t : o.matmul_tile_inner) opts += " i" + std::to_string(t);
  part(opts);
  part(m.name), part(m.source ? m.source->text() : ""), part(ir::print_module(m));
  part(entry);
  for (const auto& [k, v] : bindings) part(k + "=" + std::to_string(v));
  auto digest = h.final();
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : digest) out += hex[b >> 4], out += hex[b & 15];
  return out;
}

// A cache entry: the notes of the compile (one per line), the number of
// objects, then each object's size and bytes.
std::string pack_entry(const std::vector<std::string>& notes, const std::vector<llvm::SmallVector<char, 0>>& objects) {
  std::string s = std::to_string(notes.size()) + "\n";
  for (std::string n : notes) {
    std::replace(n.begin(), n.end(), '\n', ' ');
    s += n + "\n";
  }
  s += std::to_string(objects.size()) + "\n";
  for (const auto& o : objects) {
    s += std::to_string(o.size()) + "\n";
    s.append(o.data(), o.size());
  }
  return s;
}

bool unpack_entry(const std::string& s, std::vector<std::string>& notes, std::vector<llvm::StringRef>& objects) {
  size_t at = 0;
  auto line = [&](std::string& out) {
    size_t nl = s.find('\n', at);
    if (nl == std::string::npos) return false;
    out = s.substr(at, nl - at);
    at = nl + 1;
    return true;
  };
  auto number = [&](uint64_t& v) {
    std::string t;
    if (!line(t) || t.empty() || t.size() > 19 || t.find_first_not_of("0123456789") != std::string::npos) return false;
    v = std::stoull(t);
    return true;
  };
  uint64_t n = 0, count = 0;
  if (!number(n) || n > 1000) return false;
  notes.resize(n);
  for (auto& note : notes)
    if (!line(note)) return false;
  if (!number(count) || count == 0 || count > 1024) return false;
  objects.clear();
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t size = 0;
    if (!number(size) || size > s.size() - at) return false;
    objects.push_back(llvm::StringRef(s.data() + at, size));
    at += size;
  }
  return at == s.size();
}

}  // namespace

CpuJit::CpuJit(CpuTarget target, CompileOptions options, std::shared_ptr<ObjectCache> cache) : impl_(std::make_unique<Impl>()) {
  init_llvm();
  impl_->target = target;
  impl_->options = options;
  impl_->cache = std::move(cache);
  impl_->td = describe(target);
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(impl_->td.triple)};
  jtmb.setCPU(impl_->td.cpu);
  if (!impl_->td.features.empty()) {
    std::vector<std::string> fs;
    std::stringstream ss(impl_->td.features);
    for (std::string f; std::getline(ss, f, ',');) fs.push_back(f);
    jtmb.addFeatures(fs);
  }
  jtmb.setCodeGenOptLevel(options.opt_level >= 3 ? llvm::CodeGenOptLevel::Aggressive : llvm::CodeGenOptLevel::Default);
  jtmb.setRelocationModel(llvm::Reloc::PIC_);
  auto j = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
  if (!j) {
    impl_->init_error = "cannot create the JIT: " + llvm::toString(j.takeError());
    return;
  }
  impl_->jit = std::move(*j);
  // Generated code calls malloc/free/memcpy and libm: resolve them in this process.
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(impl_->jit->getDataLayout().getGlobalPrefix());
  if (!gen) {
    impl_->init_error = "cannot resolve process symbols for the JIT: " + llvm::toString(gen.takeError());
    impl_->jit.reset();
    return;
  }
  impl_->jit->getMainJITDylib().addGenerator(std::move(*gen));
}

CpuJit::~CpuJit() = default;

std::vector<std::string> CpuJit::last_notes() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->notes;
}

unsigned CpuJit::last_partitions() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->partitions;
}

common::CompiledEntryFn CpuJit::compile(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings,
                                         std::string& error, HookTables* hooks) {
  std::lock_guard<std::mutex> l(impl_->mu);
  bool fatal = false;
  common::CompiledEntryFn fn = guarded_codegen<common::CompiledEntryFn>(error, nullptr, [&] {
    fatal = true;  // cleared on a normal return
    common::CompiledEntryFn r = compile_locked(m, entry, bindings, error, hooks);
    fatal = false;
    return r;
  });
  if (fatal) {
    // The JIT's state is unknown after an unwind through it: keep it, but
    // refuse to use it again.
    impl_->init_error = error + " (this JIT is not used again; compile the module anew)";
    impl_->jit_broken = true;
  }
  return fn;
}

common::CompiledEntryFn CpuJit::compile_locked(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings,
                                            std::string& error, HookTables* hooks) {
  if (impl_->jit_broken) {
    error = impl_->init_error;
    return nullptr;
  }
  impl_->notes.clear();
  impl_->partitions = 0;
  if (!impl_->jit) {
    error = impl_->init_error;
    return nullptr;
  }
  // With a cache, the symbol is the key's (the cached object defines it);
  // a key already loaded in this JIT (a binding compiled again before its
  // first copy was released) is compiled under a fresh name, uncached.
  std::string key = impl_->cache ? cache_key(m, entry, bindings, impl_->td, impl_->options) : "";
  for (const auto& [fn, k] : impl_->key_of)
    if (k == key) key.clear();
  std::string symbol = key.empty() ? "shapeml_jit" + std::to_string(impl_->counter++) + "_" + sanitize(entry)
                                   : "shapeml_c" + key.substr(0, 24) + "_" + sanitize(entry);
  obs::Span span("codegen", "jit compile");
  if (span) {
    std::string b;
    for (const auto& [k, v] : bindings) b += (b.empty() ? "" : ",") + k + "=" + std::to_string(v);
    span.arg("entry", entry).arg("binding", b).arg("symbol", symbol);
  }
  // The entry point and hook tables of code added under `tracker`.
  auto resolve = [&](llvm::orc::ResourceTrackerSP tracker) -> common::CompiledEntryFn {
    auto sym = impl_->jit->lookup(symbol);
    if (!sym) {
      error = "JIT: " + llvm::toString(sym.takeError());
      llvm::consumeError(tracker->remove());
      return nullptr;
    }
    auto fn = sym->toPtr<common::CompiledEntryFn>();
    if (hooks) {
      for (auto [suffix, slot] : {std::pair{"_temp_hooks", &hooks->temp}, std::pair{"_parallel_hooks", &hooks->parallel}}) {
        auto table = impl_->jit->lookup(symbol + suffix);
        if (!table) {
          error = "internal: JIT: " + llvm::toString(table.takeError());
          llvm::consumeError(tracker->remove());
          return nullptr;
        }
        *slot = table->toPtr<void*>();
      }
    }
    impl_->trackers[reinterpret_cast<void*>(fn)] = tracker;
    if (!key.empty()) impl_->key_of[reinterpret_cast<void*>(fn)] = key;
    return fn;
  };
  // The object code of `objects` (ELF objects) added to the JIT under one
  // tracker.
  auto add_objects = [&](const std::vector<llvm::StringRef>& objects, std::string& err) -> llvm::orc::ResourceTrackerSP {
    auto tracker = impl_->jit->getMainJITDylib().createResourceTracker();
    for (llvm::StringRef bytes : objects)
      if (auto e = impl_->jit->addObjectFile(tracker, llvm::MemoryBuffer::getMemBufferCopy(bytes, symbol))) {
        err = "JIT: " + llvm::toString(std::move(e));
        llvm::consumeError(tracker->remove());
        return nullptr;
      }
    return tracker;
  };
  if (!key.empty())
    if (std::optional<std::string> hit = impl_->cache->load(key)) {
      obs::Span cached("codegen", "jit cache hit");
      std::vector<std::string> notes;
      std::vector<llvm::StringRef> objects;
      std::string err;
      if (unpack_entry(*hit, notes, objects))
        if (auto tracker = add_objects(objects, err)) {
          std::string saved = error;
          if (auto fn = resolve(tracker)) {
            impl_->notes = std::move(notes);
            return fn;
          }
          error = saved;  // a stale or foreign object: compile it anew below
        }
      SHAPEML_LOG_AT(Codegen, Debug, "JIT cache entry unusable; compiling anew", {"key", key});
    }
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto mod = build_spec_module(m, {entry, bindings}, symbol, impl_->td, impl_->options, *ctx, error, impl_->notes);
  if (!mod) return nullptr;
  auto tm = make_tm(impl_->td, impl_->options.opt_level, error);
  if (!tm) return nullptr;
  set_target(*mod, *tm, impl_->td);
  if (!verify(*mod, error)) return nullptr;
  // Several threads: the module in partitions, each optimized and emitted
  // on its own thread (lower/cpu/split_module.h); else one module here.
  std::vector<llvm::SmallVector<char, 0>> objects;
  const unsigned threads = compile_threads_for(impl_->options);
  std::vector<llvm::SmallString<0>> parts;
  if (threads > 1) {
    obs::Span split("codegen", "jit split module");
    parts = split_module_for_codegen(*mod, threads, symbol);
  }
  if (!parts.empty()) {
    mod.reset();
    if (!compile_partitions(parts, impl_->td, impl_->options.opt_level, objects, error)) return nullptr;
  } else {
    optimize(*mod, *tm, impl_->options.opt_level);
    mod->setDataLayout(impl_->jit->getDataLayout());
    obs::Span mc("codegen", "jit machine code");
    objects.emplace_back();
    if (!emit_object(*mod, *tm, objects.back(), error)) return nullptr;
  }
  std::vector<llvm::StringRef> refs;
  for (const auto& o : objects) refs.push_back(llvm::StringRef(o.data(), o.size()));
  auto tracker = add_objects(refs, error);
  if (!tracker) return nullptr;
  auto fn = resolve(tracker);
  if (fn) impl_->partitions = static_cast<unsigned>(objects.size());
  if (fn && !key.empty()) impl_->cache->store(key, pack_entry(impl_->notes, objects));
  return fn;
}

void CpuJit::release(common::CompiledEntryFn fn) {
  std::lock_guard<std::mutex> l(impl_->mu);
  auto it = impl_->trackers.find(reinterpret_cast<void*>(fn));
  if (it == impl_->trackers.end()) return;
  llvm::consumeError(it->second->remove());
  impl_->trackers.erase(it);
  impl_->key_of.erase(reinterpret_cast<void*>(fn));
}

// ---- AOT -----------------------------------------------------------------------

static bool build_object_unguarded(const ir::Module& m, const std::vector<Specialization>& specs, const CpuTarget& target,
                                   const std::string& out_o, std::string& error, const CompileOptions& options);

bool build_object(const ir::Module& m, const std::vector<Specialization>& specs, const CpuTarget& target, const std::string& out_o,
                  std::string& error, const CompileOptions& options) {
  init_llvm();
  return guarded_codegen<bool>(error, false, [&] { return build_object_unguarded(m, specs, target, out_o, error, options); });
}

static bool build_object_unguarded(const ir::Module& m, const std::vector<Specialization>& specs, const CpuTarget& target,
                                   const std::string& out_o, std::string& error, const CompileOptions& options) {
  init_llvm();
  if (specs.empty()) {
    error = "no specializations to compile";
    return false;
  }
  TargetDesc td = describe(target);
  auto tm = make_tm(td, options.opt_level, error);
  if (!tm) return false;
  llvm::LLVMContext ctx;
  auto merged = std::make_unique<llvm::Module>("shapeml_" + sanitize(m.name), ctx);
  std::vector<std::string> symbols;
  std::string manifest = artifact::manifest_text(m, specs, td.name, &symbols);
  std::vector<std::string> notes;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].gpu_plan.empty()) {
      // A device specialization: `const char* SYMBOL(void)` returns its plan.
      llvm::IRBuilder<> b(ctx);
      auto* fn = llvm::Function::Create(llvm::FunctionType::get(llvm::PointerType::get(ctx, 0), false), llvm::GlobalValue::ExternalLinkage,
                                        symbols[i], *merged);
      b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn));
      llvm::GlobalVariable* str = b.CreateGlobalString(specs[i].gpu_plan, symbols[i] + "_plan", 0, merged.get());
      str->setLinkage(llvm::GlobalValue::PrivateLinkage);
      b.CreateRet(str);
      continue;
    }
    std::string err;
    auto mod = build_spec_module(m, specs[i], symbols[i], td, options, ctx, err, notes);
    if (!mod) {
      error = "specialization " + std::to_string(i) + " (`" + specs[i].entry + "`): " + err;
      return false;
    }
    // Per-specialization internals must not collide when linked together.
    for (auto& g : mod->global_values())
      if (!g.isDeclaration() && g.getName() != symbols[i] && g.getName() != symbols[i] + "_temp_hooks" &&
          g.getName() != symbols[i] + "_parallel_hooks")
        g.setLinkage(llvm::GlobalValue::InternalLinkage);
    if (llvm::Linker::linkModules(*merged, std::move(mod))) {
      error = "internal: cannot link specialization " + std::to_string(i);
      return false;
    }
  }
  // const char* shapeml_module_manifest(void); uint32_t shapeml_module_abi_version(void);
  {
    llvm::IRBuilder<> b(ctx);
    auto* ptr = llvm::PointerType::get(ctx, 0);
    auto* mf = llvm::Function::Create(llvm::FunctionType::get(ptr, false), llvm::GlobalValue::ExternalLinkage, "shapeml_module_manifest", *merged);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", mf));
    llvm::GlobalVariable* str = b.CreateGlobalString(manifest, "shapeml_manifest_text", 0, merged.get());
    str->setLinkage(llvm::GlobalValue::PrivateLinkage);
    b.CreateRet(str);
    auto* af = llvm::Function::Create(llvm::FunctionType::get(b.getInt32Ty(), false), llvm::GlobalValue::ExternalLinkage,
                                      "shapeml_module_abi_version", *merged);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", af));
    b.CreateRet(b.getInt32(common::kCompiledEntryAbiVersion));
  }
  set_target(*merged, *tm, td);
  if (!verify(*merged, error)) return false;
  optimize(*merged, *tm, options.opt_level);
  std::error_code ec;
  llvm::raw_fd_ostream out(out_o, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write " + out_o + ": " + ec.message();
    return false;
  }
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit object files";
    return false;
  }
  {
    obs::Span span("codegen", "object emission");
    pm.run(*merged);
  }
  out.flush();
  if (out.has_error()) {
    error = "cannot write " + out_o;
    out.clear_error();
    return false;
  }
  return true;
}

namespace {

// Runs argv (no shell), output captured; true on exit status 0.
bool run_command(const std::vector<std::string>& argv, std::string& output) {
  llvm::SmallString<128> log;
  int fd = -1;
  if (llvm::sys::fs::createTemporaryFile("shapeml-cc", "log", fd, log)) {
    output = "cannot create a temporary file";
    return false;
  }
  ::close(fd);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  bool ok = false;
  if (rc != 0) {
    output = "cannot run `" + argv[0] + "`: " + std::strerror(rc);
  } else {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::ifstream in(log.c_str());
    std::stringstream ss;
    ss << in.rdbuf();
    output = ss.str();
    ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && output.empty()) output = "`" + argv[0] + "` failed";
  }
  llvm::sys::fs::remove(log);
  return ok;
}

}  // namespace

namespace {

// LLD writes its output through a memory mapping: on a file system that
// fills up meanwhile the write is a SIGBUS, which LLD's crash recovery turns
// into "cannot run again" for the rest of the process. So a link starts only
// when the output's file system has room for twice the object and a MiB
// (the linked .so is about the object's size): a full disk is a write error
// naming the file, and the linker stays usable.
bool enough_space_to_link(llvm::StringRef obj, llvm::StringRef dir, const std::string& out_so, std::string& error) {
  uint64_t obj_bytes = 0;
  if (llvm::sys::fs::file_size(obj, obj_bytes)) return true;  // let the link say what is wrong
  llvm::ErrorOr<llvm::sys::fs::space_info> space = llvm::sys::fs::disk_space(dir);
  if (!space) return true;
  const uint64_t need = 2 * obj_bytes + (1u << 20);
  if (space->available >= need) return true;
  error = "cannot write " + out_so + ": No space left on device (" + std::to_string(space->available) + " bytes free on its file system, about " +
          std::to_string(need) + " needed)";
  return false;
}

}  // namespace

bool build_shared_object(const ir::Module& m, const std::vector<Specialization>& specs, const CpuTarget& target, const std::string& out_so,
                         std::string& error, const CompileOptions& options, const std::string& cc) {
  // The output is produced under a temporary name in its own directory and
  // renamed over `out_so` only when complete: a reader never sees a partial
  // .so, a failed build leaves an existing `out_so` as it was, and the only
  // files removed are the two temporaries this call created and those a
  // killed build of the same file left.
  // Through symbolic links to the file they name (a link stays a link; one
  // to /dev/null or a loop is refused), with temporaries that fit NAME_MAX
  // and those of killed builds removed (fs/output_path.h).
  fs::OutputTarget target_file;
  std::string why;
  if (!fs::resolve_output(out_so, target_file, why)) {
    error = "cannot write " + out_so + ": it " + why;
    return false;
  }
  fs::remove_stale_temporaries(target_file);
  llvm::SmallString<256> dir(target_file.dir);
  llvm::SmallString<256> model(dir);
  llvm::sys::path::append(model, fs::temporary_prefix(target_file) + "%%%%%%");
  llvm::SmallString<256> tmp_so;
  int fd = -1;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, fd, tmp_so)) {
    error = "cannot create " + out_so + ": cannot create a temporary file in " + dir.str().str() + ": " + ec.message();
    return false;
  }
  ::close(fd);
  llvm::SmallString<128> obj;
  if (llvm::sys::fs::createTemporaryFile("shapeml", "o", fd, obj)) {
    error = "cannot create a temporary object file";
    llvm::sys::fs::remove(tmp_so);
    return false;
  }
  ::close(fd);
  bool ok = build_object(m, specs, target, obj.str().str(), error, options);
  obs::Span link_span("link", "link shared object");
  if (link_span) link_span.arg("output", out_so);
  if (ok) {
    const char* env = std::getenv("SHAPEML_CC");
    std::string compiler = !cc.empty() ? cc : (env && *env ? env : "");
    if (compiler.empty()) {
      ok = enough_space_to_link(obj.str(), dir.str(), out_so, error) && detail::link_shared_object(obj.str().str(), tmp_so.str().str(), out_so, error);
    } else {
      std::string out;
      ok = run_command({compiler, "-shared", "-o", tmp_so.str().str(), obj.str().str(), "-lm"}, out);
      if (!ok) error = "linking " + out_so + " with `" + compiler + " -shared` (from " + (cc.empty() ? "SHAPEML_CC" : "the `cc` argument") + ") failed:\n" + out;
    }
  }
  llvm::sys::fs::remove(obj);
  if (ok) {
    if (std::error_code ec = llvm::sys::fs::rename(tmp_so, target_file.path)) {
      error = "cannot write " + out_so + ": " + ec.message();
      ok = false;
    }
  }
  if (!ok) llvm::sys::fs::remove(tmp_so);
  return ok;
}

// ---- text outputs --------------------------------------------------------------

std::string emit_llvm(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings, const CpuTarget& target,
                      std::string& error, const CompileOptions& options, bool optimize_ir) {
  init_llvm();
  return guarded_codegen<std::string>(error, "", [&]() -> std::string {
  TargetDesc td = describe(target);
  auto tm = make_tm(td, options.opt_level, error);
  if (!tm) return "";
  llvm::LLVMContext ctx;
  std::vector<std::string> notes;
  auto mod = build_spec_module(m, {entry, bindings}, default_func_name(entry), td, options, ctx, error, notes);
  if (!mod) return "";
  set_target(*mod, *tm, td);
  if (!verify(*mod, error)) return "";
  if (optimize_ir) optimize(*mod, *tm, options.opt_level);
  std::string s;
  for (const auto& n : notes) s += "; note: " + n + "\n";
  return s + print_module(*mod);
  });
}

std::string emit_lowered_mlir(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings,
                              const CpuTarget& target, std::string& error, const CompileOptions& options) {
  init_llvm();
  return guarded_codegen<std::string>(error, "", [&]() -> std::string {
  EmitOptions eo = emit_options_for(target, options);
  std::string text = emit_mlir(m, entry, bindings, eo, &error);
  if (text.empty()) return "";
  llvm::LLVMContext ctx;
  detail::PipelineOptions po;
  po.apply_matmul_strategy = options.matmul == MatmulStrategy::Auto;
  detail::PipelineResult pr = detail::mlir_to_llvm(text, ctx, po, /*keep_lowered_mlir=*/true);
  if (!pr.module) {
    error = pr.error;
    return "";
  }
  return pr.lowered_mlir;
  });
}

namespace detail {
void llvm_report_fatal_error_for_testing(const char* reason) { llvm::report_fatal_error(reason); }
void llvm_report_bad_alloc_for_testing() { llvm::report_bad_alloc_error("shapeml test"); }

bool run_as_codegen_for_testing(const std::function<void()>& f, std::string& error) {
  init_llvm();
  return guarded_codegen<bool>(error, false, [&] {
    f();
    return true;
  });
}
}  // namespace detail

}  // namespace shapeml::lower::cpu
