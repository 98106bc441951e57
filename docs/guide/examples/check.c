/* Guide, step 3: check a program from C and read its diagnostics as data.
 *   cc check.c $(pkg-config --cflags --libs shapeml) -o check && ./check affine_bad.sml
 * Exit status: 0 the program checks, 1 it has errors, 2 an API failure. */
#include <stdio.h>
#include <stdlib.h>

#include "shapeml.h"

static char* slurp(const char* path, size_t* n) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* text = malloc(size > 0 ? (size_t)size : 1);
  *n = text ? fread(text, 1, (size_t)size, f) : 0;
  fclose(f);
  return text;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  size_t n = 0;
  char* text = slurp(argv[1], &n);
  if (!text) return 2;

  shapeml_context* ctx = NULL;
  shapeml_check_result* r = NULL;
  shapeml_status* st = shapeml_context_create(NULL, &ctx);   /* NULL options: defaults */
  if (!st) st = shapeml_check_source(ctx, argv[1], text, n, &r); /* errors in the program are NOT a status */
  free(text);
  if (st) { /* misuse or resource exhaustion only */
    fprintf(stderr, "%s: %s\n", shapeml_status_code_name(shapeml_status_get_code(st)), shapeml_status_get_message(st));
    shapeml_status_free(st);
    shapeml_context_release(ctx);
    return 2;
  }
  for (size_t i = 0; i < shapeml_check_result_diagnostic_count(r); ++i) {
    shapeml_diagnostic d = SHAPEML_DIAGNOSTIC_INIT; /* sets struct_size */
    shapeml_status_free(shapeml_check_result_get_diagnostic(r, i, &d)); /* cannot fail here */
    printf("%s at %s:%u:%u: %s\n", d.code, d.file, d.line, d.column, d.message);
    printf("  expected %s, actual %s\n", d.expected, d.actual);
    for (size_t k = 0; k < d.counterexample_count; ++k) {
      const char* var;
      int64_t value;
      shapeml_status_free(shapeml_check_result_get_counterexample(r, i, k, &var, &value));
      printf("  counterexample: %s = %lld\n", var, (long long)value);
    }
  }
  int passed = shapeml_check_result_passed(r);
  printf("%s\n", passed ? "checked" : "has errors");
  shapeml_check_result_release(r); /* strings from r are gone after this */
  shapeml_context_release(ctx);
  return passed ? 0 : 1;
}
