// The pool and the adaptors over a device upstream, without a GPU: a fake
// device resource hands out addresses of a PROT_NONE mapping, so that any
// host access to "device memory" crashes the test. It records the streams of
// every call and every synchronization.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <map>
#include <mutex>
#include <vector>

#include "runtime/memory_resource.h"
#include "runtime/pool_resource.h"

using namespace shapeml::runtime;

namespace {

class FakeDevice final : public MemoryResource {
 public:
  explicit FakeDevice(size_t capacity) : cap_(capacity) {
    base_ = static_cast<char*>(mmap(nullptr, cap_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  }
  ~FakeDevice() override { munmap(base_, cap_); }
  std::string name() const override { return "fake_cuda:0"; }
  DLDevice device() const noexcept override { return {kDLCUDA, 0}; }
  Status synchronize(void* stream) override {
    std::lock_guard<std::mutex> l(mu_);
    syncs.push_back(stream);
    return {};
  }
  std::vector<void*> syncs;
  std::vector<void*> alloc_streams, free_streams;
  size_t live = 0;

 protected:
  void* do_allocate(size_t bytes, size_t alignment, void* stream) noexcept override {
    std::lock_guard<std::mutex> l(mu_);
    size_t at = (next_ + alignment - 1) & ~(alignment - 1);
    if (at + bytes > cap_) {
      note_failure("fake_cuda:0 out of memory");
      return nullptr;
    }
    next_ = at + bytes;
    ++live;
    alloc_streams.push_back(stream);
    return base_ + at;
  }
  void do_deallocate(void* p, size_t, size_t, void* stream) noexcept override {
    std::lock_guard<std::mutex> l(mu_);
    --live;
    free_streams.push_back(stream);
  }

 private:
  std::mutex mu_;
  char* base_;
  size_t cap_, next_ = 0;
};

void* const s1 = reinterpret_cast<void*>(0x1001);
void* const s2 = reinterpret_cast<void*>(0x2002);

}  // namespace

TEST(DevicePool, IsOnTheUpstreamsDeviceAndNeverTouchesItsMemory) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 1 << 20});
  EXPECT_EQ(pool->device().device_type, kDLCUDA);
  EXPECT_EQ(make_statistics_adaptor(pool)->device().device_type, kDLCUDA);
  EXPECT_EQ(make_logging_adaptor(pool, [](void*, const char*) {}, nullptr)->device().device_type, kDLCUDA);
  // Many sizes, interleaved frees: every block is distinct and inside a chunk.
  std::vector<std::pair<void*, size_t>> live;
  for (int i = 0; i < 400; ++i) {
    size_t bytes = 1 + (static_cast<size_t>(i) * 7919) % (256 << 10);
    void* p = pool->allocate(bytes, 64, s1);
    ASSERT_NE(p, nullptr) << bytes;
    live.emplace_back(p, bytes);
    if (i % 3 == 2) {  // free an older one
      auto [q, n] = live[live.size() / 2];
      pool->deallocate(q, n, 64, s1);
      live.erase(live.begin() + static_cast<long>(live.size() / 2));
    }
  }
  std::map<char*, size_t> sorted;
  for (auto [p, n] : live) sorted.emplace(static_cast<char*>(p), n);
  char* end = nullptr;
  for (auto [p, n] : sorted) {
    EXPECT_GE(p, end) << "blocks overlap";
    end = p + n;
  }
  for (auto [p, n] : live) pool->deallocate(p, n, 64, s1);
  EXPECT_TRUE(dev->syncs.empty()) << "one stream never waits";
  pool->release_unused();
  EXPECT_EQ(dev->live, 0u);
  for (void* s : dev->free_streams) EXPECT_EQ(s, s1) << "chunks go back on the stream their blocks were freed on";
}

TEST(DevicePool, SameStreamReusesAtOnceAnotherStreamWaitsFirst) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 1 << 20, .max_chunk_bytes = 1 << 20, .maximum_bytes = 1 << 20});
  void* a = pool->allocate(1 << 20, 256, s1);
  ASSERT_NE(a, nullptr);
  pool->deallocate(a, 1 << 20, 256, s1);
  EXPECT_EQ(pool->allocate(1 << 20, 256, s1), a) << "same stream: reused without waiting";
  EXPECT_TRUE(dev->syncs.empty());
  pool->deallocate(a, 1 << 20, 256, s1);
  // The pool is full: s2 can only have the block after s1's work is done.
  EXPECT_EQ(pool->allocate(1 << 20, 256, s2), a);
  ASSERT_EQ(dev->syncs.size(), 1u);
  EXPECT_EQ(dev->syncs[0], s1);
  EXPECT_EQ(pool->stream_synchronizations(), 1u);
  // Freed on another stream than allocated: it belongs to the freeing stream.
  pool->deallocate(a, 1 << 20, 256, s1);
  EXPECT_EQ(pool->allocate(1 << 20, 256, s1), a);
  EXPECT_EQ(dev->syncs.size(), 1u);
  pool->deallocate(a, 1 << 20, 256, s1);
}

TEST(DevicePool, CoalescesOnlyBlocksFreedOnTheSameStream) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 4096, .max_chunk_bytes = 4096});
  void* a = pool->allocate(1024, 256, s1);
  void* b = pool->allocate(1024, 256, s1);
  void* c = pool->allocate(2048, 256, s1);
  ASSERT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 1024);
  ASSERT_EQ(static_cast<char*>(c), static_cast<char*>(b) + 1024);
  EXPECT_EQ(pool->chunk_count(), 1u);
  pool->deallocate(a, 1024, 256, s1);
  pool->deallocate(b, 1024, 256, s2);
  EXPECT_EQ(pool->free_block_count(), 2u) << "a (s1) and b (s2) stay apart";
  pool->deallocate(c, 2048, 256, s2);
  EXPECT_EQ(pool->free_block_count(), 2u) << "b and c (both s2) merge";
  // s1 asks for 3 KiB: only s2's merged 3 KiB fits; s2 is waited for.
  void* d = pool->allocate(3072, 256, s1);
  EXPECT_EQ(d, b);
  EXPECT_EQ(dev->syncs, std::vector<void*>{s2});
  pool->deallocate(d, 3072, 256, s1);
  EXPECT_EQ(pool->free_block_count(), 1u) << "everything is s1's now and merges back into one chunk";
}

TEST(DevicePool, FragmentationIsBoundedByCoalescing) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 1 << 20, .max_chunk_bytes = 1 << 20});
  std::vector<void*> blocks;
  for (int i = 0; i < 256; ++i) blocks.push_back(pool->allocate(4096, 256, s1));
  EXPECT_EQ(pool->chunk_count(), 1u);
  for (size_t i = 0; i < blocks.size(); i += 2) pool->deallocate(blocks[i], 4096, 256, s1);
  EXPECT_EQ(pool->free_block_count(), 128u);
  // A 8 KiB request fits in no hole: the pool grows rather than failing.
  void* big = pool->allocate(8192, 256, s1);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(pool->chunk_count(), 2u);
  for (size_t i = 1; i < blocks.size(); i += 2) pool->deallocate(blocks[i], 4096, 256, s1);
  pool->deallocate(big, 8192, 256, s1);
  EXPECT_EQ(pool->free_block_count(), 2u) << "each chunk is one free block again";
  pool->release_unused();
  EXPECT_EQ(pool->chunk_count(), 0u);
  EXPECT_EQ(dev->live, 0u);
}

TEST(DevicePool, FullPoolFailsWithTheSizes) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 1 << 20, .max_chunk_bytes = 1 << 20, .maximum_bytes = 1 << 20});
  void* a = pool->allocate(768 << 10, 256, s1);
  ASSERT_NE(a, nullptr);
  MemoryResource::clear_last_failure();
  EXPECT_EQ(pool->allocate(512 << 10, 256, s1), nullptr);
  const std::string& why = MemoryResource::last_failure();
  EXPECT_NE(why.find("cannot allocate 524288 bytes"), std::string::npos) << why;
  EXPECT_NE(why.find("1048576"), std::string::npos) << why;
  EXPECT_NE(why.find("786432 in use"), std::string::npos) << why;
  EXPECT_NE(why.find("largest free block 262144"), std::string::npos) << why;
  shapeml_memory_statistics st = SHAPEML_MEMORY_STATISTICS_INIT;
  ASSERT_TRUE(pool->statistics(&st));
  EXPECT_EQ(st.failed_allocation_count, 1u);
  pool->deallocate(a, 768 << 10, 256, s1);
}

TEST(DevicePool, UpstreamFailureIsReported) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 20);
  auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 1 << 20});
  MemoryResource::clear_last_failure();
  EXPECT_EQ(pool->allocate(2 << 20, 256, s1), nullptr);
  EXPECT_NE(MemoryResource::last_failure().find("upstream: fake_cuda:0 out of memory"), std::string::npos)
      << MemoryResource::last_failure();
}
