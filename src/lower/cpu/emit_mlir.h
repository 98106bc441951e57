// Typed IR -> MLIR text (func, arith, math, tensor, linalg on tensors,
// bufferization at the boundary) for one entry point specialized to concrete
// values of its shape variables. Plain C++: this header and emit_mlir.cpp
// include no MLIR header (docs/design/cpu-codegen.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "lower/cpu/index_sites.h"

namespace shapeml::lower::cpu {

/// The code-size budget of one specialization (spec, "Implementation
/// limits"): operations emitted with calls inlined, a matmul counting
/// kCodegenMatmulCost. Exceeding it is an error "... is too large for the CPU
/// back end ..." (RESOURCE_EXHAUSTED through the C ABI).
inline constexpr size_t kCodegenBudget = 16384;
inline constexpr size_t kCodegenMatmulCost = 64;

enum class MatmulStrategy {
  Auto,   // tile + vectorize where the shapes allow it (the default)
  Naive,  // plain loops (linalg -> scf), for debugging and as a reference
};

struct EmitOptions {
  /// Name of the emitted func.func; default `shapeml_<entry>`.
  std::string func_name;
  MatmulStrategy matmul = MatmulStrategy::Auto;
  /// SIMD register width the matmul micro-tile is chosen for (256: AVX2,
  /// 512: AVX-512). The pipeline sets it from the target.
  int vector_bits = 256;
  /// Tile sizes for every 2-D matmul [m, n, k] (outer, then inner micro-tile)
  /// instead of the built-in choice; batched matmuls get a leading 1. For
  /// experiments and tuning; each size must divide its dimension (the inner
  /// the outer), else the built-in choice is used.
  std::vector<int64_t> matmul_tile_outer, matmul_tile_inner;
};

/// One tensor of a specialized signature: dtype and concrete row-major shape.
struct ConcreteTensor {
  types::DType dtype = types::DType::F32;
  std::vector<int64_t> shape;
  int64_t num_elements() const;
  /// Bytes in a dense buffer (bool: one byte per element).
  int64_t byte_size() const;
};

struct ConcreteSignature {
  std::vector<ConcreteTensor> params;   // buffers[0 .. n_in-1]
  std::vector<ConcreteTensor> results;  // buffers[n_in ..]
  /// int64_t words of the error record, the buffer after the results, for
  /// an entry with index checks (docs/design/index-checks.md); 0: none.
  size_t error_record = 0;
};

/// Checks `bindings` against the entry's dims and `where` constraints and
/// evaluates its parameter and result shapes. Returns false with `error` set
/// (unknown entry, missing/extra/non-positive binding, violated constraint,
/// a value that is not on the host).
bool specialize_signature(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings,
                          ConcreteSignature& out, std::string& error);

/// MLIR text for `entry` specialized to `bindings`: one
///   func.func @NAME(%in0: memref<..>, ..., %out0: memref<..>, ...)
/// that reads the inputs through `bufferization.to_tensor ... restrict`,
/// computes on tensors (callees are inlined, instantiated at the call's
/// shapes) and writes each result with `bufferization.materialize_in_destination`
/// into its output memref. Bool buffers are memref<..xi8> (one byte, 0 or 1).
/// Returns "" and sets *error on failure; never throws.
std::string emit_mlir(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings,
                      const EmitOptions& opts = {}, std::string* error = nullptr);


/// The shape variables of `f` that neither its parameter shapes determine
/// (spec §5.2) nor `(given ...)` declares. Non-empty only for a function
/// that is called with `:dims` (spec §4.18); such a function is no entry
/// point.
std::vector<std::string> undetermined_dims(const ir::Function& f);

/// `shapeml_` + the entry name with every character outside [A-Za-z0-9_]
/// replaced by `_`.
std::string default_func_name(const std::string& entry);

}  // namespace shapeml::lower::cpu
