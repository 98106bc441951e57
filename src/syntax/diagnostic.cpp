#include "syntax/diagnostic.h"

#include <algorithm>
#include <cstdio>

#include "common/utf8.h"

namespace shapeml::syntax {

size_t DiagnosticSink::error_count() const {
  return static_cast<size_t>(std::count_if(diags_.begin(), diags_.end(), [](const Diagnostic& d) { return d.severity == Severity::Error; }));
}

Diagnostic& DiagnosticSink::report(std::string code, Span span, std::string message) {
  if (error_count() < kMaxErrorsPerFile) {
    diags_.push_back(Diagnostic{std::move(code), Severity::Error, std::move(message), span, {}, {}, {}, {}, {}, {}, {}});
    last_kept_ = diags_.size() - 1;
    return diags_.back();
  }
  ++suppressed_;
  std::string note = std::to_string(suppressed_) + (suppressed_ == 1 ? " more error in this file is" : " more errors in this file are") +
                     " not shown (at most " + std::to_string(kMaxErrorsPerFile) + " are reported per file)";
  if (last_kept_ < diags_.size()) {
    auto& notes = diags_[last_kept_].notes;
    if (suppressed_ == 1 || notes.empty()) notes.push_back(std::move(note));
    else notes.back() = std::move(note);
  }
  scratch_ = Diagnostic{};
  return scratch_;
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

// At most kLineWindow bytes of the line that holds `offset` (1-based column
// `col`), cut *before* it is made printable, so that rendering a diagnostic
// costs O(window) whatever the line's length (a 10 MB one-line file renders
// as fast as a short one). Columns up to kLineWindow show the line's start,
// as before; a later column shows "..." and a window around it. `start` is
// the caret's 0-based position in the result.
static constexpr size_t kLineWindow = 200;
static std::string line_excerpt(const SourceFile& src, uint32_t offset, LineCol lc, uint32_t& start) {
  const std::string& t = src.text();
  size_t off = std::min<size_t>(offset, t.size());
  size_t line_begin = off >= lc.col - 1 ? off - (lc.col - 1) : 0;
  size_t from = line_begin;
  std::string prefix;
  if (lc.col - 1 >= kLineWindow) {
    from = off - kLineWindow / 2;
    prefix = "...";
  }
  size_t to = from;
  while (to < t.size() && to - from < kLineWindow && t[to] != '\n') ++to;
  if (to > from && t[to - 1] == '\r' && (to == t.size() || t[to] == '\n')) --to;
  std::string line = prefix + printable(t.substr(from, to - from));
  start = static_cast<uint32_t>(std::min<size_t>(prefix.size() + (off - from), line.size()));
  return line;
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
  uint32_t start = 0;
  std::string line = line_excerpt(src, d.span.begin, b, start);
  std::string num = std::to_string(b.line);
  std::string pad(num.size(), ' ');
  out += " " + pad + " |\n";
  out += " " + num + " | " + line + "\n";
  uint32_t width = e.line == b.line && e.col >= b.col ? e.col - b.col + 1 : static_cast<uint32_t>(line.size() > start ? line.size() - start : 1);
  width = std::max<uint32_t>(1, std::min<uint32_t>(width, static_cast<uint32_t>(line.size() > start ? line.size() - start : 1)));
  out += " " + pad + " | " + std::string(start, ' ') + std::string(width, '^') + "\n";
  for (const auto& l : d.labels) {
    // A secondary snippet, as rustc prints one: `::: file:line:col`, the
    // line, and the label under its span.
    LineCol lb = src.line_col(l.span.begin), le = src.line_col(l.span.end > l.span.begin ? l.span.end - 1 : l.span.begin);
    uint32_t ls = 0;
    std::string ltext = line_excerpt(src, l.span.begin, lb, ls);
    std::string lnum = std::to_string(lb.line);
    size_t w = std::max(lnum.size(), num.size());
    std::string lpad(w - lnum.size(), ' ');
    out += " " + pad + "::: " + src.name() + ":" + lnum + ":" + std::to_string(lb.col) + "\n";
    out += " " + lpad + lnum + " | " + ltext + "\n";
    uint32_t lw = le.line == lb.line && le.col >= lb.col ? le.col - lb.col + 1 : 1;
    lw = std::max<uint32_t>(1, std::min<uint32_t>(lw, static_cast<uint32_t>(ltext.size() > ls ? ltext.size() - ls : 1)));
    out += " " + std::string(w, ' ') + " | " + std::string(ls, ' ') + std::string(lw, '-') + " " + printable(l.text) + "\n";
  }
  std::string el = d.expected_label.empty() ? "expected" : d.expected_label;
  std::string al = d.actual_label.empty() ? "actual" : d.actual_label;
  size_t lw = std::max(el.size(), al.size());
  if (!d.expected.empty()) out += " " + pad + " = " + std::string(lw - el.size(), ' ') + el + ": " + d.expected + "\n";
  if (!d.actual.empty()) out += " " + pad + " = " + std::string(lw - al.size(), ' ') + al + ": " + d.actual + "\n";
  if (!d.counterexample.empty()) out += " " + pad + " = counterexample: " + counterexample_text(d) + "\n";
  // A note that starts with "help: " is the fix, rendered as rustc does.
  for (const auto& n : d.notes)
    out += " " + pad + (n.rfind("help: ", 0) == 0 ? " = " + n : " = note: " + n) + "\n";
  // The file name, expected/actual and notes may carry any bytes.
  return common::is_valid_utf8(out) ? out : common::sanitize_utf8(out);
}

std::string json_escape(const std::string& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // Copy a well-formed UTF-8 sequence as is; each maximal ill-formed
      // subpart (overlong forms, surrogates, > U+10FFFF included) is U+FFFD.
      size_t bad, n = common::utf8_sequence(s, i, bad);
      if (n) {
        r.append(s, i, n);
        i += n - 1;
      } else {
        r += "\\ufffd";
        i += bad - 1;
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
  if (!d.expected_label.empty()) o += ",\"expected_label\":\"" + json_escape(d.expected_label) + "\"";
  if (!d.actual_label.empty()) o += ",\"actual_label\":\"" + json_escape(d.actual_label) + "\"";
  if (!d.labels.empty()) {
    o += ",\"labels\":[";
    for (size_t i = 0; i < d.labels.size(); ++i) {
      LineCol lb = src.line_col(d.labels[i].span.begin);
      o += std::string(i ? "," : "") + "{\"line\":" + std::to_string(lb.line) + ",\"column\":" + std::to_string(lb.col) +
           ",\"offset\":" + std::to_string(d.labels[i].span.begin) + ",\"length\":" +
           std::to_string(d.labels[i].span.end - d.labels[i].span.begin) + ",\"text\":\"" + json_escape(d.labels[i].text) + "\"}";
    }
    o += "]";
  }
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
