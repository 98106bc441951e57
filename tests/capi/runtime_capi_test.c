/* The runtime half of the C ABI, from plain C. Built twice: against
 * libshapeml.so and against libshapeml_runtime.so (same ABI). */
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
  assert_non_null(st);
  if (shapeml_status_get_code(st) != code || (fragment && !strstr(shapeml_status_get_message(st), fragment)))
    fail_msg("expected %s containing '%s', got %s: %s", shapeml_status_code_name(code), fragment ? fragment : "",
             shapeml_status_code_name(shapeml_status_get_code(st)), shapeml_status_get_message(st));
  shapeml_status_free(st);
}

static shapeml_tensor* f32_vector(const float* v, int64_t n) {
  shapeml_tensor* t = NULL;
  assert_null(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &n, v, (size_t)n * sizeof(float), &t));
  return t;
}

/* ---- memory ---- */

typedef struct { int allocs, frees, destroyed; } counting;
static void* c_alloc(void* user, size_t bytes, size_t align, void* stream) {
  (void)stream;
  ((counting*)user)->allocs++;
  return aligned_alloc(align, (bytes + align - 1) / align * align);
}
static void c_free(void* user, void* p, size_t bytes, size_t align, void* stream) {
  (void)bytes; (void)align; (void)stream;
  ((counting*)user)->frees++;
  free(p);
}
static void c_destroy(void* user) { ((counting*)user)->destroyed++; }

static void test_user_resource_in_c(void** state) {
  (void)state;
  counting c = {0, 0, 0};
  shapeml_memory_resource vt = {sizeof vt, &c, c_alloc, c_free, NULL, c_destroy};
  shapeml_memory* m = NULL;
  assert_null(shapeml_memory_create_from_resource(&vt, &m));
  int64_t shape[2] = {3, 5};
  shapeml_tensor* t = NULL;
  assert_null(shapeml_tensor_create(m, SHAPEML_DTYPE_F64, 2, shape, &t));
  assert_int_equal(c.allocs, 1);
  shapeml_memory_release(m); /* the tensor keeps the resource alive */
  assert_int_equal(c.destroyed, 0);
  assert_true(((uintptr_t)shapeml_tensor_data(t) % 64) == 0);
  shapeml_tensor_release(t);
  assert_int_equal(c.frees, 1);
  assert_int_equal(c.destroyed, 1);
}

static void test_statistics_and_pool(void** state) {
  (void)state;
  shapeml_memory *pool = NULL, *stats = NULL;
  assert_null(shapeml_memory_create_pool(NULL, 0, &pool));
  assert_null(shapeml_memory_create_statistics_adaptor(pool, &stats));
  int64_t n = 1000;
  shapeml_tensor *a = NULL, *b = NULL;
  assert_null(shapeml_tensor_create(stats, SHAPEML_DTYPE_F32, 1, &n, &a));
  assert_null(shapeml_tensor_create(stats, SHAPEML_DTYPE_I64, 1, &n, &b));
  shapeml_memory_statistics s = SHAPEML_MEMORY_STATISTICS_INIT;
  assert_null(shapeml_memory_get_statistics(stats, &s));
  assert_int_equal(s.allocation_count, 2);
  assert_true(s.bytes_in_use >= 12000);
  shapeml_tensor_release(a);
  shapeml_tensor_release(b);
  assert_null(shapeml_memory_get_statistics(stats, &s));
  assert_int_equal(s.bytes_in_use, 0);
  assert_true(s.peak_bytes_in_use >= 12000);
  shapeml_memory* host = NULL;
  assert_null(shapeml_memory_create_host(&host));
  expect_code(shapeml_memory_get_statistics(host, &s), SHAPEML_STATUS_NOT_FOUND, "statistics adaptor");
  shapeml_memory_release(host);
  shapeml_memory_retain(pool); /* the adaptor and this extra reference both hold the pool */
  shapeml_memory_release(stats);
  shapeml_memory_release(pool);
  assert_null(shapeml_tensor_create(pool, SHAPEML_DTYPE_F32, 1, &n, &a)); /* still alive */
  shapeml_tensor_release(a);
  shapeml_memory_release(pool);
  shapeml_memory_retain(NULL);
  shapeml_memory_release(NULL);
}

/* Issue 24, item 3: an upstream that calls back into the pool it serves
 * (reads its statistics, allocates from it) from inside the pool's call used
 * to deadlock on the pool's lock. Now the statistics are answered and the
 * nested allocation is refused with a message; the outer one succeeds. */
typedef struct { shapeml_memory* pool; int calls, stats_ok, nested_refused; } reentrant;
static void* r_alloc(void* user, size_t bytes, size_t align, void* stream) {
  (void)stream;
  reentrant* r = (reentrant*)user;
  r->calls++;
  if (r->pool) {
    shapeml_memory_statistics st = SHAPEML_MEMORY_STATISTICS_INIT;
    shapeml_status* s = shapeml_memory_get_statistics(r->pool, &st);
    if (s) shapeml_status_free(s);
    else r->stats_ok++;
    int64_t n = 4;
    shapeml_tensor* t = NULL;
    shapeml_status* s2 = shapeml_tensor_create(r->pool, SHAPEML_DTYPE_F32, 1, &n, &t);
    if (s2 && shapeml_status_get_code(s2) == SHAPEML_STATUS_RESOURCE_EXHAUSTED && strstr(shapeml_status_get_message(s2), "inside a call to its upstream"))
      r->nested_refused++;
    if (s2) shapeml_status_free(s2);
    else shapeml_tensor_release(t);
  }
  return aligned_alloc(align, (bytes + align - 1) / align * align);
}
static void r_free(void* user, void* p, size_t bytes, size_t align, void* stream) {
  (void)user; (void)bytes; (void)align; (void)stream;
  free(p);
}

static void test_pool_whose_upstream_calls_back(void** state) {
  (void)state;
  reentrant r = {NULL, 0, 0, 0};
  shapeml_memory_resource vt = {sizeof vt, &r, r_alloc, r_free, NULL, NULL};
  shapeml_memory *up = NULL, *pool = NULL, *stats = NULL;
  assert_null(shapeml_memory_create_from_resource(&vt, &up));
  assert_null(shapeml_memory_create_pool(up, 0, &pool));
  assert_null(shapeml_memory_create_statistics_adaptor(pool, &stats));
  r.pool = pool; /* the upstream reads the pool's statistics and allocates from it */
  int64_t n = 1000;
  shapeml_tensor* t = NULL;
  assert_null(shapeml_tensor_create(stats, SHAPEML_DTYPE_F32, 1, &n, &t)); /* the pool grows: its upstream is called */
  assert_true(r.calls >= 1);
  assert_int_equal(r.stats_ok, r.calls);
  assert_int_equal(r.nested_refused, r.calls);
  shapeml_memory_statistics st = SHAPEML_MEMORY_STATISTICS_INIT;
  assert_null(shapeml_memory_get_statistics(pool, &st));
  assert_int_equal(st.failed_allocation_count, r.calls); /* the refused nested allocations are counted */
  shapeml_tensor_release(t);
  r.pool = NULL;
  shapeml_memory_release(stats);
  shapeml_memory_release(pool);
  shapeml_memory_release(up);
}

static int log_lines;
static void on_log(void* user, const char* line) {
  (void)user;
  assert_non_null(line);
  log_lines++;
}

static void test_logging_adaptor(void** state) {
  (void)state;
  shapeml_memory* m = NULL;
  expect_code(shapeml_memory_create_logging_adaptor(NULL, NULL, NULL, &m), SHAPEML_STATUS_INVALID_ARGUMENT, "callback");
  assert_null(shapeml_memory_create_logging_adaptor(NULL, on_log, NULL, &m));
  int64_t n = 4;
  shapeml_tensor* t = NULL;
  log_lines = 0;
  assert_null(shapeml_tensor_create(m, SHAPEML_DTYPE_I32, 1, &n, &t));
  shapeml_tensor_release(t);
  assert_true(log_lines >= 2);
  shapeml_memory_release(m);
}

/* ---- tensors ---- */

static void test_tensor_basics(void** state) {
  (void)state;
  int64_t shape[3] = {2, 3, 4};
  shapeml_tensor* t = NULL;
  assert_null(shapeml_tensor_create(NULL, SHAPEML_DTYPE_I32, 3, shape, &t));
  assert_int_equal(shapeml_tensor_dtype(t), SHAPEML_DTYPE_I32);
  assert_int_equal(shapeml_tensor_rank(t), 3);
  assert_int_equal(shapeml_tensor_shape(t)[2], 4);
  assert_int_equal(shapeml_tensor_byte_size(t), 96);
  const int32_t* d = shapeml_tensor_data(t);
  for (int i = 0; i < 24; ++i) assert_int_equal(d[i], 0);
  const DLTensor* dl = shapeml_tensor_dltensor(t);
  assert_int_equal(dl->ndim, 3);
  assert_int_equal(dl->device.device_type, kDLCPU);
  assert_int_equal(dl->dtype.code, kDLInt);
  assert_int_equal(dl->dtype.bits, 32);
  shapeml_tensor_retain(t);
  shapeml_tensor_release(t);
  shapeml_tensor_release(t);
  shapeml_tensor_release(NULL);
  assert_int_equal(shapeml_tensor_rank(NULL), 0);
  assert_null(shapeml_tensor_data(NULL));
}

static void test_tensor_bad_arguments(void** state) {
  (void)state;
  int64_t shape[1] = {4};
  shapeml_tensor* t = (shapeml_tensor*)0x1;
  expect_code(shapeml_tensor_create(NULL, 42, 1, shape, &t), SHAPEML_STATUS_INVALID_ARGUMENT, "dtype");
  assert_null(t);
  expect_code(shapeml_tensor_create(NULL, SHAPEML_DTYPE_F32, 1, NULL, &t), SHAPEML_STATUS_INVALID_ARGUMENT, "shape");
  int64_t negative = -3;
  shapeml_status* st = shapeml_tensor_create(NULL, SHAPEML_DTYPE_F32, 1, &negative, &t);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
  float v[3] = {1, 2, 3};
  st = shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, shape, v, sizeof v, &t); /* 12 bytes for 4 floats */
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
  expect_code(shapeml_tensor_create(NULL, SHAPEML_DTYPE_F32, 1, shape, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "out");
}

static void test_dlpack_round_trips(void** state) {
  (void)state;
  float v[4] = {1, 2, 3, 4};
  shapeml_tensor* t = f32_vector(v, 4);
  DLManagedTensor* legacy = NULL;
  assert_null(shapeml_tensor_export_dlpack(t, &legacy));
  assert_ptr_equal(legacy->dl_tensor.data, shapeml_tensor_data(t)); /* zero copy */
  shapeml_tensor* back = NULL;
  assert_null(shapeml_tensor_import_dlpack(legacy, &back));
  assert_ptr_equal(shapeml_tensor_data(back), shapeml_tensor_data(t));
  shapeml_tensor_release(back); /* runs the deleter, which drops the export's reference */
  DLManagedTensorVersioned* ver = NULL;
  assert_null(shapeml_tensor_export_dlpack_versioned(t, &ver));
  assert_int_equal(ver->version.major, 1);
  shapeml_tensor_release(t); /* the export keeps the data alive */
  assert_float_equal(((float*)ver->dl_tensor.data)[3], 4.0f, 0);
  assert_null(shapeml_tensor_import_dlpack_versioned(ver, &back));
  assert_float_equal(((float*)shapeml_tensor_data(back))[0], 1.0f, 0);
  shapeml_tensor_release(back);
  expect_code(shapeml_tensor_import_dlpack(NULL, &back), SHAPEML_STATUS_INVALID_ARGUMENT, "managed");
}

static int foreign_deleted;
static void foreign_deleter(DLManagedTensorVersioned* self) { (void)self; foreign_deleted++; }

static void test_dlpack_rejects_foreign_major_version(void** state) {
  (void)state;
  float data[2] = {0, 0};
  int64_t n = 2;
  DLManagedTensorVersioned m;
  memset(&m, 0, sizeof m);
  m.version.major = 2;
  m.deleter = foreign_deleter;
  m.dl_tensor.data = data;
  m.dl_tensor.ndim = 1;
  m.dl_tensor.shape = &n;
  m.dl_tensor.dtype.code = kDLFloat;
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.device.device_type = kDLCPU;
  shapeml_tensor* t = NULL;
  foreign_deleted = 0;
  shapeml_status* st = shapeml_tensor_import_dlpack_versioned(&m, &t);
  assert_non_null(st);
  shapeml_status_free(st);
  assert_null(t);
  assert_int_equal(foreign_deleted, 0); /* a failed import takes nothing */
}

static void test_npy_round_trip_and_errors(void** state) {
  (void)state;
  float v[4] = {0.5f, -1.0f, 2.25f, 3.0f};
  shapeml_tensor* t = f32_vector(v, 4);
  char path[] = "/tmp/shapeml_capi_npyXXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_null(shapeml_tensor_save_npy(t, path));
  shapeml_tensor* back = NULL;
  assert_null(shapeml_tensor_load_npy(path, NULL, &back));
  assert_int_equal(shapeml_tensor_rank(back), 1);
  assert_memory_equal(shapeml_tensor_data(back), v, sizeof v);
  /* Truncate the file: a clean error naming the file. */
  FILE* f = fopen(path, "r+b");
  assert_non_null(f);
  assert_int_equal(ftruncate(fileno(f), 70), 0);
  fclose(f);
  shapeml_tensor* bad = NULL;
  shapeml_status* st = shapeml_tensor_load_npy(path, NULL, &bad);
  assert_non_null(st);
  assert_non_null(strstr(shapeml_status_get_message(st), path));
  shapeml_status_free(st);
  assert_null(bad);
  remove(path);
  expect_code(shapeml_tensor_load_npy("/nonexistent/x.npy", NULL, &bad), SHAPEML_STATUS_NOT_FOUND, "/nonexistent/x.npy");
  shapeml_npz* z = NULL;
  expect_code(shapeml_npz_load("/nonexistent/x.npz", NULL, &z), SHAPEML_STATUS_NOT_FOUND, "x.npz");
  assert_int_equal(shapeml_npz_count(NULL), 0);
  assert_null(shapeml_npz_name(NULL, 0));
  shapeml_npz_release(NULL);
  shapeml_tensor_release(back);
  shapeml_tensor_release(t);
}

/* ---- modules ---- */

static void test_module_load_lookup_call(void** state) {
  (void)state;
  shapeml_module* m = NULL;
  assert_null(shapeml_module_load(TEST_MODULE_PATH, NULL, &m));
  assert_true(shapeml_module_entry_count(m) >= 2);
  assert_string_equal(shapeml_module_entry_name(m, 0), "add");
  assert_null(shapeml_module_entry_name(m, 1000));
  size_t nin = 0, nout = 0;
  assert_null(shapeml_module_lookup(m, "add", &nin, &nout));
  assert_int_equal(nin, 2);
  assert_int_equal(nout, 1);
  expect_code(shapeml_module_lookup(m, "nope", &nin, &nout), SHAPEML_STATUS_NOT_FOUND, "add");
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
  shapeml_tensor* in[2] = {f32_vector(a, 4), f32_vector(b, 4)};
  shapeml_tensor* out[1] = {NULL};
  assert_null(shapeml_module_call(m, "add", in, 2, out, 1));
  const float* r = shapeml_tensor_data(out[0]);
  for (int i = 0; i < 4; ++i) assert_float_equal(r[i], a[i] + b[i], 0);
  shapeml_tensor_release(out[0]);
  /* Mismatched shapes: N is bound to 4 by x, y has 3 elements. */
  shapeml_tensor* short_y = f32_vector(b, 3);
  shapeml_tensor* bad_in[2] = {in[0], short_y};
  shapeml_status* st = shapeml_module_call(m, "add", bad_in, 2, out, 1);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_null(out[0]);
  shapeml_status_free(st);
  expect_code(shapeml_module_call(m, "add", in, 1, out, 1), SHAPEML_STATUS_INVALID_ARGUMENT, NULL);
  shapeml_tensor* two_out[2] = {NULL, NULL};
  expect_code(shapeml_module_call(m, "add", in, 2, two_out, 2), SHAPEML_STATUS_INVALID_ARGUMENT, "num_outputs");
  assert_null(two_out[0]);
  assert_null(two_out[1]);
  expect_code(shapeml_module_call(NULL, "add", in, 2, out, 1), SHAPEML_STATUS_INVALID_ARGUMENT, "module");
  shapeml_tensor_release(short_y);
  shapeml_tensor_release(in[0]);
  shapeml_tensor_release(in[1]);
  shapeml_module_retain(m);
  shapeml_module_release(m);
  shapeml_module_release(m);
  shapeml_module_release(NULL);
}

static void test_module_load_errors(void** state) {
  (void)state;
  shapeml_module* m = NULL;
  shapeml_status* st = shapeml_module_load("/nonexistent/libx.so", NULL, &m);
  assert_non_null(st);
  assert_non_null(strstr(shapeml_status_get_message(st), "/nonexistent/libx.so"));
  shapeml_status_free(st);
  st = shapeml_module_load(TEST_NOT_A_MODULE_PATH, NULL, &m); /* a shared object, but no manifest */
  assert_non_null(st);
  assert_non_null(strstr(shapeml_status_get_message(st), "not a shapeml module"));
  shapeml_status_free(st);
  assert_null(m);
  expect_code(shapeml_module_load(NULL, NULL, &m), SHAPEML_STATUS_INVALID_ARGUMENT, "path");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_user_resource_in_c),
      cmocka_unit_test(test_statistics_and_pool),
      cmocka_unit_test(test_pool_whose_upstream_calls_back),
      cmocka_unit_test(test_logging_adaptor),
      cmocka_unit_test(test_tensor_basics),
      cmocka_unit_test(test_tensor_bad_arguments),
      cmocka_unit_test(test_dlpack_round_trips),
      cmocka_unit_test(test_dlpack_rejects_foreign_major_version),
      cmocka_unit_test(test_npy_round_trip_and_errors),
      cmocka_unit_test(test_module_load_lookup_call),
      cmocka_unit_test(test_module_load_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
