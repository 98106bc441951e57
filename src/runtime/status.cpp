#include "runtime/status.h"

namespace shapeml::runtime {

const char* status_code_name(StatusCode c) {
  switch (c) {
    case StatusCode::Ok: return "OK";
    case StatusCode::InvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::OutOfMemory: return "OUT_OF_MEMORY";
    case StatusCode::NotFound: return "NOT_FOUND";
    case StatusCode::IoError: return "IO_ERROR";
    case StatusCode::CheckFailed: return "CHECK_FAILED";
    case StatusCode::Unimplemented: return "UNIMPLEMENTED";
    case StatusCode::Unavailable: return "UNAVAILABLE";
    case StatusCode::Internal: return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::str() const {
  if (ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace shapeml::runtime
