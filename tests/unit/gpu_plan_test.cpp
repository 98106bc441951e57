// The GPU lowering (typed IR -> dispatch plan) and the plan's text form.
// Expected values are derived by hand from the programs, not from shapeml.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "plan/attention_launch.h"
#include "plan/plan.h"
#include "driver/frontend.h"
#include "lower/gpu/plan_gpu.h"
#include "plan/verify.h"
#include "plan/layout.h"
#include "lower/gpu/split_fp32_matmuls.h"
#include "concrete_block.h"

namespace plan = shapeml::plan;

using shapeml::plan::GpuPlan;
using shapeml::plan::GpuSlot;

namespace {

shapeml::check::CheckResult checked(const std::string& src) {
  auto r = shapeml::driver::check_source("t.sml", src);
  EXPECT_TRUE(r.ok()) << (r.diags.all().empty() ? "" : r.diags.all()[0].message);
  return r;
}

const char* kMlp =
    "(module m (func mlp (dims B S D F)"
    " (params (x (tensor f32 (B S D) (cuda 0))) (w1 (tensor f32 (D F) (cuda 0))) (b1 (tensor f32 (F) (cuda 0)))"
    "         (w2 (tensor f32 (F D) (cuda 0))) (b2 (tensor f32 (D) (cuda 0))))"
    " (returns (tensor f32 (B S D) (cuda 0)))"
    " (let h (gelu (add (matmul x w1) b1))) (let y (add (matmul h w2) b2)) (return y)))";

}  // namespace

TEST(GpuPlan, MlpLowersToThreeLaunchesWithBiasEpiloguesAndTheResultInTheOutputBuffer) {
  auto r = checked(kMlp);
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "mlp", {{"B", 4}, {"S", 128}, {"D", 256}, {"F", 1024}}, err);
  ASSERT_TRUE(p) << err;
  // matmul+b1 (epilogue), gelu, matmul+b2 (epilogue): the adds are fused.
  ASSERT_EQ(p->launches.size(), 3u);
  EXPECT_EQ(p->launches[0].kind, plan::LaunchKind::Matmul);
  EXPECT_EQ(p->launches[0].library, "cublasLt");
  ASSERT_EQ(p->launches[0].inputs.size(), 3u);
  EXPECT_EQ(p->slots[p->launches[0].inputs[2]].kind, GpuSlot::Kind::Input);
  EXPECT_EQ(p->slots[p->launches[0].inputs[2]].index, 2);  // b1
  EXPECT_EQ(p->launches[1].op, "gelu");
  EXPECT_EQ(p->launches[2].kind, plan::LaunchKind::Matmul);
  ASSERT_EQ(p->launches[2].inputs.size(), 3u);
  EXPECT_EQ(p->slots[p->launches[2].inputs[2]].index, 4);  // b2
  // The last matmul writes straight into output 0: no copy launch.
  const GpuSlot& out = p->slots[p->launches[2].outputs[0]];
  EXPECT_EQ(out.kind, GpuSlot::Kind::Output);
  EXPECT_EQ(out.index, 0);
  EXPECT_EQ(out.shape, (std::vector<int64_t>{4, 128, 256}));
  // Two [4,128,1024] f32 temporaries (2 MiB each), both alive at the gelu.
  EXPECT_EQ(p->workspace_bytes, 2 * 4 * 128 * 1024 * 4);
  EXPECT_EQ(shapeml::plan::verify_message(*p), "");
}

TEST(GpuPlan, BiasIsNotFusedWhenTheProductIsUsedTwiceOrTheShapeDiffers) {
  auto r = checked(
      "(module m (func f (dims M K N) (params (a (tensor f32 (M K) (cuda 0))) (w (tensor f32 (K N) (cuda 0))) (b (tensor f32 (N) (cuda 0)))"
      "  (c (tensor f32 (M 1) (cuda 0))))"
      " (returns (tensor f32 (M N) (cuda 0)) (tensor f32 (M N) (cuda 0)))"
      " (let p (matmul a w)) (let q (add p b)) (let s (add (matmul a w) c)) (return (add q p) s)))");
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"M", 3}, {"K", 4}, {"N", 5}}, err);
  ASSERT_TRUE(p) << err;
  for (const auto& l : p->launches) {
    if (l.kind == plan::LaunchKind::Matmul) {
      EXPECT_EQ(l.inputs.size(), 2u) << "p is used twice; c is a column, not a bias of N";
    }
  }
}

TEST(GpuPlan, TextRoundTrips) {
  auto r = checked(kMlp);
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "mlp", {{"B", 2}, {"S", 3}, {"D", 5}, {"F", 7}}, err);
  ASSERT_TRUE(p) << err;
  std::string text = p->to_text();
  auto q = GpuPlan::parse(text, err);
  ASSERT_TRUE(q) << err;
  EXPECT_EQ(q->to_text(), text);
  EXPECT_EQ(q->binding.at("F"), 7);
  EXPECT_EQ(q->slots.size(), p->slots.size());
}

TEST(GpuPlan, ParseRejectsMalformedPlansWithTheLine) {
  std::string err;
  EXPECT_FALSE(GpuPlan::parse("", err));
  EXPECT_NE(err.find("empty"), std::string::npos);
  EXPECT_FALSE(GpuPlan::parse("slot 0 input 0 f32 1 4 offset 0\n", err));
  EXPECT_NE(err.find("line 1"), std::string::npos);
  std::string bad_slot =
      "gpu-plan f device 0 inputs 1 outputs 1 workspace 0\nbind 0\nslot 0 input 0 f32 1 4 offset 0\nslot 1 output 0 f32 1 4 offset 0\n"
      "launch unary exp shapeml in 1 0 out 1 7 ints 0 scalar 0 flag 0\n";
  EXPECT_FALSE(GpuPlan::parse(bad_slot, err));
  EXPECT_NE(err.find("output slot out of range"), std::string::npos) << err;
  std::string outside = "gpu-plan f device 0 inputs 0 outputs 0 workspace 256\nbind 0\nslot 0 temp 0 f32 1 100 offset 0\n";
  EXPECT_FALSE(GpuPlan::parse(outside, err));
  EXPECT_NE(err.find("outside the workspace"), std::string::npos) << err;
}

TEST(GpuPlan, ReshapeIsAViewAndAReturnedParameterIsCopied) {
  auto r = checked(
      "(module m (func f (dims N) (params (x (tensor f32 ((* 2 N)) (cuda 0))))"
      " (returns (tensor f32 (2 N) (cuda 0)) (tensor f32 ((* 2 N)) (cuda 0)))"
      " (let v (reshape x (2 N))) (return v x)))");
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"N", 3}}, err);
  ASSERT_TRUE(p) << err;
  // v is a view of the input: both results need a copy into their buffers.
  ASSERT_EQ(p->launches.size(), 2u);
  EXPECT_EQ(p->launches[0].kind, plan::LaunchKind::Copy);
  EXPECT_EQ(p->slots[p->launches[0].inputs[0]].kind, GpuSlot::Kind::View);
  EXPECT_EQ(p->slots[p->launches[0].outputs[0]].kind, GpuSlot::Kind::Output);
  EXPECT_EQ(p->workspace_bytes, 0);
}

TEST(GpuPlan, MixedPlacementCopiesAtTheBoundaryAndRejectsHostWork) {
  auto r = checked(
      "(module m (func f (dims N) (params (x (tensor f32 (N) host)))"
      " (returns (tensor f32 (N) host))"
      " (let d (copy_to_device x (cuda 0))) (let e (exp d)) (return (copy_to_host e))))");
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"N", 8}}, err);
  ASSERT_TRUE(p) << err;
  ASSERT_EQ(p->launches.size(), 3u);
  EXPECT_EQ(p->slots[p->launches[0].inputs[0]].kind, GpuSlot::Kind::HostInput);
  EXPECT_EQ(p->slots[p->launches[2].outputs[0]].kind, GpuSlot::Kind::HostOutput);
  auto h = checked(
      "(module m (func f (dims N) (params (x (tensor f32 (N) host)))"
      " (returns (tensor f32 (N) (cuda 0)))"
      " (let y (exp x)) (return (copy_to_device y (cuda 0)))))");
  EXPECT_FALSE(shapeml::lower::gpu::plan_function(*h.module, "f", {{"N", 8}}, err));
  EXPECT_NE(err.find("computes on the host inside a device entry"), std::string::npos) << err;
}

TEST(GpuPlan, WorkspaceNeverOverlapsLiveTemporaries) {
  // A chain with a long-lived value: a is read at the very end, so nothing
  // defined after it may share its bytes.
  auto r = checked(
      "(module m (func f (dims N) (params (x (tensor f32 (N) (cuda 0)))) (returns (tensor f32 (N) (cuda 0)))"
      " (let a (exp x)) (let b (exp a)) (let c (exp b)) (let d (exp c)) (let e (add d a)) (return e)))");
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"N", 1000}}, err);
  ASSERT_TRUE(p) << err;
  // Check every pair of temporaries alive at the same launch.
  std::vector<int64_t> def(p->slots.size(), -1), last(p->slots.size(), -1);
  for (size_t k = 0; k < p->launches.size(); ++k) {
    for (int s : p->launches[k].outputs) def[s] = static_cast<int64_t>(k);
    for (int s : p->launches[k].inputs) last[s] = static_cast<int64_t>(k);
  }
  for (size_t i = 0; i < p->slots.size(); ++i)
    for (size_t j = i + 1; j < p->slots.size(); ++j) {
      const auto &a = p->slots[i], &b = p->slots[j];
      if (a.kind != GpuSlot::Kind::Temp || b.kind != GpuSlot::Kind::Temp) continue;
      int64_t la = std::max(last[i], def[i]), lb = std::max(last[j], def[j]);
      bool live_together = !(la < def[j] || lb < def[i]);
      bool bytes_overlap = a.offset < b.offset + b.bytes() && b.offset < a.offset + a.bytes();
      EXPECT_FALSE(live_together && bytes_overlap) << "slots " << i << " and " << j;
    }
  EXPECT_LT(p->workspace_bytes, 4 * 1024 * 4);  // fewer than 4 buffers of 4000 bytes
}

namespace {

// Temporaries alive at the same launch never share bytes (a view counts as a
// read of what it aliases; a bounds-check record lives to the end).
void expect_no_live_overlap(const GpuPlan& p) {
  auto root = [&](int s) {
    while (p.slots[s].kind == GpuSlot::Kind::View) s = p.slots[s].alias;
    return s;
  };
  const int64_t n = static_cast<int64_t>(p.launches.size());
  std::vector<int64_t> def(p.slots.size(), -1), last(p.slots.size(), -1);
  for (int64_t k = 0; k < n; ++k) {
    const auto& l = p.launches[static_cast<size_t>(k)];
    for (int s : l.outputs)
      if (def[s] < 0) def[s] = k;
    for (int s : l.inputs) last[root(s)] = k;
    if (l.kind == plan::LaunchKind::Gather || l.kind == plan::LaunchKind::TakeAlong) last[l.outputs[1]] = n;
  }
  for (size_t i = 0; i < p.slots.size(); ++i)
    for (size_t j = i + 1; j < p.slots.size(); ++j) {
      const auto &a = p.slots[i], &b = p.slots[j];
      if (a.kind != GpuSlot::Kind::Temp || b.kind != GpuSlot::Kind::Temp) continue;
      int64_t la = std::max(last[i], def[i]), lb = std::max(last[j], def[j]);
      bool live_together = !(la < def[j] || lb < def[i]);
      bool bytes_overlap = a.offset < b.offset + b.bytes() && b.offset < a.offset + a.bytes();
      EXPECT_FALSE(live_together && bytes_overlap) << "slots " << i << " and " << j;
    }
}

// What every plan a pass makes must satisfy: the verifier accepts it, live
// temporaries never share bytes, and its text parses back to itself.
void expect_sound_plan(const GpuPlan& p) {
  EXPECT_EQ(shapeml::plan::verify_message(p), "");
  expect_no_live_overlap(p);
  std::string err;
  auto round = GpuPlan::parse(p.to_text(), err);
  ASSERT_TRUE(round) << err;
  EXPECT_EQ(round->to_text(), p.to_text());
}


}  // namespace

TEST(GpuPlan, TransposedOperandsAndResidualAddsFoldIntoTheGemm) {
  // (matmul q (transpose k)): cuBLASLt reads k transposed, no transpose
  // launch; (add h (matmul a w)) with h of the product's shape: C = h,
  // beta = 1; the reshaped result is written straight into the output.
  auto r = checked(
      "(module m (func f (dims M K N) (params (q (tensor f32 (2 M K) (cuda 0))) (k (tensor f32 (2 N K) (cuda 0))) (h (tensor f32 (2 M N) (cuda 0)))"
      "  (w (tensor f32 (N N) (cuda 0))))"
      " (returns (tensor f32 ((* 2 M) N) (cuda 0)))"
      " (let s (matmul q (transpose k))) (let y (add h (matmul s w))) (return (reshape y ((* 2 M) N)))))");
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"M", 3}, {"K", 4}, {"N", 5}}, err);
  ASSERT_TRUE(p) << err;
  ASSERT_EQ(p->launches.size(), 2u) << p->to_text();
  const auto& qk = p->launches[0];
  EXPECT_EQ(qk.kind, plan::LaunchKind::Matmul);
  EXPECT_EQ(qk.ints, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p->slots[qk.inputs[1]].kind, GpuSlot::Kind::Input);  // k itself
  EXPECT_EQ(p->slots[qk.inputs[1]].index, 1);
  const auto& res = p->launches[1];
  ASSERT_EQ(res.inputs.size(), 3u);
  EXPECT_TRUE(res.flag);
  EXPECT_EQ(p->slots[res.inputs[2]].index, 2);  // h
  EXPECT_EQ(p->slots[res.outputs[0]].kind, GpuSlot::Kind::Output);  // the view's root is the output buffer
  EXPECT_EQ(shapeml::plan::verify_message(*p), "");
  // Not folded: a transpose read twice, an integer matmul, an addend that broadcasts.
  auto r2 = checked(
      "(module m (func f (dims M K) (params (a (tensor f32 (M K) (cuda 0))) (b (tensor i32 (M K) (cuda 0))) (c (tensor f32 (M 1) (cuda 0))))"
      " (returns (tensor f32 (M M) (cuda 0)) (tensor f32 (K M) (cuda 0)) (tensor i32 (M M) (cuda 0)))"
      " (let t (transpose a)) (return (add c (matmul a t)) t (matmul b (transpose b)))))");
  auto p2 = shapeml::lower::gpu::plan_function(*r2.module, "f", {{"M", 3}, {"K", 4}}, err);
  ASSERT_TRUE(p2) << err;
  int transposes = 0;
  for (const auto& l : p2->launches) {
    transposes += l.kind == plan::LaunchKind::Transpose;
    if (l.kind == plan::LaunchKind::Matmul) {
      EXPECT_TRUE(l.ints.empty() || l.ints == (std::vector<int64_t>{0, 0})) << p2->to_text();
      EXPECT_EQ(l.inputs.size(), 2u);
    }
  }
  EXPECT_EQ(transposes, 2);
}

TEST(GpuPlan, TheTransformerBlockPlansWithTheNewOperations) {
  auto r = concrete_block("f32");
  std::string err;
  for (const char* entry : {"block", "block_gqa"}) {
    std::map<std::string, int64_t> b = {{"B", 2}, {"S", 16}, {"D", 32}, {"H", 4}, {"Dh", 8}, {"F", 48}};
    if (std::string(entry) == "block_gqa") b.insert({{"Hkv", 2}, {"G", 2}});
    // The planner's own launches: elementwise fusion (gpu_fusion_test.cpp)
    // would inline the dim_value fill as an immediate.
    shapeml::lower::gpu::PlanOptions unfused;
    unfused.fuse = false;
    unfused.fuse_attention = false;  // the chain itself (its fusion: TheF32BlockFusesShortAttention...)
    auto p = shapeml::lower::gpu::plan_function(*r.module, entry, b, err, unfused);
    ASSERT_TRUE(p) << entry << ": " << err;
    int softmax = 0, repeat = 0, matmul = 0, copy = 0, residual = 0;
    bool scaled = false;
    for (const auto& l : p->launches) {
      softmax += l.kind == plan::LaunchKind::Softmax;
      repeat += l.kind == plan::LaunchKind::Repeat;
      matmul += l.kind == plan::LaunchKind::Matmul;
      copy += l.kind == plan::LaunchKind::Copy;
      residual += l.kind == plan::LaunchKind::Matmul && l.flag;
      // rsqrt(dim_value Dh), folded to a constant, is the scores GEMM's alpha
      scaled |= l.kind == plan::LaunchKind::Matmul && l.scalar == static_cast<double>(1.0f / std::sqrt(8.0f));
    }
    EXPECT_EQ(softmax, 1) << entry;
    EXPECT_EQ(repeat, std::string(entry) == "block_gqa" ? 2 : 0) << entry;
    // q k v (one merged GEMM at these small sizes: merge_projections.h; GQA
    // merges k and v), scores, context, wo, gate up down
    EXPECT_EQ(matmul, std::string(entry) == "block_gqa" ? 8 : 7) << entry;
    EXPECT_EQ(residual, 2) << entry;
    EXPECT_EQ(copy, 0) << entry;
    EXPECT_TRUE(scaled) << entry;
    EXPECT_TRUE(p->graph) << entry;
    EXPECT_EQ(shapeml::plan::verify_message(*p), "");
    expect_no_live_overlap(*p);
  }
}

TEST(GpuPlan, IndexOperationsGetABoundsCheckRecordAndNoGraph) {
  auto r = checked(
      "(module m (func f (dims V D B T) (params (e (tensor f32 (V D) (cuda 0))) (ids (tensor i64 (B T) (cuda 0)))"
      "  (logits (tensor f32 (B T V) (cuda 0))))"
      " (returns (tensor f32 (B T D) (cuda 0)) (tensor f32 (B T) (cuda 0)))"
      " (return (gather e ids) (take_along_axis (log_softmax logits) ids))))");
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"V", 10}, {"D", 4}, {"B", 2}, {"T", 3}}, err);
  ASSERT_TRUE(p) << err;
  int checks = 0;
  for (const auto& l : p->launches) {
    if (l.kind != plan::LaunchKind::Gather && l.kind != plan::LaunchKind::TakeAlong) continue;
    ++checks;
    ASSERT_EQ(l.outputs.size(), 2u);
    const GpuSlot& rec = p->slots[l.outputs[1]];
    EXPECT_EQ(rec.kind, GpuSlot::Kind::Temp);
    EXPECT_EQ(rec.numel(), 1);
    EXPECT_NE(l.why.find("t.sml:1:"), std::string::npos) << l.why;  // the source location
  }
  EXPECT_EQ(checks, 2);
  EXPECT_FALSE(p->graph);
  EXPECT_NE(p->graph_why.find("checks its indices"), std::string::npos) << p->graph_why;
  expect_sound_plan(*p);
}

TEST(GpuPlan, ConstantScalarsFoldAndScaleTheGemm) {
  // (mul (matmul a b) (rsqrt (dim_value K f32))): the constant is computed at
  // plan time (1/sqrt(16) = 0.25) and becomes the GEMM's alpha; no launch is
  // left for the fill, the rsqrt or the mul. Not when the product is read
  // elsewhere, or the scale is a tensor.
  auto r = checked(
      "(module m (func f (dims M K N) (params (a (tensor f32 (M K) (cuda 0))) (b (tensor f32 (K N) (cuda 0))) (t (tensor f32 (N) (cuda 0))))"
      " (returns (tensor f32 (M N) (cuda 0)) (tensor f32 (M N) (cuda 0)) (tensor f32 (M N) (cuda 0)))"
      " (let p (matmul a b)) (let q (matmul a b))"
      " (return (mul p (rsqrt (dim_value K f32 (cuda 0)))) (mul q t) (add (mul (matmul a b) 2.0) (matmul a b)))))");
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"M", 3}, {"K", 16}, {"N", 5}}, err);
  ASSERT_TRUE(p) << err;
  int fills = 0, muls = 0, scaled = 0;
  for (const auto& l : p->launches) {
    fills += l.kind == plan::LaunchKind::Fill;
    muls += l.kind == plan::LaunchKind::Binary && l.op == "mul";
    if (l.kind == plan::LaunchKind::Matmul && l.scalar != 0) {
      ++scaled;
      EXPECT_TRUE(l.scalar == 0.25 || l.scalar == 2.0) << l.scalar;
    }
  }
  EXPECT_EQ(scaled, 2) << p->to_text();  // p by 0.25, the third result's first product by 2
  EXPECT_EQ(muls, 1) << p->to_text();    // q * t stays a launch
  EXPECT_EQ(fills, 0) << p->to_text();
  EXPECT_EQ(shapeml::plan::verify_message(*p), "");
  expect_no_live_overlap(*p);
}

namespace {

std::map<std::string, int> kernel_counts(const GpuPlan& p) {
  std::map<std::string, int> n;
  for (const auto& l : p.launches) ++n[shapeml::plan::launch_kind_name(l.kind) + (l.op.empty() ? std::string() : " " + l.op)];
  return n;
}


}  // namespace

TEST(GpuPatterns, TheTransformerBlockGetsOneLaunchPerRmsNormMaskedSoftmaxAndSwiGlu) {
  // Counted by hand from examples/transformer_block.sml: RMSNorm, the 3
  // projection weights side by side (one grouped copy), one GEMM for q k v,
  // the 3 head splits in one permute (k's transpose folds into the scores
  // GEMM), scores (alpha), causal softmax, context, the merge permute, wo
  // (+x), RMSNorm, gate, up, silu*mul, down (+h): 14 launches in f32 and
  // f64 with attention fusion off (bf16 and short f32 sequences fuse it:
  // TheBf16BlockGetsOneAttentionLaunch..., TheF32BlockFusesShortAttention...).
  for (const char* dtype : {"f32", "f64"}) {
    auto r = concrete_block(dtype);
    std::string err;
    shapeml::lower::gpu::PlanOptions chain;
    chain.fuse_attention = false;
    auto p = shapeml::lower::gpu::plan_function(*r.module, "block", {{"B", 2}, {"S", 16}, {"D", 32}, {"H", 4}, {"Dh", 8}, {"F", 48}}, err, chain);
    ASSERT_TRUE(p) << dtype << ": " << err;
    auto n = kernel_counts(*p);
    EXPECT_EQ(n["rmsnorm"], 2) << dtype << "\n" << p->to_text();
    EXPECT_EQ(n["softmax softmax"], 1) << dtype;
    EXPECT_EQ(n["gated silu"], 1) << dtype;
    EXPECT_EQ(n["matmul"] + n["matmul tf32"], 7) << dtype;
    EXPECT_EQ(n["transpose"], 2) << dtype;
    EXPECT_EQ(n["concat"], 1) << dtype;
    EXPECT_EQ(p->launches.size(), 14u) << dtype << "\n" << p->to_text();
    int residual = 0;
    bool scaled = false;
    for (const auto& l : p->launches) {
      if (l.kind == plan::LaunchKind::Softmax) {
        EXPECT_TRUE(l.flag);
        ASSERT_EQ(l.ints.size(), 2u);
        EXPECT_TRUE(l.ints[0] == -1 || l.ints[0] == 3) << l.ints[0];
        EXPECT_EQ(l.ints[1], 0);
        EXPECT_EQ(p->slots[l.inputs[0]].shape, (std::vector<int64_t>{2, 4, 16, 16}));
      }
      if (l.kind == plan::LaunchKind::Transpose && l.ints.size() == 5) {
        // [B, S, 3, H, Dh] -> [3, B, H, S, Dh]: q, k and v back to back,
        // each read through a view at its offset
        EXPECT_EQ(l.ints, (std::vector<int64_t>{2, 0, 3, 1, 4}));
        EXPECT_EQ(p->slots[l.outputs[0]].shape, (std::vector<int64_t>{3, 2, 4, 16, 8}));
        int views = 0;
        for (const auto& sl : p->slots)
          if (sl.kind == GpuSlot::Kind::View && sl.alias == l.outputs[0] && sl.shape == std::vector<int64_t>{2, 4, 16, 8}) {
            EXPECT_EQ(sl.offset % (2 * 4 * 16 * 8 * shapeml::plan::gpu_dtype_size(sl.dtype)), 0);
            ++views;
          }
        EXPECT_EQ(views, 3) << dtype;
      }
      if (l.kind == plan::LaunchKind::RmsNorm) {
        EXPECT_EQ(l.scalar, shapeml::plan::gpu_stored_value(1e-5, p->slots[l.inputs[0]].dtype)) << dtype;
        EXPECT_EQ(p->slots[l.inputs[1]].kind, GpuSlot::Kind::Input) << "g1 / g2";
      }
      residual += l.kind == plan::LaunchKind::Matmul && l.flag;
      scaled |= l.kind == plan::LaunchKind::Matmul && l.scalar != 0;
    }
    EXPECT_EQ(residual, 2) << dtype << ": both residual adds are GEMM epilogues";
    EXPECT_TRUE(scaled) << dtype << ": 1/sqrt(Dh) is the scores GEMM's alpha";
    expect_sound_plan(*p);

    shapeml::lower::gpu::PlanOptions off;
    off.fuse_patterns = false;
    off.fuse = false;  // the planner's own launches (elementwise fusion would take the chains)
    auto u = shapeml::lower::gpu::plan_function(*r.module, "block", {{"B", 2}, {"S", 16}, {"D", 32}, {"H", 4}, {"Dh", 8}, {"F", 48}}, err, off);
    ASSERT_TRUE(u) << err;
    auto m = kernel_counts(*u);
    EXPECT_EQ(m["rmsnorm"] + m["gated silu"], 0);
    EXPECT_EQ(m["select"], 1);
    EXPECT_EQ(m["reduce mean"], 2);
    EXPECT_GT(u->launches.size(), p->launches.size() + 10);
  }
}

// Counted by hand: RMSNorm, the weights side by side, one q k v GEMM, one
// attention launch reading q, k and v in place from that GEMM's result and
// writing the merged heads, wo (+x), RMSNorm, gate, up, silu*mul, down (+h).
TEST(GpuPatterns, TheBf16BlockGetsOneAttentionLaunchReadingTheProjectionInPlace) {
  auto r = concrete_block("bf16");
  std::string err;
  const int64_t B = 2, S = 16, D = 32, H = 4, Dh = 8;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "block", {{"B", B}, {"S", S}, {"D", D}, {"H", H}, {"Dh", Dh}, {"F", 48}}, err);
  ASSERT_TRUE(p) << err;
  auto n = kernel_counts(*p);
  EXPECT_EQ(n["attention"], 1) << p->to_text();
  EXPECT_EQ(n["softmax softmax"] + n["transpose"] + n["select"], 0) << p->to_text();
  EXPECT_EQ(n["matmul"], 4) << "merged q/k/v, the gate/up group, wo, down";
  EXPECT_EQ(n["concat"], 1);
  EXPECT_EQ(p->launches.size(), 9u) << p->to_text();
  for (const auto& l : p->launches) {
    if (l.kind != plan::LaunchKind::Attention) continue;
    shapeml::plan::AttentionLayout a;
    ASSERT_TRUE(a.from_ints(l.ints));
    EXPECT_EQ(a.batch, B);
    EXPECT_EQ(a.heads, H);
    EXPECT_EQ(a.group, 1);
    EXPECT_EQ(a.sq, S);
    EXPECT_EQ(a.sk, S);
    EXPECT_EQ(a.dh, Dh);
    EXPECT_EQ(a.offset, 0);
    EXPECT_TRUE(l.flag) << "causal";
    EXPECT_EQ(l.scalar, shapeml::plan::gpu_stored_value(1 / std::sqrt(8.0), shapeml::plan::GpuDType::BF16)) << "rsqrt(Dh) in bf16";
    // q, k, v: columns [0, D), [D, 2D), [2D, 3D) of the merged [B*S, 3D] result.
    ASSERT_EQ(l.inputs[0], l.inputs[1]);
    ASSERT_EQ(l.inputs[0], l.inputs[2]);
    EXPECT_EQ(p->slots[l.inputs[0]].shape, (std::vector<int64_t>{B * S, 3 * D}));
    const shapeml::plan::AttentionAccess* acc[3] = {&a.q, &a.k, &a.v};
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(acc[i]->offset, i * D);
      EXPECT_EQ(acc[i]->batch, S * 3 * D);
      EXPECT_EQ(acc[i]->head, Dh);
      EXPECT_EQ(acc[i]->row, 3 * D);
    }
    // o: the merged heads [B, S, H, Dh], which wo reads as [B*S, D].
    EXPECT_EQ(p->slots[l.outputs[0]].shape, (std::vector<int64_t>{B, S, H, Dh}));
    EXPECT_EQ(a.o.batch, S * D);
    EXPECT_EQ(a.o.head, Dh);
    EXPECT_EQ(a.o.row, D);
  }
  expect_sound_plan(*p);
  // No slot of the unfused chain (scores, probabilities) is left to take workspace.
  for (const auto& sl : p->slots) EXPECT_NE(sl.shape, (std::vector<int64_t>{B, H, S, S}));

  // The large block: the projections' large weights not copied; q/k/v one
  // matmul group read in place (and gate/up another: GpuMatmulGroups).
  auto big = shapeml::lower::gpu::plan_function(*r.module, "block", {{"B", 4}, {"S", 512}, {"D", 2048}, {"H", 16}, {"Dh", 128}, {"F", 5632}}, err);
  ASSERT_TRUE(big) << err;
  auto m = kernel_counts(*big);
  EXPECT_EQ(m["attention"], 1);
  EXPECT_EQ(m["concat"] + m["transpose"] + m["softmax softmax"], 0) << big->to_text();
  EXPECT_EQ(big->launches.size(), 8u) << big->to_text();

  // Grouped-query heads: k and v read from their Hkv heads, no repeat.
  auto g = shapeml::lower::gpu::plan_function(*r.module, "block_gqa", {{"B", 2}, {"S", 16}, {"D", 32}, {"H", 4}, {"Dh", 8}, {"Hkv", 2}, {"G", 2}, {"F", 48}}, err);
  ASSERT_TRUE(g) << err;
  auto gn = kernel_counts(*g);
  EXPECT_EQ(gn["attention"], 1) << g->to_text();
  EXPECT_EQ(gn["repeat"], 0) << g->to_text();
  for (const auto& l : g->launches)
    if (l.kind == plan::LaunchKind::Attention) {
      shapeml::plan::AttentionLayout a;
      ASSERT_TRUE(a.from_ints(l.ints));
      EXPECT_EQ(a.group, 2);
      EXPECT_EQ(g->slots[l.inputs[1]].shape, (std::vector<int64_t>{2, 16, 2, 8})) << "k's heads before the repeat";
    }
}

TEST(GpuPatterns, AttentionStaysUnfusedWhereTheChainIsReadElsewhere) {
  // The probabilities are also a result; the value head dimension differs;
  // the scale is negative (the kernels fold a positive one into the
  // exponent). A plain (unmasked) attention over [N S Dh] fuses, as rank 3,
  // in bf16 and in f32 (10 keys: short enough for the f32 kernel); f64
  // never fuses.
  auto src = [] {
    return std::string("(module m (func f (dtypes (DT floating)) (dims N S Dh E)") +
                  " (params (q (tensor DT (N S Dh) (cuda 0))) (k (tensor DT (N S Dh) (cuda 0))) (v (tensor DT (N S Dh) (cuda 0))) (w (tensor DT (N S E) (cuda 0))))"
                  " (returns (tensor DT (N S Dh) (cuda 0)) (tensor DT (N S S) (cuda 0)) (tensor DT (N S E) (cuda 0)) (tensor DT (N S Dh) (cuda 0))"
                  " (tensor DT (N S Dh) (cuda 0)))"
                  " (let p (softmax (matmul q (transpose k)) :axis -1))"
                  " (let p2 (softmax (matmul q (transpose k)) :axis -1))"
                  " (let p3 (softmax (mul (matmul q (transpose k)) 0.5) :axis -1))"
                  " (let p4 (softmax (mul (matmul q (transpose k)) -0.5) :axis -1))"
                  " (return (matmul p v) p (matmul p2 w) (matmul p3 v) (matmul p4 v))))";
  };
  for (const char* dt : {"bf16", "f32", "f64"}) {
    auto r = checked(src());
    std::string err;
    // One generic source (spec §3.5), planned at each dtype.
    const int64_t at = shapeml::types::dtype_binding_value(*shapeml::types::parse_dtype(dt));
    auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"DT", at}, {"N", 3}, {"S", 10}, {"Dh", 8}, {"E", 16}}, err);
    ASSERT_TRUE(p) << err;
    auto n = kernel_counts(*p);
    EXPECT_EQ(n["attention"], std::string(dt) == "f64" ? 0 : 1) << dt << "\n" << p->to_text();
    for (const auto& l : p->launches)
      if (l.kind == plan::LaunchKind::Attention) {
        EXPECT_FALSE(l.flag);
        EXPECT_EQ(l.scalar, 0.5);
        EXPECT_EQ(p->slots[l.outputs[0]].kind, GpuSlot::Kind::Output);
      }
    EXPECT_EQ(shapeml::plan::verify_message(*p), "");
  }
}

TEST(GpuPatterns, ThePlanFormatChecksAttentionLaunches) {
  const std::string head =
      "gpu-plan f device 0 inputs 3 outputs 1 workspace 0\nslot 0 input 0 bf16 4 1 2 5 8 offset 0\nslot 1 input 1 bf16 4 1 2 5 8 offset 0\n"
      "slot 2 input 2 bf16 4 1 2 5 8 offset 0\nslot 3 output 0 bf16 4 1 2 5 8 offset 0\n";
  const std::string dense = "1 2 1 5 5 8 0 0 80 40 8 0 80 40 8 0 80 40 8 0 80 40 8";
  std::string err;
  EXPECT_TRUE(GpuPlan::parse(head + "launch attention - shapeml in 3 0 1 2 out 1 3 ints 23 " + dense + " scalar 0.35 flag 1\n", err)) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "launch attention - shapeml in 3 0 1 2 out 1 3 ints 3 1 2 1 scalar 0.35 flag 1\n", err));
  EXPECT_NE(err.find("attention needs 23 ints"), std::string::npos) << err;
  // v's row stride 9 reaches past its 80 elements.
  EXPECT_FALSE(GpuPlan::parse(head + "launch attention - shapeml in 3 0 1 2 out 1 3 ints 23 1 2 1 5 5 8 0 0 80 40 8 0 80 40 8 0 80 40 9 0 80 40 8 scalar 1 flag 0\n", err));
  EXPECT_NE(err.find("v's strided access reaches outside its slot"), std::string::npos) << err;
  // Two heads cannot be shared by groups of 3.
  EXPECT_FALSE(GpuPlan::parse(head + "launch attention - shapeml in 3 0 1 2 out 1 3 ints 23 1 2 3 5 5 8 0 0 80 40 8 0 80 40 8 0 80 40 8 0 80 40 8 scalar 1 flag 0\n", err));
  EXPECT_NE(err.find("not a multiple of the group"), std::string::npos) << err;
  // A scale the kernels cannot fold into the exponent.
  EXPECT_FALSE(GpuPlan::parse(head + "launch attention - shapeml in 3 0 1 2 out 1 3 ints 23 " + dense + " scalar -0.35 flag 1\n", err));
  EXPECT_NE(err.find("the scale must be positive"), std::string::npos) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "launch attention - shapeml in 2 0 1 out 1 3 ints 23 " + dense + " scalar 1 flag 0\n", err));
  EXPECT_NE(err.find("expects 3 input(s)"), std::string::npos) << err;
  // Library cudnn only for the launches cuDNN's fused attention takes; no other library.
  EXPECT_FALSE(GpuPlan::parse(head + "launch attention - cudnn in 3 0 1 2 out 1 3 ints 23 " + dense + " scalar 0.35 flag 1\n", err));
  EXPECT_NE(err.find("library cudnn, but cuDNN does not take fewer than 64 query rows"), std::string::npos) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "launch attention - cublasLt in 3 0 1 2 out 1 3 ints 23 " + dense + " scalar 0.35 flag 1\n", err));
  EXPECT_NE(err.find("unknown library `cublasLt`"), std::string::npos) << err;
}

// The attention launches cuDNN's fused attention takes say library cudnn
// (plan::cudnn_attention_refusal: bf16, grouped key/value heads too, no
// decode offset, head dimension a multiple of 8 up to 128, 64 query rows
// or more, 16-byte strides); --gpu-cudnn-attention off keeps every launch on
// the own kernel.
TEST(GpuPatterns, TheAttentionLaunchesCudnnTakesSayLibraryCudnn) {
  std::string err;
  auto library = [](const GpuPlan& p) {
    std::string lib;
    for (const auto& l : p.launches)
      if (l.kind == plan::LaunchKind::Attention) lib += (lib.empty() ? "" : ",") + l.library;
    return lib;
  };
  const std::map<std::string, int64_t> large = {{"B", 4}, {"S", 512}, {"D", 2048}, {"H", 16}, {"Dh", 128}, {"F", 5632}};
  auto bf = concrete_block("bf16");
  auto p = shapeml::lower::gpu::plan_function(*bf.module, "block", large, err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(library(*p), "cudnn");
  expect_sound_plan(*p);
  shapeml::lower::gpu::PlanOptions off;
  off.cudnn_attention = false;
  p = shapeml::lower::gpu::plan_function(*bf.module, "block", large, err, off);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(library(*p), "shapeml");
  // Merged projections: q, k, v at column offsets of one result, 16-byte aligned.
  p = shapeml::lower::gpu::plan_function(*bf.module, "block", {{"B", 2}, {"S", 64}, {"D", 32}, {"H", 4}, {"Dh", 8}, {"F", 48}}, err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(library(*p), "cudnn") << p->to_text();
  p = shapeml::lower::gpu::plan_function(*bf.module, "block", {{"B", 2}, {"S", 63}, {"D", 32}, {"H", 4}, {"Dh", 8}, {"F", 48}}, err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(library(*p), "shapeml") << "63 query rows";
  p = shapeml::lower::gpu::plan_function(*bf.module, "block", {{"B", 2}, {"S", 64}, {"D", 24}, {"H", 4}, {"Dh", 6}, {"F", 48}}, err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(library(*p), "shapeml") << "head dimension 6";
  p = shapeml::lower::gpu::plan_function(*bf.module, "block_gqa", {{"B", 2}, {"S", 64}, {"D", 32}, {"H", 4}, {"Dh", 8}, {"Hkv", 2}, {"G", 2}, {"F", 48}}, err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(library(*p), "cudnn") << "grouped key/value heads";
  auto f = concrete_block("f32");
  p = shapeml::lower::gpu::plan_function(*f.module, "block", {{"B", 2}, {"S", 128}, {"D", 64}, {"H", 4}, {"Dh", 16}, {"F", 96}}, err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(library(*p), "shapeml") << "f32";
}

TEST(GpuPatterns, TheGroupedQueryBlockAndStoryLmKeepTheirFusedLaunches) {
  auto r = concrete_block("f32");
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "block_gqa",
                                               {{"B", 2}, {"S", 16}, {"D", 32}, {"H", 4}, {"Dh", 8}, {"Hkv", 2}, {"G", 2}, {"F", 48}}, err);
  ASSERT_TRUE(p) << err;
  auto n = kernel_counts(*p);
  EXPECT_EQ(n["rmsnorm"], 2);
  EXPECT_EQ(n["gated silu"], 1);
  // The repeat_interleave of k and v is the attention launch's group (2
  // query heads per key/value head), no copy.
  EXPECT_EQ(n["repeat"], 0) << p->to_text();
  EXPECT_EQ(n["attention"], 1) << p->to_text();
  for (const auto& l : p->launches)
    if (l.kind == plan::LaunchKind::Attention) {
      EXPECT_EQ(l.ints[2], 2) << "group";
    }
  EXPECT_EQ(n["select"] + n["compare ge"] + n["iota"], 0) << p->to_text();
}

TEST(GpuPatterns, TheF32BlockFusesAttentionAndDecodeRowsKeepTheGemmsForLongCaches) {
  // f32 attention runs on the FP32 cores: up to 256 keys in 16-row blocks,
  // beyond in the register-tiled 64-row blocks, which need 64 query rows;
  // a few query rows against more keys keep the GEMMs (the measurements:
  // docs/design/gpu-attention.md).
  auto r = concrete_block("f32");
  std::string err;
  for (int64_t S : {128, 256, 257, 512}) {
    auto p = shapeml::lower::gpu::plan_function(*r.module, "block", {{"B", 2}, {"S", S}, {"D", 64}, {"H", 4}, {"Dh", 16}, {"F", 96}}, err);
    ASSERT_TRUE(p) << err;
    auto n = kernel_counts(*p);
    EXPECT_EQ(n["attention"], 1) << S;
    EXPECT_EQ(n["softmax softmax"], 0) << S;
    // no head split or merge permute (read and written in place), q k v in
    // one GEMM, wo, gate, up, down
    EXPECT_EQ(n["transpose"], 0) << S << "\n" << p->to_text();
    EXPECT_EQ(n["matmul"], 5) << S;
    EXPECT_EQ(p->launches.size(), 10u) << p->to_text();
    EXPECT_EQ(shapeml::plan::verify_message(*p), "");
    expect_no_live_overlap(*p);
  }
  auto d = checked(
      "(module m (func f (dims N S T Dh) (params (q (tensor f32 (N S Dh) (cuda 0))) (k (tensor f32 (N T Dh) (cuda 0))) (v (tensor f32 (N T Dh) (cuda 0))))"
      " (returns (tensor f32 (N S Dh) (cuda 0))) (return (matmul (softmax (mul (matmul q (transpose k)) 0.5) :axis -1) v))))");
  for (auto [S, T, fused] : {std::tuple<int64_t, int64_t, bool>{1, 256, true}, {1, 257, false}, {63, 300, false}, {64, 300, true}}) {
    auto p = shapeml::lower::gpu::plan_function(*d.module, "f", {{"N", 2}, {"S", S}, {"T", T}, {"Dh", 16}}, err);
    ASSERT_TRUE(p) << err;
    EXPECT_EQ(kernel_counts(*p)["attention"], fused ? 1 : 0) << S << " query rows, " << T << " keys";
  }
}

TEST(GpuPatterns, TheTf32BlockFusesAttentionAtEveryLengthOnTensorCores) {
  // With --gpu-tf32 both products of the chain are TF32 matmuls: beyond 256
  // keys the launch says op tf32 (attention_tf32.cu); up to 256 it is the
  // FP32-core launch (no op), as in an f32 plan. The small projections stay
  // apart (TF32 GEMMs are not merged: merge_projections.h).
  auto r = concrete_block("f32");
  std::string err;
  shapeml::lower::gpu::PlanOptions tf32;
  tf32.allow_tf32 = true;
  for (int64_t S : {128, 512}) {
    auto p = shapeml::lower::gpu::plan_function(*r.module, "block", {{"B", 2}, {"S", S}, {"D", 64}, {"H", 4}, {"Dh", 16}, {"F", 96}}, err, tf32);
    ASSERT_TRUE(p) << err;
    auto n = kernel_counts(*p);
    EXPECT_EQ(n[S > 256 ? "attention tf32" : "attention"], 1) << S << "\n" << p->to_text();
    EXPECT_EQ(n["softmax softmax"], 0) << S;
    EXPECT_EQ(n["concat"], 0) << S;
    EXPECT_EQ(n["matmul tf32"], 7) << S;  // q, k, v, o, gate, up, down
    EXPECT_EQ(p->launches.size(), 11u) << p->to_text();
    for (const auto& l : p->launches)
      if (l.kind == plan::LaunchKind::Attention) {
        EXPECT_EQ(l.why.find("TF32 tensor cores") != std::string::npos, S > 256) << l.why;
      }
    EXPECT_EQ(shapeml::plan::verify_message(*p), "");
  }
  // The verifier: op tf32 only on f32 operands, and no other op.
  const std::string head =
      "gpu-plan f device 0 inputs 3 outputs 1 workspace 0\nslot 0 input 0 bf16 4 1 2 5 8 offset 0\nslot 1 input 1 bf16 4 1 2 5 8 offset 0\n"
      "slot 2 input 2 bf16 4 1 2 5 8 offset 0\nslot 3 output 0 bf16 4 1 2 5 8 offset 0\n";
  const std::string dense = "1 2 1 5 5 8 0 0 80 40 8 0 80 40 8 0 80 40 8 0 80 40 8";
  EXPECT_FALSE(GpuPlan::parse(head + "launch attention tf32 shapeml in 3 0 1 2 out 1 3 ints 23 " + dense + " scalar 0.35 flag 1\n", err));
  EXPECT_NE(err.find("op tf32 needs f32 operands"), std::string::npos) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "launch attention fast shapeml in 3 0 1 2 out 1 3 ints 23 " + dense + " scalar 0.35 flag 1\n", err));
  EXPECT_NE(err.find("unknown op `fast`"), std::string::npos) << err;
  std::string f32 = head;
  for (size_t at; (at = f32.find("bf16")) != std::string::npos;) f32.replace(at, 4, "f32");
  EXPECT_TRUE(GpuPlan::parse(f32 + "launch attention tf32 shapeml in 3 0 1 2 out 1 3 ints 23 " + dense + " scalar 0.35 flag 1\n", err)) << err;
}

TEST(GpuPatterns, GroupsWhoseIntermediatesAreReadElsewhereOrWhoseShapeDiffersStayUnfused) {
  // An RMSNorm whose statistics are also a result; a mask keeping the upper
  // triangle (j >= i: not causal); a softmax over the first axis; a silu
  // read twice. None fuses; a strict causal mask (i > j) fuses with offset -1.
  auto r = checked(
      "(module m (func f (dims N D) (params (x (tensor f32 (N D) (cuda 0))) (g (tensor f32 (D) (cuda 0))) (s (tensor f32 (N N) (cuda 0))))"
      " (returns (tensor f32 (N D) (cuda 0)) (tensor f32 (N 1) (cuda 0)) (tensor f32 (N N) (cuda 0)) (tensor f32 (N N) (cuda 0)) (tensor f32 (N D) (cuda 0))"
      "  (tensor f32 (N N) (cuda 0)))"
      " (let ms (reduce_mean (mul x x) :axes (-1) :keepdims true))"
      " (let y (mul (mul x (rsqrt (add ms 1e-5))) g))"
      " (let i (iota (tensor i32 (N N) (cuda 0)) :axis 0)) (let j (iota (tensor i32 (N N) (cuda 0)) :axis 1))"
      " (let upper (softmax (select (le i j) s -inf) :axis -1))"
      " (let first (softmax (select (ge i j) s -inf) :axis 0))"
      " (let a (silu x))"
      " (let strict (softmax (select (gt i j) s -inf) :axis -1))"
      " (return y ms upper first (add (mul a x) a) strict)))");
  std::string err;
  shapeml::lower::gpu::PlanOptions no_elementwise;
  no_elementwise.fuse = false;  // what the patterns leave, as the planner's own launches
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"N", 8}, {"D", 16}}, err, no_elementwise);
  ASSERT_TRUE(p) << err;
  auto n = kernel_counts(*p);
  EXPECT_EQ(n["rmsnorm"], 0) << p->to_text();
  EXPECT_EQ(n["gated silu"], 0) << p->to_text();
  int causal = 0;
  for (const auto& l : p->launches)
    if (l.kind == plan::LaunchKind::Softmax && l.flag) {
      ++causal;
      ASSERT_EQ(l.ints.size(), 2u);
      EXPECT_EQ(l.ints[1], -1) << "i > j keeps j <= i - 1";
    }
  EXPECT_EQ(causal, 1) << p->to_text();
  EXPECT_EQ(n["select"], 2) << "the upper-triangle and first-axis softmaxes keep their select";
  EXPECT_EQ(shapeml::plan::verify_message(*p), "");
  expect_no_live_overlap(*p);
}

TEST(GpuPatterns, ThePlanFormatChecksTheFusedLaunches) {
  const std::string head =
      "gpu-plan f device 0 inputs 2 outputs 1 workspace 0\nslot 0 input 0 f32 2 4 8 offset 0\nslot 1 input 1 f32 1 8 offset 0\n"
      "slot 2 output 0 f32 2 4 8 offset 0\n";
  std::string err;
  EXPECT_TRUE(GpuPlan::parse(head + "launch rmsnorm - shapeml in 2 0 1 out 1 2 ints 0 scalar 1e-05 flag 0\n", err)) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "launch rmsnorm - shapeml in 1 0 out 1 2 ints 0 scalar 1e-05 flag 0\n", err));
  EXPECT_NE(err.find("expects 2 input(s)"), std::string::npos) << err;
  EXPECT_TRUE(GpuPlan::parse(head + "launch gated silu shapeml in 2 0 0 out 1 2 ints 0 scalar 0 flag 0\n", err)) << err;
  EXPECT_TRUE(GpuPlan::parse(head + "launch softmax softmax shapeml in 1 0 out 1 2 ints 2 -1 0 scalar 0 flag 1\n", err)) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "launch softmax softmax shapeml in 1 0 out 1 2 ints 1 -1 scalar 0 flag 1\n", err));
  EXPECT_NE(err.find("causal softmax needs ints = {axis, offset}"), std::string::npos) << err;
}

TEST(GpuPlan, SlotSizesThatOverflowAreRejectedNotWrapped) {
  std::string err;
  // 2^31 * 2^31 * 4 elements wrap int64; 2^61 f32 elements wrap the byte
  // count; a temp at an offset whose end wraps.
  EXPECT_FALSE(GpuPlan::parse("gpu-plan f device 0 inputs 1 outputs 0 workspace 0\nslot 0 input 0 f32 3 2147483648 2147483648 4 offset 0\n", err));
  EXPECT_NE(err.find("element count overflows"), std::string::npos) << err;
  EXPECT_FALSE(GpuPlan::parse("gpu-plan f device 0 inputs 1 outputs 0 workspace 0\nslot 0 input 0 f32 1 2305843009213693952 offset 0\n", err));
  EXPECT_NE(err.find("byte count overflows"), std::string::npos) << err;
  EXPECT_FALSE(GpuPlan::parse("gpu-plan f device 0 inputs 0 outputs 0 workspace 1024\nslot 0 temp 0 f32 1 256 offset 9223372036854775552\n", err));
  EXPECT_NE(err.find("outside the workspace"), std::string::npos) << err;
}

TEST(GpuPatterns, LargeProjectionWeightsStaySeparateGemmsWithOneGroupedHeadSplit) {
  // 3 x [2048 x 2048] f32 weights are 48 MiB: copying them side by side per
  // call costs more than two GEMM launches save (kMergeWeightBytes).
  // The head splits are one launch where attention stays unfused.
  auto r = concrete_block("f32");
  std::string err;
  const std::map<std::string, int64_t> large = {{"B", 4}, {"S", 512}, {"D", 2048}, {"H", 16}, {"Dh", 128}, {"F", 5632}};
  auto fused = shapeml::lower::gpu::plan_function(*r.module, "block", large, err);
  ASSERT_TRUE(fused) << err;
  auto f = kernel_counts(*fused);
  EXPECT_EQ(f["matmul"], 7) << "q, k, v, o, gate, up, down";
  EXPECT_EQ(f["concat"] + f["transpose"], 0);
  EXPECT_EQ(f["attention"], 1);
  shapeml::lower::gpu::PlanOptions unfused;
  unfused.fuse_attention = false;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "block", large, err, unfused);
  ASSERT_TRUE(p) << err;
  auto n = kernel_counts(*p);
  EXPECT_EQ(n["matmul"], 9);
  EXPECT_EQ(n["concat"], 0);
  EXPECT_EQ(p->launches.size(), 15u) << p->to_text();
  bool grouped = false;
  for (const auto& l : p->launches) grouped |= l.kind == plan::LaunchKind::Transpose && l.inputs.size() == 3;
  EXPECT_TRUE(grouped) << "the three head splits are still one launch";
  EXPECT_EQ(shapeml::plan::verify_message(*p), "");
  expect_no_live_overlap(*p);
}

// ---- matmul groups (lower/gpu/group_matmuls.h) --------------------------------

TEST(GpuMatmulGroups, TheLargeBf16BlocksProjectionsOfOneActivationRunAsBatchedGemms) {
  auto r = concrete_block("bf16");
  std::string err;
  const std::map<std::string, int64_t> env = {{"B", 4}, {"S", 512}, {"D", 2048}, {"H", 16}, {"Dh", 128}, {"F", 5632}};
  auto p = shapeml::lower::gpu::plan_function(*r.module, "block", env, err);
  ASSERT_TRUE(p) << err;
  // The block's parameters: x g1 wq wk wv wo g2 w_gate w_up w_down (inputs 0..9).
  auto input_index = [&](int32_t s) { return p->slots[static_cast<size_t>(p->root(s))].kind == GpuSlot::Kind::Input ? p->slots[p->root(s)].index : -1; };
  std::vector<std::vector<int32_t>> groups;
  for (const auto& l : p->launches) {
    if (l.kind != plan::LaunchKind::Matmul || l.ints.size() != 3) continue;
    ASSERT_EQ(l.ints[2] + 1, static_cast<int64_t>(l.inputs.size()));
    ASSERT_EQ(l.ints[2], static_cast<int64_t>(l.outputs.size()));
    std::vector<int32_t> w;
    for (size_t i = 1; i < l.inputs.size(); ++i) w.push_back(input_index(l.inputs[i]));
    groups.push_back(w);
    for (int32_t o : l.outputs) EXPECT_EQ(p->slots[o].dtype, plan::GpuDType::BF16);
  }
  ASSERT_EQ(groups.size(), 2u) << p->to_text();
  EXPECT_EQ(groups[0], (std::vector<int32_t>{2, 3, 4})) << "wq wk wv";
  EXPECT_EQ(groups[1], (std::vector<int32_t>{7, 8})) << "w_gate w_up";
  // The gated launch reads the group's two results as it read the two GEMMs'.
  for (size_t i = 0; i < p->launches.size(); ++i)
    if (p->launches[i].kind == plan::LaunchKind::Gated) {
      const auto& g = p->launches[i - 1];
      ASSERT_EQ(g.ints.size(), 3u);
      EXPECT_EQ(p->launches[i].inputs, g.outputs);
    }
  expect_sound_plan(*p);

  // Off: one GEMM per projection, as before.
  shapeml::lower::gpu::PlanOptions off;
  off.group_matmuls = false;
  auto q = shapeml::lower::gpu::plan_function(*r.module, "block", env, err, off);
  ASSERT_TRUE(q) << err;
  EXPECT_EQ(q->launches.size(), 11u) << q->to_text();
  // f32 plans (not measured) keep separate GEMMs.
  auto f = concrete_block("f32");
  auto fp = shapeml::lower::gpu::plan_function(*f.module, "block", env, err);
  ASSERT_TRUE(fp) << err;
  for (const auto& l : fp->launches) EXPECT_NE(l.ints.size() == 3 && l.kind == plan::LaunchKind::Matmul, true) << fp->to_text();
}

TEST(GpuMatmulGroups, GemmsWhoseOperandsChangeBetweenThemOrDifferStayApart) {
  // y1 = x w1 and y2 = x w2 group; z = (x w1) w3 reads y1's result (not A);
  // x w4 has another weight shape; y5 = (x + y1) w5 has another A.
  const std::string src =
      "(module m (func f (dims M K N)"
      " (params (x (tensor bf16 (M K) (cuda 0))) (w1 (tensor bf16 (K K) (cuda 0))) (w2 (tensor bf16 (K K) (cuda 0)))"
      "         (w3 (tensor bf16 (K K) (cuda 0))) (w4 (tensor bf16 (K N) (cuda 0))))"
      " (returns (tensor bf16 (M K) (cuda 0)) (tensor bf16 (M K) (cuda 0)) (tensor bf16 (M K) (cuda 0)) (tensor bf16 (M N) (cuda 0)))"
      " (let y1 (matmul x w1))"
      " (return (matmul y1 w3) (matmul x w2) y1 (matmul x w4))))";
  auto r = checked(src);
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"M", 8}, {"K", 16}, {"N", 24}}, err);
  ASSERT_TRUE(p) << err;
  int groups = 0;
  for (const auto& l : p->launches)
    if (l.kind == plan::LaunchKind::Matmul && l.ints.size() == 3) {
      ++groups;
      EXPECT_EQ(l.ints[2], 2) << p->to_text();
      EXPECT_EQ(p->slots[p->root(l.inputs[1])].index, 1) << "w1";
      EXPECT_EQ(p->slots[p->root(l.inputs[2])].index, 2) << "w2";
    }
  EXPECT_EQ(groups, 1) << p->to_text();
  EXPECT_EQ(shapeml::plan::verify_message(*p), "");
}

TEST(GpuMatmulGroups, ThePlanFormatChecksMatmulGroups) {
  const std::string head =
      "gpu-plan f device 0 inputs 3 outputs 2 workspace 0\nslot 0 input 0 bf16 2 4 8 offset 0\nslot 1 input 1 bf16 2 8 6 offset 0\n"
      "slot 2 input 2 bf16 2 8 6 offset 0\nslot 3 output 0 bf16 2 4 6 offset 0\nslot 4 output 1 bf16 2 4 6 offset 0\n";
  std::string err;
  EXPECT_TRUE(GpuPlan::parse(head + "launch matmul - cublasLt in 3 0 1 2 out 2 3 4 ints 3 0 0 2 scalar 0 flag 0\n", err)) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "launch matmul - cublasLt in 2 0 1 out 1 3 ints 3 0 0 1 scalar 0 flag 0\n", err));
  EXPECT_NE(err.find("a matmul group has 2 to 8 weights"), std::string::npos) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "launch matmul - cublasLt in 3 0 1 2 out 1 3 ints 3 0 0 2 scalar 0 flag 0\n", err));
  EXPECT_NE(err.find("expects 2 output(s)"), std::string::npos) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "launch matmul - cublasLt in 3 0 1 2 out 2 3 3 ints 3 0 0 2 scalar 0 flag 0\n", err));
  EXPECT_NE(err.find("writes one slot twice"), std::string::npos) << err;
  // A result written over the activation every GEMM of the group reads.
  const std::string square =
      "gpu-plan f device 0 inputs 3 outputs 1 workspace 0\nslot 0 input 0 bf16 2 4 8 offset 0\nslot 1 input 1 bf16 2 8 8 offset 0\n"
      "slot 2 input 2 bf16 2 8 8 offset 0\nslot 3 output 0 bf16 2 4 8 offset 0\n";
  EXPECT_FALSE(GpuPlan::parse(square + "launch matmul - cublasLt in 3 0 1 2 out 2 3 0 ints 3 0 0 2 scalar 0 flag 0\n", err));
  EXPECT_NE(err.find("over its activation or a weight"), std::string::npos) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "launch matmul - cublasLt in 3 0 1 2 out 2 3 4 ints 3 0 0 2 scalar 0.5 flag 0\n", err));
  EXPECT_NE(err.find("no scale, bias or residual"), std::string::npos) << err;
  // The second weight [8, 6] read as [4, 8]: the shapes differ.
  const std::string odd =
      "gpu-plan f device 0 inputs 3 outputs 2 workspace 0\nslot 0 input 0 bf16 2 4 8 offset 0\nslot 1 input 1 bf16 2 8 6 offset 0\n"
      "slot 2 input 2 bf16 2 6 8 offset 0\nslot 3 output 0 bf16 2 4 6 offset 0\nslot 4 output 1 bf16 2 4 6 offset 0\n";
  EXPECT_FALSE(GpuPlan::parse(odd + "launch matmul - cublasLt in 3 0 1 2 out 2 3 4 ints 3 0 0 2 scalar 0 flag 0\n", err));
  EXPECT_NE(err.find("weights of a matmul group differ"), std::string::npos) << err;
}

TEST(GpuPlan, AViewWithAnOffsetStaysInsideWhatItAliases) {
  const std::string head = "gpu-plan f device 0 inputs 1 outputs 0 workspace 0\nslot 0 input 0 f32 1 8 offset 0\n";
  std::string err;
  EXPECT_TRUE(GpuPlan::parse(head + "slot 1 view 0 f32 1 4 offset 16\n", err)) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "slot 1 view 0 f32 1 4 offset 20\n", err));
  EXPECT_NE(err.find("reaches past the end"), std::string::npos) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "slot 1 view 0 f32 1 4 offset 2\n", err));
  EXPECT_NE(err.find("multiple of its element size"), std::string::npos) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "slot 1 view 0 f32 1 4 offset -4\n", err));
}

// ---- 3xTF32 (lower/gpu/split_fp32_matmuls.h) ----------------------------------

namespace {

std::vector<const plan::GpuLaunch*> of_kind(const GpuPlan& p, plan::LaunchKind k) {
  std::vector<const plan::GpuLaunch*> v;
  for (const auto& l : p.launches)
    if (l.kind == k) v.push_back(&l);
  return v;
}

shapeml::lower::gpu::PlanOptions three_x_tf32() {
  shapeml::lower::gpu::PlanOptions o;
  o.split_fp32_matmuls = true;
  return o;
}

}  // namespace

TEST(GpuPlan3xTf32, LargeF32MatmulsReadSplitOperandsOverAThreeTimesLongerK) {
  auto r = checked(kMlp);
  std::string err;
  // x [4,512,1024] w1 [1024,2048]: 2 M N K = 2 * 2048 * 2048 * 1024 = 8.6 GFLOP each, over the threshold.
  auto p = shapeml::lower::gpu::plan_function(*r.module, "mlp", {{"B", 4}, {"S", 512}, {"D", 1024}, {"F", 2048}}, err, three_x_tf32());
  ASSERT_TRUE(p) << err;
  auto splits = of_kind(*p, plan::LaunchKind::Tf32Split);
  auto gemms = of_kind(*p, plan::LaunchKind::Matmul);
  ASSERT_EQ(splits.size(), 4u) << p->to_text();
  ASSERT_EQ(gemms.size(), 2u);
  // The first GEMM: A = x split along its last axis (K), B = w1 along its first.
  const auto& g = *gemms[0];
  EXPECT_EQ(g.op, "tf32");
  EXPECT_NE(g.why.find("3xTF32"), std::string::npos) << g.why;
  ASSERT_EQ(g.inputs.size(), 3u);  // the bias epilogue stays
  EXPECT_EQ(p->slots[g.inputs[2]].index, 2);
  EXPECT_EQ(p->slots[g.inputs[0]].shape, (std::vector<int64_t>{4, 512, 3 * 1024}));
  EXPECT_EQ(p->slots[g.inputs[1]].shape, (std::vector<int64_t>{3 * 1024, 2048}));
  EXPECT_EQ(p->slots[g.outputs[0]].shape, (std::vector<int64_t>{4, 512, 2048}));
  EXPECT_EQ(splits[0]->op, "lhs");
  EXPECT_EQ(splits[0]->ints, (std::vector<int64_t>{2}));
  EXPECT_EQ(p->slots[splits[0]->inputs[0]].index, 0);  // x
  EXPECT_EQ(splits[1]->op, "rhs");
  EXPECT_EQ(splits[1]->ints, (std::vector<int64_t>{0}));
  EXPECT_EQ(p->slots[splits[1]->inputs[0]].index, 1);  // w1
  // Each split runs before the GEMM that reads it.
  for (size_t i = 0, seen = 0; i < p->launches.size(); ++i) {
    if (p->launches[i].kind == plan::LaunchKind::Tf32Split) ++seen;
    if (&p->launches[i] == gemms[0]) {
      EXPECT_EQ(seen, 2u);
    }
    if (&p->launches[i] == gemms[1]) {
      EXPECT_EQ(seen, 4u);
    }
  }
  EXPECT_EQ(shapeml::plan::verify_message(*p), "");
  // The split operands are temps in the workspace: x's and w1's splits (12 + 24 MiB) are live together.
  EXPECT_GE(p->workspace_bytes, int64_t{4} * 512 * 3 * 1024 * 4 + int64_t{3} * 1024 * 2048 * 4);
  std::string text = p->to_text(), perr;
  auto q = GpuPlan::parse(text, perr);
  ASSERT_TRUE(q) << perr;
  EXPECT_EQ(q->to_text(), text);
}

TEST(GpuPlan3xTf32, SmallMatmulsTheDefaultAndTf32PlansAreLeftAlone) {
  auto r = checked(kMlp);
  std::string err;
  const std::map<std::string, int64_t> small = {{"B", 4}, {"S", 128}, {"D", 256}, {"F", 1024}}, large = {{"B", 4}, {"S", 512}, {"D", 1024}, {"F", 2048}};
  auto p = shapeml::lower::gpu::plan_function(*r.module, "mlp", small, err, three_x_tf32());  // 0.27 GFLOP a GEMM
  ASSERT_TRUE(p) << err;
  EXPECT_TRUE(of_kind(*p, plan::LaunchKind::Tf32Split).empty()) << p->to_text();
  for (auto* g : of_kind(*p, plan::LaunchKind::Matmul)) EXPECT_EQ(g->op, "");
  auto d = shapeml::lower::gpu::plan_function(*r.module, "mlp", large, err);  // option off (the default)
  ASSERT_TRUE(d) << err;
  EXPECT_TRUE(of_kind(*d, plan::LaunchKind::Tf32Split).empty());
  auto o = three_x_tf32();
  o.allow_tf32 = true;  // plain TF32 asked for: nothing to split
  auto t = shapeml::lower::gpu::plan_function(*r.module, "mlp", large, err, o);
  ASSERT_TRUE(t) << err;
  EXPECT_TRUE(of_kind(*t, plan::LaunchKind::Tf32Split).empty());
  for (auto* g : of_kind(*t, plan::LaunchKind::Matmul)) EXPECT_EQ(g->op, "tf32");
  o.allow_tf32 = false;
  o.split_min_flops = 1;  // every matmul
  auto s = shapeml::lower::gpu::plan_function(*r.module, "mlp", small, err, o);
  ASSERT_TRUE(s) << err;
  EXPECT_EQ(of_kind(*s, plan::LaunchKind::Tf32Split).size(), 4u);
}

TEST(GpuPlan3xTf32, AnActivationReadByTwoGemmsIsSplitOnceAndTransposedWeightsAlongTheirLastAxis) {
  auto r = checked(
      "(module m (func f (dims M K N) (params (x (tensor f32 (M K) (cuda 0))) (wq (tensor f32 (K N) (cuda 0))) (wk (tensor f32 (N K) (cuda 0))))"
      " (returns (tensor f32 (M N) (cuda 0)))"
      " (return (add (matmul x wq) (matmul x (transpose wk))))))");
  std::string err;
  auto o = three_x_tf32();
  o.split_min_flops = 1;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"M", 8}, {"K", 12}, {"N", 20}}, err, o);
  ASSERT_TRUE(p) << err;
  auto splits = of_kind(*p, plan::LaunchKind::Tf32Split);
  ASSERT_EQ(splits.size(), 3u) << p->to_text();  // x once, wq, wk
  int lhs = 0;
  for (auto* s : splits) {
    const GpuSlot& src = p->slots[s->inputs[0]];
    if (s->op == "lhs") {
      ++lhs;
      EXPECT_EQ(src.index, 0);
      EXPECT_EQ(p->slots[s->outputs[0]].shape, (std::vector<int64_t>{8, 36}));
    } else if (src.index == 2) {  // wk [N, K] read transposed: K is its last axis
      EXPECT_EQ(s->ints, (std::vector<int64_t>{1}));
      EXPECT_EQ(p->slots[s->outputs[0]].shape, (std::vector<int64_t>{20, 36}));
    } else {
      EXPECT_EQ(s->ints, (std::vector<int64_t>{0}));
    }
  }
  EXPECT_EQ(lhs, 1);
  for (auto* g : of_kind(*p, plan::LaunchKind::Matmul)) EXPECT_EQ(g->op, "tf32");
  EXPECT_EQ(shapeml::plan::verify_message(*p), "");
}

TEST(GpuPlan3xTf32, ASplitIsRemadeAfterItsSourceBytesAreWrittenAgain) {
  // Built by hand: GEMM(x, w) -> out0, a copy that overwrites x's buffer (an
  // output slot here), GEMM(x, w) again: the second GEMM must not read the
  // first split of x.
  GpuPlan p;
  p.entry = "t";
  p.num_inputs = 2, p.num_outputs = 2;
  auto slot = [&](GpuSlot::Kind k, int32_t index, std::vector<int64_t> shape) {
    GpuSlot s;
    s.kind = k, s.index = index, s.dtype = plan::GpuDType::F32, s.shape = std::move(shape);
    p.slots.push_back(s);
    return static_cast<int32_t>(p.slots.size() - 1);
  };
  int32_t x = slot(GpuSlot::Kind::Output, 1, {4, 4}), w = slot(GpuSlot::Kind::Input, 1, {4, 4}), src = slot(GpuSlot::Kind::Input, 0, {4, 4}),
          y = slot(GpuSlot::Kind::Output, 0, {4, 4}), t = slot(GpuSlot::Kind::Temp, 0, {4, 4});
  auto launch = [&](plan::LaunchKind k, std::vector<int32_t> in, std::vector<int32_t> out) {
    plan::GpuLaunch l;
    l.kind = k, l.inputs = std::move(in), l.outputs = std::move(out);
    p.launches.push_back(l);
  };
  launch(plan::LaunchKind::Copy, {src}, {x});
  launch(plan::LaunchKind::Matmul, {x, w}, {t});
  launch(plan::LaunchKind::Copy, {t}, {x});
  launch(plan::LaunchKind::Matmul, {x, w}, {y});
  EXPECT_EQ(shapeml::lower::gpu::split_fp32_matmuls(p, 1), 2);
  auto splits = of_kind(p, plan::LaunchKind::Tf32Split);
  ASSERT_EQ(splits.size(), 3u) << p.to_text();  // x, w, and x again; w's bytes were not written: its split serves both
  EXPECT_EQ(splits[0]->inputs[0], x);
  EXPECT_EQ(splits[1]->inputs[0], w);
  EXPECT_EQ(splits[2]->inputs[0], x);
  auto gemms = of_kind(p, plan::LaunchKind::Matmul);
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_EQ(gemms[0]->inputs[0], splits[0]->outputs[0]);
  EXPECT_EQ(gemms[1]->inputs[0], splits[2]->outputs[0]);
  EXPECT_EQ(gemms[1]->inputs[1], splits[1]->outputs[0]);
  plan::layout_workspace(p);
  EXPECT_EQ(shapeml::plan::verify_message(p, plan::PlanStage::LaidOut), "");
}
