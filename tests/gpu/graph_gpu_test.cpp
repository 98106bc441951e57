// CUDA graph replay end to end through the public C ABI
// (libshapeml_runtime.so + the plugin): the MLP module of examples/mlp.sml built for (cuda 0)
// (B=4 S=128 D=256 F=1024, built by scripts/gpu-stage.sh; its path in
// $SHAPEML_TEST_MLP_GPU_MODULE) called with shapeml_call_options.graph
// DEFAULT (the plan says on), ON and OFF gives bit-identical results; a
// replay writes its outputs (the cached executable for earlier addresses is
// reused after other addresses ran); new output addresses are followed.
// Skips, printing why, without a GPU or without the module.
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "capi_test_util.h"
#include "gpu_test_util.h"
#include "shapeml.h"

namespace {

class GraphCalls : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("SHAPEML_TEST_MLP_GPU_MODULE");
    SHAPEML_SKIP_WITHOUT_GPU(path && *path ? "" : "SHAPEML_TEST_MLP_GPU_MODULE is not set (scripts/gpu-device-run.sh sets it)");
    int32_t n = 0;
    SHAPEML_SKIP_WITHOUT_GPU(take(shapeml_device_count(kDLCUDA, &n)));
    ASSERT_GT(n, 0);
    OK(shapeml_memory_create_cuda_async(0, UINT64_MAX, &mem_));
    OK(shapeml_module_load(path, nullptr, &module_));
    OK(shapeml_module_get_entry(module_, "mlp", &entry_));
  }
  void TearDown() override {
    for (shapeml_tensor* t : owned_) shapeml_tensor_release(t);
    shapeml_module_release(module_);
    shapeml_memory_release(mem_);
  }
  // A device tensor of random values in [-1, 1) (fixed seed).
  shapeml_tensor* device_random(std::vector<int64_t> shape, uint32_t seed) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    std::vector<float> v(n);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    for (float& x : v) x = d(rng);
    shapeml_tensor *host = nullptr, *dev = nullptr;
    EXPECT_EQ(take(shapeml_tensor_create_copy(nullptr, SHAPEML_DTYPE_F32, shape.size(), shape.data(), v.data(), n * 4, &host)), "");
    EXPECT_EQ(take(shapeml_tensor_copy_to_device(host, mem_, nullptr, &dev)), "");
    shapeml_tensor_release(host);
    owned_.push_back(dev);
    return dev;
  }
  shapeml_tensor* device_zeros() {
    int64_t shape[3] = {4, 128, 256};
    shapeml_tensor* t = nullptr;
    EXPECT_EQ(take(shapeml_tensor_create(mem_, SHAPEML_DTYPE_F32, 3, shape, &t)), "");
    owned_.push_back(t);
    return t;
  }
  std::vector<shapeml_tensor*> inputs(uint32_t seed) {
    return {device_random({4, 128, 256}, seed), device_random({256, 1024}, seed + 1), device_random({1024}, seed + 2),
            device_random({1024, 256}, seed + 3), device_random({256}, seed + 4)};
  }
  // Calls the MLP on `in` into `out` with graph mode `graph` (on `stream`:
  // NULL, the runtime's); the result's bytes.
  std::vector<uint8_t> call(const std::vector<shapeml_tensor*>& in, shapeml_tensor* out, int32_t graph, void* stream = nullptr) {
    shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
    o.graph = graph;
    o.outputs = &out;
    o.stream = stream;
    std::string s = take(shapeml_entry_call(entry_, in.data(), in.size(), nullptr, 0, &o));
    EXPECT_EQ(s, "") << "graph mode " << graph;
    if (stream) {  // the copy below runs on the runtime's stream
      EXPECT_EQ(take(shapeml_device_synchronize(0, stream)), "");
    }
    shapeml_tensor* host = nullptr;
    EXPECT_EQ(take(shapeml_tensor_copy_to_host(out, nullptr, nullptr, &host)), "");  // the runtime's stream: after the call
    std::vector<uint8_t> bytes;
    if (host) {
      const uint8_t* p = static_cast<const uint8_t*>(shapeml_tensor_data(host));
      bytes.assign(p, p + 4 * 128 * 256 * 4);
      shapeml_tensor_release(host);
    }
    return bytes;
  }
  shapeml_memory* mem_ = nullptr;
  shapeml_module* module_ = nullptr;
  shapeml_entry* entry_ = nullptr;
  std::vector<shapeml_tensor*> owned_;
};

TEST_F(GraphCalls, DefaultOnAndOffGiveTheSameBytes) {
  std::vector<shapeml_tensor*> x = inputs(1);
  std::vector<uint8_t> off = call(x, device_zeros(), SHAPEML_GRAPH_OFF);
  ASSERT_EQ(off.size(), size_t{4 * 128 * 256 * 4});
  shapeml_tensor* out = device_zeros();
  EXPECT_EQ(call(x, out, SHAPEML_GRAPH_DEFAULT), off) << "capture";
  EXPECT_EQ(call(x, out, SHAPEML_GRAPH_DEFAULT), off) << "replay";
  EXPECT_EQ(call(x, device_zeros(), SHAPEML_GRAPH_ON), off) << "forced on, new output address";
  EXPECT_EQ(call(x, out, SHAPEML_GRAPH_OFF), off) << "off again after graphs";
}

TEST_F(GraphCalls, AReplayWritesItsOutputsAndNewAddressesAreFollowed) {
  std::vector<shapeml_tensor*> x = inputs(10), z = inputs(20);
  std::vector<uint8_t> want_x = call(x, device_zeros(), SHAPEML_GRAPH_OFF);
  std::vector<uint8_t> want_z = call(z, device_zeros(), SHAPEML_GRAPH_OFF);
  ASSERT_NE(want_x, want_z);
  shapeml_tensor* a = device_zeros();
  EXPECT_EQ(call(x, a, SHAPEML_GRAPH_DEFAULT), want_x) << "captured for (x, a)";
  EXPECT_EQ(call(z, a, SHAPEML_GRAPH_DEFAULT), want_z) << "other input addresses: captured again";
  EXPECT_EQ(call(x, a, SHAPEML_GRAPH_DEFAULT), want_x) << "(x, a) again: the first executable replayed over z's result";
  EXPECT_EQ(call(x, device_zeros(), SHAPEML_GRAPH_DEFAULT), want_x) << "a new output address";
}

// The legacy default stream (cudaStreamLegacy) cannot be captured: ON
// reports the failed CUDA call, DEFAULT falls back to direct execution (and
// stays direct on that stream), as docs/design/cuda-graphs.md says.
TEST_F(GraphCalls, AFailedCaptureIsAnErrorWithOnAndADirectRunWithDefault) {
  void* const legacy = reinterpret_cast<void*>(uintptr_t{1});  // cudaStreamLegacy
  std::vector<shapeml_tensor*> x = inputs(30);
  std::vector<uint8_t> want = call(x, device_zeros(), SHAPEML_GRAPH_OFF);
  shapeml_tensor* out = device_zeros();
  shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
  o.graph = SHAPEML_GRAPH_ON;
  o.outputs = &out;
  o.stream = legacy;
  std::string s = take(shapeml_entry_call(entry_, x.data(), x.size(), nullptr, 0, &o));
  EXPECT_NE(s.find("cudaStreamBeginCapture"), std::string::npos) << s;
  EXPECT_EQ(call(x, out, SHAPEML_GRAPH_DEFAULT, legacy), want) << "fell back to direct execution";
  EXPECT_EQ(call(x, device_zeros(), SHAPEML_GRAPH_DEFAULT, legacy), want) << "direct from then on";
  EXPECT_EQ(call(x, device_zeros(), SHAPEML_GRAPH_DEFAULT), want) << "another stream still replays";
}

// The CUDA driver API, through dlopen (this test links no CUDA library): a
// stream of the caller's and a capture into the caller's own graph.
struct Driver {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  using StreamCreate = int (*)(void**, unsigned);
  using StreamDestroy = int (*)(void*);
  using BeginCapture = int (*)(void*, int);
  using EndCapture = int (*)(void*, void**);
  using GraphDestroy = int (*)(void*);
  StreamCreate stream_create = lib ? reinterpret_cast<StreamCreate>(dlsym(lib, "cuStreamCreate")) : nullptr;
  StreamDestroy stream_destroy = lib ? reinterpret_cast<StreamDestroy>(dlsym(lib, "cuStreamDestroy_v2")) : nullptr;
  BeginCapture begin_capture = lib ? reinterpret_cast<BeginCapture>(dlsym(lib, "cuStreamBeginCapture_v2")) : nullptr;
  EndCapture end_capture = lib ? reinterpret_cast<EndCapture>(dlsym(lib, "cuStreamEndCapture")) : nullptr;
  GraphDestroy graph_destroy = lib ? reinterpret_cast<GraphDestroy>(dlsym(lib, "cuGraphDestroy")) : nullptr;
  bool ok() const { return stream_create && stream_destroy && begin_capture && end_capture && graph_destroy; }
};

// A call made while the caller captures its stream (torch.cuda.graph does
// this) puts the plan's launches into the caller's capture and makes no
// cached graph of its own there: its workspace would be allocated inside
// the caller's graph, and a graph the caller never launches leaves it
// invalid. Later calls on the same stream make and replay their own graph
// and are right; with SHAPEML_GRAPH_ON the call says why it cannot replay.
TEST_F(GraphCalls, ACallInsideTheCallersCaptureGoesIntoItAndLaterReplaysAreRight) {
  Driver cu;
  ASSERT_TRUE(cu.ok()) << "libcuda.so.1: " << dlerror();
  std::vector<shapeml_tensor*> x = inputs(40);
  std::vector<uint8_t> want = call(x, device_zeros(), SHAPEML_GRAPH_OFF);  // also makes the primary context current here
  void* stream = nullptr;
  ASSERT_EQ(cu.stream_create(&stream, 1 /* CU_STREAM_NON_BLOCKING */), 0);
  shapeml_tensor* out = device_zeros();
  ASSERT_EQ(cu.begin_capture(stream, 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */), 0);
  shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
  o.outputs = &out;
  o.stream = stream;
  o.graph = SHAPEML_GRAPH_ON;
  std::string strict = take(shapeml_entry_call(entry_, x.data(), x.size(), nullptr, 0, &o));
  EXPECT_NE(strict.find("being captured into the caller's CUDA graph"), std::string::npos) << strict;
  o.graph = SHAPEML_GRAPH_DEFAULT;
  EXPECT_EQ(take(shapeml_entry_call(entry_, x.data(), x.size(), nullptr, 0, &o)), "") << "into the caller's capture";
  void* graph = nullptr;
  ASSERT_EQ(cu.end_capture(stream, &graph), 0) << "the caller's capture is intact";
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(cu.graph_destroy(graph), 0);  // never launched
  for (int i = 0; i < 3; ++i) EXPECT_EQ(call(x, device_zeros(), SHAPEML_GRAPH_DEFAULT, stream), want) << "call " << i << " on the stream";
  EXPECT_EQ(take(shapeml_device_synchronize(0, stream)), "");
  EXPECT_EQ(cu.stream_destroy(stream), 0);
}

}  // namespace
