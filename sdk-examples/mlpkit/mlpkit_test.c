/* Tests of mlpkit, the worked example: results against a float64 reference
 * in C, every error code, the memory resource's counters, and four threads
 * running one model. Usage:
 *   mlpkit_test CPU_MODEL.so [GPU_MODEL.so]
 * The GPU part prints "GPU: skipped (...)" and passes where there is no GPU
 * or no CUDA plugin. Exit 0 on success. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlpkit.h"
#include "shapeml.h"

enum { D = 16, F = 32 };
static float w1[D * F], b1[F], w2[F * D], b2[D];
static int failures;

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
      ++failures;                                          \
    }                                                      \
  } while (0)

static float next(unsigned* seed) {
  *seed = *seed * 1664525u + 1013904223u;
  return (float)((*seed >> 8) & 0xffff) / 65536.0f - 0.5f;
}

static DLTensor host_tensor(float* data, int32_t ndim, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

static int64_t s_w1[2] = {D, F}, s_b1[1] = {F}, s_w2[2] = {F, D}, s_b2[1] = {D};

static mlpkit* create(const char* model, uint64_t budget, mlpkit_code* code, char* msg, size_t n) {
  DLTensor tw1 = host_tensor(w1, 2, s_w1), tb1 = host_tensor(b1, 1, s_b1), tw2 = host_tensor(w2, 2, s_w2), tb2 = host_tensor(b2, 1, s_b2);
  mlpkit_options o = MLPKIT_OPTIONS_INIT;
  o.model_path = model;
  o.memory_budget = budget;
  mlpkit* m = NULL;
  *code = mlpkit_create(&o, &tw1, &tb1, &tw2, &tb2, &m, msg, n);
  return m;
}

/* y = gelu(x w1 + b1) w2 + b2 in double, gelu(x) = x Phi(x). */
static void reference(const float* x, int64_t rows, double* y) {
  double h[F];
  for (int64_t r = 0; r < rows; ++r) {
    for (int f = 0; f < F; ++f) {
      double a = b1[f];
      for (int d = 0; d < D; ++d) a += (double)x[r * D + d] * w1[d * F + f];
      h[f] = a * 0.5 * (1.0 + erf(a / sqrt(2.0)));
    }
    for (int d = 0; d < D; ++d) {
      double a = b2[d];
      for (int f = 0; f < F; ++f) a += h[f] * w2[f * D + d];
      y[r * D + d] = a;
    }
  }
}

static double max_error(const float* got, const double* want, int64_t n) {
  double e = 0;
  for (int64_t i = 0; i < n; ++i) e = fmax(e, fabs(got[i] - want[i]));
  return e;
}

/* One run on x (B, S, D) and its comparison; returns the max abs error. */
static double run_and_compare(mlpkit* m, int64_t B, int64_t S) {
  int64_t shape[3] = {B, S, D}, n = B * S * D;
  float* x = malloc(sizeof(float) * n);
  double* want = malloc(sizeof(double) * n);
  unsigned seed = 7;
  for (int64_t i = 0; i < n; ++i) x[i] = next(&seed);
  reference(x, B * S, want);
  DLTensor tx = host_tensor(x, 3, shape);
  DLManagedTensorVersioned* y = NULL;
  char msg[512];
  mlpkit_code c = mlpkit_run(m, &tx, &y, msg, sizeof msg);
  double err = INFINITY;
  if (c != MLPKIT_OK) {
    fprintf(stderr, "mlpkit_run: %s: %s\n", mlpkit_code_name(c), msg);
  } else {
    const DLTensor* t = &y->dl_tensor;
    if (t->device.device_type == kDLCPU && t->ndim == 3 && t->shape[0] == B && t->shape[1] == S && t->shape[2] == D) {
      err = max_error((const float*)((char*)t->data + t->byte_offset), want, n);
    } else if (t->device.device_type == kDLCUDA) {
      /* A GPU model's result: bring it back through shapeml (DLPack import + copy). */
      shapeml_tensor *dev = NULL, *host = NULL;
      shapeml_status* st = shapeml_tensor_import_dlpack_versioned(y, &dev);
      if (!st) {
        y = NULL; /* shapeml owns it now */
        st = shapeml_tensor_copy_to_host(dev, NULL, NULL, &host);
      }
      if (st) {
        fprintf(stderr, "copy back: %s\n", shapeml_status_get_message(st));
        shapeml_status_free(st);
      } else {
        err = max_error(shapeml_tensor_data(host), want, n);
      }
      shapeml_tensor_release(host);
      shapeml_tensor_release(dev);
    }
    if (y) y->deleter(y);
  }
  free(x);
  free(want);
  return err;
}

typedef struct thread_arg {
  double err;
  mlpkit* m;
} thread_arg;

static void* thread_main(void* p) {
  thread_arg* a = p;
  for (int i = 0; i < 20; ++i) a->err = fmax(a->err, run_and_compare(a->m, 2, 8));
  return NULL;
}

static void test_cpu(const char* model) {
  char msg[512];
  mlpkit_code c;
  mlpkit* m = create(model, 0, &c, msg, sizeof msg);
  CHECK(c == MLPKIT_OK, "create: %s: %s", mlpkit_code_name(c), msg);
  if (!m) return;
  printf("shapeml %s\n", mlpkit_shapeml_version());
  int64_t bind[4][4];
  size_t nb = mlpkit_shapes(m, bind, 4);
  CHECK(nb == 2, "two compiled shapes, got %zu", nb);
  for (size_t i = 0; i < nb && i < 4; ++i)
    printf("compiled for B=%lld S=%lld D=%lld F=%lld\n", (long long)bind[i][0], (long long)bind[i][1], (long long)bind[i][2], (long long)bind[i][3]);

  double e1 = run_and_compare(m, 2, 8), e2 = run_and_compare(m, 1, 4);
  printf("CPU: max abs error vs float64: %.3g (B=2,S=8), %.3g (B=1,S=4)\n", e1, e2);
  CHECK(e1 < 1e-5 && e2 < 1e-5, "CPU results differ from the reference");

  /* Errors and their codes. */
  int64_t shape[3] = {3, 8, D};
  float x[3 * 8 * D];
  memset(x, 0, sizeof x);
  DLTensor tx = host_tensor(x, 3, shape);
  DLManagedTensorVersioned* y = NULL;
  c = mlpkit_run(m, &tx, &y, msg, sizeof msg);
  printf("B=3 (not compiled): %s: %s\n", mlpkit_code_name(c), msg);
  CHECK(c == MLPKIT_ERR_SHAPE && y == NULL, "B=3 should be ERR_SHAPE");
  shape[0] = 2;
  shape[2] = D / 2; /* wrong feature size */
  c = mlpkit_run(m, &tx, &y, msg, sizeof msg);
  printf("D=8: %s: %s\n", mlpkit_code_name(c), msg);
  CHECK(c == MLPKIT_ERR_ARGUMENT, "D=8 should be ERR_ARGUMENT");
  tx.dtype.bits = 64;
  c = mlpkit_run(m, &tx, &y, msg, sizeof msg);
  CHECK(c == MLPKIT_ERR_ARGUMENT, "f64 should be ERR_ARGUMENT");
  CHECK(mlpkit_run(NULL, &tx, &y, NULL, 0) == MLPKIT_ERR_ARGUMENT, "NULL model");

  /* Memory: outputs come from mlpkit's own resource and go back to it. */
  mlpkit_memory_stats before, during, after;
  mlpkit_get_memory_stats(m, &before);
  int64_t ok_shape[3] = {2, 8, D};
  float xo[2 * 8 * D];
  memset(xo, 0, sizeof xo);
  DLTensor txo = host_tensor(xo, 3, ok_shape);
  c = mlpkit_run(m, &txo, &y, msg, sizeof msg);
  CHECK(c == MLPKIT_OK, "run: %s", msg);
  mlpkit_get_memory_stats(m, &during);
  if (y) y->deleter(y);
  mlpkit_get_memory_stats(m, &after);
  printf("memory in use: %llu (weights) -> %llu (with an output) -> %llu; peak %llu, %llu allocations\n",
         (unsigned long long)before.bytes_in_use, (unsigned long long)during.bytes_in_use, (unsigned long long)after.bytes_in_use,
         (unsigned long long)after.peak_bytes_in_use, (unsigned long long)after.allocations);
  CHECK(before.bytes_in_use == (D * F * 2 + F + D) * 4, "weights in the resource");
  CHECK(during.bytes_in_use >= before.bytes_in_use + 2 * 8 * D * 4, "output in the resource");
  CHECK(after.bytes_in_use == before.bytes_in_use, "output returned");

  /* Four threads, one model. */
  thread_arg args[4];
  pthread_t th[4];
  for (int i = 0; i < 4; ++i) {
    args[i].err = 0;
    args[i].m = m;
    pthread_create(&th[i], NULL, thread_main, &args[i]);
  }
  double terr = 0;
  for (int i = 0; i < 4; ++i) {
    pthread_join(th[i], NULL);
    terr = fmax(terr, args[i].err);
  }
  printf("4 threads x 20 runs: max abs error %.3g\n", terr);
  CHECK(terr < 1e-5, "threaded results");
  mlpkit_destroy(m);

  /* A budget too small for the weights. */
  m = create(model, 1024, &c, msg, sizeof msg);
  printf("budget 1 KiB: %s: %s\n", mlpkit_code_name(c), msg);
  CHECK(c == MLPKIT_ERR_MEMORY && m == NULL, "budget should be ERR_MEMORY");
  /* No model file; a file that is not a model. */
  m = create("/nonexistent/mlp_model.so", 0, &c, msg, sizeof msg);
  printf("missing model: %s: %s\n", mlpkit_code_name(c), msg);
  CHECK(c == MLPKIT_ERR_MODEL && m == NULL, "missing model should be ERR_MODEL");
}

static void test_gpu(const char* model) {
  int32_t n = 0;
  shapeml_status* st = shapeml_device_count(kDLCUDA, &n);
  if (st || n == 0) {
    printf("GPU: skipped (%s)\n", st ? shapeml_status_get_message(st) : "no CUDA device");
    shapeml_status_free(st);
    return;
  }
  char msg[512];
  mlpkit_code c;
  mlpkit* m = create(model, 0, &c, msg, sizeof msg);
  CHECK(c == MLPKIT_OK, "GPU create: %s: %s", mlpkit_code_name(c), msg);
  if (!m) return;
  double e = run_and_compare(m, 2, 8);
  printf("GPU: max abs error vs float64: %.3g\n", e);
  CHECK(e < 1e-3, "GPU results differ from the reference (TF32 allowed)");
  mlpkit_destroy(m);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CPU_MODEL.so [GPU_MODEL.so]\n", argv[0]);
    return 2;
  }
  unsigned seed = 1;
  for (int i = 0; i < D * F; ++i) w1[i] = next(&seed) * 0.5f;
  for (int i = 0; i < F; ++i) b1[i] = next(&seed) * 0.1f;
  for (int i = 0; i < F * D; ++i) w2[i] = next(&seed) * 0.5f;
  for (int i = 0; i < D; ++i) b2[i] = next(&seed) * 0.1f;
  test_cpu(argv[1]);
  if (argc > 2) test_gpu(argv[2]);
  printf("%s\n", failures ? "mlpkit: FAILED" : "mlpkit: PASS");
  return failures ? 1 : 0;
}
