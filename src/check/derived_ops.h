// The derived operations of spec §4.28-4.30 (squeeze, unsqueeze, pad, argmax,
// argmin): the elaborator checks their own premises here, then writes each
// as primitive operations of the typed IR. Nothing after the elaborator sees
// them, so every back end, the reverse-mode pass, the GPU fusion and the IR
// verifier treat them through the rules of the primitives they become.
#pragma once
#include <optional>
#include <vector>

#include "check/rules.h"
#include "ir/ir.h"
#include "syntax/ast.h"

namespace shapeml::check {

/// What an expansion needs from the elaborator.
class DerivedOpSink {
 public:
  virtual ~DerivedOpSink() = default;
  /// Appends `op(operands)` typed by its rule (obligations discharged as
  /// any binding's); nullopt when the rule failed (reported).
  virtual std::optional<ir::ValueId> emit(syntax::OpKind op, std::vector<ir::ValueId> operands, ir::Attrs attrs) = 0;
  /// `(fill LITERAL t)`, the literal checked against t's dtype (E0207).
  virtual std::optional<ir::ValueId> fill(const syntax::ExprAst& literal, const types::TensorType& t) = 0;
  virtual const types::TensorType& type(ir::ValueId v) const = 0;
  /// Whether `goal` holds under the function's `where` clause; reports nothing.
  virtual bool proves(const types::ShapeConstraint& goal) = 0;
  /// Where the derived operation's own premises are reported.
  virtual RuleEnv& env() = 0;
};

/// The attributes of a derived operation as written.
struct DerivedAttrs {
  std::optional<int64_t> axis;
  std::vector<int64_t> axes;  // squeeze's `:axes`
  bool keepdims = false;      // argmax, argmin
  types::Poly low, high;      // pad
  const syntax::ExprAst* value = nullptr;  // pad's `:value` literal, or null for 0
  int64_t k = 0;                           // top_k
};

/// Checks `op` (a derived operation, syntax::op_is_derived) on `x` and
/// appends the primitive bindings that compute it; returns the value that
/// holds its result, or nullopt after reporting.
std::optional<ir::ValueId> expand_derived(syntax::OpKind op, ir::ValueId x, const DerivedAttrs& a, DerivedOpSink& sink);

/// §4.31 top_k, the one derived operation with two results: the values and
/// their i64 indices, as expand_derived() does for the others.
std::optional<std::pair<ir::ValueId, ir::ValueId>> expand_top_k(ir::ValueId x, const DerivedAttrs& a, DerivedOpSink& sink);

}  // namespace shapeml::check
