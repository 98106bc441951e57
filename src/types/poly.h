// Dimension polynomials: the normal form of dimension expressions (spec §3.3).
//
// A polynomial is a sum of terms c·a1·…·ak with integer coefficients over
// *atoms*: shape variables, and floordiv/mod of a polynomial by a positive
// constant that did not simplify. Two dimensions with equal normal forms are
// equal without asking Z3; everything else becomes an obligation.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace shapeml::types {

/// Thrown when dimension arithmetic leaves the int64 range. Caught by the
/// checker and reported as E0004; never crosses the C ABI.
struct DimOverflow : std::runtime_error {
  DimOverflow() : std::runtime_error("dimension arithmetic overflows 64-bit integers") {}
  explicit DimOverflow(const std::string& m) : std::runtime_error(m) {}
};

/// Bounds on a normal form, so that a short dimension expression such as
/// `(* (+ A B C D E F G H) (+ A B C D E F G H) ...)` cannot take minutes and
/// gigabytes to normalize (it grows as a binomial coefficient). Exceeding one
/// throws DimOverflow with a message naming the limit (reported as E0004).
/// Real programs' dimensions have a handful of terms.
inline constexpr size_t kMaxPolyTerms = 256;        // terms of one normal form
inline constexpr size_t kMaxPolyTextBytes = 4096;   // its canonical text
inline constexpr size_t kMaxPolyProductPairs = 16384;  // term pairs one product may multiply

class Poly;

struct Atom {
  enum class Kind { Var, FloorDiv, Mod } kind = Kind::Var;
  std::string var;                  // Kind::Var
  std::shared_ptr<const Poly> arg;  // Kind::FloorDiv / Kind::Mod
  int64_t divisor = 0;
  std::string key;  // canonical text; atoms are ordered and compared by it
};

struct Term {
  int64_t coeff = 0;
  std::vector<Atom> atoms;  // sorted by key, with repetition (x·x)
};

class Poly {
 public:
  Poly() = default;
  static Poly constant(int64_t c);
  static Poly var(const std::string& name);

  Poly operator+(const Poly& o) const;
  Poly operator-(const Poly& o) const;
  Poly operator*(const Poly& o) const;
  /// floor(this / d) for a constant d >= 1, simplified where exact.
  Poly floordiv(int64_t d) const;
  /// this mod d (non-negative) for a constant d >= 1.
  Poly mod(int64_t d) const;

  bool is_constant() const { return terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty()); }
  /// The value when constant.
  std::optional<int64_t> constant_value() const;
  bool is_one() const { return constant_value() == 1; }
  /// True when every coefficient is >= 0 and the polynomial is not the
  /// constant 0: such a dimension is >= 1 whenever its variables are.
  bool obviously_positive() const;

  bool operator==(const Poly& o) const { return key() == o.key(); }
  bool operator!=(const Poly& o) const { return !(*this == o); }

  /// Canonical S-expression text, e.g. `(+ (* H Dh) 1)`.
  std::string str() const;
  /// Canonical text used for ordering and hashing.
  const std::string& key() const { return key_; }

  const std::map<std::string, Term>& terms() const { return terms_; }
  void free_vars(std::set<std::string>& out) const;
  Poly subst(const std::map<std::string, Poly>& s) const;
  /// Value under a full assignment of the variables; nullopt on a missing
  /// variable or overflow.
  std::optional<int64_t> eval(const std::map<std::string, int64_t>& env) const;

 private:
  void add_term(const Term& t);
  void finish();
  std::map<std::string, Term> terms_;  // monomial key ("" = constant) -> term
  std::string key_ = "0";
};

int64_t checked_add(int64_t a, int64_t b);
int64_t checked_mul(int64_t a, int64_t b);

}  // namespace shapeml::types
