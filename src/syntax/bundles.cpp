#include "syntax/bundles.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace shapeml::syntax {
namespace {

bool head_is(const SExpr& e, const char* h) { return e.is_list() && !e.items.empty() && e.items[0].is_symbol(h); }

SExpr symbol(const std::string& text, Span span) {
  SExpr e;
  e.kind = SExpr::Kind::Symbol;
  e.text = text;
  e.span = span;
  return e;
}

SExpr list(std::vector<SExpr> items, Span span) {
  SExpr e;
  e.kind = SExpr::Kind::List;
  e.items = std::move(items);
  e.span = span;
  return e;
}

struct Field {
  std::string name;
  SExpr type;  // a tensor type, or a bundle application (B d1 ... dk)
};

struct Bundle {
  // Its parameters in application order: dtype variables, device
  // variables, shape variables ((B Ty Dv d1 .. dk); spec §4.32).
  std::vector<std::string> dims;
  size_t dtypes = 0, devices = 0;
  std::vector<Field> fields;
};

// What a function takes and returns, bundle by bundle (for its calls, and
// for the gradients of it).
struct Signature {
  std::vector<std::pair<std::string, std::optional<std::string>>> params;  // name, bundle name
  std::vector<std::optional<std::string>> results;                          // bundle name per result
  std::vector<std::pair<size_t, size_t>> floating;                          // per parameter: floating leaves, leaves
};

// Whether a written tensor type has a floating dtype (what `grad`
// differentiates): a floating dtype, or a dtype variable of the function
// whose every member is floating (`floating_vars`).
bool floating_type(const SExpr& t, const std::set<std::string>& floating_vars) {
  if (!t.is_list() || t.items.size() < 2 || !t.items[0].is_symbol("tensor")) return false;
  return t.items[1].is_symbol("f32") || t.items[1].is_symbol("f64") || t.items[1].is_symbol("bf16") ||
         (t.items[1].is_symbol() && floating_vars.count(t.items[1].text));
}

// The dtype variables of a func's `(dtypes ..)` clause that only floating
// dtypes satisfy: `(T floating)`, or a set of floating dtypes.
std::set<std::string> floating_dtype_vars(const SExpr& f) {
  std::set<std::string> out;
  for (size_t i = 2; i < f.items.size(); ++i) {
    if (!head_is(f.items[i], "dtypes")) continue;
    for (size_t k = 1; k < f.items[i].items.size(); ++k) {
      const SExpr& v = f.items[i].items[k];
      if (!v.is_list() || v.items.size() < 2 || !v.items[0].is_symbol()) continue;
      bool all = true;
      for (size_t j = 1; j < v.items.size(); ++j)
        all &= v.items[j].is_symbol("floating") || v.items[j].is_symbol("f32") || v.items[j].is_symbol("f64") || v.items[j].is_symbol("bf16");
      if (all) out.insert(v.items[0].text);
    }
  }
  return out;
}

class Expander {
 public:
  explicit Expander(DiagnosticSink& diags) : diags_(diags) {}

  SExprFile run(const SExprFile& file) {
    if (file.items.empty() || !head_is(file.items[0], "module")) return file;
    const SExpr& m = file.items[0];
    bool any = false;
    for (const SExpr& item : m.items) any |= head_is(item, "bundle") || (head_is(item, "func") && shapes_clause(item));
    if (!any) return file;
    for (size_t i = 2; i < m.items.size(); ++i)
      if (head_is(m.items[i], "func") && shapes_clause(m.items[i])) declare_template(m.items[i]);
    SExprFile out = file;
    SExpr& mod = out.items[0];
    mod.items.clear();
    for (size_t i = 0; i < m.items.size(); ++i) {
      const SExpr& item = m.items[i];
      if (i < 2) mod.items.push_back(item);
      else if (head_is(item, "bundle")) declare(item);
      else if (head_is(item, "func") && shapes_clause(item)) continue;  // a template: only its instances are functions
      else if (head_is(item, "func")) {
        SExpr f = func(item);
        for (SExpr& inst : pending_) mod.items.push_back(std::move(inst));  // instances first: what `f` calls
        pending_.clear();
        mod.items.push_back(std::move(f));
      } else if (head_is(item, "grad")) mod.items.push_back(grad(item));
      else mod.items.push_back(item);
    }
    return out;
  }

 private:
  void fail(const SExpr& at, const std::string& msg, const std::string& note = "") {
    auto& d = diags_.report("E0107", at.span, msg);
    if (!note.empty()) d.notes.push_back(note);
  }

  bool is_bundle_type(const SExpr& t) const { return t.is_list() && !t.items.empty() && t.items[0].is_symbol() && bundles_.count(t.items[0].text); }

  // (bundle NAME (dtypes T ...)? (devices D ...)? (dims V ...)? (FIELD TYPE) ...)
  void declare(const SExpr& b) {
    if (b.items.size() < 3 || !b.items[1].is_symbol()) {
      fail(b, "a bundle is `(bundle NAME (dtypes T ...)? (devices D ...)? (dims V ...)? (FIELD TYPE) ...)` with at least one field");
      return;
    }
    const std::string& name = b.items[1].text;
    if (bundles_.count(name)) {
      fail(b.items[1], "bundle `" + name + "` is declared twice");
      return;
    }
    Bundle out;
    std::set<std::string> seen;
    size_t leaves = 0;
    // Its parameter clauses, in this order, before the fields: each a list
    // of names (a dtype variable's set or class belongs to the functions
    // that use the bundle, spec §3.5).
    size_t first_field = 2;
    const char* const clauses[3] = {"dtypes", "devices", "dims"};
    for (int c = 0; c < 3 && first_field < b.items.size(); ++c) {
      const SExpr& f = b.items[first_field];
      if (!head_is(f, clauses[c])) continue;
      for (size_t k = 1; k < f.items.size(); ++k) {
        if (!f.items[k].is_symbol()) {
          fail(f.items[k], std::string("a ") + (c == 0 ? "dtype" : c == 1 ? "device" : "shape") + " variable of bundle `" + name + "` must be a name",
               c == 0 ? "help: the dtypes a variable may take are the using function's `(dtypes (T ...))`, not the bundle's" : "");
          continue;
        }
        if (std::find(out.dims.begin(), out.dims.end(), f.items[k].text) != out.dims.end()) {
          fail(f.items[k], "bundle `" + name + "` declares `" + f.items[k].text + "` twice");
          continue;
        }
        out.dims.push_back(f.items[k].text);
        if (c == 0) ++out.dtypes;
        else if (c == 1) ++out.devices;
      }
      ++first_field;
    }
    for (size_t i = first_field; i < b.items.size(); ++i) {
      const SExpr& f = b.items[i];
      if (head_is(f, "dims") || head_is(f, "dtypes") || head_is(f, "devices")) {
        fail(f, "bundle `" + name + "`: its `(dtypes ..)`, `(devices ..)` and `(dims ..)` come first, in that order, once each");
        continue;
      }
      if (!f.is_list() || f.items.size() != 2 || !f.items[0].is_symbol() || !f.items[1].is_list()) {
        fail(f, "a field of bundle `" + name + "` is `(NAME TYPE)`, TYPE a tensor type or another bundle applied to dimensions");
        continue;
      }
      if (!seen.insert(f.items[0].text).second) {
        fail(f.items[0], "field `" + f.items[0].text + "` of bundle `" + name + "` is declared twice");
        continue;
      }
      // A nested bundle is one declared before: no bundle contains itself,
      // and the expansion below is bounded by the leaf counts.
      const SExpr& t = f.items[1];
      if (!t.items.empty() && t.items[0].is_symbol() && !t.items[0].is_symbol("tensor") && !bundles_.count(t.items[0].text)) {
        fail(t, "field `" + f.items[0].text + "` of bundle `" + name + "` has type `" + t.items[0].text +
                    "`, which is neither a tensor type nor a bundle declared before `" + name + "`");
        continue;
      }
      leaves += is_bundle_type(t) ? leaf_count_.at(t.items[0].text) : 1;
      out.fields.push_back({f.items[0].text, t});
    }
    if (leaves > kMaxLeaves) {
      fail(b, "bundle `" + name + "` has " + std::to_string(leaves) + " tensors; the limit is " + std::to_string(kMaxLeaves));
      return;
    }
    if (out.fields.empty()) {
      fail(b, "bundle `" + name + "` has no fields");
      return;
    }
    bundles_[name] = std::move(out);
    leaf_count_[name] = leaves;
  }

  static SExpr substitute(const SExpr& e, const std::map<std::string, SExpr>& sub) {
    if (e.is_symbol()) {
      auto it = sub.find(e.text);
      return it == sub.end() ? e : it->second;
    }
    if (!e.is_list()) return e;
    SExpr out = e;
    for (auto& x : out.items) x = substitute(x, sub);
    return out;
  }

  // The fields of an application (B d1 ... dk) with B's dims substituted.
  bool fields_of(const SExpr& app, std::vector<Field>& out) {
    const std::string& name = app.items[0].text;
    const Bundle& b = bundles_.at(name);
    if (app.items.size() - 1 != b.dims.size()) {
      std::string dims;
      for (const auto& d : b.dims) dims += (dims.empty() ? "" : " ") + d;
      const size_t shapes = b.dims.size() - b.dtypes - b.devices;
      std::string what = (b.dtypes ? std::to_string(b.dtypes) + " dtype(s), " : "") + (b.devices ? std::to_string(b.devices) + " device(s), " : "");
      what = what.empty() ? std::to_string(shapes) + " dimension(s)" : what + std::to_string(shapes) + " dimension(s), in that order";
      fail(app, "bundle `" + name + "` takes " + what + (dims.empty() ? "" : " (" + dims + ")") + ", given " + std::to_string(app.items.size() - 1) +
                    " argument(s)");
      return false;
    }
    std::map<std::string, SExpr> sub;
    for (size_t i = 0; i < b.dims.size(); ++i) sub[b.dims[i]] = app.items[i + 1];
    for (const Field& f : b.fields) out.push_back({f.name, substitute(f.type, sub)});
    return true;
  }

  // Name and tensor type of every leaf of a value of `type` named `prefix`.
  bool flatten(const std::string& prefix, const SExpr& type, std::vector<std::pair<std::string, SExpr>>& out, int depth = 0) {
    if (!is_bundle_type(type)) {
      out.push_back({prefix, type});
      return true;
    }
    if (depth > 32) {
      fail(type, "bundles nested more than 32 deep (does a bundle contain itself?)");
      return false;
    }
    std::vector<Field> fs;
    if (!fields_of(type, fs)) return false;
    for (const Field& f : fs)
      if (!flatten(prefix + "." + f.name, f.type, out, depth + 1)) return false;
    return true;
  }

  // The leaf names of a bundle value (they do not depend on dimensions).
  std::vector<std::string> leaves(const std::string& prefix, const std::string& bundle, int depth = 0) const {
    std::vector<std::string> out;
    if (depth > 32) return out;
    for (const Field& f : bundles_.at(bundle).fields) {
      if (is_bundle_type(f.type))
        for (auto& n : leaves(prefix + "." + f.name, f.type.items[0].text, depth + 1)) out.push_back(std::move(n));
      else out.push_back(prefix + "." + f.name);
    }
    return out;
  }

  // `prefix` names a value of `bundle`, and each of its bundle fields one of theirs.
  void bind(const std::string& prefix, const std::string& bundle, int depth = 0) {
    scope_[prefix] = bundle;
    if (depth > 32) return;
    for (const Field& f : bundles_.at(bundle).fields)
      if (is_bundle_type(f.type)) bind(prefix + "." + f.name, f.type.items[0].text, depth + 1);
  }

  std::optional<std::string> bundle_of(const SExpr& e) const {
    if (!e.is_symbol()) return std::nullopt;
    auto it = scope_.find(e.text);
    if (it == scope_.end()) return std::nullopt;
    return it->second;
  }

  // An expression in which no bundle stands for a tensor; a call's bundle
  // arguments become their fields.
  SExpr expr(const SExpr& e) {
    if (auto b = bundle_of(e)) {
      fail(e, "`" + e.text + "` is a bundle (" + *b + "), not a tensor",
           "help: name one of its fields, e.g. `" + leaves(e.text, *b).front() + "`; a whole bundle is passed to a call or returned");
      return e;
    }
    if (!e.is_list()) return e;
    if (!e.items.empty() && e.items[0].is_symbol() && bundles_.count(e.items[0].text)) {
      fail(e, "a bundle value `(" + e.items[0].text + " ...)` is bound with `let` or returned, not used as an operand");
      return e;
    }
    if (head_is(e, "map_fields")) {
      fail(e, "map_fields gives bundles: bind it with `let` or return it, not as an operand");
      return symbol("map_fields", e.span);  // an atom the parser takes (the function is not checked further)
    }
    if (head_is(e, "call") && e.items.size() >= 2 && e.items[1].is_symbol() && templates_.count(e.items[1].text)) {
      // A template called directly: its instance at the rank of its shape-S
      // arguments, which must be names whose types are written down here.
      const Template& t = templates_.at(e.items[1].text);
      size_t mapped = 0;
      while (mapped < t.mapped.size() && t.mapped[mapped]) ++mapped;
      std::optional<size_t> rank;
      bool ok = e.items.size() >= 2 + mapped;
      for (size_t i = 0; ok && i < mapped; ++i) {
        const SExpr& a = e.items[2 + i];
        auto it = a.is_symbol() ? known_type_.find(a.text) : known_type_.end();
        if (it == known_type_.end()) {
          ok = false;
          break;
        }
        const size_t r = it->second.items[2].items.size();
        if (rank && *rank != r) ok = false;
        rank = r;
      }
      if (!ok || !rank) {
        fail(e.items[1], "`" + e.items[1].text + "` is shape-generic: a call gives its first " + std::to_string(mapped) +
                             " argument(s) as names whose types are written here, of one rank (parameters, fields of bundle parameters, "
                             "`let`s with a type)",
             "help: or apply it to every field of bundles: `(map_fields " + e.items[1].text + " BUNDLE ... :with ...)`");
        return e;
      }
      SExpr c = e;
      c.items[1] = symbol(instance(e.items[1].text, *rank), e.items[1].span);
      return expr(c);
    }
    SExpr out = e;
    out.items.clear();
    const bool call = head_is(e, "call");
    for (size_t i = 0; i < e.items.size(); ++i) {
      const SExpr& x = e.items[i];
      if (call && i >= 2) {
        if (auto b = bundle_of(x)) {
          for (const auto& n : leaves(x.text, *b)) out.items.push_back(symbol(n, x.span));
          continue;
        }
      }
      if (call && i < 2) out.items.push_back(x);
      else if (x.kind == SExpr::Kind::Keyword) out.items.push_back(x);
      else if (call && i >= 3 && e.items[i - 1].kind == SExpr::Kind::Keyword) out.items.push_back(x);  // :dims ((V d) ...)
      else out.items.push_back(expr(x));
    }
    return out;
  }

  // ---- shape-generic functions and map_fields (spec §4.33) ----

  // The `(shapes S)` clause of a func, or nullptr.
  static const SExpr* shapes_clause(const SExpr& f) {
    for (size_t i = 2; i < f.items.size(); ++i)
      if (head_is(f.items[i], "shapes")) return &f.items[i];
    return nullptr;
  }

  struct Template {
    SExpr func;
    std::string pack;                   // S
    size_t params = 0, results = 0;     // counts
    std::vector<bool> mapped;           // per parameter: its type's shape is the pack
  };

  void declare_template(const SExpr& f) {
    if (f.items.size() < 2 || !f.items[1].is_symbol()) return;
    const SExpr& sh = *shapes_clause(f);
    if (sh.items.size() != 2 || !sh.items[1].is_symbol()) {
      fail(sh, "a shape-generic function declares one shape pack: `(shapes S)`");
      return;
    }
    Template t;
    t.func = f;
    t.pack = sh.items[1].text;
    for (size_t i = 2; i < f.items.size(); ++i) {
      const SExpr& c = f.items[i];
      if (head_is(c, "params"))
        for (size_t k = 1; k < c.items.size(); ++k) {
          const SExpr& p = c.items[k];
          ++t.params;
          // (x (tensor DT S DEV)): S where a shape stands
          t.mapped.push_back(p.is_list() && p.items.size() == 2 && head_is(p.items[1], "tensor") && p.items[1].items.size() == 4 &&
                             p.items[1].items[2].is_symbol(t.pack.c_str()));
        }
      if (head_is(c, "returns")) t.results = c.items.size() - 1;
    }
    size_t leading = 0;
    while (leading < t.mapped.size() && t.mapped[leading]) ++leading;
    for (size_t k = leading; k < t.mapped.size(); ++k)
      if (t.mapped[k]) {
        fail(f, "shape-generic function `" + f.items[1].text + "`: its parameters of shape " + t.pack +
                    " come first (map_fields passes one field of each bundle to them, then the :with arguments)");
        return;
      }
    if (leading == 0) {
      fail(f, "shape-generic function `" + f.items[1].text + "` has no parameter of shape " + t.pack, "help: write the first parameter's type as `(tensor DTYPE " + t.pack + " DEVICE)`");
      return;
    }
    templates_[f.items[1].text] = std::move(t);
  }

  // The instance of template `name` for fields of rank `rank`: S := (S%0 .. S%r-1), fresh shape variables.
  std::string instance(const std::string& name, size_t rank) {
    const std::string inst = name + "%" + std::to_string(rank);
    if (!instances_.insert(inst).second) return inst;
    const Template& t = templates_.at(name);
    std::vector<SExpr> dims;
    for (size_t d = 0; d < rank; ++d) dims.push_back(symbol(t.pack + "%" + std::to_string(d), t.func.span));
    std::map<std::string, SExpr> sub;
    sub[t.pack] = list(dims, t.func.span);
    SExpr f = t.func;
    f.items.clear();
    bool has_dims = false;
    for (size_t i = 0; i < t.func.items.size(); ++i) {
      const SExpr& c = t.func.items[i];
      if (i == 1) f.items.push_back(symbol(inst, c.span));
      else if (head_is(c, "shapes")) continue;
      else if (head_is(c, "dims")) {
        SExpr d = c;
        for (const SExpr& v : dims) d.items.push_back(v);
        f.items.push_back(d);
        has_dims = true;
      } else {
        f.items.push_back(substitute(c, sub));
      }
    }
    if (!has_dims) {  // after the dtypes and devices clauses (spec §2's order)
      std::vector<SExpr> d = {symbol("dims", t.func.span)};
      for (const SExpr& v : dims) d.push_back(v);
      size_t at = 2;
      while (at < f.items.size() && (head_is(f.items[at], "dtypes") || head_is(f.items[at], "devices"))) ++at;
      f.items.insert(f.items.begin() + static_cast<std::ptrdiff_t>(at), list(std::move(d), t.func.span));
    }
    pending_.push_back(std::move(f));
    return inst;
  }

  // (map_fields F b1 .. bn [:with e1 .. em]) bound to the bundles `names`
  // (one per result of F): one call of F's instance per leaf, in field order.
  void map_fields(const std::vector<std::string>& names, const SExpr& names_at, const SExpr& m, std::vector<SExpr>& lets) {
    if (m.items.size() < 3 || !m.items[1].is_symbol()) {
      fail(m, "map_fields is `(map_fields F BUNDLE ... [:with EXPR ...])`");
      return;
    }
    const std::string& fname = m.items[1].text;
    auto ti = templates_.find(fname);
    if (ti == templates_.end()) {
      fail(m.items[1], "`" + fname + "` is not a shape-generic function", "help: declare it with `(shapes S)` and parameters of type `(tensor DTYPE S DEVICE)`");
      return;
    }
    const Template& t = ti->second;
    std::vector<const SExpr*> bs, extra;
    bool with = false;
    for (size_t i = 2; i < m.items.size(); ++i) {
      const SExpr& x = m.items[i];
      if (x.kind == SExpr::Kind::Keyword && x.text == "with" && !with) with = true;
      else (with ? extra : bs).push_back(&x);
    }
    size_t mapped = 0;
    while (mapped < t.mapped.size() && t.mapped[mapped]) ++mapped;
    if (bs.size() != mapped || extra.size() != t.params - mapped) {
      fail(m, "`" + fname + "` takes " + std::to_string(mapped) + " bundle(s) and " + std::to_string(t.params - mapped) + " :with argument(s); given " +
                  std::to_string(bs.size()) + " and " + std::to_string(extra.size()));
      return;
    }
    if (names.size() != t.results) {
      fail(names_at, "`" + fname + "` has " + std::to_string(t.results) + " result(s), so map_fields gives as many bundles; " +
                         std::to_string(names.size()) + " name(s) bound");
      return;
    }
    auto b0 = bundle_of(*bs[0]);
    for (const SExpr* b : bs) {
      auto bb = bundle_of(*b);
      if (!bb) {
        fail(*b, "map_fields maps over bundles; `" + (b->is_symbol() ? b->text : std::string("this")) + "` is not one");
        return;
      }
      if (*bb != *b0) {
        fail(*b, "map_fields over bundles of one type: `" + b->text + "` is a " + *bb + ", `" + bs[0]->text + "` a " + *b0);
        return;
      }
    }
    auto app = applied_.find(bs[0]->text);
    if (app == applied_.end()) {
      fail(*bs[0], "map_fields needs the dimensions of bundle `" + bs[0]->text + "`, which are known for a bundle parameter (or a name bound to one)",
           "help: map over the bundles in a function that takes them as parameters, and call it");
      return;
    }
    std::vector<std::pair<std::string, SExpr>> typed;
    if (!flatten(bs[0]->text, app->second, typed)) return;
    std::vector<std::vector<std::string>> args;
    for (const SExpr* b : bs) args.push_back(leaves(b->text, *b0));
    std::vector<std::vector<std::string>> outs;
    for (const std::string& n : names) outs.push_back(leaves(n, *b0));
    std::vector<SExpr> extra_exprs;
    for (const SExpr* e : extra) extra_exprs.push_back(expr(*e));
    for (size_t leaf = 0; leaf < typed.size(); ++leaf) {
      const SExpr& ty = typed[leaf].second;
      if (!head_is(ty, "tensor") || ty.items.size() != 4 || !ty.items[2].is_list()) {
        fail(m, "field `" + typed[leaf].first + "` has no tensor type map_fields can read");
        return;
      }
      std::vector<SExpr> call = {symbol("call", m.span), symbol(instance(fname, ty.items[2].items.size()), m.items[1].span)};
      for (const auto& a : args) call.push_back(symbol(a[leaf], m.span));
      for (const SExpr& e : extra_exprs) call.push_back(e);
      std::vector<SExpr> bound;
      for (const auto& o : outs) bound.push_back(symbol(o[leaf], names_at.span));
      SExpr target = bound.size() == 1 ? bound[0] : list(std::move(bound), names_at.span);
      lets.push_back(list({symbol("let", m.span), target, list(std::move(call), m.span)}, m.span));
    }
    for (const std::string& n : names) {
      bind(n, *b0);
      applied_[n] = app->second;
    }
  }

  // `(B (field e) ...)` bound to `prefix`: one `let` per leaf, in field order.
  void construct(const std::string& prefix, const SExpr& c, std::vector<SExpr>& lets) {
    const std::string& bname = c.items[0].text;
    const Bundle& b = bundles_.at(bname);
    std::map<std::string, const SExpr*> given;
    for (size_t i = 1; i < c.items.size(); ++i) {
      const SExpr& p = c.items[i];
      if (!p.is_list() || p.items.size() != 2 || !p.items[0].is_symbol()) {
        fail(p, "a bundle value is `(" + bname + " (FIELD EXPR) ...)`");
        return;
      }
      bool known = false;
      for (const Field& f : b.fields) known |= f.name == p.items[0].text;
      if (!known) {
        std::string all;
        for (const Field& f : b.fields) all += (all.empty() ? "" : " ") + f.name;
        fail(p.items[0], "bundle `" + bname + "` has no field `" + p.items[0].text + "`", "its fields: " + all);
        return;
      }
      if (!given.emplace(p.items[0].text, &p.items[1]).second) {
        fail(p.items[0], "field `" + p.items[0].text + "` is given twice");
        return;
      }
    }
    for (const Field& f : b.fields) {
      auto it = given.find(f.name);
      if (it == given.end()) {
        fail(c, "the value of bundle `" + bname + "` does not give field `" + f.name + "`");
        return;
      }
      const SExpr& v = *it->second;
      const std::string name = prefix + "." + f.name;
      if (is_bundle_type(f.type)) {
        const std::string inner = f.type.items[0].text;
        if (head_is(v, inner.c_str())) construct(name, v, lets);
        else if (auto vb = bundle_of(v); vb && *vb == inner) alias(name, v, inner, lets);
        else fail(v, "field `" + f.name + "` of `" + bname + "` is a bundle " + inner + ": give a " + inner + " value or a `(" + inner + " ...)`");
      } else {
        lets.push_back(list({symbol("let", c.span), symbol(name, v.span), expr(v)}, c.span));
      }
    }
    bind(prefix, bname);
  }

  void alias(const std::string& name, const SExpr& from, const std::string& bundle, std::vector<SExpr>& lets) {
    std::vector<std::string> src = leaves(from.text, bundle), dst = leaves(name, bundle);
    for (size_t i = 0; i < src.size(); ++i) lets.push_back(list({symbol("let", from.span), symbol(dst[i], from.span), symbol(src[i], from.span)}, from.span));
    bind(name, bundle);
    if (auto it = applied_.find(from.text); it != applied_.end()) record_applied(name, it->second);
  }

  // `prefix` is a value of the bundle application `app` (a parameter's
  // type), and each of its bundle fields one of the field's type.
  void record_applied(const std::string& prefix, const SExpr& app, int depth = 0) {
    applied_[prefix] = app;
    if (depth > 32) return;
    if (app.items.size() - 1 != bundles_.at(app.items[0].text).dims.size()) return;  // reported where the type is read
    std::map<std::string, SExpr> sub;
    const Bundle& b = bundles_.at(app.items[0].text);
    for (size_t i = 0; i < b.dims.size(); ++i) sub[b.dims[i]] = app.items[i + 1];
    for (const Field& f : b.fields)
      if (is_bundle_type(f.type)) record_applied(prefix + "." + f.name, substitute(f.type, sub), depth + 1);
  }

  // The names a `let` of a call binds: each bundle result as its leaves.
  bool call_names(const SExpr& names_at, const std::vector<std::string>& names, const SExpr& call, std::vector<SExpr>& out) {
    if (call.items.size() < 2 || !call.items[1].is_symbol()) return false;
    auto it = funcs_.find(call.items[1].text);
    if (it == funcs_.end()) return false;
    const auto& results = it->second.results;
    bool bundles = false;
    for (const auto& r : results) bundles |= r.has_value();
    if (!bundles || results.size() != names.size()) return false;
    for (size_t i = 0; i < names.size(); ++i) {
      if (!results[i]) {
        out.push_back(symbol(names[i], names_at.span));
        continue;
      }
      for (const auto& n : leaves(names[i], *results[i])) out.push_back(symbol(n, names_at.span));
      bind(names[i], *results[i]);
    }
    return true;
  }

  void let(const SExpr& l, std::vector<SExpr>& out) {
    // (let NAME EXPR), (let NAME TYPE EXPR), (let (N ...) EXPR)
    if (l.items.size() < 3) {
      out.push_back(l);
      return;
    }
    const SExpr& target = l.items[1];
    const SExpr& value = l.items.back();
    if (head_is(value, "map_fields") && l.items.size() == 3) {
      std::vector<std::string> names;
      if (target.is_symbol()) names.push_back(target.text);
      else if (target.is_list())
        for (const SExpr& n : target.items)
          if (n.is_symbol()) names.push_back(n.text);
      map_fields(names, target, value, out);
      return;
    }
    if (target.is_symbol() && l.items.size() == 3) {
      if (value.is_list() && !value.items.empty() && value.items[0].is_symbol() && bundles_.count(value.items[0].text)) {
        construct(target.text, value, out);
        return;
      }
      if (auto b = bundle_of(value)) {
        alias(target.text, value, *b, out);
        return;
      }
    }
    if (head_is(value, "call")) {
      std::vector<std::string> names;
      if (target.is_symbol()) names.push_back(target.text);
      else if (target.is_list())
        for (const SExpr& n : target.items)
          if (n.is_symbol()) names.push_back(n.text);
      std::vector<SExpr> flat;
      if (l.items.size() == 3 && call_names(target, names, value, flat)) {
        SExpr binds = flat.size() == 1 ? flat[0] : list(std::move(flat), target.span);
        out.push_back(list({l.items[0], binds, expr(value)}, l.span));
        return;
      }
    }
    SExpr copy = l;
    copy.items.back() = expr(value);
    if (l.items.size() == 4 && target.is_symbol()) note_type(target.text, l.items[2]);
    out.push_back(copy);
  }

  SExpr ret(const SExpr& r) {
    SExpr out = r;
    out.items.resize(1);
    for (size_t i = 1; i < r.items.size(); ++i) {
      const SExpr& x = r.items[i];
      if (auto b = bundle_of(x)) {
        for (const auto& n : leaves(x.text, *b)) out.items.push_back(symbol(n, x.span));
      } else if (x.is_list() && !x.items.empty() && x.items[0].is_symbol() && bundles_.count(x.items[0].text)) {
        // A constructor returned directly: bound to fresh names first would
        // need lets before the return; its leaves are given inline instead.
        std::vector<SExpr> lets;
        const std::string tmp = "%ret" + std::to_string(i);
        construct(tmp, x, lets);
        for (const SExpr& l : lets) out.items.push_back(l.items[2]);
      } else {
        out.items.push_back(expr(x));
      }
    }
    return out;
  }

  // `name` has the written tensor type `t` (a template's call reads its rank).
  void note_type(const std::string& name, const SExpr& t) {
    if (head_is(t, "tensor") && t.items.size() == 4 && t.items[2].is_list()) known_type_[name] = t;
  }

  SExpr func(const SExpr& f) {
    scope_.clear();
    applied_.clear();
    known_type_.clear();
    floating_vars_ = floating_dtype_vars(f);
    if (f.items.size() < 2 || !f.items[1].is_symbol()) return f;
    SExpr out = f;
    out.items.clear();
    Signature sig;
    for (size_t i = 0; i < f.items.size(); ++i) {
      const SExpr& s = f.items[i];
      if (i < 2) {
        out.items.push_back(s);
      } else if (head_is(s, "params")) {
        SExpr ps = s;
        ps.items.resize(1);
        for (size_t k = 1; k < s.items.size(); ++k) {
          const SExpr& p = s.items[k];
          if (p.is_list() && p.items.size() == 2 && p.items[0].is_symbol() && is_bundle_type(p.items[1])) {
            std::vector<std::pair<std::string, SExpr>> leaves_of_p;
            size_t fl = 0;
            if (flatten(p.items[0].text, p.items[1], leaves_of_p))
              for (auto& [n, t] : leaves_of_p) {
                ps.items.push_back(list({symbol(n, p.items[0].span), t}, p.span));
                note_type(n, t);
                fl += floating_type(t, floating_vars_);
              }
            sig.floating.push_back({fl, leaves_of_p.size()});
            bind(p.items[0].text, p.items[1].items[0].text);
            record_applied(p.items[0].text, p.items[1]);
            sig.params.push_back({p.items[0].text, p.items[1].items[0].text});
          } else {
            ps.items.push_back(p);
            if (p.is_list() && !p.items.empty() && p.items[0].is_symbol()) {
              sig.params.push_back({p.items[0].text, std::nullopt});
              sig.floating.push_back({p.items.size() == 2 && floating_type(p.items[1], floating_vars_) ? 1 : 0, 1});
            }
            if (p.is_list() && p.items.size() == 2 && p.items[0].is_symbol()) note_type(p.items[0].text, p.items[1]);
          }
        }
        out.items.push_back(ps);
      } else if (head_is(s, "returns")) {
        SExpr rs = s;
        rs.items.resize(1);
        for (size_t k = 1; k < s.items.size(); ++k) {
          const SExpr& t = s.items[k];
          if (is_bundle_type(t)) {
            std::vector<std::pair<std::string, SExpr>> leaves_of_t;
            if (flatten("", t, leaves_of_t))
              for (auto& nt : leaves_of_t) rs.items.push_back(nt.second);
            sig.results.push_back(t.items[0].text);
          } else {
            rs.items.push_back(t);
            sig.results.push_back(std::nullopt);
          }
        }
        out.items.push_back(rs);
      } else if (head_is(s, "let")) {
        let(s, out.items);
      } else if (head_is(s, "return")) {
        // A map_fields returned: its bundles bound to fresh names first.
        SExpr r = s;
        r.items.resize(1);
        for (size_t k = 1; k < s.items.size(); ++k) {
          const SExpr& x = s.items[k];
          if (!head_is(x, "map_fields")) {
            r.items.push_back(x);
            continue;
          }
          auto ti = x.items.size() >= 2 && x.items[1].is_symbol() ? templates_.find(x.items[1].text) : templates_.end();
          const size_t n = ti == templates_.end() ? 1 : ti->second.results;
          std::vector<std::string> names;
          for (size_t j = 0; j < n; ++j) names.push_back("%map" + std::to_string(fresh_++));
          map_fields(names, x, x, out.items);
          for (const std::string& nm : names) r.items.push_back(symbol(nm, x.span));
        }
        out.items.push_back(ret(r));
      } else {
        out.items.push_back(s);
      }
    }
    funcs_[f.items[1].text] = std::move(sig);
    return out;
  }

  // (grad NAME OF [:wrt (P ...)]): a bundle in :wrt stands for its fields,
  // and the gradient of a bundle parameter is a bundle of its type.
  SExpr grad(const SExpr& g) {
    if (g.items.size() < 3 || !g.items[1].is_symbol() || !g.items[2].is_symbol()) return g;
    auto of = funcs_.find(g.items[2].text);
    if (of == funcs_.end()) return g;
    Signature sig;
    sig.params = of->second.params;
    sig.floating = of->second.floating;
    sig.results.push_back(of->second.results.empty() ? std::nullopt : of->second.results[0]);
    SExpr out = g;
    bool has_wrt = false;
    for (size_t i = 3; i + 1 < g.items.size(); ++i) {
      if (g.items[i].kind != SExpr::Kind::Keyword || g.items[i].text != "wrt" || !g.items[i + 1].is_list()) continue;
      has_wrt = true;
      SExpr wrt = g.items[i + 1];
      wrt.items.clear();
      for (const SExpr& n : g.items[i + 1].items) {
        std::optional<std::string> b;
        for (const auto& [pn, pb] : of->second.params)
          if (n.is_symbol() && pn == n.text) b = pb;
        if (b) {
          for (const auto& leaf : leaves(n.text, *b)) wrt.items.push_back(symbol(leaf, n.span));
        } else {
          wrt.items.push_back(n);
        }
        sig.results.push_back(b);
      }
      out.items[i + 1] = wrt;
    }
    // Without :wrt the gradients are those of every floating parameter in
    // order: a bundle parameter whose fields are all floating has a bundle
    // gradient, one with other fields too the gradients of its floating
    // fields as tensors.
    if (!has_wrt) {
      sig.results.resize(1);
      const auto& ps = of->second.params;
      const auto& fl = of->second.floating;
      for (size_t i = 0; i < ps.size() && i < fl.size(); ++i) {
        if (ps[i].second && fl[i].first == fl[i].second) sig.results.push_back(ps[i].second);
        else sig.results.insert(sig.results.end(), fl[i].first, std::nullopt);
      }
    }
    funcs_[g.items[1].text] = std::move(sig);
    return out;
  }

  static constexpr size_t kMaxLeaves = 4096;
  DiagnosticSink& diags_;
  std::map<std::string, Bundle> bundles_;
  std::map<std::string, size_t> leaf_count_;
  std::map<std::string, Signature> funcs_;
  std::map<std::string, std::string> scope_;  // bundle-valued names of the current function -> bundle
  std::map<std::string, SExpr> applied_;       // those of them whose bundle application is known (parameters) -> (B d ...)
  std::set<std::string> floating_vars_;         // the current function's floating dtype variables
  std::map<std::string, SExpr> known_type_;    // tensor names of the current function with a written type -> it
  std::map<std::string, Template> templates_;  // shape-generic functions (spec §4.33)
  std::set<std::string> instances_;            // instances made ("F%rank")
  std::vector<SExpr> pending_;                 // instances not yet emitted
  size_t fresh_ = 0;
};

}  // namespace

SExprFile expand_bundles(const SExprFile& file, DiagnosticSink& diags) { return Expander(diags).run(file); }

}  // namespace shapeml::syntax
