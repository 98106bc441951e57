#include "transform/inline_calls.h"

#include <map>
#include <set>
#include <stdexcept>

#include "types/shape_inference.h"

namespace shapeml::transform {
namespace {

using types::Poly;

types::Shape subst(const types::Shape& s, const std::map<std::string, Poly>& sub) {
  types::Shape out;
  for (const auto& d : s) out.push_back(d.subst(sub));
  return out;
}

// Appends the body of `f` (already flat) to `out`, its parameters bound to
// `args`, its shape variables substituted by `sub`; returns its results.
std::vector<ir::ValueId> splice(const ir::Function& f, const std::vector<ir::ValueId>& args, const std::map<std::string, Poly>& sub,
                                const types::TypeBinding& tb, const std::string& prefix, ir::Function& out) {
  std::vector<ir::ValueId> map(f.values.size(), UINT32_MAX);
  for (size_t i = 0; i < f.params.size(); ++i) map[f.params[i]] = args.at(i);
  auto fresh = [&](ir::ValueId v) {
    ir::Value val = f.values[v];
    val.name = prefix + val.name;
    val.type = types::substitute(val.type, tb);
    val.type.shape = subst(val.type.shape, sub);
    out.values.push_back(std::move(val));
    return map[v] = static_cast<ir::ValueId>(out.values.size() - 1);
  };
  for (const auto& b : f.body) {
    ir::Binding nb = b;
    for (auto& o : nb.operands) {
      if (map.at(o) == UINT32_MAX) throw std::logic_error("inlining `" + f.name + "`: an operand is used before it is defined");
      o = map[o];
    }
    for (auto& r : nb.results) r = fresh(r);
    nb.attrs.start = nb.attrs.start.subst(sub);
    nb.attrs.size = nb.attrs.size.subst(sub);
    nb.attrs.shape = subst(nb.attrs.shape, sub);
    ir::substitute_types(nb.attrs, tb);
    out.body.push_back(std::move(nb));
  }
  std::vector<ir::ValueId> rs;
  for (ir::ValueId r : f.results) {
    if (map.at(r) == UINT32_MAX) throw std::logic_error("inlining `" + f.name + "`: a result is not defined");
    rs.push_back(map[r]);
  }
  return rs;
}

ir::Function flatten(const ir::Module& m, const ir::Function& f, std::set<std::string>& active) {
  if (!active.insert(f.name).second) throw std::logic_error("inlining: `" + f.name + "` calls itself");
  ir::Function out;
  out.name = f.name;
  out.span = f.span;
  out.dims = f.dims;
  out.dtype_vars = f.dtype_vars;
  out.device_vars = f.device_vars;
  out.given = f.given;
  out.where = f.where;
  out.result_types = f.result_types;
  std::vector<ir::ValueId> map(f.values.size(), UINT32_MAX);
  for (ir::ValueId p : f.params) {
    out.values.push_back(f.values[p]);
    out.params.push_back(map[p] = static_cast<ir::ValueId>(out.values.size() - 1));
  }
  for (const auto& b : f.body) {
    std::vector<ir::ValueId> args;
    for (ir::ValueId o : b.operands) {
      if (map.at(o) == UINT32_MAX) throw std::logic_error("inlining `" + f.name + "`: an operand is used before it is defined");
      args.push_back(map[o]);
    }
    if (b.op != syntax::OpKind::Call) {
      ir::Binding nb = b;
      nb.operands = args;
      for (auto& r : nb.results) {
        out.values.push_back(f.values[r]);
        r = map[r] = static_cast<ir::ValueId>(out.values.size() - 1);
      }
      out.body.push_back(std::move(nb));
      continue;
    }
    const ir::Function* c = m.find(b.attrs.callee);
    if (!c) throw std::logic_error("inlining `" + f.name + "`: no function `" + b.attrs.callee + "`");
    ir::Function flat = flatten(m, *c, active);
    // The callee's shape variables, as T-Call binds them.
    std::vector<types::Shape> param_shapes, arg_shapes;
    for (size_t i = 0; i < c->params.size(); ++i) {
      param_shapes.push_back(c->values[c->params[i]].type.shape);
      arg_shapes.push_back(out.values.at(args.at(i)).type.shape);
    }
    std::set<std::string> given_names;
    std::map<std::string, Poly> given;
    for (const auto& [v, p] : b.attrs.call_dims) {
      given_names.insert(v);
      given.emplace(v, p);
    }
    types::InferencePlan plan = types::plan_shape_inference(c->dims, param_shapes, c->where, given_names);
    types::SymbolicSolve solved = types::solve_shape_variables_symbolic(plan, arg_shapes, given);
    if (solved.failed_step) throw std::logic_error("inlining `" + c->name + "` into `" + f.name + "`: its shape variables cannot be inferred");
    for (const auto& d : c->dims)
      if (!solved.substitution.count(d)) throw std::logic_error("inlining `" + c->name + "`: shape variable `" + d + "` is not bound");
    // Its dtype and device variables, as T-Call binds them (spec §3.5).
    std::vector<types::TensorType> param_types, arg_types;
    for (size_t i = 0; i < c->params.size(); ++i) {
      param_types.push_back(c->values[c->params[i]].type);
      arg_types.push_back(out.values.at(args.at(i)).type);
    }
    std::vector<ir::ValueId> rs =
        splice(flat, args, solved.substitution, types::bind_type_variables(param_types, arg_types), c->name + ".", out);
    for (size_t i = 0; i < b.results.size(); ++i) map[b.results[i]] = rs.at(i);
  }
  for (ir::ValueId r : f.results) {
    if (map.at(r) == UINT32_MAX) throw std::logic_error("inlining `" + f.name + "`: a result is not defined");
    out.results.push_back(map[r]);
  }
  active.erase(f.name);
  return out;
}

}  // namespace

ir::Function inline_calls(const ir::Module& m, const ir::Function& f) {
  std::set<std::string> active;
  return flatten(m, f, active);
}

}  // namespace shapeml::transform
