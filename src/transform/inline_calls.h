// Call inlining on the typed IR: a function's body with every call replaced
// by the callee's body, recursively, the callee's shape variables replaced
// by the dimensions the call binds them to (spec §4.18: inferred from the
// arguments' types by types/shape_inference.h, or given with `:dims`).
// The reverse-mode pass differentiates the result: one flat body, one
// reverse sweep, no call boundaries to carry cotangents across.
#pragma once
#include "ir/ir.h"

namespace shapeml::transform {

/// `f` with no calls left. Values keep their names, prefixed with the
/// callee's (`rmsnorm.ms`); spans point at the callee's source. Throws
/// std::logic_error on IR the checker would not have produced (a call of a
/// missing function, bindings that cannot be inferred).
ir::Function inline_calls(const ir::Module& m, const ir::Function& f);

}  // namespace shapeml::transform
