#include "capi/status.h"

#include <cstdio>

namespace shapeml::capi {

namespace {
shapeml_status* static_oom() {
  // Constructed once; never freed (shapeml_status_free skips it).
  static shapeml_status* s = new (std::nothrow) shapeml_status{SHAPEML_STATUS_OUT_OF_MEMORY, "out of memory"};
  return s;
}
}  // namespace

shapeml_status* out_of_memory_status() { return static_oom(); }

shapeml_status* make_status(shapeml_status_code code, std::string message) {
  try {
    return new shapeml_status{code, std::move(message)};
  } catch (...) {
    return static_oom();
  }
}

}  // namespace shapeml::capi

extern "C" {

#define STR2(x) #x
#define STR(x) STR2(x)

SHAPEML_API const char* shapeml_version(void) {
  return STR(SHAPEML_VERSION_MAJOR) "." STR(SHAPEML_VERSION_MINOR) "." STR(SHAPEML_VERSION_PATCH);
}

SHAPEML_API uint32_t shapeml_version_number(void) {
  return SHAPEML_VERSION_MAJOR * 10000u + SHAPEML_VERSION_MINOR * 100u + SHAPEML_VERSION_PATCH;
}

SHAPEML_API shapeml_status_code shapeml_status_get_code(const shapeml_status* s) { return s ? s->code : SHAPEML_STATUS_OK; }

SHAPEML_API const char* shapeml_status_get_message(const shapeml_status* s) { return s ? s->message.c_str() : ""; }

SHAPEML_API void shapeml_status_free(shapeml_status* s) {
  if (s && s != shapeml::capi::out_of_memory_status()) delete s;
}

SHAPEML_API const char* shapeml_status_code_name(shapeml_status_code code) {
  switch (code) {
    case SHAPEML_STATUS_OK: return "OK";
    case SHAPEML_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case SHAPEML_STATUS_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case SHAPEML_STATUS_NOT_FOUND: return "NOT_FOUND";
    case SHAPEML_STATUS_IO_ERROR: return "IO_ERROR";
    case SHAPEML_STATUS_CHECK_FAILED: return "CHECK_FAILED";
    case SHAPEML_STATUS_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case SHAPEML_STATUS_UNAVAILABLE: return "UNAVAILABLE";
    case SHAPEML_STATUS_INTERNAL: return "INTERNAL";
  }
  return "UNKNOWN";
}

}  // extern "C"
