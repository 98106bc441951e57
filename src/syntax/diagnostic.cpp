#include "syntax/diagnostic.h"

#include <algorithm>
#include <cstdio>

namespace shapeml::syntax {

size_t DiagnosticSink::error_count() const {
  return static_cast<size_t>(std::count_if(diags_.begin(), diags_.end(), [](const Diagnostic& d) { return d.severity == Severity::Error; }));
}

static const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

// Printable form of a source line: bytes outside printable ASCII become '?'
// so that a caret lines up and a terminal never receives control bytes.
static std::string printable(const std::string& s) {
  std::string r = s;
  for (char& c : r)
    if (c == '\t') c = ' ';
    else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return r;
}

static std::string counterexample_text(const Diagnostic& d) {
  std::string s;
  for (const auto& [k, v] : d.counterexample) s += (s.empty() ? "" : ", ") + k + "=" + std::to_string(v);
  return s;
}

std::string render_text(const Diagnostic& d, const SourceFile& src) {
  LineCol b = src.line_col(d.span.begin);
  LineCol e = src.line_col(d.span.end > d.span.begin ? d.span.end - 1 : d.span.begin);
  std::string out = std::string(severity_name(d.severity)) + "[" + d.code + "]: " + printable(d.message) + "\n";
  out += "  --> " + src.name() + ":" + std::to_string(b.line) + ":" + std::to_string(b.col) + "\n";
  std::string line = printable(src.line_text(b.line));
  if (line.size() > 200) line = line.substr(0, 200);
  std::string num = std::to_string(b.line);
  std::string pad(num.size(), ' ');
  out += " " + pad + " |\n";
  out += " " + num + " | " + line + "\n";
  uint32_t start = std::min<uint32_t>(b.col - 1, static_cast<uint32_t>(line.size()));
  uint32_t width = e.line == b.line && e.col >= b.col ? e.col - b.col + 1 : static_cast<uint32_t>(line.size() > start ? line.size() - start : 1);
  width = std::max<uint32_t>(1, std::min<uint32_t>(width, static_cast<uint32_t>(line.size() > start ? line.size() - start : 1)));
  out += " " + pad + " | " + std::string(start, ' ') + std::string(width, '^') + "\n";
  if (!d.expected.empty()) out += " " + pad + " = expected: " + d.expected + "\n";
  if (!d.actual.empty()) out += " " + pad + " =   actual: " + d.actual + "\n";
  if (!d.counterexample.empty()) out += " " + pad + " = counterexample: " + counterexample_text(d) + "\n";
  // A note that starts with "help: " is the fix, rendered as rustc does.
  for (const auto& n : d.notes)
    out += " " + pad + (n.rfind("help: ", 0) == 0 ? " = " + n : " = note: " + n) + "\n";
  return out;
}

std::string json_escape(const std::string& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // Copy a well-formed UTF-8 sequence as is; anything else is U+FFFD.
      size_t n = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
      bool ok = n && c >= 0xc2 && i + n <= s.size();
      for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
      if (ok) {
        r.append(s, i, n);
        i += n - 1;
      } else {
        r += "\\ufffd";
      }
      continue;
    }
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\n': r += "\\n"; break;
      case '\t': r += "\\t"; break;
      case '\r': r += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          r += buf;
        } else {
          r += static_cast<char>(c);
        }
    }
  }
  return r;
}

std::string render_json(const Diagnostic& d, const SourceFile& src) {
  LineCol b = src.line_col(d.span.begin), e = src.line_col(d.span.end);
  std::string o = "{\"code\":\"" + d.code + "\",\"severity\":\"" + severity_name(d.severity) + "\",\"message\":\"" + json_escape(d.message) + "\"";
  o += ",\"file\":\"" + json_escape(src.name()) + "\",\"line\":" + std::to_string(b.line) + ",\"column\":" + std::to_string(b.col);
  o += ",\"end_line\":" + std::to_string(e.line) + ",\"end_column\":" + std::to_string(e.col);
  o += ",\"offset\":" + std::to_string(d.span.begin) + ",\"length\":" + std::to_string(d.span.end - d.span.begin);
  if (!d.expected.empty()) o += ",\"expected\":\"" + json_escape(d.expected) + "\"";
  if (!d.actual.empty()) o += ",\"actual\":\"" + json_escape(d.actual) + "\"";
  if (!d.counterexample.empty()) {
    o += ",\"counterexample\":{";
    for (size_t i = 0; i < d.counterexample.size(); ++i)
      o += (i ? "," : "") + std::string("\"") + json_escape(d.counterexample[i].first) + "\":" + std::to_string(d.counterexample[i].second);
    o += "}";
  }
  o += ",\"notes\":[";
  for (size_t i = 0; i < d.notes.size(); ++i) o += (i ? ",\"" : "\"") + json_escape(d.notes[i]) + "\"";
  return o + "]}";
}

}  // namespace shapeml::syntax
