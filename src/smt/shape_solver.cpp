#include "obs/log.h"
#include "obs/trace.h"
#include "smt/shape_solver.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

namespace shapeml::smt {

using types::Atom;
using types::Poly;
using types::ShapeConstraint;

// One Z3 context per ShapeSolver, and a fresh solver for every query (see
// `query`). Terms are not built here: a query is the SMT-LIB text of
// `smtlib()`, parsed, so the dumped obligation is exactly what was asked.
struct ShapeSolver::Impl {
  z3::context ctx;
};

// Z3 is started lazily: creating a context costs milliseconds, and most
// programs discharge every obligation by normalization alone.
ShapeSolver::ShapeSolver(unsigned timeout_ms) : timeout_ms_(timeout_ms) {}

ShapeSolver::~ShapeSolver() = default;

ShapeSolver::Impl& ShapeSolver::z3() {
  if (!impl_) impl_ = std::make_unique<Impl>();
  return *impl_;
}

void ShapeSolver::begin_function(const std::vector<std::string>& dims, const std::vector<ShapeConstraint>& where) {
  end_function();
  dims_ = dims;
  where_ = where;
}

void ShapeSolver::end_function() {
  dims_.clear();
  where_.clear();
}

namespace {
// Z3 4.8's `timeout` is not always honoured on non-linear problems (a query
// was seen spinning past it). A watchdog interrupts the context at twice the
// budget, so a check always returns (as unknown) instead of hanging.
z3::check_result check_with_watchdog(z3::context& ctx, z3::solver& solver, unsigned timeout_ms) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread dog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::milliseconds(2ull * timeout_ms + 50), [&] { return done; })) ctx.interrupt();
  });
  z3::check_result r = z3::unknown;
  try {
    r = solver.check();
  } catch (const z3::exception&) {
    r = z3::unknown;  // interrupted or resource-limited: not proved
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_one();
  dog.join();
  return r;
}

// Decides a goal from normal forms alone, when it can.
std::optional<bool> decide_syntactically(const ShapeConstraint& g) {
  Poly diff = g.lhs - g.rhs;
  auto c = diff.constant_value();
  auto nonneg = [](const Poly& p) {  // every term >= 0 when all vars >= 1
    for (const auto& [k, t] : p.terms()) {
      if (t.coeff < 0) return false;
      for (const auto& a : t.atoms)
        if (a.kind != Atom::Kind::Var) return false;
    }
    return true;
  };
  switch (g.kind) {
    case ShapeConstraint::Kind::Eq:
      if (c) return *c == 0;
      return std::nullopt;
    case ShapeConstraint::Kind::Ne:
      if (c) return *c != 0;
      return std::nullopt;
    case ShapeConstraint::Kind::Ge:
      if (c) return *c >= 0;
      if (nonneg(diff)) return true;
      return std::nullopt;
    case ShapeConstraint::Kind::Le:
      if (c) return *c <= 0;
      if (nonneg(Poly::constant(0) - diff)) return true;
      return std::nullopt;
    case ShapeConstraint::Kind::Gt:
      if (c) return *c > 0;
      if (nonneg(diff - Poly::constant(1))) return true;
      return std::nullopt;
    case ShapeConstraint::Kind::Lt:
      if (c) return *c < 0;
      if (nonneg(Poly::constant(-1) - diff)) return true;
      return std::nullopt;
    case ShapeConstraint::Kind::Divides: {
      // (divides a b) holds iff a >= 1 and b mod a = 0 (spec §2): every rule
      // below establishes both halves.
      auto ca = g.lhs.constant_value(), cb = g.rhs.constant_value();
      if (ca && cb) return *ca >= 1 && *cb % *ca == 0;
      if (g.lhs.is_one()) return true;
      // a divides itself exactly when a >= 1: (divides (- K 1) (- K 1)) is
      // false at K = 1.
      if (g.lhs == g.rhs) {
        if (decide_syntactically({ShapeConstraint::Kind::Ge, g.lhs, Poly::constant(1)}) == true) return true;
        return std::nullopt;
      }
      // a = c·m, one term with c >= 1 over variables only (so a >= 1; a
      // floordiv or mod atom may be 0): a divides b when every term of b is
      // a multiple of c·m.
      if (g.lhs.terms().size() != 1) return std::nullopt;
      const types::Term& a = g.lhs.terms().begin()->second;
      if (a.coeff <= 0) return std::nullopt;
      for (const auto& x : a.atoms)
        if (x.kind != Atom::Kind::Var) return std::nullopt;
      for (const auto& [k, t] : g.rhs.terms()) {
        if (t.coeff % a.coeff != 0) return std::nullopt;
        std::multiset<std::string> have;
        for (const auto& x : t.atoms) have.insert(x.key);
        for (const auto& x : a.atoms) {
          auto it = have.find(x.key);
          if (it == have.end()) return std::nullopt;
          have.erase(it);
        }
      }
      return true;
    }
  }
  return std::nullopt;
}

// Hypotheses that define a variable (`D = H*Dh`, `(divides H D)` read as
// D = H*#wN; `#` cannot appear in a user identifier) rewrite goals before the syntactic test, so that most reshape and
// divisibility obligations never reach Z3. Sound: each rewrite is an
// equivalence under the hypothesis.
std::map<std::string, Poly> defining_substitution(const std::vector<ShapeConstraint>& where_in) {
  std::map<std::string, Poly> sub;
  int k = 0;
  // Equalities define first (D = H*Dh is more precise than D = H*w from
  // `(divides H D)`), then divisibility.
  std::vector<ShapeConstraint> where;
  for (const auto& c : where_in)
    if (c.kind == ShapeConstraint::Kind::Eq) where.push_back(c);
  for (const auto& c : where_in)
    if (c.kind != ShapeConstraint::Kind::Eq) where.push_back(c);
  for (const auto& c : where) {
    std::set<std::string> lv;
    c.lhs.free_vars(lv);
    std::set<std::string> rv;
    c.rhs.free_vars(rv);
    if (c.kind == ShapeConstraint::Kind::Eq && lv.size() == 1 && c.lhs == Poly::var(*lv.begin()) && !rv.count(*lv.begin()) &&
        !sub.count(*lv.begin()))
      sub[*lv.begin()] = c.rhs;
    else if (c.kind == ShapeConstraint::Kind::Eq && rv.size() == 1 && c.rhs == Poly::var(*rv.begin()) && !lv.count(*rv.begin()) &&
             !sub.count(*rv.begin()))
      sub[*rv.begin()] = c.lhs;
    else if (c.kind == ShapeConstraint::Kind::Divides && rv.size() == 1 && c.rhs == Poly::var(*rv.begin()) && !lv.count(*rv.begin()) &&
             !sub.count(*rv.begin()))
      sub[*rv.begin()] = c.lhs * Poly::var("#w" + std::to_string(k++));
    else if (c.kind == ShapeConstraint::Kind::Eq) {
      // (= (mod v C) 0): v = C*w, so floordiv(v, C) normalizes to w.
      for (const auto& [side, other] : {std::pair{&c.lhs, &c.rhs}, std::pair{&c.rhs, &c.lhs}}) {
        if (other->constant_value() != 0 || side->terms().size() != 1) continue;
        const types::Term& t = side->terms().begin()->second;
        if (t.coeff != 1 || t.atoms.size() != 1 || t.atoms[0].kind != Atom::Kind::Mod) continue;
        std::set<std::string> av;
        t.atoms[0].arg->free_vars(av);
        if (av.size() != 1 || *t.atoms[0].arg != Poly::var(*av.begin()) || sub.count(*av.begin())) continue;
        sub[*av.begin()] = Poly::constant(t.atoms[0].divisor) * Poly::var("#w" + std::to_string(k++));
        break;
      }
    }
  }
  // Apply the substitution to itself until no defined variable remains on a
  // right-hand side (bounded: cycles are left alone).
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    for (auto& [v, p] : sub) {
      std::set<std::string> fv;
      p.free_vars(fv);
      for (const auto& x : fv)
        if (sub.count(x) && x != v) changed = true;
      if (changed) p = p.subst(sub);
    }
    if (!changed) break;
  }
  return sub;
}
}  // namespace

std::optional<std::vector<std::pair<std::string, int64_t>>> ShapeSolver::search_counterexample(const ShapeConstraint& goal, bool pairs) {
  if (dims_.empty() || dims_.size() > 16) return std::nullopt;
  try {
    auto sub = defining_substitution(where_);
    auto try_env = [&](std::map<std::string, int64_t> env) -> std::optional<std::vector<std::pair<std::string, int64_t>>> {
      for (const auto& [v, p] : sub) {
        std::set<std::string> fv;
        p.free_vars(fv);
        for (const auto& x : fv)
          if (!env.count(x)) env[x] = 1;
      }
      for (const auto& [v, p] : sub)
        if (auto x = p.eval(env)) env[v] = *x;
      for (const auto& d : dims_)
        if (env[d] < 1) return std::nullopt;
      for (const auto& c : where_)
        if (c.eval(env) != true) return std::nullopt;
      if (goal.eval(env) != false) return std::nullopt;
      std::vector<std::pair<std::string, int64_t>> out;
      for (const auto& d : dims_) out.push_back({d, env[d]});
      return out;
    };
    const int64_t values[] = {1, 2, 3, 4, 5, 7, 8};
    std::vector<std::map<std::string, int64_t>> candidates;
    for (int64_t b : values) {
      std::map<std::string, int64_t> env;
      for (const auto& d : dims_) env[d] = b;
      candidates.push_back(env);
    }
    for (const auto& v : dims_)
      for (int64_t x : values)
        for (int64_t base : {1, 2}) {
          std::map<std::string, int64_t> env;
          for (const auto& d : dims_) env[d] = base;
          env[v] = x;
          candidates.push_back(env);
        }
    // Two variables at a time (K != H while the rest stay small).
    if (pairs && dims_.size() <= 12)
      for (size_t i = 0; i < dims_.size(); ++i)
        for (size_t j = i + 1; j < dims_.size(); ++j)
          for (int64_t x : {1, 2, 3, 4})
            for (int64_t y : {1, 2, 3, 4})
              for (int64_t base : {1, 4}) {
                std::map<std::string, int64_t> env;
                for (const auto& d : dims_) env[d] = base;
                env[dims_[i]] = x;
                env[dims_[j]] = y;
                candidates.push_back(env);
              }
    for (auto& env : candidates) {
      // Defined variables are computed, not guessed.
      for (const auto& [v, p] : sub) env.erase(v);
      if (auto r = try_env(env)) return r;
    }
  } catch (const types::DimOverflow&) {
  }
  return std::nullopt;
}

// One Z3 query on a fresh solver. A solver reused across obligations (push/
// pop) carries lemmas and heuristic state from the earlier ones, so its answer
// on a non-linear goal depended on what had been asked before: the same goal
// was proved at once by a fresh solver and timed out in the reused one (the
// elaborator and the verifier each retried on a fresh solver for that
// reason). Asserting the few hypotheses again costs microseconds; in exchange
// the answer depends on the query alone, which is also exactly the dumped
// SMT-LIB text, and no caller needs a retry.
ShapeSolver::Answer ShapeSolver::query(const std::string& script, Outcome& o, bool want_model) {
  auto t0 = std::chrono::steady_clock::now();  // starting Z3 counts as Z3 time
  obs::Span span("smt", "z3 query");
  Impl& z = z3();
  // The SMT core without the tactic front end of the default solver: that
  // front end costs ~7 ms per solver, more than most queries take.
  z3::solver solver(z.ctx, z3::solver::simple());
  z3::params p(z.ctx);
  p.set("timeout", timeout_ms_);
  solver.set(p);
  z3::check_result r = z3::unknown;
  try {
    z3::expr_vector assertions = z.ctx.parse_string(script.c_str());
    for (unsigned i = 0; i < assertions.size(); ++i) solver.add(assertions[i]);
    r = check_with_watchdog(z.ctx, solver, timeout_ms_);
    if (r == z3::unknown) o.reason = solver.reason_unknown();
    if (r == z3::sat && want_model) {
      z3::model m = solver.get_model();
      for (const auto& d : dims_) {
        z3::expr v = m.eval(z.ctx.int_const(d.c_str()), true);
        int64_t x = 0;
        if (v.is_numeral_i64(x)) o.counterexample.push_back({d, x});
        o.model_text += (o.model_text.empty() ? "" : ", ") + d + "=" + v.get_decimal_string(0);
      }
    }
  } catch (const z3::exception& e) {
    r = z3::unknown;
    o.reason = e.msg();
  }
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats_.z3_queries++;
  stats_.z3_seconds += dt;
  stats_.max_query_seconds = std::max(stats_.max_query_seconds, dt);
  const char* answer = r == z3::sat ? "sat" : r == z3::unsat ? "unsat" : "unknown";
  if (span) {
    span.arg("answer", answer).arg("timeout_ms", static_cast<int64_t>(timeout_ms_));
    if (r == z3::unknown) span.arg("reason", o.reason);
  }
  SHAPEML_LOG_AT(Smt, Debug, "z3 query", {"answer", answer}, {"ms", std::to_string(dt * 1e3)}, {"reason", o.reason});
  return r == z3::sat ? Answer::Sat : r == z3::unsat ? Answer::Unsat : Answer::Unknown;
}

Outcome ShapeSolver::hypotheses_satisfiable() {
  Outcome o;
  // Cheap witnesses first: every free variable = b, defined variables
  // computed from their definitions. A valuation that satisfies every
  // constraint proves satisfiability without Z3.
  try {
    auto sub = defining_substitution(where_);
    for (int64_t b : {1, 2, 3, 4, 8, 16, 64}) {
      std::map<std::string, int64_t> env;
      for (const auto& d : dims_) env[d] = b;
      for (const auto& [v, p] : sub) {
        std::set<std::string> fv;
        p.free_vars(fv);
        for (const auto& x : fv)
          if (!env.count(x)) env[x] = b;  // witnesses of `divides`
      }
      for (const auto& [v, p] : sub)
        if (auto x = p.eval(env)) env[v] = *x;
      bool ok = std::all_of(dims_.begin(), dims_.end(), [&](const std::string& d) { return env[d] >= 1; });
      for (const auto& c : where_) ok = ok && c.eval(env) == true;
      if (ok) {
        o.kind = Outcome::Kind::Proved;
        o.decided_syntactically = true;
        return o;
      }
    }
  } catch (const types::DimOverflow&) {
  }
  switch (query(smt_assertions(nullptr), o, false)) {
    case Answer::Sat: o.kind = Outcome::Kind::Proved; break;
    case Answer::Unsat: o.kind = Outcome::Kind::Refuted; break;
    case Answer::Unknown: break;
  }
  return o;
}

Outcome ShapeSolver::prove(const ShapeConstraint& goal) {
  stats_.obligations++;
  Outcome o;
  std::optional<bool> quick;
  try {
    quick = decide_syntactically(goal);
    if (!(quick && *quick) && !where_.empty()) {
      auto sub = defining_substitution(where_);
      if (!sub.empty() && decide_syntactically(goal.subst(sub)) == true) quick = true;
    }
  } catch (const types::DimOverflow&) {
  }
  if (quick && *quick) {
    stats_.syntactic++;
    o.kind = Outcome::Kind::Proved;
    o.decided_syntactically = true;
    return o;
  }
  // Small valuations first: one that satisfies the hypotheses and breaks the
  // goal is a counterexample without Z3 (and Z3 may answer unknown on
  // non-linear goals with floordiv/mod).
  if (auto cex = search_counterexample(goal, false)) {
    o.kind = Outcome::Kind::Refuted;
    o.counterexample = *cex;
    return o;
  }
  // What remains goes to Z3.
  switch (query(smt_assertions(&goal), o, true)) {
    case Answer::Unsat: o.kind = Outcome::Kind::Proved; break;
    case Answer::Sat: o.kind = Outcome::Kind::Refuted; break;
    case Answer::Unknown: o.kind = Outcome::Kind::Unknown; break;
  }
  // Z3 gave up: two variables at a time is dearer, so it runs only now.
  if (o.kind == Outcome::Kind::Unknown)
    if (auto cex = search_counterexample(goal, true)) {
      o.kind = Outcome::Kind::Refuted;
      o.counterexample = *cex;
      o.reason.clear();
    }
  return o;
}

std::string smt_term(const Poly& p) {
  std::vector<std::string> terms;
  for (const auto& [k, t] : p.terms()) {
    std::vector<std::string> f;
    // The magnitude as unsigned: -INT64_MIN overflows.
    if (t.coeff != 1 || t.atoms.empty())
      f.push_back(t.coeff < 0 ? "(- " + std::to_string(uint64_t{0} - static_cast<uint64_t>(t.coeff)) + ")" : std::to_string(t.coeff));
    for (const Atom& a : t.atoms) {
      if (a.kind == Atom::Kind::Var) f.push_back("|" + a.var + "|");
      else f.push_back(std::string(a.kind == Atom::Kind::FloorDiv ? "(div " : "(mod ") + smt_term(*a.arg) + " " + std::to_string(a.divisor) + ")");
    }
    terms.push_back(f.size() == 1 ? f[0] : [&] {
      std::string s = "(*";
      for (auto& x : f) s += " " + x;
      return s + ")";
    }());
  }
  if (terms.empty()) return "0";
  if (terms.size() == 1) return terms[0];
  std::string s = "(+";
  for (auto& x : terms) s += " " + x;
  return s + ")";
}

std::string smt_formula(const ShapeConstraint& c) {
  std::string a = smt_term(c.lhs), b = smt_term(c.rhs);
  switch (c.kind) {
    case ShapeConstraint::Kind::Eq: return "(= " + a + " " + b + ")";
    case ShapeConstraint::Kind::Ne: return "(not (= " + a + " " + b + "))";
    case ShapeConstraint::Kind::Lt: return "(< " + a + " " + b + ")";
    case ShapeConstraint::Kind::Le: return "(<= " + a + " " + b + ")";
    case ShapeConstraint::Kind::Gt: return "(> " + a + " " + b + ")";
    case ShapeConstraint::Kind::Ge: return "(>= " + a + " " + b + ")";
    case ShapeConstraint::Kind::Divides: return "(and (>= " + a + " 1) (= (mod " + b + " " + a + ") 0))";
  }
  return "true";
}

std::string ShapeSolver::smt_assertions(const ShapeConstraint* goal) const {
  std::set<std::string> vars(dims_.begin(), dims_.end());
  for (const auto& c : where_) {
    c.lhs.free_vars(vars);
    c.rhs.free_vars(vars);
  }
  if (goal) {
    goal->lhs.free_vars(vars);
    goal->rhs.free_vars(vars);
  }
  std::string s;
  for (const auto& v : vars) s += "(declare-const |" + v + "| Int)\n";
  for (const auto& v : vars) s += "(assert (>= |" + v + "| 1))\n";
  for (const auto& c : where_) s += "(assert " + smt_formula(c) + ")\n";
  if (goal) s += "(assert (not " + smt_formula(*goal) + "))\n";
  return s;
}

std::string ShapeSolver::smtlib(const ShapeConstraint& goal) const {
  std::string s = "(set-logic ALL)\n" + smt_assertions(&goal) + "(check-sat)\n";
  if (!dims_.empty()) {
    s += "(get-value (";
    for (size_t i = 0; i < dims_.size(); ++i) s += (i ? " |" : "|") + dims_[i] + "|";
    s += "))\n";
  }
  return s;
}

}  // namespace shapeml::smt
