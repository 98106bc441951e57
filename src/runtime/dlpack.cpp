#include "runtime/dlpack.h"

#include <cstring>
#include <memory>
#include <vector>

namespace shapeml::runtime {
namespace {

// One allocation per export: the managed struct, the shapeml tensor it keeps
// alive, and its own copy of shape and strides (so that a consumer that
// scribbles on them cannot corrupt the tensor).
template <class Managed>
struct Export {
  Managed managed{};
  Tensor* owner = nullptr;   // one reference, dropped by the deleter
  std::vector<int64_t> dims;  // shape then strides

  static Managed* make(const TensorRef& t) {
    auto e = std::make_unique<Export>();
    size_t n = static_cast<size_t>(t->ndim());
    e->dims.assign(t->dl().shape, t->dl().shape + n);
    e->dims.insert(e->dims.end(), t->dl().strides, t->dl().strides + n);
    e->dims.push_back(0);  // never empty: shape/strides are never NULL
    DLTensor& dl = e->managed.dl_tensor;
    dl = t->dl();
    dl.shape = e->dims.data();
    dl.strides = e->dims.data() + n;
    t->retain();
    e->owner = t.get();
    e->managed.manager_ctx = e.get();
    e->managed.deleter = &deleter;
    return &e.release()->managed;
  }

  static void deleter(Managed* self) {
    if (!self) return;
    auto* e = static_cast<Export*>(self->manager_ctx);
    e->owner->release();
    delete e;
  }
};

// Checks the descriptor of a foreign managed tensor. `what` names it.
Status validate(const DLTensor& dl, const char* what) {
  if (dl.ndim < 0 || dl.ndim > kMaxRank)
    return invalid_argument(std::string(what) + ": ndim " + std::to_string(dl.ndim) + " is out of range [0, " +
                            std::to_string(kMaxRank) + "]");
  if (dl.ndim > 0 && !dl.shape) return invalid_argument(std::string(what) + ": shape is NULL");
  // The producer may have stored any 32-bit value in the enum field; loading
  // it as a DLDeviceType would be undefined behaviour for values outside the
  // enumeration's range, so read its bytes as an integer.
  int32_t device_type;
  static_assert(sizeof(dl.device.device_type) == sizeof(int32_t), "DLDeviceType is 32 bits");
  std::memcpy(&device_type, &dl.device.device_type, sizeof device_type);
  if (device_type != static_cast<int32_t>(kDLCPU) && device_type != static_cast<int32_t>(kDLCUDA)) {
    bool known = device_type >= static_cast<int32_t>(kDLCPU) && device_type <= 17;  // kDLCPU .. kDLMAIA (DLPack 1.0)
    if (!known)
      return invalid_argument(std::string(what) + ": device_type " + std::to_string(device_type) + " is not a DLPack device type");
    return unimplemented(std::string(what) + ": the tensor is on device " + dl_device_type_str(device_type, dl.device.device_id) +
                         "; this runtime imports host (kDLCPU) and CUDA device (kDLCUDA) tensors only");
  }
  if (!from_dl_device(dl.device))
    return unimplemented(std::string(what) + ": the tensor is on device " + dl_device_str(dl.device) +
                         "; this runtime imports host (kDLCPU) and CUDA device (kDLCUDA) tensors only");
  if (!from_dl_dtype(dl.dtype))
    return invalid_argument(std::string(what) + ": dtype " + dl_dtype_str(dl.dtype) +
                            " has no shapeml counterpart (supported: f32 f64 bf16 i32 i64 bool)");
  std::span<const int64_t> shape(dl.shape, static_cast<size_t>(dl.ndim));
  for (int i = 0; i < dl.ndim; ++i)
    if (dl.shape[i] < 0)
      return invalid_argument(std::string(what) + ": dimension " + std::to_string(i) + " is negative (" +
                              std::to_string(dl.shape[i]) + ")");
  // Overflow checks that do not depend on the order of the dimensions: the
  // product of the dimensions (zeros counted as 1) must fit in 64 bits.
  int64_t span_elems = 1;
  for (int i = 0; i < dl.ndim; ++i)
    if (__builtin_mul_overflow(span_elems, dl.shape[i] > 0 ? dl.shape[i] : 1, &span_elems))
      return invalid_argument(std::string(what) + ": the shape's element count overflows 64 bits");
  uint64_t nbytes = 0;
  bool empty = false;
  for (int i = 0; i < dl.ndim; ++i) empty |= dl.shape[i] == 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(span_elems), static_cast<uint64_t>((dl.dtype.bits + 7) / 8), &nbytes))
    return invalid_argument(std::string(what) + ": the tensor's byte size overflows 64 bits");
  if (empty) nbytes = 0;
  // An offset past 2^63 is no offset into any buffer (signed 64-bit
  // arithmetic on it, here and in consumers, goes negative); refused even
  // when the pointer sum does not wrap (it then read far past the data).
  if (dl.byte_offset > static_cast<uint64_t>(INT64_MAX))
    return invalid_argument(std::string(what) + ": byte_offset " + std::to_string(dl.byte_offset) + " is larger than 2^63 - 1");
  uintptr_t end;
  if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(dl.data), dl.byte_offset, &end) ||
      __builtin_add_overflow(end, nbytes, &end))
    return invalid_argument(std::string(what) + ": data pointer + byte_offset " + std::to_string(dl.byte_offset) + " + " +
                            std::to_string(nbytes) + " bytes wraps around the address space");
  if (!dl.data && nbytes) return invalid_argument(std::string(what) + ": data is NULL for a non-empty tensor");
  if (!is_compact_row_major(shape, dl.strides)) {
    std::string s = "(";
    for (int i = 0; i < dl.ndim; ++i) s += (i ? " " : "") + std::to_string(dl.strides[i]);
    return invalid_argument(std::string(what) + ": strides " + s +
                            ") are not compact row-major; shapeml imports without copying, so make the tensor "
                            "contiguous first (numpy.ascontiguousarray, torch.Tensor.contiguous)");
  }
  return {};
}

template <class Managed>
Result<TensorRef> import(Managed* m, const char* what, bool read_only) {
  Status s = validate(m->dl_tensor, what);
  if (!s.ok()) return s;
  const DLTensor& dl = m->dl_tensor;
  TensorDeleter del;
  del.ctx = m;
  del.fn = [](void* ctx) {
    auto* mt = static_cast<Managed*>(ctx);
    if (mt->deleter) mt->deleter(mt);
  };
  std::span<const int64_t> shape(dl.shape, static_cast<size_t>(dl.ndim));
  auto r = Tensor::borrow(*from_dl_dtype(dl.dtype), shape, {}, dl.data, *from_dl_device(dl.device), del, dl.byte_offset);
  if (!r) return Status(r.status().code(), std::string(what) + ": " + r.status().message());
  (*r)->set_read_only(read_only);
  return r;
}

}  // namespace

Result<DLManagedTensor*> to_dlpack(const TensorRef& t) {
  return guarded("to_dlpack", [&]() -> Result<DLManagedTensor*> {
    if (!t) return invalid_argument("to_dlpack: tensor is NULL");
    if (t->is_read_only())
      return failed_precondition("to_dlpack: the tensor is read-only and the legacy DLManagedTensor cannot say so (a consumer "
                                 "could write it); export it as a DLManagedTensorVersioned, which carries the READ_ONLY flag");
    return Export<DLManagedTensor>::make(t);
  });
}

Result<DLManagedTensorVersioned*> to_dlpack_versioned(const TensorRef& t, bool read_only) {
  return guarded("to_dlpack_versioned", [&]() -> Result<DLManagedTensorVersioned*> {
    if (!t) return invalid_argument("to_dlpack_versioned: tensor is NULL");
    DLManagedTensorVersioned* m = Export<DLManagedTensorVersioned>::make(t);
    m->version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    m->flags = (read_only || t->is_read_only()) ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
    return m;
  });
}

Result<TensorRef> from_dlpack(DLManagedTensor* m) {
  return guarded("from_dlpack", [&]() -> Result<TensorRef> {
    if (!m) return invalid_argument("from_dlpack: managed tensor is NULL");
    return import(m, "from_dlpack", false);
  });
}

Result<TensorRef> from_dlpack_versioned(DLManagedTensorVersioned* m) {
  return guarded("from_dlpack_versioned", [&]() -> Result<TensorRef> {
    if (!m) return invalid_argument("from_dlpack_versioned: managed tensor is NULL");
    if (m->version.major != 1)
      return unimplemented("from_dlpack_versioned: DLPack version " + std::to_string(m->version.major) + "." +
                           std::to_string(m->version.minor) + " is not supported; this runtime reads major version 1");
    return import(m, "from_dlpack_versioned", (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
  });
}

}  // namespace shapeml::runtime
