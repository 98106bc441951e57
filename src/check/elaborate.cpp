// The elaborator: AST -> typed IR in A-normal form, checking as it goes
// (bidirectional: synthesis for operations, checking against ascriptions,
// parameters and `returns`).
#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "check/checker.h"
#include "check/derived_ops.h"
#include "check/rules.h"
#include "types/shape_inference.h"
#include "syntax/parser.h"
#include "syntax/type_syntax.h"
#include "syntax/sexpr.h"

namespace shapeml::check {

using syntax::DimAst;
using syntax::ExprAst;
using syntax::OpFamily;
using syntax::OpKind;
using syntax::Span;
using types::Poly;
using types::ShapeConstraint;
using types::TensorType;

namespace {

class Elaborator final : public RuleEnv {
 public:
  Elaborator(CheckResult& r, const CheckOptions& o, std::vector<uint32_t> lexical_error_offsets)
      : res_(r), opts_(o), solver_(o.obligation_timeout_ms), lexical_errors_(std::move(lexical_error_offsets)) {}

  void run(const syntax::ModuleAst& m) {
    ir::Module out;
    out.name = m.name;
    out.source = res_.source;
    std::set<std::string> seen;
    poisoned_functions_.insert(m.malformed_funcs.begin(), m.malformed_funcs.end());
    for (const auto& f : m.funcs) {
      if (!seen.insert(f.name).second) {
        res_.diags.report("E0102", f.name_span, "function `" + f.name + "` is defined twice in module `" + m.name + "`");
        continue;
      }
      module_ = &out;
      bool lexical = std::any_of(lexical_errors_.begin(), lexical_errors_.end(), [&](uint32_t o) { return o >= f.span.begin && o < f.span.end; });
      if (lexical) {
        poisoned_functions_.insert(f.name);
        continue;
      }
      call_height_now_ = 0;
      auto fn = f.grad_of.empty() ? function(f) : grad_signature(f);
      if (fn) {
        // A gradient runs its function's body (and its calls) one level down.
        call_height_[f.name] = f.grad_of.empty() ? call_height_now_ : call_height_[f.grad_of] + 1;
        out.functions.push_back(std::move(*fn));
      } else {
        poisoned_functions_.insert(f.name);
      }
    }
    // E0308 (§4.19) for the functions whose variables the parameters do not
    // determine and that no call gives them to with `:dims`: decided at the
    // end, since the calls come after the definition.
    for (const auto& [fname, vars] : undetermined_)
      for (const Undetermined& e : vars) {
        if (called_with_dims_.count(fname)) break;
        auto& d = res_.diags.report("E0308", e.at, "shape variable `" + e.var + "` of `" + fname + "` cannot be inferred from the shapes of its parameters");
        d.notes.push_back("a variable is bound by a parameter dimension that is the variable alone or linear in it (e.g. (* 2 " + e.var +
                          ")), or by a `where` equality once the others are bound");
        d.notes.push_back("help: use `" + e.var + "` in a parameter's type, or add a `where` equality that defines it");
        d.notes.push_back("help: or call `" + fname + "` only from other functions, giving it with `(call " + fname + " :dims ((" + e.var +
                          " DIM)) ...)`; it is then not an entry point");
        d.notes.push_back("help: or declare `(given " + e.var + ")`: every call then supplies it (`:dims` in the module, the call options at the host)");
      }
    res_.stats.functions = out.functions.size();
    res_.stats.solver = solver_.stats();
    if (res_.diags.error_count() == 0) res_.module = std::move(out);
  }

  // RuleEnv
  std::vector<ShapeConstraint> hypotheses() const override { return fn_ && !where_incomplete_ ? fn_->where : std::vector<ShapeConstraint>{}; }
  bool require(const ShapeConstraint& goal, const Failure& f) override {
    // A `where` constraint did not resolve (already reported, so the function
    // is rejected): its obligations are not discharged under fewer
    // hypotheses, which would refute true goals with counterexamples that
    // break the `where` clause. The rest of the function is still checked.
    if (where_incomplete_) return true;
    smt::Outcome o = solver_.prove(goal);
    if (opts_.record_obligations)
      res_.obligations.push_back({fn_ ? fn_->name : "", f.code, goal.str(), res_.source->line_col(span_.begin).line, o, solver_.smtlib(goal)});
    if (o.kind == smt::Outcome::Kind::Proved) return true;
    if (o.kind == smt::Outcome::Kind::Unknown) {
      auto& d = res_.diags.report("E0501", span_, "could not prove " + goal.str() + " within " + std::to_string(opts_.obligation_timeout_ms) + " ms");
      d.notes.push_back("the obligation comes from: " + f.message + " [" + f.code + "]");
      d.notes.push_back("Z3 answered unknown (" + o.reason + "); shapeml rejects what it cannot prove");
      d.notes.push_back("add a `where` constraint that makes it evident, or raise the budget");
      return false;
    }
    auto& d = report(f);
    d.counterexample = o.counterexample;
    if (!o.model_text.empty() && o.counterexample.size() != fn_->dims.size())
      d.notes.push_back("counterexample with values beyond 64 bits: " + o.model_text);
    std::map<std::string, int64_t> env(o.counterexample.begin(), o.counterexample.end());
    auto l = goal.lhs.eval(env), r = goal.rhs.eval(env);
    if (l && r && !o.counterexample.empty())
      d.notes.push_back("with these values " + goal.lhs.str() + " = " + std::to_string(*l) + " and " + goal.rhs.str() + " = " + std::to_string(*r) +
                        ", so " + goal.str() + " is false");
    if (!fn_->where.empty()) {
      std::string w;
      for (const auto& c : fn_->where) w += (w.empty() ? "" : " ") + c.str();
      d.notes.push_back("assumed: " + w);
    }
    for (auto& h : pending_help_) d.notes.push_back(h);
    return false;
  }

  void fail(const Failure& f) override {
    auto& d = report(f);
    for (auto& h : pending_help_) d.notes.push_back(h);
  }

  // The diagnostic for a failed premise: at the operand the rule blames (a
  // label then marks where that operand is declared), else at the form.
  syntax::Diagnostic& report(const Failure& f) {
    Span at = span_;
    const Operand* blamed = f.blame >= 0 && static_cast<size_t>(f.blame) < operands_.size() ? &operands_[f.blame] : nullptr;
    if (blamed) at = blamed->span;
    auto& d = res_.diags.report(f.code, at, f.message);
    d.expected = f.expected;
    d.actual = f.actual;
    auto label = [&](const std::string& text, int operand) {
      if (operand < 0 || static_cast<size_t>(operand) >= operands_.size() || operands_[operand].name.empty()) return text;
      return text + " `" + operands_[operand].name + "`";
    };
    if (!f.expected_label.empty()) d.expected_label = label(f.expected_label, f.expected_operand);
    if (!f.actual_label.empty()) d.actual_label = label(f.actual_label, f.actual_operand);
    if (blamed && !blamed->name.empty() && blamed->declared.end > blamed->declared.begin)
      d.labels.push_back({blamed->declared, "`" + blamed->name + "` is declared here"});
    // Hints go last, after the notes the caller adds (counterexample values).
    for (const auto& n : f.notes)
      if (n.rfind("help: ", 0) != 0) d.notes.push_back(n);
    pending_help_.clear();
    for (const auto& n : f.notes)
      if (n.rfind("help: ", 0) == 0) pending_help_.push_back(n);
    return d;
  }

 private:
  // ---- dimensions and types ---------------------------------------------
  // `in_constraint`: a `where` constraint may use negative literals, e.g.
  // (>= (- c (* 2 d)) -4); only dimensions inside types must be >= 1.
  std::optional<Poly> dim(const DimAst& d, bool in_constraint = false) {
    // The one conversion of src/syntax/type_syntax.h; E0104 gets its hint here.
    return syntax::dim_to_poly(
        d, [&](const std::string& n) { return dims_.count(n) > 0; }, in_constraint,
        [&](const std::string& code, Span span, const std::string& msg) {
          auto& diag = res_.diags.report(code, span, msg);
          if (code == "E0104") {
            size_t b = msg.find('`'), e = msg.find('`', b + 1);
            std::string name = b != std::string::npos && e != std::string::npos ? msg.substr(b + 1, e - b - 1) : d.name;
            diag.notes.push_back(dims_.empty() ? "this function declares no shape variables; add `(dims " + name + ")`"
                                               : "declare it in the function's `(dims ...)`");
          }
        });
  }

  std::optional<types::Shape> shape(const std::vector<DimAst>& ds) {
    types::Shape s;
    bool ok = true;
    for (const auto& d : ds) {
      auto p = dim(d);
      if (p) s.push_back(*p);
      ok &= p.has_value();
    }
    if (!ok) return std::nullopt;
    return s;
  }

  // A dtype as written (a dtype variable's set is the function's declaration).
  types::DTypeValue dtype_of(types::DType d, const std::string& var) const {
    if (d != types::DType::Var) return types::DTypeValue::concrete(d);
    auto it = dtype_sets_.find(var);
    return {types::DType::Var, var, it == dtype_sets_.end() ? types::kAllDTypes : it->second};
  }

  std::optional<TensorType> type(const syntax::TypeAst& t) {
    auto s = shape(t.dims);
    if (!s) return std::nullopt;
    TensorType tt = types::make_type(dtype_of(t.dtype, t.dtype_var), *s, t.device);
    Span saved = span_;
    span_ = t.span;
    bool ok = check_well_formed(tt, *this);
    span_ = saved;
    if (!ok) return std::nullopt;
    return tt;
  }

  // ---- functions -----------------------------------------------------------
  // §4.26: `(grad NAME OF [:wrt (P...)])` has OF's shape variables, `where`
  // and parameters, and returns OF's result followed by one gradient per
  // differentiated parameter (that parameter's type). The body is written by
  // the reverse-mode pass; here only what the signature needs is checked.
  std::optional<ir::Function> grad_signature(const syntax::FuncAst& f) {
    const ir::Function* of = module_->find(f.grad_of);
    if (!of) {
      if (poisoned_functions_.count(f.grad_of)) return std::nullopt;
      auto& d = res_.diags.report("E0105", f.grad_of_span, "unknown function `" + f.grad_of + "`");
      d.notes.push_back("`grad` can differentiate only a function defined before it in the module");
      return std::nullopt;
    }
    auto fail_grad = [&](Span at, const std::string& msg, std::vector<std::string> notes) -> std::optional<ir::Function> {
      auto& d = res_.diags.report("E0601", at, msg);
      d.notes = std::move(notes);
      return std::nullopt;
    };
    if (of->result_types.size() != 1)
      return fail_grad(f.grad_of_span, "`grad` differentiates a function with one result; `" + of->name + "` returns " +
                                           std::to_string(of->result_types.size()),
                       {"help: write a function that returns only the quantity to differentiate (e.g. the loss) and differentiate that"});
    if ((of->result_types[0].possible_dtypes() & ~types::kFloatingDTypes) != 0)
      return fail_grad(f.grad_of_span, "`grad` differentiates a floating result; `" + of->name + "` returns " + of->result_types[0].str(), {});
    ir::Function fn;
    fn.name = f.name;
    fn.span = f.span;
    fn.grad_of = of->name;
    fn.dims = of->dims;
    fn.dtype_vars = of->dtype_vars;
    fn.device_vars = of->device_vars;
    fn.given = of->given;
    fn.where = of->where;
    for (ir::ValueId p : of->params) {
      fn.params.push_back(static_cast<ir::ValueId>(fn.values.size()));
      fn.values.push_back(of->values[p]);
    }
    fn.result_types = of->result_types;
    if (f.has_wrt) {
      for (const auto& [name, sp] : f.wrt) {
        size_t i = 0;
        while (i < fn.params.size() && fn.values[fn.params[i]].name != name) ++i;
        if (i == fn.params.size())
          return fail_grad(sp, "`" + name + "` is not a parameter of `" + of->name + "`", {});
        if ((fn.values[fn.params[i]].type.possible_dtypes() & ~types::kFloatingDTypes) != 0)
          return fail_grad(sp, "parameter `" + name + "` of `" + of->name + "` is " + fn.values[fn.params[i]].type.str() + ", not floating",
                           {"gradients exist only with respect to floating parameters"});
        if (std::find(fn.wrt.begin(), fn.wrt.end(), i) != fn.wrt.end())
          return fail_grad(sp, "`" + name + "` is listed twice in `:wrt`", {});
        fn.wrt.push_back(i);
      }
    } else {
      for (size_t i = 0; i < fn.params.size(); ++i)
        if ((fn.values[fn.params[i]].type.possible_dtypes() & ~types::kFloatingDTypes) == 0) fn.wrt.push_back(i);
      if (fn.wrt.empty())
        return fail_grad(f.grad_of_span, "`" + of->name + "` has no floating parameter to differentiate with respect to", {});
    }
    for (size_t i : fn.wrt) fn.result_types.push_back(fn.values[fn.params[i]].type);
    return fn;
  }

  std::optional<ir::Function> function(const syntax::FuncAst& f) {
    ir::Function fn;
    fn.name = f.name;
    fn.span = f.span;
    fn_ = &fn;
    dims_.clear();
    scope_.clear();
    temp_ = 0;
    size_t errors_before = res_.diags.error_count();
    for (const auto& [n, sp] : f.dims) {
      if (!dims_.insert(n).second) res_.diags.report("E0102", sp, "shape variable `" + n + "` is declared twice");
      else fn.dims.push_back(n);
    }
    dtype_sets_.clear();
    std::set<std::string> device_names;
    for (const auto& d : f.dtype_vars) {
      if (dims_.count(d.name) || dtype_sets_.count(d.name)) res_.diags.report("E0102", d.span, "`" + d.name + "` is declared twice in `" + f.name + "`");
      else if (d.set == 0) res_.diags.report("E0003", d.span, "dtype variable `" + d.name + "` ranges over no dtype");
      else {
        dtype_sets_[d.name] = d.set;
        fn.dtype_vars.push_back({d.name, d.set});
      }
    }
    for (const auto& [n, sp] : f.device_vars) {
      if (dims_.count(n) || dtype_sets_.count(n) || !device_names.insert(n).second)
        res_.diags.report("E0102", sp, "`" + n + "` is declared twice in `" + f.name + "`");
      else fn.device_vars.push_back(n);
    }
    for (const auto& [n, sp] : f.given) {
      if (!dims_.count(n)) {
        auto& d = res_.diags.report("E0104", sp, "`given` names `" + n + "`, which is not a shape variable of `" + f.name + "`");
        d.notes.push_back("help: declare it in `(dims ...)` too: `given` says which of the shape variables every call supplies");
      } else if (std::find(fn.given.begin(), fn.given.end(), n) != fn.given.end()) {
        res_.diags.report("E0102", sp, "shape variable `" + n + "` is listed twice in `given`");
      } else {
        fn.given.push_back(n);
      }
    }
    where_incomplete_ = false;
    for (const auto& c : f.where) {
      auto a = dim(c.lhs, true), b = dim(c.rhs, true);
      if (a && b) fn.where.push_back({c.kind, *a, *b});
      else where_incomplete_ = true;
    }
    solver_.begin_function(fn.dims, fn.where);
    if (res_.diags.error_count() == errors_before && !fn.where.empty()) {
      smt::Outcome o = solver_.hypotheses_satisfiable();
      if (o.kind == smt::Outcome::Kind::Refuted) {
        auto& d = res_.diags.report("E0307", f.where.front().span, "the `where` constraints of `" + f.name + "` cannot all hold");
        d.notes.push_back("no positive values of the shape variables satisfy them, so every obligation would hold vacuously");
      } else if (o.kind == smt::Outcome::Kind::Unknown) {
        // Not an error (the constraints may well hold), but never silence:
        // if they cannot hold, everything below checks vacuously.
        auto& d = res_.diags.report("E0501", f.where.front().span,
                                    "could not decide whether the `where` constraints of `" + f.name + "` can all hold");
        d.severity = syntax::Severity::Warning;
        d.notes.push_back("Z3 answered unknown (" + o.reason + ")");
        d.notes.push_back("if no positive values satisfy them, every obligation of `" + f.name +
                          "` holds vacuously and no call can pass its input check; state them so that a solution is evident");
      }
    }
    for (const auto& p : f.params) {
      span_ = p.span;
      auto t = type(p.type);
      if (scope_.count(p.name)) {
        res_.diags.report("E0102", p.span, "parameter `" + p.name + "` is declared twice");
        continue;
      }
      if (!t) {
        scope_[p.name] = std::nullopt;
        continue;
      }
      ir::ValueId id = new_value(p.name, *t, p.span);
      fn.params.push_back(id);
      scope_[p.name] = id;
    }
    // Every dtype and device variable must be some parameter's (spec §3.5):
    // a call, and the host at an entry point, read it from the arguments.
    if (fn.params.size() == f.params.size()) {
      auto undetermined = [&](const std::string& v, Span at, const std::string& kind) {
        for (ir::ValueId p : fn.params) {
          const TensorType& t = fn.values[p].type;
          if ((t.dtype == types::DType::Var && t.dtype_var == v) || (t.device.is_var() && t.device.var == v)) return;
        }
        auto& d = res_.diags.report("E0308", at, kind + " variable `" + v + "` of `" + f.name + "` is not the " + kind + " of any parameter");
        d.notes.push_back("a call binds it from its arguments, as the host does at an entry point; a variable that no parameter type names "
                          "could not be bound");
        d.notes.push_back("help: use `" + v + "` in a parameter's type, or replace it by a concrete " + kind);
      };
      for (const auto& d : f.dtype_vars)
        if (dtype_sets_.count(d.name)) undetermined(d.name, d.span, "dtype");
      for (const auto& [n, sp] : f.device_vars) undetermined(n, sp, "device");
    }
    // Every shape variable must be determined by the parameter shapes (the
    // rule of types/shape_inference.h), or no call could bind it.
    if (fn.params.size() == f.params.size()) {
      std::vector<types::Shape> shapes;
      for (ir::ValueId p : fn.params) shapes.push_back(fn.values[p].type.shape);
      // Reported at the end of the module unless a call gives them (`:dims`).
      const std::set<std::string> given(fn.given.begin(), fn.given.end());
      for (const std::string& v : types::plan_shape_inference(fn.dims, shapes, fn.where, given).undetermined) {
        Span at = f.span;
        for (const auto& [n, sp] : f.dims)
          if (n == v) at = sp;
        undetermined_[f.name].push_back({v, at});
      }
    }
    bool returns_ok = true;
    for (const auto& t : f.returns) {
      span_ = t.span;
      auto tt = type(t);
      if (tt) fn.result_types.push_back(*tt);
      returns_ok &= tt.has_value();
    }
    for (const auto& l : f.lets) let(l);
    // §4.19: returned values check against `returns`.
    span_ = f.return_span;
    if (returns_ok && f.results.size() != fn.result_types.size()) {
      fail({"E0205", "`" + f.name + "` returns " + std::to_string(f.results.size()) + " value(s) but declares " + std::to_string(fn.result_types.size()),
            "", "", {}});
    } else if (returns_ok) {
      for (size_t i = 0; i < f.results.size(); ++i) {
        auto v = expr(f.results[i], &fn.result_types[i]);
        if (!v) continue;
        span_ = f.results[i].span;
        check_subsumes(fn_->values[*v].type, fn.result_types[i], "returned value " + std::to_string(i + 1) + " of `" + f.name + "`", *this);
        fn.results.push_back(*v);
      }
    }
    solver_.end_function();
    fn_ = nullptr;
    res_.stats.bindings += fn.body.size();
    if (res_.diags.error_count() != errors_before) return std::nullopt;
    return fn;
  }

  void let(const syntax::LetAst& l) {
    for (size_t i = 0; i < l.names.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (l.names[i] == l.names[j]) {
          res_.diags.report("E0102", l.name_spans[i], "`" + l.names[i] + "` is bound twice in this `let`");
          for (const auto& n : l.names) scope_[n] = std::nullopt;
          return;
        }
    for (size_t i = 0; i < l.names.size(); ++i)
      if (scope_.count(l.names[i])) {
        res_.diags.report("E0102", l.name_spans[i], "`" + l.names[i] + "` is already defined in this function");
        return;
      }
    auto poison = [&] {
      for (const auto& n : l.names) scope_[n] = std::nullopt;
    };
    const bool is_top_k = l.value.kind == ExprAst::Kind::Op && l.value.op == OpKind::TopK;
    if (is_top_k && l.names.size() == 2) {
      auto rs = top_k(l.value);
      if (!rs) return poison();
      for (size_t i = 0; i < 2; ++i) {
        fn_->values[(*rs)[i]].name = l.names[i];
        scope_[l.names[i]] = (*rs)[i];
      }
      return;
    }
    if (l.names.size() > 1 || (l.value.kind == ExprAst::Kind::Op && l.value.op == OpKind::Call)) {
      if (l.value.kind != ExprAst::Kind::Op || l.value.op != OpKind::Call) {
        span_ = l.span;
        fail({"E0205", is_top_k ? "`top_k` gives 2 results, the values and their indices; " + std::to_string(l.names.size()) + " names are bound"
                                : "only a `call` or `top_k` can bind several names",
              "", "", {}});
        return poison();
      }
      auto rs = call(l.value, l.names.size(), &l);
      if (!rs) return poison();
      for (size_t i = 0; i < l.names.size(); ++i) {
        fn_->values[(*rs)[i]].name = l.names[i];
        scope_[l.names[i]] = (*rs)[i];
      }
      if (l.ascription && l.names.size() == 1) {
        std::optional<TensorType> want = type(*l.ascription);
        span_ = l.value.span;
        if (want) check_subsumes(fn_->values[(*rs)[0]].type, *want, "`" + l.names[0] + "`", *this);
      }
      return;
    }
    std::optional<TensorType> want;
    if (l.ascription) {
      span_ = l.ascription->span;
      want = type(*l.ascription);
      if (!want) return poison();
    }
    auto v = expr(l.value, want ? &*want : nullptr, l.names[0]);
    if (!v) return poison();
    if (want) {
      span_ = l.value.span;
      if (!check_subsumes(fn_->values[*v].type, *want, "`" + l.names[0] + "`", *this)) return poison();
    }
    if (l.value.kind == ExprAst::Kind::Var) {
      // `(let y x)`: an alias gets its own binding so that names stay unique.
      v = bind(OpKind::BroadcastTo, {}, {}, want ? *want : fn_->values[*v].type, l.span, l.names[0], *v);
    } else {
      fn_->values[*v].name = l.names[0];
      // §4.2 T-LetAsc: the name has the ascribed type (proved equal above).
      if (want) fn_->values[*v].type = *want;
    }
    scope_[l.names[0]] = *v;
  }

  // ---- expressions -----------------------------------------------------------
  // An axis of `v` as the IR holds it: a negative one counted from the end
  // (0 <= axis < rank). One out of range is kept as written, for the rule to
  // report (E0204).
  int64_t canonical_axis(int64_t axis, ir::ValueId v) const {
    int64_t r = static_cast<int64_t>(fn_->values[v].type.rank());
    return axis < 0 && axis >= -r ? axis + r : axis;
  }

  ir::ValueId new_value(const std::string& name, const TensorType& t, Span sp) {
    fn_->values.push_back({name, t, sp});
    return static_cast<ir::ValueId>(fn_->values.size() - 1);
  }

  // Appends `result = op(operands)`. An alias `(let y x)` becomes an
  // identity broadcast_to, so that every name has exactly one binding.
  ir::ValueId bind(OpKind op, std::vector<ir::ValueId> operands, ir::Attrs attrs, const TensorType& t, Span sp, const std::string& name,
                   std::optional<ir::ValueId> alias_of = std::nullopt) {
    if (alias_of) {
      op = OpKind::BroadcastTo;
      operands = {*alias_of};
      attrs.shape = t.shape;
    }
    ir::ValueId r = new_value(name.empty() ? "%" + std::to_string(temp_++) : name, t, sp);
    fn_->body.push_back({op, std::move(operands), {r}, std::move(attrs), sp});
    return r;
  }

  // A literal of dtype `dt` must be representable in every dtype `dt` may
  // be (a dtype variable: every one it ranges over, spec §4.9).
  std::optional<ir::ValueId> literal(const ExprAst& x, const types::DTypeValue& dt, types::Device dev, const types::Shape& s, OpKind op,
                                     const std::string& name) {
    ir::Attrs a;
    a.set_dtype(dt);
    a.device = dev;
    a.shape = s;
    a.is_int = x.is_int;
    a.int_value = x.int_value;
    a.float_value = x.float_value;
    span_ = x.span;
    const types::DTypeSet may = dt.possible();
    const std::string as = dt.dtype == types::DType::Var ? "`" + dt.var + "` may be " : "the expected dtype is ";
    std::vector<std::string> help;
    if (dt.dtype == types::DType::Var) help.push_back("a literal of a dtype variable must be representable in every dtype it ranges over (" +
                                                      types::dtype_set_str(dt.set) + ")");
    if ((may & types::kIntegralDTypes) && !x.is_int) {
      fail({"E0207", "literal `" + x.literal + "` is not an integer but " + as + types::dtype_set_str(may & types::kIntegralDTypes), "", "", help});
      return std::nullopt;
    }
    if ((may & types::dtype_bit(types::DType::Bool)) && !(x.is_int && (x.int_value == 0 || x.int_value == 1))) {
      fail({"E0207", "literal `" + x.literal + "` is not a bool (write 0 or 1)" + (dt.dtype == types::DType::Var ? ", and " + as + "bool" : ""),
            "", "", help});
      return std::nullopt;
    }
    if ((may & types::dtype_bit(types::DType::I32)) && (x.int_value < INT32_MIN || x.int_value > INT32_MAX)) {
      fail({"E0207", "literal `" + x.literal + "` does not fit in i32" + (dt.dtype == types::DType::Var ? ", and " + as + "i32" : ""), "", "",
            help});
      return std::nullopt;
    }
    TensorType t = types::make_type(dt, s, dev);
    return bind(op, {}, a, t, x.span, name);
  }

  // Constants written without a device (`const`, `dim_value`) take the
  // device their context expects (spec §4.9): the other operand's of an
  // elementwise operation, through the unary operations between them, or
  // the expected type's in checking mode; the host otherwise. `device_hint_`
  // is that context while an operand is elaborated.
  std::optional<types::Device> device_hint_;
  struct HintScope {
    std::optional<types::Device>& slot;
    std::optional<types::Device> saved;
    HintScope(std::optional<types::Device>& s, std::optional<types::Device> d) : slot(s), saved(s) {
      if (d) slot = d;
    }
    ~HintScope() { slot = saved; }
  };
  types::Device hinted_device(const std::optional<types::Device>& written) const {
    return written ? *written : device_hint_ ? *device_hint_ : types::Device::host();
  }
  // Whether `x` names a value or a device anywhere (then its own device is
  // fixed); otherwise every constant in it follows the context.
  static bool fixes_device(const ExprAst& x) {
    if (x.kind == ExprAst::Kind::Var) return true;
    if (x.kind == ExprAst::Kind::Number) return false;
    if (x.device || x.type || x.op == OpKind::Call) return true;
    for (const ExprAst& o : x.operands)
      if (fixes_device(o)) return true;
    return false;
  }

  std::optional<ir::ValueId> expr(const ExprAst& x, const TensorType* expected, const std::string& name = "") {
    HintScope hint(device_hint_, expected ? std::optional<types::Device>(expected->device) : std::nullopt);
    return expr_hinted(x, expected, name);
  }

  std::optional<ir::ValueId> expr_hinted(const ExprAst& x, const TensorType* expected, const std::string& name) {
    switch (x.kind) {
      case ExprAst::Kind::Var: {
        auto it = scope_.find(x.name);
        if (it == scope_.end()) {
          auto& d = res_.diags.report("E0101", x.span, "unknown name `" + x.name + "`");
          if (dims_.count(x.name)) d.notes.push_back("`" + x.name + "` is a shape variable, not a value");
          else if (syntax::parse_op(x.name)) d.notes.push_back("`" + x.name + "` is an operation; apply it as `(" + x.name + " ...)`");
          return std::nullopt;
        }
        return it->second;  // nullopt when poisoned: its error is already reported
      }
      case ExprAst::Kind::Number:
        if (!expected) {
          span_ = x.span;
          fail({"E0206", "the type of literal `" + x.literal + "` cannot be inferred here", "", "",
                {"write `(const " + x.literal + " f32)` or `(fill " + x.literal + " (tensor f32 (...) host))`"}});
          return std::nullopt;
        }
        return literal(x, types::DTypeValue::of(*expected), expected->device, expected->shape, OpKind::Fill, name);
      case ExprAst::Kind::Op: break;
    }
    if (x.op == OpKind::Call) {
      auto rs = call(x, 1, nullptr);
      if (!rs) return std::nullopt;
      return (*rs)[0];
    }
    ir::Attrs a;
    std::vector<ir::ValueId> ops;
    OpFamily fam = syntax::op_family(x.op);
    // Literals as operands of elementwise binary ops take the other side's
    // dtype and device (spec §2).
    bool binaryish = fam == OpFamily::Binary || fam == OpFamily::Compare || fam == OpFamily::Select;
    std::vector<std::optional<ir::ValueId>> vals(x.operands.size());
    bool ok = true;
    std::vector<size_t> deferred;  // operands whose constants follow the others' device
    for (size_t i = 0; i < x.operands.size(); ++i) {
      if (binaryish && x.operands[i].kind == ExprAst::Kind::Number) continue;
      if (fam == OpFamily::Const || fam == OpFamily::Fill) continue;
      if (binaryish && !fixes_device(x.operands[i])) {
        deferred.push_back(i);
        continue;
      }
      if (fam == OpFamily::CopyToDevice || fam == OpFamily::CopyToHost) {
        // What a copy moves is where it was written: a constant in it is on
        // the host, whatever device the copy's result goes to.
        std::optional<types::Device> outer = device_hint_;
        device_hint_.reset();
        vals[i] = expr_hinted(x.operands[i], nullptr, "");
        device_hint_ = outer;
        ok &= vals[i].has_value();
        continue;
      }
      vals[i] = expr_hinted(x.operands[i], nullptr, "");
      ok &= vals[i].has_value();
    }
    if (!ok) return std::nullopt;
    if (!deferred.empty()) {
      std::optional<types::Device> from_others;
      for (size_t i = 0; i < vals.size() && !from_others; ++i)
        if (vals[i]) from_others = fn_->values[*vals[i]].type.device;
      HintScope hint(device_hint_, from_others);
      for (size_t i : deferred) {
        vals[i] = expr_hinted(x.operands[i], nullptr, "");
        ok &= vals[i].has_value();
      }
      if (!ok) return std::nullopt;
    }
    if (binaryish) {
      std::optional<ir::ValueId> ref;
      for (size_t i = (fam == OpFamily::Select ? 1 : 0); i < vals.size(); ++i)
        if (vals[i]) ref = vals[i];
      for (size_t i = 0; i < vals.size(); ++i) {
        if (vals[i]) continue;
        if (!ref && !(fam == OpFamily::Select && i == 0)) {
          span_ = x.span;
          fail({"E0206", "cannot infer the dtype of the literals of `" + std::string(syntax::op_name(x.op)) + "`: no operand is a tensor", "", "",
                {"write one side as `(const V DTYPE)`"}});
          return std::nullopt;
        }
        if (!ref) {
          span_ = x.span;
          fail({"E0206", "cannot infer the dtype of the literals of `select`: neither branch is a tensor", "", "",
                {"write one branch as `(const V DTYPE)`"}});
          return std::nullopt;
        }
        const TensorType& rt = fn_->values[*ref].type;
        types::DTypeValue dt = (fam == OpFamily::Select && i == 0) ? types::DTypeValue::concrete(types::DType::Bool) : types::DTypeValue::of(rt);
        vals[i] = literal(x.operands[i], dt, rt.device, {}, OpKind::Const, "");
        if (!vals[i]) return std::nullopt;
      }
    }
    for (auto& v : vals)
      if (v) ops.push_back(*v);
    span_ = x.span;
    if (syntax::op_is_derived(x.op)) return derived(x, ops[0], name);
    switch (fam) {
      case OpFamily::Cast: a.set_dtype(dtype_of(*x.dtype, x.dtype_var)); break;
      case OpFamily::Const: {
        const ExprAst& n = x.operands[0];
        return literal(n, dtype_of(*x.dtype, x.dtype_var), hinted_device(x.device), {}, OpKind::Const, name);
      }
      case OpFamily::Fill: {
        std::optional<TensorType> t;
        if (x.type) {
          t = type(*x.type);
          if (!t) return std::nullopt;
        } else if (expected) {
          t = *expected;
        } else {
          fail({"E0206", "`(fill " + x.operands[0].literal + ")` needs a type here", "", "",
                {"write `(fill " + x.operands[0].literal + " (tensor DTYPE (DIMS...) DEVICE))`"}});
          return std::nullopt;
        }
        return literal(x.operands[0], types::DTypeValue::of(*t), t->device, t->shape, OpKind::Fill, name);
      }
      case OpFamily::Iota: {
        auto t = type(*x.type);
        if (!t) return std::nullopt;
        a.set_dtype(types::DTypeValue::of(*t));
        a.device = t->device;
        a.shape = t->shape;
        a.axis = x.axis.value_or(0);
        break;
      }
      case OpFamily::Permute: a.axes = x.ints; break;
      case OpFamily::Reshape: case OpFamily::BroadcastTo: {
        auto s = shape(x.shape);
        if (!s) return std::nullopt;
        a.shape = *s;
        break;
      }
      case OpFamily::Concat: a.axis = canonical_axis(*x.axis, ops[0]); break;
      case OpFamily::Slice: {
        auto st = dim(*x.start), sz = dim(*x.size);
        if (!st || !sz) return std::nullopt;
        a.axis = canonical_axis(*x.axis, ops[0]);
        a.start = *st;
        a.size = *sz;
        break;
      }
      case OpFamily::Reduce: {
        int64_t r = static_cast<int64_t>(fn_->values[ops[0]].type.rank());
        if (!x.has_axes)
          for (int64_t i = 0; i < r; ++i) a.axes.push_back(i);
        else
          for (int64_t v : x.ints) a.axes.push_back(canonical_axis(v, ops[0]));
        a.keepdims = x.keepdims;
        break;
      }
      case OpFamily::CopyToDevice: a.device = *x.device; break;
      case OpFamily::Softmax:
      case OpFamily::RepeatInterleave: {
        a.axis = canonical_axis(x.axis.value_or(-1), ops[0]);  // softmax's default: the last axis
        if (fam == OpFamily::RepeatInterleave) {
          // Negative literals reach the rule's `repeats >= 1` obligation
          // (E0305) instead of being refused as a negative dimension.
          auto rp = dim(*x.repeats, true);
          if (!rp) return std::nullopt;
          a.size = *rp;
        }
        break;
      }
      case OpFamily::DimValue: {
        // Any dimension expression over the shape variables is a value; it
        // need not be >= 1 (`(- N 1)` is 0 when N = 1).
        auto d = dim(*x.repeats, true);
        if (!d) return std::nullopt;
        a.size = *d;
        a.set_dtype(dtype_of(*x.dtype, x.dtype_var));
        a.device = hinted_device(x.device);
        break;
      }
      case OpFamily::Scan:
        a.axis = canonical_axis(*x.axis, ops[0]);
        a.reverse = x.reverse;
        break;
      case OpFamily::TakeAlongAxis: {
        // Stored normalized (0 <= axis < rank) when in range; the rule reports the rest.
        a.axis = x.axis.value_or(-1);
        int64_t r = static_cast<int64_t>(fn_->values[ops[0]].type.rank());
        if (a.axis < 0 && a.axis >= -r) a.axis += r;
        break;
      }
      default: break;
    }
    std::vector<TensorType> in;
    for (auto v : ops) in.push_back(fn_->values[v].type);
    span_ = x.span;
    // The operands as written, for diagnostics that blame one of them.
    operands_.clear();
    for (size_t i = 0; i < x.operands.size() && i < vals.size(); ++i) {
      if (!vals[i]) continue;
      const ir::Value& v = fn_->values[*vals[i]];
      bool named = x.operands[i].kind == ExprAst::Kind::Var;
      operands_.push_back({named ? x.operands[i].name : "", x.operands[i].span, named ? v.span : Span{}});
    }
    std::optional<TensorType> t;
    try {
      t = type_op(x.op, in, a, *this);
    } catch (const types::DimOverflow& e) {
      operands_.clear();
      fail({"E0004", std::string(e.what()) + " in `" + std::string(syntax::op_name(x.op)) + "`", "", "", {}});
      return std::nullopt;
    }
    operands_.clear();
    if (!t) return std::nullopt;
    if (fam == OpFamily::Reduce) std::sort(a.axes.begin(), a.axes.end());
    return bind(x.op, ops, a, *t, x.span, name);
  }

  // What the expansions of check/derived_ops.h append through: bindings
  // typed by the rules (obligations discharged as any binding's), at the
  // form's span.
  struct DerivedSink final : DerivedOpSink {
    Elaborator& e;
    const ExprAst& form;
    DerivedSink(Elaborator& el, const ExprAst& f) : e(el), form(f) {}
    std::optional<ir::ValueId> emit(OpKind op, std::vector<ir::ValueId> operands, ir::Attrs attrs) override {
      std::vector<TensorType> in;
      for (auto v : operands) in.push_back(e.fn_->values[v].type);
      e.span_ = form.span;
      std::optional<TensorType> t;
      try {
        t = type_op(op, in, attrs, e);
      } catch (const types::DimOverflow& ex) {
        e.fail({"E0004", std::string(ex.what()) + " in `" + std::string(syntax::op_name(form.op)) + "`", "", "", {}});
        return std::nullopt;
      }
      if (!t) return std::nullopt;
      return e.bind(op, std::move(operands), std::move(attrs), *t, form.span, "");
    }
    std::optional<ir::ValueId> fill(const ExprAst& literal, const TensorType& t) override {
      ExprAst lit = literal;
      lit.span = literal.span.begin == literal.span.end ? form.span : literal.span;
      auto v = e.literal(lit, types::DTypeValue::of(t), t.device, t.shape, OpKind::Fill, "");
      e.span_ = form.span;
      return v;
    }
    const TensorType& type(ir::ValueId v) const override { return e.fn_->values[v].type; }
    bool proves(const ShapeConstraint& goal) override {
      return !e.where_incomplete_ && e.solver_.prove(goal).kind == smt::Outcome::Kind::Proved;
    }
    RuleEnv& env() override { return e; }
  };

  DerivedAttrs derived_attrs(const ExprAst& x, bool& ok) {
    DerivedAttrs at;
    at.axis = x.axis;
    at.axes = x.ints;
    at.keepdims = x.keepdims;
    at.k = x.k.value_or(0);
    ok = true;
    if (x.low) {
      auto l = dim(*x.low, true), h = dim(*x.high, true);
      if (!l || !h) ok = false;
      else at.low = *l, at.high = *h;
    }
    if (!x.pad_value.empty()) at.value = &x.pad_value[0];
    return at;
  }

  // §4.28-4.30: a derived operation, written as primitive bindings
  // (check/derived_ops.h); the last one takes the let's name.
  std::optional<ir::ValueId> derived(const ExprAst& x, ir::ValueId operand, const std::string& name) {
    operands_.clear();
    span_ = x.span;
    if (x.op == OpKind::TopK) {
      fail({"E0205", "`top_k` gives two results (the values and their indices); bind them with `(let (VALUES INDICES) (top_k ...))`", "", "",
            {}});
      return std::nullopt;
    }
    bool ok;
    DerivedAttrs at = derived_attrs(x, ok);
    if (!ok) return std::nullopt;
    DerivedSink sink(*this, x);
    auto r = expand_derived(x.op, operand, at, sink);
    if (r && !name.empty()) fn_->values[*r].name = name;
    return r;
  }

  // §4.31: `(let (VALUES INDICES) (top_k X :k K :axis A))`.
  std::optional<std::vector<ir::ValueId>> top_k(const ExprAst& x) {
    auto operand = expr(x.operands[0], nullptr);
    if (!operand) return std::nullopt;
    operands_.clear();
    span_ = x.span;
    bool ok;
    DerivedAttrs at = derived_attrs(x, ok);
    DerivedSink sink(*this, x);
    auto r = expand_top_k(*operand, at, sink);
    if (!r) return std::nullopt;
    return std::vector<ir::ValueId>{r->first, r->second};
  }

  // §4.18 T-Call
  std::optional<std::vector<ir::ValueId>> call(const ExprAst& x, size_t want_results, const syntax::LetAst* l) {
    span_ = x.span;
    const ir::Function* callee = module_->find(x.name);
    if (!callee) {
      if (poisoned_functions_.count(x.name)) return std::nullopt;
      auto& d = res_.diags.report("E0105", x.span, "unknown function `" + x.name + "`");
      d.notes.push_back("a function can call only functions defined before it in the module");
      return std::nullopt;
    }
    // §8: calls nest at most kMaxCallDepth deep (the back ends inline them).
    // Functions call only earlier ones, so each one's height is known here:
    // one pass, linear in the module.
    const int height = 1 + call_height_[x.name];
    if (height > kMaxCallDepth) {
      auto& d = res_.diags.report("E0106", x.span,
                                  "calls nest " + std::to_string(height) + " deep from here, over the limit of " + std::to_string(kMaxCallDepth));
      d.notes.push_back("`" + x.name + "` reaches " + std::to_string(height - 1) +
                        " calls deep; merge some levels of the chain into one function (spec §8)");
      return std::nullopt;
    }
    call_height_now_ = std::max(call_height_now_, height);
    std::vector<ir::ValueId> args;
    bool ok = true;
    for (const auto& o : x.operands) {
      auto v = expr(o, nullptr);
      if (v) args.push_back(*v);
      ok &= v.has_value();
    }
    if (!ok) return std::nullopt;
    span_ = x.span;
    if (want_results != callee->result_types.size() && args.size() == callee->params.size()) {
      fail({"E0205", "`" + x.name + "` returns " + std::to_string(callee->result_types.size()) + " value(s) but " + std::to_string(want_results) +
                         " name(s) are bound",
            "", "", {l ? "bind them all: `(let (a b ...) (call ...))`" : "bind the results with `(let (a b ...) (call ...))`"}});
      return std::nullopt;
    }
    // Explicit shape arguments: dimensions over this function's variables.
    std::vector<std::pair<std::string, Poly>> given;
    if (x.has_call_dims) {
      called_with_dims_.insert(x.name);
      // A gradient's variables are its function's: the call gives them to
      // that function too (and to the one a gradient of a gradient names).
      for (const ir::Function* g = callee; g && !g->grad_of.empty(); g = module_->find(g->grad_of)) called_with_dims_.insert(g->grad_of);
      for (const auto& cd : x.call_dims) {
        auto p = dim(cd.value);
        if (!p) ok = false;
        else given.push_back({cd.var, *p});
      }
      if (!ok) return std::nullopt;
    }
    span_ = x.span;
    std::vector<TensorType> arg_types;
    for (ir::ValueId v : args) arg_types.push_back(fn_->values[v].type);
    std::optional<std::vector<TensorType>> rts;
    try {
      rts = type_call(*callee, arg_types, *this, given);
    } catch (const types::DimOverflow& e) {
      // The callee instantiated at these shapes: its dimension arithmetic
      // leaves 64 bits (issue 24, item 13). An error here, not E0900.
      fail({"E0004", std::string(e.what()) + " when `" + x.name + "` is instantiated at this call's shapes", "", "",
            {"the callee's shapes evaluated at the arguments' dimensions overflow signed 64 bits"}});
      return std::nullopt;
    }
    if (!rts) return std::nullopt;
    ir::Attrs a;
    a.callee = x.name;
    a.call_dims = given;
    std::vector<ir::ValueId> rs;
    for (const auto& t : *rts) rs.push_back(new_value("%" + std::to_string(temp_++), t, x.span));
    fn_->body.push_back({OpKind::Call, args, rs, a, x.span});
    return rs;
  }

  CheckResult& res_;
  const CheckOptions& opts_;
  smt::ShapeSolver solver_;
  ir::Module* module_ = nullptr;
  ir::Function* fn_ = nullptr;
  std::set<std::string> dims_;
  std::map<std::string, types::DTypeSet> dtype_sets_;  // the function's dtype variables
  std::map<std::string, std::optional<ir::ValueId>> scope_;
  std::set<std::string> poisoned_functions_;
  // Per function checked so far: how many calls deep its body reaches (0:
  // it calls nothing); and the largest of the function being checked.
  static constexpr int kMaxCallDepth = 64;
  std::map<std::string, int> call_height_;
  int call_height_now_ = 0;
  Span span_;
  int temp_ = 0;
  bool where_incomplete_ = false;
  std::vector<uint32_t> lexical_errors_;
  // The operands of the operation being typed (name if a variable, span as
  // written, span of its declaration).
  struct Operand {
    std::string name;
    Span span, declared;
  };
  std::vector<Operand> operands_;
  std::vector<std::string> pending_help_;
  // E0308 candidates (function -> its first undetermined variable) and the
  // functions some call gives `:dims` to.
  struct Undetermined {
    std::string var;
    Span at;
  };
  std::map<std::string, std::vector<Undetermined>> undetermined_;
  std::set<std::string> called_with_dims_;
};

}  // namespace

void elaborate(const syntax::ModuleAst& ast, const CheckOptions& opts, std::vector<uint32_t> lexical_error_offsets, CheckResult& r) {
  Elaborator(r, opts, std::move(lexical_error_offsets)).run(ast);
}

}  // namespace shapeml::check
