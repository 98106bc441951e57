// Host time of one allocate+free pair through the coalescing pool over host
// memory (issue 9): the pool's own cost, measurable on a machine without a
// GPU (cuda_memory_bench measures the same over cudaMalloc on a GPU host).
// Figures, never assertions. Each row is the best of 5 runs of N pairs.
//
//   build/default/bench/pool_host_bench [pairs]
//
// Rows: the bare host resource (aligned_alloc/free) for scale only — glibc's
// aligned_alloc costs about 0.02 or 0.07 µs a pair depending on where the
// heap's top happens to lie, so it moves between builds; the pool over
// host memory; the pool under the statistics adaptor; a "layer" pattern:
// 8 blocks of 8 different sizes live at once, freed in reverse order, per
// pair; and the pool with its fast cache off (PoolOptions::cache_bytes = 0),
// i.e. the coalescing path alone.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/memory_resource.h"
#include "runtime/pool_resource.h"

using namespace shapeml::runtime;

namespace {

using Clock = std::chrono::steady_clock;

// Mean µs per pair of `iterations` pairs of one size, best of 5 runs.
double pair_us(MemoryResource& mr, size_t bytes, int iterations) {
  for (int i = 0; i < 1000; ++i) mr.deallocate(mr.allocate(bytes, 256), bytes, 256);
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    auto t0 = Clock::now();
    for (int i = 0; i < iterations; ++i) {
      void* p = mr.allocate(bytes, 256);
      if (!p) return -1;
      mr.deallocate(p, bytes, 256);
    }
    best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iterations);
  }
  return best;
}

// 8 blocks of different sizes around `bytes` live at once, freed in reverse.
double layer_us(MemoryResource& mr, size_t bytes, int iterations) {
  const size_t sizes[8] = {bytes, bytes / 2, bytes * 2, bytes + 256, bytes / 4, bytes * 3, bytes + 512, bytes / 8};
  void* p[8];
  int rounds = std::max(1, iterations / 8);
  double best = 1e30;
  for (int run = 0; run < 6; ++run) {  // run 0 warms up
    auto t0 = Clock::now();
    for (int i = 0; i < rounds; ++i) {
      for (int k = 0; k < 8; ++k)
        if (!(p[k] = mr.allocate(sizes[k], 256))) return -1;
      for (int k = 7; k >= 0; --k) mr.deallocate(p[k], sizes[k], 256);
    }
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / (rounds * 8.0);
    if (run > 0) best = std::min(best, us);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : 1000000;
  if (iterations < 1) iterations = 1;
  struct Row {
    std::string name;
    MemoryResourcePtr mr;
    bool layer;
  };
  std::vector<Row> rows = {
      {"host (aligned_alloc/free)", host_memory_resource(), false},
      {"pool(host)", make_pool_resource(nullptr), false},
      {"statistics(pool(host))", make_statistics_adaptor(make_pool_resource(nullptr)), false},
      {"pool(host), 8 sizes live", make_pool_resource(nullptr), true},
      // The coalescing path alone (every free merges, every allocate is a best fit).
      {"pool(host), fast cache off", make_pool_resource(nullptr, {.cache_bytes = 0}), false},
      {"pool(host), fast cache off, 8 sizes", make_pool_resource(nullptr, {.cache_bytes = 0}), true},
  };
  std::printf("pool_host_bench: host µs per allocate+free pair, best of 5 runs of %d pairs\n", iterations);
  std::printf("%-36s %12s %12s\n", "resource", "1 KiB (µs)", "1 MiB (µs)");
  for (Row& r : rows) {
    double us[2];
    const size_t sizes[2] = {1024, size_t{1} << 20};
    for (int k = 0; k < 2; ++k) us[k] = r.layer ? layer_us(*r.mr, sizes[k], iterations) : pair_us(*r.mr, sizes[k], iterations);
    std::printf("%-36s %12.4f %12.4f\n", r.name.c_str(), us[0], us[1]);
  }
  return 0;
}
