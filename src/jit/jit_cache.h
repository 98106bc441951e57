// The on-disk cache of JIT-compiled specializations (docs/design/jit-cache.md):
// one file per key under the cache directory, written atomically, the least
// recently used ones removed past a size bound. A first call whose
// specialization a previous process compiled loads its object code instead
// of running the compiler.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "lower/cpu/cpu_backend.h"

namespace shapeml::jit {

/// The cache the environment asks for, or null when it is off:
///   SHAPEML_JIT_CACHE=off (or 0)  no cache;
///   SHAPEML_JIT_CACHE_DIR=DIR     the directory (created, mode 0700);
///   otherwise $XDG_CACHE_HOME/shapeml/jit, else $HOME/.cache/shapeml/jit;
///   SHAPEML_JIT_CACHE_MAX_MB=N    the size bound in MiB, decimals allowed (default 1024).
/// A directory that cannot be created or written turns the cache off.
std::shared_ptr<lower::cpu::ObjectCache> jit_cache_from_environment();

/// A cache in `dir` bounded to `max_bytes`; null when `dir` cannot be created.
std::shared_ptr<lower::cpu::ObjectCache> make_disk_cache(const std::string& dir, uint64_t max_bytes);

}  // namespace shapeml::jit
