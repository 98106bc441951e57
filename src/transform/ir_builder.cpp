#include "transform/ir_builder.h"

#include <stdexcept>

namespace shapeml::transform {

IrBuilder::IrBuilder(ir::Function& f, unsigned timeout_ms) : f_(f), solver_(timeout_ms) { solver_.begin_function(f.dims, f.where); }

IrBuilder::~IrBuilder() { solver_.end_function(); }

ir::ValueId IrBuilder::value(std::string name, types::TensorType t, syntax::Span span) {
  f_.values.push_back({std::move(name), std::move(t), span});
  return static_cast<ir::ValueId>(f_.values.size() - 1);
}

ir::ValueId IrBuilder::emit(syntax::OpKind op, std::vector<ir::ValueId> operands, ir::Attrs attrs, syntax::Span span) {
  std::vector<types::TensorType> in;
  for (ir::ValueId v : operands) in.push_back(f_.values.at(v).type);
  auto t = check::type_op(op, in, attrs, *this);
  if (!t) throw std::logic_error("a pass made an ill-typed `" + std::string(syntax::op_name(op)) + "` in `" + f_.name + "`");
  ir::ValueId r = value("%d" + std::to_string(temp_++), *t, span);
  f_.body.push_back({op, std::move(operands), {r}, std::move(attrs), span});
  return r;
}

ir::ValueId IrBuilder::constant(double v, const types::DTypeValue& dtype, const types::Device& device, syntax::Span span) {
  ir::Attrs a;
  a.set_dtype(dtype);
  a.device = device;
  a.float_value = v;
  a.is_int = false;
  return emit(syntax::OpKind::Const, {}, std::move(a), span);
}

ir::ValueId IrBuilder::fill(double v, const types::TensorType& t, syntax::Span span) {
  ir::Attrs a;
  a.set_dtype(types::DTypeValue::of(t));
  a.device = t.device;
  a.shape = t.shape;
  a.float_value = v;
  a.is_int = false;
  return emit(syntax::OpKind::Fill, {}, std::move(a), span);
}

bool IrBuilder::proves(const types::ShapeConstraint& goal) { return solver_.prove(goal).kind == smt::Outcome::Kind::Proved; }

bool IrBuilder::require(const types::ShapeConstraint& goal, const check::Failure& f) {
  if (proves(goal)) return true;
  fail(f);
  return false;
}

void IrBuilder::fail(const check::Failure& f) {
  throw std::logic_error("a pass broke a typing rule in `" + f_.name + "`: " + f.message + " [" + f.code + "]");
}

}  // namespace shapeml::transform
