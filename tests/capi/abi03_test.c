/* Every function added in C ABI 0.3, with its error paths, from plain C.
 * Built twice: against libshapeml_runtime.so and (with WITH_COMPILER)
 * against libshapeml.so, which adds JIT modules and shapeml_module_build.
 * The AOT module is tests/runtime/add_module.c (hand-written manifest). */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shapeml.h"

#ifndef TEST_MODULE_PATH
#error "TEST_MODULE_PATH must name the hand-written AOT test module"
#endif

static void expect_code(shapeml_status* st, shapeml_status_code code, const char* fragment) {
  if (!st) fail_msg("expected %s containing '%s', got success", shapeml_status_code_name(code), fragment ? fragment : "");
  if (shapeml_status_get_code(st) != code || (fragment && !strstr(shapeml_status_get_message(st), fragment)))
    fail_msg("expected %s containing '%s', got %s: %s", shapeml_status_code_name(code), fragment ? fragment : "",
             shapeml_status_code_name(shapeml_status_get_code(st)), shapeml_status_get_message(st));
  shapeml_status_free(st);
}

static void ok(shapeml_status* st) {
  if (st) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", shapeml_status_get_message(st));
    shapeml_status_free(st);
    fail_msg("unexpected error: %s", buf);
  }
}

static shapeml_tensor* f32_vector(const float* v, int64_t n) {
  shapeml_tensor* t = NULL;
  ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &n, v, (size_t)n * sizeof(float), &t));
  return t;
}

static shapeml_module* load_test_module(void) {
  shapeml_module* m = NULL;
  ok(shapeml_module_load(TEST_MODULE_PATH, NULL, &m));
  return m;
}

static shapeml_entry* entry_of(shapeml_module* m, const char* name) {
  shapeml_entry* e = NULL;
  ok(shapeml_module_get_entry(m, name, &e));
  assert_non_null(e);
  return e;
}

/* ---- status ---------------------------------------------------------------- */

static void test_status_create_and_codes(void** state) {
  (void)state;
  assert_null(shapeml_status_create(SHAPEML_STATUS_OK, "ignored"));
  shapeml_status* st = shapeml_status_create(SHAPEML_STATUS_RESOURCE_EXHAUSTED, "pool `p` is full");
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_RESOURCE_EXHAUSTED);
  assert_string_equal(shapeml_status_get_message(st), "pool `p` is full");
  shapeml_status_free(st);
  st = shapeml_status_create(SHAPEML_STATUS_FAILED_PRECONDITION, NULL);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_FAILED_PRECONDITION);
  assert_string_equal(shapeml_status_get_message(st), "");
  shapeml_status_free(st);
  expect_code(shapeml_status_create(99, "mine"), SHAPEML_STATUS_INVALID_ARGUMENT, "unknown status code 99 (message: mine)");
  expect_code(shapeml_status_create(-1, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "unknown status code -1");
  assert_int_equal(SHAPEML_STATUS_OUT_OF_MEMORY, SHAPEML_STATUS_RESOURCE_EXHAUSTED);
  assert_string_equal(shapeml_status_code_name(SHAPEML_STATUS_OUT_OF_MEMORY), "RESOURCE_EXHAUSTED");
  assert_string_equal(shapeml_status_code_name(SHAPEML_STATUS_FAILED_PRECONDITION), "FAILED_PRECONDITION");
  assert_string_equal(shapeml_status_code_name(SHAPEML_STATUS_INCOMPATIBLE_MODULE), "INCOMPATIBLE_MODULE");
  assert_string_equal(shapeml_status_code_name(SHAPEML_STATUS_OUT_OF_RANGE), "OUT_OF_RANGE");
  assert_int_equal(SHAPEML_STATUS_OUT_OF_RANGE, 11);
  assert_string_equal(shapeml_status_code_name(12), "UNKNOWN");
}

/* ---- capabilities --------------------------------------------------------- */

static void test_capabilities(void** state) {
  (void)state;
  shapeml_capabilities c = SHAPEML_CAPABILITIES_INIT;
  ok(shapeml_get_capabilities(&c));
  assert_int_equal(c.abi_major, SHAPEML_VERSION_MAJOR);
  assert_int_equal(c.abi_minor, SHAPEML_VERSION_MINOR);
  assert_int_equal(c.abi_patch, SHAPEML_VERSION_PATCH);
  assert_int_equal(c.module_abi_version, 2);
#ifdef WITH_COMPILER
  assert_int_equal(c.jit, 1);
  assert_int_equal(c.aot_build, 1);
#else
  assert_int_equal(c.jit, 0);
  assert_int_equal(c.aot_build, 0);
#endif
  /* cuda_plugin says whether CUDA devices can be used: the same answer as
   * shapeml_device_count (1 on a GPU machine, 0 without one). */
  {
    int32_t n = -1;
    shapeml_status* s = shapeml_device_count(kDLCUDA, &n);
    assert_int_equal(c.cuda_plugin, s == NULL ? 1 : 0);
    if (s) assert_int_equal(shapeml_status_get_code(s), SHAPEML_STATUS_UNAVAILABLE);
    shapeml_status_free(s);
  }
  assert_int_equal(c.struct_size, sizeof c);
  /* An older, shorter struct: only its prefix is written. */
  struct {
    shapeml_capabilities c;
    uint32_t canary;
  } old;
  memset(&old, 0x5a, sizeof old);
  old.c.struct_size = offsetof(shapeml_capabilities, jit);
  ok(shapeml_get_capabilities(&old.c));
  assert_int_equal(old.c.abi_minor, SHAPEML_VERSION_MINOR);
  assert_int_equal((uint32_t)old.c.jit, 0x5a5a5a5au);
  assert_int_equal(old.canary, 0x5a5a5a5au);
  c.struct_size = 6; /* inside the first field */
  expect_code(shapeml_get_capabilities(&c), SHAPEML_STATUS_INVALID_ARGUMENT, "struct_size is 6");
  c.struct_size = offsetof(shapeml_capabilities, abi_major) + 2; /* inside a field */
  expect_code(shapeml_get_capabilities(&c), SHAPEML_STATUS_INVALID_ARGUMENT, "accepted");
  expect_code(shapeml_get_capabilities(NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "out");
}

/* ---- struct_size inside a pointer field (issue 8) ------------------------- */

static void* never_alloc(void* u, size_t b, size_t a, void* s) {
  (void)u; (void)b; (void)a; (void)s;
  return NULL;
}
static void never_free(void* u, void* p, size_t b, size_t a, void* s) { (void)u; (void)p; (void)b; (void)a; (void)s; }

static void test_struct_sizes_inside_pointer_fields(void** state) {
  (void)state;
  shapeml_memory_resource vt = {sizeof vt, NULL, never_alloc, never_free, NULL, NULL};
  shapeml_memory* mem = NULL;
  vt.struct_size = 36; /* half of `statistics` */
  expect_code(shapeml_memory_create_from_resource(&vt, &mem), SHAPEML_STATUS_INVALID_ARGUMENT, "struct_size is 36");
  vt.struct_size = 44; /* half of `destroy` */
  expect_code(shapeml_memory_create_from_resource(&vt, &mem), SHAPEML_STATUS_INVALID_ARGUMENT, "struct_size is 44");
  assert_null(mem);
  vt.struct_size = offsetof(shapeml_memory_resource, statistics); /* a 0.2-era prefix: fine */
  ok(shapeml_memory_create_from_resource(&vt, &mem));
  shapeml_memory_release(mem);
  shapeml_module_options mo = SHAPEML_MODULE_OPTIONS_INIT;
  shapeml_module* m = NULL;
  mo.struct_size = 12; /* half of `memory` */
  expect_code(shapeml_module_load(TEST_MODULE_PATH, &mo, &m), SHAPEML_STATUS_INVALID_ARGUMENT, "options->struct_size is 12");
  assert_null(m);
  mo.struct_size = 24; /* sizeof the 0.2 struct */
  ok(shapeml_module_load(TEST_MODULE_PATH, &mo, &m));
  shapeml_module_release(m);
  mo.struct_size = sizeof mo;
  mo.target = 42;
  expect_code(shapeml_module_load(TEST_MODULE_PATH, &mo, &m), SHAPEML_STATUS_INVALID_ARGUMENT, "target 42");
  shapeml_memory* host = NULL;
  ok(shapeml_memory_create_statistics_adaptor(NULL, &host));
  shapeml_memory_statistics s = SHAPEML_MEMORY_STATISTICS_INIT;
  s.struct_size = 12;
  expect_code(shapeml_memory_get_statistics(host, &s), SHAPEML_STATUS_INVALID_ARGUMENT, "struct_size is 12");
  shapeml_memory_release(host);
}

/* ---- tensors --------------------------------------------------------------- */

static int deleted_count;
static void* deleted_data;
static void count_delete(void* user, void* data) {
  deleted_count += *(int*)user;
  deleted_data = data;
}

static void test_tensor_uninitialized_and_queries(void** state) {
  (void)state;
  int64_t shape[2] = {3, 5};
  shapeml_tensor* t = NULL;
  ok(shapeml_tensor_create_uninitialized(NULL, SHAPEML_DTYPE_F64, 2, shape, &t));
  assert_int_equal(shapeml_tensor_rank(t), 2);
  assert_int_equal(shapeml_tensor_byte_size(t), 120);
  assert_true(((uintptr_t)shapeml_tensor_data(t) % 64) == 0);
  const int64_t* strides = shapeml_tensor_strides(t);
  assert_non_null(strides);
  assert_int_equal(strides[0], 5);
  assert_int_equal(strides[1], 1);
  DLDevice d = shapeml_tensor_device(t);
  assert_int_equal(d.device_type, kDLCPU);
  assert_int_equal(d.device_id, 0);
  assert_int_equal(shapeml_tensor_is_read_only(t), 0);
  shapeml_tensor_release(t);
  assert_null(shapeml_tensor_strides(NULL));
  assert_int_equal(shapeml_tensor_device(NULL).device_type, 0);
  assert_int_equal(shapeml_tensor_is_read_only(NULL), 0);
  expect_code(shapeml_tensor_create_uninitialized(NULL, 77, 2, shape, &t), SHAPEML_STATUS_INVALID_ARGUMENT, "dtype");
  expect_code(shapeml_tensor_create_uninitialized(NULL, SHAPEML_DTYPE_F32, 2, NULL, &t), SHAPEML_STATUS_INVALID_ARGUMENT, "shape");
  expect_code(shapeml_tensor_create_uninitialized(NULL, SHAPEML_DTYPE_F32, 2, shape, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "out");
  int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
  shapeml_status* st = shapeml_tensor_create_uninitialized(NULL, SHAPEML_DTYPE_F32, 2, huge, &t);
  assert_non_null(st);
  assert_true(shapeml_status_get_code(st) == SHAPEML_STATUS_RESOURCE_EXHAUSTED || shapeml_status_get_code(st) == SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
  assert_null(t);
}

static void test_tensor_wrap(void** state) {
  (void)state;
  float* buf = malloc(6 * sizeof(float));
  for (int i = 0; i < 6; ++i) buf[i] = (float)i;
  int64_t shape[2] = {2, 3};
  int weight = 1;
  shapeml_tensor* t = NULL;
  deleted_count = 0;
  ok(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 2, shape, NULL, buf, count_delete, &weight, 0, &t));
  assert_ptr_equal(shapeml_tensor_data(t), buf); /* zero copy */
  assert_int_equal(shapeml_tensor_strides(t)[0], 3);
  assert_int_equal(shapeml_tensor_is_read_only(t), 0);
  shapeml_tensor_retain(t);
  shapeml_tensor_release(t);
  assert_int_equal(deleted_count, 0);
  shapeml_tensor_release(t);
  assert_int_equal(deleted_count, 1); /* exactly once, at death */
  assert_ptr_equal(deleted_data, buf);
  free(buf);

  /* Explicit strides (column-major view) and the read-only flag. */
  float cm[6] = {0, 3, 1, 4, 2, 5};
  int64_t cstrides[2] = {1, 2};
  ok(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 2, shape, cstrides, cm, NULL, NULL, SHAPEML_TENSOR_READ_ONLY, &t));
  assert_int_equal(shapeml_tensor_strides(t)[0], 1);
  assert_int_equal(shapeml_tensor_strides(t)[1], 2);
  assert_int_equal(shapeml_tensor_is_read_only(t), 1);
  DLManagedTensor* legacy = NULL;
  expect_code(shapeml_tensor_export_dlpack(t, &legacy), SHAPEML_STATUS_FAILED_PRECONDITION, "read-only");
  assert_null(legacy);
  DLManagedTensorVersioned* v = NULL;
  ok(shapeml_tensor_export_dlpack_versioned(t, &v));
  assert_true((v->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
  v->deleter(v);
  shapeml_tensor_release(t);

  /* Errors: nothing is taken, the deleter is never called. */
  deleted_count = 0;
  float one = 1;
  int64_t neg = -1, two = 2;
  expect_code(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 1, &two, NULL, NULL, count_delete, &weight, 0, &t), SHAPEML_STATUS_INVALID_ARGUMENT, "data");
  expect_code(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 1, &neg, NULL, &one, count_delete, &weight, 0, &t), SHAPEML_STATUS_INVALID_ARGUMENT, NULL);
  expect_code(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 1, &two, &neg, &one, count_delete, &weight, 0, &t), SHAPEML_STATUS_INVALID_ARGUMENT, "negative");
  expect_code(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 1, &two, NULL, &one, count_delete, &weight, 4, &t), SHAPEML_STATUS_INVALID_ARGUMENT, "flag");
  /* Strides whose farthest element is not addressable (issue 24, item 8):
   * copying such a tensor read before the buffer. */
  int64_t two_by_two[2] = {2, 2}, wide[2] = {INT64_MAX, 1}, wider[2] = {INT64_C(1) << 61, 1};
  expect_code(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 2, two_by_two, wide, &one, count_delete, &weight, 0, &t), SHAPEML_STATUS_INVALID_ARGUMENT,
              "strides reach past 64-bit");
  expect_code(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 2, two_by_two, wider, &one, count_delete, &weight, 0, &t), SHAPEML_STATUS_INVALID_ARGUMENT,
              "byte offsets");
  expect_code(shapeml_tensor_wrap(123, 1, &two, NULL, &one, count_delete, &weight, 0, &t), SHAPEML_STATUS_INVALID_ARGUMENT, "dtype");
  expect_code(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 1, NULL, NULL, &one, count_delete, &weight, 0, &t), SHAPEML_STATUS_INVALID_ARGUMENT, "shape");
  expect_code(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 1, &two, NULL, &one, count_delete, &weight, 0, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "out");
  assert_null(t);
  assert_int_equal(deleted_count, 0);
  /* No elements: data may be NULL. */
  int64_t zero = 0;
  ok(shapeml_tensor_wrap(SHAPEML_DTYPE_I32, 1, &zero, NULL, NULL, NULL, NULL, 0, &t));
  assert_int_equal(shapeml_tensor_byte_size(t), 0);
  shapeml_tensor_release(t);
}

static int foreign_deleted;
static void foreign_deleter(DLManagedTensorVersioned* self) { (void)self; foreign_deleted++; }

static void test_read_only_dlpack_import_stays_read_only(void** state) {
  (void)state;
  float data[4] = {1, 2, 3, 4};
  int64_t n = 4;
  DLManagedTensorVersioned m;
  memset(&m, 0, sizeof m);
  m.version.major = 1;
  m.version.minor = 3;
  m.deleter = foreign_deleter;
  m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  m.dl_tensor.data = data;
  m.dl_tensor.ndim = 1;
  m.dl_tensor.shape = &n;
  m.dl_tensor.dtype.code = kDLFloat;
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.device.device_type = kDLCPU;
  shapeml_tensor* t = NULL;
  foreign_deleted = 0;
  ok(shapeml_tensor_import_dlpack_versioned(&m, &t));
  assert_int_equal(shapeml_tensor_is_read_only(t), 1);
  /* Re-export keeps the flag; the legacy struct cannot carry it. */
  DLManagedTensorVersioned* again = NULL;
  ok(shapeml_tensor_export_dlpack_versioned(t, &again));
  assert_true((again->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
  assert_ptr_equal(again->dl_tensor.data, data);
  again->deleter(again);
  DLManagedTensor* legacy = NULL;
  expect_code(shapeml_tensor_export_dlpack(t, &legacy), SHAPEML_STATUS_FAILED_PRECONDITION, "DLManagedTensorVersioned");
  /* As an input it is fine; as an output it is rejected and left unwritten. */
  shapeml_module* mod = load_test_module();
  shapeml_entry* add = entry_of(mod, "add");
  shapeml_tensor* x = f32_vector(data, 4);
  shapeml_tensor* in[2] = {x, t};
  shapeml_tensor* out[1] = {NULL};
  ok(shapeml_entry_call(add, in, 2, out, 1, NULL));
  assert_float_equal(((float*)shapeml_tensor_data(out[0]))[3], 8.0f, 0);
  shapeml_tensor_release(out[0]);
  shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
  shapeml_tensor* provided[1] = {t};
  o.outputs = provided;
  shapeml_tensor* ins[2] = {x, x};
  expect_code(shapeml_entry_call(add, ins, 2, out, 1, &o), SHAPEML_STATUS_FAILED_PRECONDITION, "read-only");
  assert_null(out[0]);
  assert_float_equal(data[0], 1.0f, 0);
  shapeml_tensor_release(x);
  shapeml_module_release(mod);
  assert_int_equal(foreign_deleted, 0);
  shapeml_tensor_release(t);
  assert_int_equal(foreign_deleted, 1);
}

/* ---- introspection --------------------------------------------------------- */

static void expect_dim(shapeml_entry* e, shapeml_io_kind kind, size_t index, size_t dim, shapeml_dim_kind k, int64_t value,
                       const char* variable, const char* text) {
  shapeml_dim_info d = SHAPEML_DIM_INFO_INIT;
  ok(shapeml_entry_get_dim(e, kind, index, dim, &d));
  assert_int_equal(d.kind, k);
  assert_int_equal(d.value, value);
  if (variable) assert_string_equal(d.variable, variable);
  else assert_null(d.variable);
  assert_string_equal(d.text, text);
}

static void test_module_introspection(void** state) {
  (void)state;
  shapeml_module* m = load_test_module();
  assert_string_equal(shapeml_module_name(m), "test_module");
  assert_string_equal(shapeml_module_target(m), "x86-64-v3");
  assert_null(shapeml_module_name(NULL));
  assert_null(shapeml_module_target(NULL));
  shapeml_entry* e = NULL;
  expect_code(shapeml_module_get_entry(m, "nope", &e), SHAPEML_STATUS_NOT_FOUND, "add, rowsum, pairs, on_gpu");
  assert_null(e);
  expect_code(shapeml_module_get_entry(NULL, "add", &e), SHAPEML_STATUS_INVALID_ARGUMENT, "module");
  expect_code(shapeml_module_get_entry(m, NULL, &e), SHAPEML_STATUS_INVALID_ARGUMENT, "name");
  expect_code(shapeml_module_get_entry(m, "add", NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "out");
  ok(shapeml_module_get_entry_at(m, 2, &e));
  assert_string_equal(shapeml_entry_name(e), "pairs");
  shapeml_entry* same = entry_of(m, "pairs");
  assert_ptr_equal(e, same); /* resolved once */
  expect_code(shapeml_module_get_entry_at(m, 4, &e), SHAPEML_STATUS_INVALID_ARGUMENT, "out of range");
  expect_code(shapeml_module_get_entry_at(NULL, 0, &e), SHAPEML_STATUS_INVALID_ARGUMENT, "module");

  /* pairs: (dims N) (params (x (tensor i64 ((* 2 N)) host)) (flags (tensor bool ((+ N 1)) host)))
            (returns (tensor i64 (N) host) (tensor i64 (1) host)) */
  e = entry_of(m, "pairs");
  assert_int_equal(shapeml_entry_param_count(e), 2);
  assert_int_equal(shapeml_entry_result_count(e), 2);
  assert_int_equal(shapeml_entry_shape_variable_count(e), 1);
  assert_string_equal(shapeml_entry_shape_variable(e, 0), "N");
  assert_null(shapeml_entry_shape_variable(e, 1));
  assert_int_equal(shapeml_entry_constraint_count(e), 0);
  shapeml_tensor_info info = SHAPEML_TENSOR_INFO_INIT;
  ok(shapeml_entry_get_tensor_info(e, SHAPEML_IO_PARAM, 1, &info));
  assert_string_equal(info.name, "flags");
  assert_int_equal(info.dtype, SHAPEML_DTYPE_BOOL);
  assert_int_equal(info.device_type, kDLCPU);
  assert_int_equal(info.rank, 1);
  assert_string_equal(info.type, "(tensor bool ((+ N 1)) host)");
  ok(shapeml_entry_get_tensor_info(e, SHAPEML_IO_RESULT, 0, &info));
  assert_string_equal(info.name, "");
  assert_int_equal(info.dtype, SHAPEML_DTYPE_I64);
  expect_dim(e, SHAPEML_IO_PARAM, 0, 0, SHAPEML_DIM_EXPRESSION, 0, NULL, "(* 2 N)");
  expect_dim(e, SHAPEML_IO_PARAM, 1, 0, SHAPEML_DIM_EXPRESSION, 0, NULL, "(+ N 1)");
  expect_dim(e, SHAPEML_IO_RESULT, 0, 0, SHAPEML_DIM_VARIABLE, 0, "N", "N");
  expect_dim(e, SHAPEML_IO_RESULT, 1, 0, SHAPEML_DIM_CONSTANT, 1, NULL, "1");
  assert_int_equal(shapeml_entry_aot_specialization_count(e), 1);
  int64_t vals[2] = {0, 0};
  ok(shapeml_entry_get_aot_specialization(e, 0, vals, 1));
  assert_int_equal(vals[0], 3);

  /* rowsum: (dims B D) (where (= (mod D 4) 0) (<= B 64)), specializations (2 8) and (3 4). */
  e = entry_of(m, "rowsum");
  assert_int_equal(shapeml_entry_shape_variable_count(e), 2);
  assert_string_equal(shapeml_entry_shape_variable(e, 0), "B");
  assert_string_equal(shapeml_entry_shape_variable(e, 1), "D");
  assert_int_equal(shapeml_entry_constraint_count(e), 2);
  assert_string_equal(shapeml_entry_constraint(e, 0), "(= (mod D 4) 0)");
  assert_string_equal(shapeml_entry_constraint(e, 1), "(<= B 64)");
  assert_null(shapeml_entry_constraint(e, 2));
  expect_dim(e, SHAPEML_IO_PARAM, 0, 0, SHAPEML_DIM_VARIABLE, 0, "B", "B");
  expect_dim(e, SHAPEML_IO_PARAM, 0, 1, SHAPEML_DIM_VARIABLE, 0, "D", "D");
  assert_int_equal(shapeml_entry_aot_specialization_count(e), 2);
  ok(shapeml_entry_get_aot_specialization(e, 1, vals, 2));
  assert_int_equal(vals[0], 3);
  assert_int_equal(vals[1], 4);
  expect_code(shapeml_entry_get_aot_specialization(e, 2, vals, 2), SHAPEML_STATUS_INVALID_ARGUMENT, "out of range");
  expect_code(shapeml_entry_get_aot_specialization(e, 0, vals, 1), SHAPEML_STATUS_INVALID_ARGUMENT, "num_values is 1");
  expect_code(shapeml_entry_get_aot_specialization(e, 0, NULL, 2), SHAPEML_STATUS_INVALID_ARGUMENT, "values");
  expect_code(shapeml_entry_get_aot_specialization(NULL, 0, vals, 2), SHAPEML_STATUS_INVALID_ARGUMENT, "entry");

  /* on_gpu: a CUDA parameter. */
  e = entry_of(m, "on_gpu");
  ok(shapeml_entry_get_tensor_info(e, SHAPEML_IO_PARAM, 0, &info));
  assert_int_equal(info.device_type, kDLCUDA);
  assert_int_equal(info.device_id, 0);

  /* Errors of the getters. */
  e = entry_of(m, "add");
  shapeml_dim_info d = SHAPEML_DIM_INFO_INIT;
  expect_code(shapeml_entry_get_dim(e, SHAPEML_IO_PARAM, 2, 0, &d), SHAPEML_STATUS_INVALID_ARGUMENT, "index 2 is out of range");
  expect_code(shapeml_entry_get_dim(e, SHAPEML_IO_PARAM, 0, 1, &d), SHAPEML_STATUS_INVALID_ARGUMENT, "dimension 1 is out of range");
  expect_code(shapeml_entry_get_dim(e, 7, 0, 0, &d), SHAPEML_STATUS_INVALID_ARGUMENT, "unknown kind 7");
  expect_code(shapeml_entry_get_dim(e, SHAPEML_IO_PARAM, 0, 0, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "out");
  expect_code(shapeml_entry_get_dim(NULL, SHAPEML_IO_PARAM, 0, 0, &d), SHAPEML_STATUS_INVALID_ARGUMENT, "entry");
  expect_code(shapeml_entry_get_tensor_info(e, SHAPEML_IO_RESULT, 1, &info), SHAPEML_STATUS_INVALID_ARGUMENT, "out of range");
  expect_code(shapeml_entry_get_tensor_info(NULL, SHAPEML_IO_RESULT, 0, &info), SHAPEML_STATUS_INVALID_ARGUMENT, "entry");
  /* struct_size inside a pointer field, and an old prefix that leaves the rest alone. */
  info.struct_size = 12;
  expect_code(shapeml_entry_get_tensor_info(e, SHAPEML_IO_PARAM, 0, &info), SHAPEML_STATUS_INVALID_ARGUMENT, "struct_size is 12");
  d.struct_size = 20;
  expect_code(shapeml_entry_get_dim(e, SHAPEML_IO_PARAM, 0, 0, &d), SHAPEML_STATUS_INVALID_ARGUMENT, "struct_size is 20");
  shapeml_dim_info prefix;
  memset(&prefix, 0x77, sizeof prefix);
  prefix.struct_size = offsetof(shapeml_dim_info, variable);
  ok(shapeml_entry_get_dim(e, SHAPEML_IO_PARAM, 0, 0, &prefix));
  assert_int_equal(prefix.kind, SHAPEML_DIM_VARIABLE);
  assert_ptr_equal(prefix.text, (const char*)(uintptr_t)0x7777777777777777ull);
  assert_null(shapeml_entry_name(NULL));
  assert_int_equal(shapeml_entry_param_count(NULL), 0);
  assert_int_equal(shapeml_entry_result_count(NULL), 0);
  assert_int_equal(shapeml_entry_shape_variable_count(NULL), 0);
  assert_int_equal(shapeml_entry_constraint_count(NULL), 0);
  assert_null(shapeml_entry_constraint(NULL, 0));
  assert_int_equal(shapeml_entry_aot_specialization_count(NULL), 0);
  shapeml_module_release(m);
}

/* ---- calls with options and explicit specialization ------------------------ */

static void test_entry_call_with_options(void** state) {
  (void)state;
  shapeml_module* m = load_test_module();
  shapeml_entry* add = entry_of(m, "add");
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
  shapeml_tensor* x = f32_vector(a, 4);
  shapeml_tensor* y = f32_vector(b, 4);
  shapeml_tensor* in[2] = {x, y};
  shapeml_tensor* out[1] = {NULL};
  /* Default options, and a memory resource for the outputs. */
  ok(shapeml_entry_call(add, in, 2, out, 1, NULL));
  assert_float_equal(((float*)shapeml_tensor_data(out[0]))[2], 33.0f, 0);
  shapeml_tensor_release(out[0]);
  shapeml_memory* stats = NULL;
  ok(shapeml_memory_create_statistics_adaptor(NULL, &stats));
  shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
  o.memory = stats;
  ok(shapeml_entry_call(add, in, 2, out, 1, &o));
  shapeml_memory_statistics s = SHAPEML_MEMORY_STATISTICS_INIT;
  ok(shapeml_memory_get_statistics(stats, &s));
  assert_int_equal(s.allocation_count, 1);
  assert_int_equal(s.bytes_in_use, 16);
  shapeml_tensor_release(out[0]);

  /* Caller-provided outputs: written in place, the same tensor comes back. */
  int64_t four = 4;
  shapeml_tensor* dst = NULL;
  ok(shapeml_tensor_create_uninitialized(NULL, SHAPEML_DTYPE_F32, 1, &four, &dst));
  shapeml_tensor* provided[1] = {dst};
  o.memory = NULL;
  o.outputs = provided;
  ok(shapeml_entry_call(add, in, 2, out, 1, &o));
  assert_ptr_equal(out[0], dst);
  shapeml_tensor_release(out[0]);
  for (int i = 0; i < 4; ++i) assert_float_equal(((float*)shapeml_tensor_data(dst))[i], a[i] + b[i], 0);
  ok(shapeml_entry_call(add, in, 2, NULL, 0, &o)); /* outputs may be NULL then */
  /* An unaligned provided output (a wrapped buffer at an odd offset) works too. */
  float raw[5] = {0};
  shapeml_tensor* unaligned = NULL;
  ok(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 1, &four, NULL, raw + 1, NULL, NULL, 0, &unaligned));
  provided[0] = unaligned;
  ok(shapeml_entry_call(add, in, 2, NULL, 0, &o));
  for (int i = 0; i < 4; ++i) assert_float_equal(raw[i + 1], a[i] + b[i], 0);
  shapeml_tensor_release(unaligned);

  /* Wrong provided outputs. */
  int64_t five = 5;
  shapeml_tensor* wrong = NULL;
  ok(shapeml_tensor_create(NULL, SHAPEML_DTYPE_F32, 1, &five, &wrong));
  provided[0] = wrong;
  expect_code(shapeml_entry_call(add, in, 2, out, 1, &o), SHAPEML_STATUS_INVALID_ARGUMENT, "expected (tensor f32 (4) host)");
  shapeml_tensor_release(wrong);
  ok(shapeml_tensor_create(NULL, SHAPEML_DTYPE_I32, 1, &four, &wrong));
  provided[0] = wrong;
  expect_code(shapeml_entry_call(add, in, 2, out, 1, &o), SHAPEML_STATUS_INVALID_ARGUMENT, "provided output 0");
  shapeml_tensor_release(wrong);
  provided[0] = x; /* aliases an input */
  expect_code(shapeml_entry_call(add, in, 2, out, 1, &o), SHAPEML_STATUS_INVALID_ARGUMENT, "overlaps input 0");
  provided[0] = NULL;
  expect_code(shapeml_entry_call(add, in, 2, out, 1, &o), SHAPEML_STATUS_INVALID_ARGUMENT, "is NULL");
  assert_null(out[0]);

  /* Reserved fields and bad struct sizes. */
  o = (shapeml_call_options)SHAPEML_CALL_OPTIONS_INIT;
  o.device_index = 1;
  expect_code(shapeml_entry_call(add, in, 2, out, 1, &o), SHAPEML_STATUS_INVALID_ARGUMENT, "device_index is 1");
  o.device_index = 0;
  o.stream = (void*)0x10;
  expect_code(shapeml_entry_call(add, in, 2, out, 1, &o), SHAPEML_STATUS_INVALID_ARGUMENT, "stream");
  o.stream = NULL;
  o.struct_size = 12; /* half of `memory` */
  expect_code(shapeml_entry_call(add, in, 2, out, 1, &o), SHAPEML_STATUS_INVALID_ARGUMENT, "struct_size is 12");
  o.struct_size = offsetof(shapeml_call_options, device_index); /* an older prefix: fine */
  ok(shapeml_entry_call(add, in, 2, out, 1, &o));
  shapeml_tensor_release(out[0]);
  /* `graph` (appended): checked, ignored by host entries; a struct that ends
   * before it (0.3 before graph replay) reads as SHAPEML_GRAPH_DEFAULT. */
  o = (shapeml_call_options)SHAPEML_CALL_OPTIONS_INIT;
  assert_int_equal(o.graph, SHAPEML_GRAPH_DEFAULT);
  o.graph = 3;
  expect_code(shapeml_entry_call(add, in, 2, out, 1, &o), SHAPEML_STATUS_INVALID_ARGUMENT, "options->graph is 3");
  o.struct_size = offsetof(shapeml_call_options, graph); /* ends before `graph`: the 3 is not read */
  ok(shapeml_entry_call(add, in, 2, out, 1, &o));
  shapeml_tensor_release(out[0]);
  o = (shapeml_call_options)SHAPEML_CALL_OPTIONS_INIT;
  o.graph = SHAPEML_GRAPH_OFF;
  ok(shapeml_entry_call(add, in, 2, out, 1, &o));
  shapeml_tensor_release(out[0]);

  /* Counts, NULLs, inputs. */
  expect_code(shapeml_entry_call(add, in, 1, out, 1, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "takes 2 inputs, got 1");
  shapeml_tensor* two_out[2] = {NULL, NULL};
  expect_code(shapeml_entry_call(add, in, 2, two_out, 2, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "num_outputs is 2");
  expect_code(shapeml_entry_call(add, in, 2, NULL, 1, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "outputs");
  expect_code(shapeml_entry_call(add, NULL, 2, out, 1, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "inputs");
  expect_code(shapeml_entry_call(NULL, in, 2, out, 1, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "entry");
  shapeml_tensor* short_y = f32_vector(b, 3);
  shapeml_tensor* bad_in[2] = {x, short_y};
  expect_code(shapeml_entry_call(add, bad_in, 2, out, 1, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "input `y` dimension 0");
  shapeml_tensor_release(short_y);
  shapeml_tensor* six_x = f32_vector(b, 4);
  shapeml_tensor_release(six_x);
  /* A device entry: without a usable GPU the call is UNAVAILABLE naming CUDA;
   * with one, the host input is refused (it must be copied to the device). */
  int32_t gpus = 0;
  shapeml_status* dc = shapeml_device_count(kDLCUDA, &gpus);
  if (dc || gpus == 0)
    expect_code(shapeml_entry_call(entry_of(m, "on_gpu"), in, 1, out, 1, NULL), SHAPEML_STATUS_UNAVAILABLE, "CUDA");
  else
    expect_code(shapeml_entry_call(entry_of(m, "on_gpu"), in, 1, out, 1, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "expected (cuda 0)");
  shapeml_status_free(dc);

  shapeml_tensor_release(dst);
  shapeml_tensor_release(x);
  shapeml_tensor_release(y);
  shapeml_memory_release(stats);
  shapeml_module_release(m);
}

static void test_entry_specialize_aot(void** state) {
  (void)state;
  shapeml_module* m = load_test_module();
  shapeml_entry* rowsum = entry_of(m, "rowsum");
  const char* names[2] = {"B", "D"};
  int64_t have[2] = {2, 8}, lacking[2] = {2, 12}, bad_where[2] = {2, 6}, zero[2] = {0, 8};
  ok(shapeml_entry_specialize(rowsum, names, have, 2));
  expect_code(shapeml_entry_specialize(rowsum, names, lacking, 2), SHAPEML_STATUS_NOT_FOUND, "no specialization for B=2 D=12");
  expect_code(shapeml_entry_specialize(rowsum, names, bad_where, 2), SHAPEML_STATUS_INVALID_ARGUMENT, "(= (mod D 4) 0)");
  expect_code(shapeml_entry_specialize(rowsum, names, zero, 2), SHAPEML_STATUS_INVALID_ARGUMENT, ">= 1");
  expect_code(shapeml_entry_specialize(rowsum, names, have, 1), SHAPEML_STATUS_INVALID_ARGUMENT, "does not give shape variable `D`");
  const char* twice[2] = {"B", "B"};
  expect_code(shapeml_entry_specialize(rowsum, twice, have, 2), SHAPEML_STATUS_INVALID_ARGUMENT, "given twice");
  const char* unknown[2] = {"B", "Q"};
  expect_code(shapeml_entry_specialize(rowsum, unknown, have, 2), SHAPEML_STATUS_INVALID_ARGUMENT, "no shape variable `Q`");
  const char* null_name[2] = {"B", NULL};
  expect_code(shapeml_entry_specialize(rowsum, null_name, have, 2), SHAPEML_STATUS_INVALID_ARGUMENT, "names[1] is NULL");
  expect_code(shapeml_entry_specialize(rowsum, NULL, have, 2), SHAPEML_STATUS_INVALID_ARGUMENT, "names");
  expect_code(shapeml_entry_specialize(rowsum, names, NULL, 2), SHAPEML_STATUS_INVALID_ARGUMENT, "values");
  expect_code(shapeml_entry_specialize(NULL, names, have, 2), SHAPEML_STATUS_INVALID_ARGUMENT, "entry");
  shapeml_module_release(m);
}

/* ---- threads: 8 callers, results equal to a single-threaded run ------------- */

#define THREADS 8
#define ROUNDS 200

typedef struct {
  shapeml_module* module;
  shapeml_entry* entry;
  int id;
  float result[8];
  int failures;
  char error[256];
} worker;

static void run_rowsum(worker* w, float* out) {
  /* rowsum at B=2 D=8 or B=3 D=4 depending on the worker, and add at N=4 or 8. */
  float x[16];
  for (int i = 0; i < 16; ++i) x[i] = (float)(i * (w->id + 1));
  int64_t shape[2] = {w->id % 2 ? 3 : 2, w->id % 2 ? 4 : 8};
  shapeml_tensor* t = NULL;
  shapeml_status* st = shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 2, shape, x, (size_t)(shape[0] * shape[1]) * 4, &t);
  shapeml_tensor* o[1] = {NULL};
  if (!st) st = shapeml_entry_call(w->entry, &t, 1, o, 1, NULL);
  if (st) {
    w->failures++;
    snprintf(w->error, sizeof w->error, "%s", shapeml_status_get_message(st));
    shapeml_status_free(st);
  } else {
    memcpy(out, shapeml_tensor_data(o[0]), (size_t)shape[0] * 4);
  }
  shapeml_tensor_release(o[0]);
  shapeml_tensor_release(t);
}

static void* worker_main(void* arg) {
  worker* w = arg;
  float r[8];
  for (int k = 0; k < ROUNDS; ++k) {
    memset(r, 0, sizeof r);
    run_rowsum(w, r);
    if (memcmp(r, w->result, sizeof r) != 0) w->failures++;
    /* Introspection from many threads too. */
    shapeml_entry* e = NULL;
    shapeml_status* st = shapeml_module_get_entry(w->module, "rowsum", &e);
    if (st || e != w->entry) w->failures++;
    shapeml_status_free(st);
  }
  return NULL;
}

static void test_eight_threads_match_one(void** state) {
  (void)state;
  shapeml_module* m = load_test_module();
  worker w[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].module = m;
    w[i].entry = entry_of(m, "rowsum");
    w[i].id = i;
    run_rowsum(&w[i], w[i].result); /* the single-threaded reference */
    assert_int_equal(w[i].failures, 0);
  }
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; ++i) assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
  for (int i = 0; i < THREADS; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < THREADS; ++i)
    if (w[i].failures) fail_msg("thread %d: %d failures (%s)", i, w[i].failures, w[i].error);
  /* Reference values, computed by hand: worker 0 rows sum 0..7 and 8..15. */
  assert_float_equal(w[0].result[0], 28.0f, 0);
  assert_float_equal(w[0].result[1], 92.0f, 0);
  shapeml_module_release(m);
}

/* A shared pool (behind a statistics adaptor) and a shared npz archive from 8
   threads: every allocation comes back, every read sees the same values. */
typedef struct {
  shapeml_memory* mem;
  shapeml_tensor* shared;
  int failures;
} mem_worker;

static void* mem_worker_main(void* arg) {
  mem_worker* w = arg;
  for (int k = 0; k < 500; ++k) {
    int64_t n = 1 + (k % 37) * 16;
    shapeml_tensor* t = NULL;
    shapeml_status* st = shapeml_tensor_create(w->mem, SHAPEML_DTYPE_F32, 1, &n, &t);
    if (st) {
      w->failures++;
      shapeml_status_free(st);
      continue;
    }
    if (((float*)shapeml_tensor_data(t))[n - 1] != 0.0f) w->failures++;
    shapeml_tensor_retain(w->shared);
    if (((const float*)shapeml_tensor_data(w->shared))[2] != 3.0f) w->failures++;
    shapeml_tensor_release(w->shared);
    shapeml_tensor_release(t);
  }
  return NULL;
}

static void test_memory_and_tensors_from_eight_threads(void** state) {
  (void)state;
  shapeml_memory *pool = NULL, *stats = NULL;
  ok(shapeml_memory_create_pool(NULL, 0, &pool));
  ok(shapeml_memory_create_statistics_adaptor(pool, &stats));
  float v[4] = {1, 2, 3, 4};
  shapeml_tensor* shared = f32_vector(v, 4);
  mem_worker w[THREADS];
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; ++i) w[i] = (mem_worker){stats, shared, 0};
  for (int i = 0; i < THREADS; ++i) assert_int_equal(pthread_create(&th[i], NULL, mem_worker_main, &w[i]), 0);
  for (int i = 0; i < THREADS; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < THREADS; ++i) assert_int_equal(w[i].failures, 0);
  shapeml_memory_statistics s = SHAPEML_MEMORY_STATISTICS_INIT;
  ok(shapeml_memory_get_statistics(stats, &s));
  assert_int_equal(s.allocation_count, THREADS * 500);
  assert_int_equal(s.deallocation_count, THREADS * 500);
  assert_int_equal(s.bytes_in_use, 0);
  shapeml_tensor_release(shared);
  shapeml_memory_release(stats);
  shapeml_memory_release(pool);
}

#ifdef WITH_COMPILER
/* ---- JIT modules and AOT builds (libshapeml.so) ---------------------------- */

static const char* kSrc =
    "(module scaler (func scaled_add (dims N) (where (<= N 64))\n"
    "  (params (x (tensor f32 (N) host)) (y (tensor f32 (N) host)))\n"
    "  (returns (tensor f32 (N) host))\n"
    "  (return (add x (mul y 2.0))))\n"
    " (func outer (dims M K)\n"
    "  (params (a (tensor f32 (M 1) host)) (b (tensor f32 (1 K) host)))\n"
    "  (returns (tensor f32 (M K) host))\n"
    "  (return (matmul a b))))\n";

static shapeml_context* ctx_new(void) {
  shapeml_context* c = NULL;
  ok(shapeml_context_create(NULL, &c));
  return c;
}

/* One context, one check result: checked and read from 8 threads, compared
   with the single-threaded rendering. */
typedef struct {
  shapeml_context* ctx;
  shapeml_check_result* shared;
  const char* expected;
  int failures;
} check_worker;

static const char* kBadSrc =
    "(module m (func f (dims B D F)\n"
    "  (params (x (tensor f32 (B D) host)) (w (tensor f32 (F D) host)))\n"
    "  (returns (tensor f32 (B D) host))\n"
    "  (return (matmul x w))))\n";

static void* check_worker_main(void* arg) {
  check_worker* w = arg;
  for (int k = 0; k < 10; ++k) {
    shapeml_check_result* r = NULL;
    const char* text = NULL;
    shapeml_status* st = shapeml_check_source(w->ctx, "bad.sml", kBadSrc, strlen(kBadSrc), &r);
    if (!st) st = shapeml_check_result_render(r, SHAPEML_FORMAT_TEXT, &text);
    if (st || strcmp(text, w->expected) != 0) w->failures++;
    shapeml_status_free(st);
    shapeml_check_result_release(r);
    shapeml_diagnostic d = SHAPEML_DIAGNOSTIC_INIT;
    st = shapeml_check_result_get_diagnostic(w->shared, 0, &d);
    if (st || strcmp(d.code, "E0301") != 0) w->failures++;
    shapeml_status_free(st);
  }
  return NULL;
}

static void test_check_from_eight_threads(void** state) {
  (void)state;
  shapeml_context* ctx = ctx_new();
  shapeml_check_result* r = NULL;
  const char* expected = NULL;
  ok(shapeml_check_source(ctx, "bad.sml", kBadSrc, strlen(kBadSrc), &r));
  ok(shapeml_check_result_render(r, SHAPEML_FORMAT_TEXT, &expected));
  assert_non_null(strstr(expected, "E0301"));
  check_worker w[THREADS];
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; ++i) w[i] = (check_worker){ctx, r, expected, 0};
  for (int i = 0; i < THREADS; ++i) assert_int_equal(pthread_create(&th[i], NULL, check_worker_main, &w[i]), 0);
  for (int i = 0; i < THREADS; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < THREADS; ++i) assert_int_equal(w[i].failures, 0);
  shapeml_check_result_release(r);
  shapeml_context_release(ctx);
}

static void test_front_end_struct_sizes(void** state) {
  (void)state;
  shapeml_context_options co = SHAPEML_CONTEXT_OPTIONS_INIT;
  shapeml_context* ctx = NULL;
  co.struct_size = 10; /* inside obligation_timeout_ms */
  expect_code(shapeml_context_create(&co, &ctx), SHAPEML_STATUS_INVALID_ARGUMENT, "options->struct_size is 10");
  assert_null(ctx);
  co.struct_size = 12; /* ends at obligation_timeout_ms: fine */
  ok(shapeml_context_create(&co, &ctx));
  shapeml_check_result* r = NULL;
  ok(shapeml_check_source(ctx, "s.sml", kSrc, strlen(kSrc), &r));
  shapeml_check_result_release(r);
  ok(shapeml_check_source(ctx, "bad.sml", "(module", 7, &r));
  shapeml_diagnostic d = SHAPEML_DIAGNOSTIC_INIT;
  d.struct_size = 12; /* half of `code` */
  expect_code(shapeml_check_result_get_diagnostic(r, 0, &d), SHAPEML_STATUS_INVALID_ARGUMENT, "out->struct_size is 12");
  d.struct_size = sizeof d;
  ok(shapeml_check_result_get_diagnostic(r, 0, &d));
  assert_non_null(d.code);
  shapeml_check_result_release(r);
  shapeml_context_release(ctx);
}

static void test_jit_entries(void** state) {
  (void)state;
  shapeml_context* ctx = ctx_new();
  shapeml_module* m = NULL;
  ok(shapeml_module_compile(ctx, "scaler.sml", kSrc, strlen(kSrc), NULL, &m));
  assert_string_equal(shapeml_module_name(m), "scaler");
  assert_true(strlen(shapeml_module_target(m)) > 0);
  shapeml_entry* e = entry_of(m, "scaled_add");
  assert_string_equal(shapeml_entry_shape_variable(e, 0), "N");
  assert_int_equal(shapeml_entry_constraint_count(e), 1);
  assert_string_equal(shapeml_entry_constraint(e, 0), "(<= N 64)");
  assert_int_equal(shapeml_entry_aot_specialization_count(e), 0);
  shapeml_tensor_info info = SHAPEML_TENSOR_INFO_INIT;
  ok(shapeml_entry_get_tensor_info(e, SHAPEML_IO_PARAM, 1, &info));
  assert_string_equal(info.name, "y");
  assert_string_equal(info.type, "(tensor f32 (N) host)");
  expect_dim(e, SHAPEML_IO_RESULT, 0, 0, SHAPEML_DIM_VARIABLE, 0, "N", "N");
  shapeml_entry* outer = entry_of(m, "outer");
  expect_dim(outer, SHAPEML_IO_RESULT, 0, 1, SHAPEML_DIM_VARIABLE, 0, "K", "K");
  /* Warm-up, then a call of that binding. */
  const char* n = "N";
  int64_t six = 6, big = 65, zero = 0;
  ok(shapeml_entry_specialize(e, &n, &six, 1));
  expect_code(shapeml_entry_specialize(e, &n, &big, 1), SHAPEML_STATUS_INVALID_ARGUMENT, "(<= N 64)");
  expect_code(shapeml_entry_specialize(e, &n, &zero, 1), SHAPEML_STATUS_INVALID_ARGUMENT, ">= 1");
  const char* mk[2] = {"M", "K"};
  int64_t huge[2] = {INT64_C(1) << 30, INT64_C(1) << 30};
  expect_code(shapeml_entry_specialize(outer, mk, huge, 2), SHAPEML_STATUS_RESOURCE_EXHAUSTED, "too many elements");
  float x[6] = {1, 2, 3, 4, 5, 6};
  shapeml_tensor* tx = f32_vector(x, 6);
  shapeml_tensor* in[2] = {tx, tx};
  shapeml_tensor* out[1] = {NULL};
  ok(shapeml_entry_call(e, in, 2, out, 1, NULL));
  for (int i = 0; i < 6; ++i) assert_float_equal(((float*)shapeml_tensor_data(out[0]))[i], 3.0f * x[i], 0);
  shapeml_tensor_release(out[0]);
  /* A call whose binding violates `where` never reaches the compiler. */
  float seventy[70] = {0};
  shapeml_tensor* t70 = f32_vector(seventy, 70);
  shapeml_tensor* in70[2] = {t70, t70};
  expect_code(shapeml_entry_call(e, in70, 2, out, 1, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "(<= N 64)");
  shapeml_tensor_release(t70);
  shapeml_tensor_release(tx);
  shapeml_module_release(m);
  shapeml_context_release(ctx);
}

/* Shape variables given at the call (`(given H)`, spec §4.19): introspection
 * says which, the call options carry their values, and each wrong use is
 * INVALID_ARGUMENT naming the variable. Values against a float64 loop. */
static const char kGivenSrc[] =
    "(module given_heads\n"
    "  (func head_sums (dims B S H Dh) (given H)\n"
    "    (params (x (tensor f32 (B S (* H Dh)) host)))\n"
    "    (returns (tensor f32 (B H S) host))\n"
    "    (return (permute (reduce_sum (reshape x (B S H Dh)) :axes (3)) (0 2 1)))))\n";

static void expect_given_call(shapeml_entry* e, shapeml_tensor* x, const char* const* names, const int64_t* values, size_t n,
                              shapeml_status_code code, const char* fragment) {
  shapeml_tensor* out[1] = {NULL};
  shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
  o.dim_names = names;
  o.dim_values = values;
  o.num_dims = n;
  expect_code(shapeml_entry_call(e, &x, 1, out, 1, &o), code, fragment);
  assert_null(out[0]);
}

static void test_shape_variables_given_at_the_call(void** state) {
  (void)state;
  shapeml_context* ctx = ctx_new();
  shapeml_module* m = NULL;
  ok(shapeml_module_compile(ctx, "given.sml", kGivenSrc, strlen(kGivenSrc), NULL, &m));
  shapeml_entry* e = entry_of(m, "head_sums");
  assert_int_equal(shapeml_entry_shape_variable_count(e), 4);
  const int32_t given[4] = {0, 0, 1, 0}; /* B S H Dh */
  for (size_t i = 0; i < 4; ++i) assert_int_equal(shapeml_entry_shape_variable_is_given(e, i), given[i]);
  assert_int_equal(shapeml_entry_shape_variable_is_given(e, 4), 0);
  assert_int_equal(shapeml_entry_shape_variable_is_given(NULL, 0), 0);
  /* x: (2 3 12) */
  float x[72];
  for (int i = 0; i < 72; ++i) x[i] = 0.25f * (float)(i % 17) - 1.0f;
  int64_t shape[3] = {2, 3, 12};
  shapeml_tensor* tx = NULL;
  ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 3, shape, x, sizeof x, &tx));
  const char* h = "H";
  const int64_t heads[2] = {4, 6};
  for (int k = 0; k < 2; ++k) {
    const int64_t H = heads[k], Dh = 12 / H;
    shapeml_tensor* out[1] = {NULL};
    shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
    o.dim_names = &h;
    o.dim_values = &heads[k];
    o.num_dims = 1;
    ok(shapeml_entry_call(e, &tx, 1, out, 1, &o));
    assert_int_equal(shapeml_tensor_rank(out[0]), 3);
    assert_int_equal(shapeml_tensor_shape(out[0])[1], H);
    const float* y = shapeml_tensor_data(out[0]);
    for (int b = 0; b < 2; ++b)
      for (int hh = 0; hh < H; ++hh)
        for (int s = 0; s < 3; ++s) {
          double want = 0;
          for (int d = 0; d < Dh; ++d) want += (double)x[(b * 3 + s) * 12 + hh * Dh + d];
          assert_true(fabs((double)y[(b * H + hh) * 3 + s] - want) <= 1e-5);
        }
    shapeml_tensor_release(out[0]);
  }
  /* Missing, not given, not a variable, < 1, twice, contradicting the shape, NULL arrays. */
  expect_given_call(e, tx, NULL, NULL, 0, SHAPEML_STATUS_INVALID_ARGUMENT, "takes shape variable `H` at the call");
  const char* hs[2] = {"H", "S"};
  const int64_t v43[2] = {4, 3};
  expect_given_call(e, tx, hs, v43, 2, SHAPEML_STATUS_INVALID_ARGUMENT, "shape variable `S` is inferred from the input shapes");
  const char* q = "Q";
  expect_given_call(e, tx, &q, &heads[0], 1, SHAPEML_STATUS_INVALID_ARGUMENT, "has no shape variable `Q`");
  const int64_t zero = 0, five = 5;
  expect_given_call(e, tx, &h, &zero, 1, SHAPEML_STATUS_INVALID_ARGUMENT, "H = 0 given at the call");
  const char* hh[2] = {"H", "H"};
  const int64_t v44[2] = {4, 4};
  expect_given_call(e, tx, hh, v44, 2, SHAPEML_STATUS_INVALID_ARGUMENT, "`H` is given twice");
  expect_given_call(e, tx, &h, &five, 1, SHAPEML_STATUS_INVALID_ARGUMENT, "for no integer Dh");
  expect_given_call(e, tx, NULL, &five, 1, SHAPEML_STATUS_INVALID_ARGUMENT, "dim_names");
  expect_given_call(e, tx, &h, NULL, 1, SHAPEML_STATUS_INVALID_ARGUMENT, "dim_values");
  /* The plain call (no options) cannot give H. */
  shapeml_tensor* out[1] = {NULL};
  expect_code(shapeml_entry_call(e, &tx, 1, out, 1, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "takes shape variable `H` at the call");
  /* A warm-up binding names every variable, H included. */
  const char* all[4] = {"B", "S", "H", "Dh"};
  const int64_t vals[4] = {2, 3, 3, 4};
  ok(shapeml_entry_specialize(e, all, vals, 4));
  shapeml_tensor_release(tx);
  shapeml_module_release(m);
  shapeml_context_release(ctx);
}

typedef struct {
  shapeml_entry* entry;
  int64_t n;
  int failures;
  char error[256];
} jit_worker;

static void* jit_worker_main(void* arg) {
  jit_worker* w = arg;
  float x[64], y[64];
  for (int i = 0; i < w->n; ++i) {
    x[i] = (float)i;
    y[i] = (float)(w->n - i);
  }
  for (int k = 0; k < 20; ++k) {
    shapeml_tensor *tx = NULL, *ty = NULL, *o[1] = {NULL};
    shapeml_status* st = shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &w->n, x, (size_t)w->n * 4, &tx);
    if (!st) st = shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &w->n, y, (size_t)w->n * 4, &ty);
    shapeml_tensor* in[2] = {tx, ty};
    if (!st) st = shapeml_entry_call(w->entry, in, 2, o, 1, NULL);
    if (st) {
      w->failures++;
      snprintf(w->error, sizeof w->error, "%s", shapeml_status_get_message(st));
      shapeml_status_free(st);
    } else {
      const float* r = shapeml_tensor_data(o[0]);
      for (int i = 0; i < w->n; ++i)
        if (r[i] != x[i] + 2.0f * y[i]) w->failures++;
    }
    shapeml_tensor_release(o[0]);
    shapeml_tensor_release(tx);
    shapeml_tensor_release(ty);
  }
  return NULL;
}

/* First-call specialization from 8 threads at once (4 bindings, 2 threads
   each), checked against the values a single thread computes. */
static void test_jit_eight_threads(void** state) {
  (void)state;
  shapeml_context* ctx = ctx_new();
  shapeml_module* m = NULL;
  ok(shapeml_module_compile(ctx, "scaler.sml", kSrc, strlen(kSrc), NULL, &m));
  shapeml_entry* e = entry_of(m, "scaled_add");
  jit_worker w[THREADS];
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].entry = e;
    w[i].n = 3 + i / 2;
  }
  for (int i = 0; i < THREADS; ++i) assert_int_equal(pthread_create(&th[i], NULL, jit_worker_main, &w[i]), 0);
  for (int i = 0; i < THREADS; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < THREADS; ++i)
    if (w[i].failures) fail_msg("thread %d (N=%d): %d failures (%s)", i, (int)w[i].n, w[i].failures, w[i].error);
  /* The same from one thread. */
  jit_worker single = {e, 5, 0, ""};
  jit_worker_main(&single);
  assert_int_equal(single.failures, 0);
  shapeml_module_release(m);
  shapeml_context_release(ctx);
}

/* Compile: 8 threads each JIT-compile the same source through one shared
   context and call the first specialization (compiled on first call), and
   the results equal a single-threaded compile's. Run under TSan in CI. */
typedef struct {
  shapeml_context* ctx;
  float result[5];
  int failures;
  char error[256];
} compile_worker;

static void* compile_worker_main(void* arg) {
  compile_worker* w = arg;
  shapeml_module* m = NULL;
  shapeml_status* st = shapeml_module_compile(w->ctx, "scaler.sml", kSrc, strlen(kSrc), NULL, &m);
  if (!st) {
    float x[5] = {1, 2, 3, 4, 5};
    int64_t n = 5;
    shapeml_tensor* t = NULL;
    st = shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &n, x, sizeof x, &t);
    if (!st) {
      shapeml_tensor* in[2] = {t, t};
      shapeml_tensor* out[1] = {NULL};
      st = shapeml_module_call(m, "scaled_add", in, 2, out, 1);
      if (!st) memcpy(w->result, shapeml_tensor_data(out[0]), sizeof w->result);
      shapeml_tensor_release(out[0]);
      shapeml_tensor_release(t);
    }
  }
  if (st) {
    w->failures++;
    snprintf(w->error, sizeof w->error, "%s", shapeml_status_get_message(st));
    shapeml_status_free(st);
  }
  shapeml_module_release(m);
  return NULL;
}

static void test_compile_from_eight_threads(void** state) {
  (void)state;
  shapeml_context* ctx = ctx_new();
  compile_worker single;
  memset(&single, 0, sizeof single);
  single.ctx = ctx;
  compile_worker_main(&single);
  assert_int_equal(single.failures, 0);
  compile_worker w[THREADS];
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].ctx = ctx;
  }
  for (int i = 0; i < THREADS; ++i) assert_int_equal(pthread_create(&th[i], NULL, compile_worker_main, &w[i]), 0);
  for (int i = 0; i < THREADS; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < THREADS; ++i) {
    if (w[i].failures) fail_msg("thread %d: %s", i, w[i].error);
    assert_memory_equal(w[i].result, single.result, sizeof single.result);
  }
  shapeml_context_release(ctx);
}

/* Issue 24, item 1: a temporary of generated code that cannot be allocated
 * ((N N) f32 at N = 2^20 is 4 TiB) is RESOURCE_EXHAUSTED naming the entry,
 * the binding and the bytes, JIT and AOT alike, and the module keeps
 * working; temporaries come from the call's memory resource, so a budget
 * refuses them too. */
static const char kTempSrc[] =
    "(module temps (func outer (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 () host))"
    " (let m (matmul (reshape x (N 1)) (reshape x (1 N)))) (return (reduce_sum (exp m) :axes (0 1)))))";

typedef struct { size_t budget, largest; int refused; } budget_t;
static void* b_alloc(void* user, size_t bytes, size_t align, void* stream) {
  (void)stream;
  budget_t* b = (budget_t*)user;
  if (bytes > b->largest) b->largest = bytes;
  if (bytes > b->budget) {
    b->refused++;
    return NULL;
  }
  return aligned_alloc(align, (bytes + align - 1) / align * align);
}
static void b_free(void* user, void* p, size_t bytes, size_t align, void* stream) {
  (void)user; (void)bytes; (void)align; (void)stream;
  free(p);
}

static void expect_outer_works(shapeml_entry* e, shapeml_memory* mem) {
  float x[8];
  double want = 0;
  for (int i = 0; i < 8; ++i) x[i] = 0.1f * (float)(i - 3);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) want += exp((double)x[i] * (double)x[j]);
  shapeml_tensor* t = f32_vector(x, 8);
  shapeml_tensor* out[1] = {NULL};
  shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
  o.memory = mem;
  ok(shapeml_entry_call(e, &t, 1, out, 1, &o));
  assert_true(fabs(*(float*)shapeml_tensor_data(out[0]) - want) <= 1e-5 * want);
  shapeml_tensor_release(out[0]);
  shapeml_tensor_release(t);
}

static void expect_temporary_refused(shapeml_entry* e, int64_t n, shapeml_memory* mem, const char* bytes) {
  shapeml_tensor* t = NULL;
  ok(shapeml_tensor_create(NULL, SHAPEML_DTYPE_F32, 1, &n, &t));
  memset(shapeml_tensor_data(t), 0, (size_t)n * sizeof(float));
  shapeml_tensor* out[1] = {NULL};
  shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
  o.memory = mem;
  shapeml_status* st = shapeml_entry_call(e, &t, 1, out, 1, &o);
  assert_non_null(st);
  const char* msg = shapeml_status_get_message(st);
  if (shapeml_status_get_code(st) != SHAPEML_STATUS_RESOURCE_EXHAUSTED || !strstr(msg, "entry `outer`") || !strstr(msg, "N=") ||
      !strstr(msg, "a temporary of") || !strstr(msg, bytes))
    fail_msg("expected RESOURCE_EXHAUSTED naming the entry, binding and bytes (%s), got %s: %s", bytes,
             shapeml_status_code_name(shapeml_status_get_code(st)), msg);
  assert_null(out[0]);
  shapeml_status_free(st);
  shapeml_tensor_release(t);
}

static void test_temporaries_that_cannot_be_allocated(void** state) {
  (void)state;
  shapeml_context* ctx = ctx_new();
  char dir[] = "/tmp/shapeml_temps_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char so[256];
  snprintf(so, sizeof so, "%s/libtemps.so", dir);
  const char* n = "N";
  int64_t vals[3] = {8, 1 << 20, 64};
  shapeml_binding b[3] = {{"outer", 1, &n, &vals[0]}, {"outer", 1, &n, &vals[1]}, {"outer", 1, &n, &vals[2]}};
  shapeml_build_options bo = SHAPEML_BUILD_OPTIONS_INIT;
  bo.bindings = b;
  bo.num_bindings = 3;
  ok(shapeml_module_build(ctx, "temps.sml", kTempSrc, strlen(kTempSrc), &bo, so));
  shapeml_module *aot = NULL, *jit = NULL;
  ok(shapeml_module_load(so, NULL, &aot));
  ok(shapeml_module_compile(ctx, "temps.sml", kTempSrc, strlen(kTempSrc), NULL, &jit));
  shapeml_module* mods[2] = {aot, jit};
  for (int k = 0; k < 2; ++k) {
    shapeml_entry* e = entry_of(mods[k], "outer");
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    /* (Sanitizer allocators abort on a 4 TiB request instead of returning NULL; the budget below takes the same path.) */
    expect_temporary_refused(e, 1 << 20, NULL, "4398046511"); /* 2^42 bytes and MLIR's alignment slack */
    expect_outer_works(e, NULL);                              /* nothing was lost: the next call runs */
#endif
    /* A budget of 4 KiB: N = 64 needs a 16 KiB temporary, which the budget refuses. */
    budget_t bud = {4096, 0, 0};
    shapeml_memory_resource vt = {sizeof vt, &bud, b_alloc, b_free, NULL, NULL};
    shapeml_memory* mem = NULL;
    ok(shapeml_memory_create_from_resource(&vt, &mem));
    expect_temporary_refused(e, 64, mem, "bytes");
    assert_true(bud.refused >= 1);
    assert_true(bud.largest >= 64 * 64 * sizeof(float));
    bud.budget = (size_t)1 << 20;
    expect_outer_works(e, mem); /* within the budget, from the budget */
    shapeml_memory_release(mem);
  }
  shapeml_module_release(jit);
  shapeml_module_release(aot);
  remove(so);
  rmdir(dir);
  shapeml_context_release(ctx);
}

/* Issue 23 item 5: the shipping targets x86-64-v3 and x86-64-v4, built,
   named in the manifest, loaded and run where the CPU has them (a CPU
   without them refuses the module at load: FAILED_PRECONDITION naming the
   missing features); an unknown target value is INVALID_ARGUMENT listing
   the known ones. */
static void test_shipping_targets(void** state) {
  (void)state;
  shapeml_context* ctx = ctx_new();
  char dir[] = "/tmp/shapeml_targets_XXXXXX";
  assert_non_null(mkdtemp(dir));
  const char* n = "N";
  int64_t v = 64;
  shapeml_binding b = {"scaled_add", 1, &n, &v};
  const struct { shapeml_target target; const char* name; const char* needs; } cases[] = {
      {SHAPEML_TARGET_X86_64_V3, "x86-64-v3", "avx2"}, {SHAPEML_TARGET_X86_64_V4, "x86-64-v4", "avx512f"}};
  for (int i = 0; i < 2; ++i) {
    char so[256];
    snprintf(so, sizeof so, "%s/lib%d.so", dir, i);
    shapeml_build_options o = SHAPEML_BUILD_OPTIONS_INIT;
    o.target = cases[i].target;
    o.bindings = &b;
    o.num_bindings = 1;
    ok(shapeml_module_build(ctx, "scaler.sml", kSrc, strlen(kSrc), &o, so));
    shapeml_module* m = NULL;
    shapeml_status* st = shapeml_module_load(so, NULL, &m);
    __builtin_cpu_init();
    const int has = i == 0 ? __builtin_cpu_supports("avx2") : __builtin_cpu_supports("avx512f");
    if (!has) {
      assert_non_null(st);
      assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_FAILED_PRECONDITION);
      assert_non_null(strstr(shapeml_status_get_message(st), cases[i].needs));
      shapeml_status_free(st);
    } else {
      ok(st);
      assert_string_equal(shapeml_module_target(m), cases[i].name);
      float x[64], y[64];
      for (int k = 0; k < 64; ++k) x[k] = (float)k * 0.5f, y[k] = 1.0f - (float)k;
      int64_t shape = 64;
      shapeml_tensor *tx = NULL, *ty = NULL, *out = NULL;
      ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &shape, x, sizeof x, &tx));
      ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &shape, y, sizeof y, &ty));
      shapeml_tensor* in[2] = {tx, ty};
      ok(shapeml_module_call(m, "scaled_add", in, 2, &out, 1));
      const float* r = (const float*)shapeml_tensor_data(out);
      for (int k = 0; k < 64; ++k) assert_true(fabsf(r[k] - (x[k] + 2.0f * y[k])) <= 1e-6f * (1.0f + fabsf(x[k] + 2.0f * y[k])));
      shapeml_tensor_release(out);
      shapeml_tensor_release(tx);
      shapeml_tensor_release(ty);
      shapeml_module_release(m);
    }
    remove(so);
  }
  shapeml_build_options bad = SHAPEML_BUILD_OPTIONS_INIT;
  bad.target = 4;
  bad.bindings = &b;
  bad.num_bindings = 1;
  char so[256];
  snprintf(so, sizeof so, "%s/bad.so", dir);
  shapeml_status* st = shapeml_module_build(ctx, "scaler.sml", kSrc, strlen(kSrc), &bad, so);
  assert_non_null(st);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(shapeml_status_get_message(st), "SHAPEML_TARGET_X86_64_V4 3"));
  shapeml_status_free(st);
  rmdir(dir);
  shapeml_context_release(ctx);
}

static void test_module_build_with_options(void** state) {
  (void)state;
  shapeml_context* ctx = ctx_new();
  char dir[] = "/tmp/shapeml_abi03_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char so[256];
  snprintf(so, sizeof so, "%s/libscaler.so", dir);
  const char* n = "N";
  int64_t v4 = 4, v8 = 8;
  const char* mk[2] = {"K", "M"};
  int64_t kv[2] = {3, 2};
  shapeml_binding b[3] = {{"scaled_add", 1, &n, &v4}, {"scaled_add", 1, &n, &v8}, {"outer", 2, mk, kv}};
  shapeml_build_options o = SHAPEML_BUILD_OPTIONS_INIT;
  o.bindings = b;
  o.num_bindings = 3;
  ok(shapeml_module_build(ctx, "scaler.sml", kSrc, strlen(kSrc), &o, so));
  shapeml_module* m = NULL;
  ok(shapeml_module_load(so, NULL, &m));
  assert_string_equal(shapeml_module_name(m), "scaler");
  assert_string_equal(shapeml_module_target(m), "x86-64");
  shapeml_entry* e = entry_of(m, "scaled_add");
  assert_int_equal(shapeml_entry_aot_specialization_count(e), 2);
  int64_t got = 0;
  ok(shapeml_entry_get_aot_specialization(e, 1, &got, 1));
  assert_int_equal(got, 8);
  shapeml_entry* outer = entry_of(m, "outer");
  int64_t mkv[2] = {0, 0};
  ok(shapeml_entry_get_aot_specialization(outer, 0, mkv, 2));
  assert_int_equal(mkv[0], 2); /* M, in declaration order */
  assert_int_equal(mkv[1], 3); /* K */
  float a[2] = {1, 2}, bb[3] = {10, 20, 30};
  int64_t sa[2] = {2, 1}, sb[2] = {1, 3};
  shapeml_tensor *ta = NULL, *tb = NULL;
  ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 2, sa, a, sizeof a, &ta));
  ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 2, sb, bb, sizeof bb, &tb));
  shapeml_tensor* in[2] = {ta, tb};
  shapeml_tensor* out[1] = {NULL};
  ok(shapeml_entry_call(outer, in, 2, out, 1, NULL));
  assert_int_equal(shapeml_tensor_shape(out[0])[0], 2);
  assert_int_equal(shapeml_tensor_shape(out[0])[1], 3);
  assert_float_equal(((float*)shapeml_tensor_data(out[0]))[5], 60.0f, 0);
  shapeml_tensor_release(out[0]);
  shapeml_tensor_release(ta);
  shapeml_tensor_release(tb);
  shapeml_module_release(m);
  remove(so);

  /* Errors, each with the code of its cause. */
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), NULL, so), SHAPEML_STATUS_INVALID_ARGUMENT, "options");
  expect_code(shapeml_module_build(NULL, "s", kSrc, strlen(kSrc), &o, so), SHAPEML_STATUS_INVALID_ARGUMENT, "context");
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &o, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "out_path");
  shapeml_build_options bad = o;
  bad.struct_size = 20; /* half of `bindings` */
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, so), SHAPEML_STATUS_INVALID_ARGUMENT, "struct_size is 20");
  bad = o;
  bad.target = 9;
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, so), SHAPEML_STATUS_INVALID_ARGUMENT, "target 9");
  bad = o;
  bad.num_bindings = 0;
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, so), SHAPEML_STATUS_INVALID_ARGUMENT, "num_bindings is 0");
  shapeml_binding one[2];
  bad = o;
  bad.bindings = one;
  bad.num_bindings = 1;
  one[0] = (shapeml_binding){"nope", 1, &n, &v4};
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, so), SHAPEML_STATUS_NOT_FOUND, "no function `nope`");
  int64_t v100 = 100;
  one[0] = (shapeml_binding){"scaled_add", 1, &n, &v100};
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, so), SHAPEML_STATUS_INVALID_ARGUMENT, "(<= N 64)");
  one[0] = (shapeml_binding){"outer", 1, mk, kv};
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, so), SHAPEML_STATUS_INVALID_ARGUMENT, "does not give shape variable `M`");
  const char* kk[2] = {"K", "K"};
  one[0] = (shapeml_binding){"outer", 2, kk, kv};
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, so), SHAPEML_STATUS_INVALID_ARGUMENT, "twice");
  one[0] = (shapeml_binding){NULL, 1, &n, &v4};
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, so), SHAPEML_STATUS_INVALID_ARGUMENT, "bindings[0].entry is NULL");
  one[0] = (shapeml_binding){"scaled_add", 1, &n, &v4};
  one[1] = one[0];
  bad.num_bindings = 2;
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, so), SHAPEML_STATUS_INVALID_ARGUMENT, "is given twice");
  bad.num_bindings = 1;
  int64_t huge[2] = {INT64_C(1) << 30, INT64_C(1) << 30};
  one[0] = (shapeml_binding){"outer", 2, mk, huge};
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, so), SHAPEML_STATUS_RESOURCE_EXHAUSTED, "too many elements");
  one[0] = (shapeml_binding){"scaled_add", 1, &n, &v4};
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, "/nonexistent-dir/lib.so"), SHAPEML_STATUS_IO_ERROR, "/nonexistent-dir");
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, dir), SHAPEML_STATUS_IO_ERROR, "is a directory");
  expect_code(shapeml_module_build(ctx, "s", "(module", 7, &bad, so), SHAPEML_STATUS_CHECK_FAILED, "does not check");
  setenv("SHAPEML_CC", "/nonexistent/cc", 1);
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, so), SHAPEML_STATUS_UNAVAILABLE, "SHAPEML_CC");
  unsetenv("SHAPEML_CC");
  bad = o;
  bad.gpu_graph = 7;
  expect_code(shapeml_module_build(ctx, "s", kSrc, strlen(kSrc), &bad, so), SHAPEML_STATUS_INVALID_ARGUMENT, "gpu_graph 7");
  /* gpu_graph decides a device entry's plan line; a struct that ends before
   * it reads as SHAPEML_GRAPH_DEFAULT (graph on where safe). */
  {
    const char* dev_src =
        "(module d (func f (dims N) (params (x (tensor f32 (N) (cuda 0)))) (returns (tensor f32 (N) (cuda 0))) (return (exp x))))";
    shapeml_binding db = {"f", 1, &n, &v4};
    const char* want[3] = {"\ngraph on ; ", "\ngraph off ; graph replay turned off by the compile option", "\ngraph on ; "};
    for (int k = 0; k < 3; ++k) {
      shapeml_build_options d = SHAPEML_BUILD_OPTIONS_INIT;
      d.bindings = &db;
      d.num_bindings = 1;
      d.gpu_graph = k == 0 ? SHAPEML_GRAPH_ON : SHAPEML_GRAPH_OFF;
      if (k == 2) d.struct_size = offsetof(shapeml_build_options, gpu_graph); /* the OFF is not read */
      char dso[300];
      snprintf(dso, sizeof dso, "%s/libdev%d.so", dir, k);
      ok(shapeml_module_build(ctx, "d.sml", dev_src, strlen(dev_src), &d, dso));
      void* h = dlopen(dso, RTLD_NOW | RTLD_LOCAL);
      assert_non_null(h);
      const char* (*plan)(void) = (const char* (*)(void))dlsym(h, "shapeml_f_0");
      assert_non_null(plan);
      assert_non_null(strstr(plan(), want[k]));
      dlclose(h);
      remove(dso);
    }
  }
  /* The 0.2 string form keeps working. */
  ok(shapeml_module_build_shared_object(ctx, "s", kSrc, strlen(kSrc), "scaled_add:N=4", SHAPEML_TARGET_X86_64, so));
  remove(so);
  rmdir(dir);
  shapeml_context_release(ctx);
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_create_and_codes),
      cmocka_unit_test(test_capabilities),
      cmocka_unit_test(test_struct_sizes_inside_pointer_fields),
      cmocka_unit_test(test_tensor_uninitialized_and_queries),
      cmocka_unit_test(test_tensor_wrap),
      cmocka_unit_test(test_read_only_dlpack_import_stays_read_only),
      cmocka_unit_test(test_module_introspection),
      cmocka_unit_test(test_entry_call_with_options),
      cmocka_unit_test(test_entry_specialize_aot),
      cmocka_unit_test(test_eight_threads_match_one),
      cmocka_unit_test(test_memory_and_tensors_from_eight_threads),
#ifdef WITH_COMPILER
      cmocka_unit_test(test_check_from_eight_threads),
      cmocka_unit_test(test_front_end_struct_sizes),
      cmocka_unit_test(test_jit_entries),
      cmocka_unit_test(test_shape_variables_given_at_the_call),
      cmocka_unit_test(test_jit_eight_threads),
      cmocka_unit_test(test_compile_from_eight_threads),
      cmocka_unit_test(test_module_build_with_options),
      cmocka_unit_test(test_shipping_targets),
      cmocka_unit_test(test_temporaries_that_cannot_be_allocated),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
