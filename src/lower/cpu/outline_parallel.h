// Parallel loops of the CPU back end (docs/design/cpu-threads.md): the
// outermost parallel loop of each loop nest with enough work becomes its own
// function over a range of the loop's first dimension, called once over the
// whole range, and the call is marked so that the LLVM stage
// (parallel_calls.h) hands it to the runtime's parallel-for.
#pragma once
#include <cstdint>
#include <string>

namespace mlir {
class ModuleOp;
}

namespace shapeml::lower::cpu::detail {

/// The name an outlined loop body gets: PREFIX + counter + "_" + the
/// function it came from. Its signature is (begin: index, end: index,
/// captured values...): it runs iterations [begin, end) of the loop's first
/// dimension, and the whole of every other one.
inline constexpr const char* kParallelBodyPrefix = "__shapeml_par";

/// Outlines the outermost `scf.parallel` loops (no reductions) whose nest
/// runs at least `min_iterations` innermost iterations and whose body
/// allocates nothing on the heap; also `scf.for` loops marked
/// `shapeml.parallel` (the matmul strategy's row-tile loops). Returns how
/// many loops were outlined.
int outline_parallel_loops(mlir::ModuleOp mod, int64_t min_iterations);

}  // namespace shapeml::lower::cpu::detail
