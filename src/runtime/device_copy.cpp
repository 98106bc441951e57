#include "runtime/device_copy.h"
#include "obs/trace.h"

#include "runtime/cuda_plugin_loader.h"

namespace shapeml::runtime {
namespace {

constexpr size_t kErr = 384;
enum CopyKind : int32_t { kHostToDevice = 0, kDeviceToHost = 1, kDeviceToDevice = 2 };

Result<const CudaPlugin*> plugin_for(int32_t device, const char* op) {
  auto p = cuda_plugin();
  if (!p) return p.status();
  if (Status s = (*p)->check_device(device, op); !s.ok()) return s;
  return p;
}

// Enqueues a copy on `stream` (NULL: default) of `device` and waits for it.
Status copy_and_wait(int32_t device, void* dst, const void* src, size_t bytes, CopyKind kind, void* stream, const char* op) {
  obs::Span span("copy", kind == 0 ? "copy host to device" : kind == 1 ? "copy device to host" : "copy device to device");
  if (span) span.arg("bytes", static_cast<int64_t>(bytes)).arg("device", static_cast<int64_t>(device)).arg("op", op);
  auto p = plugin_for(device, op);
  if (!p) return p.status();
  auto s = (*p)->resolve_stream(device, stream);
  if (!s) return s.status();
  char err[kErr] = "";
  if (int32_t rc = (*p)->api().memcpy_async(dst, src, bytes, kind, *s, err, sizeof err)) return plugin_status(rc, err, op);
  if (int32_t rc = (*p)->api().stream_synchronize(*s, err, sizeof err)) return plugin_status(rc, err, op);
  return {};
}

bool on_cuda(const Tensor& t) { return t.dl().device.device_type == kDLCUDA; }

// The stream a copy reading device tensor `src` runs on: `stream`, or with
// NULL the stream whose work may still be writing `src` (a call's output on
// a context stream) else the runtime's; ordered after that writer either way.
Result<void*> reading_stream(const Tensor& src, void* stream, StreamRef& writer) {
  writer = src.writer();  // held until the copy is done: keeps a context stream alive
  if (!stream) return writer.stream;
  if (writer.stream && writer.stream != stream)
    if (Status st = device_order_after(src.dl().device.device_id, stream, writer.stream); !st.ok()) return st;
  return stream;
}

}  // namespace

Status device_synchronize(int32_t device, void* stream) {
  return guarded("device_synchronize", [&]() -> Status {
    auto p = plugin_for(device, "device_synchronize");
    if (!p) return p.status();
    auto s = (*p)->resolve_stream(device, stream);
    if (!s) return s.status();
    char err[kErr] = "";
    return plugin_status((*p)->api().stream_synchronize(*s, err, sizeof err), err, "device_synchronize");
  });
}

Status device_order_after(int32_t device, void* waiter, void* waited) {
  return guarded("device_order_after", [&]() -> Status {
    auto p = plugin_for(device, "device_order_after");
    if (!p) return p.status();
    auto a = (*p)->resolve_stream(device, waiter);
    if (!a) return a.status();
    auto b = (*p)->resolve_stream(device, waited);
    if (!b) return b.status();
    if (*a == *b) return {};
    char err[kErr] = "";
    return plugin_status((*p)->api().stream_wait(*a, *b, err, sizeof err), err, "ordering streams");
  });
}

Status device_fill_zero(const Tensor& t, bool zero) {
  int32_t device = t.dl().device.device_id;
  auto p = plugin_for(device, "Tensor::create");
  if (!p) return p.status();
  auto s = (*p)->default_stream(device);
  if (!s) return s.status();
  char err[kErr] = "";
  if (zero)
    if (int32_t rc = (*p)->api().memset_async(t.data(), 0, t.nbytes(), *s, err, sizeof err))
      return plugin_status(rc, err, "Tensor::create (zero fill of " + t.type_str() + ")");
  return plugin_status((*p)->api().stream_synchronize(*s, err, sizeof err), err, "Tensor::create");
}

Status device_copy_from_host(const Tensor& t, const void* data, size_t bytes) {
  if (bytes == 0) return {};
  return copy_and_wait(t.dl().device.device_id, t.data(), data, bytes, kHostToDevice, nullptr, "Tensor::copy_of");
}

Result<TensorRef> copy_to_device(const TensorRef& src_in, const MemoryResourcePtr& mr, void* stream) {
  return guarded("copy_to_device", [&]() -> Result<TensorRef> {
    if (!src_in) return invalid_argument("copy_to_device: the source tensor is NULL");
    if (!mr || mr->device().device_type != kDLCUDA)
      return invalid_argument("copy_to_device: memory resource `" + (mr ? mr->name() : std::string("host")) +
                              "` does not hold CUDA device memory (create one with shapeml_memory_create_cuda)");
    int32_t device = mr->device().device_id;
    TensorRef src = src_in;
    CopyKind kind = kHostToDevice;
    if (on_cuda(*src)) {
      if (src->dl().device.device_id != device)
        return unimplemented("copy_to_device: " + src->type_str() + " is on another device than `" + mr->name() +
                             "` (peer copies are not supported yet)");
      if (!src->is_contiguous())
        return unimplemented("copy_to_device: " + src->type_str() + " has non-row-major strides; strided device copies are not supported yet");
      kind = kDeviceToDevice;
      StreamRef writer;
      auto s = reading_stream(*src, stream, writer);
      if (!s) return s.status();
      stream = *s;
    } else if (src->dl().device.device_type != kDLCPU) {
      return invalid_argument("copy_to_device: " + src->type_str() + " is neither on the host nor on a CUDA device");
    } else if (!src->is_contiguous()) {
      auto dense = src->contiguous_copy();
      if (!dense) return dense.status();
      src = std::move(dense).value();
    }
    auto r = Tensor::create(src->dtype(), src->shape(), mr, /*zero=*/false);
    if (!r) return r.status();
    if (src->nbytes())
      if (Status s = copy_and_wait(device, (*r)->data(), src->data(), src->nbytes(), kind, stream, "copy_to_device"); !s.ok()) return s;
    return r;
  });
}

Result<TensorRef> copy_to_host(const TensorRef& src, const MemoryResourcePtr& mr_in, void* stream) {
  return guarded("copy_to_host", [&]() -> Result<TensorRef> {
    if (!src) return invalid_argument("copy_to_host: the source tensor is NULL");
    MemoryResourcePtr mr = mr_in ? mr_in : host_memory_resource();
    if (mr->device().device_type != kDLCPU)
      return invalid_argument("copy_to_host: memory resource `" + mr->name() + "` does not hold host memory");
    if (src->dl().device.device_type == kDLCPU) return src->contiguous_copy(mr);
    if (!on_cuda(*src)) return invalid_argument("copy_to_host: " + src->type_str() + " is neither on the host nor on a CUDA device");
    if (!src->is_contiguous())
      return unimplemented("copy_to_host: " + src->type_str() + " has non-row-major strides; strided device copies are not supported yet");
    StreamRef writer;
    auto on = reading_stream(*src, stream, writer);
    if (!on) return on.status();
    stream = *on;
    auto r = Tensor::create(src->dtype(), src->shape(), mr, /*zero=*/false);
    if (!r) return r.status();
    if (src->nbytes())
      if (Status s = copy_and_wait(src->dl().device.device_id, (*r)->data(), src->data(), src->nbytes(), kDeviceToHost, stream,
                                   "copy_to_host");
          !s.ok())
        return s;
    return r;
  });
}

}  // namespace shapeml::runtime
