/* A C program written against the 0.1 header (abi/snapshots/0.1/shapeml.h,
 * the header as released) and linked with its 0.1 symbol versions, run
 * against today's libshapeml.so: what a consumer built at 0.1 meets after an
 * upgrade. It uses the whole 0.1 surface that a program of then could reach:
 * the version, statuses, a context with the 0.1-sized options, checking a
 * good and a bad program, diagnostics (the 0.1-sized struct), notes,
 * counterexamples and rendering. Exit 0 when every expectation holds. */
#include <stdio.h>
#include <string.h>

#include "shapeml.h" /* the 0.1 header: the build puts abi/snapshots/0.1 first on the include path */

static int failures = 0;
#define EXPECT(cond)                                               \
  do {                                                             \
    if (!(cond)) {                                                 \
      fprintf(stderr, "client_0_1: expected %s (line %d)\n", #cond, __LINE__); \
      ++failures;                                                  \
    }                                                              \
  } while (0)

static const char good[] =
    "(module m (func f (dims N) (params (x (tensor f32 (N) host)) (y (tensor f32 (N) host)))"
    " (returns (tensor f32 (N) host)) (return (add x y))))";
static const char bad[] =
    "(module m (func f (dims N M) (params (x (tensor f32 (N) host)) (y (tensor f32 (M) host)))"
    " (returns (tensor f32 (N) host)) (return (add x y))))";

int main(void) {
  EXPECT(shapeml_version_number() / 10000 == 0); /* major 0, any later minor */
  EXPECT(strncmp(shapeml_version(), "0.", 2) == 0);

  /* Misuse is a status naming the problem. */
  shapeml_status* st = shapeml_context_create(NULL, NULL);
  EXPECT(st != NULL);
  if (st) {
    EXPECT(strcmp(shapeml_status_code_name(shapeml_status_get_code(st)), "INVALID_ARGUMENT") == 0);
    EXPECT(strlen(shapeml_status_get_message(st)) > 0);
    shapeml_status_free(st);
  }

  shapeml_context_options o = SHAPEML_CONTEXT_OPTIONS_INIT; /* the 0.1 size */
  shapeml_context* ctx = NULL;
  EXPECT(shapeml_context_create(&o, &ctx) == NULL && ctx != NULL);
  if (!ctx) return 1;

  shapeml_check_result* r = NULL;
  EXPECT(shapeml_check_source(ctx, "good.sml", good, sizeof good - 1, &r) == NULL && r != NULL);
  EXPECT(shapeml_check_result_passed(r) == 1);
  EXPECT(shapeml_check_result_diagnostic_count(r) == 0);
  shapeml_check_result_release(r);

  r = NULL;
  EXPECT(shapeml_check_source(ctx, "bad.sml", bad, sizeof bad - 1, &r) == NULL && r != NULL);
  if (r) {
    EXPECT(shapeml_check_result_passed(r) == 0);
    EXPECT(shapeml_check_result_diagnostic_count(r) >= 1);
    shapeml_diagnostic d = SHAPEML_DIAGNOSTIC_INIT; /* the 0.1 size: the library fills no more */
    EXPECT(shapeml_check_result_get_diagnostic(r, 0, &d) == NULL);
    EXPECT(d.code && strcmp(d.code, "E0302") == 0);
    EXPECT(d.severity == SHAPEML_SEVERITY_ERROR);
    EXPECT(d.file && strcmp(d.file, "bad.sml") == 0);
    EXPECT(d.line == 1 && d.column > 1);
    EXPECT(d.counterexample_count == 2); /* N and M */
    EXPECT(d.note_count >= 1);
    const char* note = NULL;
    EXPECT(shapeml_check_result_get_note(r, 0, 0, &note) == NULL && note && strlen(note) > 0);
    const char* var = NULL;
    int64_t n = 0, m = 0;
    EXPECT(shapeml_check_result_get_counterexample(r, 0, 0, &var, &n) == NULL && var && strcmp(var, "N") == 0);
    EXPECT(shapeml_check_result_get_counterexample(r, 0, 1, &var, &m) == NULL && var && strcmp(var, "M") == 0);
    EXPECT(n >= 1 && m >= 1 && n != m && !(n == 1 && m == 1)); /* values under which (N) and (M) do not broadcast */
    shapeml_check_result_retain(r);
    shapeml_check_result_release(r);
    shapeml_context_retain(ctx);
    shapeml_context_release(ctx);
    const char* text = NULL;
    EXPECT(shapeml_check_result_render(r, SHAPEML_FORMAT_TEXT, &text) == NULL && text && strstr(text, "error[E0302]"));
    st = shapeml_check_result_get_diagnostic(r, 99, &d); /* out of range: a status, not a crash */
    EXPECT(st != NULL);
    if (st) shapeml_status_free(st);
    shapeml_check_result_release(r);
  }
  shapeml_context_release(ctx);
  if (failures == 0) printf("client_0_1: the 0.1 program runs against %s\n", shapeml_version());
  return failures == 0 ? 0 : 1;
}
