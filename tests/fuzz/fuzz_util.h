// Shared invariants of the libFuzzer targets. A violated invariant traps
// (__builtin_trap), which libFuzzer reports as a crash with the input.
#pragma once
#include <string>

#include "common/utf8.h"
#include "runtime/status.h"

namespace shapeml::fuzz {

inline void require(bool cond) {
  if (!cond) __builtin_trap();
}

/// Every status that leaves a reader: a real code, a message that names the
/// problem (non-empty), and that is valid UTF-8 once it crosses the C ABI
/// (make_status sanitizes; here the sanitized form must be valid and the
/// code must not be INTERNAL: bad input is never "a bug in shapeml").
inline void check_status(const runtime::Status& s) {
  if (s.ok()) return;
  require(static_cast<int>(s.code()) > 0 && static_cast<int>(s.code()) < runtime::kStatusCodeCount);
  require(!s.message().empty());
  require(s.code() != runtime::StatusCode::Internal);
  require(common::is_valid_utf8(common::sanitize_utf8(s.message())));
}

}  // namespace shapeml::fuzz
