#include <cstdlib>
#include <cstring>

#include "cuda/executor/dependent_launch.cuh"

namespace shapeml::cuda::kern {

bool dependent_launch_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("SHAPEML_CUDA_PDL");
    return !(v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0));
  }();
  return on;
}

}  // namespace shapeml::cuda::kern
