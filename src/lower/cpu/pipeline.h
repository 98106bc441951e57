// MLIR text -> LLVM IR: the only interface to the translation unit that
// includes MLIR headers (pipeline.cpp). Internal to src/lower/cpu; users go
// through cpu_backend.h.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace shapeml::lower::cpu::detail {

struct PipelineOptions {
  /// Apply the matmul strategies recorded as `shapeml.tile_outer` /
  /// `shapeml.tile_inner` attributes (transform dialect). When they fail,
  /// the pipeline falls back to plain loops and says so in `notes`.
  bool apply_matmul_strategy = true;
  /// Outline the outermost parallel loops whose nest runs at least this many
  /// innermost iterations, for the runtime's threads (outline_parallel.h,
  /// docs/design/cpu-threads.md); 0: none (the code stays single-threaded).
  int64_t parallel_min_iterations = 0;
};

struct PipelineResult {
  std::unique_ptr<llvm::Module> module;  // null on failure
  std::string error;
  std::vector<std::string> notes;        // e.g. a strategy that fell back
  std::string lowered_mlir;              // the LLVM-dialect module, when asked
};

/// Parses `mlir_text` (as emit_mlir writes it), runs the lowering pipeline
/// (docs/design/cpu-codegen.md) and translates to LLVM IR in `ctx`. Every
/// func.func is lowered with the bare-pointer memref calling convention.
/// MLIR diagnostics are captured into `error`; nothing is printed.
PipelineResult mlir_to_llvm(const std::string& mlir_text, llvm::LLVMContext& ctx, const PipelineOptions& opts, bool keep_lowered_mlir = false);

/// Parses and verifies MLIR text without lowering it ("" on success, else the
/// diagnostics). Used by tests and `--emit=mlir --verify`.
std::string verify_mlir(const std::string& mlir_text);

}  // namespace shapeml::lower::cpu::detail
