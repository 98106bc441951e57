// The IR verifier: re-derives the type of every binding with the same rules
// as the elaborator. Run after parsing and after every pass; whatever it finds
// is a compiler bug (E0900), reported with the binding that broke.
#include <set>

#include "check/checker.h"
#include "check/rules.h"

namespace shapeml::check {
namespace {

class Verifier final : public RuleEnv {
 public:
  Verifier(const CheckOptions& o, std::vector<syntax::Diagnostic>& out)
      : solver_(o.obligation_timeout_ms), out_(out) {}

  void run(const ir::Module& m) {
    for (const auto& f : m.functions) function(m, f);
  }
  const smt::SolverStats& solver_stats() const { return solver_.stats(); }

  bool require(const types::ShapeConstraint& goal, const Failure& f) override {
    smt::Outcome o = solver_.prove(goal);
    if (o.kind == smt::Outcome::Kind::Proved) return true;
    fail({f.code, f.message + " (obligation " + goal.str() + " " + (o.kind == smt::Outcome::Kind::Refuted ? "refuted" : "undecided") + ")",
          f.expected, f.actual, f.notes});
    return false;
  }

  std::vector<types::ShapeConstraint> hypotheses() const override { return where_ ? *where_ : std::vector<types::ShapeConstraint>{}; }

  void fail(const Failure& f) override {
    syntax::Diagnostic d;
    d.code = "E0900";
    d.span = span_;
    d.message = "internal compiler error: the typed IR of `" + fn_ + "` does not re-check: " + f.message + " [" + f.code + "]";
    d.expected = f.expected;
    d.actual = f.actual;
    d.notes.push_back("this is a bug in shapeml, not in your program; please report it with this file");
    out_.push_back(std::move(d));
  }

 private:
  void function(const ir::Module& m, const ir::Function& f) {
    fn_ = f.name;
    span_ = f.span;
    where_ = &f.where;
    solver_.begin_function(f.dims, f.where);
    std::vector<bool> defined(f.values.size(), false);
    auto def = [&](ir::ValueId v) {
      if (v >= f.values.size() || defined[v]) {
        fail({"E0900", "value %" + std::to_string(v) + " is defined twice or does not exist", "", "", {}});
        return false;
      }
      defined[v] = true;
      return true;
    };
    for (auto p : f.params) def(p);
    std::set<std::string> names;
    for (const auto& b : f.body) {
      span_ = b.span;
      std::vector<types::TensorType> in;
      bool ok = true;
      for (auto o : b.operands) {
        if (o >= f.values.size() || !defined[o]) {
          fail({"E0900", "an operand of `" + std::string(syntax::op_name(b.op)) + "` is used before it is defined", "", "", {}});
          ok = false;
          continue;
        }
        in.push_back(f.values[o].type);
      }
      for (auto r : b.results) ok &= def(r);
      if (!ok) continue;
      if (b.op == syntax::OpKind::Call) {
        // The full T-Call rule, as the elaborator applies it.
        const ir::Function* c = m.find(b.attrs.callee);
        if (!c || c->result_types.size() != b.results.size()) {
          fail({"E0900", "call of `" + b.attrs.callee + "` does not match its definition", "", "", {}});
          continue;
        }
        if (auto rts = type_call(*c, in, *this, b.attrs.call_dims))
          for (size_t i = 0; i < rts->size(); ++i)
            check_subsumes((*rts)[i], f.values[b.results[i]].type, "result " + std::to_string(i + 1) + " of the call of `" + c->name + "`", *this);
        continue;
      }
      if (b.results.size() != 1) {
        fail({"E0900", "`" + std::string(syntax::op_name(b.op)) + "` must have exactly one result", "", "", {}});
        continue;
      }
      auto t = type_op(b.op, in, b.attrs, *this);
      if (t) check_subsumes(*t, f.values[b.results[0]].type, "the result of `" + std::string(syntax::op_name(b.op)) + "`", *this);
    }
    span_ = f.span;
    if (f.results.size() != f.result_types.size()) fail({"E0900", "result count differs from the declared `returns`", "", "", {}});
    for (size_t i = 0; i < f.results.size() && i < f.result_types.size(); ++i) {
      if (f.results[i] >= f.values.size() || !defined[f.results[i]]) {
        fail({"E0900", "a returned value is not defined", "", "", {}});
        continue;
      }
      check_subsumes(f.values[f.results[i]].type, f.result_types[i], "returned value " + std::to_string(i + 1), *this);
    }
    solver_.end_function();
  }

  smt::ShapeSolver solver_;
  std::vector<syntax::Diagnostic>& out_;
  std::string fn_;
  const std::vector<types::ShapeConstraint>* where_ = nullptr;  // of the function being re-checked
  syntax::Span span_;
};

}  // namespace

std::vector<syntax::Diagnostic> verify_module(const ir::Module& m, const CheckOptions& opts, smt::SolverStats* stats) {
  std::vector<syntax::Diagnostic> out;
  try {
    Verifier v(opts, out);
    v.run(m);
    if (stats) *stats += v.solver_stats();
  } catch (const std::exception& e) {
    syntax::Diagnostic d;
    d.code = "E0900";
    d.message = std::string("internal compiler error while verifying the IR: ") + e.what();
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace shapeml::check
