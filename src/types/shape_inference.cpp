#include "types/shape_inference.h"

#include <algorithm>
#include <set>

namespace shapeml::types {
namespace {

// The atom as a polynomial of its own.
Poly atom_poly(const Atom& a) {
  if (a.kind == Atom::Kind::Var) return Poly::var(a.var);
  return a.kind == Atom::Kind::FloorDiv ? a.arg->floordiv(a.divisor) : a.arg->mod(a.divisor);
}

// p = coeff·v + rest, with v the only variable of p outside `known`, v of
// degree one and not inside floordiv/mod. nullopt otherwise.
std::optional<InferenceStep> linear_in_one_unknown(const Poly& p, const std::set<std::string>& known) {
  std::set<std::string> fv;
  p.free_vars(fv);
  std::string v;
  for (const std::string& x : fv)
    if (!known.count(x)) {
      if (!v.empty()) return std::nullopt;  // two unknowns
      v = x;
    }
  if (v.empty()) return std::nullopt;
  InferenceStep s;
  s.var = v;
  s.coeff = Poly::constant(0);
  s.rest = Poly::constant(0);
  for (const auto& [key, t] : p.terms()) {
    int occurrences = 0;
    Poly other = Poly::constant(t.coeff);
    for (const Atom& a : t.atoms) {
      if (a.kind == Atom::Kind::Var && a.var == v) {
        ++occurrences;
        continue;
      }
      if (a.kind != Atom::Kind::Var) {
        std::set<std::string> inner;
        a.arg->free_vars(inner);
        if (inner.count(v)) return std::nullopt;  // inside floordiv/mod
      }
      other = other * atom_poly(a);
    }
    if (occurrences > 1) return std::nullopt;  // v·v
    if (occurrences == 1) s.coeff = s.coeff + other;
    else s.rest = s.rest + other;
  }
  // The coefficient must be nonzero for every value of the known variables
  // (all >= 1), or for some inputs the dimension does not fix v at all
  // (`(+ (* (mod K 2) V) 1)` for even K: issue 24, item 16): products of
  // variables with coefficients of one sign are; a floordiv or mod factor
  // can be 0.
  bool positive = true, negative = true;
  for (const auto& [key, t] : s.coeff.terms()) {
    for (const Atom& a : t.atoms)
      if (a.kind != Atom::Kind::Var) return std::nullopt;
    positive &= t.coeff > 0;
    negative &= t.coeff < 0;
  }
  if (s.coeff.terms().empty() || !(positive || negative)) return std::nullopt;
  s.equation = p;
  return s;
}

}  // namespace

std::optional<std::string> lone_variable(const Poly& p) {
  if (p.terms().size() != 1) return std::nullopt;
  const Term& t = p.terms().begin()->second;
  if (t.coeff != 1 || t.atoms.size() != 1 || t.atoms[0].kind != Atom::Kind::Var) return std::nullopt;
  return t.atoms[0].var;
}

InferencePlan plan_shape_inference(const std::vector<std::string>& dims, const std::vector<Shape>& params,
                                   const std::vector<ShapeConstraint>& where, const std::set<std::string>& given) {
  InferencePlan plan;
  std::set<std::string> known = given;
  auto add = [&](InferenceStep s) {
    known.insert(s.var);
    plan.steps.push_back(std::move(s));
  };
  for (bool progress = true; progress;) {
    progress = false;
    // 1. Lone variables, all of them in one sweep.
    for (size_t i = 0; i < params.size(); ++i)
      for (size_t j = 0; j < params[i].size(); ++j)
        if (auto v = lone_variable(params[i][j]); v && !known.count(*v)) {
          InferenceStep s;
          s.source = InferenceStep::Source::ParamDim;
          s.param = i;
          s.dim = j;
          s.var = *v;
          s.coeff = Poly::constant(1);
          s.rest = Poly::constant(0);
          s.equation = params[i][j];
          add(std::move(s));
          progress = true;
        }
    if (progress) continue;
    // 2. The first dimension linear in one unknown.
    for (size_t i = 0; i < params.size() && !progress; ++i)
      for (size_t j = 0; j < params[i].size() && !progress; ++j)
        if (auto s = linear_in_one_unknown(params[i][j], known)) {
          s->source = InferenceStep::Source::ParamDim;
          s->param = i;
          s->dim = j;
          add(std::move(*s));
          progress = true;
        }
    if (progress) continue;
    // 3. The first `where` equality linear in one unknown.
    for (size_t k = 0; k < where.size() && !progress; ++k) {
      if (where[k].kind != ShapeConstraint::Kind::Eq) continue;
      if (auto s = linear_in_one_unknown(where[k].lhs - where[k].rhs, known)) {
        s->source = InferenceStep::Source::Where;
        s->where_index = k;
        add(std::move(*s));
        progress = true;
      }
    }
  }
  for (const std::string& d : dims)
    if (!known.count(d)) plan.undetermined.push_back(d);
  return plan;
}

ConcreteSolve solve_shape_variables(const InferencePlan& plan, const std::vector<const std::vector<int64_t>*>& shapes,
                                    const std::map<std::string, int64_t>& known) {
  ConcreteSolve out;
  out.binding = known;
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const InferenceStep& s = plan.steps[k];
    if (out.binding.count(s.var)) continue;
    int64_t target = 0;
    if (s.source == InferenceStep::Source::ParamDim) {
      if (s.param >= shapes.size() || !shapes[s.param] || s.dim >= shapes[s.param]->size()) continue;
      target = (*shapes[s.param])[s.dim];
    }
    std::set<std::string> needs;
    s.coeff.free_vars(needs);
    s.rest.free_vars(needs);
    bool ready = true;
    for (const auto& x : needs) ready &= out.binding.count(x) > 0;
    if (!ready) continue;  // an earlier step it relies on was skipped
    InferenceFailure f;
    f.step = k;
    f.target = target;
    auto c = s.coeff.eval(out.binding);
    auto r = s.rest.eval(out.binding);
    if (!c || !r) {
      f.kind = InferenceFailure::Kind::Overflow;
      out.failure = f;
      return out;
    }
    f.coeff = *c;
    f.rest = *r;
    int64_t diff;
    if (*c == 0) {
      f.kind = InferenceFailure::Kind::ZeroCoeff;
      out.failure = f;
      return out;
    }
    if (__builtin_sub_overflow(target, *r, &diff)) {
      f.kind = InferenceFailure::Kind::Overflow;
      out.failure = f;
      return out;
    }
    if (diff % *c != 0) {
      f.kind = InferenceFailure::Kind::NotMultiple;
      out.failure = f;
      return out;
    }
    // INT64_MIN / -1 cannot happen: |c| >= 1 and diff % c == 0 with c = -1
    // only overflows for diff = INT64_MIN, which the subtraction excludes
    // for non-negative sizes; guard anyway.
    if (*c == -1 && diff == INT64_MIN) {
      f.kind = InferenceFailure::Kind::Overflow;
      out.failure = f;
      return out;
    }
    f.value = diff / *c;
    if (f.value < 1) {
      f.kind = InferenceFailure::Kind::NotPositive;
      out.failure = f;
      return out;
    }
    out.binding[s.var] = f.value;
    out.bound_by[s.var] = k;
  }
  return out;
}

ConcreteSolve solve_call_shape_variables(const std::vector<std::string>& dims, const std::vector<Shape>& params,
                                         const std::vector<ShapeConstraint>& where, const std::vector<const std::vector<int64_t>*>& shapes,
                                         const std::map<std::string, int64_t>& given) {
  std::set<std::string> names;
  for (const auto& [v, x] : given) names.insert(v);
  return solve_shape_variables(plan_shape_inference(dims, params, where, names), shapes, given);
}

SymbolicSolve solve_shape_variables_symbolic(const InferencePlan& plan, const std::vector<Shape>& arg_shapes,
                                             const std::map<std::string, Poly>& given) {
  SymbolicSolve out;
  out.substitution = given;
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const InferenceStep& s = plan.steps[k];
    if (out.substitution.count(s.var)) continue;
    Poly target = Poly::constant(0);
    if (s.source == InferenceStep::Source::ParamDim) {
      if (s.param >= arg_shapes.size() || s.dim >= arg_shapes[s.param].size()) {
        out.failed_step = k;
        return out;
      }
      target = arg_shapes[s.param][s.dim];
    }
    Poly numerator = target - s.rest.subst(out.substitution);
    // The coefficient must be one monomial c·a1·...·an (a constant, or e.g.
    // the caller's H for (* H Dh) with H given at the call) that divides every
    // term of the numerator: then the quotient is exact for every value of
    // the caller's variables.
    Poly coeff = s.coeff.subst(out.substitution);
    std::optional<Poly> q;
    if (coeff.terms().size() == 1) {
      const Term& m = coeff.terms().begin()->second;
      q = Poly::constant(0);
      for (const auto& [key, t] : numerator.terms()) {
        if (m.coeff == 0 || t.coeff % m.coeff != 0) {
          q.reset();
          break;
        }
        std::vector<Atom> rest = t.atoms;  // t's atoms minus m's (multisets)
        bool divides = true;
        for (const Atom& a : m.atoms) {
          auto it = std::find_if(rest.begin(), rest.end(), [&](const Atom& b) { return b.key == a.key; });
          if (it == rest.end()) {
            divides = false;
            break;
          }
          rest.erase(it);
        }
        if (!divides) {
          q.reset();
          break;
        }
        Poly term = Poly::constant(t.coeff / m.coeff);
        for (const Atom& a : rest) term = term * atom_poly(a);
        *q = *q + term;
      }
    }
    if (!q) {
      out.failed_step = k;
      return out;
    }
    out.substitution[s.var] = *q;
  }
  return out;
}

}  // namespace shapeml::types
