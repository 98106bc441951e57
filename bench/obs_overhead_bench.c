/* The cost of observability on entry-point calls (bench/obs_overhead.py runs
 * it against a build with SHAPEML_INSTRUMENTATION=OFF; docs/design/
 * observability.md). Loads an AOT module through libshapeml_runtime.so, makes
 * f32 inputs once (on the host, or copied to CUDA device 0 with --cuda), then
 * times ITERS calls (outputs allocated per call, as the ABI does; device
 * calls are synchronized after each call) and prints one line:
 *   instrumented=0|1 mode=default|trace|gpu-timing best_ms=... median_ms=... mean_ms=... events=...
 *
 *   obs_overhead_bench MODULE.so ENTRY ITERS [--trace] [--gpu-timing] [--cuda] [--graph-off] SHAPE...   (SHAPE = 4x128x256)
 *
 * --trace records spans during the timed calls (the recorder is emptied
 * every 512 calls, outside the timed region, so memory stays bounded). */
#define SHAPEML_UNSTABLE_API
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

static size_t g_bytes;
static void count_bytes(void* user, const char* data, size_t size) {
  (void)user;
  (void)data;
  g_bytes += size;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s MODULE.so ENTRY ITERS [--trace] [--gpu-timing] [--cuda] SHAPE...\n", argv[0]);
    return 2;
  }
  int trace = 0, gpu_timing = 0, cuda = 0, graph_off = 0, first_shape = 4;
  for (; first_shape < argc && argv[first_shape][0] == '-'; ++first_shape) {
    if (!strcmp(argv[first_shape], "--trace")) trace = 1;
    else if (!strcmp(argv[first_shape], "--gpu-timing")) trace = gpu_timing = 1;
    else if (!strcmp(argv[first_shape], "--cuda")) cuda = 1;
    else if (!strcmp(argv[first_shape], "--graph-off")) graph_off = 1;
    else {
      fprintf(stderr, "unknown option %s\n", argv[first_shape]);
      return 2;
    }
  }
  /* UNIMPLEMENTED here means a build without instrumentation. */
  shapeml_status* probe = shapeml_unstable_log_set_levels("warn");
  int instrumented = probe == NULL;
  shapeml_status_free(probe);
  if (trace && !instrumented) {
    fprintf(stderr, "--trace needs an instrumented build\n");
    return 2;
  }
  shapeml_module* m = NULL;
  shapeml_status* st = shapeml_module_load(argv[1], NULL, &m);
  if (st) return fail(st);
  size_t nin = 0, nout = 0;
  if ((st = shapeml_module_lookup(m, argv[2], &nin, &nout))) return fail(st);
  int iters = atoi(argv[3]);
  if ((size_t)(argc - first_shape) != nin || iters < 1) {
    fprintf(stderr, "expected %zu input shapes and ITERS >= 1\n", nin);
    return 2;
  }
  shapeml_memory* device_mem = NULL;
  if (cuda && (st = shapeml_memory_create_cuda_async(0, UINT64_MAX, &device_mem))) return fail(st);
  shapeml_tensor** in = calloc(nin, sizeof *in);
  shapeml_tensor** out = calloc(nout ? nout : 1, sizeof *out);
  unsigned seed = 1;
  for (size_t i = 0; i < nin; ++i) {
    int64_t shape[8];
    size_t rank = 0;
    for (char* p = argv[first_shape + i]; *p && rank < 8;) {
      shape[rank++] = strtoll(p, &p, 10);
      if (*p == 'x') ++p;
    }
    shapeml_tensor* host = NULL;
    if ((st = shapeml_tensor_create(NULL, SHAPEML_DTYPE_F32, rank, shape, &host))) return fail(st);
    float* d = shapeml_tensor_data(host);
    for (size_t k = 0; k < shapeml_tensor_byte_size(host) / 4; ++k) {
      seed = seed * 1103515245u + 12345u;
      d[k] = ((float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f) * 0.1f;
    }
    if (cuda) {
      if ((st = shapeml_tensor_copy_to_device(host, device_mem, NULL, &in[i]))) return fail(st);
      shapeml_tensor_release(host);
    } else {
      in[i] = host;
    }
  }
  if (trace) {
    shapeml_unstable_trace_options o = SHAPEML_UNSTABLE_TRACE_OPTIONS_INIT;
    if (gpu_timing) o.flags |= SHAPEML_UNSTABLE_TRACE_GPU_TIMING;
    if ((st = shapeml_unstable_trace_start(&o))) return fail(st);
  }
  shapeml_call_options co = SHAPEML_CALL_OPTIONS_INIT;
  co.memory = device_mem;
  if (graph_off) co.graph = SHAPEML_GRAPH_OFF; /* direct execution: one span and NVTX range per launch */
  shapeml_entry* entry = NULL;
  if ((st = shapeml_module_get_entry(m, argv[2], &entry))) return fail(st);
  double* t = malloc(sizeof(double) * iters);
  double sum = 0;
  for (int k = -3; k < iters; ++k) { /* three warm-up calls */
    double t0 = now_ms();
    if ((st = shapeml_entry_call(entry, in, nin, out, nout, &co))) return fail(st);
    if (cuda && (st = shapeml_device_synchronize(0, NULL))) return fail(st);
    double dt = now_ms() - t0;
    for (size_t o = 0; o < nout; ++o) {
      shapeml_tensor_release(out[o]);
      out[o] = NULL;
    }
    if (k >= 0) {
      t[k] = dt;
      sum += dt;
    }
    if (trace && (k + 4) % 512 == 0 && (st = shapeml_unstable_trace_flush(count_bytes, NULL))) return fail(st);
  }
  if (trace) {
    shapeml_unstable_trace_stop();
    if ((st = shapeml_unstable_trace_flush(count_bytes, NULL))) return fail(st);
  }
  qsort(t, iters, sizeof(double), cmp);
  printf("instrumented=%d mode=%s best_ms=%.5f median_ms=%.5f mean_ms=%.5f trace_bytes=%zu\n", instrumented,
         gpu_timing ? "gpu-timing" : trace ? "trace" : "default", t[0], t[iters / 2], sum / iters, g_bytes);
  for (size_t i = 0; i < nin; ++i) shapeml_tensor_release(in[i]);
  shapeml_module_release(m);
  shapeml_memory_release(device_mem);
  free(in);
  free(out);
  free(t);
  return 0;
}
