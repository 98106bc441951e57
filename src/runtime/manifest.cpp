#include "runtime/manifest.h"

#include <algorithm>
#include <set>

#include "common/compiled_entry.h"
#include "runtime/tensor.h"
#include "syntax/sexpr.h"
#include "syntax/type_syntax.h"

namespace shapeml::runtime {
namespace {

using syntax::SExpr;
using types::Poly;

// Internal only: parse_manifest turns it into a Status.
struct ManifestError {
  Status status;
};

class Parser {
 public:
  Parser(const syntax::SourceFile& src, const std::string& origin) : src_(src), origin_(origin) {}

  Manifest module(const syntax::SExprFile& file) {
    if (file.items.size() != 1) fail(file.items.empty() ? nullptr : &file.items[1], "expected exactly one (shapeml-module ...) form");
    const SExpr& m = file.items[0];
    if (!head_is(m, "shapeml-module")) fail(&m, "expected (shapeml-module ...)");
    Manifest out;
    bool have_abi = false, have_name = false;
    std::set<std::string> entry_names;
    for (size_t i = 1; i < m.items.size(); ++i) {
      const SExpr& c = m.items[i];
      if (head_is(c, "abi")) {
        if (c.items.size() != 2 || c.items[1].kind != SExpr::Kind::Int || c.items[1].int_value < 0)
          fail(&c, "expected (abi N)");
        out.abi = static_cast<uint32_t>(c.items[1].int_value);
        if (out.abi < common::kOldestCompiledEntryAbiVersion || out.abi > common::kCompiledEntryAbiVersion)
          throw ManifestError{incompatible_module(where(&c) + "manifest declares (abi " + std::to_string(c.items[1].int_value) +
                                                  "); this runtime reads abi " + std::to_string(common::kOldestCompiledEntryAbiVersion) + " to " +
                                                  std::to_string(common::kCompiledEntryAbiVersion))};
        have_abi = true;
      } else if (head_is(c, "name")) {
        if (c.items.size() != 2) fail(&c, "expected (name NAME)");
        out.name = atom(c.items[1], "a module name");
        have_name = true;
      } else if (head_is(c, "target")) {
        if (c.items.size() != 2) fail(&c, "expected (target \"...\")");
        out.target = atom(c.items[1], "a target");
      } else if (head_is(c, "module-id")) {
        // (since 0.4) the module ID of docs/design/observability.md
        if (c.items.size() != 2) fail(&c, "expected (module-id ID)");
        out.module_id = atom(c.items[1], "a module ID");
      } else if (head_is(c, "entry")) {
        EntrySig e = entry(c);
        if (!e.index_sites.empty() && out.abi < 2) fail(&c, "(index-checks ...) needs (abi 2) or later");
        if (!entry_names.insert(e.name).second) fail(&c, "entry `" + e.name + "` is declared twice");
        out.entries.push_back(std::move(e));
      } else {
        fail(&c, "unknown clause in shapeml-module (expected abi, name, target, module-id or entry)");
      }
    }
    if (!have_abi) fail(&m, "missing (abi N)");
    if (!have_name) fail(&m, "missing (name NAME)");
    return out;
  }

 private:
  [[noreturn]] void fail(const SExpr* at, const std::string& msg) const {
    throw ManifestError{invalid_argument(where(at) + "manifest: " + msg)};
  }
  std::string where(const SExpr* at) const {
    if (!at) return origin_ + ": ";
    auto lc = src_.line_col(at->span.begin);
    return origin_ + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.col) + ": ";
  }
  static bool head_is(const SExpr& e, const char* h) { return e.is_list() && !e.items.empty() && e.items[0].is_symbol(h); }
  std::string text_of(const SExpr& e) const { return src_.text().substr(e.span.begin, e.span.end - e.span.begin); }

  // A symbol, or a string literal (the reader reads "..." with escapes).
  std::string atom(const SExpr& e, const char* what) const {
    if (!e.is_symbol() && !e.is_string()) fail(&e, std::string("expected ") + what);
    return e.text;
  }
  std::string name(const SExpr& e, const char* what) const {
    if (!e.is_symbol() || e.text.empty()) fail(&e, std::string("expected ") + what);
    return e.text;
  }

  // Types, dimensions and constraints: the language's own reader and
  // normal-form conversion (src/syntax/type_syntax.h), so a manifest means
  // exactly what the source meant, with the same limits.
  syntax::SyntaxErrorFn errfn() const {
    return [this](const std::string& code, syntax::Span span, const std::string& msg) {
      SExpr at;
      at.span = span;
      fail(&at, msg + " [" + code + "]");
    };
  }
  Poly dim(const syntax::DimAst& d, const std::set<std::string>& vars, bool in_constraint) const {
    auto p = syntax::dim_to_poly(d, [&](const std::string& n) { return vars.count(n) > 0; }, in_constraint, errfn());
    return *p;  // dim_to_poly reported through errfn(), which throws, when it has no value
  }

  types::TensorType type(const SExpr& e, const std::set<std::string>& vars) const {
    auto t = syntax::read_type(e, errfn(), &type_vars_);
    if (t->dims.size() > static_cast<size_t>(kMaxRank))
      fail(&e, "a type of rank " + std::to_string(t->dims.size()) + "; the runtime's limit is " + std::to_string(kMaxRank));
    types::TensorType out;
    out.dtype = t->dtype;
    if (t->dtype == types::DType::Var) {
      out.dtype_var = t->dtype_var;
      out.dtype_set = dtype_sets_.at(t->dtype_var);
    }
    out.device = t->device;
    for (const auto& d : t->dims) out.shape.push_back(dim(d, vars, false));
    return out;
  }

  WhereSig constraint(const SExpr& e, const std::set<std::string>& vars) const {
    auto c = syntax::read_constraint(e, errfn());
    return {{c->kind, dim(c->lhs, vars, true), dim(c->rhs, vars, true)}, text_of(e)};
  }

  EntrySig entry(const SExpr& c) {
    EntrySig e;
    if (c.items.size() < 2) fail(&c, "expected (entry NAME ...)");
    e.name = name(c.items[1], "an entry name");
    type_vars_ = {};
    dtype_sets_.clear();
    std::set<std::string> vars;
    bool have_params = false, have_returns = false;
    std::vector<const SExpr*> specs;
    for (size_t i = 2; i < c.items.size(); ++i) {
      const SExpr& k = c.items[i];
      if (head_is(k, "dims")) {
        for (size_t j = 1; j < k.items.size(); ++j) {
          std::string v = name(k.items[j], "a shape variable");
          if (type_vars_.dtypes.count(v) || type_vars_.devices.count(v) || !vars.insert(v).second) fail(&k.items[j], "shape variable `" + v + "` is declared twice");
          e.dims.push_back(v);
        }
      } else if (head_is(k, "dtypes")) {
        // (dtypes (T f32 bf16) ...): every variable with its set, written out.
        if (have_params || have_returns) fail(&k, "(dtypes ...) must come before the entry's params and returns");
        for (size_t j = 1; j < k.items.size(); ++j) {
          const SExpr& d = k.items[j];
          if (!d.is_list() || d.items.size() < 2) fail(&d, "expected a dtype variable (NAME DTYPE...)");
          std::string v = name(d.items[0], "a dtype variable");
          types::DTypeSet set = 0;
          for (size_t q = 1; q < d.items.size(); ++q) {
            auto dt = d.items[q].is_symbol() ? types::parse_dtype(d.items[q].text) : std::nullopt;
            if (!dt) fail(&d.items[q], "expected a dtype");
            set |= types::dtype_bit(*dt);
          }
          if (vars.count(v) || !type_vars_.dtypes.insert(v).second) fail(&d, "`" + v + "` is declared twice");
          dtype_sets_[v] = set;
          e.dtype_vars.push_back({v, set});
        }
      } else if (head_is(k, "devices")) {
        if (have_params || have_returns) fail(&k, "(devices ...) must come before the entry's params and returns");
        for (size_t j = 1; j < k.items.size(); ++j) {
          std::string v = name(k.items[j], "a device variable");
          if (vars.count(v) || type_vars_.dtypes.count(v) || !type_vars_.devices.insert(v).second) fail(&k.items[j], "`" + v + "` is declared twice");
          e.device_vars.push_back(v);
        }
      } else if (head_is(k, "given")) {
        for (size_t j = 1; j < k.items.size(); ++j) {
          std::string v = name(k.items[j], "a shape variable");
          if (!vars.count(v)) fail(&k.items[j], "`given` names `" + v + "`, which is not in the entry's (dims ...)");
          if (std::find(e.given.begin(), e.given.end(), v) != e.given.end()) fail(&k.items[j], "shape variable `" + v + "` is given twice");
          e.given.push_back(v);
        }
      } else if (head_is(k, "where")) {
        for (size_t j = 1; j < k.items.size(); ++j) e.where.push_back(constraint(k.items[j], vars));
      } else if (head_is(k, "params")) {
        have_params = true;
        std::set<std::string> names;
        for (size_t j = 1; j < k.items.size(); ++j) {
          const SExpr& p = k.items[j];
          if (!p.is_list() || p.items.size() != 2) fail(&p, "expected a parameter (NAME TYPE)");
          ParamSig ps{name(p.items[0], "a parameter name"), type(p.items[1], vars)};
          if (!names.insert(ps.name).second) fail(&p, "parameter `" + ps.name + "` is declared twice");
          e.params.push_back(std::move(ps));
        }
      } else if (head_is(k, "returns")) {
        have_returns = true;
        for (size_t j = 1; j < k.items.size(); ++j) e.returns.push_back(type(k.items[j], vars));
      } else if (head_is(k, "specialization")) {
        specs.push_back(&k);  // after all clauses: needs dims and where
      } else if (head_is(k, "kind")) {
        if (k.items.size() != 2 || !(k.items[1].is_symbol("gpu-plan") || k.items[1].is_symbol("cpu")))
          fail(&k, "expected (kind cpu) or (kind gpu-plan)");
        e.device = k.items[1].is_symbol("gpu-plan");
      } else if (head_is(k, "index-checks")) {
        for (size_t j = 1; j < k.items.size(); ++j) {
          const SExpr& st = k.items[j];
          if (!head_is(st, "site") || st.items.size() != 6 || st.items[1].kind != SExpr::Kind::Int || st.items[4].kind != SExpr::Kind::Int ||
              st.items[4].int_value < 0 || st.items[4].int_value > 64)
            fail(&st, "expected (site ID OP \"LOCATION\" RANK \"OPERAND\") with 0 <= RANK <= 64");
          IndexSite is{st.items[1].int_value, atom(st.items[2], "an operation name"), atom(st.items[3], "a location"),
                       static_cast<size_t>(st.items[4].int_value), atom(st.items[5], "an operand name")};
          // Numbered 1, 2, ... in order: the record's first word is an ID.
          if (is.id != static_cast<int64_t>(e.index_sites.size()) + 1) fail(&st, "index-check sites must be numbered 1, 2, ... in order");
          e.index_sites.push_back(std::move(is));
        }
      } else {
        fail(&k, "unknown clause in entry `" + e.name + "` (expected dims, given, where, params, returns, kind, index-checks or specialization)");
      }
    }
    if (!have_params) fail(&c, "entry `" + e.name + "` has no (params ...)");
    if (!have_returns || e.returns.empty()) fail(&c, "entry `" + e.name + "` has no (returns TYPE...)");
    // Every shape variable must be given at the call or recoverable from the
    // inputs, by the one rule of types/shape_inference.h (the checker
    // enforces the same, E0308).
    {
      std::vector<types::Shape> shapes;
      std::vector<types::ShapeConstraint> where;
      for (const ParamSig& p : e.params) shapes.push_back(p.type.shape);
      for (const WhereSig& w : e.where) where.push_back(w.constraint);
      e.inference = types::plan_shape_inference(e.dims, shapes, where, std::set<std::string>(e.given.begin(), e.given.end()));
    }
    for (const ParamSig& p : e.params) e.device |= p.type.device.kind == types::Device::Kind::Cuda;
    for (const auto& t : e.returns) e.device |= t.device.kind == types::Device::Kind::Cuda;
    // A dtype or device variable that no parameter names could not be bound
    // (the checker's E0308).
    for (const auto& [v, set] : e.dtype_vars)
      if (std::none_of(e.params.begin(), e.params.end(), [&](const ParamSig& p) { return p.type.dtype_var == v; }))
        fail(&c, "dtype variable `" + v + "` of entry `" + e.name + "` is the dtype of no parameter, so no call could bind it");
    for (const auto& v : e.device_vars)
      if (std::none_of(e.params.begin(), e.params.end(), [&](const ParamSig& p) { return p.type.device.var == v; }))
        fail(&c, "device variable `" + v + "` of entry `" + e.name + "` is the device of no parameter, so no call could bind it");
    for (const std::string& v : e.inference.undetermined)
      fail(&c, "shape variable `" + v + "` of entry `" + e.name +
                   "` is determined by no parameter dimension and no `where` equality, so no call could bind it");
    std::set<Binding> bound;
    for (const SExpr* s : specs) {
      SpecializationSig sp = specialization(*s, e, vars);
      if (!bound.insert(sp.bind).second) fail(s, "two specializations of `" + e.name + "` bind " + binding_str(e, sp.bind));
      if (e.generic()) {  // its device is the binding's (checked when the instance is made)
        e.specializations.push_back(std::move(sp));
        continue;
      }
      if (sp.gpu_plan != e.device)
        fail(s, e.device ? "entry `" + e.name + "` lives on a device: its specializations must be (kind gpu-plan)"
                         : "entry `" + e.name + "` is a host entry: a (kind gpu-plan) specialization does not belong to it");
      e.specializations.push_back(std::move(sp));
    }
    return e;
  }

  SpecializationSig specialization(const SExpr& s, const EntrySig& e, const std::set<std::string>& vars) const {
    SpecializationSig sp;
    bool have_bind = false, have_symbol = false;
    for (size_t i = 1; i < s.items.size(); ++i) {
      const SExpr& k = s.items[i];
      if (head_is(k, "bind")) {
        have_bind = true;
        for (size_t j = 1; j < k.items.size(); ++j) {
          const SExpr& b = k.items[j];
          if (b.is_list() && b.items.size() == 2 && b.items[0].is_symbol() && b.items[1].is_symbol()) {
            // (T bf16), (Dv cuda0): a dtype or device variable's value.
            const std::string& v = b.items[0].text;
            std::optional<int64_t> value;
            if (type_vars_.dtypes.count(v)) {
              value = types::parse_dtype_binding(b.items[1].text);
              if (value && !(dtype_sets_.at(v) & types::dtype_bit(*types::dtype_from_binding(*value)))) value.reset();
            } else if (type_vars_.devices.count(v)) {
              value = types::parse_device_binding(b.items[1].text);
            } else {
              fail(&b, "`" + v + "` is not a dtype or device variable of entry `" + e.name + "`");
            }
            if (!value) fail(&b, "`" + b.items[1].text + "` is not a value of `" + v + "`");
            if (!sp.bind.emplace(v, *value).second) fail(&b, "`" + v + "` is bound twice");
            continue;
          }
          if (!b.is_list() || b.items.size() != 2 || !b.items[0].is_symbol() || b.items[1].kind != SExpr::Kind::Int)
            fail(&b, "expected a binding (VAR INT)");
          const std::string& v = b.items[0].text;
          if (!vars.count(v)) fail(&b, "`" + v + "` is not a shape variable of entry `" + e.name + "`");
          if (b.items[1].int_value < 1) fail(&b, "shape variable `" + v + "` must be bound to a value >= 1");
          if (!sp.bind.emplace(v, b.items[1].int_value).second) fail(&b, "`" + v + "` is bound twice");
        }
      } else if (head_is(k, "symbol")) {
        if (k.items.size() != 2) fail(&k, "expected (symbol NAME)");
        sp.symbol = atom(k.items[1], "a symbol name");
        have_symbol = true;
      } else if (head_is(k, "kind")) {
        if (k.items.size() != 2 || !(k.items[1].is_symbol("gpu-plan") || k.items[1].is_symbol("cpu")))
          fail(&k, "expected (kind cpu) or (kind gpu-plan)");
        sp.gpu_plan = k.items[1].is_symbol("gpu-plan");
      } else {
        fail(&k, "unknown clause in specialization (expected bind, symbol or kind)");
      }
    }
    if (!have_bind && !e.dims.empty()) fail(&s, "specialization has no (bind ...)");
    if (!have_symbol) fail(&s, "specialization has no (symbol NAME)");
    for (const std::string& v : e.dims)
      if (!sp.bind.count(v)) fail(&s, "specialization does not bind shape variable `" + v + "`");
    for (const auto& [v, set] : e.dtype_vars)
      if (!sp.bind.count(v)) fail(&s, "specialization does not bind dtype variable `" + v + "`");
    for (const auto& v : e.device_vars)
      if (!sp.bind.count(v)) fail(&s, "specialization does not bind device variable `" + v + "`");
    for (const WhereSig& w : e.where)
      if (w.constraint.eval(sp.bind) != true)
        fail(&s, "specialization " + binding_str(e, sp.bind) + " violates where constraint " + w.text);
    return sp;
  }

  const syntax::SourceFile& src_;
  const std::string& origin_;
  // The entry being read: its dtype and device variables.
  syntax::TypeVarScope type_vars_;
  std::map<std::string, types::DTypeSet> dtype_sets_;

};

}  // namespace

const EntrySig* Manifest::find(const std::string& entry) const {
  for (const EntrySig& e : entries)
    if (e.name == entry) return &e;
  return nullptr;
}

std::string binding_str(const EntrySig& e, const Binding& b) {
  std::string s;
  for (const auto& [v, set] : e.dtype_vars)
    if (auto it = b.find(v); it != b.end()) s += (s.empty() ? "" : " ") + v + "=" + types::dtype_binding_text(it->second);
  for (const std::string& v : e.device_vars)
    if (auto it = b.find(v); it != b.end()) s += (s.empty() ? "" : " ") + v + "=" + types::device_binding_text(it->second);
  for (const std::string& v : e.dims) {
    auto it = b.find(v);
    if (it == b.end()) continue;
    s += (s.empty() ? "" : " ") + v + "=" + std::to_string(it->second);
  }
  return s.empty() ? "(no shape variables)" : s;
}

Result<Binding> bind_type_variables(const EntrySig& e, size_t inputs, const std::function<types::DType(size_t)>& dtype,
                                    const std::function<types::Device(size_t)>& device) {
  // The language's one rule (types::bind_type_variables) on the inputs' types.
  std::vector<types::TensorType> params, args;
  for (size_t i = 0; i < e.params.size() && i < inputs; ++i) {
    params.push_back(e.params[i].type);
    args.push_back(types::make_type(types::DTypeValue::concrete(dtype(i)), {}, device(i)));
  }
  const types::TypeBinding tb = types::bind_type_variables(params, args);
  for (size_t i = 0; i < params.size(); ++i) {
    const types::TensorType& t = params[i];
    auto it = t.dtype == types::DType::Var ? tb.dtypes.find(t.dtype_var) : tb.dtypes.end();
    if (it != tb.dtypes.end() && it->second.dtype == args[i].dtype && !(t.dtype_set & types::dtype_bit(args[i].dtype)))
      return invalid_argument("entry `" + e.name + "`: input " + std::to_string(i) + " (`" + e.params[i].name + "`) has dtype " +
                              std::string(types::dtype_name(args[i].dtype)) + ", which dtype variable " + t.dtype_var + " (type " + t.str() +
                              ") does not range over (" + types::dtype_set_str(t.dtype_set) + ")");
  }
  Binding b;
  for (const auto& [v, d] : tb.dtypes) b[v] = types::dtype_binding_value(d.dtype);
  for (const auto& [v, d] : tb.devices) b[v] = types::device_binding_value(d);
  return b;
}

Result<EntrySig> instantiate_entry(const EntrySig& e, const Binding& type_bind) {
  types::TypeBinding tb;
  for (const auto& [v, set] : e.dtype_vars) {
    auto it = type_bind.find(v);
    auto d = it == type_bind.end() ? std::nullopt : types::dtype_from_binding(it->second);
    if (!d) return invalid_argument("entry `" + e.name + "`: dtype variable " + v + " is not given a dtype (one of " + types::dtype_set_str(set) + ")");
    if (!(set & types::dtype_bit(*d)))
      return invalid_argument("entry `" + e.name + "`: dtype variable " + v + " ranges over " + types::dtype_set_str(set) + ", not " +
                              std::string(types::dtype_name(*d)));
    tb.dtypes[v] = types::DTypeValue::concrete(*d);
  }
  for (const auto& v : e.device_vars) {
    auto it = type_bind.find(v);
    auto d = it == type_bind.end() ? std::nullopt : types::device_from_binding(it->second);
    if (!d) return invalid_argument("entry `" + e.name + "`: device variable " + v + " is not given a device (host or cudaN)");
    tb.devices[v] = *d;
  }
  for (const auto& [v, value] : type_bind)
    if (!tb.dtypes.count(v) && !tb.devices.count(v))
      return invalid_argument("entry `" + e.name + "` has no dtype or device variable `" + v + "`");
  EntrySig r = e;
  r.type_bind = type_bind;
  r.device = false;
  for (ParamSig& p : r.params) {
    p.type = types::substitute(p.type, tb);
    r.device |= p.type.device.kind == types::Device::Kind::Cuda;
  }
  for (auto& t : r.returns) {
    t = types::substitute(t, tb);
    r.device |= t.device.kind == types::Device::Kind::Cuda;
  }
  r.specializations.clear();
  for (const SpecializationSig& sp : e.specializations) {
    bool match = true;
    for (const auto& [v, value] : type_bind) match &= sp.bind.count(v) && sp.bind.at(v) == value;
    if (!match) continue;
    if (sp.gpu_plan != r.device)
      return invalid_argument("entry `" + e.name + "` at " + binding_str(e, sp.bind) + (r.device ? " lives on a device, but its specialization is not (kind gpu-plan)"
                                                                                            : " is a host entry, but its specialization is (kind gpu-plan)"));
    r.specializations.push_back(sp);
  }
  return r;
}

Result<Manifest> parse_manifest(const std::string& text, const std::string& origin) {
  return guarded("parse_manifest", [&]() -> Result<Manifest> {
    syntax::SourceFile src(origin, text);
    syntax::DiagnosticSink diags;
    syntax::SExprFile file = syntax::read_sexprs(src, diags);
    if (diags.error_count() > 0) {
      const syntax::Diagnostic& d = diags.all().front();
      auto lc = src.line_col(d.span.begin);
      return invalid_argument(origin + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.col) +
                              ": manifest: " + d.message + " [" + d.code + "]");
    }
    try {
      return Parser(src, origin).module(file);
    } catch (const ManifestError& e) {
      return e.status;
    } catch (const types::DimOverflow& e) {
      return invalid_argument(origin + ": manifest: " + e.what());
    }
  });
}

}  // namespace shapeml::runtime
