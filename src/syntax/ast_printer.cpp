// AST -> S-expressions -> canonical text (`shapemlc --emit=ast`).
#include <cstdio>

#include "syntax/parser.h"

namespace shapeml::syntax {
namespace {

SExpr sym(const std::string& s) {
  SExpr e;
  e.kind = SExpr::Kind::Symbol;
  e.text = s;
  return e;
}
SExpr kw(const std::string& s) {
  SExpr e;
  e.kind = SExpr::Kind::Keyword;
  e.text = s;
  return e;
}
SExpr num(int64_t v) { return sym(std::to_string(v)); }
SExpr list(std::vector<SExpr> items) {
  SExpr e;
  e.kind = SExpr::Kind::List;
  e.items = std::move(items);
  return e;
}

SExpr dim_sx(const DimAst& d) {
  switch (d.kind) {
    case DimAst::Kind::Int: return num(d.value);
    case DimAst::Kind::Var: return sym(d.name);
    default: break;
  }
  const char* h = d.kind == DimAst::Kind::Add ? "+" : d.kind == DimAst::Kind::Sub ? "-" : d.kind == DimAst::Kind::Mul ? "*"
                  : d.kind == DimAst::Kind::FloorDiv ? "floordiv" : "mod";
  std::vector<SExpr> items{sym(h)};
  for (const auto& a : d.args) items.push_back(dim_sx(a));
  return list(std::move(items));
}

SExpr dims_sx(const std::vector<DimAst>& ds) {
  std::vector<SExpr> items;
  for (const auto& d : ds) items.push_back(dim_sx(d));
  return list(std::move(items));
}

SExpr device_sx(const types::Device& d) {
  if (d.kind == types::Device::Kind::Host) return sym("host");
  if (d.is_var()) return sym(d.var);
  return list({sym("cuda"), num(d.ordinal)});
}

SExpr dtype_sx(types::DType d, const std::string& var) { return sym(d == types::DType::Var ? var : std::string(types::dtype_name(d))); }

SExpr type_sx(const TypeAst& t) {
  return list({sym("tensor"), dtype_sx(t.dtype, t.dtype_var), dims_sx(t.dims), device_sx(t.device)});
}

SExpr expr_sx(const ExprAst& x) {
  if (x.kind == ExprAst::Kind::Var) return sym(x.name);
  if (x.kind == ExprAst::Kind::Number) return sym(x.literal);
  std::vector<SExpr> items{sym(std::string(op_name(x.op)))};
  if (x.op == OpKind::Call) {
    items.push_back(sym(x.name));
    if (x.has_call_dims) {
      std::vector<SExpr> ds;
      for (const auto& d : x.call_dims) ds.push_back(list({sym(d.var), dim_sx(d.value)}));
      items.push_back(kw("dims"));
      items.push_back(list(std::move(ds)));
    }
  }
  for (const auto& o : x.operands) items.push_back(expr_sx(o));
  switch (op_family(x.op)) {
    case OpFamily::Cast: items.push_back(dtype_sx(*x.dtype, x.dtype_var)); break;
    case OpFamily::Const:
      items.push_back(dtype_sx(*x.dtype, x.dtype_var));
      if (x.device) items.push_back(device_sx(*x.device));
      break;
    case OpFamily::Fill:
      if (x.type) items.push_back(type_sx(*x.type));
      break;
    case OpFamily::Iota: items.push_back(type_sx(*x.type)); break;
    case OpFamily::Permute: {
      std::vector<SExpr> p;
      for (int64_t v : x.ints) p.push_back(num(v));
      items.push_back(list(std::move(p)));
      break;
    }
    case OpFamily::Reshape: case OpFamily::BroadcastTo: items.push_back(dims_sx(x.shape)); break;
    case OpFamily::CopyToDevice: items.push_back(device_sx(*x.device)); break;
    case OpFamily::DimValue:
      items.push_back(dim_sx(*x.repeats));
      items.push_back(dtype_sx(*x.dtype, x.dtype_var));
      if (x.device) items.push_back(device_sx(*x.device));
      break;
    default: break;
  }
  if (x.repeats && op_family(x.op) == OpFamily::RepeatInterleave) { items.push_back(kw("repeats")); items.push_back(dim_sx(*x.repeats)); }
  if (x.axis) { items.push_back(kw("axis")); items.push_back(num(*x.axis)); }
  if (x.start) { items.push_back(kw("start")); items.push_back(dim_sx(*x.start)); }
  if (x.size) { items.push_back(kw("size")); items.push_back(dim_sx(*x.size)); }
  if (x.has_axes) {
    std::vector<SExpr> a;
    for (int64_t v : x.ints) a.push_back(num(v));
    items.push_back(kw("axes"));
    items.push_back(list(std::move(a)));
  }
  if (x.keepdims) { items.push_back(kw("keepdims")); items.push_back(sym("true")); }
  if (x.reverse) { items.push_back(kw("reverse")); items.push_back(sym("true")); }
  if (x.k) { items.push_back(kw("k")); items.push_back(num(*x.k)); }
  if (x.low) { items.push_back(kw("low")); items.push_back(dim_sx(*x.low)); }
  if (x.high) { items.push_back(kw("high")); items.push_back(dim_sx(*x.high)); }
  if (!x.pad_value.empty()) { items.push_back(kw("value")); items.push_back(sym(x.pad_value[0].literal)); }
  return list(std::move(items));
}

SExpr func_sx(const FuncAst& f) {
  if (!f.grad_of.empty()) {
    std::vector<SExpr> g{sym("grad"), sym(f.name), sym(f.grad_of)};
    if (f.has_wrt) {
      std::vector<SExpr> w;
      for (const auto& [n, sp] : f.wrt) w.push_back(sym(n));
      g.push_back(kw("wrt"));
      g.push_back(list(std::move(w)));
    }
    return list(std::move(g));
  }
  std::vector<SExpr> items{sym("func"), sym(f.name)};
  if (!f.dims.empty()) {
    std::vector<SExpr> d{sym("dims")};
    for (const auto& [n, sp] : f.dims) d.push_back(sym(n));
    items.push_back(list(std::move(d)));
  }
  if (!f.dtype_vars.empty()) {
    std::vector<SExpr> d{sym("dtypes")};
    for (const auto& v : f.dtype_vars) {
      if (v.set == types::kAllDTypes) {
        d.push_back(sym(v.name));
        continue;
      }
      std::vector<SExpr> one{sym(v.name)};
      for (types::DType t : {types::DType::F32, types::DType::F64, types::DType::BF16, types::DType::I32, types::DType::I64, types::DType::Bool})
        if (v.set & types::dtype_bit(t)) one.push_back(sym(std::string(types::dtype_name(t))));
      d.push_back(list(std::move(one)));
    }
    items.push_back(list(std::move(d)));
  }
  if (!f.device_vars.empty()) {
    std::vector<SExpr> d{sym("devices")};
    for (const auto& [n, sp] : f.device_vars) d.push_back(sym(n));
    items.push_back(list(std::move(d)));
  }
  if (!f.given.empty()) {
    std::vector<SExpr> g{sym("given")};
    for (const auto& [n, sp] : f.given) g.push_back(sym(n));
    items.push_back(list(std::move(g)));
  }
  if (!f.where.empty()) {
    std::vector<SExpr> w{sym("where")};
    for (const auto& c : f.where) w.push_back(list({sym(types::constraint_op_name(c.kind)), dim_sx(c.lhs), dim_sx(c.rhs)}));
    items.push_back(list(std::move(w)));
  }
  std::vector<SExpr> ps{sym("params")};
  for (const auto& p : f.params) ps.push_back(list({sym(p.name), type_sx(p.type)}));
  items.push_back(list(std::move(ps)));
  std::vector<SExpr> rs{sym("returns")};
  for (const auto& t : f.returns) rs.push_back(type_sx(t));
  items.push_back(list(std::move(rs)));
  for (const auto& l : f.lets) {
    std::vector<SExpr> li{sym("let")};
    if (l.names.size() == 1) li.push_back(sym(l.names[0]));
    if (l.names.size() > 1) {
      std::vector<SExpr> ns;
      for (const auto& n : l.names) ns.push_back(sym(n));
      li.push_back(list(std::move(ns)));
    }
    if (l.ascription) li.push_back(type_sx(*l.ascription));
    li.push_back(expr_sx(l.value));
    items.push_back(list(std::move(li)));
  }
  std::vector<SExpr> r{sym("return")};
  for (const auto& x : f.results) r.push_back(expr_sx(x));
  items.push_back(list(std::move(r)));
  return list(std::move(items));
}

}  // namespace

std::string print_module(const ModuleAst& m) {
  std::vector<SExpr> items{sym("module"), sym(m.name)};
  for (const auto& f : m.funcs) items.push_back(func_sx(f));
  SExprFile file;
  file.items.push_back(list(std::move(items)));
  return format_sexprs(file);
}

std::string print_type(const TypeAst& t) { return format_sexpr(type_sx(t), 1 << 20); }
std::string print_dim(const DimAst& d) { return format_sexpr(dim_sx(d), 1 << 20); }

}  // namespace shapeml::syntax
