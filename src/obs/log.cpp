#include "obs/log.h"

#include <cstdlib>
#include <mutex>
#include <shared_mutex>

namespace shapeml::obs {

namespace {
const char* const kLevelNames[] = {"trace", "debug", "info", "warn", "error", "off"};
const char* const kComponentNames[] = {"driver", "parse", "check", "smt", "lower", "codegen", "link", "runtime", "memory", "cuda", "capi"};
static_assert(sizeof kComponentNames / sizeof kComponentNames[0] == static_cast<size_t>(Component::Count));

bool parse_level(std::string_view s, Level& out) {
  for (int i = 0; i <= static_cast<int>(Level::Off); ++i)
    if (s == kLevelNames[i]) {
      out = static_cast<Level>(i);
      return true;
    }
  if (s == "warning") {
    out = Level::Warn;
    return true;
  }
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

struct SinkSlot {
  std::shared_mutex mu;  // readers: emit; writer: set_sink
  SinkFn fn = nullptr;
  void* user = nullptr;
};
SinkSlot& sink_slot() {
  static SinkSlot* s = new SinkSlot();  // never destroyed (records may come during static destruction)
  return *s;
}
}  // namespace

const char* level_name(Level l) {
  int i = static_cast<int>(l);
  return i >= 0 && i <= static_cast<int>(Level::Off) ? kLevelNames[i] : "unknown";
}
const char* component_name(Component c) {
  int i = static_cast<int>(c);
  return i >= 0 && i < static_cast<int>(Component::Count) ? kComponentNames[i] : "unknown";
}

#if SHAPEML_INSTRUMENTATION
namespace detail {
std::atomic<bool> g_has_sink{false};
std::atomic<int32_t> g_levels[static_cast<int>(Component::Count)] = {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3};
}  // namespace detail
#endif

bool set_levels(std::string_view spec, std::string* error) {
  Level def = Level::Off;
  bool have_default = false;
  std::vector<std::pair<int, Level>> overrides;
  const std::string whole(spec);
  // An empty specification or item is a mistake (`""`, `","`, `"info,"`):
  // refused, not read as "no change".
  if (trim(spec).empty()) {
    if (error) *error = "empty log level specification (expected e.g. `info` or `warn,smt=debug`)";
    return false;
  }
  for (bool more = true; more;) {
    size_t comma = spec.find(',');
    std::string_view item = trim(spec.substr(0, comma));
    more = comma != std::string_view::npos;
    spec = more ? spec.substr(comma + 1) : std::string_view();
    if (item.empty()) {
      if (error) *error = "empty item in the log level specification `" + whole + "`";
      return false;
    }
    size_t eq = item.find('=');
    Level l;
    if (eq == std::string_view::npos) {
      if (!parse_level(item, l)) {
        if (error) *error = "unknown log level `" + std::string(item) + "` (expected trace, debug, info, warn, error or off)";
        return false;
      }
      def = l;
      have_default = true;
      continue;
    }
    std::string_view comp = trim(item.substr(0, eq)), lv = trim(item.substr(eq + 1));
    int ci = -1;
    for (int i = 0; i < static_cast<int>(Component::Count); ++i)
      if (comp == kComponentNames[i]) ci = i;
    if (ci < 0) {
      std::string names;
      for (const char* n : kComponentNames) names += (names.empty() ? "" : ", ") + std::string(n);
      if (error) *error = "unknown log component `" + std::string(comp) + "` (components: " + names + ")";
      return false;
    }
    if (!parse_level(lv, l)) {
      if (error) *error = "unknown log level `" + std::string(lv) + "` for component `" + std::string(comp) + "`";
      return false;
    }
    overrides.push_back({ci, l});
  }
#if SHAPEML_INSTRUMENTATION
  if (have_default)
    for (auto& a : detail::g_levels) a.store(static_cast<int32_t>(def), std::memory_order_relaxed);
  for (auto [ci, l] : overrides) detail::g_levels[ci].store(static_cast<int32_t>(l), std::memory_order_relaxed);
#else
  (void)have_default;
  (void)def;
#endif
  return true;
}

Level level_of(Component c) {
#if SHAPEML_INSTRUMENTATION
  int i = static_cast<int>(c);
  if (i < 0 || i >= static_cast<int>(Component::Count)) return Level::Off;
  return static_cast<Level>(detail::g_levels[i].load(std::memory_order_relaxed));
#else
  (void)c;
  return Level::Off;
#endif
}

void set_sink(SinkFn fn, void* user, SinkFn* previous_fn, void** previous_user) {
  SinkSlot& s = sink_slot();
  std::unique_lock<std::shared_mutex> lock(s.mu);
  if (previous_fn) *previous_fn = s.fn;
  if (previous_user) *previous_user = s.user;
  s.fn = fn;
  s.user = user;
#if SHAPEML_INSTRUMENTATION
  detail::g_has_sink.store(fn != nullptr, std::memory_order_relaxed);
  detail::g_scope_wanted.store(fn != nullptr, std::memory_order_relaxed);
#endif
}

#if SHAPEML_INSTRUMENTATION
namespace {
// SHAPEML_LOG is read once, when the library is loaded.
const bool g_env_read = [] {
  if (const char* e = std::getenv("SHAPEML_LOG"); e && *e) set_levels(e);
  return true;
}();
}  // namespace

void emit(Component c, Level l, std::string_view message, std::vector<Field> fields) {
  // A sink that calls into shapeml, which logs again on this thread: that
  // record is dropped (re-entering the sink lock could deadlock).
  thread_local bool in_sink = false;
  if (in_sink) return;
  SinkSlot& s = sink_slot();
  std::shared_lock<std::shared_mutex> lock(s.mu);
  if (!s.fn) return;
  Record r{l, c, message, fields, now_ns(), thread_number(), thread_context()};
  in_sink = true;
  s.fn(s.user, r);
  in_sink = false;
}
#endif

}  // namespace shapeml::obs
