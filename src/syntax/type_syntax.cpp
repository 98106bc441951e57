#include "syntax/type_syntax.h"

namespace shapeml::syntax {
namespace {

bool head_is(const SExpr& s, const char* h) { return s.is_list() && !s.items.empty() && s.items[0].is_symbol(h); }

void fail(const SyntaxErrorFn& err, const SExpr& at, const std::string& msg) { err("E0003", at.span, msg); }

}  // namespace

std::optional<DimAst> read_dim(const SExpr& s, const SyntaxErrorFn& err) {
  DimAst d;
  d.span = s.span;
  if (s.kind == SExpr::Kind::Int) {
    d.kind = DimAst::Kind::Int;
    d.value = s.int_value;
    return d;
  }
  if (s.is_symbol()) {
    d.kind = DimAst::Kind::Var;
    d.name = s.text;
    return d;
  }
  if (!s.is_list() || s.items.empty() || !s.items[0].is_symbol()) {
    fail(err, s, "expected a dimension: an integer, a shape variable, or `(+|-|*|floordiv|mod ...)`");
    return std::nullopt;
  }
  const std::string& h = s.items[0].text;
  size_t n = s.items.size() - 1;
  if (h == "+" || h == "*") {
    d.kind = h == "+" ? DimAst::Kind::Add : DimAst::Kind::Mul;
    if (n < 2) {
      fail(err, s, "`" + h + "` takes at least two dimensions");
      return std::nullopt;
    }
  } else if (h == "-" || h == "floordiv" || h == "mod") {
    d.kind = h == "-" ? DimAst::Kind::Sub : h == "floordiv" ? DimAst::Kind::FloorDiv : DimAst::Kind::Mod;
    if (n != 2) {
      fail(err, s, "`" + h + "` takes exactly two dimensions");
      return std::nullopt;
    }
    if (h != "-" && (s.items[2].kind != SExpr::Kind::Int || s.items[2].int_value < 1)) {
      fail(err, s.items[2], "`" + h + "` divides by a positive integer constant only");
      return std::nullopt;
    }
  } else {
    fail(err, s, "unknown dimension operator `" + h + "` (expected +, -, *, floordiv, mod)");
    return std::nullopt;
  }
  for (size_t i = 1; i < s.items.size(); ++i) {
    auto a = read_dim(s.items[i], err);
    if (!a) return std::nullopt;
    d.args.push_back(std::move(*a));
  }
  return d;
}

std::optional<types::DType> read_dtype(const SExpr& s, const SyntaxErrorFn& err) {
  std::string var;
  return read_dtype_or_var(s, nullptr, var, err);
}

std::optional<types::DType> read_dtype_or_var(const SExpr& s, const TypeVarScope* vars, std::string& var, const SyntaxErrorFn& err) {
  var.clear();
  if (s.is_symbol()) {
    if (auto d = types::parse_dtype(s.text)) return d;
    if (vars && vars->dtypes.count(s.text)) {
      var = s.text;
      return types::DType::Var;
    }
  }
  std::string msg = "expected a dtype: f32, f64, bf16, i32, i64 or bool";
  if (vars && !vars->dtypes.empty()) {
    std::string names;
    for (const auto& n : vars->dtypes) names += (names.empty() ? "" : ", ") + n;
    msg += ", or a dtype variable of this function (" + names + ")";
  } else if (vars && s.is_symbol()) {
    msg += "; a generic function declares its dtype variables with `(dtypes " + s.text + ")`";
  }
  fail(err, s, msg);
  return std::nullopt;
}

std::optional<types::Device> read_device(const SExpr& s, const SyntaxErrorFn& err, const TypeVarScope* vars) {
  if (s.is_symbol("host")) return types::Device::host();
  if (head_is(s, "cuda") && s.items.size() == 2 && s.items[1].kind == SExpr::Kind::Int && s.items[1].int_value >= 0 &&
      s.items[1].int_value < (1 << 16))
    return types::Device::cuda(static_cast<int32_t>(s.items[1].int_value));
  if (s.is_symbol() && vars && vars->devices.count(s.text)) return types::Device::variable(s.text);
  std::string msg = "expected a device: `host` or `(cuda N)` with 0 <= N < 65536";
  if (vars && !vars->devices.empty()) {
    std::string names;
    for (const auto& n : vars->devices) names += (names.empty() ? "" : ", ") + n;
    msg += ", or a device variable of this function (" + names + ")";
  } else if (vars && s.is_symbol()) {
    msg += "; a generic function declares its device variables with `(devices " + s.text + ")`";
  }
  fail(err, s, msg);
  return std::nullopt;
}

std::optional<TypeAst> read_type(const SExpr& s, const SyntaxErrorFn& err, const TypeVarScope* vars) {
  if (!head_is(s, "tensor") || s.items.size() != 4) {
    fail(err, s, "expected a tensor type `(tensor DTYPE (DIMS...) DEVICE)`");
    return std::nullopt;
  }
  TypeAst t;
  t.span = s.span;
  std::string dtype_var;
  auto dt = read_dtype_or_var(s.items[1], vars, dtype_var, err);
  std::optional<std::vector<DimAst>> ds;
  if (!s.items[2].is_list()) {
    fail(err, s.items[2], "expected a list of dimensions `(D1 D2 ...)`");
  } else {
    ds.emplace();
    for (const SExpr& x : s.items[2].items) {
      auto d = read_dim(x, err);
      if (!d) {
        ds.reset();
        break;
      }
      ds->push_back(std::move(*d));
    }
  }
  auto dv = read_device(s.items[3], err, vars);
  if (!dt || !ds || !dv) return std::nullopt;
  t.dtype = *dt;
  t.dtype_var = dtype_var;
  t.dims = std::move(*ds);
  t.device = *dv;
  return t;
}

std::optional<ConstraintAst> read_constraint(const SExpr& s, const SyntaxErrorFn& err) {
  using K = types::ShapeConstraint::Kind;
  static const std::pair<const char*, K> kinds[] = {{"=", K::Eq},  {"!=", K::Ne}, {"<", K::Lt},          {"<=", K::Le},
                                                    {">", K::Gt}, {">=", K::Ge}, {"divides", K::Divides}};
  if (s.is_list() && s.items.size() == 3 && s.items[0].is_symbol())
    for (const auto& [name, kind] : kinds)
      if (s.items[0].text == name) {
        auto a = read_dim(s.items[1], err), b = read_dim(s.items[2], err);
        if (!a || !b) return std::nullopt;
        return ConstraintAst{kind, std::move(*a), std::move(*b), s.span};
      }
  fail(err, s, "expected a constraint `(= a b)`, `(!= a b)`, `(< a b)`, `(<= a b)`, `(> a b)`, `(>= a b)` or `(divides a b)`");
  return std::nullopt;
}

std::optional<types::Poly> dim_to_poly(const DimAst& d, const std::function<bool(const std::string&)>& is_variable, bool allow_negative,
                                       const SyntaxErrorFn& err) {
  using types::Poly;
  try {
    switch (d.kind) {
      case DimAst::Kind::Int:
        if (d.value < 0 && !allow_negative) {
          err("E0305", d.span, "dimension " + std::to_string(d.value) + " is negative");
          return std::nullopt;
        }
        return Poly::constant(d.value);
      case DimAst::Kind::Var:
        if (!is_variable(d.name)) {
          err("E0104", d.span, "unknown shape variable `" + d.name + "`");
          return std::nullopt;
        }
        return Poly::var(d.name);
      default: break;
    }
    std::vector<Poly> a;
    for (const auto& x : d.args) {
      auto p = dim_to_poly(x, is_variable, allow_negative, err);
      if (!p) return std::nullopt;
      a.push_back(*p);
    }
    Poly r = a[0];
    switch (d.kind) {
      case DimAst::Kind::Add: for (size_t i = 1; i < a.size(); ++i) r = r + a[i]; break;
      case DimAst::Kind::Mul: for (size_t i = 1; i < a.size(); ++i) r = r * a[i]; break;
      case DimAst::Kind::Sub: r = a[0] - a[1]; break;
      case DimAst::Kind::FloorDiv: r = a[0].floordiv(d.args[1].value); break;
      case DimAst::Kind::Mod: r = a[0].mod(d.args[1].value); break;
      default: break;
    }
    return r;
  } catch (const types::DimOverflow& e) {
    err("E0004", d.span, e.what());
    return std::nullopt;
  }
}

}  // namespace shapeml::syntax
