#include "capi/status.h"

#include "common/struct_reader.h"
#include "common/utf8.h"

namespace shapeml::capi {

shapeml_status* out_of_memory_status() noexcept {
  // A static object, not a heap one, so it exists even when memory is gone
  // ("out of memory" fits std::string's inline buffer: no allocation).
  // Never freed (shapeml_status_free skips it).
  static shapeml_status s{SHAPEML_STATUS_RESOURCE_EXHAUSTED, "out of memory"};
  return &s;
}

shapeml_status* make_status(shapeml_status_code code, std::string message) noexcept {
  // Every message crossing the C ABI is valid UTF-8 (common/utf8.h): names from
  // sources, .npy headers and callers may hold any bytes.
  if (!common::is_valid_utf8(message)) {
    try {
      message = common::sanitize_utf8(message);
    } catch (...) {
      return out_of_memory_status();
    }
  }
  shapeml_status* s = new (std::nothrow) shapeml_status{code, std::move(message)};
  return s ? s : out_of_memory_status();
}

shapeml_status* bad_struct_size(const char* fn, const char* what, size_t size, size_t known, std::initializer_list<size_t> field_ends) {
  return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": " + what + "->struct_size is " +
                                                          common::accepted_sizes_text(size, known, field_ends));
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

SHAPEML_API const char* shapeml_status_code_name(shapeml_status_code code) { return shapeml::runtime::status_code_name(code); }

SHAPEML_API shapeml_status* shapeml_status_create(shapeml_status_code code, const char* message) {
  if (code == SHAPEML_STATUS_OK) return nullptr;
  const char* m = message ? message : "";
  try {
    if (code < 0 || code >= shapeml::runtime::kStatusCodeCount)
      return shapeml::capi::make_status(SHAPEML_STATUS_INVALID_ARGUMENT,
                                        "shapeml_status_create: unknown status code " + std::to_string(code) + " (message: " + m + ")");
    return shapeml::capi::make_status(code, m);
  } catch (...) {
    return shapeml::capi::out_of_memory_status();
  }
}

}  // extern "C"
