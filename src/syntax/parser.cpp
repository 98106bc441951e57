#include "syntax/parser.h"

#include "syntax/type_syntax.h"

namespace shapeml::syntax {
namespace {

using types::ShapeConstraint;

class Parser {
 public:
  explicit Parser(DiagnosticSink& d) : diags_(d) {}

  std::optional<ModuleAst> module(const SExprFile& file) {
    if (file.items.empty()) {
      if (diags_.error_count() == 0) diags_.report("E0003", {0, 0}, "empty program: expected `(module NAME (func ...) ...)`");
      return std::nullopt;
    }
    const SExpr& m = file.items[0];
    for (size_t i = 1; i < file.items.size(); ++i)
      err(file.items[i], "a file holds one `module`; this form follows it");
    if (!m.is_list() || m.items.empty() || !m.items[0].is_symbol("module")) {
      err(m, "expected `(module NAME (func ...) ...)`");
      return std::nullopt;
    }
    ModuleAst mod;
    mod.span = m.span;
    if (m.items.size() < 2 || !m.items[1].is_symbol()) {
      err(m, "`module` needs a name: `(module NAME ...)`");
      return std::nullopt;
    }
    mod.name = m.items[1].text;
    for (size_t i = 2; i < m.items.size(); ++i) {
      if (auto f = func(m.items[i])) mod.funcs.push_back(std::move(*f));
      else if (m.items[i].is_list() && m.items[i].items.size() >= 2 && m.items[i].items[1].is_symbol())
        mod.malformed_funcs.push_back(m.items[i].items[1].text);
    }
    return mod;
  }

 private:
  void err(const SExpr& at, std::string msg) { diags_.report("E0003", at.span, std::move(msg)); }
  // The current function's dtype and device variables.
  TypeVarScope vars_;

  static bool head_is(const SExpr& e, const char* h) { return e.is_list() && !e.items.empty() && e.items[0].is_symbol(h); }

  std::optional<FuncAst> func(const SExpr& e) {
    if (head_is(e, "grad")) return grad(e);
    if (!head_is(e, "func")) {
      err(e, "expected `(func NAME ...)` or `(grad NAME OF)` inside a module");
      return std::nullopt;
    }
    FuncAst f;
    f.span = e.span;
    if (e.items.size() < 2 || !e.items[1].is_symbol()) {
      err(e, "`func` needs a name: `(func NAME (params ...) (returns ...) ... (return ...))`");
      return std::nullopt;
    }
    f.name = e.items[1].text;
    f.name_span = e.items[1].span;
    vars_ = {};
    bool ok = true, seen_params = false, seen_returns = false, seen_return = false;
    for (size_t i = 2; i < e.items.size(); ++i) {
      const SExpr& s = e.items[i];
      if (seen_return) {
        err(s, "nothing may follow `(return ...)` in a function");
        ok = false;
        break;
      }
      if (head_is(s, "dims")) {
        for (size_t k = 1; k < s.items.size(); ++k) {
          if (!s.items[k].is_symbol()) { err(s.items[k], "a shape variable must be a name"); ok = false; continue; }
          f.dims.push_back({s.items[k].text, s.items[k].span});
        }
      } else if (head_is(s, "dtypes") || head_is(s, "devices")) {
        ok &= type_vars(s, f, seen_params || seen_returns);
      } else if (head_is(s, "given")) {
        if (s.items.size() < 2) { err(s, "`given` names at least one shape variable of `dims`"); ok = false; }
        for (size_t k = 1; k < s.items.size(); ++k) {
          if (!s.items[k].is_symbol()) { err(s.items[k], "a shape variable must be a name"); ok = false; continue; }
          f.given.push_back({s.items[k].text, s.items[k].span});
        }
      } else if (head_is(s, "where")) {
        for (size_t k = 1; k < s.items.size(); ++k)
          if (auto c = constraint(s.items[k])) f.where.push_back(std::move(*c));
          else ok = false;
      } else if (head_is(s, "params")) {
        seen_params = true;
        for (size_t k = 1; k < s.items.size(); ++k) {
          const SExpr& p = s.items[k];
          if (!p.is_list() || p.items.size() != 2 || !p.items[0].is_symbol()) {
            err(p, "a parameter is `(NAME (tensor DTYPE (DIMS...) DEVICE))`");
            ok = false;
            continue;
          }
          auto t = type(p.items[1]);
          if (!t) { ok = false; continue; }
          f.params.push_back({p.items[0].text, *t, p.span});
        }
      } else if (head_is(s, "returns")) {
        seen_returns = true;
        f.returns_span = s.span;
        if (s.items.size() < 2) { err(s, "`returns` lists at least one type"); ok = false; }
        for (size_t k = 1; k < s.items.size(); ++k)
          if (auto t = type(s.items[k])) f.returns.push_back(*t);
          else ok = false;
      } else if (head_is(s, "let")) {
        if (auto l = let(s)) f.lets.push_back(std::move(*l));
        else ok = false;
      } else if (head_is(s, "return")) {
        seen_return = true;
        f.return_span = s.span;
        if (s.items.size() < 2) { err(s, "`return` names at least one value"); ok = false; }
        for (size_t k = 1; k < s.items.size(); ++k)
          if (auto x = expr(s.items[k])) f.results.push_back(std::move(*x));
          else ok = false;
      } else {
        err(s, "expected one of `dims`, `dtypes`, `devices`, `given`, `where`, `params`, `returns`, `let`, `return` in a function");
        ok = false;
      }
    }
    if (!seen_params) { err(e, "function `" + f.name + "` has no `(params ...)` (write `(params)` for none)"); ok = false; }
    if (!seen_returns) { err(e, "function `" + f.name + "` has no `(returns TYPE...)`"); ok = false; }
    if (!seen_return) { err(e, "function `" + f.name + "` does not end with `(return ...)`"); ok = false; }
    if (!ok) return std::nullopt;
    return f;
  }

  // `(dtypes T (U f32 bf16) ...)` or `(devices Dv ...)` (spec §3.5), before
  // the types that use them.
  bool type_vars(const SExpr& s, FuncAst& f, bool after_types) {
    const bool dt = head_is(s, "dtypes");
    if (after_types) {
      err(s, std::string("`") + (dt ? "dtypes" : "devices") + "` comes before `params` and `returns`, whose types use its variables");
      return false;
    }
    bool ok = true;
    for (size_t k = 1; k < s.items.size(); ++k) {
      const SExpr& v = s.items[k];
      const SExpr& name = v.is_list() && !v.items.empty() ? v.items[0] : v;
      if (!name.is_symbol() || (v.is_list() && (!dt || v.items.size() < 2))) {
        err(v, dt ? "a dtype variable is a name, or `(NAME DTYPE-OR-CLASS ...)` such as `(T f32 bf16)` or `(T floating)`"
                  : "a device variable is a name");
        ok = false;
        continue;
      }
      if (types::parse_dtype_set_word(name.text) || name.text == "host" || name.text == "cuda") {
        err(name, "`" + name.text + "` names a dtype, a dtype class or a device; a variable needs another name");
        ok = false;
        continue;
      }
      if (!dt) {
        f.device_vars.push_back({name.text, name.span});
        vars_.devices.insert(name.text);
        continue;
      }
      FuncAst::DTypeVarAst d{name.text, types::kAllDTypes, name.span};
      if (v.is_list()) {
        d.set = 0;
        for (size_t j = 1; j < v.items.size(); ++j) {
          auto w = v.items[j].is_symbol() ? types::parse_dtype_set_word(v.items[j].text) : std::nullopt;
          if (!w) {
            err(v.items[j], "expected a dtype (f32 f64 bf16 i32 i64 bool) or a class (floating, integral, numeric, any)");
            ok = false;
            continue;
          }
          d.set |= *w;
        }
      }
      f.dtype_vars.push_back(d);
      vars_.dtypes.insert(name.text);
    }
    return ok;
  }

  // `(grad NAME OF)` or `(grad NAME OF :wrt (P...))` (spec §4.26).
  std::optional<FuncAst> grad(const SExpr& e) {
    const char* form = "`grad` is `(grad NAME OF)` or `(grad NAME OF :wrt (PARAM...))`";
    if (e.items.size() != 3 && e.items.size() != 5) {
      err(e, form);
      return std::nullopt;
    }
    if (!e.items[1].is_symbol() || !e.items[2].is_symbol()) {
      err(e, std::string(form) + ": NAME and OF are function names");
      return std::nullopt;
    }
    FuncAst f;
    f.span = e.span;
    f.name = e.items[1].text;
    f.name_span = e.items[1].span;
    f.grad_of = e.items[2].text;
    f.grad_of_span = e.items[2].span;
    if (e.items.size() == 5) {
      if (e.items[3].kind != SExpr::Kind::Keyword || e.items[3].text != "wrt" || !e.items[4].is_list() || e.items[4].items.empty()) {
        err(e.items[3], std::string(form) + ": `:wrt` lists at least one parameter name");
        return std::nullopt;
      }
      f.has_wrt = true;
      for (const SExpr& p : e.items[4].items) {
        if (!p.is_symbol()) {
          err(p, "`:wrt` lists parameter names");
          return std::nullopt;
        }
        f.wrt.push_back({p.text, p.span});
      }
    }
    return f;
  }

  std::optional<LetAst> let(const SExpr& s) {
    LetAst l;
    l.span = s.span;
    if (s.items.size() != 3 && s.items.size() != 4) {
      err(s, "`let` is `(let NAME EXPR)`, `(let NAME TYPE EXPR)` or `(let (NAME...) (call ...))`");
      return std::nullopt;
    }
    const SExpr& n = s.items[1];
    if (n.is_symbol()) {
      l.names.push_back(n.text);
      l.name_spans.push_back(n.span);
    } else if (n.is_list() && !n.items.empty()) {
      for (const SExpr& x : n.items) {
        if (!x.is_symbol()) { err(x, "expected a name to bind"); return std::nullopt; }
        l.names.push_back(x.text);
        l.name_spans.push_back(x.span);
      }
    } else {
      err(n, "`let` binds a name or a list of names");
      return std::nullopt;
    }
    if (s.items.size() == 4) {
      auto t = type(s.items[2]);
      if (!t) return std::nullopt;
      l.ascription = *t;
    }
    auto v = expr(s.items.back());
    if (!v) return std::nullopt;
    l.value = std::move(*v);
    return l;
  }

  // Types, dimensions and constraints: the one reader of src/syntax/type_syntax.h.
  SyntaxErrorFn errfn() {
    return [this](const std::string& code, Span span, const std::string& msg) { diags_.report(code, span, msg); };
  }
  std::optional<DimAst> dim(const SExpr& s) { return read_dim(s, errfn()); }
  std::optional<std::vector<DimAst>> dim_list(const SExpr& s) {
    if (!s.is_list()) {
      err(s, "expected a list of dimensions `(D1 D2 ...)`");
      return std::nullopt;
    }
    std::vector<DimAst> out;
    for (const SExpr& x : s.items) {
      auto d = dim(x);
      if (!d) return std::nullopt;
      out.push_back(std::move(*d));
    }
    return out;
  }
  std::optional<types::Device> device(const SExpr& s) { return read_device(s, errfn(), &vars_); }
  // A dtype in an operation (cast, const, dim_value): maybe a variable.
  std::optional<types::DType> dtype(const SExpr& s, ExprAst& x) { return read_dtype_or_var(s, &vars_, x.dtype_var, errfn()); }
  std::optional<TypeAst> type(const SExpr& s) { return read_type(s, errfn(), &vars_); }
  std::optional<ConstraintAst> constraint(const SExpr& s) { return read_constraint(s, errfn()); }

  // Attributes `:name value` at the end of an op form.
  bool attrs(const SExpr& s, size_t from, ExprAst& x, std::initializer_list<const char*> allowed) {
    for (size_t i = from; i < s.items.size(); i += 2) {
      const SExpr& k = s.items[i];
      if (k.kind != SExpr::Kind::Keyword) { err(k, "expected a `:keyword` attribute here"); return false; }
      bool ok = false;
      for (const char* a : allowed) ok |= k.text == a;
      if (!ok) {
        std::string list;
        for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + ":" + a;
        err(k, "`" + std::string(op_name(x.op)) + "` has no attribute `:" + k.text + "`" + (list.empty() ? "" : " (it takes " + list + ")"));
        return false;
      }
      if (i + 1 >= s.items.size()) { err(k, "attribute `:" + k.text + "` needs a value"); return false; }
      const SExpr& v = s.items[i + 1];
      if (k.text == "axes") {
        if (!v.is_list()) { err(v, "`:axes` takes a list of integers `(0 1)`"); return false; }
        x.has_axes = true;
        for (const SExpr& a : v.items) {
          if (a.kind != SExpr::Kind::Int) { err(a, "an axis is an integer"); return false; }
          x.ints.push_back(a.int_value);
        }
      } else if (k.text == "axis") {
        if (v.kind != SExpr::Kind::Int) { err(v, "`:axis` takes an integer"); return false; }
        x.axis = v.int_value;
      } else if (k.text == "keepdims") {
        if (!v.is_symbol("true") && !v.is_symbol("false")) { err(v, "`:keepdims` is `true` or `false`"); return false; }
        x.keepdims = v.text == "true";
      } else if (k.text == "k") {
        if (v.kind != SExpr::Kind::Int || v.int_value < 1) { err(v, "`:k` takes an integer literal >= 1"); return false; }
        x.k = v.int_value;
      } else if (k.text == "reverse") {
        if (!v.is_symbol("true") && !v.is_symbol("false")) { err(v, "`:reverse` is `true` or `false`"); return false; }
        x.reverse = v.text == "true";
      } else if (k.text == "start" || k.text == "size" || k.text == "repeats" || k.text == "low" || k.text == "high") {
        auto d = dim(v);
        if (!d) return false;
        (k.text == "start" ? x.start : k.text == "size" ? x.size : k.text == "repeats" ? x.repeats : k.text == "low" ? x.low : x.high) =
            std::move(*d);
      } else if (k.text == "value") {
        if (!v.is_number()) { err(v, "`:value` takes a number literal"); return false; }
        auto n = expr(v);
        if (!n) return false;
        x.pad_value = {std::move(*n)};
      }
    }
    return true;
  }

  // `:dims ((H 4) (Dh (* 2 D)))`: the callee's shape variables given at a call.
  bool call_dims(const SExpr& v, ExprAst& x) {
    if (!v.is_list()) { err(v, "`:dims` takes a list of pairs `((VAR DIM) ...)`"); return false; }
    x.has_call_dims = true;
    for (const SExpr& p : v.items) {
      if (!p.is_list() || p.items.size() != 2 || !p.items[0].is_symbol()) {
        err(p, "an explicit shape argument is `(VAR DIM)`, e.g. `(H 4)` or `(Dh (floordiv D 4))`");
        return false;
      }
      auto d = dim(p.items[1]);
      if (!d) return false;
      x.call_dims.push_back({p.items[0].text, p.items[0].span, std::move(*d)});
    }
    return true;
  }

  static size_t positional_count(const SExpr& s) {
    size_t n = 0;
    for (size_t i = 1; i < s.items.size() && s.items[i].kind != SExpr::Kind::Keyword; ++i) ++n;
    return n;
  }

  // `const` and `dim_value`: `(OP VALUE DTYPE)` or `(OP VALUE DTYPE DEVICE)`
  // (n positional items); the device defaults to host in the elaborator.
  bool dtype_and_device(const SExpr& s, size_t n, ExprAst& x) {
    auto d = dtype(s.items[2], x);
    if (!d) return false;
    x.dtype = d;
    if (n == 3) {
      auto dv = device(s.items[3]);
      if (!dv) return false;
      x.device = dv;
    }
    return true;
  }

  bool operands(const SExpr& s, size_t from, size_t to, ExprAst& x) {
    for (size_t i = from; i < to; ++i) {
      auto o = expr(s.items[i]);
      if (!o) return false;
      x.operands.push_back(std::move(*o));
    }
    return true;
  }

  std::optional<ExprAst> expr(const SExpr& s) {
    ExprAst x;
    x.span = s.span;
    if (s.is_number()) {
      x.kind = ExprAst::Kind::Number;
      x.is_int = s.kind == SExpr::Kind::Int;
      x.int_value = s.int_value;
      x.float_value = x.is_int ? static_cast<double>(s.int_value) : s.float_value;
      x.literal = s.text;
      return x;
    }
    if (s.is_symbol()) {
      x.kind = ExprAst::Kind::Var;
      x.name = s.text;
      return x;
    }
    if (!s.is_list() || s.items.empty() || !s.items[0].is_symbol()) {
      err(s, "expected an expression: a name, a number, or `(OP ARGS...)`");
      return std::nullopt;
    }
    const std::string& head = s.items[0].text;
    auto op = parse_op(head);
    if (!op) {
      diags_.report("E0103", s.items[0].span, "unknown operation `" + head + "`");
      return std::nullopt;
    }
    x.kind = ExprAst::Kind::Op;
    x.op = *op;
    size_t n = positional_count(s);
    size_t end = 1 + n;
    auto arity = [&](size_t want, const char* form) {
      if (n == want) return true;
      err(s, "`" + head + "` takes " + std::to_string(want) + " argument" + (want == 1 ? "" : "s") + ": `" + form + "`");
      return false;
    };
    switch (op_family(*op)) {
      case OpFamily::Unary: case OpFamily::Transpose: case OpFamily::CopyToHost:
        if (!arity(1, ("(" + head + " X)").c_str()) || !operands(s, 1, end, x) || !attrs(s, end, x, {})) return std::nullopt;
        break;
      case OpFamily::Binary: case OpFamily::Compare: case OpFamily::Matmul:
        if (!arity(2, ("(" + head + " X Y)").c_str()) || !operands(s, 1, end, x) || !attrs(s, end, x, {})) return std::nullopt;
        break;
      case OpFamily::Select:
        if (!arity(3, "(select COND X Y)") || !operands(s, 1, end, x) || !attrs(s, end, x, {})) return std::nullopt;
        break;
      case OpFamily::Cast: {
        if (!arity(2, "(cast X DTYPE)") || !operands(s, 1, 2, x)) return std::nullopt;
        auto d = dtype(s.items[2], x);
        if (!d || !attrs(s, end, x, {})) return std::nullopt;
        x.dtype = d;
        break;
      }
      case OpFamily::Const: {
        if (n != 2 && n != 3) { err(s, "`const` is `(const NUMBER DTYPE)` or `(const NUMBER DTYPE DEVICE)`"); return std::nullopt; }
        if (!operands(s, 1, 2, x)) return std::nullopt;
        if (x.operands[0].kind != ExprAst::Kind::Number) { err(s.items[1], "`const` takes a number literal"); return std::nullopt; }
        if (!dtype_and_device(s, n, x) || !attrs(s, end, x, {})) return std::nullopt;
        break;
      }
      case OpFamily::Fill: {
        if (n != 1 && n != 2) { err(s, "`fill` is `(fill NUMBER TYPE)`, or `(fill NUMBER)` where a type is expected"); return std::nullopt; }
        if (!operands(s, 1, 2, x)) return std::nullopt;
        if (x.operands[0].kind != ExprAst::Kind::Number) { err(s.items[1], "`fill` takes a number literal"); return std::nullopt; }
        if (n == 2) {
          auto t = type(s.items[2]);
          if (!t) return std::nullopt;
          x.type = t;
        }
        if (!attrs(s, end, x, {})) return std::nullopt;
        break;
      }
      case OpFamily::Iota: {
        if (!arity(1, "(iota TYPE :axis K)")) return std::nullopt;
        auto t = type(s.items[1]);
        if (!t || !attrs(s, end, x, {"axis"})) return std::nullopt;
        x.type = t;
        break;
      }
      case OpFamily::Permute: {
        if (!arity(2, "(permute X (P0 P1 ...))") || !operands(s, 1, 2, x)) return std::nullopt;
        const SExpr& p = s.items[2];
        if (!p.is_list()) { err(p, "a permutation is a list of integers `(0 2 1 3)`"); return std::nullopt; }
        for (const SExpr& a : p.items) {
          if (a.kind != SExpr::Kind::Int) { err(a, "a permutation entry is an integer"); return std::nullopt; }
          x.ints.push_back(a.int_value);
        }
        if (!attrs(s, end, x, {})) return std::nullopt;
        break;
      }
      case OpFamily::Reshape: case OpFamily::BroadcastTo: {
        if (!arity(2, ("(" + head + " X (D1 D2 ...))").c_str()) || !operands(s, 1, 2, x)) return std::nullopt;
        auto ds = dim_list(s.items[2]);
        if (!ds || !attrs(s, end, x, {})) return std::nullopt;
        x.shape = std::move(*ds);
        break;
      }
      case OpFamily::Concat:
        if (n < 1) { err(s, "`concat` is `(concat X1 X2 ... :axis K)`"); return std::nullopt; }
        if (!operands(s, 1, end, x) || !attrs(s, end, x, {"axis"})) return std::nullopt;
        if (!x.axis) { err(s, "`concat` needs `:axis K`"); return std::nullopt; }
        break;
      case OpFamily::Slice:
        if (!arity(1, "(slice X :axis K :start S :size N)") || !operands(s, 1, end, x) || !attrs(s, end, x, {"axis", "start", "size"}))
          return std::nullopt;
        if (!x.axis || !x.start || !x.size) { err(s, "`slice` needs `:axis`, `:start` and `:size`"); return std::nullopt; }
        break;
      case OpFamily::Reduce:
        if (!arity(1, ("(" + head + " X :axes (A...) :keepdims BOOL)").c_str()) || !operands(s, 1, end, x) ||
            !attrs(s, end, x, {"axes", "keepdims"}))
          return std::nullopt;
        break;
      case OpFamily::CopyToDevice: {
        if (!arity(2, "(copy_to_device X (cuda N))") || !operands(s, 1, 2, x)) return std::nullopt;
        auto d = device(s.items[2]);
        if (!d || !attrs(s, end, x, {})) return std::nullopt;
        x.device = d;
        break;
      }
      case OpFamily::Softmax:
        // `:axis` defaults to -1 (the last axis), as in torch.softmax's usual use.
        if (!arity(1, ("(" + head + " X :axis K)").c_str()) || !operands(s, 1, end, x) || !attrs(s, end, x, {"axis"})) return std::nullopt;
        break;
      case OpFamily::RepeatInterleave:
        if (!arity(1, "(repeat_interleave X :repeats R :axis K)") || !operands(s, 1, end, x) || !attrs(s, end, x, {"repeats", "axis"}))
          return std::nullopt;
        if (!x.repeats || !x.axis) { err(s, "`repeat_interleave` needs `:repeats` and `:axis`"); return std::nullopt; }
        break;
      case OpFamily::DimValue: {
        // (dim_value D DTYPE) or (dim_value D DTYPE DEVICE): D is a dimension
        // expression, not a tensor operand.
        if (n != 2 && n != 3) { err(s, "`dim_value` is `(dim_value DIM DTYPE)` or `(dim_value DIM DTYPE DEVICE)`"); return std::nullopt; }
        auto d = dim(s.items[1]);
        if (!d) return std::nullopt;
        x.repeats = std::move(*d);
        if (!dtype_and_device(s, n, x) || !attrs(s, end, x, {})) return std::nullopt;
        break;
      }
      case OpFamily::Call: {
        if (n < 1 || !s.items[1].is_symbol()) { err(s, "`call` is `(call FUNCTION ARGS...)` or `(call FUNCTION :dims ((VAR DIM) ...) ARGS...)`"); return std::nullopt; }
        x.name = s.items[1].text;
        if (n == 1 && s.items.size() > 2 && s.items[2].kind == SExpr::Kind::Keyword && s.items[2].text == "dims") {
          // `:dims` comes right after the callee, before the arguments.
          if (s.items.size() < 4 || !call_dims(s.items[3], x)) {
            if (s.items.size() < 4) err(s.items[2], "`:dims` needs a list `((VAR DIM) ...)`");
            return std::nullopt;
          }
          size_t from = 4, to = from;
          while (to < s.items.size() && s.items[to].kind != SExpr::Kind::Keyword) ++to;
          if (!operands(s, from, to, x) || !attrs(s, to, x, {})) return std::nullopt;
          break;
        }
        if (!operands(s, 2, end, x) || !attrs(s, end, x, {})) return std::nullopt;
        break;
      }
      case OpFamily::Gather:
        if (!arity(2, "(gather TABLE INDICES)") || !operands(s, 1, end, x) || !attrs(s, end, x, {})) return std::nullopt;
        break;
      case OpFamily::TakeAlongAxis:
        if (!arity(2, "(take_along_axis X INDICES :axis K)") || !operands(s, 1, end, x) || !attrs(s, end, x, {"axis"})) return std::nullopt;
        if (!x.axis) x.axis = -1;  // the last axis, as for a classifier's logits
        break;
      case OpFamily::Scan:
        if (!arity(1, "(cumsum X :axis K :reverse BOOL)") || !operands(s, 1, end, x) || !attrs(s, end, x, {"axis", "reverse"}))
          return std::nullopt;
        if (!x.axis) { err(s, "`cumsum` needs `:axis K`"); return std::nullopt; }
        break;
      case OpFamily::Squeeze:
        if (!arity(1, "(squeeze X :axes (A...))") || !operands(s, 1, end, x) || !attrs(s, end, x, {"axis", "axes"})) return std::nullopt;
        if (x.axis.has_value() == x.has_axes) { err(s, "`squeeze` needs `:axis K` or `:axes (A...)` (the dimensions of extent 1 to remove)"); return std::nullopt; }
        break;
      case OpFamily::Unsqueeze:
        if (!arity(1, "(unsqueeze X :axis K)") || !operands(s, 1, end, x) || !attrs(s, end, x, {"axis"})) return std::nullopt;
        if (!x.axis) { err(s, "`unsqueeze` needs `:axis K` (where the new dimension of extent 1 goes)"); return std::nullopt; }
        break;
      case OpFamily::Pad:
        if (!arity(1, "(pad X :axis K :low L :high H :value V)") || !operands(s, 1, end, x) ||
            !attrs(s, end, x, {"axis", "low", "high", "value"}))
          return std::nullopt;
        if (!x.axis || !x.low || !x.high) { err(s, "`pad` needs `:axis`, `:low` and `:high` (`:value` defaults to 0)"); return std::nullopt; }
        break;
      case OpFamily::TopK:
        if (!arity(1, "(top_k X :k K :axis A)") || !operands(s, 1, end, x) || !attrs(s, end, x, {"k", "axis"})) return std::nullopt;
        if (!x.k || !x.axis) { err(s, "`top_k` needs `:k` (an integer literal) and `:axis`"); return std::nullopt; }
        break;
      case OpFamily::ArgReduce:
        if (!arity(1, ("(" + head + " X :axis K :keepdims BOOL)").c_str()) || !operands(s, 1, end, x) || !attrs(s, end, x, {"axis", "keepdims"}))
          return std::nullopt;
        if (!x.axis) { err(s, "`" + head + "` needs `:axis K`"); return std::nullopt; }
        break;
    }
    return x;
  }

  DiagnosticSink& diags_;
};

}  // namespace

std::optional<ModuleAst> parse_module(const SExprFile& file, DiagnosticSink& diags) { return Parser(diags).module(file); }

}  // namespace shapeml::syntax
