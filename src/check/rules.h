// The typing rules of spec §4, one function per operation family. They are
// used twice: by the elaborator (source -> typed IR, user diagnostics) and by
// the IR verifier after every pass (failures there are internal errors). A
// rule states its side conditions through RuleEnv and never decides them
// itself.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "types/tensor_type.h"

namespace shapeml::check {

/// What to report when a rule's premise fails.
struct Failure {
  std::string code;  // E0xxx
  std::string message;
  std::string expected, actual;
  std::vector<std::string> notes;
  /// The operand at fault (index into the operation's operands), or -1 for
  /// the whole form: the caret goes on it, and a label on its declaration.
  int blame = -1;
  /// Labels for `expected`/`actual` ("" = "expected"/"actual"), e.g.
  /// "left operand"; when `*_operand` >= 0 the elaborator appends that
  /// operand's name (`x`) where it has one.
  std::string expected_label = {}, actual_label = {};
  int expected_operand = -1, actual_operand = -1;
};

class RuleEnv {
 public:
  virtual ~RuleEnv() = default;
  /// Discharge `goal`; on refutation or timeout, report `f` (with the
  /// counterexample) and return false.
  virtual bool require(const types::ShapeConstraint& goal, const Failure& f) = 0;
  /// Report a premise that is not an obligation (dtype, rank, axis, ...).
  virtual void fail(const Failure& f) = 0;
  /// The caller's `where` constraints (over the dimensions of the operand
  /// types): what holds wherever the rule is applied. Shape inference at a
  /// call rewrites by their equalities when a division is not exact without.
  virtual std::vector<types::ShapeConstraint> hypotheses() const { return {}; }
};

/// Result type of `op` applied to operands of types `in` with `attrs`, or
/// nullopt after reporting through `env`. Not for OpKind::Call.
std::optional<types::TensorType> type_op(syntax::OpKind op, const std::vector<types::TensorType>& in, const ir::Attrs& attrs,
                                         RuleEnv& env);

/// §4.18 T-Call: the result types of a call of `callee` on arguments of
/// types `args`: arity and ranks, the callee's shape variables inferred from
/// the arguments' dimensions (spec §5.2, symbolically), every parameter type
/// and every callee `where` constraint instantiated and discharged. nullopt
/// after reporting through `env`.
/// `given`: the call's explicit shape arguments (`:dims`), callee variable
/// -> dimension over the caller's variables; substituted before the rest is
/// inferred, then every parameter dimension and `where` constraint is an
/// obligation as usual.
std::optional<std::vector<types::TensorType>> type_call(const ir::Function& callee, const std::vector<types::TensorType>& args,
                                                        RuleEnv& env, const std::vector<std::pair<std::string, types::Poly>>& given = {});

/// §4.3 T-Sub: `actual` checks against `expected` (dims proved equal).
bool check_subsumes(const types::TensorType& actual, const types::TensorType& expected, const std::string& what, RuleEnv& env);

/// §4.5 B-Shape: the broadcast of two shapes.
std::optional<types::Shape> broadcast_shapes(const types::Shape& a, const types::Shape& b, const std::string& what, RuleEnv& env);

/// §3.4: obligations that every dimension of `t` is >= 1.
bool check_well_formed(const types::TensorType& t, RuleEnv& env);

}  // namespace shapeml::check
