// Discharging shape obligations (spec §6). Normalized polynomials are
// compared first, then small valuations are tried; only what remains reaches
// Z3: one context per ShapeSolver, a fresh solver per query, so an answer
// never depends on the obligations asked before it and callers need no retry
// (docs/design/obligations.md). Z3 is hidden behind this interface: no other
// file includes z3++.h.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "types/tensor_type.h"

namespace shapeml::smt {

struct Outcome {
  enum class Kind { Proved, Refuted, Unknown } kind = Kind::Unknown;
  /// Refuted: values of the function's shape variables (declaration order)
  /// that satisfy the hypotheses and break the goal.
  std::vector<std::pair<std::string, int64_t>> counterexample;
  std::string reason;  // Unknown: why (timeout, incomplete, ...)
  /// Refuted: the whole model as text, also when some value does not fit
  /// in 64 bits (then `counterexample` lacks that variable).
  std::string model_text;
  bool decided_syntactically = false;
};

struct SolverStats {
  size_t obligations = 0;       // every prove() call
  size_t syntactic = 0;         // decided by normalization alone
  size_t z3_queries = 0;
  double z3_seconds = 0;
  double max_query_seconds = 0;
  SolverStats& operator+=(const SolverStats& o) {
    obligations += o.obligations;
    syntactic += o.syntactic;
    z3_queries += o.z3_queries;
    z3_seconds += o.z3_seconds;
    max_query_seconds = max_query_seconds > o.max_query_seconds ? max_query_seconds : o.max_query_seconds;
    return *this;
  }
};

class ShapeSolver {
 public:
  /// `timeout_ms` bounds each Z3 query (default 2 s, spec §6).
  explicit ShapeSolver(unsigned timeout_ms = 2000);
  ~ShapeSolver();
  ShapeSolver(const ShapeSolver&) = delete;
  ShapeSolver& operator=(const ShapeSolver&) = delete;

  /// Hypotheses for the following obligations: every dim >= 1 plus `where`.
  void begin_function(const std::vector<std::string>& dims, const std::vector<types::ShapeConstraint>& where);
  void end_function();

  /// Whether the current hypotheses have a model (E0307 when they do not).
  Outcome hypotheses_satisfiable();
  Outcome prove(const types::ShapeConstraint& goal);

  /// The obligation as a self-contained SMT-LIB 2 script: `unsat` means
  /// proved; `sat` comes with the counterexample via get-value.
  std::string smtlib(const types::ShapeConstraint& goal) const;

  const SolverStats& stats() const { return stats_; }

 private:
  struct Impl;
  Impl& z3();
  /// The hypotheses (every variable >= 1, the `where` clause) and, with a
  /// goal, its negation: SMT-LIB declarations and assertions.
  std::string smt_assertions(const types::ShapeConstraint* goal) const;
  /// Runs `script` (from smt_assertions) on a fresh Z3 solver; fills
  /// `o.reason` when unknown and, with `want_model`, the counterexample.
  enum class Answer { Sat, Unsat, Unknown };
  Answer query(const std::string& script, Outcome& o, bool want_model);
  /// Small valuations that satisfy the hypotheses and break `goal`: one
  /// variable varied at a time, and also pairs when `pairs`.
  std::optional<std::vector<std::pair<std::string, int64_t>>> search_counterexample(const types::ShapeConstraint& goal, bool pairs);
  unsigned timeout_ms_;
  std::unique_ptr<Impl> impl_;
  SolverStats stats_;
  std::vector<std::string> dims_;
  std::vector<types::ShapeConstraint> where_;
};

/// A polynomial as an SMT-LIB integer term.
std::string smt_term(const types::Poly& p);
std::string smt_formula(const types::ShapeConstraint& c);

}  // namespace shapeml::smt
