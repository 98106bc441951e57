// Tracing (docs/design/observability.md): spans of the compiler and the
// runtime, recorded in memory while tracing is on and written as Chrome
// trace-event JSON (ui.perfetto.dev, chrome://tracing).
//
// Cost: with tracing off a Span is one relaxed atomic load and a branch; with
// SHAPEML_INSTRUMENTATION=0 (CMake option SHAPEML_INSTRUMENTATION=OFF) the
// Span class is empty and every call below compiles to nothing.
//
// Correlation: every compiled module has a module ID (module_id_for); a
// ModuleScope puts it (and an entry name) on the current thread, and every
// span recorded under it carries `module` (and `entry`) in its args, so the
// compile spans and the run spans of one module share the ID.
//
// This header has no dependencies beyond the standard library: the runtime,
// the compiler and shapemlc all use it (it is compiled into shapeml_base).
#pragma once
#include <atomic>
#include <new>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#ifndef SHAPEML_INSTRUMENTATION
#define SHAPEML_INSTRUMENTATION 1
#endif

namespace shapeml::obs {

/// Flags of the process-wide recorder.
enum : uint32_t {
  kTraceOn = 1u,    ///< record spans
  kGpuTiming = 2u,  ///< device calls also time every launch with CUDA events (synchronizes after each plan)
};

/// Monotonic nanoseconds (steady_clock, the same clock in every library of
/// the process, so the CUDA plugin's spans line up with the runtime's).
uint64_t now_ns();

/// A module ID: "m-" and 16 hex digits of a 64-bit FNV-1a hash of `name`
/// without its directories and `text` (the source, or the manifest of a
/// module that has no ID).
/// Deterministic: rebuilding the same source gives the same ID, so an AOT
/// .so built elsewhere still matches the compile trace of its source.
std::string module_id_for(std::string_view name, std::string_view text);

#if SHAPEML_INSTRUMENTATION

namespace detail {
extern std::atomic<uint32_t> g_flags;
/// True while a log sink is installed (log records carry the thread's module).
extern std::atomic<bool> g_scope_wanted;
}

/// Whether spans are being recorded (a relaxed load: the cost of a Span when off).
inline bool tracing() { return (detail::g_flags.load(std::memory_order_relaxed) & kTraceOn) != 0; }
inline uint32_t flags() { return detail::g_flags.load(std::memory_order_relaxed); }

/// Starts recording (flags: kTraceOn, optionally kGpuTiming). Events recorded
/// earlier and not yet taken are kept.
void start(uint32_t flags = kTraceOn);
/// Stops recording; recorded events stay until taken.
void stop();

/// Small sequential number of the calling thread (the trace's `tid`).
uint32_t thread_number();

/// One finished span as recorded (exposed for tests and for the plugin hook).
/// `category` must be a string that lives as long as the process (a
/// literal). `args` is the inside of a JSON object ("\"k\":\"v\",\"n\":3")
/// or "". Never throws (on bad_alloc the event is dropped and counted).
void record_complete(const char* category, std::string name, uint64_t begin_ns, uint64_t duration_ns, std::string args,
                     uint32_t thread = 0) noexcept;

/// The recorded events as a Chrome trace-event JSON document; `clear`
/// removes them. Timestamps are microseconds since the first event.
std::string take_json(bool clear = true);
/// Takes the recorded events as take_json(true) does and hands the document
/// to `write`; when it returns false (a full disk, say) the events are put
/// back, before any recorded since, so that a later flush still has them.
bool flush_json(const std::function<bool(const std::string&)>& write);
/// Number of events recorded and not yet taken.
size_t event_count();

/// Appends `"key":"value"` (escaped) to a JSON object body.
void json_kv(std::string& body, std::string_view key, std::string_view value);
void json_kv(std::string& body, std::string_view key, int64_t value);
void json_kv(std::string& body, std::string_view key, double value);
/// `s` as a JSON string literal (with quotes).
std::string json_string(std::string_view s);

/// The module and entry of the work running on this thread (set by ModuleScope).
struct ThreadContext {
  const std::string* module_id = nullptr;
  const std::string* module_name = nullptr;
  const std::string* entry = nullptr;
  /// The recorder's interned (module, name, entry) of this context, +1; 0:
  /// not interned yet (spans then intern it on first use).
  uint32_t interned = 0;
};
ThreadContext& thread_context();

/// Puts a module (and optionally an entry) on this thread for the scope.
/// The strings must outlive the scope. When neither tracing nor a log sink
/// is on it does nothing (two relaxed loads): a scope opened before tracing
/// starts tags nothing.
class ModuleScope {
 public:
  ModuleScope(const std::string* module_id, const std::string* module_name, const std::string* entry = nullptr) {
    if (!(detail::g_flags.load(std::memory_order_relaxed) || detail::g_scope_wanted.load(std::memory_order_relaxed))) return;
    ThreadContext& c = thread_context();
    saved_ = c;
    active_ = true;
    if (module_id) c.module_id = module_id;
    if (module_name) c.module_name = module_name;
    c.entry = entry ? entry : (module_id ? nullptr : saved_.entry);
    c.interned = 0;
  }
  ~ModuleScope() {
    if (active_) thread_context() = saved_;
  }
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  ThreadContext saved_;
  bool active_ = false;
};

/// A span: begins when made (if tracing is on), ends when destroyed. Names
/// are copied only when recording. Use `if (span) span.arg(...)` to avoid
/// building argument strings when tracing is off.
class Span {
 public:
  Span(const char* category, std::string_view name) {
    if (tracing()) begin(category, name);
  }
  ~Span() {
    if (active_) end();
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  explicit operator bool() const { return active_; }

  Span& arg(std::string_view key, std::string_view value) noexcept {
    if (active_) add(key, value);
    return *this;
  }
  Span& arg(std::string_view key, const char* value) { return arg(key, std::string_view(value ? value : "")); }
  Span& arg(std::string_view key, const std::string& value) { return arg(key, std::string_view(value)); }
  Span& arg(std::string_view key, int64_t value) noexcept {
    if (active_) add(key, value);
    return *this;
  }
  Span& arg(std::string_view key, uint64_t value) { return arg(key, static_cast<int64_t>(value)); }
  Span& arg(std::string_view key, int value) { return arg(key, static_cast<int64_t>(value)); }
  Span& arg(std::string_view key, double value) noexcept {
    if (active_) add(key, value);
    return *this;
  }
  /// Renames the span (e.g. once its outcome is known).
  Span& rename(std::string_view name) noexcept;
  /// Ends the span now (the destructor then does nothing).
  void finish() {
    if (active_) end();
  }

 private:
  // None of these throws: on bad_alloc the span (or the argument) is dropped.
  void begin(const char* category, std::string_view name) noexcept;
  void end() noexcept;
  void add(std::string_view key, std::string_view value) noexcept;
  void add(std::string_view key, int64_t value) noexcept;
  void add(std::string_view key, double value) noexcept;
  // Only a flag is initialized when tracing is off; the rest lives in
  // uninitialized storage, constructed by begin() and destroyed by end().
  struct State {
    const char* category;
    uint64_t begin_ns;
    std::string name, args;
  };
  State& st() { return *std::launder(reinterpret_cast<State*>(storage_)); }
  bool active_ = false;
  alignas(State) unsigned char storage_[sizeof(State)];
};

#else  // !SHAPEML_INSTRUMENTATION: everything compiles to nothing

inline bool tracing() { return false; }
inline uint32_t flags() { return 0; }
inline void start(uint32_t = kTraceOn) {}
inline void stop() {}
inline void record_complete(const char*, std::string, uint64_t, uint64_t, std::string, uint32_t = 0) {}
std::string take_json(bool clear = true);
inline bool flush_json(const std::function<bool(const std::string&)>& write) { return write(take_json(true)); }
inline size_t event_count() { return 0; }
inline void json_kv(std::string&, std::string_view, std::string_view) {}
inline void json_kv(std::string&, std::string_view, int64_t) {}
inline void json_kv(std::string&, std::string_view, double) {}
struct ThreadContext {
  const std::string* module_id = nullptr;
  const std::string* module_name = nullptr;
  const std::string* entry = nullptr;
};
class ModuleScope {
 public:
  ModuleScope(const std::string*, const std::string*, const std::string* = nullptr) {}
};
class Span {
 public:
  Span(const char*, std::string_view) {}
  explicit operator bool() const { return false; }
  template <class V>
  Span& arg(std::string_view, const V&) { return *this; }
  Span& rename(std::string_view) { return *this; }
  void finish() {}
};

#endif  // SHAPEML_INSTRUMENTATION

/// Whether this build has instrumentation compiled in.
constexpr bool kInstrumented = SHAPEML_INSTRUMENTATION != 0;

}  // namespace shapeml::obs
