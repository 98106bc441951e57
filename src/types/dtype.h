// Element types and devices: the two non-shape components of a tensor type.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shapeml::types {

enum class DType : int32_t { F32, F64, BF16, I32, I64, Bool };

std::string_view dtype_name(DType d);
std::optional<DType> parse_dtype(std::string_view s);
inline bool is_floating(DType d) { return d == DType::F32 || d == DType::F64 || d == DType::BF16; }
inline bool is_integral(DType d) { return d == DType::I32 || d == DType::I64; }
inline bool is_numeric(DType d) { return is_floating(d) || is_integral(d); }

struct Device {
  enum class Kind : int32_t { Host, Cuda } kind = Kind::Host;
  int32_t ordinal = 0;
  bool operator==(const Device&) const = default;
  static Device host() { return {}; }
  static Device cuda(int32_t n) { return {Kind::Cuda, n}; }
};

/// `host` or `(cuda N)`, as written in source.
std::string device_name(const Device& d);

}  // namespace shapeml::types
