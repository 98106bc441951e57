// The checker's stages (elaborate, verify) and what they produce. The
// pipeline that runs them is src/driver/frontend.h.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "smt/shape_solver.h"
#include "syntax/ast.h"
#include "syntax/diagnostic.h"
#include "syntax/source.h"

namespace shapeml::check {

struct CheckOptions {
  /// Z3 budget per obligation in ms (spec §6: unknown within it is E0501);
  /// 0 means the default, 2000, as in the C ABI's context options.
  unsigned obligation_timeout_ms = 2000;
  bool record_obligations = false;        // keep every obligation as SMT-LIB (`--dump-obligations`)
};

/// One discharged obligation, as `--dump-obligations` writes it.
struct ObligationRecord {
  std::string function;
  std::string code;  // the diagnostic it would raise
  std::string goal;  // the proposition, in shapeml syntax
  uint32_t line = 0;
  smt::Outcome outcome;
  std::string smtlib;
};

struct CheckStats {
  /// All solver work of the check: the elaborator's and the IR verifier's.
  smt::SolverStats solver;
  /// The verifier's part of `solver` (it re-discharges every obligation).
  smt::SolverStats verify_solver;
  /// check_seconds includes verify_seconds.
  double parse_seconds = 0, check_seconds = 0, verify_seconds = 0;
  size_t functions = 0, bindings = 0;
};

struct CheckResult {
  std::shared_ptr<const syntax::SourceFile> source;
  syntax::DiagnosticSink diags;
  std::optional<syntax::ModuleAst> ast;
  std::optional<ir::Module> module;  // set only when there is no error
  std::vector<ObligationRecord> obligations;
  CheckStats stats;
  /// The module ID of this source (obs::module_id_for; also `module->id`).
  std::string module_id;
  bool ok() const { return diags.error_count() == 0 && module.has_value(); }
};

/// The elaborate stage: checks `ast` and, when it has no error, sets
/// `r.module` to its typed IR; diagnostics and statistics go to `r`.
/// Functions that contain one of `lexical_error_offsets` are skipped (their
/// literals did not read). May throw on an internal error; the driver
/// (src/driver/frontend.h) turns that into E0900.
void elaborate(const syntax::ModuleAst& ast, const CheckOptions& opts, std::vector<uint32_t> lexical_error_offsets, CheckResult& r);

/// Re-checks a typed module, as after every pass (spec §7). A non-empty result
/// means the pass broke the program: those are internal errors (E0900).
/// With `stats`, the verifier's solver statistics are added to it.
std::vector<syntax::Diagnostic> verify_module(const ir::Module& m, const CheckOptions& opts = {}, smt::SolverStats* stats = nullptr);

}  // namespace shapeml::check
