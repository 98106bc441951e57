// Diagnostics: stable code, span, message, notes, and an optional
// counterexample. Every stage reports through these; docs/errors.md indexes
// the codes.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "syntax/source.h"

namespace shapeml::syntax {

enum class Severity : int32_t { Error = 0, Warning = 1, Note = 2 };

struct Diagnostic {
  std::string code;  // "E0301"
  Severity severity = Severity::Error;
  std::string message;
  Span span;
  std::string expected, actual;  // types or shapes in the user's own names
  /// How `expected`/`actual` are labelled when printed ("" = "expected" and
  /// "actual"); e.g. "left `x`" and "right `w`" for a matmul's operands.
  std::string expected_label, actual_label;
  /// Secondary spans, each with a short text (e.g. where an operand is
  /// declared), printed after the primary snippet.
  struct Label {
    Span span;
    std::string text;
  };
  std::vector<Label> labels;
  /// Concrete values of shape variables that break the obligation.
  std::vector<std::pair<std::string, int64_t>> counterexample;
  std::vector<std::string> notes;
};

/// At most this many errors are kept per file; the last kept one gets a note
/// "N more errors in this file are not shown". Without a cap a 200 KB line
/// of `()()...` makes 100,000 diagnostics and renders for seconds to hours.
inline constexpr size_t kMaxErrorsPerFile = 100;

class DiagnosticSink {
 public:
  /// Records an error; past kMaxErrorsPerFile it is counted, not kept (the
  /// returned reference is then a scratch object that callers may fill).
  Diagnostic& report(std::string code, Span span, std::string message);
  /// Errors counted but not kept.
  size_t suppressed() const { return suppressed_; }
  const std::vector<Diagnostic>& all() const { return diags_; }
  std::vector<Diagnostic>& all() { return diags_; }
  size_t error_count() const;

 private:
  std::vector<Diagnostic> diags_;
  Diagnostic scratch_;
  size_t suppressed_ = 0;
  size_t last_kept_ = 0;
};

/// Human form: `error[E0301]: ...`, `--> file:line:col`, the line with a
/// caret under the span, then expected/actual/counterexample/notes.
std::string render_text(const Diagnostic& d, const SourceFile& src);
/// One JSON object (no trailing newline).
std::string render_json(const Diagnostic& d, const SourceFile& src);
std::string json_escape(const std::string& s);

}  // namespace shapeml::syntax
