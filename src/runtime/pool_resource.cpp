#include "runtime/pool_resource.h"

#include <algorithm>

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
  for (auto& [base, size] : chunks_) up_->deallocate(base, size, kGranule, nullptr);
}

std::string PoolResource::name() const { return "pool(" + up_->name() + ")"; }

std::map<char*, size_t>::const_iterator PoolResource::chunk_of(const char* p) const {
  auto it = chunks_.upper_bound(const_cast<char*>(p));
  if (it == chunks_.begin()) return chunks_.end();
  --it;
  return p < it->first + it->second ? it : chunks_.end();
}

void PoolResource::insert_free(char* p, size_t size) {
  free_by_addr_.emplace(p, size);
  free_by_size_.emplace(size, p);
}

void PoolResource::erase_free(std::map<char*, size_t>::iterator it) {
  free_by_size_.erase({it->second, it->first});
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
  insert_free(base, size);
  if (size >= next_chunk_) next_chunk_ = std::min(next_chunk_ * 2, opt_.max_chunk_bytes);
  return true;
}

void* PoolResource::take(size_t need) {
  auto best = free_by_size_.lower_bound({need, nullptr});
  if (best == free_by_size_.end()) return nullptr;
  auto [size, p] = *best;
  erase_free(free_by_addr_.find(p));
  if (size > need) insert_free(p + need, size - need);
  return p;
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
      p = take(need);
      if (!p && grow(need, stream)) p = take(need);
    }
    if (!p) {
      ++s_.failed_allocation_count;
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
      if (prev->first + prev->second == p && prev->first >= chunk->first) {
        p = prev->first;
        size += prev->second;
        erase_free(prev);
      }
    }
    // ... and with the one that begins where it ends (same chunk only).
    next = free_by_addr_.lower_bound(p + size);
    if (next != free_by_addr_.end() && next->first == p + size && next->first < chunk_end) {
      size += next->second;
      erase_free(next);
    }
    insert_free(p, size);
  } catch (...) {
    // Out of memory for the bookkeeping: the block is lost to the pool (not
    // to the process: the chunk is returned when the pool is destroyed).
  }
}

void PoolResource::release_unused_locked() noexcept {
  for (auto it = chunks_.begin(); it != chunks_.end();) {
    auto f = free_by_addr_.find(it->first);
    if (f != free_by_addr_.end() && f->second == it->second) {
      erase_free(f);
      up_->deallocate(it->first, it->second, kGranule, nullptr);
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
