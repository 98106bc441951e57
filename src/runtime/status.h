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
  Ok = 0,                  // SHAPEML_STATUS_OK
  InvalidArgument = 1,     // SHAPEML_STATUS_INVALID_ARGUMENT: bad input (shape, dtype, malformed file, struct_size)
  ResourceExhausted = 2,   // SHAPEML_STATUS_RESOURCE_EXHAUSTED (== OUT_OF_MEMORY): an allocation failed, a pool or size limit
  OutOfMemory = ResourceExhausted,  // the 0.1 name of code 2
  NotFound = 3,            // SHAPEML_STATUS_NOT_FOUND: file, entry point, specialization
  IoError = 4,             // SHAPEML_STATUS_IO_ERROR: a file could not be read or written
  CheckFailed = 5,         // SHAPEML_STATUS_CHECK_FAILED (compiler only)
  Unimplemented = 6,       // SHAPEML_STATUS_UNIMPLEMENTED: valid but unsupported here
  Unavailable = 7,         // SHAPEML_STATUS_UNAVAILABLE: a device, plugin or library is missing
  Internal = 8,            // SHAPEML_STATUS_INTERNAL: a bug in shapeml
  FailedPrecondition = 9,  // SHAPEML_STATUS_FAILED_PRECONDITION: valid arguments, wrong state (read-only output)
  IncompatibleModule = 10, // SHAPEML_STATUS_INCOMPATIBLE_MODULE: a module built for another module ABI
  OutOfRange = 11,         // SHAPEML_STATUS_OUT_OF_RANGE: an index in a call's data is out of range (index-checks.md)
};

/// Number of codes (one past the largest).
inline constexpr int32_t kStatusCodeCount = 12;

/// The one code-name table: "INVALID_ARGUMENT"; "UNKNOWN" for a number that
/// is no code. The C ABI's shapeml_status_code_name returns these strings.
const char* status_code_name(int32_t code);
inline const char* status_code_name(StatusCode c) { return status_code_name(static_cast<int32_t>(c)); }

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
inline Status out_of_memory(std::string m) { return {StatusCode::ResourceExhausted, std::move(m)}; }
inline Status resource_exhausted(std::string m) { return {StatusCode::ResourceExhausted, std::move(m)}; }
inline Status failed_precondition(std::string m) { return {StatusCode::FailedPrecondition, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::Unavailable, std::move(m)}; }
inline Status incompatible_module(std::string m) { return {StatusCode::IncompatibleModule, std::move(m)}; }
inline Status out_of_range(std::string m) { return {StatusCode::OutOfRange, std::move(m)}; }
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

/// The status for the exception being handled (call only inside a catch
/// block): std::bad_alloc -> RESOURCE_EXHAUSTED, anything else -> INTERNAL,
/// the message naming `where`. Never throws: when even the message cannot be
/// allocated the status has the right code and an empty message.
Status status_from_current_exception(const char* where) noexcept;

/// How a guarded function's return type is made from an error Status.
/// Specialized by src/capi for `shapeml_status*`.
template <class R>
struct ErrorAs {
  static R from(Status s) { return R(std::move(s)); }
};

/// The one guard: runs `f` (returning Status, Result<T> or, in src/capi,
/// shapeml_status*) and turns any exception into an error of that type.
/// Every public entry point of the runtime and every C ABI function runs
/// inside one.
template <class F>
auto guarded(const char* where, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    return ErrorAs<decltype(f())>::from(status_from_current_exception(where));
  }
}

}  // namespace shapeml::runtime
