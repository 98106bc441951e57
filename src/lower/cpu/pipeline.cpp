// The one translation unit of the CPU back end that includes MLIR headers:
// parse the emitted text, run the lowering pipeline, translate to LLVM IR.
// The pipeline is documented, with an equivalent `mlir-opt` command line, in
// docs/design/cpu-codegen.md; keep the two in sync.
#include "lower/cpu/pipeline.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <mlir/Conversion/Passes.h>
#include <mlir/Dialect/Affine/IR/AffineOps.h>
#include <mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h>
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h>
#include <mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h>
#include <mlir/Dialect/Arith/Transforms/BufferViewFlowOpInterfaceImpl.h>
#include <mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Arith/Transforms/Passes.h>
#include <mlir/Dialect/Bufferization/IR/Bufferization.h>
#include <mlir/Dialect/Bufferization/Pipelines/Passes.h>
#include <mlir/Dialect/Bufferization/TransformOps/BufferizationTransformOps.h>
#include <mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h>
#include <mlir/Dialect/Bufferization/Transforms/Passes.h>
#include <mlir/Dialect/ControlFlow/IR/ControlFlow.h>
#include <mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h>
#include <mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/LLVMIR/LLVMDialect.h>
#include <mlir/Dialect/Linalg/IR/Linalg.h>
#include <mlir/Dialect/Linalg/Passes.h>
#include <mlir/Dialect/Linalg/TransformOps/DialectExtension.h>
#include <mlir/Dialect/Linalg/Transforms/AllInterfaces.h>
#include <mlir/Dialect/Linalg/Transforms/Transforms.h>
#include <mlir/Dialect/Math/IR/Math.h>
#include <mlir/Dialect/Math/Transforms/Passes.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h>
#include <mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h>
#include <mlir/Dialect/MemRef/Transforms/BufferViewFlowOpInterfaceImpl.h>
#include <mlir/Dialect/MemRef/Transforms/Passes.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h>
#include <mlir/Dialect/SCF/TransformOps/SCFTransformOps.h>
#include <mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h>
#include <mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Tensor/IR/Tensor.h>
#include <mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h>
#include <mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h>
#include <mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h>
#include <mlir/Dialect/Tensor/TransformOps/TensorTransformOps.h>
#include <mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h>
#include <mlir/Dialect/Transform/IR/TransformDialect.h>
#include <mlir/Dialect/Transform/LoopExtension/LoopExtension.h>
#include <mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h>
#include <mlir/Dialect/UB/IR/UBOps.h>
#include <mlir/Dialect/Vector/IR/VectorOps.h>
#include <mlir/Dialect/Vector/IR/ValueBoundsOpInterfaceImpl.h>
#include <mlir/Dialect/Vector/TransformOps/VectorTransformOps.h>
#include <mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h>
#include <mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/Diagnostics.h>
#include <mlir/IR/MLIRContext.h>
#include <mlir/IR/Verifier.h>
#include <mlir/Parser/Parser.h>
#include <mlir/Pass/PassInstrumentation.h>
#include <mlir/Pass/PassManager.h>
#include <mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h>
#include <mlir/Target/LLVMIR/Export.h>
#include <mlir/Transforms/GreedyPatternRewriteDriver.h>
#include <mlir/Transforms/LoopInvariantCodeMotionUtils.h>
#include <mlir/Transforms/Passes.h>

#include <cstdio>
#include <cstdlib>


#include "lower/cpu/outline_parallel.h"
#include "obs/trace.h"

namespace shapeml::lower::cpu::detail {

namespace {

// Explicit registration: the dialects the emitter and the pipeline produce,
// and, by hand, the external interface models the passes rely on (without
// them bufferization, tiling and empty-tensor elimination fail at run time).
void register_everything(mlir::DialectRegistry& r) {
  r.insert<mlir::affine::AffineDialect, mlir::arith::ArithDialect, mlir::bufferization::BufferizationDialect, mlir::cf::ControlFlowDialect,
           mlir::func::FuncDialect, mlir::linalg::LinalgDialect, mlir::LLVM::LLVMDialect, mlir::math::MathDialect, mlir::memref::MemRefDialect,
           mlir::scf::SCFDialect, mlir::tensor::TensorDialect, mlir::transform::TransformDialect, mlir::ub::UBDialect,
           mlir::vector::VectorDialect>();
  mlir::affine::registerValueBoundsOpInterfaceExternalModels(r);
  mlir::arith::registerBufferDeallocationOpInterfaceExternalModels(r);
  mlir::arith::registerBufferizableOpInterfaceExternalModels(r);
  mlir::arith::registerBufferViewFlowOpInterfaceExternalModels(r);
  mlir::arith::registerValueBoundsOpInterfaceExternalModels(r);
  mlir::bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(r);
  mlir::cf::registerBufferizableOpInterfaceExternalModels(r);
  mlir::cf::registerBufferDeallocationOpInterfaceExternalModels(r);
  mlir::linalg::registerAllDialectInterfaceImplementations(r);
  mlir::memref::registerAllocationOpInterfaceExternalModels(r);
  mlir::memref::registerBufferViewFlowOpInterfaceExternalModels(r);
  mlir::memref::registerValueBoundsOpInterfaceExternalModels(r);
  mlir::scf::registerBufferDeallocationOpInterfaceExternalModels(r);
  mlir::scf::registerBufferizableOpInterfaceExternalModels(r);
  mlir::scf::registerValueBoundsOpInterfaceExternalModels(r);
  mlir::tensor::registerBufferizableOpInterfaceExternalModels(r);
  mlir::tensor::registerInferTypeOpInterfaceExternalModels(r);
  mlir::tensor::registerSubsetOpInterfaceExternalModels(r);
  mlir::tensor::registerTilingInterfaceExternalModels(r);
  mlir::tensor::registerValueBoundsOpInterfaceExternalModels(r);
  mlir::vector::registerBufferizableOpInterfaceExternalModels(r);
  mlir::vector::registerSubsetOpInterfaceExternalModels(r);
  mlir::vector::registerValueBoundsOpInterfaceExternalModels(r);
  // Transform dialect extensions used by the matmul strategy scripts.
  mlir::bufferization::registerTransformDialectExtension(r);
  mlir::linalg::registerTransformDialectExtension(r);
  mlir::scf::registerTransformDialectExtension(r);
  mlir::tensor::registerTransformDialectExtension(r);
  mlir::vector::registerTransformDialectExtension(r);
  mlir::transform::registerLoopExtension(r);
  // MLIR -> LLVM IR translation.
  mlir::registerBuiltinDialectTranslation(r);
  mlir::registerLLVMDialectTranslation(r);
}

// Collects diagnostics as text instead of printing them.
struct DiagCapture {
  std::string text;
  mlir::ScopedDiagnosticHandler handler;
  explicit DiagCapture(mlir::MLIRContext* ctx)
      : handler(ctx, [this](mlir::Diagnostic& d) {
          std::string s;
          llvm::raw_string_ostream os(s);
          os << d.getLocation() << ": ";
          switch (d.getSeverity()) {
            case mlir::DiagnosticSeverity::Error: os << "error: "; break;
            case mlir::DiagnosticSeverity::Warning: os << "warning: "; break;
            case mlir::DiagnosticSeverity::Note: os << "note: "; break;
            case mlir::DiagnosticSeverity::Remark: os << "remark: "; break;
          }
          os << d.str();
          for (auto& n : d.getNotes()) os << "\n  note: " << n.str();
          os.flush();
          if (!text.empty()) text += "\n";
          text += s;
          return mlir::success();
        }) {}
};

std::unique_ptr<mlir::MLIRContext> make_context() {
  mlir::DialectRegistry registry;
  register_everything(registry);
  auto ctx = std::make_unique<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
  ctx->loadAllAvailableDialects();
  return ctx;
}

std::string join_ints(llvm::ArrayRef<int64_t> v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

// Stage 1 (tensors): tile every annotated matmul twice, vectorize the inner
// tile, fold to vector.contract. (The accumulator is then hoisted out of the
// k loop by hoist_subsets below.)
std::string tensor_strategy_script(const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>& tiles,
                                   const std::vector<std::string>& pack_b) {
  std::string s =
      "module attributes {transform.with_named_sequence} {\n"
      "  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n";
  for (size_t i = 0; i < tiles.size(); ++i) {
    std::string id = std::to_string(i);
    size_t n = tiles[i].first.size();
    std::string loops;
    for (size_t k = 0; k < n; ++k) loops += ", !transform.any_op";
    s += "    %op" + id + " = transform.structured.match attributes {shapeml.mm_id = " + id + " : i64} in %root : (!transform.any_op) -> !transform.any_op\n";
    s += "    %a" + id + ", %la" + id + ":" + std::to_string(n) + " = transform.structured.tile_using_for %op" + id + " tile_sizes [" +
         join_ints(tiles[i].first) + "] : (!transform.any_op) -> (!transform.any_op" + loops + ")\n";
    std::string tiled = "%a" + id;
    if (!pack_b[i].empty()) {
      // One padding value and one nofold flag per operand (A, B, C): only B
      // gets a copy; the tiles are full, so nothing is actually padded.
      std::string z = pack_b[i], dims;
      for (size_t k = 0; k < n; ++k) dims += (k ? ", " : "") + std::to_string(k);
      std::string zs = z + ", " + z + ", " + z, packs = "0, 1, 0";
      s += "    %p" + id + ", %pp" + id + ", %pc" + id + " = transform.structured.pad %a" + id + " {padding_values = [" + zs +
           "], padding_dimensions = [" + dims + "], pack_paddings = [" + packs + "], copy_back_op = \"none\"} : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)\n";
      tiled = "%p" + id;
    }
    // The two outermost tile loops (rows and columns, or batch and rows)
    // are parallel: each iteration writes its own block of the result; the
    // outliner splits their product across threads (outline_parallel.h).
    for (size_t d = 0; d < 2 && d + 1 < n; ++d)
      if (tiles[i].first[d] != 0)
        s += "    transform.annotate %la" + id + "#" + std::to_string(d) + " \"shapeml.parallel\" : !transform.any_op\n";
    s += "    %b" + id + ", %lb" + id + ":" + std::to_string(n) + " = transform.structured.tile_using_for " + tiled + " tile_sizes [" +
         join_ints(tiles[i].second) + "] : (!transform.any_op) -> (!transform.any_op" + loops + ")\n";
    s += "    transform.structured.vectorize %b" + id + " : !transform.any_op\n";
  }
  s +=
      "    %f = transform.structured.match ops{[\"func.func\"]} in %root : (!transform.any_op) -> !transform.any_op\n"
      "    transform.apply_patterns to %f {\n"
      "      transform.apply_patterns.vector.reduction_to_contract\n"
      "      transform.apply_patterns.vector.transfer_permutation_patterns\n"
      "      transform.apply_patterns.canonicalization\n"
      "    } : !transform.any_op\n"
      // Leading unit dims (a batched matmul's batch tile of 1) only once the
      // contraction has absorbed its operands' broadcasts and transposes: cast
      // away first, they leave an elementwise-form contraction that lowers to
      // scalar code (docs/design/cpu-codegen.md, "Batched matmuls").
      "    transform.apply_patterns to %f {\n"
      "      transform.apply_patterns.vector.cast_away_vector_leading_one_dim\n"
      "      transform.apply_patterns.canonicalization\n"
      "    } : !transform.any_op\n";
  s += "    transform.yield\n  }\n}\n";
  return s;
}

// Stage 2 (buffers): lower the vector ops of the micro-kernels.
const char* kVectorLoweringScript = R"(
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d"
      transform.apply_patterns.vector.lower_broadcast
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
)";

// Hoists loop-invariant subset reads/writes (extract/insert_slice and
// transfer_read/write pairs) out of every scf.for, innermost loops first: the
// matmul accumulator tile then lives in registers across the k loop. In C++
// rather than as `transform.loop.hoist_loop_invariant_subsets`, whose loop
// handle does not survive the canonicalization that folds one-trip loops.
void hoist_subsets(mlir::ModuleOp m) {
  std::vector<mlir::scf::ForOp> loops;
  m.walk([&](mlir::scf::ForOp f) { loops.push_back(f); });  // post-order: inner first
  mlir::IRRewriter rewriter(m.getContext());
  for (mlir::scf::ForOp f : loops) {
    rewriter.setInsertionPoint(f);
    mlir::hoistLoopInvariantSubsets(rewriter, mlir::cast<mlir::LoopLikeOpInterface>(f.getOperation()));
  }
}

mlir::LogicalResult run_script(mlir::ModuleOp payload, const std::string& script) {
  mlir::MLIRContext* ctx = payload.getContext();
  mlir::OwningOpRef<mlir::ModuleOp> tm = mlir::parseSourceString<mlir::ModuleOp>(script, mlir::ParserConfig(ctx), "shapeml-strategy");
  if (!tm) return mlir::failure();
  mlir::transform::TransformOpInterface entry = mlir::transform::detail::findTransformEntryPoint(tm.get(), {});
  if (!entry) return mlir::failure();
  mlir::transform::TransformOptions options;
  options.enableExpensiveChecks(false);  // the scripts are generated, not user input
  return mlir::transform::applyTransformNamedSequence(payload, entry, tm.get(), options);
}

// Polynomial approximations of the f32 transcendental functions (exp, log,
// tanh, erf, ...): inline arithmetic that LLVM vectorizes, where libm's
// expf/logf are scalar calls (5-10 ns per element) and erff/tanhf have no
// LLVM intrinsic. f64 keeps the intrinsics/libm. Accuracy is checked against
// float64 references by tests/lower (a few ulp).
mlir::LogicalResult approximate_math(mlir::ModuleOp m) {
  mlir::RewritePatternSet ps(m.getContext());
  mlir::MathPolynomialApproximationOptions options;
  options.enableAvx2 = false;  // keep rsqrt exact (1/sqrt)
  mlir::populateMathPolynomialApproximationPatterns(ps, options);
  return mlir::applyPatternsAndFoldGreedily(m, std::move(ps));
}

// Producer/consumer fusion of elementwise linalg.generic ops, restricted so
// that it never recomputes: the producer has one use and the consumer is
// all-parallel and reads the producer through a permutation (not a
// broadcast). The stock pass (linalg-fuse-elementwise-ops) would also fuse
// into reductions and matmuls (which it first generalizes through reshape
// propagation: a gelu would be evaluated K times per matmul output), and its
// pattern set rewrites unused `outs` operands to tensor.empty, undoing the
// in-place updates emit_mlir chose. So: the fusion primitive, in our pattern.
//
// A fused body is bounded (kMaxFusedBodyOps): each fusion clones the
// producer's body into the consumer's, so fusing a chain of n elementwise
// ops into one copied O(n^2) operations (a 2,000-let chain took 3.5 s here,
// 10,000 lets minutes). Past the bound the chain is split into kernels of
// at most that many payload ops, which keeps compile time linear and loses
// nothing measurable at run time (each kernel is still one pass over memory
// per few hundred ops).
constexpr size_t kMaxFusedBodyOps = 256;

size_t body_ops_upto(mlir::linalg::GenericOp op, size_t limit) {
  size_t n = 0;
  for (auto it = op.getBody()->begin(), e = op.getBody()->end(); it != e && n <= limit; ++it) ++n;
  return n;
}

// fuseElementwiseOps concatenates the producer's and the consumer's inputs,
// so fusing `(add v_k x)` chains reads x once per fused op: 256 operands all
// aliasing one tensor, which makes the tensor passes and one-shot
// bufferization's conflict analysis quadratic (5.5 s each for 5,000 lets).
// MLIR 19's canonicalization does not merge them here; this does: inputs
// with the same value and indexing map become one, their block arguments
// merged. Returns `op` unchanged when there is nothing to merge.
mlir::linalg::GenericOp dedupe_inputs(mlir::linalg::GenericOp op, mlir::PatternRewriter& rewriter) {
  unsigned n_in = op.getNumDpsInputs();
  llvm::SmallVector<mlir::AffineMap> maps = op.getIndexingMapsArray();
  llvm::SmallVector<unsigned> rep(n_in);
  llvm::SmallVector<mlir::Value> ins;
  llvm::SmallVector<mlir::AffineMap> new_maps;
  llvm::DenseMap<std::pair<mlir::Value, mlir::AffineMap>, unsigned> seen;
  for (unsigned i = 0; i < n_in; ++i) {
    auto key = std::make_pair(op.getDpsInputOperand(i)->get(), maps[i]);
    auto [it, fresh] = seen.try_emplace(key, i);
    rep[i] = it->second;
    if (fresh) {
      ins.push_back(key.first);
      new_maps.push_back(maps[i]);
    }
  }
  if (ins.size() == n_in) return op;
  for (unsigned i = n_in; i < maps.size(); ++i) new_maps.push_back(maps[i]);
  llvm::SmallVector<mlir::Value> outs(op.getDpsInits().begin(), op.getDpsInits().end());
  mlir::OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  auto fresh_op = rewriter.create<mlir::linalg::GenericOp>(op.getLoc(), op->getResultTypes(), ins, outs, new_maps, op.getIteratorTypesArray());
  for (const mlir::NamedAttribute& a : op->getDiscardableAttrs()) fresh_op->setAttr(a.getName(), a.getValue());
  rewriter.inlineRegionBefore(op.getRegion(), fresh_op.getRegion(), fresh_op.getRegion().begin());
  mlir::Block& body = fresh_op.getRegion().front();
  // Descending: erasing argument i shifts only later (already handled) ones;
  // a representative always comes first, so its index is stable.
  for (unsigned i = n_in; i-- > 0;)
    if (rep[i] != i) {
      body.getArgument(i).replaceAllUsesWith(body.getArgument(rep[i]));
      body.eraseArgument(i);
    }
  rewriter.replaceOp(op, fresh_op->getResults());
  return fresh_op;
}

struct FuseElementwise : mlir::OpRewritePattern<mlir::linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(mlir::linalg::GenericOp consumer, mlir::PatternRewriter& rewriter) const override {
    if (consumer.getNumReductionLoops() != 0) return mlir::failure();
    size_t consumer_ops = body_ops_upto(consumer, kMaxFusedBodyOps);
    if (consumer_ops > kMaxFusedBodyOps) return mlir::failure();
    for (mlir::OpOperand* operand : consumer.getDpsInputOperands()) {
      mlir::Operation* producer = operand->get().getDefiningOp();
      if (!producer || !producer->hasOneUse() || !mlir::isa<mlir::linalg::GenericOp>(producer)) continue;
      if (consumer_ops + body_ops_upto(mlir::cast<mlir::linalg::GenericOp>(producer), kMaxFusedBodyOps) > kMaxFusedBodyOps) continue;
      if (!consumer.getMatchingIndexingMap(operand).isPermutation()) continue;
      if (!mlir::linalg::areElementwiseOpsFusable(operand)) continue;
      // The producer computed in place (into a dying operand, see emit_mlir);
      // keep that when the fused op would write into a fresh tensor.empty.
      auto pg = mlir::cast<mlir::linalg::GenericOp>(producer);
      mlir::Value prod_init;
      if (pg.getNumDpsInits() == 1 && consumer.getNumDpsInits() == 1 && consumer.getMatchingIndexingMap(operand).isIdentity() &&
          pg.getMatchingIndexingMap(pg.getDpsInitOperand(0)).isIdentity() &&
          !pg.getDpsInitOperand(0)->get().getDefiningOp<mlir::tensor::EmptyOp>())
        prod_init = pg.getDpsInitOperand(0)->get();
      mlir::FailureOr<mlir::linalg::ElementwiseOpFusionResult> fused = mlir::linalg::fuseElementwiseOps(rewriter, operand);
      if (mlir::failed(fused)) continue;
      if (auto fop = mlir::dyn_cast<mlir::linalg::GenericOp>(fused->fusedOp); fop && prod_init && fop.getNumDpsInits() == 1) {
        mlir::OpOperand* init = fop.getDpsInitOperand(0);
        if (init->get().getDefiningOp<mlir::tensor::EmptyOp>() && init->get().getType() == prod_init.getType() &&
            fop.getMatchingIndexingMap(init).isIdentity() && !fop.payloadUsesValueFromOperand(init))
          rewriter.modifyOpInPlace(fop, [&] { init->set(prod_init); });
      }
      for (auto [orig, replacement] : fused->replacements)
        rewriter.replaceUsesWithIf(orig, replacement, [&](mlir::OpOperand& use) { return use.getOwner() != producer; });
      rewriter.eraseOp(consumer);
      if (auto fop = mlir::dyn_cast<mlir::linalg::GenericOp>(fused->fusedOp)) dedupe_inputs(fop, rewriter);
      return mlir::success();
    }
    return mlir::failure();
  }
};

mlir::LogicalResult fuse_elementwise(mlir::ModuleOp m) {
  mlir::RewritePatternSet ps(m.getContext());
  ps.add<FuseElementwise>(m.getContext());
  return mlir::applyPatternsAndFoldGreedily(m, std::move(ps));
}

// Tensor-level cleanups before any strategy. Empty-tensor elimination (the
// final op of each result writes into its output buffer) must run before
// CSE: CSE merges identical tensor.empty ops, and MLIR 19's elimination then
// points several results at one output buffer.
void add_tensor_passes(mlir::PassManager& pm) {
  pm.addPass(mlir::bufferization::createEmptyTensorEliminationPass());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

void add_bufferize_passes(mlir::PassManager& pm) {
  mlir::bufferization::OneShotBufferizationOptions bo;
  bo.bufferizeFunctionBoundaries = true;
  bo.setFunctionBoundaryTypeConversion(mlir::bufferization::LayoutMapOption::IdentityLayoutMap);
  // Copies as linalg.copy (lowered to loops) rather than memref.copy, whose
  // strided form would call `memrefCopy` from MLIR's runtime library.
  bo.memCpyFn = [](mlir::OpBuilder& b, mlir::Location loc, mlir::Value from, mlir::Value to) {
    b.create<mlir::linalg::CopyOp>(loc, from, to);
    return mlir::success();
  };
  // Canonicalize first: the hoisting leaves pass-through loop arguments that
  // would otherwise force out-of-place (copied) buffers.
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::bufferization::createOneShotBufferizePass(bo));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::createCanonicalizerPass());
}

// Linalg ops become scf.parallel over their parallel dimensions (scf.for
// over the reduced ones), which the outliner (outline_parallel.h) may hand
// to the runtime's threads before the rest of pass A lowers them to loops.
void add_lowering_passes_a0(mlir::PassManager& pm) {
  pm.addPass(mlir::bufferization::createDropEquivalentBufferResultsPass());
  mlir::bufferization::BufferDeallocationPipelineOptions dealloc;
  mlir::bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(mlir::createConvertLinalgToParallelLoopsPass());
  pm.addPass(mlir::createCanonicalizerPass());
}

void add_lowering_passes_a(mlir::PassManager& pm) {
  pm.addPass(mlir::createConvertVectorToSCFPass());
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  pm.addPass(mlir::createLowerAffinePass());
  pm.addPass(mlir::createConvertSCFToCFPass());
  pm.addPass(mlir::createCanonicalizerPass());
}

// What arith-to-llvm cannot lower, expanded: the rounding integer
// divisions. Not `arith-expand` as a whole: it also rewrites maximumf/minimumf
// into compares and selects, which LLVM cannot recognize as a max/min
// reduction (a row max ran as one serial chain; cpu-codegen.md),
// where arith-to-llvm gives llvm.maximum/minimum, the same IEEE 754-2019
// semantics (NaN propagates, -0 < +0), which x86 lowers to vmaxps with a NaN
// fix-up and the loop vectorizer reduces lane-wise. (bf16 never reaches here
// as a float type: emit_mlir stores it as i16.)
mlir::LogicalResult expand_integer_division(mlir::ModuleOp m) {
  mlir::RewritePatternSet ps(m.getContext());
  mlir::arith::populateCeilFloorDivExpandOpsPatterns(ps);
  return mlir::applyPatternsAndFoldGreedily(m, std::move(ps));
}

void add_lowering_passes_b(mlir::PassManager& pm) {
  pm.addPass(mlir::createConvertVectorToLLVMPass());
  pm.addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createConvertMathToLibmPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass());
  mlir::ConvertFuncToLLVMPassOptions fo;
  fo.useBarePtrCallConv = true;  // static shapes: one pointer per buffer
  pm.addPass(mlir::createConvertFuncToLLVMPass(fo));
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createUBToLLVMConversionPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  pm.addPass(mlir::createCanonicalizerPass());
}

// One trace span per MLIR pass (docs/design/observability.md); attached
// only while tracing is on. Passes on nested operations may run on MLIR's
// worker threads: each thread keeps its own stack of open spans.
class PassSpans : public mlir::PassInstrumentation {
 public:
  explicit PassSpans(std::string stage) : stage_(std::move(stage)) {}
  void runBeforePass(mlir::Pass* pass, mlir::Operation*) override {
    // The pass's command-line name (`one-shot-bufferize`), as mlir-opt spells it.
    llvm::StringRef arg = pass->getArgument();
    stack().push_back({(arg.empty() ? pass->getName() : arg).str(), obs::now_ns()});
  }
  void runAfterPass(mlir::Pass*, mlir::Operation*) override { pop(false); }
  void runAfterPassFailed(mlir::Pass*, mlir::Operation*) override { pop(true); }

 private:
  struct Open {
    std::string name;
    uint64_t begin;
  };
  static std::vector<Open>& stack() {
    thread_local std::vector<Open> s;
    return s;
  }
  void pop(bool failed) {
    auto& s = stack();
    if (s.empty()) return;
    Open o = std::move(s.back());
    s.pop_back();
    std::string args;
    obs::json_kv(args, "stage", stage_);
    if (failed) obs::json_kv(args, "failed", int64_t{1});
    obs::record_complete("mlir pass", std::move(o.name), o.begin, obs::now_ns() - o.begin, std::move(args));
  }
  std::string stage_;
};

// Runs a pass manager with one span for the stage and one per pass.
mlir::LogicalResult run_stage(mlir::PassManager& pm, mlir::ModuleOp mod, const std::string& stage) {
  obs::Span span("lower", stage);
  if (span) pm.addInstrumentation(std::make_unique<PassSpans>(stage));
  return pm.run(mod);
}

// Debugging aid: with SHAPEML_MLIR_DUMP=DIR set, the module is written to
// DIR/NN-STAGE.mlir after every stage.
void dump(mlir::ModuleOp mod, int& n, const std::string& stage) {
  const char* dir = std::getenv("SHAPEML_MLIR_DUMP");
  if (!dir || !*dir) return;
  std::string name = stage;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
  char num[8];
  std::snprintf(num, sizeof num, "%02d", n++);
  std::error_code ec;
  llvm::raw_fd_ostream os(std::string(dir) + "/" + num + "-" + name + ".mlir", ec);
  if (!ec) mod->print(os);
}

// Runs everything on `mod`. `strategy` false: matmuls stay plain loops.
bool lower(mlir::ModuleOp mod, bool strategy, int64_t parallel_min_iterations, std::string& stage) {
  mlir::MLIRContext* ctx = mod.getContext();
  int n = 0;
  dump(mod, n, "input");
  stage = "elementwise fusion";
  if (obs::Span span("lower", stage); mlir::failed(fuse_elementwise(mod))) return false;
  dump(mod, n, stage);
  {
    stage = "tensor passes";
    mlir::PassManager pm(ctx);
    add_tensor_passes(pm);
    if (mlir::failed(run_stage(pm, mod, stage))) return false;
    dump(mod, n, stage);
  }
  // Collect the annotated matmuls (emit_mlir chose their tiles).
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> tiles;
  std::vector<std::string> pack_b;
  mod.walk([&](mlir::linalg::LinalgOp op) {
    auto outer = op->getAttrOfType<mlir::DenseI64ArrayAttr>("shapeml.tile_outer");
    auto inner = op->getAttrOfType<mlir::DenseI64ArrayAttr>("shapeml.tile_inner");
    if (!strategy || !outer || !inner) return;
    op->setAttr("shapeml.mm_id", mlir::IntegerAttr::get(mlir::IntegerType::get(ctx, 64), static_cast<int64_t>(tiles.size())));
    tiles.push_back({std::vector<int64_t>(outer.asArrayRef()), std::vector<int64_t>(inner.asArrayRef())});
    std::string pk;  // the padding value of a packed B tile, e.g. "0.0 : f32"
    if (op->hasAttr("shapeml.pack_b") && op->getNumOperands() == 3) {
      mlir::Type et = mlir::getElementTypeOrSelf(op->getOperand(1).getType());
      std::string ts;
      llvm::raw_string_ostream os(ts);
      et.print(os);
      if (mlir::isa<mlir::FloatType>(et)) pk = "0.0 : " + os.str();
      else if (mlir::isa<mlir::IntegerType>(et)) pk = "0 : " + os.str();
    }
    pack_b.push_back(pk);
  });
  if (!tiles.empty()) {
    stage = "matmul strategy (tensor)";
    if (obs::Span span("lower", stage); mlir::failed(run_script(mod, tensor_strategy_script(tiles, pack_b)))) return false;
    hoist_subsets(mod);
    dump(mod, n, stage);
  }
  {
    stage = "bufferization";
    mlir::PassManager pm(ctx);
    add_bufferize_passes(pm);
    if (mlir::failed(run_stage(pm, mod, stage))) return false;
    dump(mod, n, stage);
  }
  if (!tiles.empty()) {
    stage = "matmul strategy (vector lowering)";
    if (obs::Span span("lower", stage); mlir::failed(run_script(mod, kVectorLoweringScript))) return false;
    dump(mod, n, stage);
  }
  {
    stage = "lowering to parallel loops";
    mlir::PassManager pm(ctx);
    add_lowering_passes_a0(pm);
    if (mlir::failed(run_stage(pm, mod, stage))) return false;
    dump(mod, n, stage);
  }
  if (parallel_min_iterations > 0) {
    stage = "parallel loop outlining";
    obs::Span span("lower", stage);
    const int outlined = outline_parallel_loops(mod, parallel_min_iterations);
    if (span) span.arg("loops", static_cast<int64_t>(outlined));
    if (mlir::failed(mlir::verify(mod))) return false;
    dump(mod, n, stage);
  }
  {
    stage = "lowering to loops";
    mlir::PassManager pm(ctx);
    add_lowering_passes_a(pm);
    if (mlir::failed(run_stage(pm, mod, stage))) return false;
    dump(mod, n, stage);
  }
  stage = "math approximation";
  if (obs::Span span("lower", stage); mlir::failed(approximate_math(mod))) return false;
  dump(mod, n, stage);
  stage = "integer division expansion";
  if (obs::Span span("lower", stage); mlir::failed(expand_integer_division(mod))) return false;
  {
    stage = "conversion to the LLVM dialect";
    mlir::PassManager pm(ctx);
    add_lowering_passes_b(pm);
    if (mlir::failed(run_stage(pm, mod, stage))) return false;
    dump(mod, n, stage);
  }
  return true;
}

}  // namespace

PipelineResult mlir_to_llvm(const std::string& mlir_text, llvm::LLVMContext& lctx, const PipelineOptions& opts, bool keep_lowered_mlir) {
  PipelineResult res;
  auto ctx = make_context();
  DiagCapture diags(ctx.get());
  bool strategy = opts.apply_matmul_strategy;
  for (int attempt = 0; attempt < 2; ++attempt) {
    diags.text.clear();
    mlir::OwningOpRef<mlir::ModuleOp> mod = mlir::parseSourceString<mlir::ModuleOp>(mlir_text, mlir::ParserConfig(ctx.get()), "shapeml");
    if (!mod) {
      res.error = "the emitted MLIR does not parse (internal error):\n" + diags.text;
      return res;
    }
    std::string stage;
    if (!lower(mod.get(), strategy, opts.parallel_min_iterations, stage)) {
      if (strategy) {
        // A strategy that fails must not fail the compilation: plain loops.
        res.notes.push_back("matmul strategy failed in " + stage + "; falling back to plain loops: " + diags.text);
        strategy = false;
        continue;
      }
      res.error = "MLIR lowering failed in " + stage + " (internal error):\n" + diags.text;
      return res;
    }
    if (keep_lowered_mlir) {
      llvm::raw_string_ostream os(res.lowered_mlir);
      mod->print(os);
    }
    {
      obs::Span span("lower", "translate to llvm ir");
      res.module = mlir::translateModuleToLLVMIR(mod.get(), lctx, "shapeml");
    }
    if (!res.module) {
      res.error = "translation to LLVM IR failed (internal error):\n" + diags.text;
      return res;
    }
    return res;
  }
  res.error = "MLIR lowering failed (internal error)";
  return res;
}

std::string verify_mlir(const std::string& mlir_text) {
  auto ctx = make_context();
  DiagCapture diags(ctx.get());
  mlir::OwningOpRef<mlir::ModuleOp> mod = mlir::parseSourceString<mlir::ModuleOp>(mlir_text, mlir::ParserConfig(ctx.get()), "shapeml");
  if (!mod) return diags.text.empty() ? "parse error" : diags.text;
  if (mlir::failed(mlir::verify(mod.get()))) return diags.text.empty() ? "verification failed" : diags.text;
  return "";
}

}  // namespace shapeml::lower::cpu::detail
