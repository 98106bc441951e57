// PyTorch's CUDA caching allocator, measured from C++ against the installed
// torch's c10 (torch/include, torch/lib/libc10_cuda.so).
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

#include <chrono>
#include <cstdio>
#include <exception>

#include "cuda_memory_bench.h"

double torch_caching_allocator_pair_us(size_t bytes, int iterations) {
  try {
    if (c10::cuda::device_count() <= 0) {
      std::fprintf(stderr, "c10: no CUDA device visible to torch's c10 (device_count() = %d)\n", static_cast<int>(c10::cuda::device_count()));
      return -1;
    }
    c10::cuda::set_device(0);
    // torch's Python import does this (at::cuda lazy init); a C++ user must.
    c10::cuda::CUDACachingAllocator::init(c10::cuda::device_count());
    c10::Allocator* a = c10::cuda::CUDACachingAllocator::get();
    for (int i = 0; i < 1000; ++i) c10::DataPtr warm = a->allocate(bytes);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      c10::DataPtr p = a->allocate(bytes);  // freed (to the cache) at the end of the scope
    }
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / iterations;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "c10: %s\n", e.what());
    return -1;
  } catch (...) {
    return -1;
  }
}
