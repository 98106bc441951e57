// The LLVM half of the CPU back end's parallel loops (docs/design/cpu-
// threads.md): each call of an outlined loop body (outline_parallel.h) over
// [0, n) becomes a call of the specialization's parallel-for hook with a
// task (closure, begin, end) that unpacks the body's arguments from a
// closure on the caller's stack.
#pragma once
#include <string>

namespace llvm {
class GlobalVariable;
class Module;
}

namespace shapeml::lower::cpu {

/// An exported, zero-initialized, 8-byte aligned table of `slots` pointers
/// named `name`: a specialization's hook table (common/compiled_entry.h),
/// filled by the runtime when it resolves the symbol.
llvm::GlobalVariable* add_hook_table(llvm::Module& mod, const std::string& name, unsigned slots);

/// Adds the exported, zero-initialized one-entry table `SYMBOL_parallel_hooks`
/// ({parallel_for}: `void (int64_t n, void (*task)(void*, int64_t, int64_t),
/// void* closure)`; common/compiled_entry.h) and routes every outlined loop
/// through it; while the table is empty the task runs [0, n) itself.
/// Returns how many calls were routed.
int route_parallel_loops(llvm::Module& mod, const std::string& symbol);

}  // namespace shapeml::lower::cpu
