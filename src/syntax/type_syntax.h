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
#include <string>

#include "syntax/ast.h"
#include "syntax/sexpr.h"
#include "types/poly.h"

namespace shapeml::syntax {

using SyntaxErrorFn = std::function<void(const std::string& code, Span span, const std::string& message)>;

/// INT | VAR | (+ d d ...) | (* d d ...) | (- d d) | (floordiv d INT) | (mod d INT). E0003.
std::optional<DimAst> read_dim(const SExpr& s, const SyntaxErrorFn& err);
/// f32 f64 bf16 i32 i64 bool. E0003.
std::optional<types::DType> read_dtype(const SExpr& s, const SyntaxErrorFn& err);
/// host | (cuda N). E0003.
std::optional<types::Device> read_device(const SExpr& s, const SyntaxErrorFn& err);
/// (tensor DTYPE (DIM...) DEVICE). E0003.
std::optional<TypeAst> read_type(const SExpr& s, const SyntaxErrorFn& err);
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
