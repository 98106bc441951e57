// Elementwise fusion (src/lower/gpu/fuse_elementwise.h,
// docs/design/gpu-fusion.md) on hand-built plans and on the planner's plan of
// the transformer block: which groups fuse, which must not, the program
// encoding, the text round trip and the re-laid-out workspace. Runs without a
// GPU (tests/cuda/fusion_test.cpp runs fused against unfused plans on one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "plan/fused_program.h"
#include "plan/plan.h"
#include "driver/frontend.h"
#include "lower/gpu/fuse_elementwise.h"
#include "lower/gpu/plan_gpu.h"
#include "plan/verify.h"
#include "concrete_block.h"

namespace plan = shapeml::plan;

using shapeml::plan::GpuDType;
using shapeml::plan::GpuLaunch;
using shapeml::plan::GpuPlan;
using shapeml::plan::GpuSlot;
using shapeml::lower::gpu::fuse_elementwise;
namespace F = shapeml::plan::fused;

namespace {

// A plan under construction; temps get disjoint offsets (the pass lays the
// workspace out again anyway).
struct Builder {
  GpuPlan p;
  Builder() { p.entry = "t"; }
  int32_t slot(GpuSlot::Kind k, int32_t index, GpuDType dt, std::vector<int64_t> shape) {
    GpuSlot s;
    s.kind = k;
    if (k == GpuSlot::Kind::View) s.alias = index;
    else s.index = index;
    s.dtype = dt;
    s.shape = std::move(shape);
    if (k == GpuSlot::Kind::Input) p.num_inputs = std::max(p.num_inputs, index + 1);
    if (k == GpuSlot::Kind::Output) p.num_outputs = std::max(p.num_outputs, index + 1);
    if (k == GpuSlot::Kind::Temp) {
      s.offset = p.workspace_bytes;
      p.workspace_bytes += (s.bytes() + 255) / 256 * 256;
    }
    p.slots.push_back(std::move(s));
    return static_cast<int32_t>(p.slots.size() - 1);
  }
  int32_t in(int32_t i, std::vector<int64_t> s, GpuDType dt = GpuDType::F32) { return slot(GpuSlot::Kind::Input, i, dt, std::move(s)); }
  int32_t out(int32_t i, std::vector<int64_t> s, GpuDType dt = GpuDType::F32) { return slot(GpuSlot::Kind::Output, i, dt, std::move(s)); }
  int32_t temp(std::vector<int64_t> s, GpuDType dt = GpuDType::F32) { return slot(GpuSlot::Kind::Temp, 0, dt, std::move(s)); }
  void launch(const std::string& kernel, const std::string& op, std::vector<int32_t> ins, int32_t o, std::vector<int64_t> ints = {}, double scalar = 0) {
    GpuLaunch l;
    l.kind = plan::parse_launch_kind(kernel).value();
    l.op = op;
    l.inputs = std::move(ins);
    l.outputs = {o};
    l.ints = std::move(ints);
    l.scalar = scalar;
    p.launches.push_back(std::move(l));
  }
  // A temp written by `kernel op` of `ins`.
  int32_t op(const std::string& kernel, const std::string& op, std::vector<int32_t> ins, std::vector<int64_t> shape, GpuDType dt = GpuDType::F32,
             std::vector<int64_t> ints = {}, double scalar = 0) {
    int32_t t = temp(std::move(shape), dt);
    launch(kernel, op, std::move(ins), t, std::move(ints), scalar);
    return t;
  }
};

int count(const GpuPlan& p, const std::string& kernel) {
  return static_cast<int>(std::count_if(p.launches.begin(), p.launches.end(), [&](const GpuLaunch& l) { return l.kind == plan::parse_launch_kind(kernel).value(); }));
}

std::vector<F::Node> program(const GpuLaunch& l) {
  std::vector<F::Node> nodes;
  EXPECT_EQ(F::decode(l.ints, nodes), "");
  return nodes;
}

// The invariants every fused plan keeps: it validates, its text round-trips,
// and no two temps alive at the same launch share bytes.
void expect_sound(const GpuPlan& p) {
  ASSERT_EQ(shapeml::plan::verify_message(p), "") << p.to_text();
  std::string err;
  auto q = GpuPlan::parse(p.to_text(), err);
  ASSERT_TRUE(q) << err << "\n" << p.to_text();
  EXPECT_EQ(q->to_text(), p.to_text());
  size_t n = p.slots.size();
  std::vector<int64_t> def(n, -1), last(n, -1);
  auto root = [&](int32_t s) {
    while (p.slots[static_cast<size_t>(s)].kind == GpuSlot::Kind::View) s = p.slots[static_cast<size_t>(s)].alias;
    return static_cast<size_t>(s);
  };
  for (size_t j = 0; j < p.launches.size(); ++j) {
    for (int32_t s : p.launches[j].outputs) def[root(s)] = static_cast<int64_t>(j), last[root(s)] = std::max<int64_t>(last[root(s)], static_cast<int64_t>(j));
    for (int32_t s : p.launches[j].inputs) {
      EXPECT_GE(def[root(s)] < 0 && p.slots[root(s)].kind == GpuSlot::Kind::Temp ? -1 : 0, 0) << "launch " << j << " reads temp " << s << " before it is written";
      last[root(s)] = std::max<int64_t>(last[root(s)], static_cast<int64_t>(j));
    }
  }
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b) {
      const GpuSlot &x = p.slots[a], &y = p.slots[b];
      if (x.kind != GpuSlot::Kind::Temp || y.kind != GpuSlot::Kind::Temp || def[a] < 0 || def[b] < 0) continue;
      bool live_together = !(last[a] < def[b] || last[b] < def[a]);
      bool overlap = x.offset < y.offset + y.bytes() && y.offset < x.offset + x.bytes();
      EXPECT_FALSE(live_together && overlap) << "temps " << a << " and " << b << " overlap while both are live\n" << p.to_text();
    }
}




}  // namespace

// rmsnorm's tail: (mul (mul x (rsqrt (add ms eps))) g) with eps a rank-0 fill:
// one launch, the fill an immediate, the temps gone, the output in place.
TEST(GpuFusion, RmsnormTailBecomesOneLaunchWithAnImmediate) {
  Builder b;
  int32_t x = b.in(0, {4, 8}), ms = b.in(1, {4, 1}), g = b.in(2, {8});
  int32_t eps = b.op("fill", "", {}, {}, GpuDType::F32, {}, 1e-5);
  int32_t a = b.op("binary", "add", {ms, eps}, {4, 1});
  int32_t r = b.op("unary", "rsqrt", {a}, {4, 1});
  int32_t m = b.op("binary", "mul", {x, r}, {4, 8});
  int32_t o = b.out(0, {4, 8});
  b.launch("binary", "mul", {m, g}, o);
  ASSERT_EQ(shapeml::plan::verify_message(b.p), "");
  GpuPlan f = fuse_elementwise(b.p);
  expect_sound(f);
  ASSERT_EQ(f.launches.size(), 1u) << f.to_text();
  const GpuLaunch& l = f.launches[0];
  EXPECT_EQ(l.kind, plan::LaunchKind::Fused);
  EXPECT_EQ(l.why, "fused: fill add rsqrt mul mul (5 launches -> 1)");
  EXPECT_EQ(f.slots[static_cast<size_t>(l.outputs[0])].kind, GpuSlot::Kind::Output);
  EXPECT_EQ(l.inputs.size(), 3u);  // ms, x, g: each loaded once
  EXPECT_EQ(f.workspace_bytes, 0);  // every temp was an intermediate
  std::vector<F::Node> n = program(l);
  ASSERT_EQ(n.size(), 8u);
  EXPECT_EQ(n[1].kind, F::kConst);
  EXPECT_EQ(F::bits_double(n[1].a), 1e-5);
  EXPECT_EQ(n.back().kind, F::kBinary);
  EXPECT_EQ(n.back().op, F::op_number(F::kBinary, "mul"));
}

// The causal mask: iota, iota -> ge -> select(., scores * rsqrt(Dh), -inf),
// the [S S] mask broadcast over [B H S S]; iota axes move to the output's
// coordinates.
TEST(GpuFusion, CausalMaskWithIotasFusesIntoOneLaunch) {
  Builder b;
  int32_t scores = b.in(0, {2, 3, 5, 5});
  int32_t dh = b.op("fill", "", {}, {}, GpuDType::F32, {}, 64);
  int32_t c = b.op("unary", "rsqrt", {dh}, {});
  int32_t s = b.op("binary", "mul", {scores, c}, {2, 3, 5, 5});
  int32_t i0 = b.op("iota", "", {}, {5, 5}, GpuDType::I32, {0});
  int32_t i1 = b.op("iota", "", {}, {5, 5}, GpuDType::I32, {1});
  int32_t ge = b.op("compare", "ge", {i0, i1}, {5, 5}, GpuDType::Bool);
  int32_t ninf = b.op("fill", "", {}, {}, GpuDType::F32, {}, -INFINITY);
  int32_t o = b.out(0, {2, 3, 5, 5});
  b.launch("select", "", {ge, s, ninf}, o);
  GpuPlan f = fuse_elementwise(b.p);
  expect_sound(f);
  ASSERT_EQ(f.launches.size(), 1u) << f.to_text();
  EXPECT_EQ(f.launches[0].why, "fused: fill rsqrt mul iota iota ge fill select (8 launches -> 1)");
  std::vector<int64_t> axes;
  for (const F::Node& n : program(f.launches[0]))
    if (n.kind == F::kIota) axes.push_back(n.a);
  EXPECT_EQ(axes, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.launches[0].inputs, (std::vector<int32_t>{scores}));
}

// A value read later outside the group stays a buffer (its producer is its
// own group's root), and an output slot is never absorbed.
TEST(GpuFusion, ValuesReadOutsideTheGroupAndOutputsStay) {
  Builder b;
  int32_t x = b.in(0, {16});
  int32_t e = b.op("unary", "exp", {x}, {16});
  int32_t t = b.op("unary", "tanh", {e}, {16});  // read by the add and by the reduce
  int32_t o0 = b.out(0, {16});
  b.launch("binary", "add", {t, x}, o0);  // an output, and read again below
  int32_t red = b.op("reduce", "sum", {t}, {}, GpuDType::F32, {0});
  int32_t o1 = b.out(1, {16});
  b.launch("binary", "mul", {o0, red}, o1);
  GpuPlan f = fuse_elementwise(b.p);
  expect_sound(f);
  // exp+tanh fuse (tanh's value stays: the reduce reads it); the add and
  // the last mul stay single (their operands are a kept temp and an output).
  ASSERT_EQ(f.launches.size(), 4u) << f.to_text();
  EXPECT_EQ(f.launches[0].kind, plan::LaunchKind::Fused);
  EXPECT_EQ(f.launches[0].why, "fused: exp tanh (2 launches -> 1)");
  EXPECT_EQ(f.launches[1].kind, plan::LaunchKind::Binary);
  EXPECT_EQ(f.launches[2].kind, plan::LaunchKind::Reduce);
  EXPECT_EQ(f.launches[3].kind, plan::LaunchKind::Binary);
  EXPECT_EQ(f.launches[3].inputs[0], f.launches[1].outputs[0]);  // the output is read, not recomputed
}

// A temp that a view aliases is never absorbed (the view's reader reads its bytes).
TEST(GpuFusion, ViewedTempsStay) {
  Builder b;
  int32_t x = b.in(0, {4, 4});
  int32_t e = b.op("unary", "exp", {x}, {4, 4});
  int32_t v = b.slot(GpuSlot::Kind::View, e, GpuDType::F32, {16});
  int32_t o0 = b.out(0, {4, 4});
  b.launch("unary", "neg", {e}, o0);
  int32_t o1 = b.out(1, {16});
  b.launch("unary", "abs", {v}, o1);
  GpuPlan f = fuse_elementwise(b.p);
  expect_sound(f);
  EXPECT_EQ(count(f, "fused"), 0) << f.to_text();
  EXPECT_EQ(f.launches.size(), 3u);
}

// Launches the executor would reject (operands that do not broadcast, pow of
// integers) and bf16 launches are left as they are.
TEST(GpuFusion, IllTypedNonBroadcastingAndBf16LaunchesAreNotFused) {
  {
    Builder b;
    int32_t x = b.in(0, {4, 3}), y = b.in(1, {4, 2});
    int32_t e = b.op("unary", "exp", {x}, {4, 3});
    int32_t o = b.out(0, {4, 3});
    b.launch("binary", "add", {e, y}, o);  // [4 2] does not broadcast to [4 3]
    GpuPlan f = fuse_elementwise(b.p);
    EXPECT_EQ(f.to_text(), b.p.to_text());
  }
  {
    Builder b;
    int32_t x = b.in(0, {8}, GpuDType::I32);
    int32_t n = b.op("unary", "neg", {x}, {8}, GpuDType::I32);
    int32_t o = b.out(0, {8}, GpuDType::I32);
    b.launch("binary", "pow", {n, x}, o);
    GpuPlan f = fuse_elementwise(b.p);
    EXPECT_EQ(f.to_text(), b.p.to_text());
  }
  {
    Builder b;
    int32_t x = b.in(0, {8}, GpuDType::BF16);
    int32_t e = b.op("unary", "exp", {x}, {8}, GpuDType::BF16);
    int32_t o = b.out(0, {8}, GpuDType::BF16);
    b.launch("unary", "neg", {e}, o);
    GpuPlan f = fuse_elementwise(b.p);
    EXPECT_EQ(f.to_text(), b.p.to_text());
  }
}

// Integer and bool nodes fuse (iota masks, casts), with each node's dtype.
TEST(GpuFusion, MixedDtypeChainsKeepEachNodesDtype) {
  Builder b;
  int32_t x = b.in(0, {6, 7}, GpuDType::F64);
  int32_t i = b.op("iota", "", {}, {6, 7}, GpuDType::I64, {-1});
  int32_t c = b.op("cast", "", {i}, {6, 7}, GpuDType::F64);
  int32_t gt = b.op("compare", "gt", {x, c}, {6, 7}, GpuDType::Bool);
  int32_t nt = b.op("unary", "not", {gt}, {6, 7}, GpuDType::Bool);
  int32_t o = b.out(0, {6, 7}, GpuDType::F64);
  b.launch("select", "", {nt, x, c}, o);
  GpuPlan f = fuse_elementwise(b.p);
  expect_sound(f);
  ASSERT_EQ(f.launches.size(), 1u) << f.to_text();
  std::vector<F::Node> n = program(f.launches[0]);
  std::vector<GpuDType> dts;
  for (const F::Node& k : n) dts.push_back(k.dtype);
  // iota, cast, load x, gt, not, select
  EXPECT_EQ(dts, (std::vector<GpuDType>{GpuDType::I64, GpuDType::F64, GpuDType::F64, GpuDType::Bool, GpuDType::Bool, GpuDType::F64}));
  EXPECT_EQ(n[0].kind, F::kIota);
  EXPECT_EQ(n[0].a, 1);  // axis -1 normalized
}

// A fill read by a launch that is not fused (a reduce here) keeps its launch;
// one read by two groups is inlined in both and dropped once.
TEST(GpuFusion, FillsAreDroppedOnlyWhenNothingElseReadsThem) {
  Builder b;
  int32_t x = b.in(0, {8});
  int32_t two = b.op("fill", "", {}, {8}, GpuDType::F32, {}, 2);
  int32_t m = b.op("binary", "mul", {x, two}, {8});
  int32_t e = b.op("unary", "exp", {m}, {8});
  int32_t red = b.op("reduce", "sum", {two}, {}, GpuDType::F32, {0});
  int32_t o0 = b.out(0, {8});
  b.launch("binary", "add", {e, red}, o0);
  GpuPlan f = fuse_elementwise(b.p);
  expect_sound(f);
  EXPECT_EQ(count(f, "fill"), 1) << f.to_text();
  ASSERT_EQ(f.launches.size(), 3u);  // fill, reduce, then mul exp add (the reduce's value loaded)
  EXPECT_EQ(f.launches[2].why, "fused: fill mul exp add (3 launches -> 1)");

  Builder c;
  int32_t y = c.in(0, {8});
  int32_t h = c.op("fill", "", {}, {}, GpuDType::F32, {}, 0.5);
  int32_t a1 = c.op("binary", "mul", {y, h}, {8});
  int32_t t1 = c.op("unary", "tanh", {a1}, {8});
  int32_t r1 = c.op("reduce", "max", {t1}, {}, GpuDType::F32, {0});
  int32_t a2 = c.op("binary", "add", {r1, h}, {1});
  int32_t o = c.out(0, {1});
  c.launch("unary", "exp", {a2}, o);
  GpuPlan g = fuse_elementwise(c.p);
  expect_sound(g);
  EXPECT_EQ(count(g, "fill"), 0) << g.to_text();
  EXPECT_EQ(count(g, "fused"), 2);
  EXPECT_EQ(g.launches.size(), 3u);
  // The dropped fill is counted once, by the first group.
  EXPECT_EQ(g.launches[0].why, "fused: fill mul tanh (3 launches -> 1)");
  EXPECT_EQ(g.launches[2].why, "fused: fill add exp (2 launches -> 1)");
}

// A lone launch whose fill stays (read elsewhere) is not rewritten: it would
// save no launch.
TEST(GpuFusion, NothingToSaveLeavesThePlanAsItIs) {
  Builder b;
  int32_t x = b.in(0, {8});
  int32_t h = b.op("fill", "", {}, {8}, GpuDType::F32, {}, 3);
  int32_t o0 = b.out(0, {8});
  b.launch("binary", "add", {x, h}, o0);
  int32_t o1 = b.out(1, {});
  b.launch("reduce", "sum", {h}, o1, {0});
  GpuPlan f = fuse_elementwise(b.p);
  EXPECT_EQ(f.to_text(), b.p.to_text());
}

// An iota of a size-1 axis that broadcasts is the constant 0 (not the
// output's index along that axis).
TEST(GpuFusion, BroadcastIotaOfASizeOneAxisIsZero) {
  Builder b;
  int32_t x = b.in(0, {3, 4}, GpuDType::I32);
  int32_t i = b.op("iota", "", {}, {1, 4}, GpuDType::I32, {0});
  int32_t o = b.out(0, {3, 4}, GpuDType::I32);
  b.launch("binary", "add", {x, i}, o);
  GpuPlan f = fuse_elementwise(b.p);
  expect_sound(f);
  ASSERT_EQ(f.launches.size(), 1u);
  std::vector<F::Node> n = program(f.launches[0]);
  EXPECT_EQ(n[1].kind, F::kConst);
  EXPECT_EQ(F::bits_double(n[1].a), 0.0);
}

// Long chains split at the caps: at most 32 nodes and 8 inputs a launch.
TEST(GpuFusion, CapsBoundEveryFusedLaunch) {
  Builder b;
  int32_t v = b.in(0, {32});
  for (int k = 0; k < 45; ++k) v = b.op("unary", k % 2 ? "neg" : "abs", {v}, {32});
  std::vector<int32_t> ins;
  for (int k = 1; k < 12; ++k) ins.push_back(b.in(k, {32}));
  for (int32_t in : ins) v = b.op("binary", "add", {v, in}, {32});
  int32_t o = b.out(0, {32});
  b.launch("unary", "exp", {v}, o);
  GpuPlan f = fuse_elementwise(b.p);
  expect_sound(f);
  EXPECT_LT(f.launches.size(), 6u) << f.to_text();
  EXPECT_EQ(count(f, "fused"), static_cast<int>(f.launches.size()));
  for (const GpuLaunch& l : f.launches) {
    EXPECT_LE(l.inputs.size(), 8u);
    EXPECT_LE(program(l).size(), 32u);
  }
}

// Plans the planner never makes (a slot written twice, a launch in place)
// come back unchanged.
TEST(GpuFusion, InPlacePlansAreLeftAlone) {
  Builder b;
  int32_t x = b.in(0, {8});
  int32_t t = b.op("unary", "exp", {x}, {8});
  b.launch("unary", "neg", {t}, t);
  int32_t o = b.out(0, {8});
  b.launch("unary", "abs", {t}, o);
  GpuPlan f = fuse_elementwise(b.p);
  EXPECT_EQ(f.to_text(), b.p.to_text());
}

TEST(GpuFusion, ValidateRejectsMalformedPrograms) {
  Builder b;
  int32_t x = b.in(0, {8});
  int32_t o = b.out(0, {8});
  b.launch("fused", "", {x}, o);
  auto set = [&](std::vector<F::Node> n) { b.p.launches[0].ints = F::encode(n); };
  F::Node ld{F::kLoad, -1, GpuDType::F32, 0, -1, -1};
  F::Node ex{F::kUnary, 2, GpuDType::F32, 0, -1, -1};
  set({ld, ex});
  EXPECT_EQ(shapeml::plan::verify_message(b.p), "");
  F::Node fwd{F::kUnary, 2, GpuDType::F32, 1, -1, -1};  // uses itself
  set({ld, fwd});
  EXPECT_NE(shapeml::plan::verify_message(b.p).find("operand"), std::string::npos);
  F::Node wrong{F::kLoad, -1, GpuDType::F64, 0, -1, -1};
  set({wrong});
  EXPECT_NE(shapeml::plan::verify_message(b.p), "");
  F::Node ipow{F::kBinary, 6, GpuDType::I32, 0, 0, -1};
  F::Node ldi{F::kLoad, -1, GpuDType::I32, 0, -1, -1};
  set({ldi, ipow});
  EXPECT_NE(shapeml::plan::verify_message(b.p), "");
  b.p.launches[0].ints = {2, 0, -1, 0, 0, -1, -1};  // truncated
  EXPECT_NE(shapeml::plan::verify_message(b.p).find("length"), std::string::npos);
  std::string err;
  set({ld, ex});
  EXPECT_TRUE(GpuPlan::parse(b.p.to_text(), err)) << err;
}

// The transformer block as the planner plans it: fewer launches, every
// fused launch legal and within the caps, the same outputs, and the option
// turns it off.
TEST(GpuFusion, TransformerBlockPlanLosesItsElementwiseLaunches) {
  auto r = concrete_block("f32");
  ASSERT_TRUE(r.module);
  std::string err;
  std::map<std::string, int64_t> bind{{"B", 4}, {"S", 128}, {"D", 256}, {"H", 4}, {"Dh", 64}, {"F", 704}};
  // The elementwise pass on the planner's own launches (pattern fusion,
  // fuse_patterns.h, off: it would take RMSNorm, the mask and SwiGLU first).
  shapeml::lower::gpu::PlanOptions off;
  off.fuse = false;
  off.fuse_patterns = false;
  auto unfused = shapeml::lower::gpu::plan_function(*r.module, "block", bind, err, off);
  ASSERT_TRUE(unfused) << err;
  shapeml::lower::gpu::PlanOptions on = off;
  on.fuse = true;
  on.generate_kernels = false;  // the pass's plan itself (generate_kernels_test.cpp: the generated one)
  auto fused = shapeml::lower::gpu::plan_function(*r.module, "block", bind, err, on);
  ASSERT_TRUE(fused) << err;
  // The default is off (measured slower: plan_gpu.h); the default plan's
  // pattern kernels leave it nothing to fuse.
  auto by_default = shapeml::lower::gpu::plan_function(*r.module, "block", bind, err);
  ASSERT_TRUE(by_default) << err;
  EXPECT_EQ(count(*by_default, "fused"), 0);
  EXPECT_EQ(fuse_elementwise(*by_default).to_text(), by_default->to_text());
  EXPECT_EQ(count(*unfused, "fused"), 0);
  EXPECT_EQ(unfused->launches.size(), 35u);
  EXPECT_EQ(fused->launches.size(), 22u) << fused->to_text();
  EXPECT_EQ(count(*fused, "fused"), 4);
  EXPECT_EQ(fuse_elementwise(*unfused).to_text(), fused->to_text());
  EXPECT_EQ(fuse_elementwise(*fused).to_text(), fused->to_text());  // nothing more to fuse
  expect_sound(*fused);
  EXPECT_TRUE(fused->graph);
  EXPECT_LE(fused->workspace_bytes, unfused->workspace_bytes);
  // The output keeps its number and kind; non-elementwise launches are untouched.
  for (const std::string k : {"matmul", "softmax", "reduce", "transpose", "copy"}) EXPECT_EQ(count(*fused, k), count(*unfused, k)) << k;
  bool rms = false, mask = false, swiglu = false;
  for (const GpuLaunch& l : fused->launches) {
    rms |= l.why == "fused: fill add rsqrt mul mul (5 launches -> 1)";
    // the 1/sqrt(Dh) scale is the scores GEMM's alpha (plan_gpu.cpp), so
    // the mask's group is the iotas, the compare and the select
    mask |= l.why == "fused: iota iota ge fill select (5 launches -> 1)";
    swiglu |= l.why == "fused: silu mul (2 launches -> 1)";
  }
  EXPECT_TRUE(rms && mask && swiglu) << fused->to_text();
}
