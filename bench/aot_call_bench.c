/* Times calls of an AOT-compiled entry point through libshapeml_runtime.so,
 * the deployment path: inputs made once (f32, uniform [-1,1)), then the best
 * and median of N calls of shapeml_module_call (outputs allocated per call,
 * as the ABI does).
 *   aot_call_bench MODULE.so ENTRY ITERS SHAPE... (SHAPE = 4x128x256)
 * Prints one line: best_ms=... median_ms=... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shapeml.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static int fail(shapeml_status* st) {
  fprintf(stderr, "%s: %s\n", shapeml_status_code_name(shapeml_status_get_code(st)), shapeml_status_get_message(st));
  shapeml_status_free(st);
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s MODULE.so ENTRY ITERS SHAPE...\n", argv[0]);
    return 2;
  }
  shapeml_module* m = NULL;
  shapeml_status* st = shapeml_module_load(argv[1], NULL, &m);
  if (st) return fail(st);
  size_t nin = 0, nout = 0;
  if ((st = shapeml_module_lookup(m, argv[2], &nin, &nout))) return fail(st);
  int iters = atoi(argv[3]);
  if ((size_t)(argc - 4) != nin || iters < 1) {
    fprintf(stderr, "expected %zu input shapes and ITERS >= 1\n", nin);
    return 2;
  }
  shapeml_tensor** in = calloc(nin, sizeof *in);
  shapeml_tensor** out = calloc(nout ? nout : 1, sizeof *out);
  unsigned seed = 1;
  for (size_t i = 0; i < nin; ++i) {
    int64_t shape[8];
    size_t rank = 0;
    for (char* p = argv[4 + i]; *p && rank < 8;) {
      shape[rank++] = strtoll(p, &p, 10);
      if (*p == 'x') ++p;
    }
    if ((st = shapeml_tensor_create(NULL, SHAPEML_DTYPE_F32, rank, shape, &in[i]))) return fail(st);
    float* d = shapeml_tensor_data(in[i]);
    for (size_t k = 0; k < shapeml_tensor_byte_size(in[i]) / 4; ++k) {
      seed = seed * 1103515245u + 12345u;
      d[k] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
  }
  double* t = malloc(sizeof(double) * iters);
  for (int k = -2; k < iters; ++k) { /* two warm-up calls */
    double t0 = now_ms();
    if ((st = shapeml_module_call(m, argv[2], in, nin, out, nout))) return fail(st);
    double dt = now_ms() - t0;
    for (size_t o = 0; o < nout; ++o) shapeml_tensor_release(out[o]);
    if (k >= 0) t[k] = dt;
  }
  qsort(t, iters, sizeof(double), cmp);
  printf("best_ms=%.4f median_ms=%.4f\n", t[0], t[iters / 2]);
  for (size_t i = 0; i < nin; ++i) shapeml_tensor_release(in[i]);
  shapeml_module_release(m);
  free(in);
  free(out);
  free(t);
  return 0;
}
