/* Per-context default streams and the stream ordering of device tensors
 * (include/shapeml.h "Devices"; docs/design/cuda-plugin.md "Streams"),
 * without a GPU: the fake CUDA plugin (tests/runtime/fake_cuda_plugin.c)
 * hands out distinct stream handles and logs every stream operation, and
 * these tests read the log. The same behaviour on the H200 with real
 * kernels: tests/gpu/context_streams_gpu_test.cpp. Built twice: against
 * libshapeml.so (every test) and, with RUNTIME_ONLY, against
 * libshapeml_runtime.so (the tests that need no compiler). */
#define SHAPEML_UNSTABLE_API
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shapeml.h"

static const char* (*fake_log)(void);
static void (*fake_clear_log)(void);
static void (*fake_set_execute_ok)(int);
static int (*fake_stream_no)(void*);
static void* (*fake_make_stream)(void);

#ifndef RUNTIME_ONLY
static const char kSource[] =
    "(module twice (func twice (dims N) (params (x (tensor f32 (N) (cuda 0)))) (returns (tensor f32 (N) (cuda 0)))"
    " (return (add x x))))";
#endif

/* Loads the fake plugin through the runtime, then finds its test hooks. */
static void load_fake(void) {
  if (fake_log) return;
  int32_t n = 0;
  assert_null(shapeml_device_count(kDLCUDA, &n));
  assert_int_equal(n, 1);
  void* h = dlopen(FAKE_CUDA_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(h);
  fake_log = (const char* (*)(void))dlsym(h, "fake_cuda_log");
  fake_clear_log = (void (*)(void))dlsym(h, "fake_cuda_clear_log");
  fake_set_execute_ok = (void (*)(int))dlsym(h, "fake_cuda_set_execute_ok");
  fake_stream_no = (int (*)(void*))dlsym(h, "fake_cuda_stream_no");
  fake_make_stream = (void* (*)(void))dlsym(h, "fake_cuda_make_stream");
  assert_non_null(fake_log);
  fake_set_execute_ok(1);
}

/* Whether the log has `a` and, after it, `b` (NULL: just `a`). */
static int logged_in_order(const char* a, const char* b) {
  const char* p = strstr(fake_log(), a);
  if (!p) return 0;
  return !b || strstr(p + strlen(a), b) != NULL;
}

static void event(char* buf, size_t n, const char* what, void* s, void* t) {
  if (t) snprintf(buf, n, "%s S%d<-S%d;", what, fake_stream_no(s), fake_stream_no(t));
  else snprintf(buf, n, "%s S%d;", what, fake_stream_no(s));
}

static shapeml_tensor* upload(shapeml_memory* mem) {
  float v[4] = {1, 2, 3, 4};
  int64_t n = 4;
  shapeml_tensor *x = NULL, *dx = NULL;
  assert_null(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &n, v, sizeof v, &x));
  assert_null(shapeml_tensor_copy_to_device(x, mem, NULL, &dx));
  shapeml_tensor_release(x);
  return dx;
}

#ifndef RUNTIME_ONLY
static shapeml_module* compile(shapeml_context* c) {
  shapeml_module* m = NULL;
  shapeml_status* st = shapeml_module_compile(c, "twice", kSource, sizeof kSource - 1, NULL, &m);
  if (st) fail_msg("%s", shapeml_status_get_message(st));
  return m;
}

static void each_context_has_its_own_stream(void** state) {
  (void)state;
  load_fake();
  shapeml_context *a = NULL, *b = NULL;
  assert_null(shapeml_context_create(NULL, &a));
  assert_null(shapeml_context_create(NULL, &b));
  void *sa = NULL, *sa2 = NULL, *sb = NULL, *dflt = NULL;
  assert_null(shapeml_unstable_context_default_stream(a, 0, &sa));
  assert_null(shapeml_unstable_context_default_stream(a, 0, &sa2));
  assert_null(shapeml_unstable_context_default_stream(b, 0, &sb));
  assert_null(shapeml_device_default_stream(0, &dflt));
  assert_non_null(sa);
  assert_ptr_equal(sa, sa2);  /* made once */
  assert_ptr_not_equal(sa, sb);
  assert_ptr_not_equal(sa, dflt);
  assert_ptr_not_equal(sb, dflt);
  /* Errors name the argument or the device. */
  void* s = NULL;
  shapeml_status* st = shapeml_unstable_context_default_stream(NULL, 0, &s);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(shapeml_status_get_message(st), "context"));
  shapeml_status_free(st);
  st = shapeml_unstable_context_default_stream(a, 7, &s);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(shapeml_status_get_message(st), "cuda:7"));
  assert_null(s);
  shapeml_status_free(st);
  /* A context's streams go with it (nothing else holds them here). */
  fake_clear_log();
  char ev[64];
  event(ev, sizeof ev, "destroy", sa, NULL);
  shapeml_context_release(a);
  assert_true(logged_in_order(ev, NULL));
  shapeml_context_release(b);
}

static void calls_run_on_their_context_stream_and_wait_across_contexts(void** state) {
  (void)state;
  load_fake();
  shapeml_memory* mem = NULL;
  assert_null(shapeml_memory_create_cuda_async(0, 0, &mem));
  shapeml_tensor* x = upload(mem);  /* complete: nothing to wait for */
  shapeml_context *a = NULL, *b = NULL;
  assert_null(shapeml_context_create(NULL, &a));
  assert_null(shapeml_context_create(NULL, &b));
  void *sa = NULL, *sb = NULL, *dflt = NULL;
  assert_null(shapeml_unstable_context_default_stream(a, 0, &sa));
  assert_null(shapeml_unstable_context_default_stream(b, 0, &sb));
  assert_null(shapeml_device_default_stream(0, &dflt));
  shapeml_module *ma = compile(a), *mb = compile(b);
  char e1[64], e2[64];

  /* A's call: output allocated on A's stream, plan on A's stream, no wait. */
  fake_clear_log();
  shapeml_tensor* ya = NULL;
  assert_null(shapeml_module_call(ma, "twice", &x, 1, &ya, 1));
  event(e1, sizeof e1, "malloc", sa, NULL);
  event(e2, sizeof e2, "execute", sa, NULL);
  assert_true(logged_in_order(e1, e2));
  assert_null(strstr(fake_log(), "wait"));
  /* A second call of A on its own output: same stream, still no wait. */
  shapeml_tensor* yaa = NULL;
  assert_null(shapeml_module_call(ma, "twice", &ya, 1, &yaa, 1));
  assert_null(strstr(fake_log(), "wait"));

  /* B's call on A's output: B's stream waits for A's, then runs. */
  fake_clear_log();
  shapeml_tensor* yb = NULL;
  assert_null(shapeml_module_call(mb, "twice", &ya, 1, &yb, 1));
  event(e1, sizeof e1, "wait", sb, sa);
  event(e2, sizeof e2, "execute", sb, NULL);
  assert_true(logged_in_order(e1, e2));

  /* The DLPack producer's handshake: another library's stream (here A's)
   * waits for the work computing B's output; nothing for a host tensor. */
  fake_clear_log();
  assert_null(shapeml_unstable_stream_wait_tensor(sa, yb));
  event(e1, sizeof e1, "wait", sa, sb);
  assert_true(logged_in_order(e1, NULL));
  float hv[2] = {1, 2};
  int64_t hn = 2;
  shapeml_tensor* ht = NULL;
  assert_null(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &hn, hv, sizeof hv, &ht));
  fake_clear_log();
  assert_null(shapeml_unstable_stream_wait_tensor(sa, ht));
  assert_null(strstr(fake_log(), "wait"));
  shapeml_tensor_release(ht);
  shapeml_status* st = shapeml_unstable_stream_wait_tensor(sa, NULL);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(shapeml_status_get_message(st), "tensor"));
  shapeml_status_free(st);

  /* A copy of B's output with no stream runs on B's stream. */
  fake_clear_log();
  shapeml_tensor* host = NULL;
  assert_null(shapeml_tensor_copy_to_host(yb, NULL, NULL, &host));
  event(e1, sizeof e1, "copy", sb, NULL);
  assert_true(logged_in_order(e1, NULL));
  shapeml_tensor_release(host);

  /* Contexts and modules go first; the streams stay while tensors computed
   * on them, or read on them, live. Releasing A's output, which B's stream
   * read: A's stream waits for B's before the memory is freed on it. */
  shapeml_module_release(ma);
  shapeml_module_release(mb);
  shapeml_context_release(a);
  shapeml_context_release(b);
  fake_clear_log();
  shapeml_tensor_release(yaa);
  shapeml_tensor_release(ya);
  event(e1, sizeof e1, "wait", sa, sb);
  event(e2, sizeof e2, "free", sa, NULL);
  assert_true(logged_in_order(e1, e2));
  shapeml_tensor_release(yb);  /* the last holder of B's streams */
  char e3[64];
  event(e1, sizeof e1, "free", sb, NULL);
  event(e2, sizeof e2, "destroy", sb, NULL);
  assert_true(logged_in_order(e1, e2));
  event(e3, sizeof e3, "destroy", sa, NULL);
  assert_null(strstr(fake_log(), e3));  /* x was read on A's stream: it still holds it */

  /* The uploaded input lives on the device's default stream and was read on
   * A's stream: its release waits for A's, frees, and then A's streams have
   * no holder left. */
  fake_clear_log();
  shapeml_tensor_release(x);
  event(e1, sizeof e1, "wait", dflt, sa);
  event(e2, sizeof e2, "free", dflt, NULL);
  assert_true(logged_in_order(e1, e2));
  assert_true(logged_in_order(e2, e3));
  shapeml_memory_release(mem);
}

#endif  /* RUNTIME_ONLY */

static void a_loaded_or_context_free_call_uses_the_device_stream(void** state) {
  (void)state;
  load_fake();
  shapeml_memory* mem = NULL;
  assert_null(shapeml_memory_create_cuda_async(0, 0, &mem));
  shapeml_tensor* x = upload(mem);
  shapeml_module* m = NULL;
  assert_null(shapeml_module_load(FAKE_GPU_MODULE, NULL, &m));
  void* dflt = NULL;
  assert_null(shapeml_device_default_stream(0, &dflt));
  fake_clear_log();
  shapeml_tensor* y = NULL;
  assert_null(shapeml_module_call(m, "scale", &x, 1, &y, 1));
  char e[64];
  event(e, sizeof e, "execute", dflt, NULL);
  assert_true(logged_in_order(e, NULL));
  assert_null(strstr(fake_log(), "wait"));
  /* The DLPack producer's handshake on the output: another library's
   * stream waits for the device stream; the device stream itself needs
   * nothing; errors name the argument. */
  void* other = fake_make_stream();
  assert_non_null(other);
  fake_clear_log();
  assert_null(shapeml_unstable_stream_wait_tensor(dflt, y));
  assert_null(strstr(fake_log(), "wait"));
  assert_null(shapeml_unstable_stream_wait_tensor(other, y));
  event(e, sizeof e, "wait", other, dflt);
  assert_true(logged_in_order(e, NULL));
  shapeml_status* st = shapeml_unstable_stream_wait_tensor(other, NULL);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
  shapeml_tensor_release(y);
  shapeml_module_release(m);
  shapeml_tensor_release(x);
  shapeml_memory_release(mem);
}

int main(void) {
  /* Before anything asks for a CUDA device: the runtime loads this plugin. */
  setenv("SHAPEML_CUDA_PLUGIN", FAKE_CUDA_PLUGIN, 1);
  const struct CMUnitTest tests[] = {
#ifndef RUNTIME_ONLY
      cmocka_unit_test(each_context_has_its_own_stream),
      cmocka_unit_test(calls_run_on_their_context_stream_and_wait_across_contexts),
#endif
      cmocka_unit_test(a_loaded_or_context_free_call_uses_the_device_stream),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
