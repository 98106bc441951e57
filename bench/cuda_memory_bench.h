// The PyTorch half of cuda_memory_bench (cuda_memory_bench_torch.cpp, built
// only with -DSHAPEML_TORCH_DIR): kept in its own file so that torch's
// headers compile with torch's flags and no shapeml header meets them.
#pragma once
#include <cstddef>

// Mean host microseconds of one allocate+free pair of `bytes` bytes from
// c10's CUDA caching allocator on device 0, over `iterations` pairs after a
// warm-up; negative when torch cannot use a GPU.
double torch_caching_allocator_pair_us(size_t bytes, int iterations);
