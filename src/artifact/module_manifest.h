// The artifact stage's text: what a module says about itself. A module (a
// JIT provider or an AOT shared object) carries one manifest, the
// S-expression the runtime reads (runtime/manifest.h; format:
// common/compiled_entry.h), and, for each device specialization, its
// dispatch plan's text (plan/plan.h). Both are written here, once; the
// object writer (lower/cpu/cpu_backend.h) only embeds the bytes it is given
// as symbols, and knows neither format. No LLVM, no CUDA.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace shapeml::artifact {

/// One entry point at concrete values of its shape variables.
struct Specialization {
  std::string entry;
  std::map<std::string, int64_t> bindings;
  /// A device entry's dispatch plan (src/plan/plan.h) as text: the
  /// specialization is then `const char* SYMBOL(void)` returning it, marked
  /// `(kind gpu-plan)` in the manifest, instead of CPU code.
  std::string gpu_plan = {};
  /// A device entry: let calls replay its plan as a CUDA graph by default
  /// where that is safe (lower::gpu::PlanOptions::graph; shapemlc --gpu-graph).
  bool gpu_graph = true;
};

/// The symbol of specialization `index` of `entry` in a module
/// (`shapeml_<entry>_<index>`, the entry's characters outside
/// [A-Za-z0-9_] as `_`).
std::string specialization_symbol(const std::string& entry, size_t index);

/// The manifest text for `specs` compiled for `target` (the name the
/// manifest records, e.g. "znver3"); `symbols` receives the symbol of each
/// specialization, in order. `every_function`: list every function that can
/// be an entry point (a JIT module, whose specializations come later), not
/// only those with a specialization.
std::string manifest_text(const ir::Module& m, const std::vector<Specialization>& specs, const std::string& target,
                          std::vector<std::string>* symbols = nullptr, bool every_function = false);

}  // namespace shapeml::artifact
