/* Guide, steps 5-7: load an ahead-of-time module with the runtime library
 * only, introspect its entry, call it on the caller's own buffers, and read
 * the errors' codes.
 *   shapemlc build affine.sml -o libaffine.so --bind affine:B=2,D=3,F=4
 *   cc call.c $(pkg-config --cflags --libs shapeml-runtime) -o call && ./call ./libaffine.so */
#include <stdio.h>
#include <string.h>

#include "shapeml.h"

/* Prints a status, frees it, and says whether there was one. */
static int failed(shapeml_status* st, const char* what) {
  if (!st) return 0;
  printf("%s: %s (code %d): %s\n", what, shapeml_status_code_name(shapeml_status_get_code(st)), (int)shapeml_status_get_code(st),
         shapeml_status_get_message(st));
  shapeml_status_free(st);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  /* Memory: a statistics adaptor over the host resource, so we can see what
   * the call allocates. We own `stats`; the module retains it too. */
  shapeml_memory* stats = NULL;
  if (failed(shapeml_memory_create_statistics_adaptor(NULL, &stats), "memory")) return 1;
  shapeml_module_options mo = SHAPEML_MODULE_OPTIONS_INIT;
  mo.memory = stats;
  shapeml_module* m = NULL;
  if (failed(shapeml_module_load(argv[1], &mo, &m), "load")) return 1;

  /* Introspection: the entry is borrowed from the module (never released). */
  shapeml_entry* e = NULL;
  if (failed(shapeml_module_get_entry(m, "affine", &e), "entry")) return 1;
  printf("module %s, entry %s:", shapeml_module_name(m), shapeml_entry_name(e));
  for (size_t i = 0; i < shapeml_entry_param_count(e); ++i) {
    shapeml_tensor_info info = SHAPEML_TENSOR_INFO_INIT;
    if (failed(shapeml_entry_get_tensor_info(e, SHAPEML_IO_PARAM, i, &info), "info")) return 1;
    printf(" %s: %s", info.name, info.type);
  }
  int64_t binding[3];
  shapeml_status_free(shapeml_entry_get_aot_specialization(e, 0, binding, 3));
  printf("\nbuilt for B=%lld D=%lld F=%lld\n", (long long)binding[0], (long long)binding[1], (long long)binding[2]);

  /* Inputs wrap our own arrays: no copy; read-only, no deleter (they outlive the call). */
  float x[2 * 3] = {1, 2, 3, 4, 5, 6}, w[3 * 4], b[4] = {0.5f, 0.5f, 0.5f, 0.5f};
  for (int i = 0; i < 12; ++i) w[i] = (float)(i % 4 == i / 4); /* w = [I3 | 0] */
  int64_t sx[2] = {2, 3}, sw[2] = {3, 4}, sb[1] = {4};
  shapeml_tensor *tx = NULL, *tw = NULL, *tb = NULL, *y = NULL;
  shapeml_status_free(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 2, sx, NULL, x, NULL, NULL, SHAPEML_TENSOR_READ_ONLY, &tx));
  shapeml_status_free(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 2, sw, NULL, w, NULL, NULL, SHAPEML_TENSOR_READ_ONLY, &tw));
  shapeml_status_free(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 1, sb, NULL, b, NULL, NULL, SHAPEML_TENSOR_READ_ONLY, &tb));
  shapeml_tensor* in[3] = {tx, tw, tb};
  if (failed(shapeml_entry_call(e, in, 3, &y, 1, NULL), "call")) return 1;
  const float* out = shapeml_tensor_data(y); /* y is ours: (2, 4) */
  printf("y = [%g %g %g %g; %g %g %g %g]\n", out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7]);
  shapeml_memory_statistics ms = SHAPEML_MEMORY_STATISTICS_INIT;
  shapeml_status_free(shapeml_memory_get_statistics(stats, &ms));
  printf("in use while we hold y: %llu bytes\n", (unsigned long long)ms.bytes_in_use);
  shapeml_tensor_release(y); /* its memory goes back to `stats` */
  shapeml_status_free(shapeml_memory_get_statistics(stats, &ms));
  printf("after releasing y: %llu bytes\n", (unsigned long long)ms.bytes_in_use);

  /* Errors and their codes. */
  int64_t s3[2] = {3, 3};
  shapeml_tensor* bad = NULL;
  shapeml_status_free(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 2, s3, NULL, w, NULL, NULL, SHAPEML_TENSOR_READ_ONLY, &bad));
  shapeml_tensor* in_bad[3] = {tx, bad, tb}; /* w is (3 3): D=3 but F disagrees with b */
  failed(shapeml_entry_call(e, in_bad, 3, &y, 1, NULL), "wrong shape");
  int64_t s1[2] = {1, 3};
  shapeml_tensor* x1 = NULL;
  shapeml_status_free(shapeml_tensor_wrap(SHAPEML_DTYPE_F32, 2, s1, NULL, x, NULL, NULL, SHAPEML_TENSOR_READ_ONLY, &x1));
  shapeml_tensor* in_b1[3] = {x1, tw, tb}; /* B=1 was not built */
  failed(shapeml_entry_call(e, in_b1, 3, &y, 1, NULL), "unbuilt binding");
  failed(shapeml_module_get_entry(m, "nope", &e), "unknown entry");

  shapeml_tensor_release(x1);
  shapeml_tensor_release(bad);
  shapeml_tensor_release(tx);
  shapeml_tensor_release(tw);
  shapeml_tensor_release(tb);
  shapeml_module_release(m);      /* entries die with it */
  shapeml_memory_release(stats);  /* the module's reference went with it */
  return 0;
}
