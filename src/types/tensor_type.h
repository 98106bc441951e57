// Tensor types and shape constraints (spec §3).
#pragma once
#include <string>
#include <vector>

#include "types/dtype.h"
#include "types/poly.h"

namespace shapeml::types {

using Shape = std::vector<Poly>;

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  Device device;
  size_t rank() const { return shape.size(); }
  /// `(tensor f32 (B S D) host)`
  std::string str() const;
};

std::string shape_str(const Shape& s);

/// A proposition over dimension polynomials: a `where` constraint or an
/// obligation. `(divides a b)` holds iff a >= 1 and b mod a = 0 (spec §2);
/// eval(), the Z3 encoding and the SMT-LIB dump all implement exactly that.
struct ShapeConstraint {
  enum class Kind { Eq, Ne, Lt, Le, Gt, Ge, Divides } kind = Kind::Eq;
  Poly lhs, rhs;
  std::string str() const;
  ShapeConstraint subst(const std::map<std::string, Poly>& s) const { return {kind, lhs.subst(s), rhs.subst(s)}; }
  /// Truth under a full assignment; nullopt if undefined (missing variable).
  std::optional<bool> eval(const std::map<std::string, int64_t>& env) const;
};

const char* constraint_op_name(ShapeConstraint::Kind k);

}  // namespace shapeml::types
