// shapeml_get_api: every stable function as one versioned table
// (docs/design/get-api.md). Compiled into both libraries; libshapeml.so
// defines SHAPEML_HAS_COMPILER and fills the compiler's members, which are
// NULL in libshapeml_runtime.so. Designated initializers in C++20 must follow
// the declaration order, and each member's type must be exactly the
// function's: the compiler checks the table against shapeml.h.
#include "shapeml.h"

#ifndef SHAPEML_HAS_COMPILER
#define SHAPEML_HAS_COMPILER 0
#endif

#if SHAPEML_HAS_COMPILER
#define COMPILER_ONLY(f) &f
#else
#define COMPILER_ONLY(f) nullptr
#endif

namespace {
constexpr shapeml_api kApi = {
    .struct_size = sizeof(shapeml_api),
    .abi_major = SHAPEML_VERSION_MAJOR,
    .abi_minor = SHAPEML_VERSION_MINOR,
    .abi_patch = SHAPEML_VERSION_PATCH,
    .compiler = SHAPEML_HAS_COMPILER,
    .version = &shapeml_version,
    .version_number = &shapeml_version_number,
    .status_get_code = &shapeml_status_get_code,
    .status_get_message = &shapeml_status_get_message,
    .status_free = &shapeml_status_free,
    .status_code_name = &shapeml_status_code_name,
    .context_create = COMPILER_ONLY(shapeml_context_create),
    .context_retain = COMPILER_ONLY(shapeml_context_retain),
    .context_release = COMPILER_ONLY(shapeml_context_release),
    .check_source = COMPILER_ONLY(shapeml_check_source),
    .check_result_retain = COMPILER_ONLY(shapeml_check_result_retain),
    .check_result_release = COMPILER_ONLY(shapeml_check_result_release),
    .check_result_passed = COMPILER_ONLY(shapeml_check_result_passed),
    .check_result_diagnostic_count = COMPILER_ONLY(shapeml_check_result_diagnostic_count),
    .check_result_get_diagnostic = COMPILER_ONLY(shapeml_check_result_get_diagnostic),
    .check_result_get_note = COMPILER_ONLY(shapeml_check_result_get_note),
    .check_result_get_counterexample = COMPILER_ONLY(shapeml_check_result_get_counterexample),
    .check_result_render = COMPILER_ONLY(shapeml_check_result_render),
    .memory_create_host = &shapeml_memory_create_host,
    .memory_create_from_resource = &shapeml_memory_create_from_resource,
    .memory_create_statistics_adaptor = &shapeml_memory_create_statistics_adaptor,
    .memory_create_pool = &shapeml_memory_create_pool,
    .memory_create_logging_adaptor = &shapeml_memory_create_logging_adaptor,
    .memory_get_statistics = &shapeml_memory_get_statistics,
    .memory_retain = &shapeml_memory_retain,
    .memory_release = &shapeml_memory_release,
    .tensor_create = &shapeml_tensor_create,
    .tensor_create_copy = &shapeml_tensor_create_copy,
    .tensor_retain = &shapeml_tensor_retain,
    .tensor_release = &shapeml_tensor_release,
    .tensor_dtype = &shapeml_tensor_dtype,
    .tensor_rank = &shapeml_tensor_rank,
    .tensor_shape = &shapeml_tensor_shape,
    .tensor_data = &shapeml_tensor_data,
    .tensor_byte_size = &shapeml_tensor_byte_size,
    .tensor_dltensor = &shapeml_tensor_dltensor,
    .tensor_export_dlpack = &shapeml_tensor_export_dlpack,
    .tensor_export_dlpack_versioned = &shapeml_tensor_export_dlpack_versioned,
    .tensor_import_dlpack = &shapeml_tensor_import_dlpack,
    .tensor_import_dlpack_versioned = &shapeml_tensor_import_dlpack_versioned,
    .tensor_load_npy = &shapeml_tensor_load_npy,
    .tensor_save_npy = &shapeml_tensor_save_npy,
    .npz_load = &shapeml_npz_load,
    .npz_count = &shapeml_npz_count,
    .npz_name = &shapeml_npz_name,
    .npz_get = &shapeml_npz_get,
    .npz_release = &shapeml_npz_release,
    .module_compile = COMPILER_ONLY(shapeml_module_compile),
    .module_load = &shapeml_module_load,
    .module_build_shared_object = COMPILER_ONLY(shapeml_module_build_shared_object),
    .module_retain = &shapeml_module_retain,
    .module_release = &shapeml_module_release,
    .module_entry_count = &shapeml_module_entry_count,
    .module_entry_name = &shapeml_module_entry_name,
    .module_lookup = &shapeml_module_lookup,
    .module_call = &shapeml_module_call,
    .device_count = &shapeml_device_count,
    .device_default_stream = &shapeml_device_default_stream,
    .device_name = &shapeml_device_name,
    .device_synchronize = &shapeml_device_synchronize,
    .entry_aot_specialization_count = &shapeml_entry_aot_specialization_count,
    .entry_call = &shapeml_entry_call,
    .entry_constraint = &shapeml_entry_constraint,
    .entry_constraint_count = &shapeml_entry_constraint_count,
    .entry_get_aot_specialization = &shapeml_entry_get_aot_specialization,
    .entry_get_dim = &shapeml_entry_get_dim,
    .entry_get_tensor_info = &shapeml_entry_get_tensor_info,
    .entry_name = &shapeml_entry_name,
    .entry_param_count = &shapeml_entry_param_count,
    .entry_result_count = &shapeml_entry_result_count,
    .entry_shape_variable = &shapeml_entry_shape_variable,
    .entry_shape_variable_count = &shapeml_entry_shape_variable_count,
    .entry_shape_variable_is_given = &shapeml_entry_shape_variable_is_given,
    .entry_specialize = &shapeml_entry_specialize,
    .get_capabilities = &shapeml_get_capabilities,
    .module_build = COMPILER_ONLY(shapeml_module_build),
    .memory_create_cuda = &shapeml_memory_create_cuda,
    .memory_create_cuda_async = &shapeml_memory_create_cuda_async,
    .memory_create_from_device_resource = &shapeml_memory_create_from_device_resource,
    .memory_device = &shapeml_memory_device,
    .module_get_entry = &shapeml_module_get_entry,
    .module_get_entry_at = &shapeml_module_get_entry_at,
    .module_name = &shapeml_module_name,
    .module_target = &shapeml_module_target,
    .status_create = &shapeml_status_create,
    .tensor_copy_to_device = &shapeml_tensor_copy_to_device,
    .tensor_copy_to_host = &shapeml_tensor_copy_to_host,
    .tensor_create_uninitialized = &shapeml_tensor_create_uninitialized,
    .tensor_device = &shapeml_tensor_device,
    .tensor_is_read_only = &shapeml_tensor_is_read_only,
    .tensor_strides = &shapeml_tensor_strides,
    .tensor_wrap = &shapeml_tensor_wrap,
};
}  // namespace

extern "C" SHAPEML_API const shapeml_api* shapeml_get_api(uint32_t abi_major) {
  return abi_major == SHAPEML_VERSION_MAJOR ? &kApi : nullptr;
}
