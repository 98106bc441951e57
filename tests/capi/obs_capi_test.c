/* Observability through the C ABI (docs/design/observability.md): the log
 * sink, level filtering, the trace recorder (start, flush to a callback and
 * to a file, the context option) and module IDs shared by compile and run
 * spans; run-time errors that name the module and the entry. Built against
 * both libraries; WITH_COMPILER adds the compile-side cases. */
#define SHAPEML_UNSTABLE_API
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "shapeml.h"

#ifndef TEST_MODULE_PATH
#error "TEST_MODULE_PATH must name the hand-written AOT test module"
#endif

/* ---- a log sink that keeps what it gets ---- */

typedef struct {
  int count;
  int level[64];
  char component[64][16];
  char message[64][96];
  char fields[64][256];
  char module_id[64][32];
} captured;

static void sink(void* user, const shapeml_unstable_log_record* r) {
  captured* c = user;
  assert_true(r->struct_size >= sizeof(shapeml_unstable_log_record));
  if (c->count >= 64) return;
  int i = c->count++;
  c->level[i] = r->level;
  snprintf(c->component[i], sizeof c->component[i], "%s", r->component);
  snprintf(c->message[i], sizeof c->message[i], "%s", r->message);
  c->fields[i][0] = 0;
  for (size_t k = 0; k < r->num_fields; ++k) {
    size_t n = strlen(c->fields[i]);
    snprintf(c->fields[i] + n, sizeof c->fields[i] - n, "%s=%s;", r->fields[k].key, r->fields[k].value);
  }
  snprintf(c->module_id[i], sizeof c->module_id[i], "%s", r->module_id);
}

static int find(const captured* c, const char* component, const char* message) {
  for (int i = 0; i < c->count; ++i)
    if (!strcmp(c->component[i], component) && !strcmp(c->message[i], message)) return i;
  return -1;
}

/* ---- a trace writer that concatenates ---- */

typedef struct {
  char* data;
  size_t size;
  int calls;
} buffer;

static void writer(void* user, const char* data, size_t size) {
  buffer* b = user;
  b->data = realloc(b->data, b->size + size + 1);
  memcpy(b->data + b->size, data, size);
  b->size += size;
  b->data[b->size] = 0;
  b->calls++;
}

static char* flush_trace(void) {
  buffer b = {NULL, 0, 0};
  assert_null(shapeml_unstable_trace_flush(writer, &b));
  assert_true(b.calls >= 1);
  return b.data;
}

/* The value of `"key":"..."` on the first event line whose name is `name`
 * and that has that key (into out). */
static int event_arg(const char* json, const char* name, const char* key, char* out, size_t n) {
  char pat[128];
  snprintf(pat, sizeof pat, "{\"name\":\"%s\"", name);
  char kp[64];
  snprintf(kp, sizeof kp, "\"%s\":\"", key);
  const char* p = json;
  const char* v = NULL;
  while ((p = strstr(p, pat))) {
    const char* end = strchr(p, '\n');
    v = strstr(p, kp);
    if (v && (!end || v < end)) break;
    v = NULL;
    p += strlen(pat);
  }
  if (!v) return 0;
  v += strlen(kp);
  size_t k = 0;
  while (v[k] && v[k] != '"' && k + 1 < n) {
    out[k] = v[k];
    ++k;
  }
  out[k] = 0;
  return 1;
}

static shapeml_tensor* f32_vector(const float* v, int64_t n) {
  shapeml_tensor* t = NULL;
  assert_null(shapeml_tensor_create_copy(NULL, SHAPEML_DTYPE_F32, 1, &n, v, (size_t)n * sizeof(float), &t));
  return t;
}

static void call_add(shapeml_module* m, int64_t n_y, shapeml_status** st_out) {
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
  shapeml_tensor* in[2] = {f32_vector(a, 4), f32_vector(b, n_y)};
  shapeml_tensor* out[1] = {NULL};
  *st_out = shapeml_module_call(m, "add", in, 2, out, 1);
  shapeml_tensor_release(out[0]);
  shapeml_tensor_release(in[0]);
  shapeml_tensor_release(in[1]);
}

/* ---- log sink ---- */

static void sink_receives_filtered_records(void** state) {
  (void)state;
  captured c = {0};
  assert_null(shapeml_unstable_log_set_levels("warn"));
  assert_null(shapeml_unstable_log_set_sink(sink, &c));
  shapeml_module* m = NULL;
  assert_null(shapeml_module_load(TEST_MODULE_PATH, NULL, &m));
  /* At `warn`, loading a module (info) sends nothing. */
  assert_int_equal(find(&c, "runtime", "module created"), -1);
  shapeml_module_release(m);
  assert_null(shapeml_unstable_log_set_levels("warn,runtime=info"));
  assert_null(shapeml_module_load(TEST_MODULE_PATH, NULL, &m));
  int i = find(&c, "runtime", "module created");
  assert_true(i >= 0);
  assert_int_equal(c.level[i], SHAPEML_UNSTABLE_LOG_INFO);
  assert_non_null(strstr(c.fields[i], "module=m-"));
  assert_non_null(strstr(c.fields[i], "name="));
  /* A failed call is a warning of the runtime, tagged with the module. */
  shapeml_status* st = NULL;
  call_add(m, 3, &st);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
  i = find(&c, "runtime", "call failed");
  assert_true(i >= 0);
  assert_int_equal(c.level[i], SHAPEML_UNSTABLE_LOG_WARN);
  assert_non_null(strstr(c.fields[i], "entry=add;"));
  assert_non_null(strstr(c.fields[i], "code=INVALID_ARGUMENT;"));
  /* The record's module (the call in progress) is the one its fields name. */
  assert_int_equal(strncmp(c.module_id[i], "m-", 2), 0);
  assert_non_null(strstr(c.fields[i], c.module_id[i]));
  /* Removing the sink stops the records. */
  int before = c.count;
  assert_null(shapeml_unstable_log_set_sink(NULL, NULL));
  call_add(m, 3, &st);
  shapeml_status_free(st);
  assert_int_equal(c.count, before);
  shapeml_module_release(m);
  assert_null(shapeml_unstable_log_set_levels("warn"));
}

static void bad_level_specs_are_rejected(void** state) {
  (void)state;
  shapeml_status* st = shapeml_unstable_log_set_levels("info,nosuch=debug");
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(shapeml_status_get_message(st), "nosuch"));
  shapeml_status_free(st);
  st = shapeml_unstable_log_set_levels(NULL);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
}

/* ---- errors name the module and the entry ---- */

static void call_errors_name_module_and_entry(void** state) {
  (void)state;
  shapeml_module* m = NULL;
  assert_null(shapeml_module_load(TEST_MODULE_PATH, NULL, &m));
  shapeml_status* st = NULL;
  call_add(m, 3, &st);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  const char* msg = shapeml_status_get_message(st);
  /* "module `NAME` [m-...]: entry `add`: <cause>" */
  assert_int_equal(strncmp(msg, "module `", 8), 0);
  assert_non_null(strstr(msg, "[m-"));
  assert_non_null(strstr(msg, "entry `add`"));
  shapeml_status_free(st);
  shapeml_module_release(m);
}

/* ---- traces ---- */

static void trace_records_runtime_spans_with_module_id(void** state) {
  (void)state;
  free(flush_trace()); /* start from nothing */
  assert_null(shapeml_unstable_trace_start(NULL));
  shapeml_module* m = NULL;
  assert_null(shapeml_module_load(TEST_MODULE_PATH, NULL, &m));
  shapeml_status* st = NULL;
  call_add(m, 4, &st);
  assert_null(st);
  assert_null(shapeml_unstable_trace_stop());
  call_add(m, 4, &st); /* not recorded */
  assert_null(st);
  char* json = flush_trace();
  assert_non_null(strstr(json, "\"traceEvents\""));
  char load_id[32] = "", call_id[32] = "", alloc_id[32] = "", entry[16] = "";
  assert_true(event_arg(json, "module create", "module", load_id, sizeof load_id));
  assert_true(event_arg(json, "call add", "module", call_id, sizeof call_id));
  assert_true(event_arg(json, "call add", "entry", entry, sizeof entry));
  assert_true(event_arg(json, "alloc", "module", alloc_id, sizeof alloc_id));
  assert_string_equal(entry, "add");
  assert_string_equal(load_id, call_id);
  assert_string_equal(alloc_id, call_id); /* the output allocation happened inside the call */
  assert_non_null(strstr(json, "{\"name\":\"module load\""));
  assert_non_null(strstr(json, "{\"name\":\"run compiled code\""));
  /* One call was traced, not two. */
  const char* first = strstr(json, "{\"name\":\"call add\"");
  assert_null(strstr(first + 1, "{\"name\":\"call add\""));
  free(json);
  /* Flushed: the recorder is empty now. */
  json = flush_trace();
  assert_null(strstr(json, "\"call add\""));
  free(json);
  shapeml_module_release(m);
}

static void trace_flushes_to_a_file(void** state) {
  (void)state;
  char path[] = "/tmp/shapeml-obs-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_null(shapeml_unstable_trace_start(NULL));
  shapeml_module* m = NULL;
  assert_null(shapeml_module_load(TEST_MODULE_PATH, NULL, &m));
  shapeml_module_release(m);
  assert_null(shapeml_unstable_trace_stop());
  assert_null(shapeml_unstable_trace_flush_to_file(path));
  FILE* f = fopen(path, "rb");
  assert_non_null(f);
  char text[4096] = {0};
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  unlink(path);
  assert_true(n > 0);
  assert_non_null(strstr(text, "\"module load\""));
  shapeml_status* st = shapeml_unstable_trace_flush_to_file("/nonexistent-dir/trace.json");
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_IO_ERROR);
  shapeml_status_free(st);
  /* Issue 24, items 2 and 5: a FIFO with no reader is refused at once (fopen
   * blocked forever), as is a character device; a failed flush keeps the
   * events (they were discarded) and the previous file is left whole. */
  char fifo[] = "/tmp/shapeml-obs-fifo-XXXXXX";
  assert_non_null(mkdtemp(fifo));
  char fifo_path[64];
  snprintf(fifo_path, sizeof fifo_path, "%s/trace.fifo", fifo);
  assert_int_equal(mkfifo(fifo_path, 0600), 0);
  assert_null(shapeml_unstable_trace_start(NULL));
  assert_null(shapeml_module_load(TEST_MODULE_PATH, NULL, &m));
  shapeml_module_release(m);
  assert_null(shapeml_unstable_trace_stop());
  st = shapeml_unstable_trace_flush_to_file(fifo_path);
  assert_non_null(st);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_IO_ERROR);
  assert_non_null(strstr(shapeml_status_get_message(st), "refusing to write over it"));
  shapeml_status_free(st);
  st = shapeml_unstable_trace_flush_to_file("/dev/null");
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_IO_ERROR);
  shapeml_status_free(st);
  unlink(fifo_path);
  rmdir(fifo);
  char* kept = flush_trace();
  assert_non_null(strstr(kept, "\"module load\"")); /* the failed flushes kept the events */
  free(kept);
  st = shapeml_unstable_trace_flush_to_file(NULL);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
  st = shapeml_unstable_trace_flush(NULL, NULL);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
  shapeml_unstable_trace_options bad = {4, 0};
  st = shapeml_unstable_trace_start(&bad);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
}

/* ---- many threads: calls, logs and traces while sinks are swapped and the
   trace is flushed (also run under ThreadSanitizer: the tsan preset) ---- */

enum { kThreads = 8, kCallsPerThread = 100 };
static atomic_int g_records_a, g_records_b;
static void count_a(void* u, const shapeml_unstable_log_record* r) {
  (void)u;
  if (!strcmp(r->message, "call failed")) atomic_fetch_add(&g_records_a, 1);
}
static void count_b(void* u, const shapeml_unstable_log_record* r) {
  (void)u;
  if (!strcmp(r->message, "call failed")) atomic_fetch_add(&g_records_b, 1);
}

static void* caller(void* arg) {
  shapeml_module* m = arg;
  for (int i = 0; i < kCallsPerThread; ++i) {
    shapeml_status* st = NULL;
    call_add(m, (i % 2) ? 3 : 4, &st); /* every other call fails (a short input) */
    if ((i % 2) != (st != NULL)) fail_msg("call %d: unexpected status", i);
    shapeml_status_free(st);
  }
  return NULL;
}

static size_t count_of(const char* hay, const char* needle) {
  size_t n = 0;
  for (const char* p = strstr(hay, needle); p; p = strstr(p + 1, needle)) ++n;
  return n;
}

static void threads_trace_and_log_while_sinks_change(void** state) {
  (void)state;
  atomic_store(&g_records_a, 0);
  atomic_store(&g_records_b, 0);
  shapeml_module* m = NULL;
  assert_null(shapeml_module_load(TEST_MODULE_PATH, NULL, &m));
  free(flush_trace());
  assert_null(shapeml_unstable_log_set_levels("warn"));
  assert_null(shapeml_unstable_log_set_sink(count_a, NULL));
  assert_null(shapeml_unstable_trace_start(NULL));
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; ++i) assert_int_equal(pthread_create(&t[i], NULL, caller, m), 0);
  size_t calls = 0;
  for (int k = 0; k < 50; ++k) { /* meanwhile: swap sinks, flush */
    assert_null(shapeml_unstable_log_set_sink((k % 2) ? count_a : count_b, NULL));
    char* json = flush_trace();
    calls += count_of(json, "{\"name\":\"call add\"");
    free(json);
  }
  for (int i = 0; i < kThreads; ++i) pthread_join(t[i], NULL);
  assert_null(shapeml_unstable_trace_stop());
  char* json = flush_trace();
  calls += count_of(json, "{\"name\":\"call add\"");
  free(json);
  assert_null(shapeml_unstable_log_set_sink(NULL, NULL));
  /* Every call traced once, every failure logged once, to one sink or the other. */
  assert_int_equal(calls, kThreads * kCallsPerThread);
  assert_int_equal(atomic_load(&g_records_a) + atomic_load(&g_records_b), kThreads * kCallsPerThread / 2);
  shapeml_module_release(m);
}

#ifdef WITH_COMPILER
static const char kMlp[] =
    "(module tiny\n"
    "  (func mlp\n"
    "    (dims N D)\n"
    "    (params (x (tensor f32 (N D) host)) (w (tensor f32 (D D) host)))\n"
    "    (returns (tensor f32 (N D) host))\n"
    "    (let h (gelu (matmul x w)))\n"
    "    (return (add h x))))\n";

static void compile_and_run_share_one_module_id(void** state) {
  (void)state;
  free(flush_trace());
  shapeml_context_options co = SHAPEML_CONTEXT_OPTIONS_INIT;
  co.trace_flags = SHAPEML_UNSTABLE_TRACE_SPANS; /* the context option starts the recorder */
  shapeml_context* ctx = NULL;
  assert_null(shapeml_context_create(&co, &ctx));
  shapeml_module* m = NULL;
  assert_null(shapeml_module_compile(ctx, "tiny.sml", kMlp, strlen(kMlp), NULL, &m));
  int64_t xs[2] = {2, 4}, ws[2] = {4, 4};
  shapeml_tensor *x = NULL, *w = NULL;
  assert_null(shapeml_tensor_create(NULL, SHAPEML_DTYPE_F32, 2, xs, &x));
  assert_null(shapeml_tensor_create(NULL, SHAPEML_DTYPE_F32, 2, ws, &w));
  shapeml_tensor* in[2] = {x, w};
  shapeml_tensor* out[1] = {NULL};
  assert_null(shapeml_module_call(m, "mlp", in, 2, out, 1));
  shapeml_tensor_release(out[0]);
  assert_null(shapeml_unstable_trace_stop());
  char* json = flush_trace();
  char check_id[32] = "", parse_id[32] = "", call_id[32] = "", jit_id[32] = "", pass_id[32] = "";
  assert_true(event_arg(json, "check_source", "module", check_id, sizeof check_id));
  assert_true(event_arg(json, "parse", "module", parse_id, sizeof parse_id));
  assert_true(event_arg(json, "call mlp", "module", call_id, sizeof call_id));
  assert_true(event_arg(json, "jit compile", "module", jit_id, sizeof jit_id));
  assert_true(event_arg(json, "canonicalize", "module", pass_id, sizeof pass_id)); /* an MLP pass span */
  assert_int_equal(strncmp(check_id, "m-", 2), 0);
  assert_string_equal(check_id, parse_id);
  assert_string_equal(check_id, call_id);
  assert_string_equal(check_id, jit_id);
  assert_string_equal(check_id, pass_id);
  assert_non_null(strstr(json, "{\"name\":\"elaborate\""));
  assert_non_null(strstr(json, "{\"name\":\"emit mlir\""));
  assert_non_null(strstr(json, "{\"name\":\"llvm optimize\""));
  free(json);

  /* The AOT artifact carries the same ID into a later process's traces. */
  char so[] = "/tmp/shapeml-obs-XXXXXX.so";
  int fd = mkstemps(so, 3);
  assert_true(fd >= 0);
  close(fd);
  assert_null(shapeml_module_build_shared_object(ctx, "tiny.sml", kMlp, strlen(kMlp), "mlp:N=2,D=4", SHAPEML_TARGET_X86_64, so));
  free(flush_trace());
  assert_null(shapeml_unstable_trace_start(NULL));
  shapeml_module* aot = NULL;
  assert_null(shapeml_module_load(so, NULL, &aot));
  assert_null(shapeml_module_call(aot, "mlp", in, 2, out, 1));
  shapeml_tensor_release(out[0]);
  assert_null(shapeml_unstable_trace_stop());
  json = flush_trace();
  char aot_id[32] = "";
  assert_true(event_arg(json, "call mlp", "module", aot_id, sizeof aot_id));
  assert_string_equal(aot_id, check_id);
  free(json);
  unlink(so);
  shapeml_module_release(aot);
  shapeml_module_release(m);
  shapeml_tensor_release(x);
  shapeml_tensor_release(w);
  shapeml_context_release(ctx);
}

static void an_old_context_options_struct_never_starts_tracing(void** state) {
  (void)state;
  free(flush_trace());
  /* A 0.3 caller's struct is 16 bytes: what lies after it (here a 1 where
     trace_flags would be) is not read. */
  shapeml_context_options co = SHAPEML_CONTEXT_OPTIONS_INIT;
  co.struct_size = 16;
  co.trace_flags = SHAPEML_UNSTABLE_TRACE_SPANS;
  shapeml_context* ctx = NULL;
  assert_null(shapeml_context_create(&co, &ctx));
  shapeml_check_result* r = NULL;
  assert_null(shapeml_check_source(ctx, "tiny.sml", kMlp, strlen(kMlp), &r));
  char* json = flush_trace();
  assert_null(strstr(json, "check_source"));
  free(json);
  shapeml_check_result_release(r);
  shapeml_context_release(ctx);
  /* A size that ends inside trace_flags is refused. */
  co.struct_size = 20;
  shapeml_status* st = shapeml_context_create(&co, &ctx);
  assert_int_equal(shapeml_status_get_code(st), SHAPEML_STATUS_INVALID_ARGUMENT);
  shapeml_status_free(st);
}

static void z3_queries_are_logged_at_debug(void** state) {
  (void)state;
  /* (* 2 N) against (+ N N) needs the solver or normalization; either way the
     smt component must not log below its level. */
  captured c = {0};
  assert_null(shapeml_unstable_log_set_levels("off,driver=debug"));
  assert_null(shapeml_unstable_log_set_sink(sink, &c));
  shapeml_context* ctx = NULL;
  assert_null(shapeml_context_create(NULL, &ctx));
  shapeml_check_result* r = NULL;
  assert_null(shapeml_check_source(ctx, "tiny.sml", kMlp, strlen(kMlp), &r));
  assert_null(shapeml_unstable_log_set_sink(NULL, NULL));
  int i = find(&c, "driver", "check_source");
  assert_true(i >= 0);
  assert_int_equal(c.level[i], SHAPEML_UNSTABLE_LOG_DEBUG);
  assert_non_null(strstr(c.fields[i], "source=tiny.sml;"));
  for (int k = 0; k < c.count; ++k) assert_string_equal(c.component[k], "driver"); /* everything else is off */
  shapeml_check_result_release(r);
  shapeml_context_release(ctx);
  assert_null(shapeml_unstable_log_set_levels("warn"));
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sink_receives_filtered_records),
      cmocka_unit_test(bad_level_specs_are_rejected),
      cmocka_unit_test(call_errors_name_module_and_entry),
      cmocka_unit_test(trace_records_runtime_spans_with_module_id),
      cmocka_unit_test(trace_flushes_to_a_file),
      cmocka_unit_test(threads_trace_and_log_while_sinks_change),
#ifdef WITH_COMPILER
      cmocka_unit_test(compile_and_run_share_one_module_id),
      cmocka_unit_test(an_old_context_options_struct_never_starts_tracing),
      cmocka_unit_test(z3_queries_are_logged_at_debug),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
