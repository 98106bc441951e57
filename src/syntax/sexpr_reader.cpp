// The reader: bytes -> SExpr trees, iterative so that no input can exhaust
// the stack.
#include <cerrno>
#include <charconv>
#include <cstdlib>

#include "syntax/sexpr.h"

#include "common/numbers.h"

namespace shapeml::syntax {
namespace {

bool is_symbol_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '\'' ||
         c == '+' || c == '-' || c == '*' || c == '/' || c == '=' || c == '!' || c == '<' || c == '>' || c == '%';
}

// Length of the UTF-8 sequence at s[i], or 0 if it is malformed.
size_t utf8_length(const std::string& s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  if (n == 2 && c < 0xc2) return 0;  // overlong
  return n;
}

bool looks_numeric(const std::string& t) {
  size_t i = (t[0] == '-' || t[0] == '+') ? 1 : 0;
  return i < t.size() && t[i] >= '0' && t[i] <= '9';
}

class Reader {
 public:
  Reader(const SourceFile& src, DiagnosticSink& diags) : s_(src.text()), diags_(diags) {}

  SExprFile run() {
    SExprFile file;
    std::vector<SExpr> stack;  // open lists
    std::vector<std::string> pending;  // comments waiting for the next item
    auto attach = [&](SExpr e) {
      e.comments_before = std::move(pending);
      pending.clear();
      if (stack.empty()) file.items.push_back(std::move(e));
      else stack.back().items.push_back(std::move(e));
    };
    while (pos_ < s_.size()) {
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == ';') {
        size_t b = pos_;
        while (pos_ < s_.size() && s_[pos_] != '\n') {
          size_t n = utf8_length(s_, pos_);
          if (n == 0) {
            error("E0001", pos_, pos_ + 1, "invalid UTF-8 byte in a comment");
            n = 1;
          }
          pos_ += n;
        }
        std::string text = s_.substr(b, pos_ - b);
        while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.pop_back();
        pending.push_back(text);
      } else if (c == '(') {
        if (static_cast<int>(stack.size()) >= kMaxNesting) {
          error("E0005", pos_, pos_ + 1, "lists are nested more than " + std::to_string(kMaxNesting) + " levels deep");
          return file;  // the rest cannot be read reliably
        }
        SExpr l;
        l.kind = SExpr::Kind::List;
        l.span = {static_cast<uint32_t>(pos_), 0};
        l.comments_before = std::move(pending);
        pending.clear();
        stack.push_back(std::move(l));
        ++pos_;
      } else if (c == ')') {
        if (stack.empty()) {
          error("E0002", pos_, pos_ + 1, "unexpected `)` with no open `(`");
          ++pos_;
          continue;
        }
        SExpr l = std::move(stack.back());
        stack.pop_back();
        l.comments_inside_end = std::move(pending);
        pending.clear();
        l.span.end = static_cast<uint32_t>(++pos_);
        std::vector<std::string> before = std::move(l.comments_before);
        pending = std::move(before);
        attach(std::move(l));
      } else if (c == ':') {
        size_t b = pos_++;
        while (pos_ < s_.size() && is_symbol_char(static_cast<unsigned char>(s_[pos_]))) ++pos_;
        SExpr k;
        k.kind = SExpr::Kind::Keyword;
        k.text = s_.substr(b + 1, pos_ - b - 1);
        k.span = {static_cast<uint32_t>(b), static_cast<uint32_t>(pos_)};
        if (k.text.empty()) error("E0001", b, pos_, "`:` must be followed by a keyword name");
        attach(std::move(k));
      } else if (c == '"') {
        size_t b = pos_++;
        SExpr str;
        str.kind = SExpr::Kind::String;
        bool closed = false;
        while (pos_ < s_.size()) {
          char ch = s_[pos_];
          if (ch == '"') {
            closed = true;
            ++pos_;
            break;
          }
          if (ch == '\\' && pos_ + 1 < s_.size() && (s_[pos_ + 1] == '"' || s_[pos_ + 1] == '\\')) ++pos_;
          else if (ch == '\n') break;
          str.text += s_[pos_++];
        }
        str.span = {static_cast<uint32_t>(b), static_cast<uint32_t>(pos_)};
        if (!closed) error("E0001", b, pos_, "unterminated string literal");
        attach(std::move(str));
      } else if (is_symbol_char(c)) {
        size_t b = pos_;
        while (pos_ < s_.size() && is_symbol_char(static_cast<unsigned char>(s_[pos_]))) ++pos_;
        attach(atom(b, pos_));
      } else {
        size_t n = utf8_length(s_, pos_);
        if (n == 0) error("E0001", pos_, pos_ + 1, "invalid UTF-8 byte");
        else error("E0001", pos_, pos_ + n, "unexpected character `" + s_.substr(pos_, n) + "`");
        pos_ += n ? n : 1;
      }
    }
    if (!stack.empty()) {
      // Report the outermost unclosed list: that is where the fix goes.
      const SExpr& open = stack.front();
      error("E0002", open.span.begin, open.span.begin + 1, "unclosed `(`: the file ends before its `)`");
      file.items.clear();
    }
    file.trailing_comments = std::move(pending);
    return file;
  }

 private:
  SExpr atom(size_t b, size_t e) {
    SExpr a;
    a.text = s_.substr(b, e - b);
    a.span = {static_cast<uint32_t>(b), static_cast<uint32_t>(e)};
    const std::string& t = a.text;
    if (t == "inf" || t == "-inf" || t == "nan") {
      a.kind = SExpr::Kind::Float;
      (void)common::parse_double(t, a.float_value);
    } else if (looks_numeric(t) && t[0] == '+') {
      // Spec §1: numbers are `-?[0-9]+...`; a `+` sign is not part of the
      // language (it was read as the number, so `+4` silently meant 4).
      a.kind = SExpr::Kind::Int;
      error("E0001", b, e, "malformed number `" + t + "`: numbers take no `+` sign (write `" + t.substr(1) + "`)");
    } else if (looks_numeric(t)) {
      bool is_float = t.find_first_of(".eE") != std::string::npos;
      if (!is_float) {
        a.kind = SExpr::Kind::Int;
        auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), a.int_value);
        if (ec == std::errc::result_out_of_range) error("E0004", b, e, "integer literal `" + t + "` does not fit in 64 bits");
        else if (ec != std::errc() || p != t.data() + t.size()) error("E0001", b, e, "malformed number `" + t + "`");
      } else {
        a.kind = SExpr::Kind::Float;
        // std::from_chars: the host's locale (a comma decimal separator)
        // must not change what a program means.
        common::ParseDouble pr = common::parse_double(t, a.float_value);
        if (pr == common::ParseDouble::Malformed) error("E0001", b, e, "malformed number `" + t + "`");
        else if (pr == common::ParseDouble::OutOfRange && (a.float_value > 1 || a.float_value < -1))
          error("E0004", b, e, "float literal `" + t + "` is out of range");
      }
    }
    return a;
  }

  void error(const char* code, size_t b, size_t e, std::string msg) {
    if (diags_.all().size() >= 200) return;  // a binary file should not produce a million errors
    diags_.report(code, {static_cast<uint32_t>(b), static_cast<uint32_t>(e)}, std::move(msg));
  }

  const std::string& s_;
  DiagnosticSink& diags_;
  size_t pos_ = 0;
};

}  // namespace

SExprFile read_sexprs(const SourceFile& src, DiagnosticSink& diags) { return Reader(src, diags).run(); }

}  // namespace shapeml::syntax
