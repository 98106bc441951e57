// How many CPUs this process may run on: the runtime's default thread count
// (runtime/parallel_for.h) and the JIT's compile threads
// (lower/cpu/cpu_backend.h) both start from it. Header-only: the runtime and
// the compiler share it.
#pragma once
#include <sched.h>

#include <algorithm>
#include <thread>

namespace shapeml::common {

/// The CPUs in the process's affinity mask (a container or `taskset` may
/// allow fewer than the machine has), else the hardware's count; at least 1.
inline int cpus_available() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace shapeml::common
