#include "lower/cpu/cap_full_unroll.h"

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/IR/Metadata.h>
#include <llvm/Transforms/Utils/LoopUtils.h>

namespace shapeml::lower::cpu {

llvm::PreservedAnalyses CapFullUnroll::run(llvm::Loop& loop, llvm::LoopAnalysisManager&, llvm::LoopStandardAnalysisResults& ar, llvm::LPMUpdater&) {
  const unsigned trips = ar.SE.getSmallConstantTripCount(&loop);
  // 0: unknown trip count (nothing to fully unroll); a loop someone already
  // annotated keeps its annotation.
  if (trips <= kFullUnrollMaxTrips || llvm::hasUnrollTransformation(&loop) != llvm::TM_Unspecified) return llvm::PreservedAnalyses::all();
  llvm::LLVMContext& ctx = loop.getHeader()->getContext();
  llvm::Metadata* disable = llvm::MDNode::get(ctx, llvm::MDString::get(ctx, "llvm.loop.unroll.disable"));
  llvm::SmallVector<llvm::Metadata*, 4> ops = {nullptr};  // the self reference
  if (llvm::MDNode* old = loop.getLoopID())
    for (unsigned i = 1; i < old->getNumOperands(); ++i) ops.push_back(old->getOperand(i));
  ops.push_back(disable);
  llvm::MDNode* nid = llvm::MDNode::getDistinct(ctx, ops);
  nid->replaceOperandWith(0, nid);
  loop.setLoopID(nid);
  return llvm::PreservedAnalyses::all();  // metadata only
}

}  // namespace shapeml::lower::cpu
