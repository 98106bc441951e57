/* The C ABI as a C user sees it: cmocka, plain C11, only <shapeml.h>. */
#define _GNU_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#define SHAPEML_UNSTABLE_API
#include "shapeml.h"

static const char* kGood =
    "(module m (func f (dims B D F)\n"
    "  (params (x (tensor f32 (B D) host)) (w (tensor f32 (D F) host)))\n"
    "  (returns (tensor f32 (B F) host))\n"
    "  (return (matmul x w))))\n";

static const char* kBad =
    "(module m (func f (dims B D F)\n"
    "  (params (x (tensor f32 (B D) host)) (w (tensor f32 (F D) host)))\n"
    "  (returns (tensor f32 (B D) host))\n"
    "  (return (matmul x w))))\n";

static shapeml_context* new_context(void) {
  shapeml_context* ctx = NULL;
  shapeml_status* st = shapeml_context_create(NULL, &ctx);
  assert_null(st);
  assert_non_null(ctx);
  return ctx;
}

static void test_version(void** state) {
  (void)state;
  char expect[32];
  snprintf(expect, sizeof expect, "%d.%d.%d", SHAPEML_VERSION_MAJOR, SHAPEML_VERSION_MINOR, SHAPEML_VERSION_PATCH);
  assert_string_equal(shapeml_version(), expect);
  assert_int_equal(shapeml_version_number(), SHAPEML_VERSION_MAJOR * 10000 + SHAPEML_VERSION_MINOR * 100 + SHAPEML_VERSION_PATCH);
}

static void test_status_null_is_ok(void** state) {
  (void)state;
  assert_int_equal(shapeml_status_get_code(NULL), SHAPEML_STATUS_OK);
  assert_string_equal(shapeml_status_get_message(NULL), "");
  shapeml_status_free(NULL);
  assert_string_equal(shapeml_status_code_name(SHAPEML_STATUS_INVALID_ARGUMENT), "INVALID_ARGUMENT");
  assert_string_equal(shapeml_status_code_name(12345), "UNKNOWN");
}

static void test_context_lifecycle(void** state) {
  (void)state;
  shapeml_context_options opts = SHAPEML_CONTEXT_OPTIONS_INIT;
  opts.obligation_timeout_ms = 500;
  shapeml_context* ctx = NULL;
  assert_null(shapeml_context_create(&opts, &ctx));
  shapeml_context_retain(ctx);
  shapeml_context_release(ctx);
  shapeml_context_release(ctx);
  shapeml_context_release(NULL);
  shapeml_context_retain(NULL);
}

static void test_context_null_out(void** state) {
  (void)state;
  shapeml_status* st = shapeml_context_create(NULL, NULL);
  assert_non_null(st);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(shapeml_status_get_message(st), "out"));
  shapeml_status_free(st);
}

static void test_context_bad_struct_size(void** state) {
  (void)state;
  shapeml_context_options opts = SHAPEML_CONTEXT_OPTIONS_INIT;
  opts.struct_size = 1;
  shapeml_context* ctx = (shapeml_context*)0x1;
  shapeml_status* st = shapeml_context_create(&opts, &ctx);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_null(ctx);
  shapeml_status_free(st);
}

static void test_context_old_struct_size(void** state) {
  /* A caller compiled against an older header passes a shorter struct: the
     library reads only what it was given and defaults the rest. */
  (void)state;
  shapeml_context_options opts = SHAPEML_CONTEXT_OPTIONS_INIT;
  opts.struct_size = sizeof(size_t);
  shapeml_context* ctx = NULL;
  assert_null(shapeml_context_create(&opts, &ctx));
  shapeml_context_release(ctx);
}

static void test_check_good_program(void** state) {
  (void)state;
  shapeml_context* ctx = new_context();
  shapeml_check_result* r = NULL;
  assert_null(shapeml_check_source(ctx, "good.sml", kGood, strlen(kGood), &r));
  assert_int_equal(shapeml_check_result_passed(r), 1);
  assert_int_equal(shapeml_check_result_diagnostic_count(r), 0);
  const char* json = NULL;
  assert_null(shapeml_check_result_render(r, SHAPEML_FORMAT_JSON, &json));
  assert_string_equal(json, "[]");
  shapeml_unstable_check_stats stats = {sizeof stats, 0, 0, 0, 0, 0};
  assert_null(shapeml_unstable_check_result_stats(r, &stats));
  assert_true(stats.obligations >= 1);
  shapeml_check_result_release(r);
  shapeml_context_release(ctx);
}

static void test_check_bad_program_diagnostics(void** state) {
  (void)state;
  shapeml_context* ctx = new_context();
  shapeml_check_result* r = NULL;
  assert_null(shapeml_check_source(ctx, "bad.sml", kBad, strlen(kBad), &r));
  assert_int_equal(shapeml_check_result_passed(r), 0);
  assert_int_equal(shapeml_check_result_diagnostic_count(r), 1);
  shapeml_diagnostic d = SHAPEML_DIAGNOSTIC_INIT;
  assert_null(shapeml_check_result_get_diagnostic(r, 0, &d));
  assert_string_equal(d.code, "E0301");
  assert_int_equal(d.severity, SHAPEML_SEVERITY_ERROR);
  assert_string_equal(d.file, "bad.sml");
  assert_int_equal(d.line, 4);
  assert_int_equal(d.column, 21); /* the caret is on the right operand `w` */
  assert_true(d.length > 0);
  assert_non_null(strstr(d.actual, "(tensor f32 (F D) host)"));
  /* The counterexample assigns D and F different values. */
  assert_true(d.counterexample_count == 3);
  int64_t dv = -1, fv = -1;
  for (size_t k = 0; k < d.counterexample_count; ++k) {
    const char* name = NULL;
    int64_t value = 0;
    assert_null(shapeml_check_result_get_counterexample(r, 0, k, &name, &value));
    assert_true(value >= 1);
    if (strcmp(name, "D") == 0) dv = value;
    if (strcmp(name, "F") == 0) fv = value;
  }
  assert_true(dv >= 1 && fv >= 1 && dv != fv);
  const char* text = NULL;
  assert_null(shapeml_check_result_render(r, SHAPEML_FORMAT_TEXT, &text));
  assert_non_null(strstr(text, "error[E0301]"));
  assert_non_null(strstr(text, "--> bad.sml:4:21"));
  assert_non_null(strstr(text, "^"));
  shapeml_check_result_release(r);
  shapeml_context_release(ctx);
}

static void test_diagnostic_struct_size_is_respected(void** state) {
  /* An older caller's shorter struct is filled only up to its size. */
  (void)state;
  shapeml_context* ctx = new_context();
  shapeml_check_result* r = NULL;
  assert_null(shapeml_check_source(ctx, "bad.sml", kBad, strlen(kBad), &r));
  struct {
    shapeml_diagnostic d;
    char canary[16];
  } buf;
  memset(&buf, 0xab, sizeof buf);
  buf.d.struct_size = offsetof(shapeml_diagnostic, severity);
  assert_null(shapeml_check_result_get_diagnostic(r, 0, &buf.d));
  assert_string_equal(buf.d.code, "E0301");
  const unsigned char* after = (const unsigned char*)&buf.d + offsetof(shapeml_diagnostic, severity);
  assert_int_equal(after[0], 0xab);
  shapeml_check_result_release(r);
  shapeml_context_release(ctx);
}

static void test_check_null_arguments(void** state) {
  (void)state;
  shapeml_context* ctx = new_context();
  shapeml_check_result* r = (shapeml_check_result*)0x1;
  shapeml_status* st = shapeml_check_source(NULL, "x", kGood, strlen(kGood), &r);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(shapeml_status_get_message(st), "context"));
  assert_null(r);
  shapeml_status_free(st);
  st = shapeml_check_source(ctx, "x", NULL, 10, &r);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
  st = shapeml_check_source(ctx, "x", kGood, strlen(kGood), NULL);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
  /* Getters on NULL results are harmless. */
  assert_int_equal(shapeml_check_result_passed(NULL), 0);
  assert_int_equal(shapeml_check_result_diagnostic_count(NULL), 0);
  shapeml_diagnostic d = SHAPEML_DIAGNOSTIC_INIT;
  st = shapeml_check_result_get_diagnostic(NULL, 0, &d);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
  shapeml_check_result_release(NULL);
  shapeml_context_release(ctx);
}

static void test_out_of_range_indices(void** state) {
  (void)state;
  shapeml_context* ctx = new_context();
  shapeml_check_result* r = NULL;
  assert_null(shapeml_check_source(ctx, "good.sml", kGood, strlen(kGood), &r));
  shapeml_diagnostic d = SHAPEML_DIAGNOSTIC_INIT;
  shapeml_status* st = shapeml_check_result_get_diagnostic(r, 0, &d);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(shapeml_status_get_message(st), "out of range"));
  shapeml_status_free(st);
  const char* s = NULL;
  st = shapeml_check_result_render(r, 99, &s);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
  shapeml_check_result_release(r);
  shapeml_context_release(ctx);
}

static void test_malformed_inputs_give_diagnostics(void** state) {
  (void)state;
  static const char* inputs[] = {"", "(", ")", "(module", "\xff\xfe", "(module m (func", "(module m (func f (params) (returns (tensor f32 () host)) (return 99999999999999999999999)))"};
  shapeml_context* ctx = new_context();
  for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; ++i) {
    shapeml_check_result* r = NULL;
    assert_null(shapeml_check_source(ctx, "in.sml", inputs[i], strlen(inputs[i]), &r));
    assert_int_equal(shapeml_check_result_passed(r), 0);
    assert_true(shapeml_check_result_diagnostic_count(r) >= 1);
    shapeml_diagnostic d = SHAPEML_DIAGNOSTIC_INIT;
    assert_null(shapeml_check_result_get_diagnostic(r, 0, &d));
    assert_true(d.code[0] == 'E');
    shapeml_check_result_release(r);
  }
  /* Embedded NUL bytes are input like any other, not a terminator. */
  const char nul[] = "(module m\0)";
  shapeml_check_result* r = NULL;
  assert_null(shapeml_check_source(ctx, "nul.sml", nul, sizeof nul - 1, &r));
  assert_int_equal(shapeml_check_result_passed(r), 0);
  shapeml_check_result_release(r);
  shapeml_context_release(ctx);
}

static void test_result_outlives_context(void** state) {
  (void)state;
  shapeml_context* ctx = new_context();
  shapeml_check_result* r = NULL;
  assert_null(shapeml_check_source(ctx, "bad.sml", kBad, strlen(kBad), &r));
  shapeml_context_release(ctx);
  shapeml_check_result_retain(r);
  shapeml_check_result_release(r);
  const char* note = NULL;
  assert_null(shapeml_check_result_get_note(r, 0, 0, &note));
  assert_true(strlen(note) > 0);
  shapeml_check_result_release(r);
}


/* ---- modules: JIT compile, AOT build + load (0.2) ---- */

static const char* kAddSrc =
    "(module m (func scaled_add (dims N)\n"
    "  (params (x (tensor f32 (N) host)) (y (tensor f32 (N) host)))\n"
    "  (returns (tensor f32 (N) host))\n"
    "  (return (add x (mul y 2.0)))))\n";

static void call_and_check(shapeml_module* m, int64_t n) {
  float x[8], y[8];
  for (int i = 0; i < n; ++i) {
    x[i] = (float)i;
    y[i] = 0.5f * (float)i + 1.0f;
  }
  shapeml_tensor *tx = NULL, *ty = NULL;
  assert_null(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &n, x, (size_t)n * 4, &tx));
  assert_null(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &n, y, (size_t)n * 4, &ty));
  shapeml_tensor* in[2] = {tx, ty};
  shapeml_tensor* out[1] = {NULL};
  shapeml_status* st = shapeml_module_call(m, "scaled_add", in, 2, out, 1);
  if (st) fail_msg("%s", shapeml_status_get_message(st));
  assert_int_equal(shapeml_tensor_shape(out[0])[0], n);
  const float* r = shapeml_tensor_data(out[0]);
  for (int i = 0; i < n; ++i) assert_float_equal(r[i], x[i] + 2.0f * y[i], 0);
  shapeml_tensor_release(out[0]);
  shapeml_tensor_release(tx);
  shapeml_tensor_release(ty);
}

static void test_module_compile_jit(void** state) {
  (void)state;
  shapeml_context* ctx = new_context();
  shapeml_module* m = NULL;
  shapeml_module_options opts = SHAPEML_MODULE_OPTIONS_INIT;
  assert_null(shapeml_module_compile(ctx, "add.sml", kAddSrc, strlen(kAddSrc), &opts, &m));
  assert_int_equal(shapeml_module_entry_count(m), 1);
  assert_string_equal(shapeml_module_entry_name(m, 0), "scaled_add");
  call_and_check(m, 5); /* specialized for N=5 on this call */
  call_and_check(m, 8); /* and for N=8 */
  shapeml_module_release(m);
  shapeml_context_release(ctx);
}

/* Issue 24, item 14: a binding at which the entry's dimension arithmetic
 * overflows (N^5 at N = 6209) is INVALID_ARGUMENT naming it; it was INTERNAL. */
static void test_overflowing_binding_is_invalid_argument(void** state) {
  (void)state;
  static const char* src =
      "(module m (func f (dims N) (where (>= N 2)) (params (x (tensor f32 (N) host))) (returns (tensor f32 (1) host))\n"
      "  (return (slice x :axis 0 :start (mod (* N N N N N) 2) :size 1))))\n";
  shapeml_context* ctx = new_context();
  shapeml_module* m = NULL;
  assert_null(shapeml_module_compile(ctx, "ovf.sml", src, strlen(src), NULL, &m));
  int64_t n = 6209;
  shapeml_tensor* x = NULL;
  assert_null(shapeml_tensor_create(NULL, SHAPEML_DTYPE_F32, 1, &n, &x));
  shapeml_tensor* out[1] = {NULL};
  shapeml_status* st = shapeml_module_call(m, "f", &x, 1, out, 1);
  assert_non_null(st);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(shapeml_status_get_message(st), "the binding overflows 64-bit dimension arithmetic"));
  shapeml_status_free(st);
  assert_null(out[0]);
  shapeml_tensor_release(x);
  shapeml_module_release(m);
  shapeml_context_release(ctx);
}

static void test_module_compile_reports_check_errors(void** state) {
  (void)state;
  shapeml_context* ctx = new_context();
  shapeml_module* m = (shapeml_module*)0x1;
  shapeml_status* st = shapeml_module_compile(ctx, "bad.sml", kBad, strlen(kBad), NULL, &m);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_CHECK_FAILED);
  assert_non_null(strstr(shapeml_status_get_message(st), "error[E0301]"));
  assert_non_null(strstr(shapeml_status_get_message(st), "bad.sml:4:21"));
  shapeml_status_free(st);
  assert_null(m);
  st = shapeml_module_compile(NULL, "x", kAddSrc, strlen(kAddSrc), NULL, &m);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
  shapeml_context_release(ctx);
}

static void test_module_build_and_load(void** state) {
  (void)state;
  shapeml_context* ctx = new_context();
  char dir[] = "/tmp/shapeml_capi_buildXXXXXX";
  assert_non_null(mkdtemp(dir));
  char so[256];
  snprintf(so, sizeof so, "%s/libadd.so", dir);
  shapeml_status* st = shapeml_module_build_shared_object(ctx, "add.sml", kAddSrc, strlen(kAddSrc), "scaled_add:N=5;scaled_add:N=8",
                                                          SHAPEML_TARGET_X86_64, so);
  if (st) fail_msg("%s", shapeml_status_get_message(st));
  shapeml_module* m = NULL;
  assert_null(shapeml_module_load(so, NULL, &m));
  call_and_check(m, 5);
  call_and_check(m, 8);
  /* N=6 was not built: a clear error, no JIT behind an AOT module. */
  float v[6] = {0};
  int64_t six = 6;
  shapeml_tensor* t = NULL;
  assert_null(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &six, v, sizeof v, &t));
  shapeml_tensor* in[2] = {t, t};
  shapeml_tensor* out[1] = {NULL};
  st = shapeml_module_call(m, "scaled_add", in, 2, out, 1);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_NOT_FOUND);
  assert_non_null(strstr(shapeml_status_get_message(st), "no specialization for N=6"));
  shapeml_status_free(st);
  shapeml_tensor_release(t);
  shapeml_module_release(m);
  remove(so);
  rmdir(dir);
  /* Bad binding lists and unknown entries. */
  st = shapeml_module_build_shared_object(ctx, "add.sml", kAddSrc, strlen(kAddSrc), "scaled_add:N=zero", SHAPEML_TARGET_NATIVE, so);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(shapeml_status_get_message(st), "positive integer"));
  shapeml_status_free(st);
  st = shapeml_module_build_shared_object(ctx, "add.sml", kAddSrc, strlen(kAddSrc), "nope:N=3", SHAPEML_TARGET_NATIVE, so);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_NOT_FOUND);
  shapeml_status_free(st);
  /* Empty items are mistakes, not nothing (issue 24, item 12): they were skipped. */
  const char* empty_items[] = {"scaled_add:N=4;;", "scaled_add:N=4;", ";scaled_add:N=4", "scaled_add:N=4,"};
  for (size_t i = 0; i < sizeof empty_items / sizeof *empty_items; ++i) {
    st = shapeml_module_build_shared_object(ctx, "add.sml", kAddSrc, strlen(kAddSrc), empty_items[i], SHAPEML_TARGET_NATIVE, so);
    assert_non_null(st);
    assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(shapeml_status_get_message(st), "empty"));
    shapeml_status_free(st);
  }
  shapeml_context_release(ctx);
}

static void test_npz_through_the_abi(void** state) {
  (void)state;
  shapeml_npz* z = NULL;
  shapeml_status* st = shapeml_npz_load(NPY_GOLDEN_DIR "/savez_compressed.npz", NULL, &z);
  if (st) fail_msg("%s", shapeml_status_get_message(st));
  assert_int_equal(shapeml_npz_count(z), 4);
  int have_big = 0;
  for (size_t i = 0; i < shapeml_npz_count(z); ++i) have_big |= strcmp(shapeml_npz_name(z, i), "big") == 0;
  assert_true(have_big);
  shapeml_tensor* big = NULL;
  assert_null(shapeml_npz_get(z, "big", &big));
  shapeml_npz_release(z); /* the tensor outlives the archive */
  assert_int_equal(shapeml_tensor_dtype(big), SHAPEML_DTYPE_F64);
  assert_int_equal(shapeml_tensor_shape(big)[1], 1000);
  assert_float_equal(((const double*)shapeml_tensor_data(big))[12345], 12345.0, 0);
  shapeml_tensor_release(big);
  assert_null(shapeml_npz_load(NPY_GOLDEN_DIR "/savez.npz", NULL, &z));
  shapeml_tensor* t = NULL;
  st = shapeml_npz_get(z, "missing", &t);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_NOT_FOUND);
  assert_non_null(strstr(shapeml_status_get_message(st), "big"));
  shapeml_status_free(st);
  shapeml_npz_release(z);
  st = shapeml_npz_load(NPY_GOLDEN_DIR "/truncated.npz", NULL, &z);
  assert_non_null(st);
  assert_non_null(strstr(shapeml_status_get_message(st), "truncated.npz"));
  shapeml_status_free(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_status_null_is_ok),
      cmocka_unit_test(test_context_lifecycle),
      cmocka_unit_test(test_context_null_out),
      cmocka_unit_test(test_context_bad_struct_size),
      cmocka_unit_test(test_context_old_struct_size),
      cmocka_unit_test(test_check_good_program),
      cmocka_unit_test(test_check_bad_program_diagnostics),
      cmocka_unit_test(test_diagnostic_struct_size_is_respected),
      cmocka_unit_test(test_check_null_arguments),
      cmocka_unit_test(test_out_of_range_indices),
      cmocka_unit_test(test_malformed_inputs_give_diagnostics),
      cmocka_unit_test(test_result_outlives_context),
      cmocka_unit_test(test_module_compile_jit),
      cmocka_unit_test(test_module_compile_reports_check_errors),
      cmocka_unit_test(test_overflowing_binding_is_invalid_argument),
      cmocka_unit_test(test_module_build_and_load),
      cmocka_unit_test(test_npz_through_the_abi),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
