#include <gtest/gtest.h>

#include <vector>

#include "runtime/dlpack.h"

using namespace shapeml::runtime;
using shapeml::types::DType;

namespace {

std::vector<int64_t> v(std::initializer_list<int64_t> x) { return x; }

// A foreign producer: owns a buffer, shape and strides; counts deleter calls.
template <class Managed>
struct Producer {
  alignas(64) float data[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  int64_t shape[2] = {3, 4};
  int64_t strides[2] = {4, 1};
  int deleted = 0;
  Managed m{};

  Producer() {
    m.manager_ctx = this;
    m.deleter = [](Managed* self) { static_cast<Producer*>(self->manager_ctx)->deleted++; };
    DLTensor& t = m.dl_tensor;
    t.data = data;
    t.device = {kDLCPU, 0};
    t.ndim = 2;
    t.dtype = {kDLFloat, 32, 1};
    t.shape = shape;
    t.strides = strides;
    t.byte_offset = 0;
  }
};

using Legacy = Producer<DLManagedTensor>;
struct Versioned : Producer<DLManagedTensorVersioned> {
  Versioned() {
    m.version = {1, 0};
    m.flags = 0;
  }
};

TensorRef make_tensor() {
  auto t = Tensor::create(DType::F32, v({2, 3}));
  EXPECT_TRUE(t.ok());
  for (int i = 0; i < 6; ++i) (*t)->data_as<float>()[i] = static_cast<float>(i) * 1.5f;
  return *t;
}

}  // namespace

TEST(DlpackVersioned, LayoutFollowsTheSpecification) {
  EXPECT_EQ(offsetof(DLManagedTensorVersioned, version), 0u);
  EXPECT_EQ(offsetof(DLManagedTensorVersioned, manager_ctx), 8u);
  EXPECT_EQ(offsetof(DLManagedTensorVersioned, deleter), 16u);
  EXPECT_EQ(offsetof(DLManagedTensorVersioned, flags), 24u);
  EXPECT_EQ(offsetof(DLManagedTensorVersioned, dl_tensor), 32u);
  EXPECT_EQ(DLPACK_FLAG_BITMASK_READ_ONLY, 1u);
  EXPECT_EQ(DLPACK_FLAG_BITMASK_IS_COPIED, 2u);
  EXPECT_EQ(DLPACK_MAJOR_VERSION, 1);
}

TEST(DlpackExport, LegacyKeepsTheTensorAliveUntilTheDeleter) {
  TensorRef t = make_tensor();
  void* data = t->data();
  auto r = to_dlpack(t);
  ASSERT_TRUE(r.ok());
  DLManagedTensor* m = *r;
  EXPECT_EQ(t->use_count(), 2);
  EXPECT_EQ(m->dl_tensor.data, data) << "zero copy";
  EXPECT_EQ(m->dl_tensor.ndim, 2);
  EXPECT_EQ(m->dl_tensor.shape[0], 2);
  EXPECT_EQ(m->dl_tensor.shape[1], 3);
  ASSERT_NE(m->dl_tensor.strides, nullptr);
  EXPECT_EQ(m->dl_tensor.strides[0], 3);
  EXPECT_EQ(m->dl_tensor.dtype.code, kDLFloat);
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLCPU);
  // The shape array belongs to the managed tensor, not to the shapeml tensor.
  m->dl_tensor.shape[0] = 1000;  // a careless consumer
  EXPECT_EQ(t->shape()[0], 2);
  t = nullptr;  // only the managed tensor holds it now
  EXPECT_EQ(static_cast<float*>(m->dl_tensor.data)[5], 7.5f);
  m->deleter(m);  // frees the tensor (ASan would see a leak or a double free)
}

TEST(DlpackExport, VersionedHasVersionAndFlags) {
  TensorRef t = make_tensor();
  auto r = to_dlpack_versioned(t);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->version.major, 1u);
  EXPECT_EQ((*r)->version.minor, 0u);
  EXPECT_EQ((*r)->flags, 0u);
  EXPECT_EQ((*r)->dl_tensor.data, t->data());
  EXPECT_EQ(t->use_count(), 2);
  (*r)->deleter(*r);
  EXPECT_EQ(t->use_count(), 1);
  auto ro = to_dlpack_versioned(t, /*read_only=*/true);
  ASSERT_TRUE(ro.ok());
  EXPECT_EQ((*ro)->flags, DLPACK_FLAG_BITMASK_READ_ONLY);
  (*ro)->deleter(*ro);
  EXPECT_FALSE(to_dlpack(TensorRef()).ok());
}

TEST(DlpackImport, LegacyIsZeroCopyAndCallsTheDeleterOnceAtDeath) {
  Legacy p;
  {
    auto r = from_dlpack(&p.m);
    ASSERT_TRUE(r.ok()) << r.status().str();
    TensorRef t = *r;
    EXPECT_EQ(t->data(), static_cast<void*>(p.data));
    EXPECT_EQ(t->dtype(), DType::F32);
    EXPECT_EQ(t->numel(), 12);
    EXPECT_FALSE(t->is_read_only());
    p.shape[0] = 99;  // the tensor has its own copy of the shape
    EXPECT_EQ(t->shape()[0], 3);
    TensorRef another = t;
    r = Status(StatusCode::Internal, "drop");
    EXPECT_EQ(p.deleted, 0);
  }
  EXPECT_EQ(p.deleted, 1);
}

TEST(DlpackImport, VersionedReadOnlyAndMinorVersions) {
  Versioned p;
  p.m.flags = DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED;
  p.m.version = {1, 7};  // a later minor version is compatible
  {
    auto r = from_dlpack_versioned(&p.m);
    ASSERT_TRUE(r.ok()) << r.status().str();
    EXPECT_TRUE((*r)->is_read_only());
    // Re-exporting a read-only tensor keeps the flag.
    auto again = to_dlpack_versioned(*r);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)->flags & DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_READ_ONLY);
    (*again)->deleter(*again);
    EXPECT_EQ(p.deleted, 0);
  }
  EXPECT_EQ(p.deleted, 1);
}

TEST(DlpackImport, NullStridesByteOffsetAndNullDeleter) {
  Legacy p;
  p.m.dl_tensor.strides = nullptr;
  p.m.dl_tensor.shape[0] = 2;
  p.m.dl_tensor.byte_offset = 16;  // starts at data[4]
  p.m.deleter = nullptr;
  auto r = from_dlpack(&p.m);
  ASSERT_TRUE(r.ok()) << r.status().str();
  EXPECT_EQ((*r)->data_as<float>()[0], 4.0f);
  EXPECT_EQ((*r)->strides()[0], 4) << "strides are always explicit in shapeml tensors";
}

TEST(DlpackImport, RejectsWithoutTakingOwnership) {
  struct Case {
    const char* what;
    void (*mutate)(Legacy&);
    StatusCode code;
    const char* message;
  } cases[] = {
      {"pinned", [](Legacy& p) { p.m.dl_tensor.device = {kDLCUDAHost, 0}; }, StatusCode::Unimplemented, "cuda_host"},
      {"u8", [](Legacy& p) { p.m.dl_tensor.dtype = {kDLUInt, 8, 1}; }, StatusCode::InvalidArgument, "dtype u8"},
      {"f16", [](Legacy& p) { p.m.dl_tensor.dtype = {kDLFloat, 16, 1}; }, StatusCode::InvalidArgument, "dtype f16"},
      {"lanes", [](Legacy& p) { p.m.dl_tensor.dtype = {kDLFloat, 32, 4}; }, StatusCode::InvalidArgument, "f32x4"},
      {"transposed", [](Legacy& p) { p.strides[0] = 1, p.strides[1] = 3; }, StatusCode::InvalidArgument, "not compact row-major"},
      {"negative", [](Legacy& p) { p.shape[1] = -4; }, StatusCode::InvalidArgument, "negative"},
      {"ndim", [](Legacy& p) { p.m.dl_tensor.ndim = -1; }, StatusCode::InvalidArgument, "ndim -1"},
      {"shape", [](Legacy& p) { p.m.dl_tensor.shape = nullptr; }, StatusCode::InvalidArgument, "shape is NULL"},
      {"data", [](Legacy& p) { p.m.dl_tensor.data = nullptr; }, StatusCode::InvalidArgument, "data is NULL"},
  };
  for (const Case& c : cases) {
    Legacy p;
    c.mutate(p);
    auto r = from_dlpack(&p.m);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), c.code) << c.what << ": " << r.status().str();
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << c.what << ": " << r.status().message();
    EXPECT_EQ(r.status().message().rfind("from_dlpack: ", 0), 0u) << r.status().message();
    EXPECT_EQ(p.deleted, 0) << c.what << ": a rejected tensor still belongs to the caller";
  }
  EXPECT_FALSE(from_dlpack(nullptr).ok());
  EXPECT_FALSE(from_dlpack_versioned(nullptr).ok());
}

// A CUDA tensor is imported as a device tensor, zero copy, without loading
// the CUDA plugin and without touching its data (the address here is host
// memory standing in for device memory: nothing may read it).
TEST(DlpackImport, CudaTensorsAreDeviceTensors) {
  Legacy p;
  p.m.dl_tensor.device = {kDLCUDA, 3};
  void* data = p.m.dl_tensor.data;
  {
    auto r = from_dlpack(&p.m);
    ASSERT_TRUE(r.ok()) << r.status().str();
    EXPECT_EQ((*r)->dl().device.device_type, kDLCUDA);
    EXPECT_EQ((*r)->dl().device.device_id, 3);
    EXPECT_EQ((*r)->device(), shapeml::types::Device::cuda(3));
    EXPECT_EQ((*r)->data(), data) << "zero copy";
    EXPECT_NE((*r)->type_str().find("cuda"), std::string::npos) << (*r)->type_str();
    // Exported again: the same device and pointer.
    auto e = to_dlpack_versioned(*r);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ((*e)->dl_tensor.device.device_type, kDLCUDA);
    EXPECT_EQ((*e)->dl_tensor.device.device_id, 3);
    EXPECT_EQ((*e)->dl_tensor.data, data);
    (*e)->deleter(*e);
    // Host-only operations refuse it rather than reading device memory.
    EXPECT_EQ((*r)->contiguous_copy().status().code(), StatusCode::Unimplemented);
    EXPECT_EQ(p.deleted, 0);
  }
  EXPECT_EQ(p.deleted, 1) << "the producer's deleter runs exactly once";
}

TEST(DlpackImport, RejectsAnotherMajorVersion) {
  Versioned p;
  p.m.version = {2, 0};
  auto r = from_dlpack_versioned(&p.m);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::Unimplemented);
  EXPECT_NE(r.status().message().find("DLPack version 2.0 is not supported"), std::string::npos) << r.status().message();
  EXPECT_EQ(p.deleted, 0);
  p.m.version = {0, 8};
  EXPECT_FALSE(from_dlpack_versioned(&p.m).ok());
}

TEST(DlpackRoundTrip, BothFlavoursShareTheData) {
  TensorRef t = make_tensor();
  auto legacy = to_dlpack(t);
  ASSERT_TRUE(legacy.ok());
  auto back = from_dlpack(*legacy);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)->data(), t->data());
  EXPECT_EQ(t->use_count(), 2) << "held by the export until the import dies";
  auto versioned = to_dlpack_versioned(*back);
  ASSERT_TRUE(versioned.ok());
  auto back2 = from_dlpack_versioned(*versioned);
  ASSERT_TRUE(back2.ok());
  EXPECT_EQ((*back2)->data(), t->data());
  EXPECT_EQ((*back2)->data_as<float>()[4], 6.0f);
  back = Status(StatusCode::Internal, "drop");
  EXPECT_EQ(t->use_count(), 2) << "back2 still holds back, which holds the legacy export";
  back2 = Status(StatusCode::Internal, "drop");
  EXPECT_EQ(t->use_count(), 1) << "every deleter ran";
}

TEST(DlpackRoundTrip, EveryDtype) {
  for (DType d : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::I64, DType::Bool}) {
    auto t = Tensor::create(d, v({4}));
    ASSERT_TRUE(t.ok());
    auto m = to_dlpack_versioned(*t);
    ASSERT_TRUE(m.ok());
    auto back = from_dlpack_versioned(*m);
    ASSERT_TRUE(back.ok()) << back.status().str();
    EXPECT_EQ((*back)->dtype(), d);
  }
}
