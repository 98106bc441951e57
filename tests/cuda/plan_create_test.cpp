// plan_create's checks, which need no GPU: malformed text and inconsistent
// launches are INVALID_ARGUMENT naming the line or the launch, a launch over
// a kernel limit UNIMPLEMENTED; a valid plan without a usable GPU is
// UNAVAILABLE; nothing crashes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "plan/fused_program.h"
#include "cuda/executor/executor.h"
#include "test_util.h"

namespace shapeml::cuda::test {
namespace {

constexpr int32_t kInvalidArgument = 1, kUnimplemented = 6, kUnavailable = 7;

int32_t create(const std::string& text, std::string& msg, shapeml_cuda_plan** plan) {
  char err[512] = "unwritten";
  int32_t rc = plan_create(0, text.c_str(), plan, err, sizeof err);
  msg = err;
  return rc;
}

GpuPlan add_plan() {
  PlanBuilder b;
  int32_t x = b.input(0, GpuDType::F32, {4});
  int32_t y = b.input(1, GpuDType::F32, {4});
  int32_t o = b.output(0, GpuDType::F32, {4});
  b.launch("binary", "add", {x, y}, {o});
  return b.p;
}

TEST(PlanCreate, MalformedTextIsInvalidArgumentWithTheLine) {
  std::string text = add_plan().to_text();
  size_t at = text.find("launch binary");
  text.replace(at, 13, "launch binary oops");  // an extra word where `in` belongs
  // The launch's line: 1 + the newlines before it (header, bind, 3 slots, graph, branches).
  std::string line = "line " + std::to_string(1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  EXPECT_EQ(line, "line 8");
  shapeml_cuda_plan* plan = nullptr;
  std::string msg;
  EXPECT_EQ(create(text, msg, &plan), kInvalidArgument);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(msg.find(line + ":"), std::string::npos) << msg;
}

TEST(PlanCreate, GarbageAndEmptyAndNull) {
  shapeml_cuda_plan* plan = nullptr;
  std::string msg;
  EXPECT_EQ(create("hello world\n", msg, &plan), kInvalidArgument);
  EXPECT_NE(msg.find("line 1"), std::string::npos) << msg;
  EXPECT_EQ(create("", msg, &plan), kInvalidArgument);
  char err[8];
  EXPECT_EQ(plan_create(0, nullptr, &plan, err, sizeof err), kInvalidArgument);
  EXPECT_EQ(std::string(err).size(), 7u);  // truncated, terminated
  EXPECT_EQ(plan_create(0, "x", nullptr, nullptr, 0), kInvalidArgument);
  EXPECT_EQ(plan_workspace_bytes(nullptr), 0);
  plan_destroy(nullptr);
}

TEST(PlanCreate, InconsistentLaunchNamesTheLaunch) {
  GpuPlan p = add_plan();
  p.slots[2].shape = {5};  // out no longer the broadcast of [4] and [4]
  shapeml_cuda_plan* plan = nullptr;
  std::string msg;
  EXPECT_EQ(create(p.to_text(), msg, &plan), kInvalidArgument);
  EXPECT_NE(msg.find("launch 0 (binary add)"), std::string::npos) << msg;

  PlanBuilder b;  // exp of an integer
  int32_t x = b.input(0, GpuDType::I32, {3});
  int32_t o = b.output(0, GpuDType::I32, {3});
  b.launch("unary", "exp", {x}, {o});
  EXPECT_EQ(create(b.p.to_text(), msg, &plan), kInvalidArgument);
  EXPECT_NE(msg.find("launch 0 (unary exp)"), std::string::npos) << msg;

  PlanBuilder m;  // matmul inner dimensions differ
  int32_t a = m.input(0, GpuDType::F32, {2, 3});
  int32_t w = m.input(1, GpuDType::F32, {4, 5});
  int32_t c = m.output(0, GpuDType::F32, {2, 5});
  m.launch("matmul", "", {a, w}, {c});
  EXPECT_EQ(create(m.p.to_text(), msg, &plan), kInvalidArgument);
  EXPECT_NE(msg.find("inner dimensions"), std::string::npos) << msg;
}

// A plan over a kernel limit is valid but not runnable here: UNIMPLEMENTED,
// from the same verifier the compiler runs (plan/verify.h), before the
// device is asked for.
TEST(PlanCreate, APlanOverAKernelLimitIsUnimplementedNamingTheLaunch) {
  PlanBuilder b;  // nine dims that cannot merge: every other one broadcast in y
  Shape full(9, 2), alternate;
  for (size_t i = 0; i < full.size(); ++i) alternate.push_back(i % 2 ? 2 : 1);
  int32_t x = b.input(0, GpuDType::F32, full);
  int32_t y = b.input(1, GpuDType::F32, alternate);
  int32_t o = b.output(0, GpuDType::F32, full);
  b.launch("binary", "mul", {x, y}, {o});
  shapeml_cuda_plan* plan = nullptr;
  std::string msg;
  EXPECT_EQ(create(b.p.to_text(), msg, &plan), kUnimplemented) << msg;
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(msg.find("launch 0 (binary mul): more than 8 dimensions after coalescing"), std::string::npos) << msg;
}

TEST(PlanCreate, ValidPlanWithoutGpuIsUnavailable) {
  shapeml_cuda_plan* plan = nullptr;
  std::string msg;
  int32_t rc = create(add_plan().to_text(), msg, &plan);
  if (have_gpu()) {
    EXPECT_EQ(rc, 0) << msg;
    EXPECT_NE(plan, nullptr);
    plan_destroy(plan);
  } else {
    EXPECT_EQ(rc, kUnavailable) << msg;
    EXPECT_EQ(plan, nullptr);
    EXPECT_FALSE(msg.empty());
  }
}

// A fused launch (plan/fused_program.h) is checked like the launches it stands
// for: its program at parse, its inputs' broadcasting at prepare.
TEST(PlanCreate, FusedLaunchesAreCheckedLikeTheirOps) {
  namespace F = shapeml::plan::fused;
  auto plan_of = [](std::vector<int64_t> in_shape, std::vector<F::Node> nodes) {
    PlanBuilder b;
    int32_t x = b.input(0, GpuDType::F32, std::move(in_shape));
    int32_t o = b.output(0, GpuDType::F32, {4, 6});
    b.launch("fused", "", {x}, {o}, F::encode(nodes));
    return b.p;
  };
  F::Node ld{F::kLoad, -1, GpuDType::F32, 0, -1, -1};
  F::Node io{F::kIota, -1, GpuDType::F32, 1, -1, -1};
  F::Node c{F::kConst, -1, GpuDType::F32, F::double_bits(0.5), -1, -1};
  F::Node mul{F::kBinary, 2, GpuDType::F32, 0, 1, -1};
  F::Node add{F::kBinary, 0, GpuDType::F32, 3, 2, -1};
  shapeml_cuda_plan* plan = nullptr;
  std::string msg;
  int32_t rc = create(plan_of({6}, {ld, io, c, mul, add}).to_text(), msg, &plan);  // x[j] * j + 0.5
  if (have_gpu()) {
    EXPECT_EQ(rc, 0) << msg;
    plan_destroy(plan);
    plan = nullptr;
  } else {
    EXPECT_EQ(rc, kUnavailable) << msg;
  }
  EXPECT_EQ(create(plan_of({5}, {ld, io, c, mul, add}).to_text(), msg, &plan), kInvalidArgument);  // [5] onto [4 6]
  EXPECT_NE(msg.find("launch 0 (fused)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("broadcast"), std::string::npos) << msg;
  F::Node bad_io{F::kIota, -1, GpuDType::F32, 2, -1, -1};  // axis 2 of a rank-2 output
  EXPECT_EQ(create(plan_of({6}, {ld, bad_io, c, mul, add}).to_text(), msg, &plan), kInvalidArgument);
  EXPECT_NE(msg.find("iota axis"), std::string::npos) << msg;
  F::Node ld64{F::kLoad, -1, GpuDType::F64, 0, -1, -1};  // the input is f32
  EXPECT_EQ(create(plan_of({6}, {ld64}).to_text(), msg, &plan), kInvalidArgument);
  EXPECT_NE(msg.find("load dtype"), std::string::npos) << msg;
  EXPECT_EQ(plan, nullptr);
}

}  // namespace
}  // namespace shapeml::cuda::test
