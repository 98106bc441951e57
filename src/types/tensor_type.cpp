#include "types/tensor_type.h"

namespace shapeml::types {

std::string shape_str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? " " : "") + s[i].str();
  return r + ")";
}

std::string TensorType::str() const {
  return "(tensor " + std::string(dtype_name(dtype)) + " " + shape_str(shape) + " " + device_name(device) + ")";
}

const char* constraint_op_name(ShapeConstraint::Kind k) {
  switch (k) {
    case ShapeConstraint::Kind::Eq: return "=";
    case ShapeConstraint::Kind::Ne: return "!=";
    case ShapeConstraint::Kind::Lt: return "<";
    case ShapeConstraint::Kind::Le: return "<=";
    case ShapeConstraint::Kind::Gt: return ">";
    case ShapeConstraint::Kind::Ge: return ">=";
    case ShapeConstraint::Kind::Divides: return "divides";
  }
  return "?";
}

std::string ShapeConstraint::str() const {
  return std::string("(") + constraint_op_name(kind) + " " + lhs.str() + " " + rhs.str() + ")";
}

std::optional<bool> ShapeConstraint::eval(const std::map<std::string, int64_t>& env) const {
  auto a = lhs.eval(env), b = rhs.eval(env);
  if (!a || !b) return std::nullopt;
  switch (kind) {
    case Kind::Eq: return *a == *b;
    case Kind::Ne: return *a != *b;
    case Kind::Lt: return *a < *b;
    case Kind::Le: return *a <= *b;
    case Kind::Gt: return *a > *b;
    case Kind::Ge: return *a >= *b;
    case Kind::Divides: return *a >= 1 && *b % *a == 0;  // spec §2: a >= 1 and b mod a = 0
  }
  return std::nullopt;
}

}  // namespace shapeml::types
