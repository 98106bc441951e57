// Splits a specialization's LLVM module into partitions that LLVM optimizes
// and emits on separate threads (docs/design/cpu-codegen.md, "Parallel code
// generation"). LLVM IR only: no MLIR headers.
#pragma once
#include <llvm/ADT/SmallString.h>

#include <string>
#include <vector>

namespace llvm {
class Module;
}

namespace shapeml::lower::cpu {

/// Partitions `m` into at most `max_parts` modules, each serialized as
/// bitcode (so that a worker thread parses it into its own LLVMContext).
///
/// Functions that call each other directly stay together (the inliner keeps
/// seeing what it would see in one module), except calls to `noinline`
/// functions (the outlined parallel tasks, reached only through a pointer);
/// the groups are balanced by instruction count. Local constants are copied
/// into every partition (their contents stay foldable); every other global
/// lives in one partition. A local symbol referenced from another partition
/// is made external, renamed to start with `prefix` (the specialization's
/// unique symbol, so that partitions of different specializations never
/// clash in one JIT), and not assumed DSO-local elsewhere.
///
/// Returns an empty vector when splitting buys nothing (fewer than two
/// groups, `max_parts` < 2) or the module has a construct the splitter does
/// not handle (aliases, ifuncs, appending globals such as llvm.used): the
/// caller then compiles `m` whole, unchanged. When partitions are returned,
/// `m` carries the renames and is not needed any more.
std::vector<llvm::SmallString<0>> split_module_for_codegen(llvm::Module& m, unsigned max_parts, const std::string& prefix);

}  // namespace shapeml::lower::cpu
