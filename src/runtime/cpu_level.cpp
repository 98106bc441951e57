#include "runtime/cpu_level.h"

namespace shapeml::runtime {

std::string missing_cpu_features(const std::string& target) {
#if defined(__x86_64__)
  std::string missing;
  auto need = [&](bool has, const char* name) {
    if (!has) missing += (missing.empty() ? "" : " ") + std::string(name);
  };
  const bool v3 = target == "x86-64-v3", v4 = target == "x86-64-v4";
  if (v3 || v4) {
    __builtin_cpu_init();
    need(__builtin_cpu_supports("avx2"), "avx2");
    need(__builtin_cpu_supports("fma"), "fma");
    need(__builtin_cpu_supports("bmi"), "bmi");
    need(__builtin_cpu_supports("bmi2"), "bmi2");
    need(__builtin_cpu_supports("popcnt"), "popcnt");
  }
  if (v4) {
    need(__builtin_cpu_supports("avx512f"), "avx512f");
    need(__builtin_cpu_supports("avx512bw"), "avx512bw");
    need(__builtin_cpu_supports("avx512cd"), "avx512cd");
    need(__builtin_cpu_supports("avx512dq"), "avx512dq");
    need(__builtin_cpu_supports("avx512vl"), "avx512vl");
  }
  return missing;
#else
  (void)target;
  return "";
#endif
}

}  // namespace shapeml::runtime
