// PyTorch's CUDA caching allocator alone (cuda_memory_bench_torch.cpp),
// for the GPU machine where torch's headers are: the same measurement as
// cuda_memory_bench's "/torch" columns, built there by
// scripts/gpu-device-run.sh and run in the same session.
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

#include "cuda_memory_bench.h"

int main(int argc, char** argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : 100000;
  if (iterations <= 0) iterations = 100000;
  std::printf("c10 CUDA caching allocator: host us per allocate+free pair, mean of %d pairs\n", iterations);
  for (size_t bytes : {size_t{1024}, size_t{1} << 20}) {
    double us = torch_caching_allocator_pair_us(bytes, iterations);
    if (us < 0) {
      std::printf("  %zu bytes: torch cannot use a GPU here\n", bytes);
      return 1;
    }
    std::printf("  %8zu bytes: %.3f us\n", bytes, us);
  }
  return 0;
}
