#include "types/poly.h"

#include <algorithm>

namespace shapeml::types {

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw DimOverflow();
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw DimOverflow();
  return r;
}

namespace {
std::string monomial_key(const std::vector<Atom>& atoms) {
  std::string k;
  for (const Atom& a : atoms) {
    if (!k.empty()) k += ' ';
    k += a.key;
  }
  return k;
}
// |c| as unsigned: -c overflows for INT64_MIN (a legal literal), and
// printing that was a crash of the checker.
uint64_t magnitude(int64_t c) { return c < 0 ? uint64_t{0} - static_cast<uint64_t>(c) : static_cast<uint64_t>(c); }

std::string term_text(const Term& t, uint64_t coeff) {
  if (t.atoms.empty()) return std::to_string(coeff);
  std::vector<std::string> parts;
  if (coeff != 1) parts.push_back(std::to_string(coeff));
  for (const Atom& a : t.atoms) parts.push_back(a.key);
  if (parts.size() == 1) return parts[0];
  std::string s = "(*";
  for (auto& p : parts) s += " " + p;
  return s + ")";
}
std::string sum_text(const std::vector<std::string>& parts) {
  if (parts.empty()) return "0";
  if (parts.size() == 1) return parts[0];
  std::string s = "(+";
  for (auto& p : parts) s += " " + p;
  return s + ")";
}
Atom make_divmod(Atom::Kind kind, const Poly& p, int64_t d) {
  Atom a;
  a.kind = kind;
  a.arg = std::make_shared<const Poly>(p);
  a.divisor = d;
  a.key = std::string(kind == Atom::Kind::FloorDiv ? "(floordiv " : "(mod ") + p.str() + " " + std::to_string(d) + ")";
  return a;
}
int64_t floor_div(int64_t a, int64_t d) { return a / d - ((a % d != 0) && ((a < 0) != (d < 0))); }
int64_t floor_mod(int64_t a, int64_t d) { return a - floor_div(a, d) * d; }
}  // namespace

Poly Poly::constant(int64_t c) {
  Poly p;
  if (c != 0) p.terms_[""] = Term{c, {}};
  p.finish();
  return p;
}

Poly Poly::var(const std::string& name) {
  Poly p;
  Atom a;
  a.var = name;
  a.key = name;
  p.terms_[name] = Term{1, {a}};
  p.finish();
  return p;
}

void Poly::add_term(const Term& t) {
  std::string k = monomial_key(t.atoms);
  auto it = terms_.find(k);
  if (it == terms_.end()) {
    if (t.coeff != 0) terms_[k] = t;
    return;
  }
  it->second.coeff = checked_add(it->second.coeff, t.coeff);
  if (it->second.coeff == 0) terms_.erase(it);
}

namespace {
[[noreturn]] void too_large(const std::string& what) {
  throw DimOverflow("dimension expression is too large: its normal form " + what +
                    " (shapeml bounds normal forms so that no program can exhaust the checker; write the dimension with "
                    "fewer products of sums, or introduce a shape variable for it)");
}
}  // namespace

void Poly::finish() {
  if (terms_.size() > kMaxPolyTerms) too_large("has more than " + std::to_string(kMaxPolyTerms) + " terms");
  // Print non-constant terms in monomial order, constant last.
  std::vector<std::string> pos, neg;
  for (const auto& [k, t] : terms_) {
    if (k.empty()) continue;
    (t.coeff > 0 ? pos : neg).push_back(term_text(t, magnitude(t.coeff)));
  }
  auto c = terms_.find("");
  if (c != terms_.end()) (c->second.coeff > 0 ? pos : neg).push_back(std::to_string(magnitude(c->second.coeff)));
  if (neg.empty()) key_ = sum_text(pos);
  else if (pos.empty() && terms_.size() == 1 && c != terms_.end()) key_ = std::to_string(c->second.coeff);
  else key_ = "(- " + sum_text(pos) + " " + sum_text(neg) + ")";
  if (key_.size() > kMaxPolyTextBytes) too_large("is longer than " + std::to_string(kMaxPolyTextBytes) + " characters");
}

Poly Poly::operator+(const Poly& o) const {
  Poly r = *this;
  for (const auto& [k, t] : o.terms_) r.add_term(t);
  r.finish();
  return r;
}

Poly Poly::operator-(const Poly& o) const {
  Poly r = *this;
  for (const auto& [k, t] : o.terms_) r.add_term(Term{checked_mul(t.coeff, -1), t.atoms});
  r.finish();
  return r;
}

Poly Poly::operator*(const Poly& o) const {
  if (terms_.size() * o.terms_.size() > kMaxPolyProductPairs)
    too_large("would multiply " + std::to_string(terms_.size()) + " by " + std::to_string(o.terms_.size()) + " terms");
  Poly r;
  for (const auto& [ka, a] : terms_)
    for (const auto& [kb, b] : o.terms_) {
      Term t;
      t.coeff = checked_mul(a.coeff, b.coeff);
      t.atoms = a.atoms;
      t.atoms.insert(t.atoms.end(), b.atoms.begin(), b.atoms.end());
      std::sort(t.atoms.begin(), t.atoms.end(), [](const Atom& x, const Atom& y) { return x.key < y.key; });
      r.add_term(t);
      if (r.terms_.size() > kMaxPolyTerms) too_large("has more than " + std::to_string(kMaxPolyTerms) + " terms");
    }
  r.finish();
  return r;
}

Poly Poly::floordiv(int64_t d) const {
  if (d == 1) return *this;
  if (auto c = constant_value()) return constant(floor_div(*c, d));
  bool exact = std::all_of(terms_.begin(), terms_.end(), [&](const auto& kv) { return kv.second.coeff % d == 0; });
  if (exact) {
    Poly r;
    for (const auto& [k, t] : terms_) r.terms_[k] = Term{t.coeff / d, t.atoms};
    r.finish();
    return r;
  }
  Poly r;
  Atom a = make_divmod(Atom::Kind::FloorDiv, *this, d);
  r.terms_[a.key] = Term{1, {a}};
  r.finish();
  return r;
}

Poly Poly::mod(int64_t d) const {
  if (d == 1) return constant(0);
  if (auto c = constant_value()) return constant(floor_mod(*c, d));
  bool exact = std::all_of(terms_.begin(), terms_.end(), [&](const auto& kv) { return kv.second.coeff % d == 0; });
  if (exact) return constant(0);
  Poly r;
  Atom a = make_divmod(Atom::Kind::Mod, *this, d);
  r.terms_[a.key] = Term{1, {a}};
  r.finish();
  return r;
}

std::optional<int64_t> Poly::constant_value() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second.coeff;
  return std::nullopt;
}

bool Poly::obviously_positive() const {
  if (terms_.empty()) return false;
  for (const auto& [k, t] : terms_) {
    if (t.coeff < 0) return false;
    for (const Atom& a : t.atoms)
      if (a.kind != Atom::Kind::Var) return false;  // floordiv/mod may be 0
  }
  return true;
}

std::string Poly::str() const { return key_; }

void Poly::free_vars(std::set<std::string>& out) const {
  for (const auto& [k, t] : terms_)
    for (const Atom& a : t.atoms) {
      if (a.kind == Atom::Kind::Var) out.insert(a.var);
      else a.arg->free_vars(out);
    }
}

Poly Poly::subst(const std::map<std::string, Poly>& s) const {
  Poly r;
  r.finish();
  for (const auto& [k, t] : terms_) {
    Poly term = constant(t.coeff);
    for (const Atom& a : t.atoms) {
      Poly f;
      if (a.kind == Atom::Kind::Var) {
        auto it = s.find(a.var);
        f = it == s.end() ? var(a.var) : it->second;
      } else {
        Poly inner = a.arg->subst(s);
        f = a.kind == Atom::Kind::FloorDiv ? inner.floordiv(a.divisor) : inner.mod(a.divisor);
      }
      term = term * f;
    }
    r = r + term;
  }
  return r;
}

std::optional<int64_t> Poly::eval(const std::map<std::string, int64_t>& env) const {
  try {
    int64_t sum = 0;
    for (const auto& [k, t] : terms_) {
      int64_t v = t.coeff;
      for (const Atom& a : t.atoms) {
        int64_t x;
        if (a.kind == Atom::Kind::Var) {
          auto it = env.find(a.var);
          if (it == env.end()) return std::nullopt;
          x = it->second;
        } else {
          auto inner = a.arg->eval(env);
          if (!inner) return std::nullopt;
          x = a.kind == Atom::Kind::FloorDiv ? floor_div(*inner, a.divisor) : floor_mod(*inner, a.divisor);
        }
        v = checked_mul(v, x);
      }
      sum = checked_add(sum, v);
    }
    return sum;
  } catch (const DimOverflow&) {
    return std::nullopt;
  }
}

}  // namespace shapeml::types
