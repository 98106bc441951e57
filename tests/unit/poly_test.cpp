#include <gtest/gtest.h>

#include "types/poly.h"

using shapeml::types::DimOverflow;
using shapeml::types::Poly;

namespace {
Poly v(const char* n) { return Poly::var(n); }
Poly c(int64_t x) { return Poly::constant(x); }
}  // namespace

TEST(Poly, ConstantsFold) {
  EXPECT_EQ((c(2) + c(3)).constant_value(), 5);
  EXPECT_EQ((c(2) * c(3)).constant_value(), 6);
  EXPECT_EQ((c(7) - c(7)).constant_value(), 0);
  EXPECT_EQ(c(7).floordiv(2).constant_value(), 3);
  EXPECT_EQ(c(-7).floordiv(2).constant_value(), -4);  // floor, not truncation
  EXPECT_EQ(c(-7).mod(3).constant_value(), 2);        // non-negative remainder
}

TEST(Poly, CommutesAndDistributes) {
  Poly a = v("H") * v("Dh"), b = v("Dh") * v("H");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.str(), b.str());
  EXPECT_EQ((v("B") + v("S")) * v("D"), v("B") * v("D") + v("S") * v("D"));
  EXPECT_NE(v("B") * v("S"), v("B") + v("S"));
}

TEST(Poly, CancelsTerms) {
  Poly p = v("S") + c(1) - v("S");
  EXPECT_EQ(p.constant_value(), 1);
  EXPECT_TRUE((v("x") - v("x")).is_constant());
}

TEST(Poly, CanonicalText) {
  EXPECT_EQ((v("H") * v("Dh")).str(), "(* Dh H)");
  EXPECT_EQ((c(2) * v("S") + c(1)).str(), "(+ (* 2 S) 1)");
  EXPECT_EQ((v("S") - c(1)).str(), "(- S 1)");
  EXPECT_EQ((v("S") * v("S")).str(), "(* S S)");
}

TEST(Poly, ExactDivisionSimplifies) {
  EXPECT_EQ((c(4) * v("S")).floordiv(4), v("S"));
  EXPECT_EQ((c(4) * v("S") + c(8)).floordiv(4), v("S") + c(2));
  EXPECT_EQ((c(4) * v("S")).mod(4).constant_value(), 0);
  Poly d = v("S").floordiv(2);
  EXPECT_FALSE(d.is_constant());
  EXPECT_EQ(d.str(), "(floordiv S 2)");
  EXPECT_FALSE(d.obviously_positive());  // S = 1 gives 0
}

TEST(Poly, Evaluates) {
  Poly p = v("B") * v("S") + v("S").floordiv(2) + v("S").mod(3);
  EXPECT_EQ(p.eval({{"B", 2}, {"S", 7}}), 2 * 7 + 3 + 1);
  EXPECT_EQ(p.eval({{"B", 2}}), std::nullopt);
}

TEST(Poly, Substitutes) {
  Poly p = v("D") * v("N");
  Poly q = p.subst({{"D", v("H") * v("Dh")}});
  EXPECT_EQ(q, v("H") * v("Dh") * v("N"));
  EXPECT_EQ((v("S").floordiv(2)).subst({{"S", c(9)}}).constant_value(), 4);
}

TEST(Poly, OverflowIsReported) {
  Poly big = c(INT64_MAX);
  EXPECT_THROW(big + c(1), DimOverflow);
  EXPECT_THROW(big * c(2), DimOverflow);
  EXPECT_EQ((v("x") * c(INT64_MAX)).eval({{"x", 2}}), std::nullopt);
}

TEST(Poly, PositivityIsSyntactic) {
  EXPECT_TRUE((v("B") * v("S") + c(1)).obviously_positive());
  EXPECT_FALSE((v("S") - c(1)).obviously_positive());
  EXPECT_FALSE(c(0).obviously_positive());
}
