/* The parallel loops of generated CPU code (docs/design/cpu-threads.md):
 * results against float64 loops and bitwise equal for every thread count,
 * JIT and AOT; a host-supplied parallel-for that receives the loops (and
 * does not, for one thread); calls from 8 host threads at once while the
 * pool runs (TSan in CI); a bad thread count. */
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

#define SHAPEML_UNSTABLE_API
#include "shapeml.h"

static void ok(shapeml_status* st) {
  if (st) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", shapeml_status_get_message(st));
    shapeml_status_free(st);
    fail_msg("unexpected error: %s", buf);
  }
}

/* Large enough that every loop nest clears the outlining threshold: a
   matmul with a bias (the strategy's row-tile loop), tanh, and a row
   reduction. */
static const char kSrc[] =
    "(module par (func layer (dims N K M) (params (x (tensor f32 (N K) host)) (w (tensor f32 (K M) host)) (b (tensor f32 (M) host)))"
    " (returns (tensor f32 (N M) host) (tensor f32 (N) host))"
    " (let h (tanh (add (matmul x w) b))) (return h (reduce_sum (mul h h) :axes (1)))))";

enum { N = 192, K = 160, M = 256 };

typedef struct {
  float x[N * K], w[K * M], b[M];
  double h[N * M], s[N];
} data_t;

static data_t* make_data(void) {
  data_t* d = calloc(1, sizeof *d);
  uint32_t r = 12345u;
  for (int i = 0; i < N * K; ++i) d->x[i] = (float)((r = r * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  for (int i = 0; i < K * M; ++i) d->w[i] = ((float)((r = r * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f) * 0.2f;
  for (int i = 0; i < M; ++i) d->b[i] = (float)i / M - 0.5f;
  for (int n = 0; n < N; ++n) {
    double s = 0;
    for (int m = 0; m < M; ++m) {
      double acc = d->b[m];
      for (int k = 0; k < K; ++k) acc += (double)d->x[n * K + k] * (double)d->w[k * M + m];
      d->h[n * M + m] = tanh(acc);
      s += d->h[n * M + m] * d->h[n * M + m];
    }
    d->s[n] = s;
  }
  return d;
}

static shapeml_tensor* tensor(const float* v, size_t rank, const int64_t* shape) {
  shapeml_tensor* t = NULL;
  ok(shapeml_tensor_create(NULL, SHAPEML_DTYPE_F32, rank, shape, &t));
  size_t n = 1;
  for (size_t i = 0; i < rank; ++i) n *= (size_t)shape[i];
  memcpy(shapeml_tensor_data(t), v, n * sizeof(float));
  return t;
}

/* One call with `threads`; the two results copied into h and s. */
static void call(shapeml_entry* e, const data_t* d, int32_t threads, float* h, float* s) {
  const int64_t xs[2] = {N, K}, ws[2] = {K, M}, bs[1] = {M};
  shapeml_tensor* in[3] = {tensor(d->x, 2, xs), tensor(d->w, 2, ws), tensor(d->b, 1, bs)};
  shapeml_tensor* out[2] = {NULL, NULL};
  shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
  o.num_threads = threads;
  ok(shapeml_entry_call(e, in, 3, out, 2, &o));
  memcpy(h, shapeml_tensor_data(out[0]), sizeof(float) * N * M);
  memcpy(s, shapeml_tensor_data(out[1]), sizeof(float) * N);
  for (int i = 0; i < 3; ++i) shapeml_tensor_release(in[i]);
  for (int i = 0; i < 2; ++i) shapeml_tensor_release(out[i]);
}

static void expect_close(const float* h, const float* s, const data_t* d) {
  for (int i = 0; i < N * M; ++i)
    if (fabs(h[i] - d->h[i]) > 1e-5 + 1e-5 * fabs(d->h[i])) fail_msg("h[%d] = %.9g, float64 %.9g", i, h[i], d->h[i]);
  for (int i = 0; i < N; ++i)
    if (fabs(s[i] - d->s[i]) > 1e-4 * fabs(d->s[i])) fail_msg("s[%d] = %.9g, float64 %.9g", i, s[i], d->s[i]);
}

static shapeml_module* jit_module(void) {
  shapeml_context* ctx = NULL;
  ok(shapeml_context_create(NULL, &ctx));
  shapeml_module* m = NULL;
  ok(shapeml_module_compile(ctx, "par.sml", kSrc, strlen(kSrc), NULL, &m));
  shapeml_context_release(ctx);
  return m;
}

static shapeml_entry* layer_of(shapeml_module* m) {
  shapeml_entry* e = NULL;
  ok(shapeml_module_get_entry(m, "layer", &e));
  const char* names[3] = {"N", "K", "M"};
  const int64_t values[3] = {N, K, M};
  ok(shapeml_entry_specialize(e, names, values, 3));
  return e;
}

static void expect_every_count_equal(shapeml_entry* e, const data_t* d) {
  static float h1[N * M], s1[N], h[N * M], s[N];
  call(e, d, 1, h1, s1);
  expect_close(h1, s1, d);
  const int32_t counts[4] = {2, 3, 8, 0};
  for (int c = 0; c < 4; ++c) {
    call(e, d, counts[c], h, s);
    if (memcmp(h, h1, sizeof h) != 0 || memcmp(s, s1, sizeof s) != 0) fail_msg("%d threads: results differ from 1 thread's", counts[c]);
  }
}

static void test_every_thread_count_gives_the_same_bits(void** state) {
  (void)state;
  data_t* d = make_data();
  shapeml_module* jit = jit_module();
  expect_every_count_equal(layer_of(jit), d);
  shapeml_module_release(jit);
  /* AOT: the module's own hook tables, filled when it loads. */
  shapeml_context* ctx = NULL;
  ok(shapeml_context_create(NULL, &ctx));
  char dir[] = "/tmp/shapeml_par_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char so[256];
  snprintf(so, sizeof so, "%s/libpar.so", dir);
  const char* names[3] = {"N", "K", "M"};
  const int64_t values[3] = {N, K, M};
  shapeml_binding b = {"layer", 3, names, values};
  shapeml_build_options bo = SHAPEML_BUILD_OPTIONS_INIT;
  bo.bindings = &b;
  bo.num_bindings = 1;
  ok(shapeml_module_build(ctx, "par.sml", kSrc, strlen(kSrc), &bo, so));
  shapeml_module* aot = NULL;
  ok(shapeml_module_load(so, NULL, &aot));
  shapeml_entry* e = NULL;
  ok(shapeml_module_get_entry(aot, "layer", &e));
  expect_every_count_equal(e, d);
  shapeml_module_release(aot);
  remove(so);
  rmdir(dir);
  shapeml_context_release(ctx);
  free(d);
}

/* A host parallel-for: runs the ranges on the calling thread, last first (a
   schedule the runtime's pool never uses), and records what it was given. */
typedef struct {
  pthread_mutex_t mu;
  int loops;
  int32_t max_threads;
  int64_t iterations;
} host_t;

static void host_parallel_for(void* user, int64_t count, int32_t max_threads, shapeml_unstable_parallel_task task, void* closure) {
  host_t* h = (host_t*)user;
  pthread_mutex_lock(&h->mu);
  h->loops += 1;
  h->max_threads = max_threads;
  h->iterations += count;
  pthread_mutex_unlock(&h->mu);
  const int64_t parts = count < 5 ? count : 5;
  for (int64_t p = parts - 1; p >= 0; --p) task(closure, count * p / parts, count * (p + 1) / parts);
}

static void test_host_parallel_for_runs_the_loops(void** state) {
  (void)state;
  data_t* d = make_data();
  shapeml_module* m = jit_module();
  shapeml_entry* e = layer_of(m);
  static float h1[N * M], s1[N], h[N * M], s[N];
  call(e, d, 1, h1, s1);
  host_t host = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
  ok(shapeml_unstable_set_parallel_for(host_parallel_for, &host));
  call(e, d, 1, h, s); /* one thread: the host's parallel-for is not asked */
  assert_int_equal(host.loops, 0);
  call(e, d, 6, h, s);
  ok(shapeml_unstable_set_parallel_for(NULL, NULL));
  assert_true(host.loops >= 3); /* at least the matmul, the bias + tanh and the reduction's rows */
  assert_int_equal(host.max_threads, 6);
  assert_true(host.iterations >= N);
  assert_memory_equal(h, h1, sizeof h);
  assert_memory_equal(s, s1, sizeof s);
  const int before = host.loops;
  call(e, d, 6, h, s); /* the pool again */
  assert_int_equal(host.loops, before);
  assert_memory_equal(h, h1, sizeof h);
  shapeml_module_release(m);
  free(d);
}

typedef struct {
  shapeml_entry* e;
  const data_t* d;
  const float *h1, *s1;
  int failures;
} worker_t;

static void* host_thread(void* p) {
  worker_t* w = (worker_t*)p;
  float* h = malloc(sizeof(float) * N * M);
  float s[N];
  for (int i = 0; i < 4; ++i) {
    call(w->e, w->d, i % 2 ? 2 : 0, h, s);
    if (memcmp(h, w->h1, sizeof(float) * N * M) != 0 || memcmp(s, w->s1, sizeof s) != 0) w->failures += 1;
  }
  free(h);
  return NULL;
}

static void test_eight_host_threads_share_the_pool(void** state) {
  (void)state;
  data_t* d = make_data();
  shapeml_module* m = jit_module();
  shapeml_entry* e = layer_of(m);
  static float h1[N * M], s1[N];
  call(e, d, 1, h1, s1);
  pthread_t t[8];
  worker_t w[8];
  for (int i = 0; i < 8; ++i) {
    w[i] = (worker_t){e, d, h1, s1, 0};
    assert_int_equal(pthread_create(&t[i], NULL, host_thread, &w[i]), 0);
  }
  for (int i = 0; i < 8; ++i) {
    pthread_join(t[i], NULL);
    assert_int_equal(w[i].failures, 0);
  }
  shapeml_module_release(m);
  free(d);
}

/* A caller built against 0.3 passes its struct_size (the 0.3 layout ends
 * with `graph` and 4 bytes of tail padding, 48 bytes) and leaves the padding
 * as it was: here -2, which as a thread count would be refused. The library
 * reads no field from it (num_threads lies past it), so the call runs with
 * the default count. */
/* One call of the layer with `o`; its status, the results (if any) released. */
static shapeml_status* call_layer_once(const shapeml_call_options* o) {
  data_t* d = make_data();
  shapeml_module* m = jit_module();
  shapeml_entry* e = layer_of(m);
  const int64_t xs[2] = {N, K}, ws[2] = {K, M}, bs[1] = {M};
  shapeml_tensor* in[3] = {tensor(d->x, 2, xs), tensor(d->w, 2, ws), tensor(d->b, 1, bs)};
  shapeml_tensor* out[2] = {NULL, NULL};
  shapeml_status* st = shapeml_entry_call(e, in, 3, out, 2, o);
  if (!st) assert_non_null(out[0]);
  if (st) assert_null(out[0]);
  for (int i = 0; i < 2; ++i) shapeml_tensor_release(out[i]);
  for (int i = 0; i < 3; ++i) shapeml_tensor_release(in[i]);
  shapeml_module_release(m);
  free(d);
  return st;
}

static void test_a_03_caller_tail_padding_is_never_read(void** state) {
  (void)state;
  shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
  o.struct_size = offsetof(shapeml_call_options, graph) + sizeof(int32_t) + 4; /* sizeof the 0.3 struct */
  assert_int_equal(o.struct_size, 48);
  memset((char*)&o + offsetof(shapeml_call_options, graph) + sizeof(int32_t), 0xFE, 4); /* -2 as an int32 */
  assert_true(offsetof(shapeml_call_options, num_threads) >= o.struct_size);
  assert_null(call_layer_once(&o));
}

static void test_negative_thread_count_is_refused(void** state) {
  (void)state;
  shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
  o.num_threads = -2;
  shapeml_status* st = call_layer_once(&o);
  assert_non_null(st);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(shapeml_status_get_message(st), "num_threads is -2"));
  shapeml_status_free(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_thread_count_gives_the_same_bits),
      cmocka_unit_test(test_host_parallel_for_runs_the_loops),
      cmocka_unit_test(test_eight_host_threads_share_the_pool),
      cmocka_unit_test(test_negative_thread_count_is_refused),
      cmocka_unit_test(test_a_03_caller_tail_padding_is_never_read),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
