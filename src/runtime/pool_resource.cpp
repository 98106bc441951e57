#include "runtime/pool_resource.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace shapeml::runtime {
namespace {
constexpr size_t kGranule = PoolResource::kGranule;
// Rounds up to the granule; 0 on overflow.
size_t round_up(size_t n) { return n > SIZE_MAX - (kGranule - 1) ? 0 : (n + kGranule - 1) & ~(kGranule - 1); }
}  // namespace

// mu_, held, with the holder recorded (see reentered()).
class PoolResource::Hold {
 public:
  explicit Hold(const PoolResource& p) : p_(p), lock_(p.mu_) { p_.holder_.store(std::this_thread::get_id(), std::memory_order_relaxed); }
  ~Hold() { p_.holder_.store(std::thread::id(), std::memory_order_relaxed); }
  Hold(const Hold&) = delete;
  Hold& operator=(const Hold&) = delete;

 private:
  const PoolResource& p_;
  std::lock_guard<std::mutex> lock_;
};

PoolResource::PoolResource(MemoryResourcePtr upstream, const PoolOptions& options)
    : up_(upstream ? std::move(upstream) : host_memory_resource()), opt_(options) {
  opt_.initial_chunk_bytes = std::max(round_up(opt_.initial_chunk_bytes), kGranule);
  opt_.max_chunk_bytes = std::max(round_up(opt_.max_chunk_bytes), opt_.initial_chunk_bytes);
  next_chunk_ = opt_.initial_chunk_bytes;
}

PoolResource::~PoolResource() {
  // Parked blocks merge back first, so that a chunk that is one free block
  // goes back on the stream it was freed on; anything else (a caller that
  // leaked a block) on the default stream.
  flush_all();
  for (auto& [base, size] : chunks_) {
    auto f = free_by_addr_.find(base);
    void* stream = f != free_by_addr_.end() && f->second.size == size ? f->second.stream : nullptr;
    up_->deallocate(base, size, kGranule, stream);
  }
}

std::string PoolResource::name() const { return "pool(" + up_->name() + ")"; }

std::map<char*, size_t>::const_iterator PoolResource::chunk_of(const char* p) const {
  auto it = chunks_.upper_bound(const_cast<char*>(p));
  if (it == chunks_.begin()) return chunks_.end();
  --it;
  return p < it->first + it->second ? it : chunks_.end();
}

bool PoolResource::owns(const char* p) noexcept {
  auto at = reinterpret_cast<uintptr_t>(p);
  if (at - owned_lo_ < owned_hi_ - owned_lo_) return true;  // the chunk found last
  auto chunk = chunk_of(p);
  if (chunk == chunks_.end()) return false;
  owned_lo_ = reinterpret_cast<uintptr_t>(chunk->first);
  owned_hi_ = owned_lo_ + chunk->second;
  return true;
}

void PoolResource::insert_free(char* p, size_t size, void* stream) {
  free_by_addr_.emplace(p, FreeBlock{size, stream});
  free_by_size_[stream].emplace(size, p);
}

void PoolResource::erase_free(FreeMap::iterator it) {
  auto set = free_by_size_.find(it->second.stream);
  set->second.erase({it->second.size, it->first});
  if (set->second.empty()) free_by_size_.erase(set);
  free_by_addr_.erase(it);
}

bool PoolResource::grow(size_t need, void* stream) {
  size_t size = std::max(need, next_chunk_);
  auto fits = [&](size_t s) { return opt_.maximum_bytes == 0 || (reserved_ + s <= opt_.maximum_bytes && reserved_ + s >= reserved_); };
  if (!fits(size)) size = need;
  if (!fits(size)) {
    release_unused_locked();
    if (!fits(size)) return false;
  }
  void* p = up_->allocate(size, kGranule, stream);
  if (!p && size > need) p = up_->allocate(size = need, kGranule, stream);
  if (!p) {
    release_unused_locked();
    p = up_->allocate(size = need, kGranule, stream);
  }
  if (!p) return false;
  char* base = static_cast<char*>(p);
  chunks_.emplace(base, size);
  reserved_ += size;
  // Allocated in order on `stream`: usable there at once.
  insert_free(base, size, stream);
  if (size >= next_chunk_) next_chunk_ = std::min(next_chunk_ * 2, opt_.max_chunk_bytes);
  return true;
}

void* PoolResource::take_from(SizeSet& set, size_t need) {
  auto best = set.lower_bound({need, nullptr});
  if (best == set.end()) return nullptr;
  auto [size, p] = *best;
  auto it = free_by_addr_.find(p);
  void* stream = it->second.stream;
  erase_free(it);  // may erase `set` itself: nothing below touches it
  if (size > need) insert_free(p + need, size - need, stream);
  return p;
}

// Another stream holds a block that fits: wait for that stream, then every
// block it freed is safe on `stream` too (RMM moves them the same way).
bool PoolResource::adopt_other_stream(size_t need, void* stream) {
  for (auto& [other, set] : free_by_size_) {
    if (other == stream || set.lower_bound({need, nullptr}) == set.end()) continue;
    void* victim = other;
    if (!up_->synchronize(victim).ok()) continue;
    ++syncs_;
    std::vector<std::pair<char*, size_t>> blocks;
    for (auto& [size, p] : free_by_size_[victim]) blocks.emplace_back(p, size);
    for (auto& [p, size] : blocks) {
      erase_free(free_by_addr_.find(p));
      insert_free(p, size, stream);
    }
    return true;
  }
  return false;
}

void* PoolResource::take_own(size_t need, void* stream) {
  auto own = free_by_size_.find(stream);
  return own != free_by_size_.end() ? take_from(own->second, need) : nullptr;
}

// A fast-cache miss. Cheapest first: the stream's coalesced blocks; the
// same once its own parked blocks have merged in; then, with every stream's
// parked blocks merged (so that nothing free hides in a cache), another
// stream's blocks after a synchronize; then a new chunk.
void* PoolResource::take_slow(size_t need, void* stream) {
  if (void* p = take_own(need, stream)) return p;
  if (cache_bytes_) {
    if (StreamCache* c = cache_of(stream); c && c->bytes) {
      flush_stream(*c);
      if (void* p = take_own(need, stream)) return p;
    }
    flush_all();
  }
  if (adopt_other_stream(need, stream)) return take_own(need, stream);
  if (grow(need, stream)) return take_own(need, stream);
  return nullptr;
}

// ---------------------------------------------------------------------------
// The fast cache.

PoolResource::StreamCache* PoolResource::cache_of(void* stream) noexcept {
  StreamCache& last = cache_[last_cache_];
  if (last.active && last.stream == stream) return &last;
  for (uint32_t i = 0; i < kCacheStreams; ++i)
    if (cache_[i].active && cache_[i].stream == stream) {
      last_cache_ = i;
      return &cache_[i];
    }
  return nullptr;
}

void* PoolResource::cache_pop(size_t need, void* stream) noexcept {
  if (!cache_bytes_) return nullptr;
  StreamCache* c = cache_of(stream);
  if (!c) return nullptr;
  for (uint32_t i = 0; i < c->bins; ++i) {
    if (c->sizes[i] != need) continue;
    CacheBin& b = c->bin[i];
    if (!b.count) return nullptr;
    b.used = c->used = ++tick_;
    c->bytes -= need;
    cache_bytes_ -= need;
    return b.blocks[--b.count];
  }
  return nullptr;
}

bool PoolResource::cache_push(char* p, size_t size, void* stream) noexcept {
  if (size > opt_.cache_bytes - cache_bytes_) return false;  // cache_bytes_ <= opt_.cache_bytes always
  StreamCache* c = cache_of(stream);
  if (!c) {
    // A stream without a cache: an unused slot, else the least recently
    // used one, flushed.
    uint32_t victim = 0;
    for (uint32_t i = 0; i < kCacheStreams; ++i) {
      if (!cache_[i].active) {
        victim = i;
        break;
      }
      if (cache_[i].used < cache_[victim].used) victim = i;
    }
    c = &cache_[victim];
    if (c->active) flush_stream(*c);
    c->active = true;
    c->stream = stream;
    c->bins = 0;
    last_cache_ = victim;
  }
  uint32_t i = 0;
  while (i < c->bins && c->sizes[i] != size) ++i;
  if (i == c->bins) {
    if (c->bins < kCacheBins) {
      ++c->bins;
    } else {
      // A new size: an empty bin, else the least recently used one, flushed.
      i = 0;
      for (uint32_t j = 0; j < kCacheBins; ++j) {
        if (!c->bin[j].count) {
          i = j;
          break;
        }
        if (c->bin[j].used < c->bin[i].used) i = j;
      }
      flush_bin(*c, i);
    }
    c->sizes[i] = size;
    c->bin[i].count = 0;
  }
  CacheBin& b = c->bin[i];
  if (b.count == kCacheDepth) return false;
  b.blocks[b.count++] = p;
  b.used = c->used = ++tick_;
  c->bytes += size;
  cache_bytes_ += size;
  return true;
}

void PoolResource::flush_bin(StreamCache& c, uint32_t i) noexcept {
  CacheBin& b = c.bin[i];
  size_t size = c.sizes[i];
  while (b.count) {
    coalesce_free(b.blocks[--b.count], size, c.stream);
    c.bytes -= size;
    cache_bytes_ -= size;
  }
}

void PoolResource::flush_stream(StreamCache& c) noexcept {
  for (uint32_t i = 0; i < c.bins; ++i) flush_bin(c, i);
}

void PoolResource::flush_all() noexcept {
  if (!cache_bytes_) return;
  for (StreamCache& c : cache_) flush_stream(c);
}

void PoolResource::note_exhausted(size_t bytes) const noexcept {
  try {
    size_t largest = 0;
    for (auto& [stream, set] : free_by_size_)
      if (!set.empty()) largest = std::max(largest, set.rbegin()->first);
    for (const StreamCache& c : cache_)  // empty unless a pass-through failed
      for (uint32_t i = 0; i < c.bins; ++i)
        if (c.bin[i].count) largest = std::max(largest, c.sizes[i]);
    std::string why = name() + " cannot allocate " + std::to_string(bytes) + " bytes: it holds " + std::to_string(reserved_) +
                      " bytes from its upstream";
    if (opt_.maximum_bytes) why += " of at most " + std::to_string(opt_.maximum_bytes);
    why += ", " + std::to_string(s_.bytes_in_use) + " in use, largest free block " + std::to_string(largest) + " bytes";
    const std::string& up = last_failure();
    if (!up.empty()) why += "; upstream: " + up;
    note_failure(why);
  } catch (...) {
  }
}

void* PoolResource::do_allocate(size_t bytes, size_t alignment, void* stream) noexcept {
  if (reentered()) {  // from the upstream, on the thread holding the lock: the state is mid-change
    ++s_.failed_allocation_count;
    note_failure(name() + " cannot allocate " + std::to_string(bytes) +
                 " bytes from inside a call to its upstream (the upstream resource allocated from the pool it serves)");
    return nullptr;
  }
  try {
    Hold lock(*this);
    void* p = nullptr;
    if (alignment > kGranule) {
      // Rare: pass through, counted as reserved while it is out.
      p = up_->allocate(bytes, alignment, stream);
      if (p) reserved_ += bytes;
    } else if (size_t need = round_up(bytes)) {
      p = cache_pop(need, stream);
      if (!p) p = take_slow(need, stream);
    }
    if (!p) {
      ++s_.failed_allocation_count;
      note_exhausted(bytes);
      return nullptr;
    }
    s_.bytes_in_use += bytes;
    s_.peak_bytes_in_use = std::max(s_.peak_bytes_in_use, s_.bytes_in_use);
    ++s_.allocation_count;
    s_.bytes_allocated_total += bytes;
    return p;
  } catch (...) {  // std::bad_alloc from the bookkeeping containers
    return nullptr;
  }
}

void PoolResource::do_deallocate(void* ptr, size_t bytes, size_t alignment, void* stream) noexcept {
  if (reentered()) {  // from the upstream: the block cannot be taken back now; kept out (leaked) rather than corrupt the pool
    note_failure(name() + " dropped a free of " + std::to_string(bytes) + " bytes made from inside a call to its upstream");
    return;
  }
  Hold lock(*this);
  s_.bytes_in_use -= bytes;
  ++s_.deallocation_count;
  if (alignment > kGranule) {
    up_->deallocate(ptr, bytes, alignment, stream);
    reserved_ -= bytes;
    return;
  }
  char* p = static_cast<char*>(ptr);
  size_t size = round_up(bytes);
  if (!size || !owns(p)) return;  // not ours: a caller bug; leak rather than corrupt
  if (!cache_push(p, size, stream)) coalesce_free(p, size, stream);
}

void PoolResource::coalesce_free(char* p, size_t size, void* stream) noexcept {
  auto chunk = chunk_of(p);
  if (chunk == chunks_.end()) return;
  char* chunk_end = chunk->first + chunk->second;
  try {
    // Merge with the free block that ends where this one begins ...
    auto next = free_by_addr_.lower_bound(p);
    if (next != free_by_addr_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second.size == p && prev->first >= chunk->first && prev->second.stream == stream) {
        p = prev->first;
        size += prev->second.size;
        erase_free(prev);
      }
    }
    // ... and with the one that begins where it ends (same chunk, same stream only).
    next = free_by_addr_.lower_bound(p + size);
    if (next != free_by_addr_.end() && next->first == p + size && next->first < chunk_end && next->second.stream == stream) {
      size += next->second.size;
      erase_free(next);
    }
    insert_free(p, size, stream);
  } catch (...) {
    // Out of memory for the bookkeeping: the block is lost to the pool (not
    // to the process: the chunk is returned when the pool is destroyed).
  }
}

void PoolResource::release_unused_locked() noexcept {
  flush_all();  // a chunk whose blocks are parked is free too
  owned_lo_ = owned_hi_ = 0;
  for (auto it = chunks_.begin(); it != chunks_.end();) {
    auto f = free_by_addr_.find(it->first);
    if (f != free_by_addr_.end() && f->second.size == it->second) {
      void* stream = f->second.stream;  // its last use was ordered on this stream
      erase_free(f);
      up_->deallocate(it->first, it->second, kGranule, stream);
      reserved_ -= it->second;
      it = chunks_.erase(it);
    } else {
      ++it;
    }
  }
}

void PoolResource::release_unused() noexcept {
  if (reentered()) return;  // from the upstream: nothing is released then
  Hold lock(*this);
  release_unused_locked();
}

size_t PoolResource::stream_synchronizations() const {
  if (reentered()) return syncs_;  // this thread holds the lock
  Hold lock(*this);
  return syncs_;
}

size_t PoolResource::free_block_count() {
  if (reentered()) return free_by_addr_.size();  // this thread holds the lock (parked blocks not counted)
  Hold lock(*this);
  flush_all();
  return free_by_addr_.size();
}

size_t PoolResource::cached_block_count() const {
  std::unique_ptr<Hold> lock;
  if (!reentered()) lock = std::make_unique<Hold>(*this);  // else this thread holds it already
  size_t n = 0;
  for (const StreamCache& c : cache_)
    for (uint32_t i = 0; i < c.bins; ++i) n += c.bin[i].count;
  return n;
}

size_t PoolResource::chunk_count() const {
  if (reentered()) return chunks_.size();
  Hold lock(*this);
  return chunks_.size();
}

bool PoolResource::do_statistics(shapeml_memory_statistics* out) const noexcept {
  shapeml_memory_statistics copy;
  if (reentered()) {  // from the upstream: this thread holds the lock already
    copy = s_;
    copy.bytes_reserved = reserved_;
  } else {
    Hold lock(*this);
    copy = s_;
    copy.bytes_reserved = reserved_;
  }
  write_statistics(copy, out);
  return true;
}

std::shared_ptr<PoolResource> make_pool_resource(MemoryResourcePtr upstream, const PoolOptions& options) {
  return std::make_shared<PoolResource>(std::move(upstream), options);
}

}  // namespace shapeml::runtime
