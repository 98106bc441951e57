#include "runtime/memory_resource.h"
#include "runtime/user_callback.h"
#include "obs/trace.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/struct_reader.h"

namespace shapeml::runtime {
namespace {

bool is_power_of_two(size_t x) { return x != 0 && (x & (x - 1)) == 0; }
size_t effective_alignment(size_t a) { return a < kMinAlignment ? kMinAlignment : a; }

// ---------------------------------------------------------------------------
// A user's C vtable.
class VtableResource final : public MemoryResource {
 public:
  VtableResource(const shapeml_memory_resource& vt, std::string name, DLDevice device)
      : vt_(vt), name_(std::move(name)), device_(device) {}
  ~VtableResource() override {
    if (vt_.destroy) (void)call_user([&] { vt_.destroy(vt_.user); });
  }
  std::string name() const override { return name_; }
  DLDevice device() const noexcept override { return device_; }

 protected:
  // The user's functions may throw (a C++ host): a throwing allocate is a
  // failed allocation that says so; the others are contained.
  void* do_allocate(size_t bytes, size_t alignment, void* stream) noexcept override {
    void* p = nullptr;
    if (!call_user([&] { p = vt_.allocate(vt_.user, bytes, alignment, stream); })) {
      note_failure("the allocate function of memory resource `" + name_ + "` threw a C++ exception");
      return nullptr;
    }
    return p;
  }
  void do_deallocate(void* p, size_t bytes, size_t alignment, void* stream) noexcept override {
    (void)call_user([&] { vt_.deallocate(vt_.user, p, bytes, alignment, stream); });
  }
  bool do_statistics(shapeml_memory_statistics* out) const noexcept override {
    bool got = false;
    return vt_.statistics && call_user([&] { got = vt_.statistics(vt_.user, out) != 0; }) && got;
  }

 private:
  shapeml_memory_resource vt_;
  std::string name_;
  DLDevice device_;
};

// ---------------------------------------------------------------------------
// malloc/free, with the last few large freed blocks kept for reuse: glibc
// hands a freed large block back to the system (munmap, or a trim of the
// heap's top), so a compiled program, which allocates the same outputs and
// temporaries on every call, would page-fault them in on every call in a
// process whose heap has not grown otherwise (an AOT module, a JIT module
// loaded from the compilation cache): docs/design/jit-cache.md measures it.
class HostResource final : public MemoryResource {
 public:
  ~HostResource() override {
    for (const Block& b : kept_) std::free(b.p);
  }
  std::string name() const override { return "host"; }

 protected:
  void* do_allocate(size_t bytes, size_t alignment, void*) noexcept override {
    // aligned_alloc wants a size that is a multiple of the alignment.
    size_t rounded = (bytes + alignment - 1) & ~(alignment - 1);
    if (rounded < bytes) return nullptr;  // overflow
    if (kKeep && rounded >= kKeepMin) {
      std::lock_guard<std::mutex> l(mu_);
      for (size_t i = kept_.size(); i-- > 0;)
        if (kept_[i].bytes == rounded && kept_[i].alignment == alignment) {
          void* p = kept_[i].p;
          kept_bytes_ -= rounded;
          kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
          return p;
        }
    }
    void* p = std::aligned_alloc(alignment, rounded);
    if (!p && kKeep) {  // short of memory: give the kept blocks back first
      {
        std::lock_guard<std::mutex> l(mu_);
        for (const Block& b : kept_) std::free(b.p);
        kept_.clear();
        kept_bytes_ = 0;
      }
      p = std::aligned_alloc(alignment, rounded);
    }
    return p;
  }
  void do_deallocate(void* p, size_t bytes, size_t alignment, void*) noexcept override {
    size_t rounded = (bytes + alignment - 1) & ~(alignment - 1);
    if (kKeep && p && rounded >= kKeepMin && rounded <= kKeepBytes) {
      std::lock_guard<std::mutex> l(mu_);
      // The oldest go first when the count or the bytes would exceed the bounds.
      while (!kept_.empty() && (kept_.size() >= kKeepCount || kept_bytes_ + rounded > kKeepBytes)) {
        std::free(kept_.front().p);
        kept_bytes_ -= kept_.front().bytes;
        kept_.erase(kept_.begin());
      }
      kept_.push_back({p, rounded, alignment});
      kept_bytes_ += rounded;
      return;
    }
    std::free(p);
  }

 private:
  static constexpr size_t kKeepMin = 64 << 10, kKeepCount = 32, kKeepBytes = 128 << 20;
  // Under a sanitizer every block goes back to its allocator, which then
  // sees a use after free of an output or a temporary.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  static constexpr bool kKeep = false;
#else
  static constexpr bool kKeep = true;
#endif
  struct Block {
    void* p;
    size_t bytes, alignment;
  };
  std::mutex mu_;
  std::vector<Block> kept_;  // oldest first
  size_t kept_bytes_ = 0;
};

// ---------------------------------------------------------------------------
class StatisticsAdaptor final : public MemoryResource {
 public:
  explicit StatisticsAdaptor(MemoryResourcePtr up) : up_(std::move(up)) {}
  std::string name() const override { return "statistics(" + up_->name() + ")"; }
  DLDevice device() const noexcept override { return up_->device(); }
  Status synchronize(void* stream) override { return up_->synchronize(stream); }

 protected:
  void* do_allocate(size_t bytes, size_t alignment, void* stream) noexcept override {
    void* p = up_->allocate(bytes, alignment, stream);
    std::lock_guard<std::mutex> lock(mu_);
    if (!p) {
      ++s_.failed_allocation_count;
      return nullptr;
    }
    s_.bytes_in_use += bytes;
    if (s_.bytes_in_use > s_.peak_bytes_in_use) s_.peak_bytes_in_use = s_.bytes_in_use;
    ++s_.allocation_count;
    s_.bytes_allocated_total += bytes;
    return p;
  }
  void do_deallocate(void* p, size_t bytes, size_t alignment, void* stream) noexcept override {
    up_->deallocate(p, bytes, alignment, stream);
    std::lock_guard<std::mutex> lock(mu_);
    s_.bytes_in_use -= bytes;
    ++s_.deallocation_count;
  }
  bool do_statistics(shapeml_memory_statistics* out) const noexcept override {
    shapeml_memory_statistics copy;
    {
      std::lock_guard<std::mutex> lock(mu_);
      copy = s_;
    }
    // A pool underneath knows how much it holds from its own upstream.
    shapeml_memory_statistics up = SHAPEML_MEMORY_STATISTICS_INIT;
    if (up_->statistics(&up)) copy.bytes_reserved = up.bytes_reserved;
    write_statistics(copy, out);
    return true;
  }

 private:
  MemoryResourcePtr up_;
  mutable std::mutex mu_;
  shapeml_memory_statistics s_ = SHAPEML_MEMORY_STATISTICS_INIT;
};

// ---------------------------------------------------------------------------
class LoggingAdaptor final : public MemoryResource {
 public:
  LoggingAdaptor(MemoryResourcePtr up, shapeml_log_callback cb, void* user, void (*user_destroy)(void*))
      : up_(std::move(up)), cb_(cb), user_(user), user_destroy_(user_destroy) {}
  ~LoggingAdaptor() override {
    if (user_destroy_) (void)call_user([&] { user_destroy_(user_); });
  }
  std::string name() const override { return "logging(" + up_->name() + ")"; }
  DLDevice device() const noexcept override { return up_->device(); }
  Status synchronize(void* stream) override { return up_->synchronize(stream); }

 protected:
  void* do_allocate(size_t bytes, size_t alignment, void* stream) noexcept override {
    void* p = up_->allocate(bytes, alignment, stream);
    char line[160];
    std::snprintf(line, sizeof line, "allocate bytes=%zu alignment=%zu stream=%p -> %p%s", bytes, alignment, stream, p,
                  p ? "" : " (failed)");
    if (cb_) (void)call_user([&] { cb_(user_, line); });
    return p;
  }
  void do_deallocate(void* p, size_t bytes, size_t alignment, void* stream) noexcept override {
    char line[160];
    std::snprintf(line, sizeof line, "deallocate %p bytes=%zu alignment=%zu stream=%p", p, bytes, alignment, stream);
    if (cb_) (void)call_user([&] { cb_(user_, line); });
    up_->deallocate(p, bytes, alignment, stream);
  }
  bool do_statistics(shapeml_memory_statistics* out) const noexcept override { return up_->statistics(out); }

 private:
  MemoryResourcePtr up_;
  shapeml_log_callback cb_;
  void* user_;
  void (*user_destroy_)(void*);
};

// ---------------------------------------------------------------------------
// The vtable view of a C++ resource: `user` is a heap-allocated strong ref.
struct VtableHandle {
  MemoryResourcePtr r;
};
void* handle_allocate(void* u, size_t bytes, size_t alignment, void* stream) {
  return static_cast<VtableHandle*>(u)->r->allocate(bytes, alignment, stream);
}
void handle_deallocate(void* u, void* p, size_t bytes, size_t alignment, void* stream) {
  static_cast<VtableHandle*>(u)->r->deallocate(p, bytes, alignment, stream);
}
int32_t handle_statistics(void* u, shapeml_memory_statistics* out) {
  return static_cast<VtableHandle*>(u)->r->statistics(out) ? 1 : 0;
}
void handle_destroy(void* u) { delete static_cast<VtableHandle*>(u); }

}  // namespace

// ---------------------------------------------------------------------------
// The untraced path is a check, one relaxed load and a tail call: the span
// (and the name() string it records) lives out of line, in the *_traced
// twins, so that nothing of it is set up per call while tracing is off.
void* MemoryResource::allocate(size_t bytes, size_t alignment, void* stream) noexcept {
  if (bytes == 0 || !is_power_of_two(alignment)) return nullptr;
  if (obs::tracing()) [[unlikely]]
    return allocate_traced(bytes, alignment, stream);
  return do_allocate(bytes, effective_alignment(alignment), stream);
}

void MemoryResource::deallocate(void* ptr, size_t bytes, size_t alignment, void* stream) noexcept {
  if (!ptr) return;
  if (obs::tracing()) [[unlikely]]
    return deallocate_traced(ptr, bytes, alignment, stream);
  do_deallocate(ptr, bytes, effective_alignment(alignment), stream);
}

void* MemoryResource::allocate_traced(size_t bytes, size_t alignment, void* stream) noexcept {
  obs::Span span("memory", "alloc");
  void* p = do_allocate(bytes, effective_alignment(alignment), stream);
  if (span) {
    try {
      span.arg("resource", name());
    } catch (...) {
    }
    span.arg("bytes", static_cast<int64_t>(bytes)).arg("device", static_cast<int64_t>(device().device_type));
    if (!p) span.arg("failed", int64_t{1});
  }
  return p;
}

void MemoryResource::deallocate_traced(void* ptr, size_t bytes, size_t alignment, void* stream) noexcept {
  obs::Span span("memory", "free");
  do_deallocate(ptr, bytes, effective_alignment(alignment), stream);
  if (span) {
    try {
      span.arg("resource", name());
    } catch (...) {
    }
    span.arg("bytes", static_cast<int64_t>(bytes));
  }
}

bool MemoryResource::statistics(shapeml_memory_statistics* out) const noexcept {
  if (!out || !statistics_size_ok(out->struct_size)) return false;
  return do_statistics(out);
}

namespace {
std::string& last_failure_slot() noexcept {
  thread_local std::string why;
  return why;
}
}  // namespace

const std::string& MemoryResource::last_failure() noexcept { return last_failure_slot(); }
void MemoryResource::clear_last_failure() noexcept { last_failure_slot().clear(); }
void MemoryResource::note_failure(const std::string& why) noexcept {
  try {
    last_failure_slot() = why;
  } catch (...) {
    last_failure_slot().clear();
  }
}

Result<MemoryResourcePtr> MemoryResource::from_vtable(const shapeml_memory_resource& vtable, std::string name, DLDevice device) {
  return guarded("MemoryResource::from_vtable", [&]() -> Result<MemoryResourcePtr> {
    shapeml_memory_resource vt{};
    const size_t need = SHAPEML_FIELD_END(shapeml_memory_resource, deallocate);
    if (vtable.struct_size < need)
      return invalid_argument("memory resource: struct_size " + std::to_string(vtable.struct_size) +
                              " is too small to hold `allocate` and `deallocate` (at least " + std::to_string(need) + ")");
    if (!common::read_versioned(vtable, vt, kVtableFieldEnds))
      return invalid_argument("memory resource: struct_size is " +
                              common::accepted_sizes_text(vtable.struct_size, sizeof vt, kVtableFieldEnds));
    if (!vt.allocate) return invalid_argument("memory resource: `allocate` is NULL");
    if (!vt.deallocate) return invalid_argument("memory resource: `deallocate` is NULL");
    return MemoryResourcePtr(std::make_shared<VtableResource>(vt, std::move(name), device));
  });
}

shapeml_memory_resource MemoryResource::to_vtable() {
  shapeml_memory_resource vt{};
  vt.struct_size = sizeof vt;
  vt.user = new VtableHandle{shared_from_this()};
  vt.allocate = handle_allocate;
  vt.deallocate = handle_deallocate;
  vt.statistics = handle_statistics;
  vt.destroy = handle_destroy;
  return vt;
}

MemoryResourcePtr host_memory_resource() {
  static const MemoryResourcePtr host = std::make_shared<HostResource>();
  return host;
}

MemoryResourcePtr make_statistics_adaptor(MemoryResourcePtr upstream) {
  if (!upstream) upstream = host_memory_resource();
  return std::make_shared<StatisticsAdaptor>(std::move(upstream));
}

MemoryResourcePtr make_logging_adaptor(MemoryResourcePtr upstream, shapeml_log_callback callback, void* user,
                                       void (*user_destroy)(void*)) {
  if (!upstream) upstream = host_memory_resource();
  return std::make_shared<LoggingAdaptor>(std::move(upstream), callback, user, user_destroy);
}

void write_statistics(const shapeml_memory_statistics& in, shapeml_memory_statistics* out) noexcept {
  if (out) common::write_versioned(in, out, kStatisticsFieldEnds);
}

bool statistics_size_ok(size_t struct_size) noexcept {
  return struct_size >= sizeof(size_t) && common::acceptable_struct_size(struct_size, sizeof(shapeml_memory_statistics), kStatisticsFieldEnds);
}

}  // namespace shapeml::runtime
