// The C ABI's status object and the guard that keeps C++ exceptions from
// crossing the boundary. Only src/capi knows about the C ABI.
#pragma once
#define SHAPEML_UNSTABLE_API
#include <new>
#include <string>

#include "shapeml.h"

struct shapeml_status {
  shapeml_status_code code;
  std::string message;
};

namespace shapeml::capi {

/// Allocates a status; on allocation failure returns a static OOM status
/// (which shapeml_status_free recognizes and does not free).
shapeml_status* make_status(shapeml_status_code code, std::string message);
shapeml_status* out_of_memory_status();

/// Runs `f` (returning shapeml_status*), turning any exception into a status.
template <class F>
shapeml_status* guarded(const char* fn, F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return out_of_memory_status();
  } catch (const std::exception& e) {
    return make_status(SHAPEML_STATUS_INTERNAL, std::string(fn) + ": internal error: " + e.what());
  } catch (...) {
    return make_status(SHAPEML_STATUS_INTERNAL, std::string(fn) + ": internal error: unknown exception");
  }
}

inline shapeml_status* null_arg(const char* fn, const char* arg) {
  return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": argument `" + arg + "` is NULL");
}

}  // namespace shapeml::capi
