// Host time of one allocate+free pair per device memory resource, for 1 KiB
// and 1 MiB (figures and ratios, never assertions). With -DSHAPEML_TORCH_DIR
// the same is measured for PyTorch's CUDA caching allocator in this process,
// and each row gets its ratio to it (issue 9 target: pool pair < 0.2 µs).
// "fast cache off" is the pool's coalescing path alone (as before issue 9's
// fast cache). bench/pool_host_bench has the pool rows over host memory.
//
//   build/.../bench/cuda_memory_bench [iterations]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/cuda_memory.h"
#include "runtime/cuda_plugin_loader.h"
#include "runtime/pool_resource.h"
#if SHAPEML_BENCH_WITH_TORCH
#include "cuda_memory_bench.h"
#endif

using namespace shapeml::runtime;

namespace {

double pair_us(MemoryResource& mr, size_t bytes, int iterations, void* stream) {
  for (int i = 0; i < 100; ++i) mr.deallocate(mr.allocate(bytes, 256, stream), bytes, 256, stream);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    void* p = mr.allocate(bytes, 256, stream);
    if (!p) return -1;
    mr.deallocate(p, bytes, 256, stream);
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / iterations;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : 100000;
  auto plugin = cuda_plugin();
  if (!plugin) {
    std::printf("skipped: no GPU (%s)\n", plugin.status().message().c_str());
    return 0;
  }
  const char* name = (*plugin)->device_name(0).ok() ? *(*plugin)->device_name(0) : "?";
  auto stream = (*plugin)->default_stream(0);
  auto raw = make_cuda_resource(0);
  auto async = make_cuda_async_resource(0, UINT64_MAX);
  if (!stream || !raw || !async) {
    std::printf("error: %s%s%s\n", stream.status().message().c_str(), raw.status().message().c_str(), async.status().message().c_str());
    return 1;
  }
  struct Row {
    std::string name;
    MemoryResourcePtr mr;
    int iterations;
  };
  std::vector<Row> rows = {
      {"cuda (cudaMalloc/cudaFree)", *raw, iterations / 100 > 10 ? iterations / 100 : 10},
      {"cuda_async (cudaMallocAsync)", *async, iterations},
      {"pool(cuda)", make_pool_resource(*raw), iterations},
      {"pool(cuda_async)", make_pool_resource(*async), iterations},
      {"statistics(pool(cuda))", make_statistics_adaptor(make_pool_resource(*raw)), iterations},
      {"pool(cuda), fast cache off", make_pool_resource(*raw, {.cache_bytes = 0}), iterations},
  };
  const size_t sizes[] = {1024, 1 << 20};
  double torch_us[2] = {-1, -1};
#if SHAPEML_BENCH_WITH_TORCH
  for (int k = 0; k < 2; ++k) torch_us[k] = torch_caching_allocator_pair_us(sizes[k], iterations);
#endif
  std::printf("cuda_memory_bench on cuda:0 (%s): host µs per allocate+free pair, mean of N pairs\n", name);
  std::printf("%-30s %12s %12s %10s %10s\n", "resource", "1 KiB (µs)", "1 MiB (µs)", "/torch 1K", "/torch 1M");
  for (Row& r : rows) {
    double us[2];
    for (int k = 0; k < 2; ++k) us[k] = pair_us(*r.mr, sizes[k], r.iterations, *stream);
    std::printf("%-30s %12.3f %12.3f", r.name.c_str(), us[0], us[1]);
    for (int k = 0; k < 2; ++k)
      if (torch_us[k] > 0 && us[k] > 0) std::printf(" %9.2fx", us[k] / torch_us[k]);
      else std::printf(" %10s", "-");
    std::printf("\n");
  }
  if (torch_us[0] > 0) std::printf("%-30s %12.3f %12.3f %10s %10s\n", "torch CUDACachingAllocator", torch_us[0], torch_us[1], "1.00x", "1.00x");
  else std::printf("(PyTorch's caching allocator not measured: configure with -DSHAPEML_TORCH_DIR=<site-packages>/torch)\n");
  char err[256];
  (*plugin)->api().stream_synchronize(*stream, err, sizeof err);
  return 0;
}
