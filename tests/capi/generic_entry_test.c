/* Generic entries through the C ABI (spec §3.5): a JIT module whose entry is
 * generic in its dtype T and device Dv. Introspection names the variables
 * (unstable tier) and reports them in the tensor info; a call binds them
 * from its inputs, f32 and f64 from one source, against a double loop; an
 * input outside T's dtypes is INVALID_ARGUMENT naming it; warm-up with the
 * SHAPEML_UNSTABLE_BIND_* values, and a shape variable given a dtype is
 * refused. Built against libshapeml.so only (it compiles). */
#define SHAPEML_UNSTABLE_API
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shapeml.h"

static void expect_code(shapeml_status* st, shapeml_status_code code, const char* fragment) {
  if (!st) fail_msg("expected %s containing '%s', got success", shapeml_status_code_name(code), fragment);
  if (shapeml_status_get_code(st) != code || !strstr(shapeml_status_get_message(st), fragment))
    fail_msg("expected %s containing '%s', got %s: %s", shapeml_status_code_name(code), fragment,
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

static const char kSrc[] =
    "(module generic\n"
    "  (func scale (dtypes (T f32 f64)) (devices Dv) (dims N)\n"
    "    (params (x (tensor T (N) Dv)) (k (tensor T () Dv)))\n"
    "    (returns (tensor T (N) Dv))\n"
    "    (return (add (mul x k) (dim_value N T)))))\n";

static void test_generic_entry(void** state) {
  (void)state;
  shapeml_context* ctx = NULL;
  ok(shapeml_context_create(NULL, &ctx));
  shapeml_module* m = NULL;
  ok(shapeml_module_compile(ctx, "generic.sml", kSrc, strlen(kSrc), NULL, &m));
  shapeml_entry* e = NULL;
  ok(shapeml_module_get_entry(m, "scale", &e));

  /* The variables, in order: T (f32 f64), then Dv. */
  assert_int_equal(shapeml_unstable_entry_type_variable_count(e), 2);
  shapeml_unstable_type_variable v = SHAPEML_UNSTABLE_TYPE_VARIABLE_INIT;
  ok(shapeml_unstable_entry_get_type_variable(e, 0, &v));
  assert_string_equal(v.name, "T");
  assert_int_equal(v.is_device, 0);
  assert_int_equal(v.dtypes, (1u << SHAPEML_DTYPE_F32) | (1u << SHAPEML_DTYPE_F64));
  ok(shapeml_unstable_entry_get_type_variable(e, 1, &v));
  assert_string_equal(v.name, "Dv");
  assert_int_equal(v.is_device, 1);
  assert_int_equal(v.dtypes, 0);
  expect_code(shapeml_unstable_entry_get_type_variable(e, 2, &v), SHAPEML_STATUS_INVALID_ARGUMENT, "out of range");
  expect_code(shapeml_unstable_entry_get_type_variable(NULL, 0, &v), SHAPEML_STATUS_INVALID_ARGUMENT, "entry");
  assert_int_equal(shapeml_unstable_entry_type_variable_count(NULL), 0);

  shapeml_tensor_info info = SHAPEML_TENSOR_INFO_INIT;
  ok(shapeml_entry_get_tensor_info(e, SHAPEML_IO_PARAM, 0, &info));
  assert_int_equal(info.dtype, SHAPEML_DTYPE_VARIABLE);
  assert_int_equal(info.device_type, -1);
  assert_string_equal(info.type, "(tensor T (N) Dv)");

  /* f32 and f64 calls of the one source, against a double loop. */
  const int64_t n = 5;
  float xf[5] = {1.5f, -2, 0.25f, 4, -0.5f}, kf = 3;
  double xd[5] = {1.5, -2, 0.25, 4, -0.5}, kd = 3;
  shapeml_tensor *tx = NULL, *tk = NULL, *out = NULL;
  ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &n, xf, sizeof xf, &tx));
  ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 0, NULL, &kf, sizeof kf, &tk));
  shapeml_tensor* in[2] = {tx, tk};
  ok(shapeml_entry_call(e, in, 2, &out, 1, NULL));
  assert_int_equal(shapeml_tensor_dtype(out), SHAPEML_DTYPE_F32);
  for (int i = 0; i < 5; ++i) assert_float_equal(((const float*)shapeml_tensor_data(out))[i], (float)(xd[i] * kd + 5), 0);
  shapeml_tensor_release(out);
  shapeml_tensor_release(tx);
  shapeml_tensor_release(tk);
  ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F64, 1, &n, xd, sizeof xd, &tx));
  ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F64, 0, NULL, &kd, sizeof kd, &tk));
  in[0] = tx, in[1] = tk;
  ok(shapeml_entry_call(e, in, 2, &out, 1, NULL));
  assert_int_equal(shapeml_tensor_dtype(out), SHAPEML_DTYPE_F64);
  for (int i = 0; i < 5; ++i) assert_float_equal(((const double*)shapeml_tensor_data(out))[i], xd[i] * kd + 5, 0);
  shapeml_tensor_release(out);
  out = NULL;
  /* A stream: the ABI cannot refuse it before the binding (Dv may be a CUDA
     device); the instance the host inputs bind is a host entry, so the call
     is refused then, and nothing is written. */
  shapeml_call_options co = SHAPEML_CALL_OPTIONS_INIT;
  co.stream = (void*)&co; /* never dereferenced */
  expect_code(shapeml_entry_call(e, in, 2, &out, 1, &co), SHAPEML_STATUS_INVALID_ARGUMENT, "a stream is for device entries");
  assert_null(out);
  shapeml_tensor_release(tk);

  /* k in f32 with x in f64: T is f64 (from x), so k is refused by name. */
  ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 0, NULL, &kf, sizeof kf, &tk));
  in[1] = tk;
  expect_code(shapeml_entry_call(e, in, 2, &out, 1, NULL), SHAPEML_STATUS_INVALID_ARGUMENT, "input 1 (`k`) has dtype f32, expected f64");
  shapeml_tensor_release(tk);
  shapeml_tensor_release(tx);
  /* bf16 is not among T's dtypes. */
  uint16_t xb[5] = {0x3f80, 0, 0, 0, 0}, kb = 0x3f80;
  ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_BF16, 1, &n, xb, sizeof xb, &tx));
  ok(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_BF16, 0, NULL, &kb, sizeof kb, &tk));
  in[0] = tx, in[1] = tk;
  expect_code(shapeml_entry_call(e, in, 2, &out, 1, NULL), SHAPEML_STATUS_INVALID_ARGUMENT,
              "input 0 (`x`) has dtype bf16, which dtype variable T");
  shapeml_tensor_release(tk);
  shapeml_tensor_release(tx);

  /* Warm-up names every variable; a dtype where a size belongs is refused. */
  const char* names[3] = {"T", "Dv", "N"};
  int64_t values[3] = {SHAPEML_UNSTABLE_BIND_DTYPE(SHAPEML_DTYPE_F64), SHAPEML_UNSTABLE_BIND_HOST, 7};
  ok(shapeml_entry_specialize(e, names, values, 3));
  int64_t bad[3] = {SHAPEML_UNSTABLE_BIND_DTYPE(SHAPEML_DTYPE_I32), SHAPEML_UNSTABLE_BIND_HOST, 7};
  expect_code(shapeml_entry_specialize(e, names, bad, 3), SHAPEML_STATUS_INVALID_ARGUMENT, "dtype variable T ranges over f32 f64, not i32");
  int64_t swapped[3] = {SHAPEML_UNSTABLE_BIND_DTYPE(SHAPEML_DTYPE_F32), SHAPEML_UNSTABLE_BIND_HOST, SHAPEML_UNSTABLE_BIND_DTYPE(SHAPEML_DTYPE_F32)};
  expect_code(shapeml_entry_specialize(e, names, swapped, 3), SHAPEML_STATUS_INVALID_ARGUMENT, "shape variables are >= 1");

  shapeml_module_release(m);
  shapeml_context_release(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_generic_entry)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
