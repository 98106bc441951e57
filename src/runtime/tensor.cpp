#include "runtime/tensor.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

#include "runtime/device_copy.h"
#include "runtime/user_callback.h"

namespace shapeml::runtime {

// ---------------------------------------------------------------------------
// dtypes and devices

DLDataType to_dl_dtype(types::DType d) {
  switch (d) {
    case types::DType::F32: return {kDLFloat, 32, 1};
    case types::DType::F64: return {kDLFloat, 64, 1};
    case types::DType::BF16: return {kDLBfloat, 16, 1};
    case types::DType::I32: return {kDLInt, 32, 1};
    case types::DType::I64: return {kDLInt, 64, 1};
    case types::DType::Bool: return {kDLBoolCode, 8, 1};
    case types::DType::Var: break;  // never a tensor's (a generic signature's only)
  }
  return {kDLOpaqueHandle, 0, 0};
}

std::optional<types::DType> from_dl_dtype(DLDataType d) {
  if (d.lanes != 1) return std::nullopt;
  switch (d.code) {
    case kDLFloat:
      if (d.bits == 32) return types::DType::F32;
      if (d.bits == 64) return types::DType::F64;
      break;
    case kDLBfloat:
      if (d.bits == 16) return types::DType::BF16;
      break;
    case kDLInt:
      if (d.bits == 32) return types::DType::I32;
      if (d.bits == 64) return types::DType::I64;
      break;
    case kDLBoolCode:
      if (d.bits == 8) return types::DType::Bool;
      break;
    default: break;
  }
  return std::nullopt;
}

size_t dtype_size(types::DType d) {
  switch (d) {
    case types::DType::F32: return 4;
    case types::DType::F64: return 8;
    case types::DType::BF16: return 2;
    case types::DType::I32: return 4;
    case types::DType::I64: return 8;
    case types::DType::Bool: return 1;
    case types::DType::Var: break;
  }
  return 0;
}

std::string dl_dtype_str(DLDataType d) {
  std::string base;
  switch (d.code) {
    case kDLInt: base = "i" + std::to_string(d.bits); break;
    case kDLUInt: base = "u" + std::to_string(d.bits); break;
    case kDLFloat: base = "f" + std::to_string(d.bits); break;
    case kDLBfloat: base = "bf" + std::to_string(d.bits); break;
    case kDLComplex: base = "c" + std::to_string(d.bits); break;
    case kDLOpaqueHandle: base = "opaque" + std::to_string(d.bits); break;
    case kDLBoolCode: base = d.bits == 8 ? "bool" : "bool" + std::to_string(d.bits); break;
    default: base = "code" + std::to_string(d.code) + ":" + std::to_string(d.bits); break;
  }
  if (d.lanes != 1) base += "x" + std::to_string(d.lanes);
  return base;
}

DLDevice to_dl_device(types::Device d) {
  if (d.kind == types::Device::Kind::Cuda) return {kDLCUDA, d.ordinal};
  return {kDLCPU, 0};
}

std::optional<types::Device> from_dl_device(DLDevice d) {
  int32_t type;
  std::memcpy(&type, &d.device_type, sizeof type);  // never load an out-of-range enum
  if (type == kDLCPU) return types::Device::host();
  if (type == kDLCUDA && d.device_id >= 0) return types::Device::cuda(d.device_id);
  return std::nullopt;
}

std::string dl_device_str(DLDevice d) {
  int32_t type;
  std::memcpy(&type, &d.device_type, sizeof type);  // never load an out-of-range enum
  return dl_device_type_str(type, d.device_id);
}

std::string dl_device_type_str(int32_t device_type, int32_t device_id) {
  std::string id = ":" + std::to_string(device_id);
  switch (device_type) {
    case kDLCPU: return "cpu" + id;
    case kDLCUDA: return "cuda" + id;
    case kDLCUDAHost: return "cuda_host" + id;
    case kDLCUDAManaged: return "cuda_managed" + id;
    case kDLROCM: return "rocm" + id;
    case kDLROCMHost: return "rocm_host" + id;
    case kDLOpenCL: return "opencl" + id;
    case kDLVulkan: return "vulkan" + id;
    case kDLMetal: return "metal" + id;
    default: return "device_type " + std::to_string(device_type) + id;
  }
}

void row_major_strides(std::span<const int64_t> shape, int64_t* out) {
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    out[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
}

bool is_compact_row_major(std::span<const int64_t> shape, const int64_t* strides) {
  if (!strides) return true;
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return true;  // no elements: any strides will do
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

// ---------------------------------------------------------------------------
// TensorRef

TensorRef::TensorRef(const TensorRef& o) : t_(o.t_) {
  if (t_) t_->retain();
}
TensorRef::~TensorRef() {
  if (t_) t_->release();
}
TensorRef TensorRef::share(Tensor* t) {
  if (t) t->retain();
  return adopt(t);
}

// ---------------------------------------------------------------------------
// Tensor

struct Tensor::Storage {
  MemoryResourcePtr mr;  // set: allocated from mr; else borrowed
  void* ptr = nullptr;
  size_t bytes = 0, alignment = 0;
  TensorDeleter deleter;
  StreamRef home;  // device memory: allocated and freed in order on home.stream (NULL: the runtime's stream)
  // Guarded by mu: the stream that may still be writing the data, and the
  // other streams that used it (the home stream waits for them at release).
  mutable std::mutex mu;
  StreamRef writer;
  std::vector<StreamRef> users;
};

Tensor::~Tensor() {
  // Here rather than at namespace scope: a member may name the private dl_.
  static_assert(std::is_standard_layout_v<Tensor>, "Tensor must be standard-layout: its DLTensor is its address");
  static_assert(offsetof(Tensor, dl_) == 0, "DLTensor must be the first member of Tensor");
  if (storage_) {
    if (storage_->mr && !storage_->users.empty() && dl_.device.device_type == kDLCUDA)
      for (const StreamRef& u : storage_->users)  // no one to report to: if the ordering fails, wait on the host
        if (!device_order_after(dl_.device.device_id, storage_->home.stream, u.stream).ok())
          (void)device_synchronize(dl_.device.device_id, u.stream);
    if (storage_->mr) storage_->mr->deallocate(storage_->ptr, storage_->bytes, storage_->alignment, storage_->home.stream);
    else if (storage_->deleter.fn) (void)call_user([&] { storage_->deleter.fn(storage_->deleter.ctx); });  // a throwing deleter is contained
    delete storage_;
  }
  delete[] dims_;
}

void Tensor::release() const noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

types::Device Tensor::device() const { return from_dl_device(dl_.device).value_or(types::Device::host()); }

size_t Tensor::nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

bool Tensor::is_contiguous() const { return is_compact_row_major(shape(), dl_.strides); }

bool Tensor::owns_data() const { return storage_ && storage_->mr; }

std::string Tensor::type_str() const {
  std::string s = "(tensor " + std::string(types::dtype_name(dtype_)) + " (";
  for (int i = 0; i < dl_.ndim; ++i) s += (i ? " " : "") + std::to_string(dl_.shape[i]);
  return s + ") " + types::device_name(device()) + ")";
}

Result<TensorRef> Tensor::make(types::DType dtype, std::span<const int64_t> shape, std::span<const int64_t> strides,
                               types::Device device) {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    return invalid_argument("tensor rank " + std::to_string(shape.size()) + " exceeds the maximum " + std::to_string(kMaxRank));
  if (!strides.empty() && strides.size() != shape.size())
    return invalid_argument("tensor has " + std::to_string(shape.size()) + " dimensions but " + std::to_string(strides.size()) +
                            " strides");
  // The overflow check must not depend on the order of the dimensions (a
  // zero anywhere would otherwise hide an overflow before it and not after
  // it): the product of all dimensions, zeros counted as 1, must fit, in
  // elements and in bytes. Row-major strides are then representable too.
  int64_t span = 1;
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) return invalid_argument("tensor dimension " + std::to_string(i) + " is negative (" + std::to_string(shape[i]) + ")");
    empty |= shape[i] == 0;
    if (__builtin_mul_overflow(span, shape[i] > 0 ? shape[i] : 1, &span))
      return resource_exhausted("tensor element count overflows 64 bits (too many elements)");
  }
  int64_t bytes;
  if (__builtin_mul_overflow(span, static_cast<int64_t>(dtype_size(dtype)), &bytes))
    return resource_exhausted("tensor byte size overflows 64 bits (too many elements)");
  int64_t numel = empty ? 0 : span;
  // Given strides: the farthest element, sum of (d_i - 1) |s_i| elements,
  // must be addressable in bytes too (copies and saves compute
  // offset * element size; strides like (INT64_MAX, 1) wrapped that).
  if (!strides.empty() && !empty) {
    int64_t extent = 0, term = 0;
    for (size_t i = 0; i < shape.size(); ++i) {
      const int64_t mag = strides[i] == INT64_MIN ? INT64_MAX : (strides[i] < 0 ? -strides[i] : strides[i]);
      if (strides[i] == INT64_MIN || __builtin_mul_overflow(shape[i] - 1, mag, &term) || __builtin_add_overflow(extent, term, &extent))
        return invalid_argument("tensor strides reach past 64-bit offsets: stride " + std::to_string(i) + " is " + std::to_string(strides[i]) +
                                " over " + std::to_string(shape[i]) + " elements");
    }
    if (__builtin_mul_overflow(extent + 1, static_cast<int64_t>(dtype_size(dtype)), &term))
      return invalid_argument("tensor strides reach past 64-bit byte offsets (the farthest element is " + std::to_string(extent) +
                              " elements from the first)");
  }
  TensorRef ref = TensorRef::adopt(new Tensor());
  Tensor& t = *ref;
  t.dtype_ = dtype;
  t.numel_ = numel;
  size_t n = shape.size();
  t.dims_ = new int64_t[2 * n + 1];  // +1: never a zero-length array, never NULL
  if (n) std::memcpy(t.dims_, shape.data(), n * sizeof(int64_t));
  if (strides.empty()) row_major_strides(shape, t.dims_ + n);
  else if (n) std::memcpy(t.dims_ + n, strides.data(), n * sizeof(int64_t));
  t.dl_.ndim = static_cast<int>(n);
  t.dl_.shape = t.dims_;
  t.dl_.strides = t.dims_ + n;
  t.dl_.dtype = to_dl_dtype(dtype);
  t.dl_.device = to_dl_device(device);
  t.dl_.byte_offset = 0;
  t.dl_.data = nullptr;
  return ref;
}

Status Tensor::allocate_storage(const MemoryResourcePtr& mr, const StreamRef& home) {
  auto* st = new Storage;
  st->mr = mr, st->bytes = nbytes(), st->alignment = kMinAlignment, st->home = home;
  storage_ = st;
  MemoryResource::clear_last_failure();
  st->ptr = mr->allocate(st->bytes, kMinAlignment, home.stream);
  if (!st->ptr) {
    const std::string& why = MemoryResource::last_failure();
    return out_of_memory("Tensor::create: memory resource `" + mr->name() + "` could not allocate " + std::to_string(st->bytes) +
                         " bytes for " + type_str() + (why.empty() ? "" : ": " + why));
  }
  dl_.data = st->ptr;
  return {};
}

Result<TensorRef> Tensor::create(types::DType dtype, std::span<const int64_t> shape, const MemoryResourcePtr& mr_in, bool zero) {
  return guarded("Tensor::create", [&]() -> Result<TensorRef> {
    MemoryResourcePtr mr = mr_in ? mr_in : host_memory_resource();
    DLDevice dev = mr->device();
    auto device = from_dl_device(dev);
    if (!device)
      return invalid_argument("Tensor::create: memory resource `" + mr->name() + "` is on device " + dl_device_str(dev) +
                              ", which shapeml does not support (host and CUDA only)");
    auto r = make(dtype, shape, {}, *device);
    if (!r) return r.status();
    TensorRef t = std::move(r).value();
    size_t bytes = t->nbytes();
    if (bytes == 0) return t;
    if (Status s = t->allocate_storage(mr, {}); !s.ok()) return s;
    void* ptr = t->dl_.data;
    if (dev.device_type == kDLCUDA) {
      // Device memory is never touched from the host: the plugin zeroes it.
      if (Status s = device_fill_zero(*t, zero); !s.ok()) return s;
    } else if (zero) {
      std::memset(ptr, 0, bytes);
    }
    return t;
  });
}

Result<TensorRef> Tensor::create_on_stream(types::DType dtype, std::span<const int64_t> shape, const MemoryResourcePtr& mr,
                                           const StreamRef& home) {
  return guarded("Tensor::create_on_stream", [&]() -> Result<TensorRef> {
    if (!mr || mr->device().device_type != kDLCUDA) return invalid_argument("Tensor::create_on_stream: not a device memory resource");
    auto device = from_dl_device(mr->device());
    if (!device) return invalid_argument("Tensor::create_on_stream: unsupported device " + dl_device_str(mr->device()));
    auto r = make(dtype, shape, {}, *device);
    if (!r) return r.status();
    TensorRef t = std::move(r).value();
    if (t->nbytes() == 0) return t;
    if (Status s = t->allocate_storage(mr, home); !s.ok()) return s;
    return t;
  });
}

void* Tensor::home_stream() const { return storage_ ? storage_->home.stream : nullptr; }

StreamRef Tensor::writer() const {
  if (!storage_) return {};
  std::lock_guard<std::mutex> lock(storage_->mu);
  return storage_->writer;
}

void Tensor::set_writer(const StreamRef& s) const {
  if (!storage_) return;
  std::lock_guard<std::mutex> lock(storage_->mu);
  storage_->writer = s;
}

void Tensor::note_use_on(const StreamRef& s) const {
  if (!storage_ || !storage_->mr || s.stream == storage_->home.stream) return;
  std::lock_guard<std::mutex> lock(storage_->mu);
  auto& u = storage_->users;
  if (std::none_of(u.begin(), u.end(), [&](const StreamRef& r) { return r.stream == s.stream; })) u.push_back(s);
}

Result<TensorRef> Tensor::copy_of(types::DType dtype, std::span<const int64_t> shape, const void* data, size_t bytes,
                                  const MemoryResourcePtr& mr) {
  auto r = create(dtype, shape, mr, /*zero=*/false);
  if (!r) return r;
  if ((*r)->nbytes() != bytes)
    return invalid_argument("Tensor::copy_of: " + (*r)->type_str() + " needs " + std::to_string((*r)->nbytes()) + " bytes, got " +
                            std::to_string(bytes));
  if (bytes && !data) return invalid_argument("Tensor::copy_of: data is NULL");
  if ((*r)->dl().device.device_type == kDLCUDA) {
    if (Status s = device_copy_from_host(**r, data, bytes); !s.ok()) return s;
  } else if (bytes) {
    std::memcpy((*r)->data(), data, bytes);
  }
  return r;
}

Result<TensorRef> Tensor::borrow(types::DType dtype, std::span<const int64_t> shape, std::span<const int64_t> strides, void* data,
                                 types::Device device, TensorDeleter deleter, uint64_t byte_offset) {
  return guarded("Tensor::borrow", [&]() -> Result<TensorRef> {
    auto r = make(dtype, shape, strides, device);
    if (!r) return r.status();
    TensorRef t = std::move(r).value();
    if (!data && t->numel() > 0) return invalid_argument("Tensor::borrow: data is NULL for " + t->type_str());
    uintptr_t end;
    if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(data), byte_offset, &end) ||
        __builtin_add_overflow(end, static_cast<uintptr_t>(t->nbytes()), &end))
      return invalid_argument("Tensor::borrow: data + byte_offset " + std::to_string(byte_offset) + " wraps around the address space");
    t->storage_ = new Storage;
    t->storage_->ptr = data, t->storage_->deleter = deleter;
    t->dl_.data = data;
    t->dl_.byte_offset = byte_offset;
    return t;
  });
}

Result<TensorRef> Tensor::contiguous_copy(const MemoryResourcePtr& mr) const {
  if (dl_.device.device_type != kDLCPU)
    return unimplemented("Tensor::contiguous_copy: " + type_str() +
                         " is not in host memory; copy it with copy_to_host / copy_to_device instead");
  auto r = create(dtype_, shape(), mr, /*zero=*/false);
  if (!r) return r;
  if ((*r)->dl().device.device_type != kDLCPU)
    return unimplemented("Tensor::contiguous_copy: into device memory `" + mr->name() + "`; use copy_to_device");
  size_t es = dtype_size(dtype_);
  char* dst = static_cast<char*>((*r)->data());
  const char* src = static_cast<const char*>(data());
  if (is_contiguous()) {
    if (numel_) std::memcpy(dst, src, nbytes());
    return r;
  }
  // General strides: walk the index space in row-major order.
  int n = dl_.ndim;
  std::vector<int64_t> idx(static_cast<size_t>(n), 0);
  for (int64_t k = 0; k < numel_; ++k) {
    int64_t off = 0;
    for (int i = 0; i < n; ++i) off += idx[static_cast<size_t>(i)] * dl_.strides[i];
    std::memcpy(dst + static_cast<size_t>(k) * es, src + off * static_cast<int64_t>(es), es);
    for (int i = n - 1; i >= 0; --i) {
      if (++idx[static_cast<size_t>(i)] < dl_.shape[i]) break;
      idx[static_cast<size_t>(i)] = 0;
    }
  }
  return r;
}

}  // namespace shapeml::runtime
