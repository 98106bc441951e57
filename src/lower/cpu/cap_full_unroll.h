// A loop pass for LLVM's default pipeline (cpu_backend.cpp registers it just
// before LoopFullUnrollPass): a loop that runs more than kFullUnrollMaxTrips
// times is not unrolled. The loops MLIR's lowering leaves for LLVM to unroll
// are short (vector ops are already unrolled there); the long ones are
// copies and fills — a packed matmul tile's 64 row copies, which LLVM turns
// into 64 memcpys of one row and then into one basic block, whose
// instruction selection and scheduling took most of the first call's time
// (docs/design/cpu-codegen.md, "Compile time").
#pragma once
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Transforms/Scalar/LoopPassManager.h>

namespace shapeml::lower::cpu {

/// The longest constant trip count LLVM may still unroll.
constexpr unsigned kFullUnrollMaxTrips = 16;

struct CapFullUnroll : llvm::PassInfoMixin<CapFullUnroll> {
  llvm::PreservedAnalyses run(llvm::Loop& loop, llvm::LoopAnalysisManager& am, llvm::LoopStandardAnalysisResults& ar, llvm::LPMUpdater& u);
};

}  // namespace shapeml::lower::cpu
