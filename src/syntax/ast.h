// The abstract syntax tree: what the parser makes of the S-expressions
// (spec §2). Names are still strings; types are still unchecked.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "syntax/ops.h"
#include "syntax/source.h"
#include "types/dtype.h"
#include "types/tensor_type.h"

namespace shapeml::syntax {

struct DimAst {
  enum class Kind { Int, Var, Add, Sub, Mul, FloorDiv, Mod } kind = Kind::Int;
  int64_t value = 0;
  std::string name;
  std::vector<DimAst> args;
  Span span;
};

struct TypeAst {
  types::DType dtype = types::DType::F32;
  std::string dtype_var;  // dtype == DType::Var: a dtype variable of the function (spec §3.5)
  std::vector<DimAst> dims;
  types::Device device;
  Span span;
};

struct ConstraintAst {
  types::ShapeConstraint::Kind kind = types::ShapeConstraint::Kind::Eq;
  DimAst lhs, rhs;
  Span span;
};

struct ExprAst {
  enum class Kind { Var, Number, Op } kind = Kind::Var;
  Span span;
  std::string name;  // Var: the name; Op with OpKind::Call: the callee
  // Number
  bool is_int = false;
  int64_t int_value = 0;
  double float_value = 0;
  std::string literal;
  // Op
  OpKind op = OpKind::Neg;
  std::vector<ExprAst> operands;  // tensor-valued operands, in order
  std::optional<TypeAst> type;    // fill, iota
  std::vector<DimAst> shape;      // reshape, broadcast_to
  std::vector<int64_t> ints;      // permute's permutation, reductions' :axes
  bool has_axes = false;
  std::optional<types::DType> dtype;    // cast, const, dim_value
  std::string dtype_var;                // dtype == DType::Var: the dtype variable's name
  std::optional<types::Device> device;  // const, copy_to_device, dim_value
  std::optional<int64_t> axis;          // concat, slice, iota, softmax, log_softmax, repeat_interleave
  bool keepdims = false;
  std::optional<DimAst> start, size;    // slice
  std::optional<DimAst> repeats;        // repeat_interleave's `:repeats`; dim_value's dimension
  bool reverse = false;                 // cumsum's `:reverse`
  std::optional<int64_t> k;             // top_k's `:k`
  std::optional<DimAst> low, high;      // pad's `:low` and `:high` widths
  std::vector<ExprAst> pad_value;       // pad's `:value`: one number literal, or none (0)
  /// call: `:dims ((VAR DIM) ...)`, the callee's shape variables given
  /// explicitly (name, span of the name, value over the caller's variables).
  struct CallDim {
    std::string var;
    Span span;
    DimAst value;
  };
  std::vector<CallDim> call_dims;
  bool has_call_dims = false;
};

struct LetAst {
  std::vector<std::string> names;
  std::vector<Span> name_spans;
  std::optional<TypeAst> ascription;
  ExprAst value;
  Span span;
};

struct ParamAst {
  std::string name;
  TypeAst type;
  Span span;
};

/// A module item is a `func`, or a derived function `(grad NAME OF [:wrt
/// (P...)])` (spec §4.26): then `grad_of` names the function it is the
/// reverse-mode derivative of, `wrt` the parameters (empty: every floating
/// one), and only name, spans and these are set.
struct FuncAst {
  std::string name;
  Span span, name_span;
  std::string grad_of;
  Span grad_of_span;
  std::vector<std::pair<std::string, Span>> wrt;
  bool has_wrt = false;
  std::vector<std::pair<std::string, Span>> dims;
  /// `(dtypes T (U f32 bf16) ...)` and `(devices Dv ...)` (spec §3.5): the
  /// function's dtype variables with the set each ranges over (a bare name:
  /// every dtype), and its device variables.
  struct DTypeVarAst {
    std::string name;
    types::DTypeSet set = types::kAllDTypes;
    Span span;
  };
  std::vector<DTypeVarAst> dtype_vars;
  std::vector<std::pair<std::string, Span>> device_vars;
  /// `(given V ...)`: shape variables of `dims` that every call supplies
  /// (spec §4.19): `:dims` inside the module, the call options at the host.
  std::vector<std::pair<std::string, Span>> given;
  std::vector<ConstraintAst> where;
  std::vector<ParamAst> params;
  std::vector<TypeAst> returns;
  Span returns_span;
  std::vector<LetAst> lets;
  std::vector<ExprAst> results;  // atoms of `(return ...)`
  Span return_span;
};

struct ModuleAst {
  std::string name;
  Span span;
  std::vector<FuncAst> funcs;
  /// Functions that did not parse (already reported); calls to them are not
  /// reported again.
  std::vector<std::string> malformed_funcs;
};

}  // namespace shapeml::syntax
