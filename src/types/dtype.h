// Element types and devices: the two non-shape components of a tensor type.
//
// Both may be *variables* of a generic function (spec §3.5): a dtype
// variable is DType::Var with its name and the set of dtypes it ranges over
// beside it (types::TensorType, ir::Attrs); a device variable is
// Device::Kind::Var with its name. Only the checker and the specializer
// (transform/specialize_types.h) meet them: every module a back end lowers,
// and every type the runtime moves data by, is concrete.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shapeml::types {

enum class DType : int32_t { F32, F64, BF16, I32, I64, Bool, Var };

std::string_view dtype_name(DType d);
/// A concrete dtype's name (`f32`); nullopt for anything else (and `Var`).
std::optional<DType> parse_dtype(std::string_view s);
inline bool is_floating(DType d) { return d == DType::F32 || d == DType::F64 || d == DType::BF16; }
inline bool is_integral(DType d) { return d == DType::I32 || d == DType::I64; }
inline bool is_numeric(DType d) { return is_floating(d) || is_integral(d); }

/// A set of concrete dtypes, one bit per DType (bit d for DType d): what a
/// dtype variable ranges over.
using DTypeSet = uint8_t;
constexpr DTypeSet dtype_bit(DType d) { return d == DType::Var ? 0 : static_cast<DTypeSet>(1u << static_cast<int>(d)); }
constexpr DTypeSet kFloatingDTypes = dtype_bit(DType::F32) | dtype_bit(DType::F64) | dtype_bit(DType::BF16);
constexpr DTypeSet kIntegralDTypes = dtype_bit(DType::I32) | dtype_bit(DType::I64);
constexpr DTypeSet kNumericDTypes = kFloatingDTypes | kIntegralDTypes;
constexpr DTypeSet kAllDTypes = kNumericDTypes | dtype_bit(DType::Bool);
/// `f32 bf16`: the members, in enum order, space-separated.
std::string dtype_set_str(DTypeSet s);
/// A word of a `(dtypes (T ...))` declaration: a dtype, or one of the
/// classes `floating`, `integral`, `numeric`, `any`.
std::optional<DTypeSet> parse_dtype_set_word(std::string_view s);

struct Device {
  enum class Kind : int32_t { Host, Cuda, Var } kind = Kind::Host;
  int32_t ordinal = 0;
  std::string var;  // Kind::Var: the device variable's name
  bool operator==(const Device&) const = default;
  static Device host() { return {}; }
  static Device cuda(int32_t n) { return {Kind::Cuda, n, {}}; }
  static Device variable(std::string name) { return {Kind::Var, 0, std::move(name)}; }
  bool is_var() const { return kind == Kind::Var; }
};

/// `host`, `(cuda N)`, or a device variable's name, as written in source.
std::string device_name(const Device& d);

}  // namespace shapeml::types
