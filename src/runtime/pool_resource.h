// A coalescing pool over any upstream memory resource (RMM's
// pool_memory_resource, simplified): it takes chunks from the upstream,
// carves blocks out of them best-fit, and merges a freed block with its free
// neighbours in the same chunk, so that fragmentation does not grow without
// bound. It relies on sized deallocation: a freed block's size is the size
// the caller passes, not a header.
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

  /// Returns the chunks that are entirely free to the upstream.
  void release_unused() noexcept;
  /// Number of free blocks (tests observe coalescing through it).
  size_t free_block_count() const;
  size_t chunk_count() const;

 protected:
  void* do_allocate(size_t bytes, size_t alignment, void* stream) noexcept override;
  void do_deallocate(void* ptr, size_t bytes, size_t alignment, void* stream) noexcept override;
  bool do_statistics(shapeml_memory_statistics* out) const noexcept override;

 private:
  void* take(size_t need);  // requires mu_ held; throws bad_alloc from std containers only
  bool grow(size_t need, void* stream);
  void insert_free(char* p, size_t size);
  void erase_free(std::map<char*, size_t>::iterator it);
  std::map<char*, size_t>::const_iterator chunk_of(const char* p) const;
  void release_unused_locked() noexcept;

  MemoryResourcePtr up_;
  PoolOptions opt_;
  mutable std::mutex mu_;
  std::map<char*, size_t> chunks_;                 // base -> size
  std::map<char*, size_t> free_by_addr_;           // free block -> size
  std::set<std::pair<size_t, char*>> free_by_size_;  // best fit
  size_t next_chunk_ = 0;
  size_t reserved_ = 0;  // chunks + pass-through allocations
  shapeml_memory_statistics s_ = SHAPEML_MEMORY_STATISTICS_INIT;
};

/// A shared PoolResource (NULL upstream: the host resource).
std::shared_ptr<PoolResource> make_pool_resource(MemoryResourcePtr upstream, const PoolOptions& options = {});

}  // namespace shapeml::runtime
