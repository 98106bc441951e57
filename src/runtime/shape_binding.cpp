#include "runtime/shape_binding.h"

#include <algorithm>

#include <optional>
#include <set>

namespace shapeml::runtime {
namespace {

using types::Atom;
using types::Poly;

using types::lone_variable;

struct Binder {
  const EntrySig& e;
  std::span<const std::span<const int64_t>> shapes;
  const Binding& given;
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

  // Where step `k` of the entry's inference plan reads its value.
  std::string source_of(size_t k) const {
    const types::InferenceStep& s = e.inference.steps[k];
    if (s.source == types::InferenceStep::Source::Where) return "where constraint " + e.where[s.where_index].text;
    return at(s.param, s.dim);
  }

  // The values the call gives: exactly the entry's `given` variables, >= 1.
  Status check_given() const {
    std::string who = "entry `" + e.name + "`";
    std::string list;
    for (const std::string& g : e.given) list += (list.empty() ? "" : " ") + g;
    for (const auto& [var, value] : given) {
      if (std::find(e.given.begin(), e.given.end(), var) == e.given.end()) {
        bool is_dim = std::find(e.dims.begin(), e.dims.end(), var) != e.dims.end();
        return invalid_argument(who + (is_dim ? ": shape variable `" + var + "` is inferred from the input shapes and cannot be given at the call"
                                              : " has no shape variable `" + var + "`") +
                                (list.empty() ? " (the entry takes no shape variables at the call)" : " (it takes " + list + " at the call)"));
      }
      if (value < 1) return invalid_argument(who + ": shape variable " + var + " = " + std::to_string(value) + " given at the call; shape variables are >= 1");
    }
    for (const std::string& g : e.given)
      if (!given.count(g))
        return invalid_argument(who + " takes shape variable `" + g + "` at the call (declared `(given " + list +
                                ")`), and this call does not give it (the call options' dims)");
    return {};
  }

  Result<Binding> run() {
    if (Status s = check_given(); !s.ok()) return s;
    for (const auto& [var, value] : given) origin[var] = "the call";
    // The one rule of types/shape_inference.h, run on the actual sizes.
    std::vector<const std::vector<int64_t>*> dims;
    std::vector<std::vector<int64_t>> copies;
    copies.reserve(shapes.size());
    for (const auto& sh : shapes) copies.emplace_back(sh.begin(), sh.end());
    for (const auto& c : copies) dims.push_back(&c);
    types::ConcreteSolve solved = types::solve_shape_variables(e.inference, dims, given);
    b = solved.binding;
    for (const auto& [v, k] : solved.bound_by) origin[v] = source_of(k);
    if (solved.failure) {
      const types::InferenceFailure& f = *solved.failure;
      const types::InferenceStep& s = e.inference.steps[f.step];
      bool param = s.source == types::InferenceStep::Source::ParamDim;
      std::string where = "entry `" + e.name + "`: " + source_of(f.step);
      std::string with = vars_of(s.equation).empty() ? "" : " (with " + vars_of(s.equation) + ")";
      switch (f.kind) {
        case types::InferenceFailure::Kind::Overflow:
          return invalid_argument(where + ": " + s.equation.str() + " overflows 64-bit integers" + with);
        case types::InferenceFailure::Kind::ZeroCoeff:
          return invalid_argument(where + ": the coefficient of " + s.var + " in " + s.equation.str() + " is 0" + with +
                                  ", so it does not determine " + s.var);
        case types::InferenceFailure::Kind::NotMultiple:
          if (param)
            return invalid_argument(where + " is " + std::to_string(f.target) + ", but its type " + type_of(s.param) + " requires " +
                                    s.equation.str() + ", which is " + std::to_string(f.target) + " for no integer " + s.var + with);
          return invalid_argument(where + " has no integer " + s.var + with);
        case types::InferenceFailure::Kind::NotPositive:
          if (param)
            return invalid_argument(where + " is " + std::to_string(f.target) + ", but " + s.equation.str() + " in its type " +
                                    type_of(s.param) + " would make shape variable " + s.var + " = " + std::to_string(f.value) +
                                    ", and shape variables are >= 1");
          return invalid_argument(where + " has no positive integer " + s.var + with + " (it would be " + std::to_string(f.value) + ")");
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
        if (auto v = lone_variable(p)) why = v.value() + " = " + std::to_string(*want) + " (from " + origin.at(*v) + ")";
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

Result<Binding> bind_shape_variables(const EntrySig& e, std::span<const std::span<const int64_t>> shapes, const Binding& given) {
  return guarded("bind_shape_variables", [&]() -> Result<Binding> {
    if (shapes.size() != e.params.size()) return internal_error("bind_shape_variables: input count differs from the signature");
    for (size_t i = 0; i < shapes.size(); ++i)
      if (shapes[i].size() != e.params[i].type.shape.size()) return internal_error("bind_shape_variables: rank differs from the signature");
    try {
      Result<Binding> b = Binder{e, shapes, given, {}, {}}.run();
      // An instance's bindings carry its dtype and device values (manifest.h).
      if (b.ok())
        for (const auto& [v, value] : e.type_bind) b->emplace(v, value);
      return b;
    } catch (const types::DimOverflow& ex) {
      return invalid_argument("entry `" + e.name + "`: " + ex.what());
    }
  });
}

Status check_binding(const EntrySig& e, const Binding& b) {
  return guarded("check_binding", [&]() -> Status {
    std::string who = "entry `" + e.name + "`";
    for (const auto& [var, value] : b) {
      if (auto t = e.type_bind.find(var); t != e.type_bind.end()) {  // an instance's dtype/device value
        if (value != t->second) return invalid_argument(who + ": the binding of `" + var + "` is not this instance's");
        continue;
      }
      if (std::find(e.dims.begin(), e.dims.end(), var) == e.dims.end()) {
        std::string dims;
        for (const std::string& d : e.dims) dims += (dims.empty() ? "" : " ") + d;
        return invalid_argument(who + " has no shape variable `" + var + "` (its shape variables: " + (dims.empty() ? "none" : dims) + ")");
      }
      if (value < 1) return invalid_argument(who + ": shape variable " + var + " = " + std::to_string(value) + "; shape variables are >= 1");
    }
    for (const std::string& d : e.dims)
      if (!b.count(d)) return invalid_argument(who + ": the binding does not give shape variable `" + d + "` a value");
    for (const auto& [v, value] : e.type_bind)
      if (!b.count(v)) return invalid_argument(who + ": the binding does not give `" + v + "` a value");
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
