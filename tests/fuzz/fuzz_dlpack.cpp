// libFuzzer target, structure-aware: the bytes fill a DLManagedTensor (or a
// DLManagedTensorVersioned) field by field -- any device type (as the raw
// 32-bit value a foreign producer may store), dtype code/bits/lanes, ndim,
// shape, strides or none, byte_offset and a data pointer that is real,
// NULL or near the top of the address space. Built with UBSan: loading an
// out-of-range enum or an overflowing multiplication aborts. Invariants: a
// status (never INTERNAL, message UTF-8), the deleter not called on
// refusal and called exactly once after a successful import is released.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "runtime/dlpack.h"

namespace {
int g_deleted = 0;
void on_delete(DLManagedTensor*) { ++g_deleted; }
void on_delete_v(DLManagedTensorVersioned*) { ++g_deleted; }
alignas(64) unsigned char g_buffer[4096];
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shapeml;
  FuzzedDataProvider in(data, size);
  bool versioned = in.ConsumeBool();
  DLTensor dl;
  std::memset(&dl, 0, sizeof dl);
  int32_t device_type = in.ConsumeBool() ? 1 : in.ConsumeIntegral<int32_t>();
  std::memcpy(&dl.device.device_type, &device_type, sizeof device_type);
  dl.device.device_id = in.ConsumeIntegral<int32_t>();
  dl.dtype.code = in.ConsumeIntegral<uint8_t>();
  dl.dtype.bits = in.ConsumeIntegral<uint8_t>();
  dl.dtype.lanes = in.ConsumeIntegral<uint16_t>();
  dl.ndim = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(0, 8) : in.ConsumeIntegral<int32_t>();
  size_t n = dl.ndim > 0 && dl.ndim <= 64 ? static_cast<size_t>(dl.ndim) : 0;
  std::vector<int64_t> shape(n + 1), strides(n + 1);
  for (size_t i = 0; i < n; ++i) shape[i] = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(0, 8) : in.ConsumeIntegral<int64_t>();
  for (size_t i = 0; i < n; ++i) strides[i] = in.ConsumeIntegral<int64_t>();
  dl.shape = in.ConsumeBool() ? shape.data() : nullptr;
  dl.strides = in.ConsumeBool() ? strides.data() : nullptr;
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: dl.data = g_buffer; break;
    case 1: dl.data = nullptr; break;
    case 2: dl.data = reinterpret_cast<void*>(UINTPTR_MAX - in.ConsumeIntegralInRange<uintptr_t>(0, 4096)); break;
    default: dl.data = g_buffer + in.ConsumeIntegralInRange<size_t>(0, sizeof g_buffer); break;
  }
  dl.byte_offset = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 64) : in.ConsumeIntegral<uint64_t>();

  int before = g_deleted;
  runtime::Result<runtime::TensorRef> r = runtime::Status();
  if (versioned) {
    DLManagedTensorVersioned m;
    std::memset(&m, 0, sizeof m);
    m.version.major = in.ConsumeBool() ? 1 : in.ConsumeIntegral<uint32_t>();
    m.version.minor = in.ConsumeIntegral<uint32_t>();
    m.flags = in.ConsumeIntegral<uint64_t>();
    m.dl_tensor = dl;
    m.deleter = on_delete_v;
    r = runtime::from_dlpack_versioned(&m);
    if (!r) {
      fuzz::check_status(r.status());
      fuzz::require(g_deleted == before);
      return 0;
    }
    fuzz::require((*r)->ndim() == dl.ndim);
    r = runtime::Status(runtime::StatusCode::InvalidArgument, "released");  // drops the tensor
    fuzz::require(g_deleted == before + 1);
    return 0;
  }
  DLManagedTensor m;
  std::memset(&m, 0, sizeof m);
  m.dl_tensor = dl;
  m.deleter = on_delete;
  r = runtime::from_dlpack(&m);
  if (!r) {
    fuzz::check_status(r.status());
    fuzz::require(g_deleted == before);
    return 0;
  }
  fuzz::require((*r)->ndim() == dl.ndim);
  for (int i = 0; i < dl.ndim; ++i) fuzz::require((*r)->dl().shape[i] == dl.shape[i]);
  r = runtime::Status(runtime::StatusCode::InvalidArgument, "released");
  fuzz::require(g_deleted == before + 1);
  return 0;
}
