#include <gtest/gtest.h>

#include <stdexcept>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "c_user_resource.h"
#include "obs/trace.h"
#include "runtime/memory_resource.h"
#include "runtime/pool_resource.h"
#include "runtime/tensor.h"

using namespace shapeml::runtime;

namespace {

shapeml_memory_statistics stats_of(const MemoryResource& r) {
  shapeml_memory_statistics s = SHAPEML_MEMORY_STATISTICS_INIT;
  EXPECT_TRUE(r.statistics(&s));
  return s;
}

bool aligned(const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

}  // namespace

TEST(HostResource, AllocatesAlignedAtLeast64) {
  MemoryResourcePtr host = host_memory_resource();
  EXPECT_EQ(host->name(), "host");
  for (size_t align : {1, 8, 64, 128, 4096}) {
    for (size_t bytes : {1, 63, 64, 1000, 1 << 20}) {
      void* p = host->allocate(bytes, align);
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(aligned(p, align < 64 ? 64 : align)) << bytes << " @ " << align;
      std::memset(p, 0xab, bytes);
      host->deallocate(p, bytes, align);
    }
  }
  shapeml_memory_statistics s = SHAPEML_MEMORY_STATISTICS_INIT;
  EXPECT_FALSE(host->statistics(&s)) << "the host resource keeps no statistics";
}

TEST(HostResource, RejectsZeroBytesAndBadAlignment) {
  MemoryResourcePtr host = host_memory_resource();
  EXPECT_EQ(host->allocate(0, 64), nullptr);
  EXPECT_EQ(host->allocate(16, 48), nullptr) << "alignment must be a power of two";
  EXPECT_EQ(host->allocate(SIZE_MAX - 10, 64), nullptr) << "overflowing size";
  host->deallocate(nullptr, 16, 64);  // a no-op
}

TEST(StatisticsAdaptor, CountsBytesPeakAndCalls) {
  auto stats = make_statistics_adaptor(host_memory_resource());
  EXPECT_EQ(stats->name(), "statistics(host)");
  void* a = stats->allocate(100, 64);
  void* b = stats->allocate(300, 64);
  auto s = stats_of(*stats);
  EXPECT_EQ(s.bytes_in_use, 400u);
  EXPECT_EQ(s.peak_bytes_in_use, 400u);
  EXPECT_EQ(s.allocation_count, 2u);
  stats->deallocate(a, 100, 64);
  void* c = stats->allocate(50, 64);
  s = stats_of(*stats);
  EXPECT_EQ(s.bytes_in_use, 350u);
  EXPECT_EQ(s.peak_bytes_in_use, 400u);
  EXPECT_EQ(s.allocation_count, 3u);
  EXPECT_EQ(s.deallocation_count, 1u);
  EXPECT_EQ(s.bytes_allocated_total, 450u);
  stats->deallocate(b, 300, 64);
  stats->deallocate(c, 50, 64);
  EXPECT_EQ(stats_of(*stats).bytes_in_use, 0u);
}

TEST(StatisticsAdaptor, CountsFailuresOfTheUpstream) {
  c_user_state st{};
  auto user = MemoryResource::from_vtable(c_user_resource(&st));
  ASSERT_TRUE(user.ok()) << user.status().str();
  auto stats = make_statistics_adaptor(*user);
  st.fail_next = 1;
  EXPECT_EQ(stats->allocate(10, 64), nullptr);
  EXPECT_EQ(stats_of(*stats).failed_allocation_count, 1u);
  EXPECT_EQ(stats_of(*stats).allocation_count, 0u);
}

TEST(StatisticsAdaptor, HonoursAShorterCallerStruct) {
  auto stats = make_statistics_adaptor(nullptr);  // NULL upstream: host
  void* p = stats->allocate(64, 64);
  // An old caller that knows only the first two fields; a canary follows.
  struct Old {
    size_t struct_size;
    uint64_t bytes_in_use;
    uint64_t canary;
  } old{offsetof(Old, canary), 0, 0xdeadbeef};
  EXPECT_TRUE(stats->statistics(reinterpret_cast<shapeml_memory_statistics*>(&old)));
  EXPECT_EQ(old.bytes_in_use, 64u);
  EXPECT_EQ(old.canary, 0xdeadbeefu);
  stats->deallocate(p, 64, 64);
}

TEST(LoggingAdaptor, WritesEveryCallToTheCallbackOnly) {
  struct Log {
    std::vector<std::string> lines;
    int destroyed = 0;
  } log;
  {
    auto logging = make_logging_adaptor(
        host_memory_resource(), [](void* u, const char* line) { static_cast<Log*>(u)->lines.push_back(line); }, &log,
        [](void* u) { static_cast<Log*>(u)->destroyed++; });
    EXPECT_EQ(logging->name(), "logging(host)");
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    void* p = logging->allocate(256, 128);
    logging->deallocate(p, 256, 128);
    EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    ASSERT_EQ(log.lines.size(), 2u);
    EXPECT_EQ(log.lines[0].rfind("allocate bytes=256 alignment=128 stream=", 0), 0u) << log.lines[0];
    EXPECT_EQ(log.lines[1].rfind("deallocate 0x", 0), 0u) << log.lines[1];
    EXPECT_NE(log.lines[1].find("bytes=256 alignment=128"), std::string::npos) << log.lines[1];
    EXPECT_EQ(log.destroyed, 0);
  }
  EXPECT_EQ(log.destroyed, 1) << "user_destroy runs when the adaptor goes";
}

TEST(PoolResource, ReusesAndCoalescesBlocks) {
  auto upstream = make_statistics_adaptor(host_memory_resource());
  PoolOptions opt;
  opt.initial_chunk_bytes = 4096;
  auto pool = make_pool_resource(upstream, opt);
  EXPECT_EQ(pool->name(), "pool(statistics(host))");
  void* a = pool->allocate(1000, 64);  // 1024 rounded
  void* b = pool->allocate(1000, 64);
  void* c = pool->allocate(1000, 64);
  ASSERT_TRUE(a && b && c);
  EXPECT_TRUE(aligned(a, 256) && aligned(b, 256) && aligned(c, 256));
  EXPECT_EQ(pool->chunk_count(), 1u);
  EXPECT_EQ(stats_of(*upstream).allocation_count, 1u) << "one chunk from the upstream";
  EXPECT_EQ(pool->free_block_count(), 1u);  // the tail of the chunk
  pool->deallocate(a, 1000, 64);
  pool->deallocate(c, 1000, 64);  // merges with the tail
  EXPECT_EQ(pool->free_block_count(), 2u);
  pool->deallocate(b, 1000, 64);  // bridges the two: one free block again
  EXPECT_EQ(pool->free_block_count(), 1u);
  // The whole chunk is free again, so a 4096-byte block fits without growing.
  void* d = pool->allocate(4096, 64);
  EXPECT_EQ(d, a);
  EXPECT_EQ(stats_of(*upstream).allocation_count, 1u);
  pool->deallocate(d, 4096, 64);
  auto s = stats_of(*pool);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.peak_bytes_in_use, 4096u);
  EXPECT_EQ(s.allocation_count, 4u);
  EXPECT_EQ(s.bytes_reserved, 4096u);
  pool->release_unused();
  EXPECT_EQ(pool->chunk_count(), 0u);
  EXPECT_EQ(stats_of(*upstream).bytes_in_use, 0u);
}

TEST(PoolResource, GrowsAndReturnsEverythingOnDestruction) {
  auto upstream = make_statistics_adaptor(host_memory_resource());
  {
    PoolOptions opt;
    opt.initial_chunk_bytes = 1024;
    auto pool = make_pool_resource(upstream, opt);
    std::vector<void*> ps;
    for (int i = 0; i < 10; ++i) ps.push_back(pool->allocate(1000, 64));
    for (void* p : ps) ASSERT_NE(p, nullptr);
    EXPECT_GT(pool->chunk_count(), 1u);
    void* big = pool->allocate(1 << 20, 64);  // larger than any chunk so far
    ASSERT_NE(big, nullptr);
    for (void* p : ps) pool->deallocate(p, 1000, 64);
    pool->deallocate(big, 1 << 20, 64);
    EXPECT_GT(stats_of(*upstream).bytes_in_use, 0u) << "chunks are cached, not returned";
  }
  EXPECT_EQ(stats_of(*upstream).bytes_in_use, 0u);
}

TEST(PoolResource, RespectsMaximumAndPassesLargeAlignmentsThrough) {
  PoolOptions opt;
  opt.initial_chunk_bytes = 4096;
  opt.maximum_bytes = 8192;
  auto pool = make_pool_resource(nullptr, opt);
  void* a = pool->allocate(4096, 64);
  void* b = pool->allocate(4096, 64);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(pool->allocate(256, 64), nullptr) << "past maximum_bytes";
  EXPECT_EQ(stats_of(*pool).failed_allocation_count, 1u);
  pool->deallocate(a, 4096, 64);
  void* big_align = pool->allocate(100, 4096);
  ASSERT_NE(big_align, nullptr);
  EXPECT_TRUE(aligned(big_align, 4096));
  pool->deallocate(big_align, 100, 4096);
  pool->deallocate(b, 4096, 64);
}

TEST(PoolResource, SurvivesConcurrentUse) {
  auto pool = make_pool_resource(nullptr, {});
  auto work = [&](int seed) {
    std::mt19937 rng(seed);
    std::vector<std::pair<uint8_t*, size_t>> live;
    for (int i = 0; i < 2000; ++i) {
      if (live.empty() || rng() % 3) {
        size_t n = 1 + rng() % 5000;
        auto* p = static_cast<uint8_t*>(pool->allocate(n, 64));
        ASSERT_NE(p, nullptr);
        std::memset(p, seed, n);
        live.push_back({p, n});
      } else {
        size_t k = rng() % live.size();
        auto [p, n] = live[k];
        for (size_t j = 0; j < n; ++j) ASSERT_EQ(p[j], static_cast<uint8_t>(seed)) << "another thread wrote into my block";
        pool->deallocate(p, n, 64);
        live.erase(live.begin() + static_cast<long>(k));
      }
    }
    for (auto [p, n] : live) pool->deallocate(p, n, 64);
  };
  std::vector<std::thread> threads;
  for (int t = 1; t <= 4; ++t) threads.emplace_back(work, t);
  for (auto& t : threads) t.join();
  EXPECT_EQ(stats_of(*pool).bytes_in_use, 0u);
  pool->release_unused();
  EXPECT_EQ(pool->chunk_count(), 0u);
}

// The fast cache under threads (run under the tsan preset too): 4 threads on
// two streams allocate and free the same few sizes (cache hits), free some
// blocks on the other stream (cross-stream reuse: synchronize is a no-op on
// host memory, but the pool still moves blocks between streams), and check
// that no other thread wrote into their blocks; a fifth thread keeps
// flushing, releasing and reading the counters.
TEST(PoolResource, FastCacheSurvivesConcurrentUseOnTwoStreams) {
  auto pool = make_pool_resource(nullptr, {.initial_chunk_bytes = 64 << 10, .max_chunk_bytes = 256 << 10});
  void* const streams[2] = {reinterpret_cast<void*>(0x1001), reinterpret_cast<void*>(0x2002)};
  std::atomic<bool> done{false};
  auto work = [&](int seed) {
    std::mt19937 rng(seed);
    const size_t sizes[] = {256, 1000, 4096, 5000, 65536};
    std::vector<std::tuple<uint8_t*, size_t, void*>> live;
    for (int i = 0; i < 4000; ++i) {
      if (live.size() < 4 || (live.size() < 32 && rng() % 2)) {
        size_t n = sizes[rng() % 5];
        void* stream = streams[seed % 2];
        auto* p = static_cast<uint8_t*>(pool->allocate(n, 64, stream));
        ASSERT_NE(p, nullptr);
        ASSERT_TRUE(aligned(p, PoolResource::kGranule));
        std::memset(p, seed, n);
        live.emplace_back(p, n, stream);
      } else {
        size_t k = rng() % live.size();
        auto [p, n, stream] = live[k];
        for (size_t j = 0; j < n; j += 61) ASSERT_EQ(p[j], static_cast<uint8_t>(seed)) << "another thread wrote into my block";
        ASSERT_EQ(p[n - 1], static_cast<uint8_t>(seed));
        pool->deallocate(p, n, 64, rng() % 8 ? stream : streams[(seed + 1) % 2]);
        live.erase(live.begin() + static_cast<long>(k));
      }
    }
    for (auto [p, n, stream] : live) pool->deallocate(p, n, 64, stream);
  };
  std::thread observer([&] {
    while (!done.load()) {
      pool->release_unused();
      (void)pool->cached_block_count();
      (void)pool->free_block_count();
      (void)pool->chunk_count();
      shapeml_memory_statistics s = SHAPEML_MEMORY_STATISTICS_INIT;
      EXPECT_TRUE(pool->statistics(&s));
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 1; t <= 4; ++t) threads.emplace_back(work, t);
  for (auto& t : threads) t.join();
  done = true;
  observer.join();
  auto s = stats_of(*pool);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.allocation_count, s.deallocation_count);
  pool->release_unused();
  EXPECT_EQ(pool->cached_block_count(), 0u);
}

// allocate/deallocate record a span only while tracing is on (the untraced
// path skips the span entirely; obs/trace.h).
TEST(MemoryResource, RecordsSpansOnlyWhileTracing) {
  if (!shapeml::obs::kInstrumented) GTEST_SKIP() << "built without instrumentation";
  auto pool = make_pool_resource(nullptr, {});
  shapeml::obs::take_json();  // drop what earlier tests left
  size_t before = shapeml::obs::event_count();
  pool->deallocate(pool->allocate(1000, 64), 1000, 64);
  EXPECT_EQ(shapeml::obs::event_count(), before) << "tracing is off";
  shapeml::obs::start();
  void* p = pool->allocate(1000, 64);
  pool->deallocate(p, 1000, 64);
  EXPECT_EQ(pool->allocate(0, 64), nullptr);  // rejected before any span
  shapeml::obs::stop();
  std::string json = shapeml::obs::take_json();
  EXPECT_NE(json.find("\"alloc\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"free\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"resource\":\"pool(host)\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"bytes\":1000"), std::string::npos) << json;
}

TEST(UserResource, PlainCResourcePlugsIn) {
  c_user_state st{};
  {
    auto r = MemoryResource::from_vtable(c_user_resource(&st), "my_c_resource");
    ASSERT_TRUE(r.ok()) << r.status().str();
    EXPECT_EQ((*r)->name(), "my_c_resource");
    void* p = (*r)->allocate(100, 16);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(st.last_alloc_alignment, 64u) << "the runtime asks for at least 64";
    (*r)->deallocate(p, 100, 16);
    EXPECT_EQ(st.last_dealloc_bytes, 100u) << "sized deallocation";
    EXPECT_EQ(st.last_dealloc_alignment, 64u);
    shapeml_memory_statistics s = SHAPEML_MEMORY_STATISTICS_INIT;
    EXPECT_TRUE((*r)->statistics(&s));
    EXPECT_EQ(s.allocation_count, 1u);

    // A tensor keeps the resource alive after the caller lets go of it.
    auto t = Tensor::create(shapeml::types::DType::F32, std::vector<int64_t>{3, 5}, *r);
    ASSERT_TRUE(t.ok());
    r = MemoryResourcePtr();  // drop our reference
    EXPECT_EQ(st.destroyed, 0);
    EXPECT_EQ(st.allocations, 2);
    EXPECT_EQ(st.bytes_in_use, 60u);
  }
  EXPECT_EQ(st.deallocations, 2);
  EXPECT_EQ(st.last_dealloc_bytes, 60u);
  EXPECT_EQ(st.bytes_in_use, 0u);
  EXPECT_EQ(st.destroyed, 1) << "destroy runs once, after the last allocation came back";
}

TEST(UserResource, RejectsBrokenVtables) {
  c_user_state st{};
  shapeml_memory_resource vt = c_user_resource(&st);
  vt.struct_size = sizeof(size_t) + sizeof(void*);  // too small to hold allocate/deallocate
  auto r = MemoryResource::from_vtable(vt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(r.status().message().find("struct_size"), std::string::npos) << r.status().message();
  vt = c_user_resource(&st);
  vt.deallocate = nullptr;
  r = MemoryResource::from_vtable(vt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("`deallocate` is NULL"), std::string::npos);
  EXPECT_EQ(st.destroyed, 0) << "a rejected vtable is not destroyed: the caller still owns it";
}

TEST(UserResource, OlderStructWithoutStatisticsAndDestroy) {
  c_user_state st{};
  shapeml_memory_resource vt = c_user_resource(&st);
  vt.struct_size = offsetof(shapeml_memory_resource, statistics);  // an older caller
  {
    auto r = MemoryResource::from_vtable(vt);
    ASSERT_TRUE(r.ok());
    shapeml_memory_statistics s = SHAPEML_MEMORY_STATISTICS_INIT;
    EXPECT_FALSE((*r)->statistics(&s)) << "fields past struct_size are not read";
  }
  EXPECT_EQ(st.destroyed, 0);
}

TEST(UserResource, CAdaptorOverABuiltInThroughToVtable) {
  auto stats = make_statistics_adaptor(host_memory_resource());
  c_counting_adaptor adaptor{stats->to_vtable(), 0};
  {
    auto r = MemoryResource::from_vtable(c_counting_adaptor_resource(&adaptor), "c_counting(statistics(host))");
    ASSERT_TRUE(r.ok());
    auto t = Tensor::create(shapeml::types::DType::I64, std::vector<int64_t>{8}, *r);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(stats_of(*stats).bytes_in_use, 64u);
  }
  EXPECT_EQ(adaptor.calls, 2);
  EXPECT_EQ(stats_of(*stats).bytes_in_use, 0u);
  EXPECT_EQ(stats.use_count(), 1) << "the vtable's reference was dropped by its destroy";
}

// Issue 24, item 11: a C++ host's callback that throws used to terminate the
// process (the calls are inside noexcept functions and destructors). Now a
// throwing allocate is a failed allocation that says so; a throwing
// deallocate, statistics, destroy, log callback or tensor deleter is
// contained, and the library goes on.
TEST(UserResource, CallbacksThatThrowAreContained) {
  shapeml_memory_resource vt{};
  vt.struct_size = sizeof vt;
  vt.allocate = [](void*, size_t, size_t, void*) -> void* { throw std::runtime_error("allocate"); };
  vt.deallocate = [](void*, void*, size_t, size_t, void*) { throw std::runtime_error("deallocate"); };
  vt.statistics = [](void*, shapeml_memory_statistics*) -> int { throw std::runtime_error("statistics"); };
  vt.destroy = [](void*) { throw std::runtime_error("destroy"); };
  {
    auto r = MemoryResource::from_vtable(vt, "thrower");
    ASSERT_TRUE(r.ok()) << r.status().str();
    EXPECT_EQ((*r)->allocate(64, 64), nullptr);
    EXPECT_NE(MemoryResource::last_failure().find("threw a C++ exception"), std::string::npos) << MemoryResource::last_failure();
    auto t = Tensor::create(shapeml::types::DType::F32, std::vector<int64_t>{4}, *r);
    EXPECT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), StatusCode::ResourceExhausted) << t.status().str();
    static char block[64];
    (*r)->deallocate(block, 64, 64);  // contained
    shapeml_memory_statistics s = SHAPEML_MEMORY_STATISTICS_INIT;
    EXPECT_FALSE((*r)->statistics(&s));
  }  // destroy throws: contained
  auto logging = make_logging_adaptor(host_memory_resource(), [](void*, const char*) { throw std::runtime_error("log"); }, nullptr,
                                      [](void*) { throw 1; });
  void* p = logging->allocate(32, 64);
  EXPECT_NE(p, nullptr) << "a throwing log callback does not fail the allocation";
  logging->deallocate(p, 32, 64);
  logging = MemoryResourcePtr();
  static float data[4] = {1, 2, 3, 4};
  TensorDeleter del;
  del.fn = [](void*) { throw std::runtime_error("deleter"); };
  {
    auto t = Tensor::borrow(shapeml::types::DType::F32, std::vector<int64_t>{4}, {}, data, shapeml::types::Device::host(), del);
    ASSERT_TRUE(t.ok()) << t.status().str();
  }  // the deleter throws when the tensor dies: contained
  SUCCEED() << "the process is still here";
}
