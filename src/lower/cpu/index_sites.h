// The run-time index checks of an entry (docs/design/index-checks.md):
// which operations read indices, in the order the generated code evaluates
// them; the manifest, the error record and the emitter number them alike.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace shapeml::lower::cpu {

/// One operation that reads run-time indices (gather, take_along_axis) in
/// an entry, calls inlined, in the order the emitted code evaluates them:
/// site k (1-based) of the manifest's `(index-checks ...)` and of the error
/// record (docs/design/index-checks.md). Empty: the entry has no error record.
struct IndexSite {
  std::string op;        // "gather"
  std::string location;  // "model.sml:12:15" (the module's source name)
  size_t rank = 0;       // rank of the index tensor
  std::string operand;   // the index operand's name when it is a named value, else ""
};
std::vector<IndexSite> index_sites(const ir::Module& m, const std::string& entry);

}  // namespace shapeml::lower::cpu
