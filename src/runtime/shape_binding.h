// Binding an entry's shape variables from the shapes of actual inputs, and
// evaluating its result shapes under that binding.
//
// The variables are solved by the entry's inference plan (the one rule of
// types/shape_inference.h, computed when the manifest is parsed). Every
// dimension is then evaluated under the binding and compared with the actual
// size; then the `where` constraints are checked. Every error names the
// input, the dimension, the expected expression, and the variables with their
// values and where each was bound.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/manifest.h"
#include "runtime/status.h"

namespace shapeml::runtime {

/// `shapes[i]` is the shape of input i; its length must already equal
/// e.params[i]'s rank (Module::call checks counts and ranks first).
/// `given`: the values of the entry's `(given ...)` variables, supplied by
/// the call (exactly those, each >= 1); the rest are inferred after them.
/// Failures are INVALID_ARGUMENT.
Result<Binding> bind_shape_variables(const EntrySig& e, std::span<const std::span<const int64_t>> shapes, const Binding& given = {});

/// Checks a binding given explicitly (shapeml_entry_specialize, AOT build
/// options): it names only the entry's shape variables, gives every one a
/// value >= 1, satisfies the `where` constraints (INVALID_ARGUMENT), and
/// makes no tensor of the signature exceed 2^56 elements or overflow
/// (RESOURCE_EXHAUSTED).
Status check_binding(const EntrySig& e, const Binding& b);

/// The concrete shape of `shape` under `b` (every variable bound).
Result<std::vector<int64_t>> evaluate_shape(const types::Shape& shape, const Binding& b);

}  // namespace shapeml::runtime
