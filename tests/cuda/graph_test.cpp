// CUDA graph replay of plans (src/cuda/executor/graph.h): replay must give
// bit-identical bytes to direct execution (the same kernels and cuBLASLt
// algorithms with the same pointers), follow moved buffers, keep streams
// apart, and refuse plans that cannot be captured. Each test prints
// "skipped: no GPU" and passes without an sm_90+ GPU.
#include <array>
#include <cstring>
#include <memory>
#include <random>

#include "cuda/executor/graph.h"
#include "test_util.h"

namespace shapeml::cuda::test {
namespace {

// Device buffers freed at scope exit.
struct DevBuf {
  void* p = nullptr;
  size_t n = 0;
  explicit DevBuf(size_t bytes) : n(bytes) {
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) p = nullptr;
  }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
};

std::vector<uint8_t> download(const void* p, size_t n) {
  std::vector<uint8_t> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

void upload_random(void* p, size_t floats, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> h(floats);
  for (float& x : h) x = d(rng);
  ASSERT_EQ(cudaMemcpy(p, h.data(), floats * 4, cudaMemcpyHostToDevice), cudaSuccess);
}

// The MLP of examples/mlp.sml on (cuda 0) as the planner lowers it: matmul + b1
// (cuBLASLt bias epilogue), gelu, matmul + b2 into the output.
GpuPlan mlp_plan(int64_t B, int64_t S, int64_t D, int64_t F) {
  PlanBuilder b;
  int32_t x = b.input(0, GpuDType::F32, {B, S, D}), w1 = b.input(1, GpuDType::F32, {D, F}), b1 = b.input(2, GpuDType::F32, {F});
  int32_t w2 = b.input(3, GpuDType::F32, {F, D}), b2 = b.input(4, GpuDType::F32, {D});
  int32_t y = b.output(0, GpuDType::F32, {B, S, D});
  int64_t h_bytes = B * S * F * 4;
  int32_t h = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::F32, {B, S, F}, 0);
  int32_t g = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::F32, {B, S, F}, (h_bytes + 255) / 256 * 256);
  b.launch("matmul", "", {x, w1, b1}, {h});
  b.launch("unary", "gelu", {h}, {g});
  b.launch("matmul", "", {g, w2, b2}, {y});
  b.p.graph = true;
  b.p.graph_why = "test";
  b.p.branches = true;  // as the planner writes it
  return b.p;
}

// ~30 small elementwise launches (launch-bound): alternating add / tanh /
// mul through two temporaries, the last into the output.
GpuPlan chain_plan(int n_launches, int64_t elems) {
  PlanBuilder b;
  int32_t in = b.input(0, GpuDType::F32, {elems}), in2 = b.input(1, GpuDType::F32, {elems});
  int32_t out = b.output(0, GpuDType::F32, {elems});
  int64_t bytes = (elems * 4 + 255) / 256 * 256;
  int32_t t[2] = {b.slot(GpuSlot::Kind::Temp, 0, GpuDType::F32, {elems}, 0), b.slot(GpuSlot::Kind::Temp, 0, GpuDType::F32, {elems}, bytes)};
  int32_t cur = in;
  for (int i = 0; i < n_launches; ++i) {
    int32_t dst = i == n_launches - 1 ? out : t[i % 2];
    if (i % 3 == 0) b.launch("binary", "add", {cur, in2}, {dst});
    else if (i % 3 == 1) b.launch("unary", "tanh", {cur}, {dst});
    else b.launch("binary", "mul", {cur, in}, {dst});
    cur = dst;
  }
  b.p.graph = true;
  b.p.graph_why = "test";
  b.p.branches = true;  // as the planner writes it
  return b.p;
}

struct Prepared {
  shapeml_cuda_plan* plan = nullptr;
  std::string error;
  explicit Prepared(const GpuPlan& p) {
    char err[1024] = {0};
    if (plan_create(0, p.to_text().c_str(), &plan, err, sizeof err) != 0) error = err;
  }
  ~Prepared() { plan_destroy(plan); }
};

// A graph with its memory; destroyed (waiting for its work) before the memory is freed.
struct Graph {
  std::unique_ptr<DevBuf> mem;
  shapeml_cuda_graph* g = nullptr;
  std::string error;
  Graph(shapeml_cuda_plan* plan, int32_t rebind) {
    mem = std::make_unique<DevBuf>(static_cast<size_t>(graph_memory_bytes(plan, rebind)));
    char err[1024] = {0};
    if (graph_create(plan, rebind, mem->p, &g, err, sizeof err) != 0) error = err;
  }
  ~Graph() {
    char err[1024] = {0};
    EXPECT_EQ(graph_destroy(g, err, sizeof err), 0) << err;
  }
  int32_t run(std::vector<void*>& bufs, cudaStream_t s, int32_t* ran, std::string& error_out) {
    char err[1024] = {0};
    int32_t rc = graph_execute(g, bufs.data(), s, ran, err, sizeof err);
    error_out = err;
    return rc;
  }
  std::array<int64_t, 4> counters() const {
    std::array<int64_t, 4> c{};
    graph_counters(g, c.data());
    return c;
  }
};

// Inputs (random, fixed seeds) and one output buffer set for a plan.
struct Buffers {
  std::vector<std::unique_ptr<DevBuf>> in, out;
  Buffers(const GpuPlan& p, uint32_t seed) {
    for (int32_t i = 0; i < p.num_inputs + p.num_outputs; ++i) {
      int64_t bytes = 0;
      for (const GpuSlot& s : p.slots)
        if ((s.kind == GpuSlot::Kind::Input && s.index == i) || (s.kind == GpuSlot::Kind::Output && s.index == i - p.num_inputs))
          bytes = s.bytes();
      auto b = std::make_unique<DevBuf>(static_cast<size_t>(bytes));
      if (i < p.num_inputs) {
        upload_random(b->p, static_cast<size_t>(bytes / 4), seed + static_cast<uint32_t>(i));
        in.push_back(std::move(b));
      } else {
        cudaMemset(b->p, 0xff, static_cast<size_t>(bytes));  // NaN pattern: unwritten bytes show
        out.push_back(std::move(b));
      }
    }
    // The uploads ran on the legacy stream; the tests use non-blocking streams.
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  // Poisons the output on `s` (ordered before the next run there).
  void poison(cudaStream_t s) const { EXPECT_EQ(cudaMemsetAsync(out[0]->p, 0xff, out[0]->n, s), cudaSuccess); }
  std::vector<void*> ptrs() const {
    std::vector<void*> v;
    for (const auto& b : in) v.push_back(b->p);
    for (const auto& b : out) v.push_back(b->p);
    return v;
  }
  std::vector<uint8_t> result() const { return download(out[0]->p, out[0]->n); }
};

// The output bytes of a direct plan_execute on `bufs`.
std::vector<uint8_t> direct(shapeml_cuda_plan* plan, const Buffers& bufs, cudaStream_t s) {
  DevBuf ws(static_cast<size_t>(plan_workspace_bytes(plan)));
  std::vector<void*> ptrs = bufs.ptrs();
  char err[1024] = {0};
  EXPECT_EQ(plan_execute(plan, ptrs.data(), ws.p, s, err, sizeof err), 0) << err;
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  return bufs.result();
}

class GraphReplay : public ::testing::TestWithParam<int32_t> {};

void expect_replay_matches_direct(const GpuPlan& gp, int32_t rebind) {
  Prepared p(gp);
  ASSERT_EQ(p.error, "");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Buffers bufs(gp, 7);
  std::vector<uint8_t> want = direct(p.plan, bufs, s);
  {
    Graph g(p.plan, rebind);
    ASSERT_EQ(g.error, "");
    for (int call = 0; call < 3; ++call) {  // capture, then replays
      bufs.poison(s);
      std::vector<void*> ptrs = bufs.ptrs();
      int32_t ran = 0;
      std::string err;
      ASSERT_EQ(g.run(ptrs, s, &ran, err), 0) << err;
      EXPECT_EQ(ran, 1);
      CUDA_OK(cudaStreamSynchronize(s));
      std::vector<uint8_t> got = bufs.result();
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0) << "call " << call << ": replay differs from direct execution";
    }
    auto c = g.counters();
    EXPECT_EQ(c[0], 1) << "one capture";
    EXPECT_EQ(c[1], 3) << "three replays";
    EXPECT_EQ(c[3], 0) << "no direct runs";
  }
  cudaStreamDestroy(s);
}

TEST_P(GraphReplay, MlpIsBitIdenticalToDirectExecution) {
  REQUIRE_GPU();
  expect_replay_matches_direct(mlp_plan(4, 128, 256, 1024), GetParam());
}

TEST_P(GraphReplay, ManyElementwiseLaunchesAreBitIdenticalToDirectExecution) {
  REQUIRE_GPU();
  expect_replay_matches_direct(chain_plan(30, 4096), GetParam());
}

TEST_P(GraphReplay, NewInputAndOutputAddressesAreFollowed) {
  REQUIRE_GPU();
  const int32_t rebind = GetParam();
  GpuPlan gp = mlp_plan(4, 128, 256, 1024);  // the real shapes: cuBLASLt's kernels for them
  Prepared p(gp);
  ASSERT_EQ(p.error, "");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // kGraphMaxExecs + 2 buffer sets with different inputs: more address sets
  // than a recapture graph keeps, so the last ones update an executable.
  std::vector<std::unique_ptr<Buffers>> sets;
  std::vector<std::vector<uint8_t>> want;
  for (uint32_t k = 0; k < kGraphMaxExecs + 2; ++k) {
    sets.push_back(std::make_unique<Buffers>(gp, 100 + 10 * k));
    want.push_back(direct(p.plan, *sets.back(), s));
  }
  Graph g(p.plan, rebind);
  ASSERT_EQ(g.error, "");
  auto call = [&](size_t k) {
    sets[k]->poison(s);
    std::vector<void*> ptrs = sets[k]->ptrs();
    int32_t ran = 0;
    std::string err;
    ASSERT_EQ(g.run(ptrs, s, &ran, err), 0) << err;
    ASSERT_EQ(ran, 1);
    CUDA_OK(cudaStreamSynchronize(s));
    std::vector<uint8_t> got = sets[k]->result();
    EXPECT_EQ(std::memcmp(got.data(), want[k].data(), got.size()), 0) << "buffer set " << k;
  };
  call(0);
  call(1);  // a second call with other input and output addresses
  call(0);  // back to the first: a cached executable (recapture) or rebound nodes (copy-in)
  for (size_t k = 2; k < sets.size(); ++k) call(k);
  call(1);
  auto c = g.counters();
  if (rebind == kGraphRebindRecapture) {
    // Sets 0..5 captured once each; set 1 again at the end (evicted by then).
    EXPECT_EQ(c[0], static_cast<int64_t>(sets.size()) + 1);
    EXPECT_GE(c[2], 1) << "with the cache full, cudaGraphExecUpdate should update an executable in place (same topology, new pointers)";
  } else {
    EXPECT_EQ(c[0], 1) << "copy-in captures once";
    EXPECT_EQ(c[2], static_cast<int64_t>(sets.size()) + 1) << "every call after the first moved the buffers";
  }
  EXPECT_EQ(c[1], static_cast<int64_t>(sets.size()) + 2);
  cudaStreamDestroy(s);
}

TEST_P(GraphReplay, TwoStreamsWithTheirOwnGraphsRunConcurrently) {
  REQUIRE_GPU();
  GpuPlan gp = chain_plan(30, 1 << 16);
  Prepared p(gp);
  ASSERT_EQ(p.error, "");
  cudaStream_t s[2];
  for (auto& x : s) CUDA_OK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  Buffers a(gp, 1), b(gp, 2);
  std::vector<uint8_t> want_a = direct(p.plan, a, s[0]), want_b = direct(p.plan, b, s[1]);
  {
    // One graph (and workspace) per stream, as the runtime keeps them.
    Graph ga(p.plan, GetParam()), gb(p.plan, GetParam());
    ASSERT_EQ(ga.error, "");
    ASSERT_EQ(gb.error, "");
    std::vector<void*> pa = a.ptrs(), pb = b.ptrs();
    a.poison(s[0]);  // direct() wrote the expected bytes there already
    b.poison(s[1]);
    for (int rep = 0; rep < 20; ++rep) {  // interleaved, nothing waits in between
      int32_t ran = 0;
      std::string err;
      ASSERT_EQ(ga.run(pa, s[0], &ran, err), 0) << err;
      ASSERT_EQ(gb.run(pb, s[1], &ran, err), 0) << err;
    }
    CUDA_OK(cudaStreamSynchronize(s[0]));
    CUDA_OK(cudaStreamSynchronize(s[1]));
    EXPECT_EQ(a.result(), want_a);
    EXPECT_EQ(b.result(), want_b);
  }
  for (auto& x : s) cudaStreamDestroy(x);
}

INSTANTIATE_TEST_SUITE_P(Rebind, GraphReplay, ::testing::Values(kGraphRebindRecapture, kGraphRebindCopyIn),
                         [](const ::testing::TestParamInfo<int32_t>& i) { return i.param == kGraphRebindCopyIn ? "CopyIn" : "Recapture"; });

// Branches (plan/launch_dependencies.h): two launches that read x and write
// their own temps, and the add of both. Returns the plan; `war`: a fourth
// launch first reuses the first temp's bytes after its reader, so it must
// wait for that reader (write after read) though it reads nothing of it.
GpuPlan branch_plan(bool war) {
  PlanBuilder b;
  const int64_t n = 1 << 16, bytes = n * 4;
  int32_t x = b.input(0, GpuDType::F32, {n});
  int32_t out = b.output(0, GpuDType::F32, {n});
  int32_t t0 = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::F32, {n}, 0);
  int32_t t1 = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::F32, {n}, bytes);
  if (!war) {
    b.launch("unary", "neg", {x}, {t0});
    b.launch("unary", "exp", {x}, {t1});
    b.launch("binary", "add", {t0, t1}, {out});
  } else {
    int32_t reuse = b.slot(GpuSlot::Kind::Temp, 0, GpuDType::F32, {n}, 0);  // t0's bytes, after its last reader
    b.launch("unary", "neg", {x}, {t0});
    b.launch("unary", "exp", {t0}, {t1});
    b.launch("unary", "tanh", {x}, {reuse});
    b.launch("binary", "add", {t1, reuse}, {out});
  }
  b.p.workspace_bytes = 2 * bytes;
  b.p.graph = true;
  b.p.graph_why = "test";
  b.p.branches = true;
  return b.p;
}

// Captures plan_execute_branched (or, `serial`, plan_execute) into a graph
// of our own and counts its nodes and roots.
void captured_shape(shapeml_cuda_plan* plan, const Buffers& bufs, bool serial, size_t& nodes, size_t& roots) {
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  DevBuf ws(static_cast<size_t>(plan_workspace_bytes(plan)));
  std::vector<void*> ptrs = bufs.ptrs();
  char err[1024] = {0};
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  int32_t rc = serial ? plan_execute(plan, ptrs.data(), ws.p, s, err, sizeof err) : plan_execute_branched(plan, ptrs.data(), ws.p, s, err, sizeof err);
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &g));
  EXPECT_EQ(rc, 0) << err;
  nodes = roots = 0;
  CUDA_OK(cudaGraphGetNodes(g, nullptr, &nodes));
  CUDA_OK(cudaGraphGetRootNodes(g, nullptr, &roots));
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

TEST(GraphBranches, LaunchesThatShareNoBytesBecomeParallelBranches) {
  REQUIRE_GPU();
  GpuPlan gp = branch_plan(false);
  Prepared p(gp);
  ASSERT_EQ(p.error, "");
  Buffers bufs(gp, 11);
  size_t nodes = 0, roots = 0;
  captured_shape(p.plan, bufs, false, nodes, roots);
  EXPECT_EQ(nodes, 3u);
  EXPECT_EQ(roots, 2u) << "neg and exp both read only x: two roots";
  captured_shape(p.plan, bufs, true, nodes, roots);
  EXPECT_EQ(roots, 1u) << "plan_execute under capture: one chain";
  for (int32_t rebind : {kGraphRebindRecapture, kGraphRebindCopyIn}) expect_replay_matches_direct(gp, rebind);
}

TEST(GraphBranches, ReusedWorkspaceBytesWaitForTheirLastReader) {
  REQUIRE_GPU();
  GpuPlan gp = branch_plan(true);
  Prepared p(gp);
  ASSERT_EQ(p.error, "");
  Buffers bufs(gp, 12);
  size_t nodes = 0, roots = 0;
  captured_shape(p.plan, bufs, false, nodes, roots);
  EXPECT_EQ(nodes, 4u);
  EXPECT_EQ(roots, 1u) << "tanh writes the bytes exp reads: it waits for exp, so only neg is a root";
  for (int32_t rebind : {kGraphRebindRecapture, kGraphRebindCopyIn}) expect_replay_matches_direct(gp, rebind);
}

TEST(GraphReplay, AStreamCapturedByTheCallerIsLeftToTheCaller) {
  REQUIRE_GPU();
  GpuPlan gp = chain_plan(4, 256);
  Prepared p(gp);
  ASSERT_EQ(p.error, "");
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Buffers bufs(gp, 3);
  Graph g(p.plan, kGraphRebindRecapture);
  ASSERT_EQ(g.error, "");
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  std::vector<void*> ptrs = bufs.ptrs();
  int32_t ran = 7;
  std::string err;
  EXPECT_EQ(g.run(ptrs, s, &ran, err), 0) << err;
  EXPECT_EQ(ran, 0) << "nothing enqueued: the caller runs the plan into its own capture";
  cudaGraph_t captured = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &captured));
  if (captured) cudaGraphDestroy(captured);
  EXPECT_EQ(g.counters()[0], 0);
  cudaStreamDestroy(s);
}

TEST(GraphReplay, AFailedCaptureIsAStatusNamingTheCallAndEnqueuesNothing) {
  REQUIRE_GPU();
  GpuPlan gp = chain_plan(6, 1024);
  Prepared p(gp);
  ASSERT_EQ(p.error, "");
  Buffers bufs(gp, 5);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<uint8_t> want = direct(p.plan, bufs, s);
  Graph g(p.plan, kGraphRebindRecapture);
  ASSERT_EQ(g.error, "");
  // The legacy default stream cannot be captured.
  std::vector<void*> ptrs = bufs.ptrs();
  int32_t ran = 7;
  std::string err;
  EXPECT_NE(g.run(ptrs, cudaStreamLegacy, &ran, err), 0);
  EXPECT_EQ(ran, 0) << "nothing enqueued: the caller may run the plan directly";
  EXPECT_NE(err.find("cudaStreamBeginCapture"), std::string::npos) << err;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the error state was cleared";
  // The same graph still works on a stream that can be captured.
  bufs.poison(s);
  ASSERT_EQ(g.run(ptrs, s, &ran, err), 0) << err;
  EXPECT_EQ(ran, 1);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(bufs.result(), want);
  EXPECT_EQ(g.counters()[0], 1);
  cudaStreamDestroy(s);
}

TEST(GraphReplay, APlanWithHostSlotsIsRefused) {
  REQUIRE_GPU();
  PlanBuilder b;
  int32_t h = b.slot(GpuSlot::Kind::HostInput, 0, GpuDType::F32, {4});
  int32_t o = b.output(0, GpuDType::F32, {4});
  b.launch("copy", "", {h}, {o});
  Prepared p(b.p);
  ASSERT_EQ(p.error, "");
  char why[256] = {0};
  EXPECT_EQ(plan_graph(p.plan, why, sizeof why), -1);
  EXPECT_NE(std::string(why).find("host_input"), std::string::npos) << why;
  shapeml_cuda_graph* g = nullptr;
  char err[512] = {0};
  EXPECT_EQ(graph_create(p.plan, kGraphRebindRecapture, nullptr, &g, err, sizeof err), 9 /* FAILED_PRECONDITION */);
  EXPECT_EQ(g, nullptr);
  EXPECT_NE(std::string(err).find("cannot be captured"), std::string::npos) << err;
}

TEST(GraphReplay, ThePlansLineIsReported) {
  REQUIRE_GPU();
  GpuPlan on = chain_plan(2, 64), off = chain_plan(2, 64);
  off.graph = false;
  off.graph_why = "turned off by hand";
  Prepared pon(on), poff(off);
  ASSERT_EQ(pon.error, "");
  ASSERT_EQ(poff.error, "");
  char why[256] = {0};
  EXPECT_EQ(plan_graph(pon.plan, why, sizeof why), 1);
  EXPECT_EQ(plan_graph(poff.plan, why, sizeof why), 0);
  EXPECT_STREQ(why, "turned off by hand");
}

}  // namespace
}  // namespace shapeml::cuda::test
