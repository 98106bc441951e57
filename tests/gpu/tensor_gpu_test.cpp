// Device tensors through the public C ABI (libshapeml_runtime.so): creation
// from each device resource, host<->device round trips on the default stream
// and a caller's stream with the values compared, exhaustion as
// RESOURCE_EXHAUSTED, and a DLPack round trip of a CUDA tensor.
#include <cstring>
#include <string>
#include <vector>

#include "capi_test_util.h"
#include "gpu_test_util.h"
#include "shapeml.h"

namespace {

class DeviceTensors : public ::testing::Test {
 protected:
  void SetUp() override {
    int32_t n = 0;
    shapeml_status* s = shapeml_device_count(kDLCUDA, &n);
    if (s) {
      EXPECT_EQ(shapeml_status_get_code(s), SHAPEML_STATUS_UNAVAILABLE);
    }
    SHAPEML_SKIP_WITHOUT_GPU(take(s));
    ASSERT_GT(n, 0);
    OK(shapeml_memory_create_cuda(0, &raw_));
    OK(shapeml_memory_create_cuda_async(0, UINT64_MAX, &async_));
    OK(shapeml_memory_create_pool(raw_, 0, &pool_));
  }
  void TearDown() override {
    for (shapeml_memory* m : {pool_, async_, raw_}) shapeml_memory_release(m);
  }
  shapeml_memory *raw_ = nullptr, *async_ = nullptr, *pool_ = nullptr;
};

TEST_F(DeviceTensors, CapabilitiesAndNames) {
  shapeml_capabilities c = SHAPEML_CAPABILITIES_INIT;
  OK(shapeml_get_capabilities(&c));
  EXPECT_EQ(c.cuda_plugin, 1);
  const char* name = nullptr;
  OK(shapeml_device_name(kDLCUDA, 0, &name));
  ASSERT_NE(name, nullptr);
  EXPECT_GT(std::strlen(name), 0u);
  std::printf("cuda:0 is %s\n", name);
  void* stream = nullptr;
  OK(shapeml_device_default_stream(0, &stream));
  EXPECT_NE(stream, nullptr);
  OK(shapeml_device_synchronize(0, nullptr));
  int32_t n = 0;
  OK(shapeml_device_count(kDLCUDA, &n));
  EXPECT_EQ(shapeml_status_get_code(shapeml_device_name(kDLCUDA, n, &name)), SHAPEML_STATUS_INVALID_ARGUMENT);
}

TEST_F(DeviceTensors, CopiesRoundTripWithValues) {
  void* user_stream = nullptr;
  OK(shapeml_device_default_stream(0, &user_stream));  // a valid stream either way
  for (shapeml_memory* mem : {raw_, async_, pool_}) {
    EXPECT_EQ(shapeml_memory_device(mem).device_type, kDLCUDA);
    for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{1000}, int64_t{1} << 20, int64_t{3} << 22}) {
      SCOPED_TRACE(n);
      std::vector<float> values(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<float>(i % 9973) * 0.5f - 7.0f;
      shapeml_tensor* host = nullptr;
      OK(shapeml_tensor_create_copy(nullptr, SHAPEML_DTYPE_F32, 1, &n, values.data(), values.size() * 4, &host));
      shapeml_tensor *dev = nullptr, *dev2 = nullptr, *back = nullptr;
      OK(shapeml_tensor_copy_to_device(host, mem, nullptr, &dev));
      EXPECT_EQ(shapeml_tensor_device(dev).device_type, kDLCUDA);
      OK(shapeml_tensor_copy_to_device(dev, mem, user_stream, &dev2));  // device to device
      OK(shapeml_tensor_copy_to_host(dev2, nullptr, user_stream, &back));
      EXPECT_EQ(shapeml_tensor_device(back).device_type, kDLCPU);
      ASSERT_EQ(std::memcmp(shapeml_tensor_data(back), values.data(), values.size() * 4), 0);
      // Zero-filled device tensors are zero.
      shapeml_tensor *zeros = nullptr, *zhost = nullptr;
      OK(shapeml_tensor_create(mem, SHAPEML_DTYPE_F32, 1, &n, &zeros));
      OK(shapeml_tensor_copy_to_host(zeros, nullptr, nullptr, &zhost));
      const float* z = static_cast<const float*>(shapeml_tensor_data(zhost));
      for (int64_t i = 0; i < n; i += 1 + n / 97) ASSERT_EQ(z[i], 0.0f);
      // A device tensor created from host data.
      shapeml_tensor *direct = nullptr, *dhost = nullptr;
      OK(shapeml_tensor_create_copy(mem, SHAPEML_DTYPE_F32, 1, &n, values.data(), values.size() * 4, &direct));
      OK(shapeml_tensor_copy_to_host(direct, nullptr, nullptr, &dhost));
      ASSERT_EQ(std::memcmp(shapeml_tensor_data(dhost), values.data(), values.size() * 4), 0);
      for (shapeml_tensor* t : {host, dev, dev2, back, zeros, zhost, direct, dhost}) shapeml_tensor_release(t);
    }
  }
}

TEST_F(DeviceTensors, ExhaustionIsResourceExhaustedWithSizes) {
  shapeml_memory* small = nullptr;
  OK(shapeml_memory_create_pool(raw_, 4 << 20, &small));
  int64_t n = 768 << 10;  // 3 MiB of f32
  shapeml_tensor *a = nullptr, *b = nullptr;
  OK(shapeml_tensor_create_uninitialized(small, SHAPEML_DTYPE_F32, 1, &n, &a));
  shapeml_status* s = shapeml_tensor_create_uninitialized(small, SHAPEML_DTYPE_F32, 1, &n, &b);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(shapeml_status_get_code(s), SHAPEML_STATUS_RESOURCE_EXHAUSTED);
  std::string m = shapeml_status_get_message(s);
  EXPECT_NE(m.find("3145728"), std::string::npos) << m;
  EXPECT_NE(m.find("4194304"), std::string::npos) << m;
  shapeml_status_free(s);
  int64_t huge = int64_t{1} << 48;
  s = shapeml_tensor_create_uninitialized(raw_, SHAPEML_DTYPE_F32, 1, &huge, &b);
  EXPECT_EQ(shapeml_status_get_code(s), SHAPEML_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_NE(std::string(shapeml_status_get_message(s)).find("cudaMalloc"), std::string::npos) << shapeml_status_get_message(s);
  shapeml_status_free(s);
  shapeml_tensor_release(a);
  shapeml_memory_release(small);
}

TEST_F(DeviceTensors, DlpackCudaRoundTripIsZeroCopy) {
  int64_t shape[2] = {64, 33};
  std::vector<int32_t> values(64 * 33);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int32_t>(i * 3 - 100);
  shapeml_tensor* dev = nullptr;
  OK(shapeml_tensor_create_copy(async_, SHAPEML_DTYPE_I32, 2, shape, values.data(), values.size() * 4, &dev));
  DLManagedTensorVersioned* m = nullptr;
  OK(shapeml_tensor_export_dlpack_versioned(dev, &m));
  EXPECT_EQ(m->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(m->dl_tensor.data, shapeml_tensor_data(dev));
  shapeml_tensor* imported = nullptr;
  OK(shapeml_tensor_import_dlpack_versioned(m, &imported));  // owns m now
  EXPECT_EQ(shapeml_tensor_data(imported), shapeml_tensor_data(dev)) << "zero copy";
  EXPECT_EQ(shapeml_tensor_device(imported).device_type, kDLCUDA);
  shapeml_tensor_release(dev);  // the import keeps the memory alive
  shapeml_tensor* back = nullptr;
  OK(shapeml_tensor_copy_to_host(imported, nullptr, nullptr, &back));
  EXPECT_EQ(std::memcmp(shapeml_tensor_data(back), values.data(), values.size() * 4), 0);
  shapeml_tensor_release(imported);  // runs the export's deleter, which frees the device memory
  shapeml_tensor_release(back);
  OK(shapeml_device_synchronize(0, nullptr));
}

}  // namespace
