// Levelled, structured logging (docs/design/observability.md). A record is
// {level, component, message, key/values, time, thread}; it goes to the one
// sink a host installs (the C ABI's shapeml_unstable_log_set_sink, or
// shapemlc's stderr printer). With no sink nothing is formatted and nothing
// is printed: the library never writes to stdout or stderr on its own.
//
// Levels per component come from SHAPEML_LOG ("info,smt=debug": a bare
// level is the default, COMPONENT=LEVEL overrides one) read once when the
// library loads, or from set_levels(). The default is `warn`.
//
// Cost of a disabled record: two relaxed atomic loads and a branch (the
// SHAPEML_LOG_AT macro evaluates its arguments only when enabled); nothing at
// all with SHAPEML_INSTRUMENTATION=0.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "obs/trace.h"

namespace shapeml::obs {

/// Levels, in increasing severity. The numbers are the C ABI's SHAPEML_LOG_LEVEL_*.
enum class Level : int32_t { Trace = 0, Debug = 1, Info = 2, Warn = 3, Error = 4, Off = 5 };

/// Components (one per stage of docs/design/stages.md, plus the ABI layer).
enum class Component : int32_t { Driver, Parse, Check, Smt, Lower, Codegen, Link, Runtime, Memory, Cuda, Capi, Count };

const char* level_name(Level l);
const char* component_name(Component c);

struct Field {
  std::string key, value;
};

struct Record {
  Level level;
  Component component;
  std::string_view message;
  const std::vector<Field>& fields;
  uint64_t time_ns;  // now_ns()
  uint32_t thread;
  const ThreadContext& context;  // module / entry of the work on this thread (may be empty)
};

/// The sink: called on the logging thread; must be thread-safe.
using SinkFn = void (*)(void* user, const Record& record);

/// Installs a sink (NULL: none); returns the previous one through the out
/// parameters when they are non-null. Calls in flight may still reach the
/// previous sink until this returns.
void set_sink(SinkFn fn, void* user, SinkFn* previous_fn = nullptr, void** previous_user = nullptr);

/// Parses a level spec ("info,smt=debug,runtime=off") and applies it; on a
/// bad spec nothing changes and `error` says why.
bool set_levels(std::string_view spec, std::string* error = nullptr);
/// The threshold of a component.
Level level_of(Component c);

#if SHAPEML_INSTRUMENTATION
namespace detail {
extern std::atomic<bool> g_has_sink;
extern std::atomic<int32_t> g_levels[static_cast<int>(Component::Count)];
}  // namespace detail

inline bool log_enabled(Component c, Level l) {
  return detail::g_has_sink.load(std::memory_order_relaxed) &&
         static_cast<int32_t>(l) >= detail::g_levels[static_cast<int>(c)].load(std::memory_order_relaxed);
}

/// Sends one record (call only when log_enabled; the macro does).
void emit(Component c, Level l, std::string_view message, std::vector<Field> fields = {});

#define SHAPEML_LOG_AT(component, level, message, ...)                                                        \
  do {                                                                                                         \
    if (::shapeml::obs::log_enabled(::shapeml::obs::Component::component, ::shapeml::obs::Level::level))       \
      ::shapeml::obs::emit(::shapeml::obs::Component::component, ::shapeml::obs::Level::level, message, {__VA_ARGS__}); \
  } while (0)
#else
inline bool log_enabled(Component, Level) { return false; }
inline void emit(Component, Level, std::string_view, std::vector<Field> = {}) {}
#define SHAPEML_LOG_AT(component, level, message, ...) \
  do {                                                 \
  } while (0)
#endif

}  // namespace shapeml::obs
