// A coalescing pool over any upstream memory resource (RMM's
// pool_memory_resource, simplified): it takes chunks from the upstream,
// carves blocks out of them best-fit, and merges a freed block with its free
// neighbours in the same chunk, so that fragmentation does not grow without
// bound. It relies on sized deallocation: a freed block's size is the size
// the caller passes, not a header — so it never touches the memory it
// manages, and works over a device upstream as over the host.
//
// Stream-ordered reuse (as RMM's pool): a freed block remembers the stream it
// was freed on. An allocation on the same stream reuses it at once (the
// stream orders the old use before the new one). A block freed on another
// stream is reused only after that stream is synchronized
// (upstream->synchronize); then all of that stream's free blocks join the
// allocating stream's. Blocks coalesce only with neighbours freed on the same
// stream. Host memory has one stream (NULL), so nothing is ever waited for.
//
// Fast cache (issue 9): the common case — a program that allocates and
// frees blocks of the same sizes on the same stream, over and over — is
// served without touching the coalescing maps. A freed block is parked, as
// it is, in a small per-stream cache binned by its exact granule-rounded
// size (LIFO, fixed arrays: no heap allocation); an allocation on that
// stream looks there first. Bounds: kCacheStreams streams, kCacheBins sizes
// per stream, kCacheDepth blocks per size, and PoolOptions::cache_bytes
// bytes in all; a block that does not fit is coalesced as before, and a new
// stream or size takes the least recently used slot (flushing it). A parked
// block is free in every sense that matters: a miss that the stream's own
// coalesced blocks cannot serve first flushes that stream's cache into the
// coalescing maps (merging neighbours) and retries, and before the pool
// adopts another stream's blocks, grows, fails or releases memory it
// flushes every stream's cache. Parked blocks keep the stream they were
// freed on, so the stream-ordered rules above hold unchanged.
// Measured (bench/pool_host_bench, pool over host memory, the 2-core build
// VM): an allocate+free pair of 1 KiB took 0.098 µs before the cache and
// 0.013 µs with it; of 1 MiB, 0.057 and 0.013 µs (docs/design/
// pool-fast-cache.md has the table and the alternatives considered).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "runtime/memory_resource.h"

namespace shapeml::runtime {

struct PoolOptions {
  /// First chunk taken from the upstream; later chunks double, up to
  /// max_chunk_bytes (a larger request gets a chunk of its own size).
  size_t initial_chunk_bytes = size_t{1} << 20;
  size_t max_chunk_bytes = size_t{1} << 30;
  /// Upper bound on the bytes held from the upstream; 0 = no bound. An
  /// allocation that would pass it fails (returns NULL).
  size_t maximum_bytes = 0;
  /// Most bytes the fast cache parks at once, over all streams (0: no fast
  /// cache; every free coalesces at once, as before issue 9). A freed block
  /// larger than what is left of it is coalesced at once. Parked bytes stay
  /// inside the pool's chunks: they never add to what it holds.
  size_t cache_bytes = size_t{64} << 20;
};

class PoolResource final : public MemoryResource {
 public:
  /// Blocks are multiples of this and aligned to it; larger alignments go
  /// straight to the upstream.
  static constexpr size_t kGranule = 256;
  /// Fast-cache bounds: streams with a cache of their own, distinct block
  /// sizes per stream, blocks per size (see the comment at the top).
  static constexpr int kCacheStreams = 4;
  static constexpr int kCacheBins = 16;
  static constexpr int kCacheDepth = 8;

  PoolResource(MemoryResourcePtr upstream, const PoolOptions& options);
  /// Returns every chunk to the upstream.
  ~PoolResource() override;
  std::string name() const override;
  DLDevice device() const noexcept override { return up_->device(); }
  Status synchronize(void* stream) override { return up_->synchronize(stream); }

  /// Returns the chunks that are entirely free to the upstream (the fast
  /// cache is flushed first, so a chunk whose blocks are parked there counts
  /// as free).
  void release_unused() noexcept;
  /// Number of free blocks once coalesced (tests observe coalescing through
  /// it). It flushes the fast cache into the coalescing maps first, which
  /// is why it is not const.
  size_t free_block_count();
  /// Number of freed blocks parked in the fast cache now, all streams.
  size_t cached_block_count() const;
  size_t chunk_count() const;
  /// How many times the pool synchronized a stream to reuse its blocks.
  size_t stream_synchronizations() const;

 protected:
  void* do_allocate(size_t bytes, size_t alignment, void* stream) noexcept override;
  void do_deallocate(void* ptr, size_t bytes, size_t alignment, void* stream) noexcept override;
  bool do_statistics(shapeml_memory_statistics* out) const noexcept override;

 private:
  struct FreeBlock {
    size_t size;
    void* stream;  // freed on (NULL: host, or synchronized)
  };
  using FreeMap = std::map<char*, FreeBlock>;
  using SizeSet = std::set<std::pair<size_t, char*>>;

  // One stream's fast cache: bin i holds up to kCacheDepth blocks of
  // exactly sizes[i] bytes, most recently freed last (LIFO).
  struct CacheBin {
    uint64_t used;  // tick of its last push or pop (LRU)
    uint32_t count;
    char* blocks[kCacheDepth];
  };
  struct StreamCache {
    void* stream;
    bool active;
    uint32_t bins;  // bins in use: sizes[0, bins)
    uint64_t used;
    size_t bytes;
    size_t sizes[kCacheBins];
    CacheBin bin[kCacheBins];
  };

  // All require mu_ held; they throw bad_alloc from std containers only.
  void* take_own(size_t need, void* stream);
  void* take_slow(size_t need, void* stream);
  void* take_from(SizeSet& set, size_t need);
  bool adopt_other_stream(size_t need, void* stream);
  bool grow(size_t need, void* stream);
  void insert_free(char* p, size_t size, void* stream);
  void erase_free(FreeMap::iterator it);
  std::map<char*, size_t>::const_iterator chunk_of(const char* p) const;
  bool owns(const char* p) noexcept;
  void release_unused_locked() noexcept;
  void note_exhausted(size_t bytes) const noexcept;
  // The freeing half: merge with same-stream neighbours, then index. Never
  // throws (on bad_alloc the block is lost until the pool is destroyed).
  void coalesce_free(char* p, size_t size, void* stream) noexcept;
  // The fast cache (mu_ held, never throw).
  StreamCache* cache_of(void* stream) noexcept;
  void* cache_pop(size_t need, void* stream) noexcept;
  bool cache_push(char* p, size_t size, void* stream) noexcept;
  void flush_bin(StreamCache& c, uint32_t i) noexcept;
  void flush_stream(StreamCache& c) noexcept;
  void flush_all() noexcept;

  MemoryResourcePtr up_;
  PoolOptions opt_;
  // The lock, and which thread holds it: a call from the upstream back into
  // the pool (its allocate reading the pool's statistics or allocating from
  // it) comes on the thread that holds the lock, and is answered without
  // taking it instead of deadlocking (docs/design/pool-fast-cache.md).
  mutable std::mutex mu_;
  mutable std::atomic<std::thread::id> holder_{};
  class Hold;
  bool reentered() const noexcept { return holder_.load(std::memory_order_relaxed) == std::this_thread::get_id(); }
  std::map<char*, size_t> chunks_;          // base -> size
  FreeMap free_by_addr_;                    // free block -> size, stream
  std::map<void*, SizeSet> free_by_size_;   // per stream, best fit
  size_t next_chunk_ = 0;
  size_t syncs_ = 0;
  size_t reserved_ = 0;  // chunks + pass-through allocations
  StreamCache cache_[kCacheStreams] = {};
  uint32_t last_cache_ = 0;  // index of the stream cache used last
  size_t cache_bytes_ = 0;   // parked in all stream caches
  uint64_t tick_ = 0;        // LRU clock of the cache
  uintptr_t owned_lo_ = 0, owned_hi_ = 0;  // the chunk owns() found last
  shapeml_memory_statistics s_ = SHAPEML_MEMORY_STATISTICS_INIT;
};

/// A shared PoolResource (NULL upstream: the host resource).
std::shared_ptr<PoolResource> make_pool_resource(MemoryResourcePtr upstream, const PoolOptions& options = {});

}  // namespace shapeml::runtime
