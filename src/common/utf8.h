// Strict UTF-8 (RFC 3629): every message, rendered diagnostic and JSON text
// that leaves shapeml is valid UTF-8, whatever bytes came in (a source file,
// a .npy header, a .npz entry name, a caller-supplied name). Ill-formed
// sequences -- stray continuation bytes, truncated sequences, overlong forms
// (C0 80, E0 80 80, ...), UTF-16 surrogates (ED A0 80 .. ED BF BF) and code
// points above U+10FFFF (F4 90 .., F5..FF) -- become U+FFFD, one per maximal
// ill-formed subpart as the Unicode standard recommends. Header-only: the
// runtime and the compiler share it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shapeml::common {

/// Length of the well-formed UTF-8 sequence at s[i] (1..4), or 0 when the
/// bytes there are ill-formed; `bad` then receives how many bytes the
/// maximal ill-formed subpart spans (>= 1).
inline size_t utf8_sequence(std::string_view s, size_t i, size_t& bad) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  bad = 1;
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c == 0xe0) n = 3, lo = 0xa0;           // no overlong
  else if (c >= 0xe1 && c <= 0xec) n = 3;
  else if (c == 0xed) n = 3, hi = 0x9f;           // no surrogates
  else if (c >= 0xee && c <= 0xef) n = 3;
  else if (c == 0xf0) n = 4, lo = 0x90;           // no overlong
  else if (c >= 0xf1 && c <= 0xf3) n = 4;
  else if (c == 0xf4) n = 4, hi = 0x8f;           // nothing above U+10FFFF
  else return 0;                                  // 80..C1, F5..FF
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return 0;
    unsigned char x = b(i + k);
    bool ok = k == 1 ? (x >= lo && x <= hi) : (x >= 0x80 && x <= 0xbf);
    if (!ok) return 0;
    bad = k + 1;
  }
  return n;
}

inline bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t bad, n = utf8_sequence(s, i, bad);
    if (!n) return false;
    i += n;
  }
  return true;
}

/// `s` with every ill-formed subpart replaced by U+FFFD. Returns `s`
/// unchanged (one copy) when it is already valid.
inline std::string sanitize_utf8(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t bad, n = utf8_sequence(s, i, bad);
    if (n) {
      r.append(s.data() + i, n);
      i += n;
    } else {
      r += "\xEF\xBF\xBD";
      i += bad;
    }
  }
  return r;
}

}  // namespace shapeml::common
