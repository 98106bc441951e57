// Locale-independent number text, used everywhere numbers are parsed or
// printed (the source reader, the MLIR emitter's float constants, the GPU
// plan's text form, the IR printer). printf/strtod/iostreams follow the C
// or C++ locale: a host that calls setlocale(LC_ALL, "") under de_DE would
// make `0.25` malformed and print `0,25` into MLIR. std::from_chars and
// std::to_chars never look at the locale. Header-only: the runtime, the
// compiler and the plugin share it.
#pragma once
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace shapeml::common {

/// `v` as %.<precision>g would print it in the "C" locale ("0.25", "1e+30",
/// "inf", "-nan" for NaN with the sign bit). precision 0 means the shortest
/// text that reads back as the same double.
inline std::string format_double(double v, int precision = 0) {
  char buf[64];
  std::to_chars_result r = precision > 0 ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, precision)
                                         : std::to_chars(buf, buf + sizeof buf, v);
  if (r.ec != std::errc()) return std::isnan(v) ? "nan" : "0";
  return std::string(buf, r.ptr);
}

enum class ParseDouble { Ok, Malformed, OutOfRange };

/// Parses all of `text` as a double in the "C" locale's syntax (an optional
/// leading '+' or '-', decimal or exponent form, "inf", "nan").
inline ParseDouble parse_double(std::string_view text, double& out) {
  if (text.empty()) return ParseDouble::Malformed;
  std::string_view t = text;
  bool plus = t[0] == '+';
  if (plus) {
    t.remove_prefix(1);
    if (t.empty() || t[0] == '-' || t[0] == '+') return ParseDouble::Malformed;
  }
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), out, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves `out` unchanged here; say what strtod would.
    bool neg = t[0] == '-';
    bool tiny = t.find_first_of("eE") != std::string_view::npos && t.find("e-") != std::string_view::npos;
    out = tiny ? (neg ? -0.0 : 0.0) : (neg ? -HUGE_VAL : HUGE_VAL);
    return p == t.data() + t.size() ? ParseDouble::OutOfRange : ParseDouble::Malformed;
  }
  if (ec != std::errc() || p != t.data() + t.size()) return ParseDouble::Malformed;
  return ParseDouble::Ok;
}

}  // namespace shapeml::common
