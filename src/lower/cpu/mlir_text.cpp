#include "lower/cpu/mlir_text.h"

#include <cmath>

#include "common/numbers.h"

namespace shapeml::lower::cpu {

using types::DType;

void fail(const std::string& msg) { throw EmitError(msg); }

std::string elem_ty(DType d) { return d == DType::Bool ? "i1" : std::string(types::dtype_name(d)); }

// The element type of tensors and buffers: bf16 is stored as its i16 bit
// pattern and converted with integer arithmetic, so the generated code holds
// no LLVM `bfloat` value (whose x86 lowering calls __truncsfbf2 from libgcc,
// which neither the JIT process nor a libc-only .so provides).
std::string storage_ty(DType d) { return d == DType::BF16 ? "i16" : d == DType::Bool ? "i8" : elem_ty(d); }

// The type scalar computation happens in: bf16 is computed in f32 and
// rounded once per operation.
DType compute_dt(DType d) { return d == DType::BF16 ? DType::F32 : d; }

bool is_float(DType d) { return d == DType::F32 || d == DType::F64 || d == DType::BF16; }
bool is_int(DType d) { return d == DType::I32 || d == DType::I64; }

int int_bits(DType d) { return d == DType::I32 ? 32 : 64; }

namespace {

std::string fix_float_text(std::string s) {
  // MLIR float literals need a '.' before any exponent.
  if (s.find('.') != std::string::npos) return s;
  size_t e = s.find_first_of("eE");
  if (e == std::string::npos) return s + ".0";
  return s.substr(0, e) + ".0" + s.substr(e);
}

}  // namespace

std::string float_attr(double v, DType d) {
  // std::to_chars (common/numbers.h): snprintf would print "0,25" under a
  // comma-decimal C locale and MLIR would not parse it.
  if (d == DType::F64) {
    if (std::isnan(v)) return "0x7FF8000000000000";
    if (std::isinf(v)) return v > 0 ? "0x7FF0000000000000" : "0xFFF0000000000000";
    return fix_float_text(common::format_double(v, 17));
  }
  float f = static_cast<float>(v);
  if (std::isnan(f)) return "0x7FC00000";
  if (std::isinf(f)) return f > 0 ? "0x7F800000" : "0xFF800000";
  return fix_float_text(common::format_double(static_cast<double>(f), 9));
}

}  // namespace shapeml::lower::cpu
