// The C ABI's status object. The guard that keeps C++ exceptions from
// crossing the boundary is the runtime's one guard (runtime::guarded), made
// to return `shapeml_status*` by the ErrorAs specialization below; the code
// names come from the runtime's one table. Only src/capi knows about the C ABI.
#pragma once
#define SHAPEML_UNSTABLE_API
#include <new>
#include <string>

#include "runtime/status.h"
#include "shapeml.h"

struct shapeml_status {
  shapeml_status_code code;
  std::string message;
};

namespace shapeml::capi {

/// Allocates a status; on allocation failure returns the static
/// RESOURCE_EXHAUSTED status (never NULL, which would mean success), which
/// shapeml_status_free recognizes and does not free. Never throws.
shapeml_status* make_status(shapeml_status_code code, std::string message) noexcept;
shapeml_status* out_of_memory_status() noexcept;

/// A runtime Status as a C ABI status (NULL when ok); the codes are equal.
inline shapeml_status* to_status(const runtime::Status& s) noexcept {
  if (s.ok()) return nullptr;
  try {
    return make_status(static_cast<shapeml_status_code>(s.code()), s.message());
  } catch (...) {
    return out_of_memory_status();
  }
}

using runtime::guarded;

inline shapeml_status* null_arg(const char* fn, const char* arg) {
  return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": argument `" + arg + "` is NULL");
}

/// INVALID_ARGUMENT for a NULL `source` with a non-zero length, or a source
/// of 4 GiB or more (spans are 32-bit byte offsets): checked before the
/// source is copied, so a huge length allocates nothing. NULL when fine.
inline shapeml_status* check_source_arg(const char* fn, const char* source, size_t length) {
  if (!source && length) return null_arg(fn, "source");
  if (length >= (size_t{1} << 32) - 1)
    return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": the source is " + std::to_string(length) +
                                                            " bytes; sources must be smaller than 4 GiB");
  return nullptr;
}

/// INVALID_ARGUMENT: "fn: what->struct_size is 12 (accepted: ...)".
shapeml_status* bad_struct_size(const char* fn, const char* what, size_t size, size_t known, std::initializer_list<size_t> field_ends);

}  // namespace shapeml::capi

namespace shapeml::runtime {
template <>
struct ErrorAs<shapeml_status*> {
  static shapeml_status* from(const Status& s) noexcept { return capi::to_status(s); }
};
}  // namespace shapeml::runtime
