/* A stand-in for libshapeml_cuda.so that needs no GPU (tests/capi/
 * obs_device_error_test.c, tests/capi/context_streams_test.c): one "device"
 * whose memory is host memory (the runtime never touches device memory from
 * the host), copies are memcpy, and every plan execution fails the way a
 * cuBLAS failure inside the real executor reads, after reporting its launch
 * to the runtime's observer — unless fake_cuda_set_execute_ok(1) was called,
 * when it succeeds doing nothing. Every stream is a distinct handle, and the
 * stream operations are written to a log the tests read
 * (fake_cuda_log(): "create S1; malloc S1; execute S1; wait S2<-S1; ..."). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plugin_contract.h"

#define EXPORT __attribute__((visibility("default")))

static const shapeml_cuda_observer* g_observer;
static int g_execute_ok;
static char g_log[16384];
static char g_streams[64]; /* stream handles are &g_streams[k]: "S<k>" in the log */

static int stream_no(void* s) { return s ? (int)((char*)s - g_streams) : -1; }
static void log_op(const char* what, void* a, void* b) {
  size_t used = strlen(g_log);
  if (b) snprintf(g_log + used, sizeof g_log - used, "%s S%d<-S%d; ", what, stream_no(a), stream_no(b));
  else snprintf(g_log + used, sizeof g_log - used, "%s S%d; ", what, stream_no(a));
}
EXPORT const char* fake_cuda_log(void) { return g_log; }
EXPORT int fake_cuda_stream_no(void* s) { return stream_no(s); }
static int32_t stream_create(int32_t d, void** s, char* err, size_t n);
/* Another library's stream, for the tests. */
EXPORT void* fake_cuda_make_stream(void) {
  void* s = NULL;
  return stream_create(0, &s, NULL, 0) == 0 ? s : NULL;
}
EXPORT void fake_cuda_clear_log(void) { g_log[0] = '\0'; }
EXPORT void fake_cuda_set_execute_ok(int ok) { g_execute_ok = ok; }

static int32_t say(char* err, size_t n, int32_t code, const char* msg) {
  if (err && n) snprintf(err, n, "%s", msg);
  return code;
}

static int32_t init(int32_t* count, char* err, size_t n) {
  (void)err, (void)n;
  *count = 1;
  return 0;
}
static int32_t device_name(int32_t d, char* name, size_t size, char* err, size_t n) {
  (void)d, (void)err, (void)n;
  snprintf(name, size, "fake CUDA device");
  return 0;
}
static int32_t stream_create(int32_t d, void** s, char* err, size_t n) {
  (void)d;
  static int next = 1;
  if (next >= (int)sizeof g_streams) return say(err, n, 8, "fake: too many streams");
  *s = &g_streams[next++];
  log_op("create", *s, NULL);
  return 0;
}
static int32_t stream_destroy(void* s, char* err, size_t n) {
  (void)err, (void)n;
  log_op("destroy", s, NULL);
  return 0;
}
static int32_t stream_ok(void* s, char* err, size_t n) {
  (void)s, (void)err, (void)n;
  return 0;
}
static int32_t stream_wait(void* waiter, void* waited, char* err, size_t n) {
  (void)err, (void)n;
  log_op("wait", waiter, waited);
  return 0;
}
static int32_t malloc_raw(int32_t d, size_t bytes, void** p, char* err, size_t n) {
  (void)d;
  *p = aligned_alloc(256, (bytes + 255) / 256 * 256);
  return *p ? 0 : say(err, n, 2, "fake: out of memory");
}
static int32_t free_raw(int32_t d, void* p, char* err, size_t n) {
  (void)d, (void)err, (void)n;
  free(p);
  return 0;
}
static int32_t malloc_async(int32_t d, size_t bytes, void* s, void** p, char* err, size_t n) {
  log_op("malloc", s, NULL);
  return malloc_raw(d, bytes, p, err, n);
}
static int32_t free_async(int32_t d, void* p, void* s, char* err, size_t n) {
  log_op("free", s, NULL);
  return free_raw(d, p, err, n);
}
static int32_t set_threshold(int32_t d, uint64_t t, char* err, size_t n) {
  (void)d, (void)t, (void)err, (void)n;
  return 0;
}
static int32_t memcpy_async(void* dst, const void* src, size_t bytes, int32_t kind, void* s, char* err, size_t n) {
  (void)kind, (void)err, (void)n;
  log_op("copy", s, NULL);
  memcpy(dst, src, bytes);
  return 0;
}
static int32_t plan_create(int32_t d, const char* text, shapeml_cuda_plan** plan, char* err, size_t n) {
  (void)d, (void)text, (void)err, (void)n;
  *plan = (shapeml_cuda_plan*)malloc(1);
  return 0;
}
static int64_t plan_workspace_bytes(const shapeml_cuda_plan* plan) {
  (void)plan;
  return 0;
}
static int32_t plan_execute(shapeml_cuda_plan* plan, void* const* buffers, void* ws, void* s, char* err, size_t n) {
  (void)plan, (void)buffers, (void)ws;
  log_op("execute", s, NULL);
  if (g_execute_ok) return 0;
  if (g_observer && (g_observer->flags() & 1u)) g_observer->span("gpu op", "launch 0 (matmul)", 1000, 10, "\"kernel\":\"matmul\",\"library\":\"cublasLt\"", 0);
  /* As the real executor words it (src/cuda/executor/executor.cpp). */
  return say(err, n, 8, "plan_execute: launch 0 (matmul): cublasLtMatmul failed: cublasStatus 13");
}
static void plan_destroy(shapeml_cuda_plan* plan) { free(plan); }
static int32_t memset_async(void* p, int32_t v, size_t bytes, void* s, char* err, size_t n) {
  (void)s, (void)err, (void)n;
  memset(p, v, bytes);
  return 0;
}
static int32_t plan_graph(const shapeml_cuda_plan* plan, char* why, size_t n) {
  (void)plan;
  snprintf(why, n, "the fake plugin does not capture");
  return 0;
}
static int64_t graph_memory_bytes(const shapeml_cuda_plan* plan, int32_t rebind) {
  (void)plan, (void)rebind;
  return 0;
}
static int32_t graph_create(shapeml_cuda_plan* plan, int32_t rebind, void* mem, shapeml_cuda_graph** g, char* err, size_t n) {
  (void)plan, (void)rebind, (void)mem, (void)g;
  return say(err, n, 6, "fake: no graphs");
}
static int32_t graph_execute(shapeml_cuda_graph* g, void* const* buffers, void* s, int32_t* ran, char* err, size_t n) {
  (void)g, (void)buffers, (void)s;
  *ran = 0;
  return say(err, n, 6, "fake: no graphs");
}
static int32_t graph_destroy(shapeml_cuda_graph* g, char* err, size_t n) {
  (void)g, (void)err, (void)n;
  return 0;
}
static void set_observer(const shapeml_cuda_observer* o) { g_observer = o; }

static const shapeml_cuda_plugin kFake = {
    SHAPEML_CUDA_PLUGIN_ABI, init, device_name, stream_create, stream_destroy, stream_ok, malloc_raw, free_raw, malloc_async, free_async,
    set_threshold, memcpy_async, plan_create, plan_workspace_bytes, plan_execute, plan_destroy, memset_async, plan_graph,
    graph_memory_bytes, graph_create, graph_execute, graph_destroy, set_observer, stream_wait,
    NULL /* stream_capturing: an older plugin has none (the runtime never asks it) */};

EXPORT const shapeml_cuda_plugin* shapeml_cuda_plugin_get(uint32_t abi) { return abi == SHAPEML_CUDA_PLUGIN_ABI ? &kFake : NULL; }
