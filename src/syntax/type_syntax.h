// The syntax of types, dimensions and constraints (spec §2-§3), read once:
// the language's parser and the module manifest's reader
// (src/runtime/manifest.cpp) both use these, so a type means the same, with
// the same limits, in a program and in a compiled module. Also the one
// conversion of a dimension expression to its normal form (types/poly.h).
//
// Errors go to a callback with a stable code, the span, and a message; the
// caller decides what an error is (a diagnostic, a manifest status).
#pragma once
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "syntax/ast.h"
#include "syntax/sexpr.h"
#include "types/poly.h"

namespace shapeml::syntax {

using SyntaxErrorFn = std::function<void(const std::string& code, Span span, const std::string& message)>;

/// INT | VAR | (+ d d ...) | (* d d ...) | (- d d) | (floordiv d INT) | (mod d INT). E0003.
std::optional<DimAst> read_dim(const SExpr& s, const SyntaxErrorFn& err);
/// The dtype and device variables in scope (a function's `(dtypes ...)` and
/// `(devices ...)`, spec §3.5): a name in a dtype or device position is one
/// of these or an error.
struct TypeVarScope {
  std::set<std::string> dtypes, devices;
};

/// f32 f64 bf16 i32 i64 bool. E0003.
std::optional<types::DType> read_dtype(const SExpr& s, const SyntaxErrorFn& err);
/// A dtype or a dtype variable of `vars` (then DType::Var, and `var` is its
/// name). E0003.
std::optional<types::DType> read_dtype_or_var(const SExpr& s, const TypeVarScope* vars, std::string& var, const SyntaxErrorFn& err);
/// host | (cuda N) | a device variable of `vars`. E0003.
std::optional<types::Device> read_device(const SExpr& s, const SyntaxErrorFn& err, const TypeVarScope* vars = nullptr);
/// (tensor DTYPE (DIM...) DEVICE), DTYPE and DEVICE possibly variables of
/// `vars` (the dtype variable's set is the reader's to fill in). E0003.
std::optional<TypeAst> read_type(const SExpr& s, const SyntaxErrorFn& err, const TypeVarScope* vars = nullptr);
/// (= a b) (!= a b) (< a b) (<= a b) (> a b) (>= a b) (divides a b). E0003.
std::optional<ConstraintAst> read_constraint(const SExpr& s, const SyntaxErrorFn& err);

/// A dimension expression's normal form. `is_variable(name)` says whether a
/// name is a declared shape variable (else E0104, with `unknown_note`);
/// a negative literal is E0305 unless `allow_negative` (inside a `where`
/// constraint, spec §2); arithmetic beyond 64 bits or the normal form's
/// bounds is E0004.
std::optional<types::Poly> dim_to_poly(const DimAst& d, const std::function<bool(const std::string&)>& is_variable, bool allow_negative,
                                       const SyntaxErrorFn& err);

}  // namespace shapeml::syntax
