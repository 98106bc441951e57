/* Times one specialization of an AOT shapeml shared object, single thread.
 *   bench_so LIB.so SYMBOL REPS BYTES_IN_0 ... -- BYTES_OUT_0 ...
 * Inputs are filled with small pseudo-random floats (as f32 words). Prints
 * the best and median time in milliseconds. Used for the figures in
 * docs/design/cpu-codegen.md (run on a quiet machine). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: bench_so LIB.so SYMBOL REPS BYTES... -- BYTES...\n");
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  void (*fn)(void**) = (void (*)(void**))dlsym(h, argv[2]);
  if (!fn) {
    fprintf(stderr, "no symbol %s\n", argv[2]);
    return 1;
  }
  int reps = atoi(argv[3]);
  void* bufs[64];
  int n = 0, outputs = 0;
  unsigned seed = 1;
  for (int i = 4; i < argc && n < 64; ++i) {
    if (!strcmp(argv[i], "--")) {
      outputs = 1;
      continue;
    }
    size_t bytes = (size_t)atoll(argv[i]);
    bytes = (bytes + 63) / 64 * 64;
    float* p = aligned_alloc(64, bytes);
    for (size_t k = 0; k < bytes / 4; ++k) {
      seed = seed * 1103515245u + 12345u;
      p[k] = outputs ? 0.0f : ((seed >> 16) % 2001 - 1000) * 1e-3f;
    }
    bufs[n++] = p;
  }
  fn(bufs); /* warm up */
  double* t = malloc(sizeof(double) * reps);
  for (int r = 0; r < reps; ++r) {
    double a = now();
    fn(bufs);
    t[r] = now() - a;
  }
  qsort(t, reps, sizeof(double), cmp);
  printf("%s %s best %.3f ms median %.3f ms\n", argv[1], argv[2], t[0] * 1e3, t[reps / 2] * 1e3);
  return 0;
}
