#include <gtest/gtest.h>

#include <map>

#include "smt/shape_solver.h"

using shapeml::smt::Outcome;
using shapeml::smt::ShapeSolver;
using shapeml::types::Poly;
using K = shapeml::types::ShapeConstraint::Kind;

namespace {
Poly v(const char* n) { return Poly::var(n); }
Poly c(int64_t x) { return Poly::constant(x); }
}  // namespace

TEST(Solver, SyntacticEqualityNeedsNoZ3) {
  ShapeSolver s;
  s.begin_function({"H", "Dh"}, {});
  auto o = s.prove({K::Eq, v("H") * v("Dh"), v("Dh") * v("H")});
  EXPECT_EQ(o.kind, Outcome::Kind::Proved);
  EXPECT_TRUE(o.decided_syntactically);
  EXPECT_EQ(s.stats().z3_queries, 0u);
}

TEST(Solver, ProvesUnderHypotheses) {
  ShapeSolver s;
  s.begin_function({"B", "S", "D", "H", "Dh"}, {{K::Eq, v("D"), v("H") * v("Dh")}});
  auto o = s.prove({K::Eq, v("B") * v("S") * v("D"), v("B") * v("S") * v("H") * v("Dh")});
  EXPECT_EQ(o.kind, Outcome::Kind::Proved);
  EXPECT_TRUE(o.decided_syntactically);  // D is rewritten to H*Dh first
}

TEST(Solver, InequalitiesGoToZ3) {
  ShapeSolver s;
  s.begin_function({"S"}, {{K::Ge, v("S"), c(4)}});
  auto o = s.prove({K::Le, c(4), v("S")});
  EXPECT_EQ(o.kind, Outcome::Kind::Proved);
  EXPECT_FALSE(o.decided_syntactically);
  EXPECT_EQ(s.prove({K::Ge, v("S") * v("S"), c(16)}).kind, Outcome::Kind::Proved);  // non-linear
}

TEST(Solver, RefutesWithAValidCounterexample) {
  ShapeSolver s;
  s.begin_function({"S"}, {{K::Ge, v("S"), c(2)}});
  auto o = s.prove({K::Le, v("S") + c(3), c(4)});
  ASSERT_EQ(o.kind, Outcome::Kind::Refuted);
  ASSERT_EQ(o.counterexample.size(), 1u);
  EXPECT_GE(o.counterexample[0].second, 2);          // satisfies the hypothesis
  EXPECT_GT(o.counterexample[0].second + 3, 4);      // and breaks the goal
}

TEST(Solver, DividesHypothesis) {
  ShapeSolver s;
  s.begin_function({"H", "D"}, {{K::Divides, v("H"), v("D")}});
  EXPECT_EQ(s.prove({K::Eq, v("D").mod(1), c(0)}).kind, Outcome::Kind::Proved);
  EXPECT_EQ(s.prove({K::Divides, v("H"), v("D") * c(3)}).kind, Outcome::Kind::Proved);
  EXPECT_EQ(s.prove({K::Divides, v("D"), v("H")}).kind, Outcome::Kind::Refuted);
}

TEST(Solver, FloorDivAndMod) {
  ShapeSolver s;
  s.begin_function({"S"}, {{K::Eq, v("S").mod(8), c(0)}});
  EXPECT_EQ(s.prove({K::Eq, v("S").floordiv(8) * c(8), v("S")}).kind, Outcome::Kind::Proved);
  EXPECT_EQ(s.prove({K::Eq, v("S").floordiv(16) * c(16), v("S")}).kind, Outcome::Kind::Refuted);
}

TEST(Solver, UnsatisfiableHypotheses) {
  ShapeSolver s;
  s.begin_function({"N"}, {{K::Lt, v("N"), c(1)}});
  EXPECT_EQ(s.hypotheses_satisfiable().kind, Outcome::Kind::Refuted);
  s.begin_function({"N"}, {{K::Ge, v("N"), c(5)}});  // replaces the previous scope
  EXPECT_EQ(s.hypotheses_satisfiable().kind, Outcome::Kind::Proved);
}

TEST(Solver, SmtLibIsSelfContained) {
  ShapeSolver s;
  s.begin_function({"D", "H"}, {{K::Divides, v("H"), v("D")}});
  std::string t = s.smtlib({K::Eq, v("D"), v("H")});
  EXPECT_NE(t.find("(declare-const |D| Int)"), std::string::npos);
  EXPECT_NE(t.find("(assert (>= |H| 1))"), std::string::npos);
  EXPECT_NE(t.find("(assert (not (= |D| |H|)))"), std::string::npos);
  EXPECT_NE(t.find("(check-sat)"), std::string::npos);
}

TEST(Solver, SmallWitnessRefutesWithoutZ3) {
  // Z3 4.8 may answer unknown on non-linear goals with floordiv; a small
  // valuation settles it, and is a real counterexample.
  ShapeSolver s;
  s.begin_function({"B", "S"}, {});
  auto o = s.prove({K::Eq, v("B") * v("B") * v("S"), c(2) * v("S").floordiv(2) * v("B") * v("B")});
  ASSERT_EQ(o.kind, Outcome::Kind::Refuted);
  EXPECT_EQ(s.stats().z3_queries, 0u);
  std::map<std::string, int64_t> env(o.counterexample.begin(), o.counterexample.end());
  EXPECT_EQ(env["S"] % 2, 1);  // odd S breaks it
}

TEST(Solver, ModHypothesisNormalizesFloorDiv) {
  ShapeSolver s;
  s.begin_function({"S", "D", "H", "Dh"}, {{K::Eq, v("S").mod(8), c(0)}, {K::Divides, v("H"), v("D")}, {K::Eq, v("D"), v("H") * v("Dh")}});
  auto o = s.prove({K::Eq, v("S").floordiv(8) * c(8) * v("D"), v("S") * v("H") * v("Dh")});
  EXPECT_EQ(o.kind, Outcome::Kind::Proved);
  EXPECT_TRUE(o.decided_syntactically);  // S = 8w and D = H*Dh (the equality wins over divides)
}

// (divides a b) means a >= 1 and b mod a = 0 (spec §2), in every component.
TEST(Divides, EvaluatorNeedsAPositiveDivisor) {
  using shapeml::types::ShapeConstraint;
  auto d = [](int64_t a, int64_t b) { return ShapeConstraint{K::Divides, c(a), c(b)}.eval({}); };
  EXPECT_EQ(d(3, 6), true);
  EXPECT_EQ(d(3, 0), true);
  EXPECT_EQ(d(3, 7), false);
  EXPECT_EQ(d(0, 0), false);
  EXPECT_EQ(d(-1, 2), false);  // was true
  EXPECT_EQ(d(-3, 6), false);
}

TEST(Divides, SelfDividesOnlyWhenPositive) {
  ShapeSolver s;
  s.begin_function({"K"}, {});
  auto o = s.prove({K::Divides, v("K") - c(1), v("K") - c(1)});
  ASSERT_EQ(o.kind, Outcome::Kind::Refuted);  // K = 1: (divides 0 0)
  ASSERT_EQ(o.counterexample.size(), 1u);
  EXPECT_EQ(o.counterexample[0].second, 1);
  EXPECT_EQ(s.prove({K::Divides, c(0), c(0)}).kind, Outcome::Kind::Refuted);
  EXPECT_EQ(s.prove({K::Divides, c(4), c(12)}).kind, Outcome::Kind::Proved);
  auto p = s.prove({K::Divides, v("K") + c(1), v("K") + c(1)});
  EXPECT_EQ(p.kind, Outcome::Kind::Proved);
  EXPECT_TRUE(p.decided_syntactically);
}

TEST(Divides, OneTermRuleNeedsADivisorThatCannotBeZero) {
  // (floordiv N 9) is 0 for N < 9: it does not divide 2*(floordiv N 9) then.
  ShapeSolver s;
  s.begin_function({"N"}, {});
  auto o = s.prove({K::Divides, v("N").floordiv(9), c(2) * v("N").floordiv(9)});
  ASSERT_EQ(o.kind, Outcome::Kind::Refuted);
  ASSERT_EQ(o.counterexample.size(), 1u);
  EXPECT_LT(o.counterexample[0].second, 9);
  // Over variables only it is a proof.
  auto p = s.prove({K::Divides, c(2) * v("N"), c(6) * v("N") * v("N")});
  EXPECT_EQ(p.kind, Outcome::Kind::Proved);
  EXPECT_TRUE(p.decided_syntactically);
}

TEST(Divides, NonPositiveDivisorMakesTheWhereClauseUnsatisfiable) {
  ShapeSolver s;
  s.begin_function({"N", "M"}, {{K::Divides, c(1) - v("N"), v("N")}});
  EXPECT_EQ(s.hypotheses_satisfiable().kind, Outcome::Kind::Refuted);
  s.begin_function({"K", "N"}, {{K::Divides, v("K") - c(2), v("N")}});
  EXPECT_EQ(s.hypotheses_satisfiable().kind, Outcome::Kind::Proved);  // K >= 3
  // and then K - 2 >= 1 is a consequence
  EXPECT_EQ(s.prove({K::Ge, v("K"), c(3)}).kind, Outcome::Kind::Proved);
}

TEST(Divides, DumpUsesTheSameEncodingAsHypothesisAndGoal) {
  ShapeSolver s;
  s.begin_function({"B", "T"}, {{K::Divides, c(4), v("B") * v("T")}});
  std::string t = s.smtlib({K::Divides, v("B"), v("T")});
  EXPECT_NE(t.find("(assert (and (>= 4 1) (= (mod (* |B| |T|) 4) 0)))"), std::string::npos) << t;
  EXPECT_NE(t.find("(assert (not (and (>= |B| 1) (= (mod |T| |B|) 0))))"), std::string::npos) << t;
  EXPECT_EQ(t.find("#k"), std::string::npos) << t;  // no witness constants
}

TEST(Solver, AnswersDoNotDependOnEarlierQueries) {
  // issue 7: on the reused push/pop solver, after two queries about
  // (floordiv (* B T) 4) >= 1, this reshape obligation came back unknown
  // after the whole budget; asked first it took ~215 ms. Now each query is
  // fresh and the divides hypothesis is a mod: well inside 200 ms.
  Poly bt = v("B") * v("T");
  ShapeSolver s(200);
  s.begin_function({"B", "T", "D"}, {{K::Divides, c(4), bt}});
  EXPECT_EQ(s.prove({K::Ge, bt.floordiv(4), c(1)}).kind, Outcome::Kind::Proved);
  EXPECT_EQ(s.prove({K::Ge, bt.floordiv(4), c(1)}).kind, Outcome::Kind::Proved);
  auto o = s.prove({K::Eq, bt * v("D"), bt.floordiv(4) * c(4) * v("D")});
  EXPECT_EQ(o.kind, Outcome::Kind::Proved) << o.reason;
  ShapeSolver fresh(200);
  fresh.begin_function({"B", "T", "D"}, {{K::Divides, c(4), bt}});
  EXPECT_EQ(fresh.prove({K::Eq, bt * v("D"), bt.floordiv(4) * c(4) * v("D")}).kind, Outcome::Kind::Proved);
}
