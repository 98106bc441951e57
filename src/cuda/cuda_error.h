// CUDA errors as the plugin reports them (src/plan/plugin_contract.h): a shapeml
// status code plus a message naming the failing call and the operation,
// written into the caller's buffer without allocating.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace shapeml::cuda {

/// The shapeml status code for a CUDA error: UNAVAILABLE for a missing or
/// too old driver or no device, RESOURCE_EXHAUSTED for out of memory,
/// INVALID_ARGUMENT for a bad value or device, INTERNAL otherwise.
int32_t status_code_of(cudaError_t e) noexcept;

/// Writes "<call>: <what>: <CUDA's text> (<error name>)" into err (always
/// terminated when err_size > 0), clears CUDA's last error and returns
/// status_code_of(e). `what` is printf-formatted.
int32_t fail(cudaError_t e, const char* call, char* err, size_t err_size, const char* what, ...) noexcept
    __attribute__((format(printf, 5, 6)));

/// A failure that is not a CUDA error (code is a SHAPEML_STATUS_*).
int32_t fail_with(int32_t code, char* err, size_t err_size, const char* fmt, ...) noexcept __attribute__((format(printf, 4, 5)));

}  // namespace shapeml::cuda
