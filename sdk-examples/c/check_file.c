/* A C user of the shapeml SDK: check a .sml file and print its diagnostics.
 *   cc check_file.c -I include -L build/default -lshapeml -o check_file
 *   ./check_file examples/transformer_block.sml
 * Exit status: 0 checked, 1 the program has errors, 2 usage/I/O/API error. */
#include <stdio.h>
#include <stdlib.h>

#include "shapeml.h"

static char* read_all(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char* buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char* bigger = realloc(buf, cap *= 2);
      if (!bigger) { free(buf); buf = NULL; }
      else buf = bigger;
    }
  }
  fclose(f);
  *len = n;
  return buf;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE.sml\n", argv[0]);
    return 2;
  }
  size_t len = 0;
  char* text = read_all(argv[1], &len);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  shapeml_context* ctx = NULL;
  shapeml_check_result* result = NULL;
  shapeml_status* st = shapeml_context_create(NULL, &ctx);
  if (!st) st = shapeml_check_source(ctx, argv[1], text, len, &result);
  free(text);
  if (st) {
    fprintf(stderr, "shapeml: %s: %s\n", shapeml_status_code_name(shapeml_status_get_code(st)), shapeml_status_get_message(st));
    shapeml_status_free(st);
    shapeml_context_release(ctx);
    return 2;
  }
  for (size_t i = 0; i < shapeml_check_result_diagnostic_count(result); ++i) {
    shapeml_diagnostic d = SHAPEML_DIAGNOSTIC_INIT;
    if ((st = shapeml_check_result_get_diagnostic(result, i, &d))) {
      shapeml_status_free(st);
      continue;
    }
    printf("%s:%u:%u: %s: %s\n", d.file, d.line, d.column, d.code, d.message);
    for (size_t k = 0; k < d.counterexample_count; ++k) {
      const char* name;
      int64_t value;
      if (!shapeml_check_result_get_counterexample(result, i, k, &name, &value)) printf("    %s = %lld\n", name, (long long)value);
    }
  }
  int passed = shapeml_check_result_passed(result);
  printf("%s: %s (shapeml %s)\n", argv[1], passed ? "ok" : "has errors", shapeml_version());
  shapeml_check_result_release(result);
  shapeml_context_release(ctx);
  return passed ? 0 : 1;
}
