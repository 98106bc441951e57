// The front end's entry point: source text -> typed IR or diagnostics.
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
  unsigned obligation_timeout_ms = 2000;  // spec §6: unknown within this is E0501
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
  bool ok() const { return diags.error_count() == 0 && module.has_value(); }
};

/// Parses and checks one source buffer. Never throws.
CheckResult check_source(std::string name, std::string text, const CheckOptions& opts = {});

/// Re-checks a typed module, as after every pass (spec §7). A non-empty result
/// means the pass broke the program: those are internal errors (E0900).
/// With `stats`, the verifier's solver statistics are added to it.
std::vector<syntax::Diagnostic> verify_module(const ir::Module& m, const CheckOptions& opts = {}, smt::SolverStats* stats = nullptr);

}  // namespace shapeml::check
