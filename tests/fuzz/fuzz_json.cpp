// libFuzzer target: diagnostic rendering with a strict UTF-8 invariant. The
// bytes become a diagnostic's message, expected/actual text, a note, a
// label, a file name and the source it points into (any bytes: surrogates,
// overlong forms, > U+10FFFF, control bytes, truncated sequences). Both the
// text and the JSON rendering must be valid UTF-8, and the JSON must be one
// well-formed object (checked by a small strict JSON scanner).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/utf8.h"
#include "syntax/diagnostic.h"
#include "syntax/source.h"

namespace {
void require(bool c) {
  if (!c) __builtin_trap();
}

// A strict recursive-descent JSON validator (RFC 8259), enough to prove the
// rendering is one value with proper escapes.
struct Json {
  const std::string& s;
  size_t i = 0;
  int depth = 0;
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  }
  bool lit(const char* w) {
    size_t n = std::char_traits<char>::length(w);
    if (s.compare(i, n, w) != 0) return false;
    i += n;
    return true;
  }
  bool str() {
    if (i >= s.size() || s[i] != '"') return false;
    ++i;
    while (i < s.size() && s[i] != '"') {
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c < 0x20) return false;
      if (c == '\\') {
        ++i;
        if (i >= s.size()) return false;
        char e = s[i];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k)
            if (i + k >= s.size() || !isxdigit(static_cast<unsigned char>(s[i + k]))) return false;
          i += 4;
        } else if (std::string("\"\\/bfnrt").find(e) == std::string::npos) {
          return false;
        }
      }
      ++i;
    }
    if (i >= s.size()) return false;
    ++i;
    return true;
  }
  bool num() {
    size_t b = i;
    if (i < s.size() && s[i] == '-') ++i;
    while (i < s.size() && (isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == 'e' || s[i] == 'E' || s[i] == '+' ||
                            s[i] == '-'))
      ++i;
    return i > b;
  }
  bool value() {
    if (++depth > 64) return false;
    ws();
    bool ok;
    if (i >= s.size()) ok = false;
    else if (s[i] == '{') {
      ++i;
      ws();
      ok = true;
      if (i < s.size() && s[i] == '}') ++i;
      else
        for (;;) {
          ws();
          if (!str()) { ok = false; break; }
          ws();
          if (i >= s.size() || s[i] != ':') { ok = false; break; }
          ++i;
          if (!value()) { ok = false; break; }
          ws();
          if (i < s.size() && s[i] == ',') { ++i; continue; }
          if (i < s.size() && s[i] == '}') { ++i; break; }
          ok = false;
          break;
        }
    } else if (s[i] == '[') {
      ++i;
      ws();
      ok = true;
      if (i < s.size() && s[i] == ']') ++i;
      else
        for (;;) {
          if (!value()) { ok = false; break; }
          ws();
          if (i < s.size() && s[i] == ',') { ++i; continue; }
          if (i < s.size() && s[i] == ']') { ++i; break; }
          ok = false;
          break;
        }
    } else if (s[i] == '"') ok = str();
    else if (lit("true") || lit("false") || lit("null")) ok = true;
    else ok = num();
    --depth;
    return ok;
  }
  bool whole() {
    if (!value()) return false;
    ws();
    return i == s.size();
  }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shapeml::syntax;
  FuzzedDataProvider in(data, size);
  std::string name = in.ConsumeRandomLengthString(64);
  std::string message = in.ConsumeRandomLengthString(256);
  std::string expected = in.ConsumeRandomLengthString(64);
  std::string note = in.ConsumeRandomLengthString(64);
  std::string label = in.ConsumeRandomLengthString(64);
  std::string var = in.ConsumeRandomLengthString(16);
  uint32_t b = in.ConsumeIntegral<uint32_t>(), e = in.ConsumeIntegral<uint32_t>();
  uint32_t lb = in.ConsumeIntegral<uint32_t>(), le = in.ConsumeIntegral<uint32_t>();
  std::string text = in.ConsumeRemainingBytesAsString();
  SourceFile src(name, text);
  uint32_t n = static_cast<uint32_t>(text.size());
  // Spans inside the source, as the checker guarantees (fuzz_check).
  uint32_t sb = n ? b % (n + 1) : 0, se = sb + (n - sb ? e % (n - sb + 1) : 0);
  uint32_t tb = n ? lb % (n + 1) : 0, te = tb + (n - tb ? le % (n - tb + 1) : 0);
  DiagnosticSink sink;
  Diagnostic& d = sink.report("E0001", {sb, se}, message);
  d.expected = expected;
  d.actual = message;
  d.notes.push_back(note);
  d.notes.push_back("help: " + note);
  d.labels.push_back({{tb, te}, label});
  d.counterexample.push_back({var, -1});
  std::string t = render_text(d, src);
  std::string j = render_json(d, src);
  require(shapeml::common::is_valid_utf8(t));
  require(shapeml::common::is_valid_utf8(j));
  Json v{j};
  require(v.whole());
  return 0;
}
