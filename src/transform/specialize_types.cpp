#include "transform/specialize_types.h"

#include <functional>
#include <set>

namespace shapeml::transform {
namespace {

using types::TypeBinding;

bool any_generic(const ir::Module& m) {
  for (const auto& f : m.functions)
    if (f.generic()) return true;
  return false;
}

// `F%T=bf16%Dv=cuda0`: the instance's name (one per function and binding).
std::string instance_name(const ir::Function& f, const TypeBinding& b) {
  std::string n = f.name;
  for (const auto& [v, set] : f.dtype_vars)
    if (auto it = b.dtypes.find(v); it != b.dtypes.end()) n += "%" + v + "=" + it->second.str();
  for (const auto& v : f.device_vars)
    if (auto it = b.devices.find(v); it != b.devices.end()) n += "%" + v + "=" + types::device_binding_text(types::device_binding_value(it->second));
  return n;
}

class Specializer {
 public:
  Specializer(const ir::Module& m, std::string& error) : m_(m), error_(error) {}

  // The function `name` at binding `b` (empty for a concrete function),
  // its callees first; returns the instance's name, "" on error.
  std::string instantiate(const std::string& name, const TypeBinding& b, bool keep_name) {
    const ir::Function* f = m_.find(name);
    if (!f) {
      error_ = "no function `" + name + "` in module `" + m_.name + "`";
      return "";
    }
    for (const auto& [v, set] : f->dtype_vars) {
      auto it = b.dtypes.find(v);
      if (it == b.dtypes.end() || it->second.dtype == types::DType::Var) {
        error_ = "internal: `" + f->name + "` is instantiated without a dtype for `" + v + "`";
        return "";
      }
      if (!(set & types::dtype_bit(it->second.dtype))) {
        error_ = "dtype variable `" + v + "` of `" + f->name + "` ranges over " + types::dtype_set_str(set) + ", not " + it->second.str();
        return "";
      }
    }
    for (const auto& v : f->device_vars) {
      auto it = b.devices.find(v);
      if (it == b.devices.end() || it->second.is_var()) {
        error_ = "internal: `" + f->name + "` is instantiated without a device for `" + v + "`";
        return "";
      }
    }
    const std::string inst = keep_name || !f->generic() ? f->name : instance_name(*f, b);
    if (done_.count(inst)) return inst;
    if (!active_.insert(inst).second) {
      error_ = "internal: `" + inst + "` reaches itself";
      return "";
    }
    ir::Function g = *f;
    g.name = inst;
    g.dtype_vars.clear();
    g.device_vars.clear();
    for (auto& v : g.values) v.type = types::substitute(v.type, b);
    for (auto& t : g.result_types) t = types::substitute(t, b);
    for (auto& bd : g.body) {
      ir::substitute_types(bd.attrs, b);
      if (bd.op == syntax::OpKind::Call) {
        const ir::Function* c = m_.find(bd.attrs.callee);
        if (!c) {
          error_ = "internal: `" + f->name + "` calls `" + bd.attrs.callee + "`, which is not in the module";
          return "";
        }
        std::vector<types::TensorType> params, args;
        for (ir::ValueId p : c->params) params.push_back(c->values[p].type);
        for (ir::ValueId a : bd.operands) args.push_back(g.values[a].type);
        std::string callee = instantiate(c->name, types::bind_type_variables(params, args), false);
        if (callee.empty()) return "";
        bd.attrs.callee = callee;
      } else if ((bd.op == syntax::OpKind::CopyToDevice || bd.op == syntax::OpKind::CopyToHost) &&
                 g.values[bd.operands[0]].type.device == g.values[bd.results[0]].type.device) {
        // A copy to where the value already is (a device variable bound to
        // its device): the identity, as `(let y x)` is written.
        bd.op = syntax::OpKind::BroadcastTo;
        bd.attrs.shape = g.values[bd.results[0]].type.shape;
      }
    }
    active_.erase(inst);
    done_.insert(inst);
    out_.push_back(std::move(g));
    return inst;
  }

  std::vector<ir::Function> take() { return std::move(out_); }

 private:
  const ir::Module& m_;
  std::string& error_;
  std::set<std::string> done_, active_;
  std::vector<ir::Function> out_;  // callees before callers
};

}  // namespace

bool split_type_bindings(const ir::Function& entry, std::map<std::string, int64_t>& bindings, types::TypeBinding& out, std::string& error) {
  for (const auto& [v, set] : entry.dtype_vars) {
    auto it = bindings.find(v);
    if (it == bindings.end()) {
      error = "dtype variable `" + v + "` of `" + entry.name + "` is not bound (give it as " + v + "=" +
              std::string(types::dtype_name(types::DType::F32)) + ", one of " + types::dtype_set_str(set) + ")";
      return false;
    }
    auto d = types::dtype_from_binding(it->second);
    if (!d || !(set & types::dtype_bit(*d))) {
      error = "dtype variable `" + v + "` of `" + entry.name + "` is bound to " + types::dtype_binding_text(it->second) + "; it ranges over " +
              types::dtype_set_str(set);
      return false;
    }
    out.dtypes[v] = types::DTypeValue::concrete(*d);
    bindings.erase(it);
  }
  for (const auto& v : entry.device_vars) {
    auto it = bindings.find(v);
    if (it == bindings.end()) {
      error = "device variable `" + v + "` of `" + entry.name + "` is not bound (give it as " + v + "=host or " + v + "=cuda0)";
      return false;
    }
    auto d = types::device_from_binding(it->second);
    if (!d) {
      error = "device variable `" + v + "` of `" + entry.name + "` is bound to " + std::to_string(it->second) + ", which is not a device";
      return false;
    }
    out.devices[v] = *d;
    bindings.erase(it);
  }
  return true;
}

std::optional<ir::Module> specialize_types(const ir::Module& m, const std::string& entry, const types::TypeBinding& binding, std::string& error) {
  Specializer s(m, error);
  if (s.instantiate(entry, binding, /*keep_name=*/true).empty()) return std::nullopt;
  ir::Module out;
  out.name = m.name;
  out.id = m.id;
  out.source = m.source;
  out.functions = s.take();
  return out;
}

const ir::Module* specialize_for_binding(const ir::Module& m, const std::string& entry, std::map<std::string, int64_t>& bindings,
                                         std::optional<ir::Module>& storage, std::string& error) {
  if (!any_generic(m)) return &m;
  const ir::Function* f = m.find(entry);
  if (!f) {
    error = "no function `" + entry + "` in module `" + m.name + "`";
    return nullptr;
  }
  types::TypeBinding b;
  if (!split_type_bindings(*f, bindings, b, error)) return nullptr;
  storage = specialize_types(m, entry, b, error);
  return storage ? &*storage : nullptr;
}

}  // namespace shapeml::transform
