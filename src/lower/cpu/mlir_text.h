// Spelling values and types as MLIR text, for the CPU back end's emitter
// (emit_mlir.cpp) and its scalar library (scalar_math.h): element types,
// the compute type of a storage type, float attributes that every C locale
// prints alike, and the error an emission stops with.
#pragma once
#include <stdexcept>
#include <string>

#include "types/dtype.h"

namespace shapeml::lower::cpu {

/// What an emission throws; the emitter turns it into an error message.
struct EmitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const std::string& msg);

/// The MLIR element type of a dtype's values ("f32", ..., "i1" for bool).
std::string elem_ty(types::DType d);
/// The element type of tensors and buffers: bf16 is stored as its i16 bit
/// pattern and converted with integer arithmetic, so the generated code holds
/// no LLVM `bfloat` value (whose x86 lowering calls __truncsfbf2 from libgcc,
/// which neither the JIT process nor a libc-only .so provides); bool is
/// stored as one byte, 0 or 1, and computed in i1 (an `i1` buffer is loaded a
/// byte at a time and assembled bit by bit into mask registers; bytes load as
/// vectors: docs/design/cpu-codegen.md).
std::string storage_ty(types::DType d);
/// The type scalar computation happens in: bf16 is computed in f32 and
/// rounded once per operation.
types::DType compute_dt(types::DType d);
bool is_float(types::DType d);
bool is_int(types::DType d);
int int_bits(types::DType d);
/// A float constant of type `d` (F32 or F64) as MLIR attribute text.
std::string float_attr(double v, types::DType d);

}  // namespace shapeml::lower::cpu
