/* Run-time errors of device calls name their context, and the plugin's spans
 * reach the runtime's trace (docs/design/observability.md), without a GPU:
 * the fake CUDA plugin (tests/runtime/fake_cuda_plugin.c) fails every plan
 * the way a cuBLAS failure in the real executor reads. */
#define SHAPEML_UNSTABLE_API
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shapeml.h"

typedef struct {
  char* data;
  size_t size;
} buffer;

static void writer(void* user, const char* data, size_t size) {
  buffer* b = user;
  b->data = realloc(b->data, b->size + size + 1);
  memcpy(b->data + b->size, data, size);
  b->size += size;
  b->data[b->size] = 0;
}

/* The event line of the first event named `name`, or NULL. */
static char* event_line(const char* json, const char* name) {
  char pat[128];
  snprintf(pat, sizeof pat, "{\"name\":\"%s\"", name);
  const char* p = strstr(json, pat);
  if (!p) return NULL;
  const char* end = strchr(p, '\n');
  size_t n = end ? (size_t)(end - p) : strlen(p);
  char* line = malloc(n + 1);
  memcpy(line, p, n);
  line[n] = 0;
  return line;
}

static void a_library_failure_in_a_device_call_reads_as_such(void** state) {
  (void)state;
  assert_null(shapeml_unstable_trace_start(NULL));
  shapeml_memory* mem = NULL;
  assert_null(shapeml_memory_create_cuda_async(0, 0, &mem));
  float v[4] = {1, 2, 3, 4};
  int64_t n = 4;
  shapeml_tensor *x = NULL, *dx = NULL;
  assert_null(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &n, v, sizeof v, &x));
  assert_null(shapeml_tensor_copy_to_device(x, mem, NULL, &dx));
  shapeml_module* m = NULL;
  assert_null(shapeml_module_load(FAKE_GPU_MODULE, NULL, &m));
  shapeml_tensor* out[1] = {NULL};
  shapeml_status* st = shapeml_module_call(m, "scale", &dx, 1, out, 1);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INTERNAL);
  /* The chain: module (name, ID), entry, what the runtime was doing, the launch, the library call. */
  assert_string_equal(shapeml_status_get_message(st),
                      "module `fakegpu` [m-00000000000000ff]: entry `scale`: executing its dispatch plan: "
                      "plan_execute: launch 0 (matmul): cublasLtMatmul failed: cublasStatus 13");
  shapeml_status_free(st);
  assert_null(out[0]);
  assert_null(shapeml_unstable_trace_stop());
  buffer b = {NULL, 0};
  assert_null(shapeml_unstable_trace_flush(writer, &b));
  /* The plugin's span, reported through the observer, carries the call's module and entry. */
  char* op = event_line(b.data, "launch 0 (matmul)");
  assert_non_null(op);
  assert_non_null(strstr(op, "\"cat\":\"gpu op\""));
  assert_non_null(strstr(op, "\"kernel\":\"matmul\""));
  assert_non_null(strstr(op, "\"module\":\"m-00000000000000ff\""));
  assert_non_null(strstr(op, "\"entry\":\"scale\""));
  char* call = event_line(b.data, "call scale");
  assert_non_null(call);
  assert_non_null(strstr(call, "\"error\":\"INTERNAL\""));
  char* copy = event_line(b.data, "copy host to device");
  assert_non_null(copy);
  assert_non_null(strstr(copy, "\"bytes\":16"));
  char* exec = event_line(b.data, "gpu plan execute");
  assert_non_null(exec);
  assert_non_null(strstr(exec, "\"module\":\"m-00000000000000ff\""));
  free(op);
  free(call);
  free(copy);
  free(exec);
  free(b.data);
  shapeml_module_release(m);
  shapeml_tensor_release(dx);
  shapeml_tensor_release(x);
  shapeml_memory_release(mem);
}

int main(void) {
  /* Before anything asks for a CUDA device: the runtime loads this plugin. */
  setenv("SHAPEML_CUDA_PLUGIN", FAKE_CUDA_PLUGIN, 1);
  const struct CMUnitTest tests[] = {cmocka_unit_test(a_library_failure_in_a_device_call_reads_as_such)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
