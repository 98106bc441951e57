// Restricted reverse-mode differentiation (spec §4.26,
// docs/design/reverse-mode.md): a program transformation over the typed IR,
// never a run-time tape. For every derived function `(grad NAME OF)` it
// writes NAME's body: OF's body with every call inlined (the forward sweep),
// then, in reverse order, the vector-Jacobian product of every binding that
// lies between a differentiated parameter and the result, seeded with ones
// of the result's type. NAME returns OF's result followed by the gradient of
// the SUM of that result with respect to each parameter in its `wrt`.
// The module is re-checked by the IR verifier afterwards (driver/frontend).
#pragma once
#include "ir/ir.h"
#include "syntax/diagnostic.h"

namespace shapeml::transform {

/// Writes the body of every derived function of `m`, in module order (a
/// derived function can differentiate an earlier one). An operation with no
/// derivative rule on a differentiated path is E0602 in `diags`, at that
/// operation; then `m` is left incomplete and must not be used. Throws
/// std::logic_error on a bug (the driver reports E0900).
void reverse_mode(ir::Module& m, syntax::DiagnosticSink& diags, unsigned obligation_timeout_ms);

}  // namespace shapeml::transform
