#include "cuda/cuda_error.h"

#include <cstdarg>
#include <cstdio>

#include "shapeml.h"

namespace shapeml::cuda {

int32_t status_code_of(cudaError_t e) noexcept {
  switch (e) {
    case cudaSuccess: return SHAPEML_STATUS_OK;
    case cudaErrorMemoryAllocation: return SHAPEML_STATUS_RESOURCE_EXHAUSTED;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorStubLibrary:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemNotReady:
    case cudaErrorNotSupported:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorNoKernelImageForDevice: return SHAPEML_STATUS_UNAVAILABLE;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidResourceHandle:
    case cudaErrorInvalidMemcpyDirection: return SHAPEML_STATUS_INVALID_ARGUMENT;
    default: return SHAPEML_STATUS_INTERNAL;
  }
}

namespace {
void write(char* err, size_t err_size, const char* prefix, const char* fmt, va_list ap) noexcept {
  if (!err || err_size == 0) return;
  int n = std::snprintf(err, err_size, "%s", prefix);
  if (n < 0) n = 0;
  if (static_cast<size_t>(n) < err_size) std::vsnprintf(err + n, err_size - static_cast<size_t>(n), fmt, ap);
  err[err_size - 1] = '\0';
}
}  // namespace

int32_t fail(cudaError_t e, const char* call, char* err, size_t err_size, const char* what, ...) noexcept {
  (void)cudaGetLastError();  // a non-sticky error must not leak into the next call
  char prefix[96];
  std::snprintf(prefix, sizeof prefix, "%s: ", call);
  char body[384];
  va_list ap;
  va_start(ap, what);
  std::vsnprintf(body, sizeof body, what, ap);
  va_end(ap);
  if (err && err_size) {
    std::snprintf(err, err_size, "%s%s: %s (%s)", prefix, body, cudaGetErrorString(e), cudaGetErrorName(e));
    err[err_size - 1] = '\0';
  }
  return status_code_of(e);
}

int32_t fail_with(int32_t code, char* err, size_t err_size, const char* fmt, ...) noexcept {
  va_list ap;
  va_start(ap, fmt);
  write(err, err_size, "", fmt, ap);
  va_end(ap);
  return code;
}

}  // namespace shapeml::cuda
