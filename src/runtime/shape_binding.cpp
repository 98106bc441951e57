#include "runtime/shape_binding.h"

#include <algorithm>

#include <optional>
#include <set>

namespace shapeml::runtime {
namespace {

using types::Atom;
using types::Poly;

// The variable when `p` is exactly one variable.
std::optional<std::string> lone_var(const Poly& p) {
  if (p.terms().size() != 1) return std::nullopt;
  const types::Term& t = p.terms().begin()->second;
  if (t.coeff != 1 || t.atoms.size() != 1 || t.atoms[0].kind != Atom::Kind::Var) return std::nullopt;
  return t.atoms[0].var;
}

// When `p` = c·v + rest with v the only unbound variable, v not inside a
// floordiv/mod and not multiplied by another atom: (v, c, rest).
struct Linear {
  std::string var;
  int64_t coeff = 0;
  Poly rest;
};
std::optional<Linear> linear_in_one_unbound(const Poly& p, const Binding& b) {
  std::set<std::string> fv;
  p.free_vars(fv);
  std::string v;
  for (const std::string& x : fv)
    if (!b.count(x)) {
      if (!v.empty()) return std::nullopt;  // two unknowns
      v = x;
    }
  if (v.empty()) return std::nullopt;
  Linear l{v, 0, Poly::constant(0)};
  for (const auto& [key, t] : p.terms()) {
    bool mentions = false;
    for (const Atom& a : t.atoms) {
      if (a.kind == Atom::Kind::Var) {
        if (a.var == v) mentions = true;
      } else {
        std::set<std::string> inner;
        a.arg->free_vars(inner);
        if (inner.count(v)) return std::nullopt;  // inside floordiv/mod
      }
    }
    if (!mentions) continue;
    if (t.atoms.size() != 1 || l.coeff != 0) return std::nullopt;  // v·x or v·v
    l.coeff = t.coeff;
  }
  if (l.coeff == 0) return std::nullopt;
  l.rest = p - Poly::constant(l.coeff) * Poly::var(v);
  return l;
}

struct Binder {
  const EntrySig& e;
  std::span<const std::span<const int64_t>> shapes;
  Binding b;
  std::map<std::string, std::string> origin;  // variable -> "input `x` dim 0"

  std::string at(size_t i, size_t j) const { return "input `" + e.params[i].name + "` dimension " + std::to_string(j); }
  std::string vars_of(const Poly& p) const {
    std::set<std::string> fv;
    p.free_vars(fv);
    std::string s;
    for (const std::string& v : fv) {
      auto it = b.find(v);
      if (it == b.end()) continue;
      s += (s.empty() ? "" : ", ") + v + " = " + std::to_string(it->second) + " (from " + origin.at(v) + ")";
    }
    return s;
  }
  std::string type_of(size_t i) const { return e.params[i].type.str(); }

  Status bind(const std::string& v, int64_t value, size_t i, size_t j, const Poly& p) {
    if (value < 1)
      return invalid_argument("entry `" + e.name + "`: " + at(i, j) + " is " + std::to_string(shapes[i][j]) + ", but " +
                              p.str() + " in its type " + type_of(i) + " would make shape variable " + v + " = " +
                              std::to_string(value) + ", and shape variables are >= 1");
    b[v] = value;
    origin[v] = at(i, j);
    return {};
  }

  Result<Binding> run() {
    // Bind to a fixpoint: lone variables first, then linear dimensions.
    for (bool progress = true; progress;) {
      progress = false;
      for (size_t i = 0; i < e.params.size(); ++i)
        for (size_t j = 0; j < e.params[i].type.shape.size(); ++j) {
          const Poly& p = e.params[i].type.shape[j];
          int64_t actual = shapes[i][j];
          if (auto v = lone_var(p); v && !b.count(*v)) {
            if (Status s = bind(*v, actual, i, j, p); !s.ok()) return s;
            progress = true;
          }
        }
      if (progress) continue;
      for (size_t i = 0; i < e.params.size() && !progress; ++i)
        for (size_t j = 0; j < e.params[i].type.shape.size() && !progress; ++j) {
          const Poly& p = e.params[i].type.shape[j];
          auto l = linear_in_one_unbound(p, b);
          if (!l) continue;
          auto rest = l->rest.eval(b);
          if (!rest) return invalid_argument("entry `" + e.name + "`: " + at(i, j) + ": " + p.str() + " overflows with " + vars_of(p));
          int64_t actual = shapes[i][j], diff;
          if (__builtin_sub_overflow(actual, *rest, &diff) || diff % l->coeff != 0)
            return invalid_argument("entry `" + e.name + "`: " + at(i, j) + " is " + std::to_string(actual) + ", but its type " +
                                    type_of(i) + " requires " + p.str() + ", which is " + std::to_string(actual) +
                                    " for no integer " + l->var + (vars_of(p).empty() ? "" : " (with " + vars_of(p) + ")"));
          if (Status s = bind(l->var, diff / l->coeff, i, j, p); !s.ok()) return s;
          progress = true;
        }
      if (progress) continue;
      // An equality in `where` that is linear in one unbound variable once
      // the bound ones are substituted (D = H*Dh with D, H known) solves it.
      for (const WhereSig& w : e.where) {
        if (w.constraint.kind != types::ShapeConstraint::Kind::Eq) continue;
        std::map<std::string, Poly> known;
        for (const auto& [v, x] : b) known[v] = Poly::constant(x);
        Poly diff;
        try {
          diff = (w.constraint.lhs - w.constraint.rhs).subst(known);
        } catch (const types::DimOverflow&) {
          continue;
        }
        auto l = linear_in_one_unbound(diff, b);
        if (!l) continue;
        auto rest = l->rest.constant_value();
        if (!rest || *rest % l->coeff != 0 || -*rest / l->coeff < 1)
          return invalid_argument("entry `" + e.name + "`: where constraint " + w.text + " has no positive integer " + l->var + " with " +
                                  vars_of(w.constraint.lhs - w.constraint.rhs));
        b[l->var] = -*rest / l->coeff;
        origin[l->var] = "where constraint " + w.text;
        progress = true;
        break;
      }
    }
    for (const std::string& v : e.dims)
      if (!b.count(v))
        return invalid_argument("entry `" + e.name + "`: cannot infer shape variable " + v +
                                " from the input shapes: no input dimension or `where` equality determines it");
    // Every dimension must now agree.
    for (size_t i = 0; i < e.params.size(); ++i)
      for (size_t j = 0; j < e.params[i].type.shape.size(); ++j) {
        const Poly& p = e.params[i].type.shape[j];
        auto want = p.eval(b);
        int64_t actual = shapes[i][j];
        if (!want) return invalid_argument("entry `" + e.name + "`: " + at(i, j) + ": " + p.str() + " overflows with " + vars_of(p));
        if (*want == actual) continue;
        std::string why;
        if (auto v = lone_var(p)) why = v.value() + " = " + std::to_string(*want) + " (from " + origin.at(*v) + ")";
        else if (p.is_constant()) why = "the type fixes it";
        else why = p.str() + " = " + std::to_string(*want) + " with " + vars_of(p);
        return invalid_argument("entry `" + e.name + "`: " + at(i, j) + " is " + std::to_string(actual) + ", expected " +
                                std::to_string(*want) + " for type " + type_of(i) + ": " + why + "; input shapes: " +
                                shapes_str());
      }
    for (const WhereSig& w : e.where) {
      auto holds = w.constraint.eval(b);
      if (holds == true) continue;
      std::string vals = vars_of(w.constraint.lhs);
      std::string rhs = vars_of(w.constraint.rhs);
      if (!rhs.empty() && rhs != vals) vals += (vals.empty() ? "" : ", ") + rhs;
      return invalid_argument("entry `" + e.name + "`: where constraint " + w.text +
                              (holds ? " does not hold" : " cannot be evaluated (overflow)") + " for " +
                              (vals.empty() ? std::string("the constants") : vals));
    }
    return b;
  }

  std::string shapes_str() const {
    std::string s;
    for (size_t i = 0; i < shapes.size(); ++i) {
      s += (i ? ", " : "") + e.params[i].name + " (";
      for (size_t j = 0; j < shapes[i].size(); ++j) s += (j ? " " : "") + std::to_string(shapes[i][j]);
      s += ")";
    }
    return s;
  }
};

}  // namespace

Result<Binding> bind_shape_variables(const EntrySig& e, std::span<const std::span<const int64_t>> shapes) {
  return guarded("bind_shape_variables", [&]() -> Result<Binding> {
    if (shapes.size() != e.params.size()) return internal_error("bind_shape_variables: input count differs from the signature");
    for (size_t i = 0; i < shapes.size(); ++i)
      if (shapes[i].size() != e.params[i].type.shape.size()) return internal_error("bind_shape_variables: rank differs from the signature");
    try {
      return Binder{e, shapes, {}, {}}.run();
    } catch (const types::DimOverflow&) {
      return invalid_argument("entry `" + e.name + "`: dimension arithmetic overflows 64-bit integers");
    }
  });
}

Status check_binding(const EntrySig& e, const Binding& b) {
  return guarded("check_binding", [&]() -> Status {
    std::string who = "entry `" + e.name + "`";
    for (const auto& [var, value] : b) {
      if (std::find(e.dims.begin(), e.dims.end(), var) == e.dims.end()) {
        std::string dims;
        for (const std::string& d : e.dims) dims += (dims.empty() ? "" : " ") + d;
        return invalid_argument(who + " has no shape variable `" + var + "` (its shape variables: " + (dims.empty() ? "none" : dims) + ")");
      }
      if (value < 1) return invalid_argument(who + ": shape variable " + var + " = " + std::to_string(value) + "; shape variables are >= 1");
    }
    for (const std::string& d : e.dims)
      if (!b.count(d)) return invalid_argument(who + ": the binding does not give shape variable `" + d + "` a value");
    for (const WhereSig& w : e.where) {
      auto holds = w.constraint.eval(b);
      if (holds == true) continue;
      return invalid_argument(who + ": where constraint " + w.text + (holds ? " does not hold" : " cannot be evaluated (overflow)") +
                              " for " + binding_str(e, b));
    }
    // Every tensor of the signature must be representable: the compiler
    // rejects more than 2^56 elements, the runtime cannot allocate them.
    auto check = [&](const types::TensorType& t, const std::string& what) -> Status {
      int64_t n = 1;
      for (const Poly& p : t.shape) {
        auto v = p.eval(b);
        if (!v) return resource_exhausted(who + ": " + what + " dimension " + p.str() + " overflows 64-bit integers for " + binding_str(e, b));
        if (*v < 1) return invalid_argument(who + ": " + what + " dimension " + p.str() + " is " + std::to_string(*v) + " for " + binding_str(e, b));
        if (__builtin_mul_overflow(n, *v, &n) || n > (int64_t{1} << 56))
          return resource_exhausted(who + ": " + what + " " + t.str() + " has too many elements (more than 2^56) for " + binding_str(e, b));
      }
      return {};
    };
    for (const ParamSig& p : e.params)
      if (Status s = check(p.type, "parameter `" + p.name + "`"); !s.ok()) return s;
    for (size_t k = 0; k < e.returns.size(); ++k)
      if (Status s = check(e.returns[k], "result " + std::to_string(k)); !s.ok()) return s;
    return {};
  });
}

Result<std::vector<int64_t>> evaluate_shape(const types::Shape& shape, const Binding& b) {
  return guarded("evaluate_shape", [&]() -> Result<std::vector<int64_t>> {
    std::vector<int64_t> out;
    for (const Poly& p : shape) {
      auto v = p.eval(b);
      if (!v) return invalid_argument("result dimension " + p.str() + " cannot be evaluated (unbound variable or overflow)");
      if (*v < 0) return invalid_argument("result dimension " + p.str() + " evaluates to " + std::to_string(*v));
      out.push_back(*v);
    }
    return out;
  });
}

}  // namespace shapeml::runtime
