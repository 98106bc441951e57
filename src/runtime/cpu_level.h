// The x86-64 micro-architecture levels (x86-64, -v2, -v3, -v4 of the psABI)
// an AOT module or a JIT target may require, and whether this CPU has them:
// a module built for x86-64-v4 on a CPU without AVX-512 is refused when it
// loads (FAILED_PRECONDITION naming the missing features), not a SIGILL at
// its first call.
#pragma once
#include <string>

namespace shapeml::runtime {

/// "" when this CPU can run code built for `target` (a manifest's target:
/// "x86-64", "x86-64-v3", "x86-64-v4", or a CPU name, which is not checked),
/// else the features it lacks, e.g. "avx512f avx512bw".
std::string missing_cpu_features(const std::string& target);

}  // namespace shapeml::runtime
