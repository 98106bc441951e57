// The C ABI over the front end: contexts, checking, diagnostics.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/utf8.h"
#include "common/struct_reader.h"
#include "capi/status.h"
#include "driver/frontend.h"
#include "runtime/context_streams.h"

using shapeml::capi::guarded;
using shapeml::capi::make_status;
using shapeml::capi::null_arg;

struct shapeml_context {
  std::atomic<int64_t> refs{1};
  shapeml::check::CheckOptions options;
  // The context's CUDA streams, one per device, made on first use; shared
  // with the modules compiled here and the tensors they compute.
  std::shared_ptr<shapeml::runtime::ContextStreams> streams = std::make_shared<shapeml::runtime::ContextStreams>();
};

struct shapeml_check_result {
  std::atomic<int64_t> refs{1};
  shapeml::check::CheckResult result;
  // Strings handed out through the ABI, kept alive with the result.
  std::vector<std::string> codes, files;
  // Rendered lazily, once per format, on the first shapeml_check_result_render
  // of that format (a caller that reads diagnostics through the getters never
  // pays for rendering). call_once: results are read from many threads.
  mutable std::once_flag text_once, json_once;
  mutable std::string text, json;
};

namespace shapeml::capi {
void start_tracing(uint64_t flags);  // observability_api.cpp
const check::CheckOptions& context_check_options(const shapeml_context* c) { return c->options; }
std::shared_ptr<runtime::ContextStreams> context_streams(const shapeml_context* c) { return c->streams; }
}  // namespace shapeml::capi

namespace {
// Field ends of the structs this file reads or writes (common/struct_reader.h).
#define END(T, f) SHAPEML_FIELD_END(T, f)
constexpr std::initializer_list<size_t> kContextOptionsEnds = {END(shapeml_context_options, struct_size),
                                                               END(shapeml_context_options, obligation_timeout_ms),
                                                               16,  // sizeof in 0.1-0.3 (padding after the timeout)
                                                               END(shapeml_context_options, trace_flags),
                                                               sizeof(shapeml_context_options)};
constexpr std::initializer_list<size_t> kDiagnosticEnds = {
    END(shapeml_diagnostic, struct_size), END(shapeml_diagnostic, code),     END(shapeml_diagnostic, severity),
    END(shapeml_diagnostic, message),     END(shapeml_diagnostic, file),     END(shapeml_diagnostic, line),
    END(shapeml_diagnostic, column),      END(shapeml_diagnostic, end_line), END(shapeml_diagnostic, end_column),
    END(shapeml_diagnostic, offset),      END(shapeml_diagnostic, length),   END(shapeml_diagnostic, expected),
    END(shapeml_diagnostic, actual),      END(shapeml_diagnostic, counterexample_count), END(shapeml_diagnostic, note_count)};
constexpr std::initializer_list<size_t> kStatsEnds = {
    END(shapeml_unstable_check_stats, struct_size), END(shapeml_unstable_check_stats, obligations),
    END(shapeml_unstable_check_stats, syntactic),   END(shapeml_unstable_check_stats, z3_queries),
    END(shapeml_unstable_check_stats, z3_seconds),  END(shapeml_unstable_check_stats, total_seconds)};
#undef END
}  // namespace

extern "C" {

SHAPEML_API shapeml_status* shapeml_context_create(const shapeml_context_options* options, shapeml_context** out) {
  return guarded("shapeml_context_create", [&]() -> shapeml_status* {
    if (!out) return null_arg("shapeml_context_create", "out");
    *out = nullptr;
    shapeml_context_options o = SHAPEML_CONTEXT_OPTIONS_INIT;
    o.obligation_timeout_ms = 0;  // a caller's short struct leaves the default (2000) below
    if (options && !shapeml::common::read_versioned(*options, o, kContextOptionsEnds))
      return shapeml::capi::bad_struct_size("shapeml_context_create", "options", options->struct_size, sizeof o, kContextOptionsEnds);
    auto* c = new shapeml_context;
    c->options.obligation_timeout_ms = o.obligation_timeout_ms ? o.obligation_timeout_ms : 2000;
    shapeml::capi::start_tracing(o.trace_flags);
    *out = c;
    return nullptr;
  });
}

SHAPEML_API void shapeml_context_retain(shapeml_context* c) {
  if (c) c->refs.fetch_add(1, std::memory_order_relaxed);
}

SHAPEML_API shapeml_status* shapeml_unstable_context_default_stream(shapeml_context* context, int32_t device, void** out) {
  return guarded("shapeml_unstable_context_default_stream", [&]() -> shapeml_status* {
    const char* fn = "shapeml_unstable_context_default_stream";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!context) return null_arg(fn, "context");
    auto s = context->streams->stream(device);
    if (!s) return shapeml::capi::to_status(shapeml::runtime::Status(s.status().code(), std::string(fn) + ": " + s.status().message()));
    *out = *s;
    return nullptr;
  });
}

SHAPEML_API void shapeml_context_release(shapeml_context* c) {
  if (c && c->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete c;
}

SHAPEML_API shapeml_status* shapeml_check_source(shapeml_context* context, const char* name, const char* source, size_t length,
                                                 shapeml_check_result** out) {
  return guarded("shapeml_check_source", [&]() -> shapeml_status* {
    if (!out) return null_arg("shapeml_check_source", "out");
    *out = nullptr;
    if (!context) return null_arg("shapeml_check_source", "context");
    if (auto* st = shapeml::capi::check_source_arg("shapeml_check_source", source, length)) return st;
    auto* r = new shapeml_check_result;
    // Every string a check result hands out is valid UTF-8 (common/utf8.h):
    // the name, and every diagnostic text, which may quote source bytes.
    r->result = shapeml::driver::check_source(shapeml::common::sanitize_utf8(name ? name : "<source>"),
                                              std::string(source ? source : "", length), context->options);
    for (auto& d : r->result.diags.all()) {
      for (std::string* t : {&d.message, &d.expected, &d.actual, &d.expected_label, &d.actual_label})
        if (!shapeml::common::is_valid_utf8(*t)) *t = shapeml::common::sanitize_utf8(*t);
      for (auto& l : d.labels)
        if (!shapeml::common::is_valid_utf8(l.text)) l.text = shapeml::common::sanitize_utf8(l.text);
      for (auto& n : d.notes)
        if (!shapeml::common::is_valid_utf8(n)) n = shapeml::common::sanitize_utf8(n);
      for (auto& c : d.counterexample)
        if (!shapeml::common::is_valid_utf8(c.first)) c.first = shapeml::common::sanitize_utf8(c.first);
    }
    *out = r;
    return nullptr;
  });
}

SHAPEML_API void shapeml_check_result_retain(shapeml_check_result* r) {
  if (r) r->refs.fetch_add(1, std::memory_order_relaxed);
}

SHAPEML_API void shapeml_check_result_release(shapeml_check_result* r) {
  if (r && r->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete r;
}

SHAPEML_API int32_t shapeml_check_result_passed(const shapeml_check_result* r) { return r && r->result.ok() ? 1 : 0; }

SHAPEML_API size_t shapeml_check_result_diagnostic_count(const shapeml_check_result* r) { return r ? r->result.diags.all().size() : 0; }

static shapeml_status* bad_index(const char* fn, size_t i, size_t n) {
  return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": index " + std::to_string(i) + " is out of range (count " + std::to_string(n) + ")");
}

SHAPEML_API shapeml_status* shapeml_check_result_get_diagnostic(const shapeml_check_result* r, size_t index, shapeml_diagnostic* out) {
  return guarded("shapeml_check_result_get_diagnostic", [&]() -> shapeml_status* {
    const char* fn = "shapeml_check_result_get_diagnostic";
    if (!r) return null_arg(fn, "result");
    if (!out) return null_arg(fn, "out");
    if (!shapeml::common::acceptable_struct_size(out->struct_size, sizeof(shapeml_diagnostic), kDiagnosticEnds) || out->struct_size < sizeof(size_t))
      return shapeml::capi::bad_struct_size(fn, "out", out->struct_size, sizeof(shapeml_diagnostic), kDiagnosticEnds);
    const auto& all = r->result.diags.all();
    if (index >= all.size()) return bad_index(fn, index, all.size());
    const auto& d = all[index];
    const auto& src = *r->result.source;
    auto b = src.line_col(d.span.begin), e = src.line_col(d.span.end);
    shapeml_diagnostic full;
    full.struct_size = out->struct_size;
    full.code = d.code.c_str();
    full.severity = static_cast<shapeml_severity>(d.severity);
    full.message = d.message.c_str();
    full.file = src.name().c_str();
    full.line = b.line;
    full.column = b.col;
    full.end_line = e.line;
    full.end_column = e.col;
    full.offset = d.span.begin;
    full.length = d.span.end - d.span.begin;
    full.expected = d.expected.c_str();
    full.actual = d.actual.c_str();
    full.counterexample_count = d.counterexample.size();
    full.note_count = d.notes.size();
    shapeml::common::write_versioned(full, out, kDiagnosticEnds);
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_check_result_get_note(const shapeml_check_result* r, size_t index, size_t note_index, const char** out) {
  return guarded("shapeml_check_result_get_note", [&]() -> shapeml_status* {
    const char* fn = "shapeml_check_result_get_note";
    if (!r) return null_arg(fn, "result");
    if (!out) return null_arg(fn, "out");
    const auto& all = r->result.diags.all();
    if (index >= all.size()) return bad_index(fn, index, all.size());
    if (note_index >= all[index].notes.size()) return bad_index(fn, note_index, all[index].notes.size());
    *out = all[index].notes[note_index].c_str();
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_check_result_get_counterexample(const shapeml_check_result* r, size_t index, size_t k, const char** name,
                                                                    int64_t* value) {
  return guarded("shapeml_check_result_get_counterexample", [&]() -> shapeml_status* {
    const char* fn = "shapeml_check_result_get_counterexample";
    if (!r) return null_arg(fn, "result");
    if (!name) return null_arg(fn, "name");
    if (!value) return null_arg(fn, "value");
    const auto& all = r->result.diags.all();
    if (index >= all.size()) return bad_index(fn, index, all.size());
    const auto& ce = all[index].counterexample;
    if (k >= ce.size()) return bad_index(fn, k, ce.size());
    *name = ce[k].first.c_str();
    *value = ce[k].second;
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_check_result_render(const shapeml_check_result* r, shapeml_format format, const char** out) {
  return guarded("shapeml_check_result_render", [&]() -> shapeml_status* {
    const char* fn = "shapeml_check_result_render";
    if (!r) return null_arg(fn, "result");
    if (!out) return null_arg(fn, "out");
    const auto& src = *r->result.source;
    if (format == SHAPEML_FORMAT_TEXT) {
      std::call_once(r->text_once, [&] {
        std::string t;
        for (const auto& d : r->result.diags.all()) t += shapeml::syntax::render_text(d, src);
        r->text = std::move(t);
      });
      *out = r->text.c_str();
    } else if (format == SHAPEML_FORMAT_JSON) {
      std::call_once(r->json_once, [&] {
        std::string j;
        for (const auto& d : r->result.diags.all()) j += (j.empty() ? "[" : ",") + shapeml::syntax::render_json(d, src);
        r->json = j.empty() ? "[]" : j + "]";
      });
      *out = r->json.c_str();
    } else return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": unknown format " + std::to_string(format));
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_unstable_check_result_stats(const shapeml_check_result* r, shapeml_unstable_check_stats* out) {
  return guarded("shapeml_unstable_check_result_stats", [&]() -> shapeml_status* {
    const char* fn = "shapeml_unstable_check_result_stats";
    if (!r) return null_arg(fn, "result");
    if (!out) return null_arg(fn, "out");
    const auto& s = r->result.stats;
    shapeml_unstable_check_stats full{sizeof full, s.solver.obligations, s.solver.syntactic, s.solver.z3_queries, s.solver.z3_seconds,
                                      s.parse_seconds + s.check_seconds};
    if (!shapeml::common::write_versioned(full, out, kStatsEnds)) return shapeml::capi::bad_struct_size(fn, "out", out->struct_size, sizeof full, kStatsEnds);
    return nullptr;
  });
}

}  // extern "C"
