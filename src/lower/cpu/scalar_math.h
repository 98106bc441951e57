// The scalar semantics of the language (spec §5) as MLIR text, on the CPU:
// bf16 conversions, exp/log near the subnormal range, sigmoid/silu without
// overflow, sin/cos through f64 libm, and every unary, binary and compare
// operation and cast, each emitted into a Region (the body of a
// linalg.generic or of a loop). The emitter (emit_mlir.cpp) calls these;
// docs/design/subnormals.md and sin-cos-softmax-accuracy.md say why each is
// written as it is.
#pragma once
#include <string>

#include "syntax/ops.h"
#include "types/dtype.h"

namespace shapeml::lower::cpu {

/// Where a Region gets its SSA names (the emitter: unique per function).
class NameSource {
 public:
  virtual ~NameSource() = default;
  virtual std::string fresh(const std::string& hint) = 0;
};

/// Builder for a scalar body: each op() appends `%name = RHS` to `text`.
struct Region {
  NameSource& e;
  std::string text;
  std::string op(const std::string& rhs, const std::string& hint = "s");
  std::string cst(const std::string& attr) { return op("arith.constant " + attr, "c"); }
};

/// bf16 bits (i16) -> f32, and f32 -> bf16 bits rounded to nearest even
/// (NaN stays a quiet NaN).
std::string bf16_to_f32(Region& r, const std::string& x);
std::string f32_to_bf16(Region& r, const std::string& x);
/// A stored element of dtype `d` (storage_ty) as its compute type, and back:
/// bf16 bits <-> f32, bool bytes <-> i1 (any non-zero byte is true); the
/// identity for every other dtype.
std::string load_compute(Region& r, const std::string& x, types::DType d);
std::string store_compute(Region& r, const std::string& v, types::DType d);
/// A float constant of the compute type `cd`.
std::string fconst(Region& r, double v, types::DType cd);
std::string exp_op(Region& r, const std::string& x, types::DType cd);
std::string log_op(Region& r, const std::string& x, types::DType cd);
/// The operation `op` on values of the compute type `cd` (unary, binary,
/// compare: bool result); EmitError for a dtype the operation lacks.
std::string unary(Region& r, syntax::OpKind op, const std::string& x, types::DType cd);
std::string binary(Region& r, syntax::OpKind op, const std::string& a, const std::string& b, types::DType cd);
std::string compare(Region& r, syntax::OpKind op, const std::string& a, const std::string& b, types::DType cd);
/// x (compute type of `from`) -> compute type of `to` (language semantics §5).
std::string cast(Region& r, const std::string& x, types::DType from, types::DType to);

}  // namespace shapeml::lower::cpu
