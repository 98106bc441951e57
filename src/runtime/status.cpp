#include "runtime/status.h"

namespace shapeml::runtime {

namespace {
// Indexed by code; the C ABI's names (include/shapeml.h).
constexpr const char* kNames[kStatusCodeCount] = {
    "OK", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "NOT_FOUND", "IO_ERROR", "CHECK_FAILED", "UNIMPLEMENTED",
    "UNAVAILABLE", "INTERNAL", "FAILED_PRECONDITION", "INCOMPATIBLE_MODULE", "OUT_OF_RANGE"};
}  // namespace

const char* status_code_name(int32_t code) { return code >= 0 && code < kStatusCodeCount ? kNames[code] : "UNKNOWN"; }

std::string Status::str() const {
  if (ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

Status status_from_current_exception(const char* where) noexcept {
  StatusCode code = StatusCode::Internal;
  std::string what;
  try {
    throw;
  } catch (const std::bad_alloc&) {
    code = StatusCode::ResourceExhausted;
  } catch (const std::exception& e) {
    try {
      what = e.what();
    } catch (...) {
    }
  } catch (...) {
  }
  try {
    if (code == StatusCode::ResourceExhausted) return Status(code, std::string(where) + ": out of memory");
    return Status(code, std::string(where) + ": internal error: " + (what.empty() ? "unknown exception" : what));
  } catch (...) {
    return Status(code, std::string());  // an empty std::string does not allocate
  }
}

}  // namespace shapeml::runtime
