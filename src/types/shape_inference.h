// How a function's shape variables are determined by the shapes of its
// parameters (spec §5.2, "Binding shape variables"). This is the one place
// the rule lives; it is used by the elaborator (symbolic arguments at a
// call), the CPU emitter (inlined calls at concrete sizes), the runtime
// (concrete input shapes of an entry point) and `shapemlc run`.
//
// The rule: repeat until nothing changes —
//   1. a parameter dimension that is a lone variable binds it;
//   2. otherwise the first parameter dimension that is linear in exactly one
//      unbound variable V, c·V + r with c and r over bound variables only and
//      V not inside floordiv/mod, solves for V;
//   3. otherwise the first `where` equality that is linear in one unbound
//      variable solves for it (D = H·Dh with D and H known gives Dh).
// A variable that no step determines is undetermined: the checker rejects
// such a function (E0308), so the runtime never meets one.
//
// The plan depends only on the signature; solving runs it on values.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "types/tensor_type.h"

namespace shapeml::types {

/// How an error about a binding whose dimension arithmetic overflows 64 bits
/// begins (a `dim_value`, a slice start, a repeat count that cannot be
/// evaluated at that binding): the compile-error classifier
/// (jit/jit_code_provider.cpp) reports it as INVALID_ARGUMENT, never INTERNAL.
inline constexpr const char* kBindingOverflows = "the binding overflows 64-bit dimension arithmetic";

/// One step: `var` solved from coeff·var + rest = TARGET, where coeff and
/// rest mention only variables solved by earlier steps. TARGET is the size
/// of dimension `dim` of parameter `param` (ParamDim), or 0 (Where: the
/// equality lhs - rhs = 0 of `where[where_index]`).
struct InferenceStep {
  enum class Source { ParamDim, Where } source = Source::ParamDim;
  size_t param = 0, dim = 0;
  size_t where_index = 0;
  std::string var;
  Poly coeff, rest;
  /// The dimension as declared (ParamDim) or lhs - rhs (Where).
  Poly equation;
};

struct InferencePlan {
  std::vector<InferenceStep> steps;
  /// Declared shape variables that no step determines, in declaration order.
  std::vector<std::string> undetermined;
};

/// Plans the inference for a signature: `dims` in declaration order,
/// `params[i]` the shape of parameter i, `where` the constraints.
/// `given`: variables whose values the caller supplies (a call's `:dims`,
/// spec §4.18); they count as known from the start, so a dimension such as
/// (* H Dh) solves for Dh once H is given. They get no step.
InferencePlan plan_shape_inference(const std::vector<std::string>& dims, const std::vector<Shape>& params,
                                   const std::vector<ShapeConstraint>& where, const std::set<std::string>& given = {});

/// When `p` is exactly one variable with coefficient 1, its name.
std::optional<std::string> lone_variable(const Poly& p);

/// Why a concrete solve failed at `step`.
struct InferenceFailure {
  enum class Kind {
    Overflow,     // coeff or rest does not fit in 64 bits
    ZeroCoeff,    // the coefficient evaluates to 0: the size says nothing about var
    NotMultiple,  // target - rest is not a multiple of coeff: no integer var
    NotPositive,  // the solution is < 1
  } kind = Kind::Overflow;
  size_t step = 0;
  int64_t target = 0, coeff = 0, rest = 0, value = 0;
};

/// Runs `plan` on concrete sizes. `shapes[i]` is the shape of parameter i,
/// or null when parameter i is not known (then steps that read it, and steps
/// that need what they would solve, are skipped). `known` seeds the binding
/// (e.g. from `--bind`); a step whose variable is already known is skipped.
/// On success every variable some runnable step solves is bound; variables
/// left unbound are simply absent. Throws nothing.
struct ConcreteSolve {
  std::map<std::string, int64_t> binding;
  /// For each bound variable, the index of the step that bound it (absent
  /// for variables that came from `known`).
  std::map<std::string, size_t> bound_by;
  std::optional<InferenceFailure> failure;
};
ConcreteSolve solve_shape_variables(const InferencePlan& plan, const std::vector<const std::vector<int64_t>*>& shapes,
                                    const std::map<std::string, int64_t>& known = {});

/// A call's binding at concrete sizes (an inlined call in a back end): the
/// callee's variables in `given` (its `:dims`, evaluated) first, the rest by
/// the plan for `dims`/`params`/`where` with those given. One function so
/// that every back end binds a call the same way.
ConcreteSolve solve_call_shape_variables(const std::vector<std::string>& dims, const std::vector<Shape>& params,
                                         const std::vector<ShapeConstraint>& where, const std::vector<const std::vector<int64_t>*>& shapes,
                                         const std::map<std::string, int64_t>& given);

/// Runs `plan` on symbolic sizes (a call's argument dimensions, over the
/// caller's variables). A step whose division is not exact symbolically
/// (the coefficient is not one monomial, a constant or a product such as the
/// caller's H, that divides every term of target - rest) fails: `failed_step` is set and the substitution holds
/// what was solved before it. May throw DimOverflow.
struct SymbolicSolve {
  std::map<std::string, Poly> substitution;
  std::optional<size_t> failed_step;
};
/// `given` seeds the substitution (a call's explicit `:dims`, planned with
/// the same names as plan_shape_inference's `given`).
SymbolicSolve solve_shape_variables_symbolic(const InferencePlan& plan, const std::vector<Shape>& arg_shapes,
                                             const std::map<std::string, Poly>& given = {});

}  // namespace shapeml::types
