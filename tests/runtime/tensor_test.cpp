#include <gtest/gtest.h>

#include <vector>

#include "runtime/tensor.h"

using namespace shapeml::runtime;
using shapeml::types::Device;
using shapeml::types::DType;

namespace {
std::vector<int64_t> v(std::initializer_list<int64_t> x) { return x; }
shapeml_memory_statistics stats_of(const MemoryResource& r) {
  shapeml_memory_statistics s = SHAPEML_MEMORY_STATISTICS_INIT;
  EXPECT_TRUE(r.statistics(&s));
  return s;
}
}  // namespace

TEST(DTypeMapping, RoundTripsEveryShapemlDtype) {
  struct Row {
    DType d;
    uint8_t code, bits;
    size_t size;
  } rows[] = {{DType::F32, kDLFloat, 32, 4}, {DType::F64, kDLFloat, 64, 8}, {DType::BF16, kDLBfloat, 16, 2},
              {DType::I32, kDLInt, 32, 4},   {DType::I64, kDLInt, 64, 8},   {DType::Bool, kDLBoolCode, 8, 1}};
  for (const Row& r : rows) {
    DLDataType dl = to_dl_dtype(r.d);
    EXPECT_EQ(dl.code, r.code);
    EXPECT_EQ(dl.bits, r.bits);
    EXPECT_EQ(dl.lanes, 1);
    EXPECT_EQ(from_dl_dtype(dl), r.d);
    EXPECT_EQ(dtype_size(r.d), r.size);
  }
  EXPECT_EQ(kDLBoolCode, 6) << "DLPack 0.8+/1.0's kDLBool";
}

TEST(DTypeMapping, RejectsEverythingElse) {
  EXPECT_FALSE(from_dl_dtype({kDLUInt, 8, 1}));
  EXPECT_FALSE(from_dl_dtype({kDLFloat, 16, 1}));
  EXPECT_FALSE(from_dl_dtype({kDLFloat, 32, 4}));
  EXPECT_FALSE(from_dl_dtype({kDLComplex, 64, 1}));
  EXPECT_FALSE(from_dl_dtype({kDLBoolCode, 1, 1}));
  EXPECT_EQ(dl_dtype_str({kDLUInt, 8, 1}), "u8");
  EXPECT_EQ(dl_dtype_str({kDLFloat, 32, 4}), "f32x4");
  EXPECT_EQ(dl_dtype_str({kDLBoolCode, 8, 1}), "bool");
  EXPECT_EQ(dl_device_str({kDLCUDA, 1}), "cuda:1");
}

TEST(Tensor, CreateIsZeroedAlignedRowMajor) {
  auto r = Tensor::create(DType::F32, v({2, 3, 4}));
  ASSERT_TRUE(r.ok()) << r.status().str();
  TensorRef t = *r;
  EXPECT_EQ(t->ndim(), 3);
  EXPECT_EQ(t->numel(), 24);
  EXPECT_EQ(t->nbytes(), 96u);
  EXPECT_EQ(std::vector<int64_t>(t->strides().begin(), t->strides().end()), v({12, 4, 1}));
  EXPECT_TRUE(t->is_contiguous());
  EXPECT_TRUE(t->owns_data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data()) % 64, 0u);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(t->data_as<float>()[i], 0.0f);
  EXPECT_EQ(t->dl().device.device_type, kDLCPU);
  EXPECT_EQ(t->dl().dtype.code, kDLFloat);
  EXPECT_EQ(t->type_str(), "(tensor f32 (2 3 4) host)");
}

TEST(Tensor, DLTensorIsTheFirstMember) {
  auto t = Tensor::create(DType::I32, v({5}));
  ASSERT_TRUE(t.ok());
  DLTensor* dl = (*t)->as_dl();
  EXPECT_EQ(static_cast<void*>(dl), static_cast<void*>(t->get()));
  EXPECT_EQ(Tensor::from_dl(dl), t->get());
  EXPECT_EQ(dl->shape[0], 5);
}

TEST(Tensor, IntrusiveRefcount) {
  auto r = Tensor::create(DType::F64, v({2}));
  ASSERT_TRUE(r.ok());
  TensorRef a = *r;
  EXPECT_EQ(a->use_count(), 2);  // `r` and `a`
  {
    TensorRef b = a;
    EXPECT_EQ(a->use_count(), 3);
  }
  EXPECT_EQ(a->use_count(), 2);
  Tensor* raw = a.detach();
  EXPECT_EQ(raw->use_count(), 2);
  TensorRef back = TensorRef::adopt(raw);
  EXPECT_EQ(back->use_count(), 2);
}

TEST(Tensor, ReturnsMemoryToItsResourceSized) {
  auto stats = make_statistics_adaptor(host_memory_resource());
  {
    auto t = Tensor::create(DType::BF16, v({7, 3}), stats);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(stats_of(*stats).bytes_in_use, 42u);
  }
  auto s = stats_of(*stats);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.deallocation_count, 1u);
}

TEST(Tensor, EmptyTensorsAllocateNothing) {
  auto stats = make_statistics_adaptor(host_memory_resource());
  auto t = Tensor::create(DType::F32, v({0, 5}), stats);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->numel(), 0);
  EXPECT_EQ((*t)->dl().data, nullptr);
  EXPECT_TRUE((*t)->is_contiguous());
  EXPECT_EQ(stats_of(*stats).allocation_count, 0u);
  auto scalar = Tensor::create(DType::I64, {});
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ((*scalar)->numel(), 1);
  EXPECT_NE((*scalar)->dl().shape, nullptr) << "never NULL, even at rank 0";
}

TEST(Tensor, CreateReportsBadShapesAndFailedAllocations) {
  auto neg = Tensor::create(DType::F32, v({2, -1}));
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(neg.status().message().find("dimension 1 is negative"), std::string::npos) << neg.status().message();
  auto big = Tensor::create(DType::F64, v({int64_t{1} << 40, int64_t{1} << 40}));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("overflows"), std::string::npos);
  std::vector<int64_t> deep(65, 1);
  EXPECT_FALSE(Tensor::create(DType::F32, deep).ok());
  auto oom = Tensor::create(DType::F64, v({int64_t{1} << 58}));  // 2^61 bytes
  ASSERT_FALSE(oom.ok());
  EXPECT_EQ(oom.status().code(), StatusCode::OutOfMemory);
  EXPECT_NE(oom.status().message().find("could not allocate"), std::string::npos) << oom.status().message();
}

TEST(Tensor, CopyOfCopiesExactly) {
  std::vector<int32_t> data{1, 2, 3, 4, 5, 6};
  auto t = Tensor::copy_of(DType::I32, v({2, 3}), data.data(), data.size() * 4);
  ASSERT_TRUE(t.ok());
  EXPECT_NE((*t)->data(), static_cast<void*>(data.data()));
  data[0] = 99;
  EXPECT_EQ((*t)->data_as<int32_t>()[0], 1);
  EXPECT_EQ((*t)->data_as<int32_t>()[5], 6);
  auto wrong = Tensor::copy_of(DType::I32, v({2, 3}), data.data(), 20);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("needs 24 bytes, got 20"), std::string::npos) << wrong.status().message();
}

TEST(Tensor, BorrowIsZeroCopyAndCallsTheDeleterOnce) {
  static int calls;
  calls = 0;
  alignas(64) float buf[6] = {1, 2, 3, 4, 5, 6};
  {
    auto t = Tensor::borrow(DType::F32, v({2, 3}), {}, buf, Device::host(), {[](void* c) { ++*static_cast<int*>(c); }, &calls});
    ASSERT_TRUE(t.ok());
    EXPECT_EQ((*t)->data(), static_cast<void*>(buf));
    EXPECT_FALSE((*t)->owns_data());
    TensorRef copy = *t;
    EXPECT_EQ(calls, 0);
  }
  EXPECT_EQ(calls, 1);
  // On failure the deleter is not called: the caller keeps ownership.
  auto bad = Tensor::borrow(DType::F32, v({2, 3}), {}, nullptr, Device::host(), {[](void* c) { ++*static_cast<int*>(c); }, &calls});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("data is NULL"), std::string::npos);
  EXPECT_EQ(calls, 1);
}

TEST(Tensor, ContiguityAndStridedCopies) {
  // A transposed view of a 2x3 row-major buffer: shape (3, 2), strides (1, 3).
  alignas(64) int64_t buf[6] = {0, 1, 2, 3, 4, 5};
  auto t = Tensor::borrow(DType::I64, v({3, 2}), v({1, 3}), buf, Device::host(), {});
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE((*t)->is_contiguous());
  auto c = (*t)->contiguous_copy();
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE((*c)->is_contiguous());
  std::vector<int64_t> got((*c)->data_as<int64_t>(), (*c)->data_as<int64_t>() + 6);
  EXPECT_EQ(got, v({0, 3, 1, 4, 2, 5}));
  // Strides of size-1 dimensions do not matter.
  auto ones = Tensor::borrow(DType::I64, v({1, 6}), v({999, 1}), buf, Device::host(), {});
  ASSERT_TRUE(ones.ok());
  EXPECT_TRUE((*ones)->is_contiguous());
  EXPECT_TRUE(is_compact_row_major(v({2, 3}), nullptr));
  EXPECT_FALSE(is_compact_row_major(v({2, 3}), v({3, 2}).data()));
  auto mismatch = Tensor::borrow(DType::I64, v({3, 2}), v({1}), buf, Device::host(), {});
  EXPECT_FALSE(mismatch.ok());
}
