/* shapeml_get_api (0.4), as a dlopen user sees it: the library is opened
 * with dlopen, one symbol is resolved, and every member of the table must be
 * the exported function of the same name (NULL exactly where the library
 * does not export it: the compiler's functions in libshapeml_runtime.so).
 * LIB_PATH names the library under test; nothing is linked. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shapeml.h"

typedef const shapeml_api* (*get_api_fn)(uint32_t);

static void* lib;
static const shapeml_api* api;

static int open_library(void** state) {
  (void)state;
  lib = dlopen(LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen %s: %s\n", LIB_PATH, dlerror());
    return -1;
  }
  get_api_fn get = (get_api_fn)dlsym(lib, "shapeml_get_api");
  if (!get) return -1;
  api = get(SHAPEML_VERSION_MAJOR);
  return api ? 0 : -1;
}

/* The library stays loaded, as in every binding: after dlclose, memory that
 * only its globals reach (Z3's, LLVM's) would look leaked to LeakSanitizer. */
static int close_library(void** state) {
  (void)state;
  return 0;
}

static void test_version_and_other_majors(void** state) {
  (void)state;
  get_api_fn get = (get_api_fn)dlsym(lib, "shapeml_get_api");
  assert_ptr_equal(get(SHAPEML_VERSION_MAJOR), api); /* the same static table every time */
  assert_null(get(SHAPEML_VERSION_MAJOR + 1));
  assert_null(get(UINT32_MAX));
  assert_int_equal(api->struct_size, sizeof(shapeml_api));
  assert_int_equal(api->abi_major, SHAPEML_VERSION_MAJOR);
  assert_int_equal(api->abi_minor, SHAPEML_VERSION_MINOR);
  assert_int_equal(api->abi_patch, SHAPEML_VERSION_PATCH);
  assert_int_equal(api->version_number(), SHAPEML_VERSION_MAJOR * 10000 + SHAPEML_VERSION_MINOR * 100 + SHAPEML_VERSION_PATCH);
  assert_true(SHAPEML_API_HAS(api, tensor_wrap));
  /* An older library's shorter table: a member past its end is absent. */
  shapeml_api shorter = *api;
  shorter.struct_size = offsetof(shapeml_api, memory_create_host);
  assert_true(SHAPEML_API_HAS(&shorter, check_result_render));
  assert_false(SHAPEML_API_HAS(&shorter, memory_create_host));
}

/* Every member, by name, against dlsym. */
#define M(name) {"shapeml_" #name, offsetof(shapeml_api, name)}
static const struct {
  const char* symbol;
  size_t offset;
} members[] = {
    M(version),
    M(version_number),
    M(status_get_code),
    M(status_get_message),
    M(status_free),
    M(status_code_name),
    M(context_create),
    M(context_retain),
    M(context_release),
    M(check_source),
    M(check_result_retain),
    M(check_result_release),
    M(check_result_passed),
    M(check_result_diagnostic_count),
    M(check_result_get_diagnostic),
    M(check_result_get_note),
    M(check_result_get_counterexample),
    M(check_result_render),
    M(memory_create_host),
    M(memory_create_from_resource),
    M(memory_create_statistics_adaptor),
    M(memory_create_pool),
    M(memory_create_logging_adaptor),
    M(memory_get_statistics),
    M(memory_retain),
    M(memory_release),
    M(tensor_create),
    M(tensor_create_copy),
    M(tensor_retain),
    M(tensor_release),
    M(tensor_dtype),
    M(tensor_rank),
    M(tensor_shape),
    M(tensor_data),
    M(tensor_byte_size),
    M(tensor_dltensor),
    M(tensor_export_dlpack),
    M(tensor_export_dlpack_versioned),
    M(tensor_import_dlpack),
    M(tensor_import_dlpack_versioned),
    M(tensor_load_npy),
    M(tensor_save_npy),
    M(npz_load),
    M(npz_count),
    M(npz_name),
    M(npz_get),
    M(npz_release),
    M(module_compile),
    M(module_load),
    M(module_build_shared_object),
    M(module_retain),
    M(module_release),
    M(module_entry_count),
    M(module_entry_name),
    M(module_lookup),
    M(module_call),
    M(device_count),
    M(device_default_stream),
    M(device_name),
    M(device_synchronize),
    M(entry_aot_specialization_count),
    M(entry_call),
    M(entry_constraint),
    M(entry_constraint_count),
    M(entry_get_aot_specialization),
    M(entry_get_dim),
    M(entry_get_tensor_info),
    M(entry_name),
    M(entry_param_count),
    M(entry_result_count),
    M(entry_shape_variable),
    M(entry_shape_variable_count),
    M(entry_shape_variable_is_given),
    M(entry_specialize),
    M(get_capabilities),
    M(module_build),
    M(memory_create_cuda),
    M(memory_create_cuda_async),
    M(memory_create_from_device_resource),
    M(memory_device),
    M(module_get_entry),
    M(module_get_entry_at),
    M(module_name),
    M(module_target),
    M(status_create),
    M(tensor_copy_to_device),
    M(tensor_copy_to_host),
    M(tensor_create_uninitialized),
    M(tensor_device),
    M(tensor_is_read_only),
    M(tensor_strides),
    M(tensor_wrap),
};
#undef M

static void test_every_member_is_the_exported_function(void** state) {
  (void)state;
  size_t n = sizeof members / sizeof members[0], missing = 0;
  /* The members are the table's whole tail, in order, one pointer each. */
  assert_int_equal(members[0].offset, offsetof(shapeml_api, version));
  assert_int_equal(members[n - 1].offset + sizeof(void*), sizeof(shapeml_api));
  for (size_t i = 0; i < n; ++i) {
    void* member;
    memcpy(&member, (const char*)api + members[i].offset, sizeof member);
    void* exported = dlsym(lib, members[i].symbol);
    if (member != exported) fprintf(stderr, "%s: table %p, dlsym %p\n", members[i].symbol, member, exported);
    assert_ptr_equal(member, exported);
    if (i > 0) assert_int_equal(members[i].offset, members[i - 1].offset + sizeof(void*));
    missing += member == NULL;
  }
  if (api->compiler) {
    assert_int_equal(missing, 0);
  } else {
    assert_null(api->context_create);
    assert_null(api->module_compile);
    assert_null(api->module_build);
    assert_non_null(api->module_load);
    assert_int_equal(missing, 15); /* context, checking, compile and build */
  }
}

static void test_calls_through_the_table(void** state) {
  (void)state;
  shapeml_status* st = api->status_create(SHAPEML_STATUS_NOT_FOUND, "no such thing");
  assert_int_equal(api->status_get_code(st), SHAPEML_STATUS_NOT_FOUND);
  assert_string_equal(api->status_code_name(api->status_get_code(st)), "NOT_FOUND");
  api->status_free(st);
  shapeml_capabilities caps = SHAPEML_CAPABILITIES_INIT;
  assert_null(api->get_capabilities(&caps));
  assert_int_equal(caps.jit, api->compiler);
  int64_t shape[2] = {2, 3};
  shapeml_tensor* t = NULL;
  assert_null(api->tensor_create(NULL, SHAPEML_DTYPE_F32, 2, shape, &t));
  assert_int_equal(api->tensor_byte_size(t), 24);
  api->tensor_release(t);
  if (!api->compiler) return;
  shapeml_context* ctx = NULL;
  assert_null(api->context_create(NULL, &ctx));
  static const char bad[] = "(module m (func f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N N) host)) (return x)))";
  shapeml_check_result* r = NULL;
  assert_null(api->check_source(ctx, "bad.sml", bad, sizeof bad - 1, &r));
  assert_int_equal(api->check_result_passed(r), 0);
  assert_true(api->check_result_diagnostic_count(r) >= 1);
  api->check_result_release(r);
  api->context_release(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_and_other_majors),
      cmocka_unit_test(test_every_member_is_the_exported_function),
      cmocka_unit_test(test_calls_through_the_table),
  };
  return cmocka_run_group_tests(tests, open_library, close_library);
}
