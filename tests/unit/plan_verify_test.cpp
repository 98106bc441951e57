// The plan verifier (src/plan/verify.h): every malformed launch is refused
// with a message naming the launch and the rule, every kernel limit is
// refused as over_limit (UNIMPLEMENTED at plan_create), and the workspace
// layout (src/plan/layout.h) never lets two live temps share bytes. No GPU:
// these run in CI. Plans are built by hand, so each case breaks one rule of
// an otherwise valid plan (the valid one is checked first).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/frontend.h"
#include "lower/gpu/plan_gpu.h"
#include "plan/attention_launch.h"
#include "plan/fused_program.h"
#include "plan/layout.h"
#include "plan/limits.h"
#include "plan/plan.h"
#include "plan/verify.h"

namespace plan = shapeml::plan;
using plan::GpuDType;
using plan::GpuLaunch;
using plan::GpuPlan;
using plan::GpuSlot;
using plan::LaunchKind;

namespace {

struct Builder {
  GpuPlan p;
  int32_t slot(GpuSlot::Kind k, int32_t index, GpuDType dt, std::vector<int64_t> shape) {
    GpuSlot s;
    s.kind = k;
    s.index = index;
    s.dtype = dt;
    s.shape = std::move(shape);
    if (k == GpuSlot::Kind::Input || k == GpuSlot::Kind::HostInput) p.num_inputs = std::max(p.num_inputs, index + 1);
    if (k == GpuSlot::Kind::Output || k == GpuSlot::Kind::HostOutput) p.num_outputs = std::max(p.num_outputs, index + 1);
    p.slots.push_back(std::move(s));
    return static_cast<int32_t>(p.slots.size() - 1);
  }
  int32_t in(std::vector<int64_t> s, GpuDType dt = GpuDType::F32) { return slot(GpuSlot::Kind::Input, p.num_inputs, dt, std::move(s)); }
  int32_t out(std::vector<int64_t> s, GpuDType dt = GpuDType::F32) { return slot(GpuSlot::Kind::Output, p.num_outputs, dt, std::move(s)); }
  int32_t temp(std::vector<int64_t> s, GpuDType dt = GpuDType::F32) { return slot(GpuSlot::Kind::Temp, 0, dt, std::move(s)); }
  GpuLaunch& launch(LaunchKind k, std::string op, std::vector<int32_t> ins, std::vector<int32_t> outs, std::vector<int64_t> ints = {}) {
    GpuLaunch l;
    l.kind = k;
    l.op = std::move(op);
    l.inputs = std::move(ins);
    l.outputs = std::move(outs);
    l.ints = std::move(ints);
    p.launches.push_back(std::move(l));
    return p.launches.back();
  }
  // The plan's defect after the layout, "" if none.
  std::string defect() {
    plan::layout_workspace(p);
    return plan::verify_message(p);
  }
  bool over_limit() {
    plan::layout_workspace(p);
    auto d = plan::verify_plan(p);
    return d && d->over_limit;
  }
};

// A one-launch plan of `k op` from inputs of `in_shapes` to one output.
Builder one(LaunchKind k, const std::string& op, std::vector<std::vector<int64_t>> in_shapes, std::vector<int64_t> out_shape,
            std::vector<int64_t> ints = {}, GpuDType dt = GpuDType::F32, GpuDType out_dt = GpuDType::F32) {
  Builder b;
  std::vector<int32_t> ins;
  for (auto& s : in_shapes) ins.push_back(b.in(s, dt));
  int32_t o = b.out(out_shape, out_dt);
  b.launch(k, op, ins, {o}, std::move(ints));
  return b;
}

#define EXPECT_DEFECT(builder, words)                                     \
  do {                                                                    \
    std::string d_ = (builder).defect();                                  \
    EXPECT_NE(d_.find(words), std::string::npos) << "defect: '" << d_ << "'"; \
  } while (0)

}  // namespace

TEST(PlanVerify, LaunchKindsRoundTripThroughTheirNames) {
  for (int i = 0; i <= static_cast<int>(LaunchKind::Tf32Split); ++i) {
    auto k = static_cast<LaunchKind>(i);
    auto back = plan::parse_launch_kind(plan::launch_kind_name(k));
    ASSERT_TRUE(back) << plan::launch_kind_name(k);
    EXPECT_EQ(*back, k);
  }
  EXPECT_FALSE(plan::parse_launch_kind("matmull"));
}

TEST(PlanVerify, ElementwiseRulesNameTheLaunch) {
  EXPECT_EQ(one(LaunchKind::Binary, "add", {{4, 8}, {8}}, {4, 8}).defect(), "");
  EXPECT_DEFECT(one(LaunchKind::Binary, "add", {{4, 8}, {3}}, {4, 8}), "launch 0 (binary add): operands [4 8] and [3] do not broadcast to [4 8]");
  EXPECT_DEFECT(one(LaunchKind::Binary, "addd", {{4}, {4}}, {4}), "unknown binary op `addd`");
  EXPECT_DEFECT(one(LaunchKind::Binary, "pow", {{4}, {4}}, {4}, {}, GpuDType::I32, GpuDType::I32), "`pow` does not take i32");
  EXPECT_DEFECT(one(LaunchKind::Binary, "mod", {{4}, {4}}, {4}), "`mod` does not take f32");
  EXPECT_DEFECT(one(LaunchKind::Binary, "and", {{4}, {4}}, {4}), "takes and gives bool");
  EXPECT_DEFECT(one(LaunchKind::Compare, "lt", {{4}, {4}}, {4}), "wrong output dtype");
  EXPECT_EQ(one(LaunchKind::Compare, "lt", {{4}, {4}}, {4}, {}, GpuDType::F32, GpuDType::Bool).defect(), "");
  EXPECT_DEFECT(one(LaunchKind::Unary, "exp", {{4}}, {4}, {}, GpuDType::I64, GpuDType::I64), "`exp` does not take i64");
  EXPECT_EQ(one(LaunchKind::Unary, "abs", {{4}}, {4}, {}, GpuDType::I64, GpuDType::I64).defect(), "");
  EXPECT_DEFECT(one(LaunchKind::Unary, "exp", {{4}}, {5}), "differ in dtype or shape");
  EXPECT_DEFECT(one(LaunchKind::Unary, "exp", {{4}, {4}}, {4}), "expects 1 input(s)");
  EXPECT_DEFECT(one(LaunchKind::Cast, "", {{4}}, {2, 2}), "shapes differ");
  EXPECT_DEFECT(one(LaunchKind::Iota, "", {}, {4}, {1}), "axis 1 out of range for rank 1");
  EXPECT_DEFECT(one(LaunchKind::Select, "", {{4}, {4}, {4}}, {4}), "the condition is not bool");
}

TEST(PlanVerify, ShapeRulesOfDataMovement) {
  EXPECT_EQ(one(LaunchKind::Transpose, "", {{2, 3, 4}}, {4, 2, 3}, {2, 0, 1}).defect(), "");
  EXPECT_DEFECT(one(LaunchKind::Transpose, "", {{2, 3, 4}}, {4, 2, 3}, {2, 0, 0}), "not a permutation");
  EXPECT_DEFECT(one(LaunchKind::Transpose, "", {{2, 3, 4}}, {4, 3, 2}, {2, 0, 1}), "not the permuted input shape");
  EXPECT_EQ(one(LaunchKind::Slice, "", {{6, 4}}, {2, 4}, {0, 4}).defect(), "");
  EXPECT_DEFECT(one(LaunchKind::Slice, "", {{6, 4}}, {2, 4}, {0, 5}), "slice out of range");
  EXPECT_DEFECT(one(LaunchKind::Slice, "", {{6, 4}}, {2, 4}, {0, -1}), "slice out of range");
  EXPECT_EQ(one(LaunchKind::Concat, "", {{2, 4}, {3, 4}}, {5, 4}, {0}).defect(), "");
  EXPECT_DEFECT(one(LaunchKind::Concat, "", {{2, 4}, {3, 4}}, {6, 4}, {0}), "do not add up");
  EXPECT_DEFECT(one(LaunchKind::Concat, "", {{2, 4}, {3, 5}}, {5, 4}, {0}), "differs off the axis");
  EXPECT_DEFECT(one(LaunchKind::Broadcast, "", {{3}}, {2, 4}), "[3] does not broadcast to [2 4]");
  EXPECT_DEFECT(one(LaunchKind::Repeat, "", {{2, 3}}, {2, 6}, {1, 0}), "repeats >= 1");
  EXPECT_DEFECT(one(LaunchKind::Repeat, "", {{2, 3}}, {2, 7}, {1, 2}), "output [2 7], expected [2 6]");
  EXPECT_DEFECT(one(LaunchKind::Copy, "", {{4}}, {5}), "sizes differ");
}

TEST(PlanVerify, Tf32SplitsTripleOneOfTheLastTwoAxesOfAnF32Operand) {
  EXPECT_EQ(one(LaunchKind::Tf32Split, "lhs", {{2, 5, 7}}, {2, 5, 21}, {2}).defect(), "");
  EXPECT_EQ(one(LaunchKind::Tf32Split, "rhs", {{2, 5, 7}}, {2, 15, 7}, {1}).defect(), "");
  EXPECT_DEFECT(one(LaunchKind::Tf32Split, "rhs", {{2, 5, 7}}, {6, 5, 7}, {0}), "one of its last two axes");
  EXPECT_DEFECT(one(LaunchKind::Tf32Split, "lhs", {{7}}, {21}, {0}), "rank >= 2");
  EXPECT_DEFECT(one(LaunchKind::Tf32Split, "lhs", {{5, 7}}, {5, 14}, {1}), "output [5 14], expected [5 21]");
  EXPECT_DEFECT(one(LaunchKind::Tf32Split, "mid", {{5, 7}}, {5, 21}, {1}), "op is lhs or rhs");
  EXPECT_DEFECT(one(LaunchKind::Tf32Split, "lhs", {{5, 7}}, {5, 21}, {1}, GpuDType::BF16, GpuDType::BF16), "takes and gives f32");
  EXPECT_DEFECT(one(LaunchKind::Tf32Split, "lhs", {{5, 7}, {5, 7}}, {5, 21}, {1}), "expects 1 input(s)");
}

TEST(PlanVerify, ReductionsSoftmaxAndRowKernels) {
  EXPECT_EQ(one(LaunchKind::Reduce, "sum", {{4, 8}}, {4}, {1}).defect(), "");
  EXPECT_DEFECT(one(LaunchKind::Reduce, "sum", {{4, 8}}, {4, 1}, {1}), "output shape [4 1], expected [4]");
  EXPECT_DEFECT(one(LaunchKind::Reduce, "sum", {{4, 8}}, {}, {1, -1}), "bad or repeated reduction axis");
  EXPECT_DEFECT(one(LaunchKind::Reduce, "mean", {{4}}, {}, {0}, GpuDType::I32, GpuDType::I32), "`mean` does not take i32");
  EXPECT_DEFECT(one(LaunchKind::Softmax, "softmax", {{4, 8}}, {4, 8}, {2}), "axis 2 out of range");
  {
    Builder b = one(LaunchKind::Softmax, "softmax", {{4, 8}}, {4, 8}, {0, 0});
    b.p.launches[0].flag = true;  // causal over the first axis
    EXPECT_DEFECT(b, "causal softmax runs over the last axis");
  }
  {
    Builder b = one(LaunchKind::RmsNorm, "", {{4, 8}, {8}}, {4, 8});
    b.p.launches[0].scalar = 1e-6;
    EXPECT_EQ(b.defect(), "");
    b.p.launches[0].scalar = -1;
    EXPECT_DEFECT(b, "eps must be finite and >= 0");
  }
  EXPECT_DEFECT(one(LaunchKind::RmsNorm, "", {{4, 8}, {4}}, {4, 8}), "the scale must be a vector of the last dimension 8");
  EXPECT_DEFECT(one(LaunchKind::Gated, "softplus", {{4}, {4}}, {4}), "unknown gate activation");
  EXPECT_DEFECT(one(LaunchKind::Scan, "", {{4}}, {4}, {}), "cumsum needs ints = {axis}");
}

TEST(PlanVerify, MatmulSizesEpiloguesAndBatchBroadcast) {
  EXPECT_EQ(one(LaunchKind::Matmul, "", {{2, 3, 4}, {4, 5}}, {2, 3, 5}).defect(), "");
  EXPECT_DEFECT(one(LaunchKind::Matmul, "", {{2, 3, 4}, {3, 5}}, {2, 3, 5}), "inner dimensions differ");
  EXPECT_DEFECT(one(LaunchKind::Matmul, "", {{2, 3, 4}, {3, 4, 5}}, {2, 3, 5}), "batch dimensions do not broadcast");
  EXPECT_DEFECT(one(LaunchKind::Matmul, "", {{3, 4}, {4, 5}}, {3, 6}), "output shape [3 6], expected [3 5]");
  EXPECT_EQ(one(LaunchKind::Matmul, "", {{4, 3}, {4, 5}}, {3, 5}, {1, 0}).defect(), "");  // A stored transposed
  EXPECT_DEFECT(one(LaunchKind::Matmul, "", {{3, 4}, {4, 5}}, {3, 5}, {1, 0}, GpuDType::I32, GpuDType::I32), "transposed operands need a floating dtype");
  EXPECT_DEFECT(one(LaunchKind::Matmul, "fp8", {{3, 4}, {4, 5}}, {3, 5}), "unknown matmul op `fp8`");
  EXPECT_EQ(one(LaunchKind::Matmul, "", {{3, 4}, {4, 5}, {5}}, {3, 5}).defect(), "");  // bias
  EXPECT_DEFECT(one(LaunchKind::Matmul, "", {{3, 4}, {4, 5}, {3}}, {3, 5}), "a fused bias must be a vector of the output's last dimension");
  {
    Builder b = one(LaunchKind::Matmul, "", {{3, 4}, {4, 5}, {3, 5}}, {3, 5});
    b.p.launches[0].flag = true;  // residual
    EXPECT_EQ(b.defect(), "");
    b.p.launches[0].scalar = 0.5;
    EXPECT_EQ(b.defect(), "");
  }
  {
    Builder b = one(LaunchKind::Matmul, "", {{3, 4}, {4, 5}}, {3, 5}, {}, GpuDType::I64, GpuDType::I64);
    b.p.launches[0].scalar = 0.5;
    EXPECT_DEFECT(b, "alpha) needs a floating dtype");
  }
}

TEST(PlanVerify, IndexLaunchesNeedTheirBoundsCheckRecord) {
  Builder b;
  int32_t table = b.in({10, 4});
  int32_t idx = b.in({3}, GpuDType::I32);
  int32_t o = b.out({3, 4});
  int32_t rec = b.temp({1}, GpuDType::I64);
  b.launch(LaunchKind::Gather, "", {table, idx}, {o, rec});
  EXPECT_EQ(b.defect(), "");
  b.p.slots[static_cast<size_t>(rec)].dtype = GpuDType::I32;
  EXPECT_DEFECT(b, "bounds-check record must be a temp i64 slot");
  b.p.slots[static_cast<size_t>(rec)].dtype = GpuDType::I64;
  b.p.slots[static_cast<size_t>(idx)].dtype = GpuDType::F32;
  EXPECT_DEFECT(b, "indices must be i32 or i64");
  // An index launch blocks graph replay: the call reads its record.
  b.p.slots[static_cast<size_t>(idx)].dtype = GpuDType::I64;
  EXPECT_NE(plan::graph_blocker(b.p).find("checks its indices"), std::string::npos);
  plan::decide_graph_replay(b.p, true);
  EXPECT_FALSE(b.p.graph);
  EXPECT_EQ(b.defect(), "");
  b.p.graph = true;
  EXPECT_DEFECT(b, "graph on, but the plan cannot be captured");
}

TEST(PlanVerify, OnlyACopyTouchesHostSlots) {
  Builder b;
  int32_t h = b.slot(GpuSlot::Kind::HostInput, 0, GpuDType::F32, {4});
  int32_t d = b.temp({4});
  int32_t o = b.out({4});
  b.launch(LaunchKind::Copy, "", {h}, {d});
  b.launch(LaunchKind::Unary, "exp", {d}, {o});
  EXPECT_EQ(b.defect(), "");
  b.p.launches[1].inputs = {h};
  EXPECT_DEFECT(b, "launch 1 (unary exp): slot 0 is a host slot");
}

TEST(PlanVerify, AttentionLayoutIsChecked) {
  // q, k, v, o as [B=1, H=2, S=4, Dh=8] bf16, dense.
  Builder b;
  int32_t q = b.in({1, 2, 4, 8}, GpuDType::BF16), k = b.in({1, 2, 4, 8}, GpuDType::BF16), v = b.in({1, 2, 4, 8}, GpuDType::BF16);
  int32_t o = b.out({1, 2, 4, 8}, GpuDType::BF16);
  plan::AttentionLayout a;
  a.batch = 1, a.heads = 2, a.group = 1, a.sq = 4, a.sk = 4, a.dh = 8;
  for (plan::AttentionAccess* x : {&a.q, &a.k, &a.v, &a.o}) *x = {0, 64, 32, 8};
  b.launch(LaunchKind::Attention, "", {q, k, v}, {o}, a.to_ints()).scalar = 0.35;
  EXPECT_EQ(b.defect(), "");
  a.o.row = 9;  // the last row reaches past the output
  b.p.launches[0].ints = a.to_ints();
  EXPECT_DEFECT(b, "o's strided access reaches outside its slot");
  a.o.row = 8;
  a.dh = plan::kAttentionMaxHeadDim + 8;
  b.p.launches[0].ints = a.to_ints();
  EXPECT_DEFECT(b, "head dimension");
}

TEST(PlanVerify, KernelLimitsAreOverLimitNotMalformed) {
  // Nine dims that cannot merge (every other one broadcast): over the
  // coalesced rank the strided kernels take.
  std::vector<int64_t> out_shape(static_cast<size_t>(plan::kMaxRank) + 1, 2), alternate;
  for (size_t i = 0; i < out_shape.size(); ++i) alternate.push_back(i % 2 ? 2 : 1);
  Builder deep = one(LaunchKind::Binary, "add", {out_shape, alternate}, out_shape);
  EXPECT_DEFECT(deep, "more than 8 dimensions after coalescing");
  EXPECT_TRUE(deep.over_limit());
  // The same rank with both operands dense coalesces to one dim: fine.
  EXPECT_EQ(one(LaunchKind::Binary, "add", {out_shape, out_shape}, out_shape).defect(), "");

  // A transpose group of more than kMaxCopyGroup pairs.
  Builder group;
  std::vector<int32_t> ins, outs;
  for (int i = 0; i <= plan::kMaxCopyGroup; ++i) ins.push_back(group.in({2, 3})), outs.push_back(group.out({3, 2}));
  group.launch(LaunchKind::Transpose, "", ins, outs, {1, 0});
  EXPECT_DEFECT(group, "a transpose group has 2 to 4 inputs");

  // A fused launch with more inputs than the kernel's parameter block holds.
  Builder wide;
  std::vector<int32_t> many;
  for (int i = 0; i <= plan::fused::kMaxInputs; ++i) many.push_back(wide.in({4}));
  std::vector<plan::fused::Node> prog(1);
  prog[0].kind = plan::fused::kLoad, prog[0].a = 0;
  wide.launch(LaunchKind::Fused, "", many, {wide.out({4})}, plan::fused::encode(prog));
  EXPECT_DEFECT(wide, "more than 8 inputs");
  EXPECT_TRUE(wide.over_limit());

  // A broadcast of batch dimensions that takes more than kMaxGemmPieces GEMMs:
  // A [300, 1, 300, 2, 2], B [300, 300, 1, 2, 2] alternate their broadcast
  // dims, so only the innermost batch dim is one strided batch.
  Builder gemms = one(LaunchKind::Matmul, "", {{300, 1, 300, 2, 2}, {300, 300, 1, 2, 2}}, {300, 300, 300, 2, 2});
  EXPECT_DEFECT(gemms, "more than 65536 separate GEMMs");
  EXPECT_TRUE(gemms.over_limit());
}

TEST(PlanVerify, SlotRangesBeforeAndAfterTheLayout) {
  Builder b;
  int32_t x = b.in({64});
  int32_t t = b.temp({64});
  int32_t o = b.out({64});
  b.launch(LaunchKind::Unary, "exp", {x}, {t});
  b.launch(LaunchKind::Unary, "exp", {t}, {o});
  // Before the layout a temp has no place yet: only the stage that says so accepts it.
  b.p.slots[static_cast<size_t>(t)].offset = 1 << 20;
  EXPECT_FALSE(plan::verify_plan(b.p, plan::PlanStage::BeforeLayout));
  auto laid = plan::verify_plan(b.p, plan::PlanStage::LaidOut);
  ASSERT_TRUE(laid);
  EXPECT_NE(laid->message.find("slot 1 (temp): outside the workspace"), std::string::npos) << laid->message;
  EXPECT_EQ(b.defect(), "");  // layout_workspace places it
  b.p.launches[0].outputs = {7};
  EXPECT_NE(plan::verify_message(b.p).find("launch 0 (unary exp): output slot out of range"), std::string::npos) << plan::verify_message(b.p);
}

// An empty slot holds no bytes, but the geometry still forms its dense
// strides and stride x dimension products: dimensions whose product (zeros
// taken as 1) wraps 64 bits are refused before any launch rule runs them.
TEST(PlanVerify, EmptySlotsWhoseStridesWouldWrapAreRefused) {
  const int64_t big = int64_t{1} << 40;
  EXPECT_EQ(one(LaunchKind::Binary, "add", {{0, big, 4}, {0, big, 4}}, {0, big, 4}).defect(), "");
  EXPECT_DEFECT(one(LaunchKind::Binary, "add", {{0, big, big}, {0, big, big}}, {0, big, big}), "slot 0 (input): the element count overflows 64 bits");
  EXPECT_DEFECT(one(LaunchKind::Unary, "exp", {{big, 0, big}}, {big, 0, big}), "the element count overflows 64 bits");
  // Each operand's batch fits; their broadcast [2^40 2^40] does not.
  EXPECT_DEFECT(one(LaunchKind::Matmul, "", {{big, 1, 0, 4}, {1, big, 4, 0}}, {0}), "the broadcast batch dimensions overflow 64 bits");
}

TEST(PlanLayout, LiveTempsNeverShareBytesAndDeadOnesDo) {
  // x -> t0 -> t1 -> t2 -> out, each temp read only by the next launch: t0
  // and t2 may share bytes (t0 is dead when t2 is written), t1 overlaps
  // neither its input t0 nor its reader's output t2.
  Builder b;
  int32_t x = b.in({100});
  int32_t t0 = b.temp({100}), t1 = b.temp({100}), t2 = b.temp({100});
  int32_t o = b.out({100});
  b.launch(LaunchKind::Unary, "exp", {x}, {t0});
  b.launch(LaunchKind::Unary, "exp", {t0}, {t1});
  b.launch(LaunchKind::Unary, "exp", {t1}, {t2});
  b.launch(LaunchKind::Unary, "exp", {t2}, {o});
  plan::layout_workspace(b.p);
  auto off = [&](int32_t s) { return b.p.slots[static_cast<size_t>(s)].offset; };
  EXPECT_EQ(off(t0) % 256, 0);
  EXPECT_NE(off(t0), off(t1));
  EXPECT_NE(off(t1), off(t2));
  EXPECT_EQ(off(t0), off(t2));
  EXPECT_EQ(b.p.workspace_bytes, 2 * 512);  // 400 bytes rounded to 512, two live at a time
  EXPECT_EQ(plan::verify_message(b.p), "");

  // A bounds-check record stays live to the end: nothing later reuses it.
  Builder g;
  int32_t table = g.in({10, 4});
  int32_t idx = g.in({3}, GpuDType::I32);
  int32_t rec = g.temp({1}, GpuDType::I64);
  int32_t gathered = g.temp({3, 4});
  int32_t later = g.temp({3, 4});
  int32_t out = g.out({3, 4});
  g.launch(LaunchKind::Gather, "", {table, idx}, {gathered, rec});
  g.launch(LaunchKind::Unary, "exp", {gathered}, {later});
  g.launch(LaunchKind::Unary, "exp", {later}, {out});
  plan::layout_workspace(g.p);
  int64_t r = g.p.slots[static_cast<size_t>(rec)].offset, l = g.p.slots[static_cast<size_t>(later)].offset;
  EXPECT_TRUE(r + 256 <= l || l + 256 <= r) << "the record at " << r << " and a later temp at " << l;
  EXPECT_EQ(plan::verify_message(g.p), "");
}

TEST(PlanVerify, TheCompilerReportsAProgramOverAKernelLimitAsUnsupportedNotInternal) {
  // x [2 2 2 2 2 2 2 2 2] * y [1 2 1 2 1 2 1 2 1]: nine dims that do not merge.
  std::string dims = "(2 2 2 2 2 2 2 2 2)", alt = "(1 2 1 2 1 2 1 2 1)";
  auto r = shapeml::driver::check_source(
      "t.sml", "(module m (func f (params (x (tensor f32 " + dims + " (cuda 0))) (y (tensor f32 " + alt + " (cuda 0))))"
               " (returns (tensor f32 " + dims + " (cuda 0))) (return (mul x y))))");
  ASSERT_TRUE(r.ok());
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {}, err);
  EXPECT_FALSE(p);
  EXPECT_EQ(err.rfind("internal", 0), std::string::npos) << err;
  EXPECT_NE(err.find("more than 8 dimensions after coalescing"), std::string::npos) << err;
  EXPECT_NE(err.find("not supported by the GPU back end"), std::string::npos) << err;  // UNIMPLEMENTED (jit::classify_compile_error)
}
