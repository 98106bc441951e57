// Defects of the plan executor found by reading the code (issue 21), each a
// test that failed before its fix, on a real GPU. Without a GPU every test
// prints "skipped: no GPU".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace shapeml::cuda::test {
namespace {

// A CUDA error the host program left behind (a failed cudaMalloc sets the
// last error and is not sticky) is not blamed on the next plan: plan_execute
// used to return it from its first launch's cudaGetLastError.
TEST(ExecutorDefects, AStaleErrorOfTheHostProgramIsNotBlamedOnThePlan) {
  REQUIRE_GPU();
  Tensor x{GpuDType::F32, {1000}, {}};
  for (int i = 0; i < 1000; ++i) x.v.push_back(i * 0.5 - 100);
  PlanBuilder b;
  int32_t in = b.input(0, GpuDType::F32, {1000}), out = b.output(0, GpuDType::F32, {1000});
  b.launch("unary", "neg", {in}, {out});
  void* huge = nullptr;
  ASSERT_NE(cudaMalloc(&huge, size_t{1} << 60), cudaSuccess);  // leaves cudaErrorMemoryAllocation as the last error
  auto r = run(b.p, {x}, {{GpuDType::F32, {1000}}});
  ASSERT_EQ(r.size(), 1u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(r[0].v[static_cast<size_t>(i)], -x.v[static_cast<size_t>(i)]);
}

// A plan with bounds checks called on a stream that the caller is capturing
// into a graph: FAILED_PRECONDITION naming the check, nothing enqueued, and
// the caller's capture still intact (it used to synchronize the capturing
// stream, which invalidates the capture, and report INTERNAL).
TEST(ExecutorDefects, ABoundsCheckedPlanUnderAForeignCaptureIsAFailedPreconditionAndTheCaptureSurvives) {
  REQUIRE_GPU();
  PlanBuilder b;
  int32_t pt = b.input(0, GpuDType::F32, {10, 4}), pi = b.input(1, GpuDType::I64, {3}), out = b.output(0, GpuDType::F32, {3, 4});
  int32_t rec = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::I64, {1}, 0);
  b.launch("gather", "", {pt, pi}, {out, rec});
  b.p.launches.back().why = "`gather` at t.sml:3:5";
  std::string text = b.p.to_text();
  shapeml_cuda_plan* plan = nullptr;
  char err[1024] = "";
  ASSERT_EQ(plan_create(0, text.c_str(), &plan, err, sizeof err), 0) << err;
  void *table = nullptr, *idx = nullptr, *res = nullptr, *ws = nullptr;
  ASSERT_EQ(cudaMalloc(&table, 160), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&idx, 24), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&res, 48), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ws, static_cast<size_t>(std::max<int64_t>(plan_workspace_bytes(plan), 256))), cudaSuccess);
  void* bufs[3] = {table, idx, res};
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  int32_t rc = plan_execute(plan, bufs, ws, s, err, sizeof err);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess) << "the caller's capture is intact";
  EXPECT_EQ(rc, 9) << err;  // SHAPEML_STATUS_FAILED_PRECONDITION
  EXPECT_NE(std::string(err).find("gather"), std::string::npos) << err;
  EXPECT_NE(std::string(err).find("t.sml:3:5"), std::string::npos) << err;
  EXPECT_NE(std::string(err).find("being captured"), std::string::npos) << err;
  if (graph) {
    size_t nodes = 99;
    EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
    EXPECT_EQ(nodes, 0u) << "nothing was enqueued into the caller's graph";
    cudaGraphDestroy(graph);
  }
  cudaStreamDestroy(s);
  for (void* p : {table, idx, res, ws}) cudaFree(p);
  plan_destroy(plan);
}

}  // namespace
}  // namespace shapeml::cuda::test
