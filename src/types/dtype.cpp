#include "types/dtype.h"

namespace shapeml::types {

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::Bool: return "bool";
    case DType::Var: return "?";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (DType d : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::I64, DType::Bool})
    if (dtype_name(d) == s) return d;
  return std::nullopt;
}

std::string dtype_set_str(DTypeSet s) {
  std::string r;
  for (DType d : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::I64, DType::Bool})
    if (s & dtype_bit(d)) r += (r.empty() ? "" : " ") + std::string(dtype_name(d));
  return r;
}

std::optional<DTypeSet> parse_dtype_set_word(std::string_view s) {
  if (auto d = parse_dtype(s)) return dtype_bit(*d);
  if (s == "floating") return kFloatingDTypes;
  if (s == "integral") return kIntegralDTypes;
  if (s == "numeric") return kNumericDTypes;
  if (s == "any") return kAllDTypes;
  return std::nullopt;
}

std::string device_name(const Device& d) {
  switch (d.kind) {
    case Device::Kind::Host: return "host";
    case Device::Kind::Cuda: return "(cuda " + std::to_string(d.ordinal) + ")";
    case Device::Kind::Var: return d.var;
  }
  return "?";
}

}  // namespace shapeml::types
