// Per-context default streams on a real GPU (docs/design/cuda-plugin.md,
// "Streams"), through the runtime's C++ API: an AOT module loaded twice,
// each copy given its own ContextStreams — what a shapeml_context does for
// the modules compiled in it (the compiler library is not on the GPU
// machine). `slow` keeps a stream busy for a while, so a missing ordering
// between streams shows up as a wrong result, not as a rare flake.
// Module: $SHAPEML_TEST_STREAMS_MODULE (tests/gpu/context_streams.sml,
// built with N=2048 by scripts/gpu-stage.sh); skipped without it.
#include <cstdlib>
#include <vector>

#include "gpu_test_util.h"
#include "runtime/context_streams.h"
#include "runtime/cuda_memory.h"
#include "runtime/cuda_plugin_loader.h"
#include "runtime/device_copy.h"
#include "runtime/module.h"

using namespace shapeml::runtime;

namespace {

constexpr int64_t kN = 2048;

class ContextStreamsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = cuda_plugin();
    SHAPEML_SKIP_WITHOUT_GPU(p.ok() ? "" : p.status().message());
    const char* path = std::getenv("SHAPEML_TEST_STREAMS_MODULE");
    if (!path || !*path) GTEST_SKIP() << "skipped: SHAPEML_TEST_STREAMS_MODULE is not set";
    path_ = path;
    auto mr = make_cuda_async_resource(0, UINT64_MAX);
    ASSERT_TRUE(mr.ok()) << mr.status().str();
    mr_ = *mr;
  }
  // The module with NULL-stream calls on `streams`.
  std::shared_ptr<Module> load(const ContextStreamsPtr& streams) {
    auto m = Module::load(path_);
    EXPECT_TRUE(m.ok()) << m.status().str();
    if (!m.ok()) return nullptr;
    (*m)->set_default_streams(streams);
    return *m;
  }
  // An N×N matrix with `diag` on the diagonal and `off` elsewhere, on the device.
  TensorRef upload(float diag, float off) {
    std::vector<float> v(static_cast<size_t>(kN * kN), off);
    for (int64_t i = 0; i < kN; ++i) v[static_cast<size_t>(i * kN + i)] = diag;
    int64_t shape[2] = {kN, kN};
    auto host = Tensor::copy_of(shapeml::types::DType::F32, shape, v.data(), v.size() * sizeof(float));
    EXPECT_TRUE(host.ok()) << host.status().str();
    auto dev = copy_to_device(*host, mr_, nullptr);
    EXPECT_TRUE(dev.ok()) << dev.status().str();
    return *dev;
  }
  // Whether device tensor `t` is diag·I exactly (read with a NULL stream:
  // the copy runs after the work that writes `t`).
  void expect_scaled_identity(const TensorRef& t, float diag, const char* what) {
    auto host = copy_to_host(t, nullptr, nullptr);
    ASSERT_TRUE(host.ok()) << host.status().str();
    const float* v = (*host)->data_as<float>();
    int bad = 0;
    for (int64_t i = 0; i < kN && bad < 5; ++i)
      for (int64_t j = 0; j < kN && bad < 5; ++j) {
        float want = i == j ? diag : 0.0f, got = v[i * kN + j];
        if (got != want) ++bad, ADD_FAILURE() << what << ": [" << i << ", " << j << "] is " << got << ", expected " << want;
      }
  }
  std::string path_;
  MemoryResourcePtr mr_;
};

TEST_F(ContextStreamsGpu, EachContextRunsOnItsOwnStreamAndConsumersWaitForProducers) {
  auto a = std::make_shared<ContextStreams>(), b = std::make_shared<ContextStreams>();
  auto ma = load(a), mb = load(b);
  ASSERT_TRUE(ma && mb);
  TensorRef x = upload(1, 0);
  for (int round = 0; round < 3; ++round) {
    std::vector<TensorRef> ya, yb;
    ASSERT_TRUE(ma->call("slow", {x}, ya).ok());
    // B reads A's result at once: its stream must wait for A's on the GPU.
    ASSERT_TRUE(mb->call("twice", {ya[0]}, yb).ok());
    auto sa = a->stream(0), sb = b->stream(0), dflt = (*cuda_plugin())->default_stream(0);
    ASSERT_TRUE(sa.ok() && sb.ok() && dflt.ok());
    EXPECT_NE(*sa, *sb);
    EXPECT_NE(*sa, *dflt);
    EXPECT_EQ(ya[0]->home_stream(), *sa) << "A's output is allocated on A's stream";
    EXPECT_EQ(yb[0]->home_stream(), *sb);
    ya.clear();  // released while B may still read it: freed only after B's stream is done with it
    expect_scaled_identity(yb[0], 2, "twice(slow(I)) across two contexts");
  }
}

TEST_F(ContextStreamsGpu, AnInputReleasedDuringACallIsNotReusedUnderIt) {
  auto a = std::make_shared<ContextStreams>();
  auto ma = load(a);
  ASSERT_TRUE(ma);
  for (int round = 0; round < 3; ++round) {
    TensorRef x = upload(1, 0);  // home: the runtime's stream
    std::vector<TensorRef> y;
    ASSERT_TRUE(ma->call("slow", {x}, y).ok());
    x = TensorRef();  // its memory goes back to the pool while `slow` still reads it...
    TensorRef z = upload(7, 7);  // ...and this upload may get it: only after A's work
    expect_scaled_identity(y[0], 1, "slow(I) with its input released during the call");
  }
}

TEST_F(ContextStreamsGpu, ResultsOutliveTheirContextAndModule) {
  TensorRef y0;
  {
    auto a = std::make_shared<ContextStreams>();
    auto ma = load(a);
    ASSERT_TRUE(ma);
    TensorRef x = upload(1, 0);
    std::vector<TensorRef> y;
    ASSERT_TRUE(ma->call("slow", {x}, y).ok());
    y0 = y[0];
  }  // the context's last references but the result's: its stream lives on in y0
  expect_scaled_identity(y0, 1, "a result read after its context is gone");
}

TEST_F(ContextStreamsGpu, TwoContextsOverlapOnTheGpu) {
  // Not a timing assertion: both contexts' results are right when their
  // work is enqueued back to back with no host wait in between.
  auto a = std::make_shared<ContextStreams>(), b = std::make_shared<ContextStreams>();
  auto ma = load(a), mb = load(b);
  ASSERT_TRUE(ma && mb);
  TensorRef x = upload(1, 0);
  std::vector<TensorRef> ya, yb;
  ASSERT_TRUE(ma->call("slow", {x}, ya).ok());
  ASSERT_TRUE(mb->call("slow", {x}, yb).ok());
  expect_scaled_identity(ya[0], 1, "context A");
  expect_scaled_identity(yb[0], 1, "context B");
}

}  // namespace
