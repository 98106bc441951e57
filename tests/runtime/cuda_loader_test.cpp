// The CUDA plugin loader without a GPU: every way of failing is UNAVAILABLE
// naming what is missing, and nothing crashes.
#include <gtest/gtest.h>

#include "runtime/cuda_plugin_loader.h"

using namespace shapeml::runtime;

namespace {
bool has(const Status& s, const std::string& part) { return s.message().find(part) != std::string::npos; }
}  // namespace

TEST(CudaPluginLoader, EnvironmentPathToAMissingFileIsUnavailableNamingIt) {
  auto r = load_cuda_plugin("/nonexistent/dir/libshapeml_cuda.so");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::Unavailable);
  EXPECT_TRUE(has(r.status(), "/nonexistent/dir/libshapeml_cuda.so")) << r.status().str();
  EXPECT_TRUE(has(r.status(), "SHAPEML_CUDA_PLUGIN")) << r.status().str();
}

TEST(CudaPluginLoader, ALibraryThatIsNoPluginIsUnavailableNamingIt) {
  auto r = load_cuda_plugin(SHAPEML_TEST_ADD_MODULE);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::Unavailable);
  EXPECT_TRUE(has(r.status(), SHAPEML_TEST_ADD_MODULE)) << r.status().str();
  EXPECT_TRUE(has(r.status(), "shapeml_cuda_plugin_get")) << r.status().str();
}

TEST(CudaPluginLoader, NotAnElfFileIsUnavailable) {
  auto r = load_cuda_plugin(SHAPEML_TEST_NPY_DESCRIBE);  // a Python script
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::Unavailable);
  EXPECT_TRUE(has(r.status(), SHAPEML_TEST_NPY_DESCRIBE)) << r.status().str();
}

TEST(CudaPluginLoader, WithoutTheVariableTheSearchNamesWhatItTried) {
  // The test binary links the runtime statically: its directory holds no
  // plugin, and the loader's search path finds none either (unless the
  // machine has one installed, which then must load or say why not).
  auto r = load_cuda_plugin(nullptr);
  if (r.ok()) GTEST_SKIP() << "a CUDA plugin is on the loader's search path: " << (*r)->path();
  EXPECT_EQ(r.status().code(), StatusCode::Unavailable);
  EXPECT_TRUE(has(r.status(), "libshapeml_cuda.so")) << r.status().str();
}

#ifdef SHAPEML_TEST_CUDA_PLUGIN
// The real plugin: loads; without a GPU (or driver) it is UNAVAILABLE with
// the CUDA error of cudaGetDeviceCount; with one it reports the devices.
TEST(CudaPluginLoader, TheBuiltPluginLoadsOrNamesTheCudaError) {
  auto r = load_cuda_plugin(SHAPEML_TEST_CUDA_PLUGIN);
  if (r.ok()) {
    EXPECT_GT((*r)->device_count(), 0);
    EXPECT_EQ((*r)->path(), SHAPEML_TEST_CUDA_PLUGIN);
    auto name = (*r)->device_name(0);
    ASSERT_TRUE(name.ok()) << name.status().str();
    EXPECT_STRNE(*name, "");
    EXPECT_EQ((*r)->check_device((*r)->device_count(), "test").code(), StatusCode::InvalidArgument);
    return;
  }
  EXPECT_EQ(r.status().code(), StatusCode::Unavailable);
  EXPECT_TRUE(has(r.status(), "cudaGetDeviceCount")) << r.status().str();
  EXPECT_TRUE(has(r.status(), SHAPEML_TEST_CUDA_PLUGIN)) << r.status().str();
  std::printf("skipped: no GPU (%s)\n", r.status().message().c_str());
}
#endif

TEST(CudaPluginLoader, PluginStatusKeepsTheCodeAndNamesTheOperation) {
  Status s = plugin_status(2, "cudaMalloc: allocating 1024 bytes on cuda:0: out of memory", "copy_to_device");
  EXPECT_EQ(s.code(), StatusCode::ResourceExhausted);
  EXPECT_EQ(s.message(), "copy_to_device: cudaMalloc: allocating 1024 bytes on cuda:0: out of memory");
  EXPECT_EQ(plugin_status(99, "", "op").code(), StatusCode::Internal);
  EXPECT_TRUE(plugin_status(0, "", "op").ok());
}
