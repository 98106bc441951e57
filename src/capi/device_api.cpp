// The C ABI of devices (since 0.3): counting and naming CUDA devices, their
// default streams, device memory resources and host<->device copies. The
// CUDA plugin is loaded by the first of these calls that needs a CUDA device
// (runtime/cuda_plugin_loader.h); nothing else in the ABI loads it.
#include <string>

#include "capi/handles.h"
#include "runtime/cuda_memory.h"
#include "runtime/cuda_plugin_loader.h"
#include "runtime/device_copy.h"

using shapeml::capi::guarded;
using shapeml::capi::handle_of;
using shapeml::capi::finish_tensor;
using shapeml::capi::make_status;
using shapeml::capi::memory_of;
using shapeml::capi::new_memory;
using shapeml::capi::null_arg;
using shapeml::capi::tensor_of;
using shapeml::capi::to_status;
namespace rt = shapeml::runtime;

namespace {

shapeml_status* bad_device_type(const char* fn, int32_t device_type) {
  return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": device type " + std::to_string(device_type) +
                                                          " is neither kDLCPU (1) nor kDLCUDA (2)");
}

}  // namespace

extern "C" {

SHAPEML_API shapeml_status* shapeml_device_count(int32_t device_type, int32_t* out) {
  return guarded("shapeml_device_count", [&]() -> shapeml_status* {
    const char* fn = "shapeml_device_count";
    if (!out) return null_arg(fn, "out");
    *out = 0;
    if (device_type == kDLCPU) {
      *out = 1;
      return nullptr;
    }
    if (device_type != kDLCUDA) return bad_device_type(fn, device_type);
    auto p = rt::cuda_plugin();
    if (!p) return to_status(p.status());
    *out = (*p)->device_count();
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_device_name(int32_t device_type, int32_t device, const char** out) {
  return guarded("shapeml_device_name", [&]() -> shapeml_status* {
    const char* fn = "shapeml_device_name";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (device_type == kDLCPU) {
      if (device != 0) return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": the host is device 0, not " + std::to_string(device));
      *out = "cpu";
      return nullptr;
    }
    if (device_type != kDLCUDA) return bad_device_type(fn, device_type);
    auto p = rt::cuda_plugin();
    if (!p) return to_status(p.status());
    auto n = (*p)->device_name(device);
    if (!n) return to_status(n.status());
    *out = *n;
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_device_default_stream(int32_t device, void** out) {
  return guarded("shapeml_device_default_stream", [&]() -> shapeml_status* {
    if (!out) return null_arg("shapeml_device_default_stream", "out");
    *out = nullptr;
    auto p = rt::cuda_plugin();
    if (!p) return to_status(p.status());
    auto s = (*p)->default_stream(device);
    if (!s) return to_status(s.status());
    *out = *s;
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_unstable_stream_wait_tensor(void* stream, const shapeml_tensor* tensor) {
  return guarded("shapeml_unstable_stream_wait_tensor", [&]() -> shapeml_status* {
    const char* fn = "shapeml_unstable_stream_wait_tensor";
    if (!tensor) return null_arg(fn, "tensor");
    const rt::Tensor* t = tensor_of(tensor);
    if (t->dl().device.device_type != kDLCUDA) return nullptr;  // host memory: nothing is pending on a stream
    rt::StreamRef writer = t->writer();  // held: keeps a context's stream alive while ordering
    if (!writer.stream) return nullptr;    // complete, or written on a caller's stream (the caller orders)
    rt::Status st = rt::device_order_after(t->dl().device.device_id, stream, writer.stream);
    if (!st.ok()) return to_status(rt::Status(st.code(), std::string(fn) + ": " + st.message()));
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_device_synchronize(int32_t device, void* stream) {
  return guarded("shapeml_device_synchronize", [&]() -> shapeml_status* { return to_status(rt::device_synchronize(device, stream)); });
}

SHAPEML_API shapeml_status* shapeml_memory_create_cuda(int32_t device, shapeml_memory** out) {
  return guarded("shapeml_memory_create_cuda", [&]() -> shapeml_status* {
    if (!out) return null_arg("shapeml_memory_create_cuda", "out");
    *out = nullptr;
    return new_memory(rt::make_cuda_resource(device), out);
  });
}

SHAPEML_API shapeml_status* shapeml_memory_create_cuda_async(int32_t device, uint64_t release_threshold, shapeml_memory** out) {
  return guarded("shapeml_memory_create_cuda_async", [&]() -> shapeml_status* {
    if (!out) return null_arg("shapeml_memory_create_cuda_async", "out");
    *out = nullptr;
    return new_memory(rt::make_cuda_async_resource(device, release_threshold), out);
  });
}

SHAPEML_API shapeml_status* shapeml_memory_create_from_device_resource(const shapeml_memory_resource* resource, DLDevice device,
                                                                        shapeml_memory** out) {
  return guarded("shapeml_memory_create_from_device_resource", [&]() -> shapeml_status* {
    const char* fn = "shapeml_memory_create_from_device_resource";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!resource) return null_arg(fn, "resource");
    if (!rt::from_dl_device(device))
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT,
                         std::string(fn) + ": device " + rt::dl_device_str(device) + " is neither the host nor a CUDA device");
    return new_memory(rt::MemoryResource::from_vtable(*resource, "user(" + rt::dl_device_str(device) + ")", device), out);
  });
}

SHAPEML_API DLDevice shapeml_memory_device(const shapeml_memory* memory) {
  if (!memory) return {kDLCPU, 0};
  return memory->mr->device();
}

SHAPEML_API shapeml_status* shapeml_tensor_copy_to_device(const shapeml_tensor* src, shapeml_memory* memory, void* stream,
                                                          shapeml_tensor** out) {
  return guarded("shapeml_tensor_copy_to_device", [&]() -> shapeml_status* {
    const char* fn = "shapeml_tensor_copy_to_device";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!src) return null_arg(fn, "src");
    if (!memory) return null_arg(fn, "memory");
    auto ref = rt::TensorRef::share(const_cast<rt::Tensor*>(tensor_of(src)));
    return finish_tensor(rt::copy_to_device(ref, memory->mr, stream), out);
  });
}

SHAPEML_API shapeml_status* shapeml_tensor_copy_to_host(const shapeml_tensor* src, shapeml_memory* memory, void* stream,
                                                        shapeml_tensor** out) {
  return guarded("shapeml_tensor_copy_to_host", [&]() -> shapeml_status* {
    const char* fn = "shapeml_tensor_copy_to_host";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!src) return null_arg(fn, "src");
    auto ref = rt::TensorRef::share(const_cast<rt::Tensor*>(tensor_of(src)));
    return finish_tensor(rt::copy_to_host(ref, memory_of(memory), stream), out);
  });
}

}  // extern "C"
