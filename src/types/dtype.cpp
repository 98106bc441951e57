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
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (DType d : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::I64, DType::Bool})
    if (dtype_name(d) == s) return d;
  return std::nullopt;
}

std::string device_name(const Device& d) {
  if (d.kind == Device::Kind::Host) return "host";
  return "(cuda " + std::to_string(d.ordinal) + ")";
}

}  // namespace shapeml::types
