#include "runtime/pool_resource.h"

#include <algorithm>
#include <string>
#include <vector>

namespace shapeml::runtime {
namespace {
constexpr size_t kGranule = PoolResource::kGranule;
// Rounds up to the granule; 0 on overflow.
size_t round_up(size_t n) { return n > SIZE_MAX - (kGranule - 1) ? 0 : (n + kGranule - 1) & ~(kGranule - 1); }
}  // namespace

PoolResource::PoolResource(MemoryResourcePtr upstream, const PoolOptions& options)
    : up_(upstream ? std::move(upstream) : host_memory_resource()), opt_(options) {
  opt_.initial_chunk_bytes = std::max(round_up(opt_.initial_chunk_bytes), kGranule);
  opt_.max_chunk_bytes = std::max(round_up(opt_.max_chunk_bytes), opt_.initial_chunk_bytes);
  next_chunk_ = opt_.initial_chunk_bytes;
}

PoolResource::~PoolResource() {
  // A chunk that is one free block goes back on the stream it was freed on;
  // anything else (a caller that leaked a block) on the default stream.
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

void* PoolResource::take(size_t need, void* stream) {
  auto own = free_by_size_.find(stream);
  if (own != free_by_size_.end())
    if (void* p = take_from(own->second, need)) return p;
  if (adopt_other_stream(need, stream)) return take_from(free_by_size_[stream], need);
  return nullptr;
}

void PoolResource::note_exhausted(size_t bytes) const noexcept {
  try {
    size_t largest = 0;
    for (auto& [stream, set] : free_by_size_)
      if (!set.empty()) largest = std::max(largest, set.rbegin()->first);
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
  try {
    std::lock_guard<std::mutex> lock(mu_);
    void* p = nullptr;
    if (alignment > kGranule) {
      // Rare: pass through, counted as reserved while it is out.
      p = up_->allocate(bytes, alignment, stream);
      if (p) reserved_ += bytes;
    } else if (size_t need = round_up(bytes)) {
      p = take(need, stream);
      if (!p && grow(need, stream)) p = take(need, stream);
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
  std::lock_guard<std::mutex> lock(mu_);
  s_.bytes_in_use -= bytes;
  ++s_.deallocation_count;
  if (alignment > kGranule) {
    up_->deallocate(ptr, bytes, alignment, stream);
    reserved_ -= bytes;
    return;
  }
  char* p = static_cast<char*>(ptr);
  size_t size = round_up(bytes);
  auto chunk = chunk_of(p);
  if (chunk == chunks_.end()) return;  // not ours: a caller bug; leak rather than corrupt
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
  std::lock_guard<std::mutex> lock(mu_);
  release_unused_locked();
}

size_t PoolResource::stream_synchronizations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return syncs_;
}

size_t PoolResource::free_block_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return free_by_addr_.size();
}

size_t PoolResource::chunk_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return chunks_.size();
}

bool PoolResource::do_statistics(shapeml_memory_statistics* out) const noexcept {
  shapeml_memory_statistics copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
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
