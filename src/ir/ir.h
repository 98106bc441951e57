// The typed IR: plain data, A-normal form (spec §7). Every intermediate value
// is named and typed, every binding keeps the source span it came from.
// Lowering, the AD pass and tracing all read exactly this.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "syntax/ops.h"
#include "syntax/source.h"
#include "types/tensor_type.h"

namespace shapeml::ir {

using ValueId = uint32_t;

struct Value {
  std::string name;  // the user's name, or `%N` for an intermediate
  types::TensorType type;
  syntax::Span span;
};

/// Operation attributes; which fields matter depends on the op (spec §4).
struct Attrs {
  std::vector<int64_t> axes;      // reduce_* (normalized, sorted); permute's permutation
  bool keepdims = false;          // reduce_*
  bool reverse = false;           // cumsum: from the end of the axis
  int64_t axis = 0;               // concat, slice, iota; softmax, log_softmax, repeat_interleave, take_along_axis, cumsum (normalized: 0 <= axis < rank)
  types::Poly start, size;        // slice; `size` is also repeat_interleave's repeats and dim_value's dimension
  types::Shape shape;             // reshape, broadcast_to target
  types::DType dtype = types::DType::F32;  // cast target, dim_value's dtype, const/fill/iota's dtype
  std::string dtype_var;                   // dtype == DType::Var: the dtype variable (spec §3.5)
  types::DTypeSet dtype_set = 0;           // and what it ranges over
  types::DTypeValue dtype_value() const { return {dtype, dtype_var, dtype_set}; }
  void set_dtype(const types::DTypeValue& d) {
    dtype = d.dtype;
    dtype_var = d.var;
    dtype_set = d.set;
  }
  types::Device device;           // copy_to_device target, dim_value's device
  bool is_int = false;            // const/fill literal
  int64_t int_value = 0;
  double float_value = 0;
  std::string callee;             // call
  /// call with `:dims`: callee shape variables given explicitly, as
  /// dimension expressions over the caller's variables (spec §4.18).
  std::vector<std::pair<std::string, types::Poly>> call_dims;
};

/// The dtype and device fields of `a` with the variables `b` binds replaced.
inline void substitute_types(Attrs& a, const types::TypeBinding& b) {
  if (a.dtype == types::DType::Var)
    if (auto it = b.dtypes.find(a.dtype_var); it != b.dtypes.end()) a.set_dtype(it->second);
  a.device = types::substitute(a.device, b);
}

struct Binding {
  syntax::OpKind op = syntax::OpKind::Neg;
  std::vector<ValueId> operands;
  std::vector<ValueId> results;  // one, except for calls of multi-result functions
  Attrs attrs;
  syntax::Span span;
};

struct Function {
  std::string name;
  syntax::Span span;
  std::vector<std::string> dims;
  /// `(dtypes ...)` and `(devices ...)` (spec §3.5): dtype variables with
  /// the dtypes each ranges over, device variables; a function with any is
  /// generic, checked once for every value of them and specialized per
  /// binding before it is lowered (transform/specialize_types.h).
  std::vector<std::pair<std::string, types::DTypeSet>> dtype_vars;
  std::vector<std::string> device_vars;
  bool generic() const { return !dtype_vars.empty() || !device_vars.empty(); }
  /// The shape variables of `dims` every call gives (`(given ...)`, spec
  /// §4.19), in the order written; never inferred from the arguments.
  std::vector<std::string> given;
  std::vector<types::ShapeConstraint> where;
  std::vector<Value> values;       // indexed by ValueId
  std::vector<ValueId> params;
  std::vector<Binding> body;
  std::vector<ValueId> results;
  std::vector<types::TensorType> result_types;
  /// A derived function `(grad NAME OF)` (spec §4.26): the elaborator gives
  /// it OF's signature with the gradients appended to the results and no
  /// body; the reverse-mode pass (src/transform/reverse_mode.h) writes the
  /// body. `wrt`: the indices of the parameters differentiated, in order.
  std::string grad_of;
  std::vector<size_t> wrt;
};

struct Module {
  std::string name;
  /// The module ID (obs::module_id_for of the source name and text): in the
  /// compiler's trace spans, the manifest and every run-time span of the
  /// module (docs/design/observability.md). Empty for a module built by hand.
  std::string id;
  /// The source the spans point into (for run-time messages that name a
  /// location, e.g. index checks); may be null for a module built by hand.
  std::shared_ptr<const syntax::SourceFile> source;
  std::vector<Function> functions;
  const Function* find(const std::string& name) const {
    for (const auto& f : functions)
      if (f.name == name) return &f;
    return nullptr;
  }
};

/// Textual form for `--emit=typed`:
///   %3 = matmul(x, w1) : (tensor f32 (B S F) host)
std::string print_module(const Module& m);

}  // namespace shapeml::ir
