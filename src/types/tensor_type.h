// Tensor types and shape constraints (spec §3).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "types/dtype.h"
#include "types/poly.h"

namespace shapeml::types {

using Shape = std::vector<Poly>;

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  Device device;
  /// dtype == DType::Var: the dtype variable's name and what it ranges over.
  std::string dtype_var;
  DTypeSet dtype_set = 0;
  size_t rank() const { return shape.size(); }
  /// `(tensor f32 (B S D) host)`, `(tensor T (B S D) Dv)`
  std::string str() const;
  /// `f32`, or the dtype variable's name.
  std::string dtype_str() const;
  /// The dtypes this type's element may be: one, or its variable's set.
  DTypeSet possible_dtypes() const { return dtype == DType::Var ? dtype_set : dtype_bit(dtype); }
  bool same_dtype(const TensorType& o) const { return dtype == o.dtype && dtype_var == o.dtype_var; }
  /// No dtype or device variable in it.
  bool concrete() const { return dtype != DType::Var && !device.is_var(); }
};

/// A dtype as a generic function's type may hold it: concrete, or a
/// variable with the set it ranges over.
struct DTypeValue {
  DType dtype = DType::F32;
  std::string var;
  DTypeSet set = 0;
  static DTypeValue of(const TensorType& t) { return {t.dtype, t.dtype_var, t.dtype_set}; }
  static DTypeValue concrete(DType d) { return {d, {}, 0}; }
  DTypeSet possible() const { return dtype == DType::Var ? set : dtype_bit(dtype); }
  std::string str() const { return dtype == DType::Var ? var : std::string(dtype_name(dtype)); }
  bool operator==(const DTypeValue& o) const { return dtype == o.dtype && var == o.var; }
};

/// A type of dtype `dt` (variable included), shape `s`, device `d`.
inline TensorType make_type(const DTypeValue& dt, Shape s, Device d) {
  TensorType t;
  t.dtype = dt.dtype;
  t.dtype_var = dt.var;
  t.dtype_set = dt.set;
  t.shape = std::move(s);
  t.device = std::move(d);
  return t;
}

/// Values of a function's dtype and device variables (spec §3.5): at a call
/// (possibly the caller's own variables) or at a specialization (concrete).
struct TypeBinding {
  std::map<std::string, DTypeValue> dtypes;
  std::map<std::string, Device> devices;
  bool empty() const { return dtypes.empty() && devices.empty(); }
  /// `T=bf16, Dv=(cuda 0)`
  std::string str() const;
};

/// Spec §3.5, the one rule: a callee's dtype (device) variable takes the
/// dtype (device) of the first argument whose parameter type names it.
/// Whether the values are ones the variables range over, and whether the
/// other arguments then match, is the caller's to check.
TypeBinding bind_type_variables(const std::vector<TensorType>& params, const std::vector<TensorType>& args);

/// A dtype or device variable's value in a specialization's bindings
/// (`std::map<std::string, int64_t>`, beside the shape variables), in a
/// range no shape variable's value (>= 1) can be, so that one given where
/// the other is expected is refused: a dtype as -16 - its DType number, the
/// host as -1000, `(cuda N)` as -1001 - N. Text forms: `T=bf16`, `Dv=host`,
/// `Dv=cuda0`.
inline int64_t dtype_binding_value(DType d) { return -16 - static_cast<int64_t>(d); }
std::optional<DType> dtype_from_binding(int64_t v);
inline int64_t device_binding_value(const Device& d) { return d.kind == Device::Kind::Cuda ? -1001 - d.ordinal : -1000; }
std::optional<Device> device_from_binding(int64_t v);
/// `bf16`, `host`, `cuda0`: how a bound value is written in `--bind` and the manifest.
std::string dtype_binding_text(int64_t v);
std::string device_binding_text(int64_t v);
/// The inverse (nullopt: not a dtype / not a device).
std::optional<int64_t> parse_dtype_binding(std::string_view s);
std::optional<int64_t> parse_device_binding(std::string_view s);

/// `t` with the variables `b` binds replaced (the others are kept).
TensorType substitute(const TensorType& t, const TypeBinding& b);
Device substitute(const Device& d, const TypeBinding& b);

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
