#include "runtime/cuda_memory.h"

#include <cstdio>

#include "runtime/cuda_plugin_loader.h"

namespace shapeml::runtime {
namespace {

constexpr size_t kErr = 384;

class CudaResourceBase : public MemoryResource {
 public:
  CudaResourceBase(const CudaPlugin* plugin, int32_t device) : plugin_(plugin), device_(device) {}
  DLDevice device() const noexcept override { return {kDLCUDA, device_}; }
  Status synchronize(void* stream) override {
    auto s = plugin_->resolve_stream(device_, stream);
    if (!s) return s.status();
    char err[kErr] = "";
    return plugin_status(plugin_->api().stream_synchronize(*s, err, sizeof err), err, name() + ": synchronize");
  }

 protected:
  // Fails (NULL) for an alignment cudaMalloc does not give.
  bool alignment_ok(size_t bytes, size_t alignment) const noexcept {
    if (alignment <= kCudaAlignment) return true;
    char why[160];
    std::snprintf(why, sizeof why, "cuda:%d: alignment %zu for %zu bytes exceeds the %zu bytes CUDA allocations guarantee", device_,
                  alignment, bytes, kCudaAlignment);
    note_failure(why);
    return false;
  }
  void* stream_or_default(void* stream) const noexcept {
    if (stream) return stream;
    try {
      auto s = plugin_->default_stream(device_);
      return s ? *s : nullptr;
    } catch (...) {
      return nullptr;
    }
  }

  const CudaPlugin* plugin_;
  int32_t device_;
};

class CudaResource final : public CudaResourceBase {
 public:
  using CudaResourceBase::CudaResourceBase;
  std::string name() const override { return "cuda:" + std::to_string(device_); }

 protected:
  void* do_allocate(size_t bytes, size_t alignment, void*) noexcept override {
    if (!alignment_ok(bytes, alignment)) return nullptr;
    void* p = nullptr;
    char err[kErr] = "";
    if (plugin_->api().malloc_raw(device_, bytes, &p, err, sizeof err) != 0) {
      note_failure(err);
      return nullptr;
    }
    return p;
  }
  void do_deallocate(void* p, size_t, size_t, void*) noexcept override {
    char err[kErr];
    plugin_->api().free_raw(device_, p, err, sizeof err);  // cudaFree: the device is synchronized first
  }
};

class CudaAsyncResource final : public CudaResourceBase {
 public:
  CudaAsyncResource(const CudaPlugin* plugin, int32_t device, uint64_t threshold)
      : CudaResourceBase(plugin, device), threshold_(threshold) {}
  std::string name() const override {
    return "cuda_async:" + std::to_string(device_) + "(release_threshold=" + std::to_string(threshold_) + ")";
  }

 protected:
  void* do_allocate(size_t bytes, size_t alignment, void* stream) noexcept override {
    if (!alignment_ok(bytes, alignment)) return nullptr;
    void* s = stream_or_default(stream);
    if (!s) {
      note_failure("cuda_async: no stream (the default stream could not be created)");
      return nullptr;
    }
    void* p = nullptr;
    char err[kErr] = "";
    if (plugin_->api().malloc_async(device_, bytes, s, &p, err, sizeof err) != 0) {
      note_failure(err);
      return nullptr;
    }
    return p;
  }
  void do_deallocate(void* p, size_t, size_t, void* stream) noexcept override {
    void* s = stream_or_default(stream);
    char err[kErr];
    plugin_->api().free_async(device_, p, s, err, sizeof err);
  }

 private:
  uint64_t threshold_;
};

Result<const CudaPlugin*> plugin_for(int32_t device, const char* op) {
  auto p = cuda_plugin();
  if (!p) return p.status();
  if (Status s = (*p)->check_device(device, op); !s.ok()) return s;
  return p;
}

}  // namespace

Result<MemoryResourcePtr> make_cuda_resource(int32_t device) {
  return guarded("make_cuda_resource", [&]() -> Result<MemoryResourcePtr> {
    auto p = plugin_for(device, "make_cuda_resource");
    if (!p) return p.status();
    return MemoryResourcePtr(std::make_shared<CudaResource>(*p, device));
  });
}

Result<MemoryResourcePtr> make_cuda_async_resource(int32_t device, uint64_t release_threshold) {
  return guarded("make_cuda_async_resource", [&]() -> Result<MemoryResourcePtr> {
    auto p = plugin_for(device, "make_cuda_async_resource");
    if (!p) return p.status();
    char err[kErr] = "";
    if (int32_t rc = (*p)->api().set_pool_release_threshold(device, release_threshold, err, sizeof err))
      return plugin_status(rc, err, "make_cuda_async_resource");
    return MemoryResourcePtr(std::make_shared<CudaAsyncResource>(*p, device, release_threshold));
  });
}

}  // namespace shapeml::runtime
