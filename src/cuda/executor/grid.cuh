// The launch shape shared by shapeml's grid-stride kernels: 256-thread
// blocks, enough blocks for one element a thread, at most `max_blocks`
// (the executor passes 32 per SM).
#pragma once
#include <cstdint>

namespace shapeml::cuda::kern {

constexpr int kThreads = 256;

inline int blocks_for(int64_t n, int max_blocks) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  return static_cast<int>(b < max_blocks ? b : max_blocks);
}

}  // namespace shapeml::cuda::kern
