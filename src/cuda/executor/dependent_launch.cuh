// Programmatic dependent launch (sm_90; docs/design/cuda-graphs.md
// "Dependent launches"): a kernel launched by launch_dependent may be
// scheduled while the grid before it in the stream is still finishing; its
// first statement, wait_for_predecessor(), holds it until that grid is done
// and its writes are visible, so results are the same bits. A kernel
// launched this way must call wait_for_predecessor() before it reads or
// writes global memory. On by default (measured faster on the H200);
// SHAPEML_CUDA_PDL=0 makes every launch an ordinary one (the wait is then a
// no-op), to compare.
#pragma once
#include <cuda_runtime.h>

#include <utility>

namespace shapeml::cuda::kern {

/// False when SHAPEML_CUDA_PDL=0 (or off) is in the environment (read once).
bool dependent_launch_enabled();

__device__ __forceinline__ void wait_for_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

template <class... P, class... A>
cudaError_t launch_dependent(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, A&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = dependent_launch_enabled() ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
}

}  // namespace shapeml::cuda::kern
