#include <gtest/gtest.h>

#include "runtime/manifest.h"
#include "runtime/shape_binding.h"

using namespace shapeml::runtime;

namespace {

const char* kGood = R"((shapeml-module (abi 1) (name mlp) (target "x86-64-v3")
  ; a comment with a "quote
  (entry mlp (dims B S D F) (where (= (mod D 64) 0) (<= F (* 4 D)))
    (params (x (tensor f32 (B S D) host))
            (w1 (tensor f32 (D F) host))
            (w2 (tensor f32 (F D) host)))
    (returns (tensor f32 (B S D) host))
    (specialization (bind (B 4) (S 128) (D 256) (F 1024)) (symbol shapeml_mlp_0)))
  (entry pad (dims N) (params (x (tensor i64 ((+ (* 2 N) 1) 3) host))) (returns (tensor i64 ((floordiv N 2)) (cuda 1)))))
)";

Result<Manifest> parse(const std::string& body) {
  return parse_manifest("(shapeml-module (abi 1) (name m)\n" + body + ")", "test.so");
}

void expect_error(const std::string& body, const std::string& text) {
  auto r = parse(body);
  ASSERT_FALSE(r.ok()) << body;
  EXPECT_EQ(r.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().rfind("test.so:", 0), 0u) << r.status().message();
}

}  // namespace

TEST(Manifest, ParsesTheDocumentedFormat) {
  auto r = parse_manifest(kGood, "libmlp.so");
  ASSERT_TRUE(r.ok()) << r.status().str();
  const Manifest& m = *r;
  EXPECT_EQ(m.abi, 1u);
  EXPECT_EQ(m.name, "mlp");
  EXPECT_EQ(m.target, "x86-64-v3");
  ASSERT_EQ(m.entries.size(), 2u);
  const EntrySig* e = m.find("mlp");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->dims, (std::vector<std::string>{"B", "S", "D", "F"}));
  ASSERT_EQ(e->where.size(), 2u);
  EXPECT_EQ(e->where[0].text, "(= (mod D 64) 0)");
  ASSERT_EQ(e->params.size(), 3u);
  EXPECT_EQ(e->params[1].name, "w1");
  EXPECT_EQ(e->params[1].type.str(), "(tensor f32 (D F) host)");
  ASSERT_EQ(e->specializations.size(), 1u);
  EXPECT_EQ(e->specializations[0].symbol, "shapeml_mlp_0");
  EXPECT_EQ(binding_str(*e, e->specializations[0].bind), "B=4 S=128 D=256 F=1024");
  const EntrySig* pad = m.find("pad");
  ASSERT_NE(pad, nullptr);
  EXPECT_EQ(pad->params[0].type.str(), "(tensor i64 ((+ (* 2 N) 1) 3) host)");
  EXPECT_EQ(pad->returns[0].device, shapeml::types::Device::cuda(1));
  EXPECT_EQ(m.find("nope"), nullptr);
}

TEST(Manifest, RejectsMalformedManifestsWithPositions) {
  expect_error("(entry f (dims N) (params (x (tensor f32 (M) host))) (returns (tensor f32 (N) host)))",
               "unknown shape variable `M` [E0104]");
  expect_error("(entry f (dims N) (params (x (tensor f33 (N) host))) (returns (tensor f32 (N) host)))", "expected a dtype");
  expect_error("(entry f (dims N) (params (x (tensor f32 (N) gpu))) (returns (tensor f32 (N) host)))", "expected a device");
  expect_error("(entry f (dims N M) (params (x (tensor f32 (N) host))) (returns (tensor f32 (M) host)))",
               "shape variable `M` of entry `f` is determined by no parameter dimension");
  expect_error("(entry f (dims N) (params (x (tensor f32 (N) host))))", "has no (returns");
  expect_error("(entry f (dims N) (returns (tensor f32 (N) host)))", "has no (params");
  expect_error("(entry f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)))\n"
               "(entry f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host)))",
               "entry `f` is declared twice");
  expect_error("(entry f (dims N) (where (= (mod N 4) 0)) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host))\n"
               "  (specialization (bind (N 6)) (symbol f6)))",
               "specialization N=6 violates where constraint (= (mod N 4) 0)");
  expect_error("(entry f (dims N M) (params (x (tensor f32 (N M) host))) (returns (tensor f32 (N) host))\n"
               "  (specialization (bind (N 6)) (symbol f6)))",
               "does not bind shape variable `M`");
  expect_error("(entry f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host))\n"
               "  (specialization (bind (N 2)) (symbol a)) (specialization (bind (N 2)) (symbol b)))",
               "two specializations of `f` bind N=2");
  expect_error("(entry f (dims N) (params (x (tensor f32 ((floordiv N 0)) host))) (returns (tensor f32 (N) host)))",
               "positive integer constant");
  expect_error("(frobnicate)", "unknown clause in shapeml-module");
  expect_error("(entry f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host))", "unclosed `(`");
  // Positions are line:column of the offending form.
  auto r = parse("(entry f (dims N)\n  (params (x (tensor f32 (Q) host))) (returns (tensor f32 (N) host)))");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("test.so:3:", 0), 0u) << r.status().message();
}

TEST(Manifest, RejectsOtherAbiVersionsAndMissingHeaders) {
  auto r = parse_manifest("(shapeml-module (abi 3) (name m))", "new.so");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::IncompatibleModule);
  EXPECT_NE(r.status().message().find("(abi 3)"), std::string::npos) << r.status().message();
  // abi 1 (before index checks) is still read; abi 2 adds (index-checks ...).
  EXPECT_TRUE(parse_manifest("(shapeml-module (abi 1) (name m))", "old.so").ok());
  EXPECT_TRUE(parse_manifest("(shapeml-module (abi 2) (name m))", "new.so").ok());
  EXPECT_FALSE(parse_manifest("(shapeml-module (name m))", "x").ok());
  EXPECT_FALSE(parse_manifest("(shapeml-module (abi 1))", "x").ok());
  EXPECT_FALSE(parse_manifest("", "x").ok());
  EXPECT_FALSE(parse_manifest("(module m)", "x").ok());
  EXPECT_FALSE(parse_manifest("(shapeml-module (abi 1) (name m) (target \"unterminated)", "x").ok());
}

namespace {
Result<Binding> bind(const EntrySig& e, std::vector<std::vector<int64_t>> shapes) {
  std::vector<std::span<const int64_t>> spans(shapes.begin(), shapes.end());
  return bind_shape_variables(e, spans);
}
}  // namespace

TEST(ShapeBinding, BindsLoneVariablesAndChecksTheRest) {
  auto m = parse_manifest(kGood, "libmlp.so");
  ASSERT_TRUE(m.ok());
  const EntrySig& e = *m->find("mlp");
  auto b = bind(e, {{2, 3, 64}, {64, 10}, {10, 64}});
  ASSERT_TRUE(b.ok()) << b.status().str();
  EXPECT_EQ(binding_str(e, *b), "B=2 S=3 D=64 F=10");

  auto mismatch = bind(e, {{2, 3, 64}, {64, 10}, {11, 64}});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().message(),
            "entry `mlp`: input `w2` dimension 0 is 11, expected 10 for type (tensor f32 (F D) host): F = 10 (from input `w1` "
            "dimension 1); input shapes: x (2 3 64), w1 (64 10), w2 (11 64)");

  auto where = bind(e, {{2, 3, 65}, {65, 10}, {10, 65}});
  ASSERT_FALSE(where.ok());
  EXPECT_EQ(where.status().message(),
            "entry `mlp`: where constraint (= (mod D 64) 0) does not hold for D = 65 (from input `x` dimension 2)");
  auto where2 = bind(e, {{1, 1, 64}, {64, 300}, {300, 64}});
  ASSERT_FALSE(where2.ok());
  EXPECT_NE(where2.status().message().find("(<= F (* 4 D)) does not hold for F = 300 (from input `w1` dimension 1), D = 64"),
            std::string::npos)
      << where2.status().message();
  auto zero = bind(e, {{0, 3, 64}, {64, 10}, {10, 64}});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("shape variables are >= 1"), std::string::npos) << zero.status().message();
}

TEST(ShapeBinding, SolvesLinearDimensions) {
  auto m = parse_manifest(kGood, "libmlp.so");
  ASSERT_TRUE(m.ok());
  const EntrySig& e = *m->find("pad");
  auto b = bind(e, {{9, 3}});
  ASSERT_TRUE(b.ok()) << b.status().str();
  EXPECT_EQ(b->at("N"), 4);
  auto out = evaluate_shape(e.returns[0].shape, *b);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, std::vector<int64_t>{2});
  auto even = bind(e, {{8, 3}});
  ASSERT_FALSE(even.ok());
  EXPECT_NE(even.status().message().find("requires (+ (* 2 N) 1), which is 8 for no integer N"), std::string::npos)
      << even.status().message();
  auto one = bind(e, {{1, 3}});
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("would make shape variable N = 0"), std::string::npos) << one.status().message();
  auto fixed = bind(e, {{9, 4}});
  ASSERT_FALSE(fixed.ok());
  EXPECT_NE(fixed.status().message().find("dimension 1 is 4, expected 3"), std::string::npos) << fixed.status().message();
}

TEST(ShapeBinding, ReportsVariablesThatCannotBeInferred) {
  // (* N N) does not determine N (not linear): the manifest is rejected at
  // load, before any call, by the same rule the checker applies (E0308).
  auto m = parse("(entry sq (dims N) (params (x (tensor f32 ((* N N)) host))) (returns (tensor f32 (N) host)))");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("shape variable `N` of entry `sq` is determined by no parameter dimension"), std::string::npos)
      << m.status().message();
}

TEST(ShapeBinding, SolvesAProductOnceOneFactorIsBound) {
  // K comes from `a`; then (* K M) is linear in M.
  auto m = parse("(entry f (dims K M) (params (a (tensor f32 (K) host)) (b (tensor f32 ((* K M)) host))) (returns (tensor f32 (M) host)))");
  ASSERT_TRUE(m.ok()) << m.status().str();
  auto b = bind(m->entries[0], {{3}, {12}});
  ASSERT_TRUE(b.ok()) << b.status().str();
  EXPECT_EQ(b->at("K"), 3);
  EXPECT_EQ(b->at("M"), 4);
  auto bad = bind(m->entries[0], {{5}, {12}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("for no integer M"), std::string::npos) << bad.status().message();
}

namespace {
const std::string kEmbed =
    "(entry embed (dims V D N) (params (t (tensor f32 (V D) host)) (i (tensor i64 (N) host))) (returns (tensor f32 (N D) host))\n"
    "  (index-checks (site 1 gather \"a \\\"b\\\".sml:12:15\" 1 \"i\") (site 2 take_along_axis \"m.sml:3:4\" 3 \"\")))";
}  // namespace

TEST(Manifest, IndexChecks) {
  // abi 2: the sites of the error record (docs/design/index-checks.md).
  auto r = parse_manifest("(shapeml-module (abi 2) (name m)\n" + kEmbed + ")", "test.so");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const EntrySig& e = r->entries.at(0);
  ASSERT_EQ(e.index_sites.size(), 2u);
  EXPECT_EQ(e.index_sites[0].op, "gather");
  EXPECT_EQ(e.index_sites[0].location, "a \"b\".sml:12:15");
  EXPECT_EQ(e.index_sites[0].operand, "i");
  EXPECT_EQ(e.index_sites[1].rank, 3u);
  EXPECT_EQ(e.index_sites[1].operand, "");
  EXPECT_EQ(e.error_record_size(), 6u);  // site, index, bound + 3 coordinates
  // No sites: no record (zero cost).
  auto plain = parse_manifest("(shapeml-module (abi 2) (name m) (entry f (dims N) (params (x (tensor f32 (N) host))) "
                              "(returns (tensor f32 (N) host))))",
                              "test.so");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->entries.at(0).error_record_size(), 0u);
  // An abi-1 module has no index checks; sites must be numbered in order.
  auto old = parse_manifest("(shapeml-module (abi 1) (name m)\n" + kEmbed + ")", "test.so");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("needs (abi 2)"), std::string::npos) << old.status().message();
  auto gap = parse_manifest("(shapeml-module (abi 2) (name m) (entry f (dims N) (params (x (tensor i64 (N) host))) "
                            "(returns (tensor i64 (N) host)) (index-checks (site 2 gather \"m:1:1\" 1 \"x\"))))",
                            "test.so");
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.status().message().find("numbered 1, 2, ..."), std::string::npos) << gap.status().message();
  auto bad = parse_manifest("(shapeml-module (abi 2) (name m) (entry f (dims N) (params (x (tensor i64 (N) host))) "
                            "(returns (tensor i64 (N) host)) (index-checks (site 1 gather \"m:1:1\" -1 \"x\"))))",
                            "test.so");
  EXPECT_FALSE(bad.ok());
}

// (module-id ...) (0.4; docs/design/observability.md): optional, one atom.
TEST(Manifest, ModuleId) {
  auto r = parse("(module-id m-0123456789abcdef)");
  ASSERT_TRUE(r.ok()) << r.status().str();
  EXPECT_EQ(r->module_id, "m-0123456789abcdef");
  auto none = parse("");
  ASSERT_TRUE(none.ok()) << none.status().str();
  EXPECT_EQ(none->module_id, "");
  expect_error("(module-id)", "expected (module-id ID)");
  expect_error("(module-id a b)", "expected (module-id ID)");
}

// A generic entry (spec §3.5): its dtype and device variables, the types that
// name them, specializations that bind them by name; an instance per binding
// with the types substituted, host or device as the bound device says, and
// only the specializations of that binding.
TEST(Manifest, GenericEntriesAndTheirInstances) {
  auto r = parse(R"((entry norm (dtypes (T f32 bf16)) (devices Dv) (dims N)
    (params (x (tensor T (N) Dv)) (i (tensor i64 (N) Dv))) (returns (tensor T (N) Dv))
    (specialization (bind (T bf16) (Dv cuda0) (N 4)) (symbol p0) (kind gpu-plan))
    (specialization (bind (T f32) (Dv host) (N 4)) (symbol c0))))");
  ASSERT_TRUE(r.ok()) << r.status().str();
  const EntrySig& e = r->entries.at(0);
  EXPECT_TRUE(e.generic());
  EXPECT_FALSE(e.device);
  EXPECT_EQ(e.params[0].type.str(), "(tensor T (N) Dv)");
  ASSERT_EQ(e.specializations.size(), 2u);
  EXPECT_EQ(binding_str(e, e.specializations[0].bind), "T=bf16 Dv=cuda0 N=4");

  using shapeml::types::DType;
  using shapeml::types::Device;
  auto tb = bind_type_variables(
      e, 2, [](size_t i) { return i == 0 ? DType::BF16 : DType::I64; }, [](size_t) { return Device::cuda(0); });
  ASSERT_TRUE(tb.ok()) << tb.status().str();
  auto gpu = instantiate_entry(e, *tb);
  ASSERT_TRUE(gpu.ok()) << gpu.status().str();
  EXPECT_FALSE(gpu->generic());
  EXPECT_TRUE(gpu->device);
  EXPECT_EQ(gpu->params[0].type.str(), "(tensor bf16 (N) (cuda 0))");
  EXPECT_EQ(gpu->params[1].type.str(), "(tensor i64 (N) (cuda 0))");
  ASSERT_EQ(gpu->specializations.size(), 1u);
  EXPECT_EQ(gpu->specializations[0].symbol, "p0");
  // Its bindings carry the dtype and device values; check_binding wants them.
  Binding full = gpu->type_bind;
  full["N"] = 4;
  EXPECT_TRUE(check_binding(*gpu, full).ok());
  full.erase("T");
  EXPECT_FALSE(check_binding(*gpu, full).ok());

  auto host = instantiate_entry(e, *bind_type_variables(
                                       e, 2, [](size_t i) { return i == 0 ? DType::F32 : DType::I64; }, [](size_t) { return Device::host(); }));
  ASSERT_TRUE(host.ok());
  EXPECT_FALSE(host->device);
  ASSERT_EQ(host->specializations.size(), 1u);
  EXPECT_EQ(host->specializations[0].symbol, "c0");

  // f64 is not among T's dtypes: refused, naming the input and the set.
  auto bad = bind_type_variables(
      e, 2, [](size_t i) { return i == 0 ? DType::F64 : DType::I64; }, [](size_t) { return Device::host(); });
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("input 0 (`x`) has dtype f64, which dtype variable T"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("(f32 bf16)"), std::string::npos) << bad.status().message();
}

TEST(Manifest, GenericEntryErrors) {
  expect_error("(entry f (dtypes (T f32)) (dims N) (params (x (tensor U (N) host))) (returns (tensor T (N) host)))", "expected a dtype");
  expect_error("(entry f (dtypes (T f32)) (dims N) (params (x (tensor f32 (N) host))) (returns (tensor T (N) host)))",
               "dtype variable `T` of entry `f` is the dtype of no parameter");
  expect_error("(entry f (dtypes (T f32)) (dims N) (params (x (tensor T (N) host))) (returns (tensor T (N) host))"
               " (specialization (bind (T bf16) (N 2)) (symbol s)))",
               "`bf16` is not a value of `T`");
  expect_error("(entry f (dtypes (T f32)) (dims N) (params (x (tensor T (N) host))) (returns (tensor T (N) host))"
               " (specialization (bind (N 2)) (symbol s)))",
               "does not bind dtype variable `T`");
  expect_error("(entry f (dims N) (params (x (tensor f32 (N) host))) (dtypes (T f32)) (returns (tensor f32 (N) host)))",
               "must come before the entry's params");
}
