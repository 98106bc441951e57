// The plan's `graph on|off` line (docs/design/cuda-graphs.md): what the
// planner decides, and that the line round-trips through the text form.
// Runs without a GPU.
#include <gtest/gtest.h>

#include "plan/plan.h"
#include "driver/frontend.h"
#include "lower/gpu/plan_gpu.h"
#include "plan/verify.h"

using shapeml::plan::GpuPlan;

namespace {

shapeml::check::CheckResult checked(const std::string& src) {
  auto r = shapeml::driver::check_source("t.sml", src);
  EXPECT_TRUE(r.ok()) << (r.diags.all().empty() ? "" : r.diags.all()[0].message);
  return r;
}

const char* kDevice =
    "(module m (func f (dims N) (params (x (tensor f32 (N) (cuda 0))) (y (tensor f32 (N) (cuda 0))))"
    " (returns (tensor f32 (N) (cuda 0))) (return (exp (add x y)))))";
const char* kMixed =
    "(module m (func f (dims N) (params (x (tensor f32 (N) host)))"
    " (returns (tensor f32 (N) (cuda 0))) (return (exp (copy_to_device x (cuda 0))))))";

}  // namespace

TEST(GpuGraphPlan, DeviceOnlyPlansSayGraphOnAndTheLineRoundTrips) {
  auto r = checked(kDevice);
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"N", 8}}, err);
  ASSERT_TRUE(p) << err;
  EXPECT_TRUE(p->graph);
  EXPECT_EQ(shapeml::plan::graph_blocker(*p), "");
  std::string text = p->to_text();
  EXPECT_NE(text.find("\ngraph on ; device slots only"), std::string::npos) << text;
  auto q = GpuPlan::parse(text, err);
  ASSERT_TRUE(q) << err;
  EXPECT_TRUE(q->graph);
  EXPECT_EQ(q->graph_why, p->graph_why);
  EXPECT_EQ(q->to_text(), text);
}

TEST(GpuGraphPlan, TheCompileOptionTurnsItOffAndSaysSo) {
  auto r = checked(kDevice);
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"N", 8}}, err, shapeml::lower::gpu::PlanOptions{false});
  ASSERT_TRUE(p) << err;
  EXPECT_FALSE(p->graph);
  EXPECT_NE(p->graph_why.find("compile option"), std::string::npos) << p->graph_why;
  auto q = GpuPlan::parse(p->to_text(), err);
  ASSERT_TRUE(q) << err;
  EXPECT_FALSE(q->graph);
  EXPECT_EQ(q->graph_why, p->graph_why);
}

TEST(GpuGraphPlan, HostSlotsKeepItOffWithTheReason) {
  auto r = checked(kMixed);
  std::string err;
  auto p = shapeml::lower::gpu::plan_function(*r.module, "f", {{"N", 8}}, err);
  ASSERT_TRUE(p) << err;
  EXPECT_FALSE(p->graph);
  EXPECT_NE(p->graph_why.find("host_input"), std::string::npos) << p->graph_why;
  EXPECT_NE(shapeml::plan::graph_blocker(*p), "");
  // A plan that claims `graph on` with a host slot does not validate.
  GpuPlan bad = *p;
  bad.graph = true;
  EXPECT_NE(shapeml::plan::verify_message(bad).find("cannot be captured"), std::string::npos) << shapeml::plan::verify_message(bad);
  std::string text = bad.to_text();
  EXPECT_FALSE(GpuPlan::parse(text, err));
  EXPECT_NE(err.find("cannot be captured"), std::string::npos) << err;
}

TEST(GpuGraphPlan, PlansWithoutTheLineReadAsOffAndBadValuesNameTheLine) {
  std::string err;
  const std::string head = "gpu-plan f device 0 inputs 1 outputs 1 workspace 0\nbind 0\nslot 0 input 0 f32 1 4 offset 0\nslot 1 output 0 f32 1 4 offset 0\n";
  const std::string launch = "launch unary exp shapeml in 1 0 out 1 1 ints 0 scalar 0 flag 0\n";
  auto old = GpuPlan::parse(head + launch, err);
  ASSERT_TRUE(old) << err;
  EXPECT_FALSE(old->graph);
  EXPECT_NE(old->graph_why.find("not recorded"), std::string::npos);
  auto on = GpuPlan::parse(head + "graph on ; by hand\n" + launch, err);
  ASSERT_TRUE(on) << err;
  EXPECT_TRUE(on->graph);
  EXPECT_EQ(on->graph_why, "by hand");
  EXPECT_FALSE(GpuPlan::parse(head + "graph maybe\n" + launch, err));
  EXPECT_NE(err.find("line 5: graph must be on or off, got `maybe`"), std::string::npos) << err;
  EXPECT_FALSE(GpuPlan::parse(head + "graph\n" + launch, err));
  EXPECT_NE(err.find("line 5: expected on or off"), std::string::npos) << err;
}
