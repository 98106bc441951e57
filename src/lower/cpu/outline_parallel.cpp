#include "lower/cpu/outline_parallel.h"

#include <llvm/ADT/SetVector.h>
#include <mlir/Dialect/Arith/IR/Arith.h>
#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/Dialect/MemRef/IR/MemRef.h>
#include <mlir/Dialect/SCF/IR/SCF.h>
#include <mlir/Dialect/Utils/StaticValueUtils.h>
#include <mlir/IR/Builders.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/IRMapping.h>
#include <mlir/Interfaces/SideEffectInterfaces.h>
#include <mlir/Transforms/RegionUtils.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace shapeml::lower::cpu::detail {
namespace {

using namespace mlir;

std::optional<int64_t> trip_count(Value lb, Value ub, Value step) {
  auto l = getConstantIntValue(lb), u = getConstantIntValue(ub), s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0) return std::nullopt;
  return *u <= *l ? 0 : (*u - *l + *s - 1) / *s;
}

int64_t saturating_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

// Innermost iterations under `op`: the largest product of trip counts along
// any chain of nested loops (a loop with a bound only known at run time
// counts as one iteration: it does not earn parallelism on its own).
int64_t nest_iterations(Operation* op) {
  int64_t inner = 1;
  for (Region& r : op->getRegions())
    for (Block& b : r)
      for (Operation& o : b) inner = std::max(inner, nest_iterations(&o));
  int64_t trips = 1;
  if (auto p = dyn_cast<scf::ParallelOp>(op)) {
    for (size_t d = 0; d < p.getNumLoops(); ++d)
      trips = saturating_mul(trips, trip_count(p.getLowerBound()[d], p.getUpperBound()[d], p.getStep()[d]).value_or(1));
  } else if (auto f = dyn_cast<scf::ForOp>(op)) {
    trips = trip_count(f.getLowerBound(), f.getUpperBound(), f.getStep()).value_or(1);
  }
  return saturating_mul(trips, inner);
}

// A heap buffer a loop iteration allocates and frees again (a matmul's
// packed tile): small enough for a worker's stack, and freed in the block
// that allocates it, so that one buffer at the body's entry serves every
// iteration.
constexpr int64_t kMaxStackBytes = 256 << 10;

bool iteration_local(memref::AllocOp a) {
  MemRefType t = a.getType();
  if (!t.hasStaticShape() || !t.getLayout().isIdentity() || !t.getElementType().isIntOrIndexOrFloat()) return false;
  const int64_t bits = t.getElementType().isIndex() ? 64 : t.getElementTypeBitWidth();
  if (saturating_mul(t.getNumElements(), std::max<int64_t>(bits / 8, 1)) > kMaxStackBytes) return false;
  bool freed = false;
  for (Operation* u : a->getUsers())
    if (isa<memref::DeallocOp>(u)) {
      if (u->getBlock() != a->getBlock() || freed) return false;
      freed = true;
    }
  return freed;
}

// A body a worker thread may run: no heap allocation beyond iteration-local
// buffers (the temporaries of a call belong to the calling thread,
// temp_memory.h) and no calls.
bool body_is_parallel_safe(Operation* loop) {
  bool ok = true;
  loop->walk([&](Operation* o) {
    if (auto a = dyn_cast<memref::AllocOp>(o)) ok = iteration_local(a);
    else if (auto d = dyn_cast<memref::DeallocOp>(o)) ok = d.getMemref().getDefiningOp<memref::AllocOp>() != nullptr;
    else if (isa<memref::ReallocOp, func::CallOp, func::CallIndirectOp>(o)) ok = false;
    return ok ? WalkResult::advance() : WalkResult::interrupt();
  });
  return ok;
}

// The iteration-local buffers of an outlined body on its stack, allocated
// once at its entry.
void buffers_to_stack(func::FuncOp body) {
  std::vector<memref::AllocOp> allocs;
  body.walk([&](memref::AllocOp a) { allocs.push_back(a); });
  OpBuilder b(body.getContext());
  b.setInsertionPointToStart(&body.front());
  for (memref::AllocOp a : allocs) {
    auto stack = b.create<memref::AllocaOp>(a.getLoc(), a.getType(), a.getAlignmentAttr());
    for (Operation* u : llvm::make_early_inc_range(a->getUsers()))
      if (isa<memref::DeallocOp>(u)) u->erase();
    a.replaceAllUsesWith(stack.getResult());
    a.erase();
  }
}

// A memref a function may receive as a bare pointer.
bool passable_memref(MemRefType t) { return t.hasStaticShape() && t.getLayout().isIdentity(); }

// The values the outlined function receives, and the ops it recomputes
// (constants, views of passable memrefs, globals), in definition order.
struct Captures {
  llvm::SetVector<Value> args;
  llvm::SetVector<Operation*> rematerialized;
};

bool capture(Value v, Captures& c) {
  if (c.args.contains(v)) return true;
  Operation* def = v.getDefiningOp();
  if (def && c.rematerialized.contains(def)) return true;
  auto mt = dyn_cast<MemRefType>(v.getType());
  if (def && isa<arith::ConstantOp, memref::GetGlobalOp>(def)) {
    c.rematerialized.insert(def);
    return true;
  }
  if (mt && def && isa<memref::SubViewOp, memref::ReinterpretCastOp, memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp,
                       memref::TransposeOp>(def) && isMemoryEffectFree(def)) {
    for (Value operand : def->getOperands())
      if (!capture(operand, c)) return false;
    c.rematerialized.insert(def);  // after its operands
    return true;
  }
  if (mt) {
    if (!passable_memref(mt)) return false;
    c.args.insert(v);
    return true;
  }
  if (v.getType().isIntOrIndexOrFloat()) {
    c.args.insert(v);
    return true;
  }
  return false;
}

class Outliner {
 public:
  Outliner(ModuleOp mod, int64_t min_iterations) : mod_(mod), min_(min_iterations) {}

  int run() {
    std::vector<std::pair<func::FuncOp, Operation*>> loops;
    for (auto fn : mod_.getOps<func::FuncOp>()) {
      if (fn.isExternal() || fn.getSymName().starts_with(kParallelBodyPrefix)) continue;
      fn.walk<WalkOrder::PreOrder>([&](Operation* op) {
        if (!is_candidate(op)) return WalkResult::advance();
        loops.push_back({fn, op});
        return WalkResult::skip();  // outermost only
      });
    }
    int n = 0;
    for (auto& [fn, op] : loops) n += outline(fn, op) ? 1 : 0;
    return n;
  }

 private:
  bool is_candidate(Operation* op) const {
    if (auto p = dyn_cast<scf::ParallelOp>(op)) return p.getNumResults() == 0;
    if (auto f = dyn_cast<scf::ForOp>(op)) return f->hasAttr("shapeml.parallel") && f.getNumResults() == 0;
    return false;
  }

  // How many leading dimensions of `p` are flattened into the one range the
  // threads split: enough for `kChunks` ranges, but not the innermost one
  // (it stays a loop the vectorizer sees) unless every other one is a single
  // iteration. 0: the loop does not qualify.
  static constexpr int64_t kChunks = 64;
  static size_t flattened_dims(scf::ParallelOp p, int64_t& flat_trips) {
    const size_t n = p.getNumLoops();
    std::vector<int64_t> trips;
    for (size_t d = 0; d < n; ++d) {
      auto t = trip_count(p.getLowerBound()[d], p.getUpperBound()[d], p.getStep()[d]);
      trips.push_back(t ? *t : -1);
    }
    int64_t prod = 1;
    size_t dims = 0;
    while (dims < n && trips[dims] > 0 && (dims + 1 < n || prod == 1)) {
      prod = saturating_mul(prod, trips[dims]);
      ++dims;
      if (prod >= kChunks) break;
    }
    flat_trips = prod;
    return prod >= 2 ? dims : 0;
  }

  bool outline(func::FuncOp fn, Operation* loop) {
    auto par = dyn_cast<scf::ParallelOp>(loop);
    int64_t trips = 0;
    size_t flat = 1;
    if (par) {
      flat = flattened_dims(par, trips);
      if (flat == 0) return false;
    } else {
      auto f = cast<scf::ForOp>(loop);
      trips = trip_count(f.getLowerBound(), f.getUpperBound(), f.getStep()).value_or(0);
      if (scf::ForOp in = marked_inner(f)) trips = saturating_mul(trips, trip_count(in.getLowerBound(), in.getUpperBound(), in.getStep()).value_or(0));
      if (trips < 2) return false;
    }
    if (nest_iterations(loop) < min_ || !body_is_parallel_safe(loop)) return false;
    Captures c;
    llvm::SetVector<Value> used;
    getUsedValuesDefinedAbove(loop->getRegions(), used);
    for (Value v : loop->getOperands()) used.insert(v);
    for (Value v : used)
      if (!capture(v, c)) return false;

    // func.func private @PREFIX<k>_FN(%begin: index, %end: index, args...)
    OpBuilder b(mod_.getContext());
    b.setInsertionPointAfter(fn);
    Location loc = loop->getLoc();
    std::vector<Type> types = {b.getIndexType(), b.getIndexType()};
    for (Value v : c.args) types.push_back(v.getType());
    const std::string name = std::string(kParallelBodyPrefix) + std::to_string(counter_++) + "_" + fn.getSymName().str();
    auto body_fn = b.create<func::FuncOp>(loc, name, b.getFunctionType(types, {}));
    body_fn.setPrivate();
    Block* entry = body_fn.addEntryBlock();
    IRMapping map;
    for (size_t i = 0; i < c.args.size(); ++i) map.map(c.args[i], entry->getArgument(i + 2));
    b.setInsertionPointToStart(entry);
    for (Operation* o : c.rematerialized) b.clone(*o, map);
    Value begin = entry->getArgument(0), end = entry->getArgument(1);
    if (par) {
      emit_flattened(b, loc, par, flat, begin, end, map);
    } else {
      // scf.for: iterations [begin, end) are lb + begin step ..< lb + end step.
      auto f = cast<scf::ForOp>(loop);
      if (scf::ForOp in = marked_inner(f)) {
        emit_tile_pairs(b, loc, f, in, begin, end, map);
      } else {
        Value lb = map.lookupOrDefault(f.getLowerBound()), step = map.lookupOrDefault(f.getStep());
        Value from = b.create<arith::AddIOp>(loc, lb, b.create<arith::MulIOp>(loc, begin, step));
        Value to = b.create<arith::AddIOp>(loc, lb, b.create<arith::MulIOp>(loc, end, step));
        Operation* copy = b.clone(*loop, map);
        copy->removeAttr("shapeml.parallel");
        copy->setOperand(0, from);
        copy->setOperand(1, to);
      }
    }
    b.setInsertionPointToEnd(entry);
    b.create<func::ReturnOp>(loc);
    buffers_to_stack(body_fn);

    // The loop itself becomes one call over the whole range.
    OpBuilder at(loop);
    std::vector<Value> args = {at.create<arith::ConstantIndexOp>(loc, 0), at.create<arith::ConstantIndexOp>(loc, trips)};
    for (Value v : c.args) args.push_back(v);
    at.create<func::CallOp>(loc, body_fn, args);
    loop->erase();
    return true;
  }

  // The marked loop directly inside marked loop `f` (the matmul's column
  // tiles inside its row tiles), when the two are perfectly nested with
  // static bounds: their product is then split, not the rows alone (512
  // rows are 8 row tiles: too few for 16 threads).
  static scf::ForOp marked_inner(scf::ForOp f) {
    Block* body = f.getBody();
    if (body->getOperations().size() != 2) return {};
    auto in = dyn_cast<scf::ForOp>(body->front());
    if (!in || !in->hasAttr("shapeml.parallel") || in.getNumResults() != 0) return {};
    auto t = trip_count(in.getLowerBound(), in.getUpperBound(), in.getStep());
    return t && *t >= 1 ? in : scf::ForOp{};
  }

  // scf.for %i = begin to end step 1, with `b` inside it, before its yield.
  static scf::ForOp range_loop(OpBuilder& b, Location loc, Value begin, Value end) {
    auto loop = b.create<scf::ForOp>(loc, begin, end, b.create<arith::ConstantIndexOp>(loc, 1));
    if (loop.getBody()->empty() || !isa<scf::YieldOp>(loop.getBody()->back())) {
      b.setInsertionPointToEnd(loop.getBody());
      b.create<scf::YieldOp>(loc);
    }
    b.setInsertionPoint(&loop.getBody()->back());
    return loop;
  }

  // scf.for %p = begin to end over the (row tile, column tile) pairs, row
  // major: both induction variables from %p, the inner loop's body.
  static void emit_tile_pairs(OpBuilder& b, Location loc, scf::ForOp f, scf::ForOp in, Value begin, Value end, IRMapping& map) {
    const int64_t cols = *trip_count(in.getLowerBound(), in.getUpperBound(), in.getStep());
    scf::ForOp pairs = range_loop(b, loc, begin, end);
    auto tc = b.create<arith::ConstantIndexOp>(loc, cols);
    Value row = b.create<arith::DivUIOp>(loc, pairs.getInductionVar(), tc), col = b.create<arith::RemUIOp>(loc, pairs.getInductionVar(), tc);
    auto iv = [&](scf::ForOp l, Value i) {
      return b.create<arith::AddIOp>(loc, map.lookupOrDefault(l.getLowerBound()), b.create<arith::MulIOp>(loc, i, map.lookupOrDefault(l.getStep())));
    };
    map.map(f.getInductionVar(), iv(f, row));
    map.map(in.getInductionVar(), iv(in, col));
    for (Operation& o : in.getBody()->without_terminator()) b.clone(o, map);
  }

  // scf.for %f = begin to end: the first `flat` induction variables from %f
  // (row-major), the other dimensions as an scf.parallel inside, the body.
  static void emit_flattened(OpBuilder& b, Location loc, scf::ParallelOp p, size_t flat, Value begin, Value end, IRMapping& map) {
    scf::ForOp outer = range_loop(b, loc, begin, end);
    Value rest = outer.getInductionVar();
    for (size_t k = flat; k-- > 0;) {
      const int64_t t = *trip_count(p.getLowerBound()[k], p.getUpperBound()[k], p.getStep()[k]);
      Value i = rest;
      if (k > 0) {
        auto tc = b.create<arith::ConstantIndexOp>(loc, t);
        i = b.create<arith::RemUIOp>(loc, rest, tc);
        rest = b.create<arith::DivUIOp>(loc, rest, tc);
      }
      Value lb = map.lookupOrDefault(p.getLowerBound()[k]), step = map.lookupOrDefault(p.getStep()[k]);
      map.map(p.getInductionVars()[k], b.create<arith::AddIOp>(loc, lb, b.create<arith::MulIOp>(loc, i, step)));
    }
    const size_t n = p.getNumLoops();
    if (flat < n) {
      std::vector<Value> lbs, ubs, steps;
      for (size_t d = flat; d < n; ++d) {
        lbs.push_back(map.lookupOrDefault(p.getLowerBound()[d]));
        ubs.push_back(map.lookupOrDefault(p.getUpperBound()[d]));
        steps.push_back(map.lookupOrDefault(p.getStep()[d]));
      }
      auto inner = b.create<scf::ParallelOp>(loc, lbs, ubs, steps);
      for (size_t d = flat; d < n; ++d) map.map(p.getInductionVars()[d], inner.getInductionVars()[d - flat]);
      if (inner.getBody()->empty() || !isa<scf::ReduceOp>(inner.getBody()->back())) {
        b.setInsertionPointToEnd(inner.getBody());
        b.create<scf::ReduceOp>(loc);
      }
      b.setInsertionPoint(&inner.getBody()->back());
    }
    for (Operation& o : p.getBody()->without_terminator()) b.clone(o, map);
  }

  ModuleOp mod_;
  int64_t min_;
  int counter_ = 0;
};

}  // namespace

int outline_parallel_loops(mlir::ModuleOp mod, int64_t min_iterations) { return Outliner(mod, min_iterations).run(); }

}  // namespace shapeml::lower::cpu::detail
