// Device memory resources on a real GPU, through the runtime's C++ API:
// raw, stream-ordered and pooled resources with many sizes, interleaved
// frees, fragmentation, exhaustion and frees on another stream. Values are
// written and read back through the plugin (never by the host directly).
#include <cstring>
#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "runtime/cuda_memory.h"
#include "runtime/cuda_plugin_loader.h"
#include "runtime/pool_resource.h"

using namespace shapeml::runtime;

namespace {

class DeviceMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = cuda_plugin();
    SHAPEML_SKIP_WITHOUT_GPU(p.ok() ? "" : p.status().message());
    plugin_ = *p;
    for (void** s : {&s1_, &s2_}) {
      char err[256];
      ASSERT_EQ(plugin_->api().stream_create(0, s, err, sizeof err), 0) << err;
    }
  }
  void TearDown() override {
    char err[256];
    for (void* s : {s1_, s2_})
      if (s) plugin_->api().stream_destroy(s, err, sizeof err);
  }
  // Fills `bytes` at device `p` with `value` on `s` and checks them back.
  void fill_and_check(void* p, size_t bytes, uint8_t value, void* s) {
    char err[256];
    ASSERT_EQ(plugin_->api().memset_async(p, value, bytes, s, err, sizeof err), 0) << err;
    std::vector<uint8_t> host(bytes);
    ASSERT_EQ(plugin_->api().memcpy_async(host.data(), p, bytes, 1, s, err, sizeof err), 0) << err;
    ASSERT_EQ(plugin_->api().stream_synchronize(s, err, sizeof err), 0) << err;
    for (size_t i = 0; i < bytes; i += 1 + bytes / 64) ASSERT_EQ(host[i], value) << "byte " << i << " of " << bytes;
    ASSERT_EQ(host[bytes - 1], value);
  }
  std::vector<std::pair<std::string, MemoryResourcePtr>> resources() {
    std::vector<std::pair<std::string, MemoryResourcePtr>> out;
    auto raw = make_cuda_resource(0);
    auto async = make_cuda_async_resource(0, UINT64_MAX);
    EXPECT_TRUE(raw.ok()) << raw.status().str();
    EXPECT_TRUE(async.ok()) << async.status().str();
    if (!raw.ok() || !async.ok()) return out;
    out.emplace_back("raw", *raw);
    out.emplace_back("async", *async);
    out.emplace_back("pool(raw)", make_pool_resource(*raw));
    out.emplace_back("pool(async)", make_pool_resource(*async));
    out.emplace_back("statistics(pool(raw))", make_statistics_adaptor(make_pool_resource(*raw)));
    return out;
  }
  const CudaPlugin* plugin_ = nullptr;
  void* s1_ = nullptr;
  void* s2_ = nullptr;
};

TEST_F(DeviceMemory, ManySizesInterleavedFreesValuesSurvive) {
  for (auto& [name, mr] : resources()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(mr->device().device_type, kDLCUDA);
    std::mt19937 rng(42);
    struct Block {
      void* p;
      size_t n;
      uint8_t v;
    };
    std::vector<Block> live;
    for (int i = 0; i < 200; ++i) {
      size_t n = size_t{1} << (rng() % 24);  // 1 B .. 8 MiB
      n += rng() % 1000;
      void* p = mr->allocate(n, 256, s1_);
      ASSERT_NE(p, nullptr) << n << " bytes: " << MemoryResource::last_failure();
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
      uint8_t v = static_cast<uint8_t>(i);
      fill_and_check(p, n, v, s1_);
      live.push_back({p, n, v});
      if (rng() % 3 == 0) {
        size_t k = rng() % live.size();
        mr->deallocate(live[k].p, live[k].n, 256, s1_);
        live.erase(live.begin() + static_cast<long>(k));
      }
    }
    // Nobody overwrote anybody: every live block still has its value.
    for (auto& b : live) fill_and_check(b.p, b.n, b.v, s1_);
    for (auto& b : live) mr->deallocate(b.p, b.n, 256, s1_);
    char err[256];
    ASSERT_EQ(plugin_->api().stream_synchronize(s1_, err, sizeof err), 0) << err;
  }
}

TEST_F(DeviceMemory, FreeOnAnotherStreamThenReuse) {
  for (auto& [name, mr] : resources()) {
    SCOPED_TRACE(name);
    for (int i = 0; i < 50; ++i) {
      void* a = mr->allocate(1 << 20, 256, s1_);
      ASSERT_NE(a, nullptr);
      fill_and_check(a, 1 << 20, 7, s1_);
      mr->deallocate(a, 1 << 20, 256, s2_);  // freed on s2
      void* b = mr->allocate(1 << 20, 256, s1_);
      ASSERT_NE(b, nullptr);
      fill_and_check(b, 1 << 20, 9, s1_);
      mr->deallocate(b, 1 << 20, 256, s1_);
    }
    char err[256];
    ASSERT_EQ(plugin_->api().stream_synchronize(s2_, err, sizeof err), 0) << err;
  }
}

TEST_F(DeviceMemory, PoolFragmentationAndExhaustion) {
  auto raw = make_cuda_resource(0);
  ASSERT_TRUE(raw.ok()) << raw.status().str();
  auto pool = make_pool_resource(*raw, {.initial_chunk_bytes = 8 << 20, .max_chunk_bytes = 8 << 20, .maximum_bytes = 16 << 20});
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(pool->allocate(128 << 10, 256, s1_));  // 8 MiB: one chunk
  for (void* b : blocks) ASSERT_NE(b, nullptr);
  for (size_t i = 0; i < blocks.size(); i += 2) pool->deallocate(blocks[i], 128 << 10, 256, s1_);
  void* big = pool->allocate(4 << 20, 256, s1_);  // no hole fits: a second chunk
  ASSERT_NE(big, nullptr);
  fill_and_check(big, 4 << 20, 3, s1_);
  MemoryResource::clear_last_failure();
  EXPECT_EQ(pool->allocate(8 << 20, 256, s1_), nullptr) << "16 MiB maximum reached";
  EXPECT_NE(MemoryResource::last_failure().find("16777216"), std::string::npos) << MemoryResource::last_failure();
  for (size_t i = 1; i < blocks.size(); i += 2) pool->deallocate(blocks[i], 128 << 10, 256, s1_);
  pool->deallocate(big, 4 << 20, 256, s1_);
  EXPECT_EQ(pool->free_block_count(), 2u);
  // Once coalesced, a whole chunk is one block again.
  void* whole = pool->allocate(8 << 20, 256, s1_);
  EXPECT_NE(whole, nullptr);
  pool->deallocate(whole, 8 << 20, 256, s1_);
}

TEST_F(DeviceMemory, TooLargeIsResourceExhaustedNamingCuda) {
  for (auto& [name, mr] : resources()) {
    SCOPED_TRACE(name);
    MemoryResource::clear_last_failure();
    EXPECT_EQ(mr->allocate(size_t{1} << 50, 256, s1_), nullptr);
    EXPECT_NE(MemoryResource::last_failure().find("cudaMalloc"), std::string::npos) << MemoryResource::last_failure();
  }
}

}  // namespace
