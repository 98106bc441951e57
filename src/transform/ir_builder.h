// Appends typed bindings to a function of the typed IR, as a pass does.
// Every binding's type comes from the checker's own rules (check/rules.h),
// with their obligations discharged under the function's `where` clause, so
// a pass cannot make a binding the verifier would reject without noticing:
// a rule that fails here is a bug in the pass (thrown, E0900 at the driver).
#pragma once
#include <string>
#include <vector>

#include "check/rules.h"
#include "ir/ir.h"
#include "smt/shape_solver.h"

namespace shapeml::transform {

class IrBuilder final : public check::RuleEnv {
 public:
  /// Appends to `f`, whose dims and where clause must already be set.
  IrBuilder(ir::Function& f, unsigned timeout_ms);
  ~IrBuilder() override;

  /// A new binding `op(operands)` with `attrs`, its result typed by the
  /// rule of `op`; returns the result. `span`: where its error would point.
  ir::ValueId emit(syntax::OpKind op, std::vector<ir::ValueId> operands, ir::Attrs attrs, syntax::Span span);
  /// A rank-0 constant of `dtype` on `device`.
  ir::ValueId constant(double v, const types::DTypeValue& dtype, const types::Device& device, syntax::Span span);
  /// `(fill v TYPE)`.
  ir::ValueId fill(double v, const types::TensorType& t, syntax::Span span);
  /// A new value of type `t` named `name` (a parameter, or a result of a
  /// binding the caller appends itself).
  ir::ValueId value(std::string name, types::TensorType t, syntax::Span span);

  /// Whether `goal` holds for every shape satisfying the where clause.
  bool proves(const types::ShapeConstraint& goal);

  bool require(const types::ShapeConstraint& goal, const check::Failure& f) override;
  void fail(const check::Failure& f) override;

 private:
  ir::Function& f_;
  smt::ShapeSolver solver_;
  int temp_ = 0;
};

}  // namespace shapeml::transform
