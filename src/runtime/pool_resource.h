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
#pragma once
#include <cstddef>
#include <map>
#include <set>
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
};

class PoolResource final : public MemoryResource {
 public:
  /// Blocks are multiples of this and aligned to it; larger alignments go
  /// straight to the upstream.
  static constexpr size_t kGranule = 256;

  PoolResource(MemoryResourcePtr upstream, const PoolOptions& options);
  /// Returns every chunk to the upstream.
  ~PoolResource() override;
  std::string name() const override;
  DLDevice device() const noexcept override { return up_->device(); }
  Status synchronize(void* stream) override { return up_->synchronize(stream); }

  /// Returns the chunks that are entirely free to the upstream.
  void release_unused() noexcept;
  /// Number of free blocks (tests observe coalescing through it).
  size_t free_block_count() const;
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

  // All require mu_ held; they throw bad_alloc from std containers only.
  void* take(size_t need, void* stream);
  void* take_from(SizeSet& set, size_t need);
  bool adopt_other_stream(size_t need, void* stream);
  bool grow(size_t need, void* stream);
  void insert_free(char* p, size_t size, void* stream);
  void erase_free(FreeMap::iterator it);
  std::map<char*, size_t>::const_iterator chunk_of(const char* p) const;
  void release_unused_locked() noexcept;
  void note_exhausted(size_t bytes) const noexcept;

  MemoryResourcePtr up_;
  PoolOptions opt_;
  mutable std::mutex mu_;
  std::map<char*, size_t> chunks_;          // base -> size
  FreeMap free_by_addr_;                    // free block -> size, stream
  std::map<void*, SizeSet> free_by_size_;   // per stream, best fit
  size_t next_chunk_ = 0;
  size_t syncs_ = 0;
  size_t reserved_ = 0;  // chunks + pass-through allocations
  shapeml_memory_statistics s_ = SHAPEML_MEMORY_STATISTICS_INIT;
};

/// A shared PoolResource (NULL upstream: the host resource).
std::shared_ptr<PoolResource> make_pool_resource(MemoryResourcePtr upstream, const PoolOptions& options = {});

}  // namespace shapeml::runtime
