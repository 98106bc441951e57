// The front half of the pipeline (docs/design/stages.md), written down once:
//
//   parse      source text -> S-expressions -> AST        (src/syntax)
//   elaborate  AST -> typed IR, obligations discharged     (src/check, src/smt)
//   differentiate  the bodies of `(grad NAME OF)`          (src/transform/reverse_mode)
//   verify     the typed IR re-checked on its own          (src/check/verify)
//
// The back half (lower, artifact) is src/driver/pipeline.h. The C ABI and
// shapemlc reach the compiler only through these two headers. This half has
// no LLVM or MLIR in it, so the fuzz target and the front-end tests link it
// alone.
#pragma once
#include <string>

#include "check/checker.h"

namespace shapeml::driver {

/// The stages of the front half, in order.
enum class FrontendStage { Parse, Elaborate, Verify };

/// Runs parse -> elaborate -> verify on one source buffer, stopping after
/// `stop_after` (`shapemlc --emit=ast` stops after Parse). The result holds
/// every diagnostic; `module` is set only when Verify ran without error.
/// Never throws: an internal error is diagnostic E0900.
check::CheckResult check_source(std::string name, std::string text, const check::CheckOptions& opts = {},
                                FrontendStage stop_after = FrontendStage::Verify);

}  // namespace shapeml::driver
