#include "obs/trace.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <mutex>
#include <unistd.h>
#include <vector>

namespace shapeml::obs {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::string module_id_for(std::string_view name, std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
    h ^= 0xff;  // separator: ("ab","c") and ("a","bc") differ
    h *= 1099511628211ull;
  };
  // Only the file name: building the same file from another checkout or
  // directory gives the same ID.
  size_t slash = name.find_last_of('/');
  mix(slash == std::string_view::npos ? name : name.substr(slash + 1));
  mix(text);
  char buf[24];
  std::snprintf(buf, sizeof buf, "m-%016" PRIx64, h);
  return buf;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through
        }
    }
  }
  return out + "\"";
}

#if SHAPEML_INSTRUMENTATION

namespace detail {
std::atomic<uint32_t> g_flags{0};
std::atomic<bool> g_scope_wanted{false};
}

namespace {

struct Event {
  const char* category;  // a literal
  std::string name, args;
  uint64_t begin_ns, duration_ns;
  uint32_t thread;
  uint32_t context;  // interned ThreadContext + 1; 0: none
};

// A module context as recorded: its args, rendered once.
struct Context {
  std::string module, args;  // args: "\"module\":...,\"module_name\":...,\"entry\":..."
};

// Bounded: a runaway trace drops events (counted) rather than eat memory.
constexpr size_t kMaxEvents = size_t{1} << 21;

struct Recorder {
  std::mutex mu;
  std::vector<Event> events;
  uint64_t dropped = 0;
  // Contexts seen (a handful per module: one per entry); looked up once per
  // scope, so a span only stores a number.
  std::vector<Context> contexts;
  std::map<std::string, uint32_t> context_index;
};

Recorder& recorder() {
  static Recorder* r = new Recorder();  // never destroyed: spans may end during static destruction
  return *r;
}

// The interned context of this thread (+1), or 0 when it has none. Called
// with the recorder's lock held.
uint32_t intern_context(Recorder& r) {
  ThreadContext& c = thread_context();
  if (!c.module_id && !c.entry) return 0;
  if (c.interned) return c.interned;
  // The same module and entry as this thread's last scope (a loop of calls):
  // reuse its index without building the key (the strings are compared, not
  // just their addresses, which a later module may reuse).
  thread_local struct {
    const std::string *id = nullptr, *name = nullptr, *entry = nullptr;
    std::string id_copy, name_copy, entry_copy;
    uint32_t index = 0;
  } last;
  if (last.index && last.id == c.module_id && last.name == c.module_name && last.entry == c.entry &&
      (!c.module_id || *c.module_id == last.id_copy) && (!c.module_name || *c.module_name == last.name_copy) &&
      (!c.entry || *c.entry == last.entry_copy)) {
    c.interned = last.index;
    return c.interned;
  }
  std::string key = (c.module_id ? *c.module_id : "") + '\0' + (c.module_name ? *c.module_name : "") + '\0' + (c.entry ? *c.entry : "");
  auto it = r.context_index.find(key);
  if (it == r.context_index.end()) {
    Context x;
    if (c.module_id) {
      x.module = *c.module_id;
      json_kv(x.args, "module", *c.module_id);
      if (c.module_name) json_kv(x.args, "module_name", *c.module_name);
    }
    if (c.entry) json_kv(x.args, "entry", *c.entry);
    r.contexts.push_back(std::move(x));
    it = r.context_index.emplace(std::move(key), static_cast<uint32_t>(r.contexts.size())).first;
  }
  c.interned = it->second;
  last.id = c.module_id;
  last.name = c.module_name;
  last.entry = c.entry;
  last.id_copy = c.module_id ? *c.module_id : "";
  last.name_copy = c.module_name ? *c.module_name : "";
  last.entry_copy = c.entry ? *c.entry : "";
  last.index = c.interned;
  return c.interned;
}

}  // namespace

uint32_t thread_number() {
  static std::atomic<uint32_t> next{1};
  thread_local uint32_t n = next.fetch_add(1, std::memory_order_relaxed);
  return n;
}

ThreadContext& thread_context() {
  thread_local ThreadContext c;
  return c;
}

void start(uint32_t f) { detail::g_flags.store(f | kTraceOn, std::memory_order_relaxed); }
void stop() { detail::g_flags.store(0, std::memory_order_relaxed); }

void record_complete(const char* category, std::string name, uint64_t begin_ns, uint64_t duration_ns, std::string args,
                     uint32_t thread) noexcept {
  Recorder& r = recorder();
  try {
    Event e{category ? category : "", std::move(name), std::move(args), begin_ns, duration_ns, thread ? thread : thread_number(), 0};
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.events.size() >= kMaxEvents) {
      ++r.dropped;
      return;
    }
    e.context = intern_context(r);
    r.events.push_back(std::move(e));
  } catch (...) {
    std::lock_guard<std::mutex> lock(r.mu);
    ++r.dropped;
  }
}

size_t event_count() {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.events.size();
}

void json_kv(std::string& body, std::string_view key, std::string_view value) {
  if (!body.empty()) body += ',';
  body += json_string(key);
  body += ':';
  body += json_string(value);
}

void json_kv(std::string& body, std::string_view key, int64_t value) {
  if (!body.empty()) body += ',';
  body += json_string(key);
  body += ':';
  body += std::to_string(value);
}

void json_kv(std::string& body, std::string_view key, double value) {
  if (!body.empty()) body += ',';
  body += json_string(key);
  char b[32];
  std::snprintf(b, sizeof b, ":%.6g", value);
  body += b;
}

void Span::begin(const char* category, std::string_view name) noexcept {
  State* s = new (storage_) State{category, 0, {}, {}};
  try {
    s->name.assign(name);
  } catch (...) {
    s->~State();
    return;
  }
  active_ = true;
  s->begin_ns = now_ns();
}

void Span::end() noexcept {
  uint64_t t = now_ns();
  active_ = false;
  State& s = st();
  record_complete(s.category ? s.category : "", std::move(s.name), s.begin_ns, t - s.begin_ns, std::move(s.args));
  s.~State();
}

Span& Span::rename(std::string_view name) noexcept {
  if (!active_) return *this;
  try {
    st().name.assign(name);
  } catch (...) {
  }
  return *this;
}

void Span::add(std::string_view key, std::string_view value) noexcept {
  try {
    json_kv(st().args, key, value);
  } catch (...) {
  }
}
void Span::add(std::string_view key, int64_t value) noexcept {
  try {
    json_kv(st().args, key, value);
  } catch (...) {
  }
}
void Span::add(std::string_view key, double value) noexcept {
  try {
    json_kv(st().args, key, value);
  } catch (...) {
  }
}

namespace {
void format_us(std::string& out, uint64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
  out += b;
}
}  // namespace

namespace {
std::string render(const std::vector<Event>& events, const std::vector<Context>& contexts, uint64_t dropped);
}  // namespace

std::string take_json(bool clear) {
  std::vector<Event> events;
  std::vector<Context> contexts;
  uint64_t dropped = 0;
  {
    Recorder& r = recorder();
    std::lock_guard<std::mutex> lock(r.mu);
    contexts = r.contexts;  // kept: threads hold indices into it
    if (clear) {
      events.swap(r.events);
      dropped = r.dropped;
      r.dropped = 0;
    } else {
      events = r.events;
      dropped = r.dropped;
    }
  }
  return render(events, contexts, dropped);
}

bool flush_json(const std::function<bool(const std::string&)>& write) {
  std::vector<Event> events;
  std::vector<Context> contexts;
  uint64_t dropped = 0;
  Recorder& r = recorder();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    contexts = r.contexts;
    events.swap(r.events);
    dropped = r.dropped;
    r.dropped = 0;
  }
  if (write(render(events, contexts, dropped))) return true;
  std::lock_guard<std::mutex> lock(r.mu);
  events.insert(events.end(), std::make_move_iterator(r.events.begin()), std::make_move_iterator(r.events.end()));
  r.events.swap(events);
  r.dropped += dropped;
  return false;
}

namespace {
std::string render(const std::vector<Event>& events, const std::vector<Context>& contexts, uint64_t dropped) {
  uint64_t t0 = UINT64_MAX;
  for (const Event& e : events) t0 = std::min(t0, e.begin_ns);
  if (events.empty()) t0 = 0;
  long pid = static_cast<long>(::getpid());
  std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"shapeml\",\"dropped_events\":" + std::to_string(dropped) +
                    "},\n\"traceEvents\":[\n";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":0,\"args\":{\"name\":\"shapeml\"}}";
  for (const Event& e : events) {
    out += ",\n{\"name\":";
    out += json_string(e.name);
    out += ",\"cat\":";
    out += json_string(e.category);
    out += ",\"ph\":\"X\",\"ts\":";
    format_us(out, e.begin_ns - t0);
    out += ",\"dur\":";
    format_us(out, e.duration_ns);
    out += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(e.thread) + ",\"args\":{";
    out += e.args;
    if (e.context && e.context <= contexts.size()) {
      // The thread's module and entry, unless the span named its own.
      const Context& c = contexts[e.context - 1];
      bool own_module = e.args.find("\"module\":") != std::string::npos;
      if (!own_module && !c.args.empty()) {
        if (!e.args.empty()) out += ',';
        out += c.args;
      } else if (own_module && c.args.find("\"entry\":") != std::string::npos && e.args.find("\"entry\":") == std::string::npos) {
        out += ",\"entry\":" + c.args.substr(c.args.find("\"entry\":") + 8);
      }
    }
    out += "}}";
  }
  out += "\n]}\n";
  return out;
}
}  // namespace

#else

std::string take_json(bool) { return "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"shapeml\",\"instrumentation\":\"off\"},\"traceEvents\":[]}\n"; }

#endif

}  // namespace shapeml::obs
