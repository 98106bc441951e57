// Parameter bundles (spec §4.32): named records of tensors (and of other
// bundles), usable as parameters, results and `let` bindings.
//
//   (bundle Mlp (dims D F)
//     (w1 (tensor f32 (D F) host)) (b1 (tensor f32 (F) host)) ...)
//   (func step (dims B D F) (params (p (Mlp D F)) (x ...)) (returns (Mlp D F)) ...)
//
// They are expanded on the S-expressions, before the parser: a bundle value
// `p` of type (Mlp D F) becomes one name per field, `p.w1`, `p.b1`, ... (a
// nested bundle's fields `p.inner.w`), in declared order. So a field is
// read by its dotted name, the ABI takes the fields in that order under
// those names, and everything after this stage (checker, reverse mode, back
// ends) sees only tensors. Where a bundle value stands for its fields: a
// parameter, a `returns` type, an atom in `return` or in a call's
// arguments, `let` of a constructor `(Mlp (w1 e) (b1 e) ...)`, of another
// bundle name, or of a call whose results are bundles, and `:wrt` of a
// `grad`. Misuse (an unknown or missing field, a bundle where a tensor is
// expected, a wrong number of bundle arguments) is E0107.
#pragma once
#include "syntax/diagnostic.h"
#include "syntax/sexpr.h"

namespace shapeml::syntax {

/// The file with every `(bundle ...)` item removed and every use expanded;
/// unchanged when it declares none.
SExprFile expand_bundles(const SExprFile& file, DiagnosticSink& diags);

}  // namespace shapeml::syntax
