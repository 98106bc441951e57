#include <gtest/gtest.h>

#include <map>

#include "driver/frontend.h"

using shapeml::driver::check_source;
using shapeml::check::CheckResult;

namespace {

// Wraps a body in a function with the given dims, constraints and params.
std::string fn(const std::string& dims, const std::string& where, const std::string& params, const std::string& returns, const std::string& body) {
  return "(module t (func f (dims " + dims + ")" + (where.empty() ? "" : " (where " + where + ")") + " (params " + params + ") (returns " +
         returns + ") " + body + "))";
}

std::vector<std::string> codes(const CheckResult& r) {
  std::vector<std::string> c;
  for (const auto& d : r.diags.all()) c.push_back(d.code);
  return c;
}

std::map<std::string, int64_t> cex(const CheckResult& r, size_t i = 0) {
  const auto& v = r.diags.all().at(i).counterexample;
  return {v.begin(), v.end()};
}


}  // namespace

TEST(Checker, AcceptsWellTypedMlp) {
  auto r = check_source("t", fn("B D F", "", "(x (tensor f32 (B D) host)) (w (tensor f32 (D F) host))", "(tensor f32 (B F) host)",
                                "(let h (relu (matmul x w))) (return h)"));
  EXPECT_TRUE(r.ok()) << (r.diags.all().empty() ? "" : r.diags.all()[0].message);
  ASSERT_TRUE(r.module);
  EXPECT_EQ(r.module->functions[0].body.size(), 2u);  // ANF: matmul then relu
}

TEST(Checker, MatmulMismatchHasCounterexample) {
  auto r = check_source("t", fn("B D F", "", "(x (tensor f32 (B D) host)) (w (tensor f32 (F D) host))", "(tensor f32 (B D) host)",
                                "(return (matmul x w))"));
  ASSERT_EQ(codes(r), std::vector<std::string>{"E0301"});
  auto m = cex(r);
  ASSERT_TRUE(m.count("D") && m.count("F"));
  EXPECT_NE(m["D"], m["F"]);  // the counterexample really breaks D = F
}

TEST(Checker, ReshapeObligationIsProvedFromConstraints) {
  // `hd` binds H and Dh (E0308 otherwise: nothing else determines them).
  std::string params = "(x (tensor f32 (B S D) host)) (hd (tensor f32 (H Dh) host))";
  auto ok = check_source("t", fn("B S D H Dh", "(= D (* H Dh))", params, "(tensor f32 (B S H Dh) host)", "(return (reshape x (B S H Dh)))"));
  EXPECT_TRUE(ok.ok());
  auto bad = check_source("t", fn("B S D H Dh", "", params, "(tensor f32 (B S H Dh) host)", "(return (reshape x (B S H Dh)))"));
  ASSERT_EQ(codes(bad), std::vector<std::string>{"E0303"});
  auto m = cex(bad);
  EXPECT_NE(m["D"], m["H"] * m["Dh"]);
}

TEST(Checker, DivisibilityAndModConstraints) {
  std::string params = "(x (tensor f32 (S) host))";
  auto ok = check_source("t", fn("S", "(= (mod S 4) 0)", params, "(tensor f32 ((floordiv S 4) 4) host)", "(return (reshape x ((floordiv S 4) 4)))"));
  EXPECT_TRUE(ok.ok()) << (ok.diags.all().empty() ? "" : ok.diags.all()[0].message);
  auto ok2 = check_source("t", fn("S H", "(divides H S)", params + " (h (tensor f32 (H) host))", "(tensor f32 (S) host)", "(return x)"));
  EXPECT_TRUE(ok2.ok());
}

TEST(Checker, BroadcastingRules) {
  auto ok = check_source("t", fn("B S D", "", "(x (tensor f32 (B S D) host)) (y (tensor f32 (S 1) host))", "(tensor f32 (B S D) host)",
                                 "(return (add x y))"));
  EXPECT_TRUE(ok.ok());
  auto bad = check_source("t", fn("B S D", "", "(x (tensor f32 (B S D) host)) (y (tensor f32 (B D) host))", "(tensor f32 (B S D) host)",
                                  "(return (add x y))"));
  ASSERT_EQ(codes(bad), std::vector<std::string>{"E0302"});
  auto m = cex(bad);
  EXPECT_NE(m["B"], m["S"]);  // aligned from the right: B vs S
}

TEST(Checker, DtypeAndDeviceErrors) {
  auto r = check_source("t", fn("N", "", "(x (tensor f32 (N) host)) (y (tensor i32 (N) host))", "(tensor f32 (N) host)", "(return (add x y))"));
  EXPECT_EQ(codes(r), std::vector<std::string>{"E0201"});
  auto d = check_source("t", fn("N", "", "(x (tensor f32 (N) host)) (y (tensor f32 (N) (cuda 0)))", "(tensor f32 (N) host)", "(return (add x y))"));
  ASSERT_EQ(codes(d), std::vector<std::string>{"E0401"});
  ASSERT_FALSE(d.diags.all()[0].notes.empty());
  EXPECT_NE(d.diags.all()[0].notes[0].find("copy_to"), std::string::npos);  // suggests the copy
  auto e = check_source("t", fn("N", "", "(x (tensor i32 (N) host))", "(tensor i32 (N) host)", "(return (exp x))"));
  EXPECT_EQ(codes(e), std::vector<std::string>{"E0202"});
}

TEST(Checker, ReportsEveryIndependentError) {
  auto r = check_source("t", fn("N M", "", "(x (tensor f32 (N) host)) (y (tensor f32 (M) host))", "(tensor f32 (N) host)",
                                "(let a (add x y)) (let b (exp (cast x i32))) (let c (mul a 2.0)) (return (exp undefined_name))"));
  // a: broadcast error; b: exp on i32; c uses poisoned `a` silently; return: unknown name.
  auto c = codes(r);
  EXPECT_EQ(std::count(c.begin(), c.end(), "E0302"), 1);
  EXPECT_EQ(std::count(c.begin(), c.end(), "E0202"), 1);
  EXPECT_EQ(std::count(c.begin(), c.end(), "E0101"), 1);
  EXPECT_EQ(c.size(), 3u);
}

TEST(Checker, SliceBounds) {
  std::string params = "(x (tensor f32 (S D) host))";
  auto ok = check_source("t", fn("S D", "(>= S 4)", params, "(tensor f32 (3 D) host)", "(return (slice x :axis 0 :start 1 :size 3))"));
  EXPECT_TRUE(ok.ok());
  auto bad = check_source("t", fn("S D", "", params, "(tensor f32 (3 D) host)", "(return (slice x :axis 0 :start 1 :size 3))"));
  ASSERT_EQ(codes(bad), std::vector<std::string>{"E0304"});
  EXPECT_LT(cex(bad)["S"], 4);
}

TEST(Checker, CallsInstantiateShapeVariables) {
  std::string src = R"((module t
    (func pair (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host) (tensor f32 (N) host))
      (return x (neg x)))
    (func g (dims A) (params (y (tensor f32 (A) host))) (returns (tensor f32 (A) host))
      (let (p q) (call pair y))
      (return (add p q)))))";
  auto r = check_source("t", src);
  EXPECT_TRUE(r.ok()) << (r.diags.all().empty() ? "" : r.diags.all()[0].message);
}

TEST(Checker, UninferableShapeVariableIsE0308) {
  // M occurs only in the result: no call could bind it.
  auto r = check_source("t", fn("N M", "", "(x (tensor f32 (N) host))", "(tensor f32 (M) host)", "(return (fill 0.0 (tensor f32 (M) host)))"));
  ASSERT_EQ(codes(r), std::vector<std::string>{"E0308"});
  EXPECT_NE(r.diags.all()[0].message.find("`M`"), std::string::npos);
  // (* N N) is not linear in N: not determined either.
  auto sq = check_source("t", fn("N", "", "(x (tensor f32 ((* N N)) host))", "(tensor f32 ((* N N)) host)", "(return x)"));
  EXPECT_EQ(codes(sq), std::vector<std::string>{"E0308"});
  // K bound by `a`, then M solved from (* K M) (linear once K is known), then
  // Dh from the `where` equality.
  auto ok = check_source("t", fn("K M H Dh", "(= M (* H Dh))", "(a (tensor f32 (K) host)) (b (tensor f32 ((* K M)) host)) (h (tensor f32 (H) host))",
                                 "(tensor f32 ((* K M)) host)", "(return b)"));
  EXPECT_TRUE(ok.ok()) << (ok.diags.all().empty() ? "" : ok.diags.all()[0].message);
}

TEST(Checker, CallInfersLinearDimensionsLikeTheRuntime) {
  // The callee's M is solved from (* K M) once K is bound; the caller passes
  // (* 2 P) for it with K = 2, so M = P.
  std::string src =
      "(module t (func g (dims K M) (params (a (tensor f32 (K) host)) (b (tensor f32 ((* K M)) host))) (returns (tensor f32 (M K) host))"
      " (return (reshape b (M K))))"
      " (func f (dims P) (params (a (tensor f32 (2) host)) (b (tensor f32 ((* 2 P)) host))) (returns (tensor f32 (P 2) host))"
      " (return (call g a b))))";
  auto r = check_source("t", src);
  EXPECT_TRUE(r.ok()) << (r.diags.all().empty() ? "" : r.diags.all()[0].message);
  // With an odd length there is no integer M: E0306 at the call.
  std::string bad = src;
  bad.replace(bad.find("((* 2 P))"), 9, "((+ (* 2 P) 1))");
  bad.replace(bad.find("(P 2)"), 5, "(P 3)");
  auto rb = check_source("t", bad);
  ASSERT_FALSE(rb.ok());
  EXPECT_EQ(codes(rb)[0], "E0306");
}

TEST(Checker, UnsatisfiableWhereIsRejected) {
  auto r = check_source("t", fn("N", "(< N 1)", "(x (tensor f32 (N) host))", "(tensor f32 (N) host)", "(return x)"));
  EXPECT_EQ(codes(r), std::vector<std::string>{"E0307"});
}

TEST(Checker, UnknownIsNeverAcceptance) {
  // A goal Z3 cannot settle in 1 ms must be E0501, never accepted.
  auto r = check_source("t",
                        fn("A B C", "(= (* A A A) (+ (* B B B) (* C C C)))", "(x (tensor f32 (A) host)) (bc (tensor f32 (B C) host))",
                           "(tensor f32 (B) host)", "(return x)"),
                        {1, false});
  ASSERT_FALSE(r.ok());
  auto c = codes(r);
  EXPECT_TRUE(c[0] == "E0501" || c[0] == "E0301" || c[0] == "E0307") << c[0];
}

TEST(Checker, RecordsObligationsAsSmtLib) {
  auto r = check_source("t", fn("B D H Dh", "(= D (* H Dh))", "(x (tensor f32 (B D) host)) (h (tensor f32 (H) host))", "(tensor f32 (B H Dh) host)", "(return (reshape x (B H Dh)))"),
                        {2000, true});
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r.obligations.empty());
  bool found = false;
  for (const auto& o : r.obligations)
    if (o.smtlib.find("(check-sat)") != std::string::npos && o.smtlib.find("(assert (not") != std::string::npos) found = true;
  EXPECT_TRUE(found);
}

TEST(Verifier, CatchesABrokenPass) {
  auto r = check_source("t", fn("B D F", "", "(x (tensor f32 (B D) host)) (w (tensor f32 (D F) host))", "(tensor f32 (B F) host)",
                                "(return (matmul x w))"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(shapeml::check::verify_module(*r.module).empty());
  // Simulate a pass that corrupts the result type of the matmul.
  auto m = *r.module;
  auto& f = m.functions[0];
  f.values[f.body[0].results[0]].type.shape[1] = shapeml::types::Poly::var("D");
  auto diags = shapeml::check::verify_module(m);
  ASSERT_FALSE(diags.empty());
  EXPECT_EQ(diags[0].code, "E0900");
}

TEST(Verifier, RechecksCallsFully) {
  // A pass that breaks a call's argument (here: the caller's value now has
  // shape (M) where the callee needs N >= 2) or its result type is caught:
  // the verifier applies the whole T-Call rule, not only the arity.
  std::string src =
      "(module t (func g (dims N) (where (>= N 2)) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)) (return x))"
      " (func f (dims M) (where (>= M 3)) (params (x (tensor f32 (M) host))) (returns (tensor f32 (M) host)) (let y (call g x)) (return y)))";
  auto r = check_source("t", src);
  ASSERT_TRUE(r.ok()) << (r.diags.all().empty() ? "" : r.diags.all()[0].message);
  EXPECT_TRUE(shapeml::check::verify_module(*r.module).empty());
  // Corrupt the caller's `where` so that M >= 2 no longer follows.
  auto m = *r.module;
  m.functions[1].where.clear();
  auto diags = shapeml::check::verify_module(m);
  ASSERT_FALSE(diags.empty());
  EXPECT_EQ(diags[0].code, "E0900");
  EXPECT_NE(diags[0].message.find("[E0306]"), std::string::npos) << diags[0].message;
  // Corrupt the call's result type.
  auto m2 = *r.module;
  auto& f = m2.functions[1];
  f.values[f.body[0].results[0]].type.shape[0] = shapeml::types::Poly::constant(7);
  auto d2 = shapeml::check::verify_module(m2);
  ASSERT_FALSE(d2.empty());
  EXPECT_EQ(d2[0].code, "E0900");
}

TEST(Verifier, RechecksSoftmaxRepeatInterleaveDimValue) {
  // The IR holds the attributes of spec §4.21-4.23 as the GPU lowering reads
  // them: axes normalized (0 <= axis < rank), repeats and the dim_value
  // dimension as polynomials; the verifier re-derives every type from them.
  auto r = check_source("t", fn("B Hk G S", "", "(k (tensor f32 (B Hk S) host)) (g (tensor f32 (G) host))",
                                "(tensor f32 (B (* Hk G) S) host)",
                                "(let kr (repeat_interleave k :repeats G :axis -2))\n"
                                "(let p (log_softmax kr))\n"
                                "(return (mul p (dim_value (+ S 1) f32)))"));
  ASSERT_TRUE(r.ok()) << (r.diags.all().empty() ? "" : r.diags.all()[0].message);
  EXPECT_TRUE(shapeml::check::verify_module(*r.module).empty());
  const auto& f = r.module->functions[0];
  ASSERT_EQ(f.body.size(), 4u);
  EXPECT_EQ(f.body[0].op, shapeml::syntax::OpKind::RepeatInterleave);
  EXPECT_EQ(f.body[0].attrs.axis, 1);
  EXPECT_EQ(f.body[0].attrs.size, shapeml::types::Poly::var("G"));
  EXPECT_EQ(f.body[1].op, shapeml::syntax::OpKind::LogSoftmax);
  EXPECT_EQ(f.body[1].attrs.axis, 2);  // the default -1, normalized
  EXPECT_EQ(f.body[2].op, shapeml::syntax::OpKind::DimValue);
  EXPECT_EQ(f.body[2].attrs.size, shapeml::types::Poly::var("S") + shapeml::types::Poly::constant(1));
  EXPECT_EQ(f.body[2].attrs.dtype, shapeml::types::DType::F32);
  // A pass that changes the repeats (the result type no longer follows), or
  // moves the softmax axis out of range, is caught.
  auto m = *r.module;
  m.functions[0].body[0].attrs.size = shapeml::types::Poly::constant(2);
  auto d = shapeml::check::verify_module(m);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].code, "E0900");
  auto m2 = *r.module;
  m2.functions[0].body[1].attrs.axis = 3;
  auto d2 = shapeml::check::verify_module(m2);
  ASSERT_FALSE(d2.empty());
  EXPECT_NE(d2[0].message.find("[E0204]"), std::string::npos) << d2[0].message;
}

TEST(Checker, StatsCountTheVerifiersSolverWork) {
  // The verifier discharges the obligations again; its Z3 queries are part
  // of the totals (capi and --stats) and reported separately.
  auto r = check_source("t", fn("B T D", "(divides 4 (* B T))", "(x (tensor f32 (B T D) host))", "(tensor f32 ((floordiv (* B T) 4) 4 D) host)",
                                "(return (reshape x ((floordiv (* B T) 4) 4 D)))"));
  ASSERT_TRUE(r.ok()) << (r.diags.all().empty() ? "" : r.diags.all()[0].message);
  const auto& s = r.stats;
  EXPECT_GT(s.verify_solver.obligations, 0u);
  EXPECT_GT(s.verify_solver.z3_queries, 0u);
  EXPECT_GT(s.verify_solver.z3_seconds, 0.0);
  EXPECT_GT(s.solver.z3_queries, s.verify_solver.z3_queries);  // the elaborator's too
  EXPECT_GE(s.solver.z3_seconds, s.verify_solver.z3_seconds);
  EXPECT_GE(s.check_seconds, s.verify_seconds);
  EXPECT_GT(s.verify_seconds, 0.0);
}

TEST(Checker, NegativeLiteralsInWhereConstraints) {
  // (>= (- c (* 2 d)) -4) is a constraint, not a dimension: accepted and
  // used, so the slice (size 2d - 4 <= c) is proved.
  auto r = check_source("t", fn("c d", "(>= (- c (* 2 d)) -4) (>= d 3)", "(x (tensor f32 (c) host)) (y (tensor f32 (d) host))", "(tensor f32 ((- (* 2 d) 4)) host)",
                                "(return (slice x :axis 0 :start 0 :size (- (* 2 d) 4)))"));
  EXPECT_TRUE(r.ok()) << (r.diags.all().empty() ? "" : r.diags.all()[0].code + " " + r.diags.all()[0].message);
  // A constraint that does not resolve is reported and no obligation is
  // refuted under the remaining ones.
  auto u = check_source("t", fn("c d", "(>= (- c (* 2 d)) -4) (>= d Q)", "(x (tensor f32 (c) host)) (y (tensor f32 (d) host))", "(tensor f32 ((- (* 2 d) 4)) host)",
                                "(return (slice x :axis 0 :start 0 :size (- (* 2 d) 4)))"));
  EXPECT_EQ(codes(u), std::vector<std::string>{"E0104"});
}
