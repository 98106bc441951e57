#include "types/tensor_type.h"

namespace shapeml::types {

std::string shape_str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? " " : "") + s[i].str();
  return r + ")";
}

std::string TensorType::dtype_str() const { return dtype == DType::Var ? dtype_var : std::string(dtype_name(dtype)); }

std::string TensorType::str() const { return "(tensor " + dtype_str() + " " + shape_str(shape) + " " + device_name(device) + ")"; }

std::string TypeBinding::str() const {
  std::string r;
  for (const auto& [v, d] : dtypes) r += (r.empty() ? "" : ", ") + v + "=" + d.str();
  for (const auto& [v, d] : devices) r += (r.empty() ? "" : ", ") + v + "=" + device_name(d);
  return r;
}

TypeBinding bind_type_variables(const std::vector<TensorType>& params, const std::vector<TensorType>& args) {
  TypeBinding b;
  for (size_t i = 0; i < params.size() && i < args.size(); ++i) {
    const TensorType& p = params[i];
    if (p.dtype == DType::Var && !b.dtypes.count(p.dtype_var)) b.dtypes[p.dtype_var] = DTypeValue::of(args[i]);
    if (p.device.is_var() && !b.devices.count(p.device.var)) b.devices[p.device.var] = args[i].device;
  }
  return b;
}

std::optional<DType> dtype_from_binding(int64_t v) {
  int64_t d = -16 - v;
  if (d < 0 || d > static_cast<int64_t>(DType::Bool)) return std::nullopt;
  return static_cast<DType>(d);
}

std::optional<Device> device_from_binding(int64_t v) {
  if (v == -1000) return Device::host();
  int64_t n = -1001 - v;
  if (n < 0 || n >= (1 << 16)) return std::nullopt;
  return Device::cuda(static_cast<int32_t>(n));
}

std::string dtype_binding_text(int64_t v) {
  auto d = dtype_from_binding(v);
  return d ? std::string(dtype_name(*d)) : "?" + std::to_string(v);
}

std::string device_binding_text(int64_t v) {
  auto d = device_from_binding(v);
  if (!d) return "?" + std::to_string(v);
  return d->kind == Device::Kind::Host ? "host" : "cuda" + std::to_string(d->ordinal);
}

std::optional<int64_t> parse_dtype_binding(std::string_view s) {
  if (auto d = parse_dtype(s)) return dtype_binding_value(*d);
  return std::nullopt;
}

std::optional<int64_t> parse_device_binding(std::string_view s) {
  if (s == "host") return device_binding_value(Device::host());
  if (s.rfind("cuda", 0) != 0 || s.size() == 4 || s.size() > 9) return std::nullopt;
  int64_t n = 0;
  for (char c : s.substr(4)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (n >= (1 << 16)) return std::nullopt;
  return device_binding_value(Device::cuda(static_cast<int32_t>(n)));
}

Device substitute(const Device& d, const TypeBinding& b) {
  if (!d.is_var()) return d;
  auto it = b.devices.find(d.var);
  return it == b.devices.end() ? d : it->second;
}

TensorType substitute(const TensorType& t, const TypeBinding& b) {
  TensorType r = t;
  if (t.dtype == DType::Var)
    if (auto it = b.dtypes.find(t.dtype_var); it != b.dtypes.end()) {
      r.dtype = it->second.dtype;
      r.dtype_var = it->second.var;
      r.dtype_set = it->second.set;
    }
  r.device = substitute(t.device, b);
  return r;
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
