// Errors as values for the runtime: a Status (code + message) and a Result<T>
// (a value or a Status). Nothing in src/runtime throws across its API, prints,
// or exits; every public function returns one of these.
//
// The codes are the numbers of include/shapeml.h's SHAPEML_STATUS_* (the C
// ABI maps them one to one; tests/runtime checks that they agree). The runtime
// itself does not include the C ABI header: only src/capi knows about it.
#pragma once
#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <variant>

namespace shapeml::runtime {

enum class StatusCode : int32_t {
  Ok = 0,               // SHAPEML_STATUS_OK
  InvalidArgument = 1,  // SHAPEML_STATUS_INVALID_ARGUMENT: bad input (shape, dtype, malformed file)
  OutOfMemory = 2,      // SHAPEML_STATUS_OUT_OF_MEMORY
  NotFound = 3,         // SHAPEML_STATUS_NOT_FOUND: file, entry point, specialization
  IoError = 4,          // SHAPEML_STATUS_IO_ERROR: a file could not be read or written
  CheckFailed = 5,      // SHAPEML_STATUS_CHECK_FAILED (compiler only)
  Unimplemented = 6,    // SHAPEML_STATUS_UNIMPLEMENTED: valid but unsupported here
  Unavailable = 7,      // SHAPEML_STATUS_UNAVAILABLE: a device or library is missing
  Internal = 8,         // SHAPEML_STATUS_INTERNAL: a bug in shapeml
};

const char* status_code_name(StatusCode c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok_status() { return {}; }

  bool ok() const { return code_ == StatusCode::Ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "INVALID_ARGUMENT: message"
  std::string str() const;

 private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::InvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::NotFound, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::IoError, std::move(m)}; }
inline Status unimplemented(std::string m) { return {StatusCode::Unimplemented, std::move(m)}; }
inline Status out_of_memory(std::string m) { return {StatusCode::OutOfMemory, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::Internal, std::move(m)}; }

/// A value or the Status that explains why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status s) : v_(std::move(s)) {      // NOLINT
    if (std::get<Status>(v_).ok()) v_ = Status(StatusCode::Internal, "Result built from an OK status without a value");
  }
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  /// The error; an OK status when there is a value.
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

/// Runs `f` (returning Status or Result<T>) and turns any exception into a
/// status: std::bad_alloc -> OutOfMemory, anything else -> Internal naming
/// `where`. Every public entry point of the runtime runs inside one.
template <class F>
auto guarded(const char* where, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::OutOfMemory, std::string(where) + ": out of memory");
  } catch (const std::exception& e) {
    return Status(StatusCode::Internal, std::string(where) + ": internal error: " + e.what());
  } catch (...) {
    return Status(StatusCode::Internal, std::string(where) + ": internal error: unknown exception");
  }
}

}  // namespace shapeml::runtime
