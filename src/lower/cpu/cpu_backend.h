// The CPU back end's public C++ API: typed IR -> MLIR -> LLVM -> machine
// code, just in time (CpuJit) or ahead of time (an object / a shared object
// with a manifest). The generated code follows src/common/compiled_entry.h:
// one `void SYMBOL(void** buffers)` per specialization, inputs then outputs,
// dense row-major, destination-passing style. Design and pipeline:
// docs/design/cpu-codegen.md.
//
// Errors are returned (false / null plus a message); nothing here prints,
// throws across the API, aborts or exits. LLVM's own fatal errors inside code
// generation become such errors too (cpu_backend.cpp, "LLVM fatal errors";
// docs/design/llvm-fatal-errors.md); out of memory there is std::bad_alloc.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artifact/module_manifest.h"
#include "ir/ir.h"
#include "lower/cpu/emit_mlir.h"
#include "common/compiled_entry.h"

namespace shapeml::lower::cpu {

struct CpuTarget {
  /// true: the host CPU and all its features. false: a portable baseline,
  /// `cpu` (default "x86-64" on x86-64 hosts, "generic" elsewhere) with
  /// `features` (LLVM syntax, e.g. "+avx2,+fma"; default none).
  bool native = true;
  std::string cpu;
  std::string features;
};

struct CompileOptions {
  MatmulStrategy matmul = MatmulStrategy::Auto;
  unsigned opt_level = 3;  // LLVM optimization level, 0..3
  /// Matmul tile override, see EmitOptions (experiments and tuning).
  std::vector<int64_t> matmul_tile_outer, matmul_tile_inner;
  /// Loop nests of at least this many innermost iterations run their
  /// outermost parallel loop on the runtime's threads (docs/design/
  /// cpu-threads.md); 0: every loop stays on the calling thread.
  int64_t parallel_min_iterations = kDefaultParallelMinIterations;
  static constexpr int64_t kDefaultParallelMinIterations = 1 << 15;
  /// Threads that optimize and emit a JIT specialization's machine code
  /// (its module split by lower/cpu/split_module.h), at most 8; 0: the CPUs
  /// in the process's affinity mask; 1: one module on the calling thread.
  /// The machine code does not depend on it.
  unsigned compile_threads = 0;
};

/// The hook tables of a JIT-compiled function (common/compiled_entry.h): its
/// temporaries (runtime/temp_memory.h) and its parallel loops
/// (runtime/parallel_for.h).
struct HookTables {
  void* temp = nullptr;
  void* parallel = nullptr;
};

/// One entry point at one binding, with its plan text for a device entry
/// (the artifact stage's description: artifact/module_manifest.h).
using artifact::Specialization;

/// The name the manifest records for a target, e.g. "znver3" (native) or
/// "x86-64".
std::string target_name(const CpuTarget& t);

/// Where CpuJit keeps the object code of its specializations across
/// processes, by a key that covers everything the code depends on (the
/// module's source and typed IR, the entry, the binding, the target, the
/// options, the compiler's version and build): jit/jit_cache.h stores it on
/// disk (docs/design/jit-cache.md). Both calls are best effort: a missing,
/// unreadable or corrupt entry is a miss, a failed store is no error.
class ObjectCache {
 public:
  virtual ~ObjectCache() = default;
  /// The bytes stored under `key` (a hex digest), or nullopt.
  virtual std::optional<std::string> load(const std::string& key) = 0;
  virtual void store(const std::string& key, std::string_view bytes) = 0;
};

/// JIT compiler (LLVM ORC LLJIT). Compiled functions stay valid for the
/// lifetime of the CpuJit. compile() is thread-safe (serialized). With an
/// ObjectCache, a specialization found there is loaded instead of compiled,
/// and one compiled is stored there.
class CpuJit {
 public:
  explicit CpuJit(CpuTarget target = {}, CompileOptions options = {}, std::shared_ptr<ObjectCache> cache = nullptr);
  ~CpuJit();
  CpuJit(const CpuJit&) = delete;
  CpuJit& operator=(const CpuJit&) = delete;

  /// Compiles `entry` specialized to `bindings`; null with `error` set on
  /// failure (bad bindings, a non-CPU program, an internal error).
  /// `hooks`, when given, receives the addresses of the function's hook
  /// tables.
  common::CompiledEntryFn compile(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings,
                                   std::string& error, HookTables* hooks = nullptr);
  /// Frees the machine code of a function compile() returned (no-op for any
  /// other pointer). The caller guarantees that nothing runs it any more.
  void release(common::CompiledEntryFn fn);
  /// Remarks of the last compile(), e.g. a matmul strategy that fell back to
  /// plain loops.
  std::vector<std::string> last_notes() const;
  /// How many modules the last compile() optimized and emitted side by side
  /// (CompileOptions::compile_threads): 1 when it was compiled whole, 0 when
  /// it came from the cache or failed.
  unsigned last_partitions() const;

 private:
  common::CompiledEntryFn compile_locked(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings,
                                      std::string& error, HookTables* hooks);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Writes a relocatable PIC object with every specialization (CPU code, or
/// for a device specialization `const char* SYMBOL(void)` returning its
/// plan text as given) plus `shapeml_module_manifest()`, returning the
/// manifest the artifact stage writes (artifact/module_manifest.h), and
/// `shapeml_module_abi_version()`.
bool build_object(const ir::Module& m, const std::vector<Specialization>& specs, const CpuTarget& target, const std::string& out_o,
                  std::string& error, const CompileOptions& options = {});

/// build_object, then links it into the shared object `out_so` in process
/// with LLD (lower/cpu/link_elf.h): no system compiler, linker or libc6-dev is
/// needed, and the .so records DT_NEEDED only on the libc/libm it uses. When
/// `cc` or the environment variable SHAPEML_CC names a compiler driver, the
/// link runs `CC -shared -o out_so obj.o -lm` instead (an opt-in escape
/// hatch). The .so is written under a temporary name in out_so's directory and
/// renamed over out_so on success; on failure out_so is left as it was.
/// Decision: docs/design/aot-linking.md.
bool build_shared_object(const ir::Module& m, const std::vector<Specialization>& specs, const CpuTarget& target, const std::string& out_so,
                         std::string& error, const CompileOptions& options = {}, const std::string& cc = "");

/// `--emit=llvm`: the LLVM IR of one specialization (symbol
/// `shapeml_<entry>`), optimized for `target` unless `optimize` is false.
/// "" with `error` set on failure.
std::string emit_llvm(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings, const CpuTarget& target,
                      std::string& error, const CompileOptions& options = {}, bool optimize = true);

/// The module after the MLIR pipeline (LLVM dialect), for debugging.
std::string emit_lowered_mlir(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings,
                              const CpuTarget& target, std::string& error, const CompileOptions& options = {});

/// EmitOptions that match `target` (vector width for the matmul tiles).
EmitOptions emit_options_for(const CpuTarget& target, const CompileOptions& options = {});

namespace detail {
/// Test hook for the LLVM fatal-error handling: runs `f` the way code
/// generation runs (inside the scope where LLVM's fatal errors throw).
/// Returns false with `error` set when `f` reported an LLVM fatal error;
/// std::bad_alloc from LLVM's bad-alloc handler propagates.
bool run_as_codegen_for_testing(const std::function<void()>& f, std::string& error);
/// For tests: llvm::report_fatal_error(reason) and llvm::report_bad_alloc_error.
[[noreturn]] void llvm_report_fatal_error_for_testing(const char* reason);
[[noreturn]] void llvm_report_bad_alloc_for_testing();
}  // namespace detail

}  // namespace shapeml::lower::cpu
