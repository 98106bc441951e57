// The pool and the adaptors over a device upstream, without a GPU: a fake
// device resource hands out addresses of a PROT_NONE mapping, so that any
// host access to "device memory" crashes the test. It records the streams of
// every call and every synchronization.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <map>
#include <mutex>
#include <random>
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
    ++sync_counts_[stream];
    return {};
  }
  std::vector<void*> syncs;
  std::vector<void*> alloc_streams, free_streams;
  size_t live = 0;
  char* base() const { return base_; }
  size_t sync_count(void* stream) const {
    auto it = sync_counts_.find(stream);
    return it == sync_counts_.end() ? 0 : it->second;
  }

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
  std::map<void*, size_t> sync_counts_;
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

// ---------------------------------------------------------------------------
// The fast cache (issue 9): freed blocks parked per stream and exact size.

TEST(DevicePoolCache, HitReturnsTheSameBlockOnTheSameStreamLifo) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 1 << 20});
  void* a = pool->allocate(1000, 64, s1);
  void* b = pool->allocate(1000, 64, s1);
  ASSERT_TRUE(a && b);
  pool->deallocate(a, 1000, 64, s1);
  pool->deallocate(b, 1000, 64, s1);
  EXPECT_EQ(pool->cached_block_count(), 2u);
  EXPECT_EQ(pool->allocate(1024, 64, s1), b) << "last freed, first reused; 1000 and 1024 are one 1024-byte bin";
  EXPECT_EQ(pool->allocate(900, 64, s1), a);
  EXPECT_EQ(pool->cached_block_count(), 0u);
  pool->deallocate(a, 900, 64, s1);
  pool->deallocate(b, 1024, 64, s1);
  EXPECT_TRUE(dev->syncs.empty());
  EXPECT_EQ(dev->alloc_streams.size(), 1u) << "one chunk: every reuse came from the pool";
  shapeml_memory_statistics st = SHAPEML_MEMORY_STATISTICS_INIT;
  ASSERT_TRUE(pool->statistics(&st));
  EXPECT_EQ(st.bytes_in_use, 0u);
  EXPECT_EQ(st.allocation_count, 4u);
  EXPECT_EQ(st.deallocation_count, 4u);
  EXPECT_EQ(st.bytes_allocated_total, 1000u + 1000 + 1024 + 900);
  EXPECT_EQ(st.bytes_reserved, size_t{1} << 20);
}

TEST(DevicePoolCache, ABlockParkedOnOneStreamReachesAnotherOnlyAfterASynchronize) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 4096, .max_chunk_bytes = 4096, .maximum_bytes = 4096});
  void* a = pool->allocate(1024, 256, s1);
  void* b = pool->allocate(1024, 256, s1);
  ASSERT_TRUE(a && b);
  pool->deallocate(a, 1024, 256, s1);
  ASSERT_EQ(pool->cached_block_count(), 1u);
  // The pool is at its maximum and every free byte is s1's (the parked block
  // and the chunk's tail): s2 gets the parked block, but only after s1 is
  // synchronized.
  EXPECT_TRUE(dev->syncs.empty());
  void* c = pool->allocate(1024, 256, s2);
  EXPECT_EQ(c, a);
  ASSERT_EQ(dev->syncs, std::vector<void*>{s1}) << "s1's parked block went to s2 without waiting for s1";
  // Parked on s2 now: s2 reuses it at once ...
  pool->deallocate(c, 1024, 256, s2);
  EXPECT_EQ(pool->allocate(1024, 256, s2), c);
  EXPECT_EQ(dev->syncs.size(), 1u);
  pool->deallocate(c, 1024, 256, s2);
  // ... and s1 (whose blocks all moved to s2) waits for s2 first.
  void* e = pool->allocate(1024, 256, s1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(dev->syncs, (std::vector<void*>{s1, s2}));
  pool->deallocate(e, 1024, 256, s1);
  pool->deallocate(b, 1024, 256, s1);
}

TEST(DevicePoolCache, AStreamUsesItsOwnParkedBlocksBeforeWaitingForAnother) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 1 << 20});
  void* x = pool->allocate(8192, 256, s1);
  pool->deallocate(x, 8192, 256, s2);  // s2's now, parked in s2's 8 KiB bin
  void* a = pool->allocate(4096, 256, s1);
  pool->deallocate(a, 4096, 256, s1);  // parked in s1's 4 KiB bin
  // s2 wants 4 KiB: no such bin of its own, but its parked 8 KiB block,
  // merged back, serves it without waiting for s1.
  void* b = pool->allocate(4096, 256, s2);
  EXPECT_EQ(b, x);
  EXPECT_TRUE(dev->syncs.empty());
  EXPECT_EQ(pool->allocate(4096, 256, s1), a) << "still parked on s1";
  pool->deallocate(a, 4096, 256, s1);
  pool->deallocate(b, 4096, 256, s2);
  EXPECT_TRUE(dev->syncs.empty());
}

TEST(DevicePoolCache, ExhaustionFlushesParkedBlocksAndCoalescesFirst) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 4096, .max_chunk_bytes = 4096, .maximum_bytes = 4096});
  void* p[4];
  for (void*& q : p) ASSERT_NE(q = pool->allocate(1024, 256, s1), nullptr);
  for (void* q : p) pool->deallocate(q, 1024, 256, s1);
  EXPECT_EQ(pool->cached_block_count(), 4u);
  void* whole = pool->allocate(4096, 256, s1);
  EXPECT_EQ(whole, p[0]) << "the four parked singles merged back into the chunk";
  EXPECT_EQ(pool->cached_block_count(), 0u);
  EXPECT_EQ(dev->alloc_streams.size(), 1u) << "no growth";
  shapeml_memory_statistics st = SHAPEML_MEMORY_STATISTICS_INIT;
  ASSERT_TRUE(pool->statistics(&st));
  EXPECT_EQ(st.failed_allocation_count, 0u);
  pool->deallocate(whole, 4096, 256, s1);
  // Full for real: the message counts parked blocks as free.
  for (void*& q : p) ASSERT_NE(q = pool->allocate(1024, 256, s1), nullptr);
  pool->deallocate(p[1], 1024, 256, s1);
  pool->deallocate(p[3], 1024, 256, s1);
  ASSERT_EQ(pool->cached_block_count(), 2u);
  MemoryResource::clear_last_failure();
  EXPECT_EQ(pool->allocate(2048, 256, s1), nullptr);
  const std::string& why = MemoryResource::last_failure();
  EXPECT_NE(why.find("cannot allocate 2048 bytes: it holds 4096 bytes from its upstream of at most 4096, 2048 in use, largest free block 1024"),
            std::string::npos)
      << why;
  EXPECT_EQ(pool->allocate(1024, 256, s1), p[1]) << "the failed request left the pool usable";
  pool->deallocate(p[0], 1024, 256, s1);
  pool->deallocate(p[1], 1024, 256, s1);
  pool->deallocate(p[2], 1024, 256, s1);
  EXPECT_EQ(pool->free_block_count(), 1u);
}

TEST(DevicePoolCache, ParkedBlocksNeverMakeThePoolGrow) {
  // Parked 1 KiB blocks fill the chunk; a 2 KiB request merges them rather
  // than taking a second chunk.
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 8192, .max_chunk_bytes = 8192});
  void* p[8];
  for (void*& q : p) ASSERT_NE(q = pool->allocate(1024, 256, s1), nullptr);
  for (int i = 0; i < 8; i += 2) pool->deallocate(p[i + 1], 1024, 256, s1);
  for (int i = 0; i < 8; i += 2) pool->deallocate(p[i], 1024, 256, s1);
  ASSERT_EQ(pool->cached_block_count(), 8u);
  void* big = pool->allocate(2048, 256, s1);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(pool->chunk_count(), 1u);
  EXPECT_EQ(dev->alloc_streams.size(), 1u);
  pool->deallocate(big, 2048, 256, s1);
}

TEST(DevicePoolCache, ReleaseUnusedReturnsChunksWhoseBlocksAreParked) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 4096, .max_chunk_bytes = 4096});
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(pool->allocate(2048, 256, s2));  // 4 chunks
  EXPECT_EQ(pool->chunk_count(), 4u);
  for (void* b : blocks) pool->deallocate(b, 2048, 256, s2);
  EXPECT_EQ(pool->cached_block_count(), 8u);
  pool->release_unused();
  EXPECT_EQ(pool->chunk_count(), 0u);
  EXPECT_EQ(pool->cached_block_count(), 0u);
  EXPECT_EQ(dev->live, 0u);
  ASSERT_EQ(dev->free_streams.size(), 4u);
  for (void* s : dev->free_streams) EXPECT_EQ(s, s2) << "returned on the stream the blocks were freed on";
  shapeml_memory_statistics st = SHAPEML_MEMORY_STATISTICS_INIT;
  ASSERT_TRUE(pool->statistics(&st));
  EXPECT_EQ(st.bytes_reserved, 0u);
  // Usable afterwards: the pool grows again.
  void* a = pool->allocate(2048, 256, s2);
  ASSERT_NE(a, nullptr);
  pool->deallocate(a, 2048, 256, s2);
}

TEST(DevicePoolCache, DestructionReturnsEveryChunkWithBlocksParkedOnTwoStreams) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  {
    auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 4096, .max_chunk_bytes = 4096});
    std::vector<void*> blocks;
    for (int i = 0; i < 12; ++i) blocks.push_back(pool->allocate(1024 * (1 + i % 3), 256, s1));
    for (size_t i = 0; i < blocks.size(); ++i) pool->deallocate(blocks[i], 1024 * (1 + i % 3), 256, i % 2 ? s1 : s2);
    EXPECT_GT(pool->cached_block_count(), 0u);
    EXPECT_EQ(dev->live, pool->chunk_count());
  }
  EXPECT_EQ(dev->live, 0u) << "every chunk went back";
  EXPECT_EQ(dev->free_streams.size(), dev->alloc_streams.size());
}

TEST(DevicePoolCache, IsBounded) {
  auto dev = std::make_shared<FakeDevice>(size_t{1} << 30);
  {  // kCacheDepth blocks per size
    auto pool = make_pool_resource(dev, {});
    std::vector<void*> blocks;
    for (int i = 0; i < 3 * PoolResource::kCacheDepth; ++i) blocks.push_back(pool->allocate(512, 256, s1));
    for (void* b : blocks) pool->deallocate(b, 512, 256, s1);
    EXPECT_EQ(pool->cached_block_count(), size_t{PoolResource::kCacheDepth});
  }
  {  // kCacheBins sizes per stream: a new size takes the least recently used bin
    auto pool = make_pool_resource(dev, {});
    std::vector<void*> blocks;
    for (int i = 1; i <= PoolResource::kCacheBins + 5; ++i) blocks.push_back(pool->allocate(256 * i, 256, s1));
    for (size_t i = 0; i < blocks.size(); ++i) pool->deallocate(blocks[i], 256 * (i + 1), 256, s1);
    EXPECT_EQ(pool->cached_block_count(), size_t{PoolResource::kCacheBins});
    // The first sizes were evicted (merged back); the last ones are still parked.
    EXPECT_EQ(pool->allocate(256 * (PoolResource::kCacheBins + 5), 256, s1), blocks.back());
    pool->deallocate(blocks.back(), 256 * (PoolResource::kCacheBins + 5), 256, s1);
  }
  {  // kCacheStreams streams
    auto pool = make_pool_resource(dev, {});
    std::vector<void*> blocks;
    for (int i = 0; i < PoolResource::kCacheStreams + 3; ++i) blocks.push_back(pool->allocate(1024, 256, s1));
    for (size_t i = 0; i < blocks.size(); ++i) pool->deallocate(blocks[i], 1024, 256, reinterpret_cast<void*>(0x100 * (i + 1)));
    EXPECT_EQ(pool->cached_block_count(), size_t{PoolResource::kCacheStreams});
  }
  {  // cache_bytes
    auto pool = make_pool_resource(dev, {.cache_bytes = 2048});
    void* p[3];
    for (void*& q : p) q = pool->allocate(1024, 256, s1);
    for (void* q : p) pool->deallocate(q, 1024, 256, s1);
    EXPECT_EQ(pool->cached_block_count(), 2u);
    void* big = pool->allocate(4096, 256, s1);  // larger than the whole cache
    pool->deallocate(big, 4096, 256, s1);
    EXPECT_EQ(pool->cached_block_count(), 2u);
  }
  {  // cache_bytes = 0: no cache, every free coalesces at once
    auto pool = make_pool_resource(dev, {.cache_bytes = 0});
    void* a = pool->allocate(1024, 256, s1);
    void* b = pool->allocate(1024, 256, s1);
    pool->deallocate(a, 1024, 256, s1);
    EXPECT_EQ(pool->cached_block_count(), 0u);
    pool->deallocate(b, 1024, 256, s1);
    EXPECT_EQ(pool->free_block_count(), 1u);
    EXPECT_EQ(pool->allocate(1024, 256, s1), a);
    pool->deallocate(a, 1024, 256, s1);
  }
  EXPECT_EQ(dev->live, 0u);
}

// Random allocations and frees on two streams against a reference model of
// every granule: no two live blocks overlap, every block is granule-aligned
// and inside the pool's bound, and memory freed on one stream reaches the
// other only after that stream was synchronized (after the free).
TEST(DevicePoolCache, RandomizedAgainstAReferenceModel) {
  constexpr size_t kGranule = PoolResource::kGranule;
  constexpr size_t kCap = size_t{64} << 20;
  for (size_t cache_bytes : {size_t{64} << 20, size_t{16} << 10, size_t{0}}) {
    SCOPED_TRACE(cache_bytes);
    auto dev = std::make_shared<FakeDevice>(kCap);
    auto pool = make_pool_resource(dev, {.initial_chunk_bytes = 64 << 10,
                                         .max_chunk_bytes = 1 << 20,
                                         .maximum_bytes = 4 << 20,
                                         .cache_bytes = cache_bytes});
    struct Granule {
      bool live = false;
      void* freed_on = nullptr;  // NULL: never freed since carved from the upstream
      size_t syncs_at_free = 0;
    };
    std::vector<Granule> model(kCap / kGranule);
    struct Live {
      char* p;
      size_t bytes;
      void* stream;
    };
    std::vector<Live> live;
    std::mt19937_64 rng(20261130);
    const size_t common[] = {256, 1000, 4096, 12288, 65536, 100000};
    size_t in_use = 0, failures = 0;
    void* const streams[2] = {s1, s2};
    for (int step = 0; step < 20000; ++step) {
      // Allocate more often than free until 3 of the 4 MiB are in use.
      bool alloc = live.empty() || rng() % 100 < (in_use < (size_t{3} << 20) ? 60 : 25);
      if (alloc) {
        size_t bytes = rng() % 3 ? common[rng() % 6] : 1 + rng() % (200 << 10);
        void* stream = streams[rng() % 2];
        auto* p = static_cast<char*>(pool->allocate(bytes, 64, stream));
        if (!p) {
          ++failures;
          continue;
        }
        ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % kGranule, 0u);
        ASSERT_GE(p, dev->base());
        size_t first = static_cast<size_t>(p - dev->base()) / kGranule, n = (bytes + kGranule - 1) / kGranule;
        ASSERT_LE(first + n, model.size());
        for (size_t g = first; g < first + n; ++g) {
          Granule& m = model[g];
          ASSERT_FALSE(m.live) << "step " << step << ": a block overlaps a live one";
          if (m.freed_on && m.freed_on != stream) {
            ASSERT_GT(dev->sync_count(m.freed_on), m.syncs_at_free)
                << "step " << step << ": memory freed on one stream reused on another without a synchronize";
          }
          m = {true, nullptr, 0};
        }
        live.push_back({p, bytes, stream});
        in_use += bytes;
      } else {
        size_t k = rng() % live.size();
        Live b = live[k];
        live[k] = live.back();
        live.pop_back();
        // Mostly freed on the allocating stream; sometimes on the other.
        void* stream = rng() % 5 ? b.stream : (b.stream == s1 ? s2 : s1);
        size_t first = static_cast<size_t>(b.p - dev->base()) / kGranule, n = (b.bytes + kGranule - 1) / kGranule;
        for (size_t g = first; g < first + n; ++g) model[g] = {false, stream, dev->sync_count(stream)};
        pool->deallocate(b.p, b.bytes, 64, stream);
        in_use -= b.bytes;
      }
      if (step % 1000 == 999) {
        shapeml_memory_statistics st = SHAPEML_MEMORY_STATISTICS_INIT;
        ASSERT_TRUE(pool->statistics(&st));
        ASSERT_EQ(st.bytes_in_use, in_use);
        ASSERT_LE(st.bytes_reserved, size_t{4} << 20);
      }
      if (step % 5000 == 4999) pool->release_unused();
    }
    EXPECT_GT(failures, 0u) << "the bound was reached at times (the test exercises exhaustion)";
    for (Live& b : live) pool->deallocate(b.p, b.bytes, 64, b.stream);
    shapeml_memory_statistics st = SHAPEML_MEMORY_STATISTICS_INIT;
    ASSERT_TRUE(pool->statistics(&st));
    EXPECT_EQ(st.bytes_in_use, 0u);
    pool.reset();
    EXPECT_EQ(dev->live, 0u) << "destruction returned every chunk";
  }
}
