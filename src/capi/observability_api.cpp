// The C ABI of tracing and logging (unstable tier; docs/design/observability.md).
// Compiled into both libraries: each has its own recorder and sink.
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "common/struct_reader.h"
#include "capi/status.h"
#include "obs/log.h"
#include "obs/trace.h"
#include "runtime/file_io.h"

using shapeml::capi::guarded;
using shapeml::capi::make_status;
using shapeml::capi::null_arg;

namespace {

struct CSink {
  shapeml_unstable_log_sink fn = nullptr;
  void* user = nullptr;
};

// Adapts an internal record to the C struct; nothing here may throw into the sink's caller.
void forward(void* u, const shapeml::obs::Record& r) {
  const CSink* s = static_cast<const CSink*>(u);
  try {
    std::vector<shapeml_unstable_log_field> fields;
    fields.reserve(r.fields.size());
    for (const auto& f : r.fields) fields.push_back({f.key.c_str(), f.value.c_str()});
    std::string message(r.message);
    shapeml_unstable_log_record c{};
    c.struct_size = sizeof c;
    c.level = static_cast<shapeml_unstable_log_level>(r.level);
    c.component = shapeml::obs::component_name(r.component);
    c.message = message.c_str();
    c.num_fields = fields.size();
    c.fields = fields.data();
    c.time_ns = r.time_ns;
    c.thread = r.thread;
    c.module_id = r.context.module_id ? r.context.module_id->c_str() : "";
    c.entry = r.context.entry ? r.context.entry->c_str() : "";
    s->fn(s->user, &c);
  } catch (...) {
    // A record that cannot be built (out of memory) is dropped.
  }
}

CSink g_sinks[2];
std::atomic<int> g_current{0};

#define TRACE_END(f) SHAPEML_FIELD_END(shapeml_unstable_trace_options, f)
constexpr std::initializer_list<size_t> kTraceOptionsEnds = {TRACE_END(struct_size), TRACE_END(flags), sizeof(shapeml_unstable_trace_options)};
#undef TRACE_END

shapeml_status* not_instrumented(const char* fn) {
  return make_status(SHAPEML_STATUS_UNIMPLEMENTED,
                     std::string(fn) + ": this library was built with SHAPEML_INSTRUMENTATION=OFF (tracing and logging compiled out)");
}

}  // namespace

namespace shapeml::capi {
// Starts tracing with `flags` (shapeml_context_options.trace_flags).
void start_tracing(uint64_t flags) {
  if (flags) shapeml::obs::start(static_cast<uint32_t>(flags) | shapeml::obs::kTraceOn);
}
}  // namespace shapeml::capi

extern "C" {

SHAPEML_API shapeml_status* shapeml_unstable_log_set_sink(shapeml_unstable_log_sink sink, void* user) {
  return guarded("shapeml_unstable_log_set_sink", [&]() -> shapeml_status* {
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    if (!sink) {
      shapeml::obs::set_sink(nullptr, nullptr);
      return nullptr;
    }
    // Two slots: the one in use stays valid for records in flight while the
    // other is filled and swapped in (set_sink waits for those records).
    int next = 1 - g_current.load();
    g_sinks[next] = CSink{sink, user};
    shapeml::obs::set_sink(forward, &g_sinks[next]);
    g_current.store(next);
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_unstable_log_set_levels(const char* spec) {
  return guarded("shapeml_unstable_log_set_levels", [&]() -> shapeml_status* {
    if (!spec) return null_arg("shapeml_unstable_log_set_levels", "spec");
    if (!shapeml::obs::kInstrumented) return not_instrumented("shapeml_unstable_log_set_levels");
    std::string error;
    if (!shapeml::obs::set_levels(spec, &error)) return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, "shapeml_unstable_log_set_levels: " + error);
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_unstable_trace_start(const shapeml_unstable_trace_options* options) {
  return guarded("shapeml_unstable_trace_start", [&]() -> shapeml_status* {
    shapeml_unstable_trace_options o = SHAPEML_UNSTABLE_TRACE_OPTIONS_INIT;
    if (options && !shapeml::common::read_versioned(*options, o, kTraceOptionsEnds))
      return shapeml::capi::bad_struct_size("shapeml_unstable_trace_start", "options", options->struct_size, sizeof o, kTraceOptionsEnds);
    if (!shapeml::obs::kInstrumented) return not_instrumented("shapeml_unstable_trace_start");
    shapeml::obs::start(static_cast<uint32_t>(o.flags) | shapeml::obs::kTraceOn);
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_unstable_trace_stop(void) {
  shapeml::obs::stop();
  return nullptr;
}

SHAPEML_API shapeml_status* shapeml_unstable_trace_flush_to_file(const char* path) {
  return guarded("shapeml_unstable_trace_flush_to_file", [&]() -> shapeml_status* {
    if (!path) return null_arg("shapeml_unstable_trace_flush_to_file", "path");
    // As save_npy writes (docs/design/atomic-writes.md): a temporary renamed
    // into place, so a full disk or a kill leaves the previous trace whole;
    // a FIFO or device is refused without opening it (fopen on a FIFO with
    // no reader blocked forever); the events stay recorded when the write
    // fails, so a second flush still has them.
    shapeml::runtime::Status st;
    bool ok = shapeml::obs::flush_json([&](const std::string& doc) {
      st = shapeml::runtime::write_file_atomic(path, doc.data(), doc.size());
      return st.ok();
    });
    if (!ok) return shapeml::capi::to_status(shapeml::runtime::Status(st.code(), "shapeml_unstable_trace_flush_to_file: " + st.message()));
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_unstable_trace_flush(shapeml_unstable_trace_writer write, void* user) {
  return guarded("shapeml_unstable_trace_flush", [&]() -> shapeml_status* {
    if (!write) return null_arg("shapeml_unstable_trace_flush", "write");
    std::string doc = shapeml::obs::take_json(/*clear=*/true);
    write(user, doc.data(), doc.size());
    return nullptr;
  });
}

}  // extern "C"
