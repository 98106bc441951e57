// The canonical layout of S-expressions (`shapemlc fmt`, `--emit=ast`).
#include "syntax/sexpr.h"

namespace shapeml::syntax {
namespace {

bool has_comments(const SExpr& e) {
  if (!e.comments_before.empty() || !e.comments_inside_end.empty()) return true;
  for (const SExpr& c : e.items)
    if (has_comments(c)) return true;
  return false;
}

std::string flat(const SExpr& e) {
  switch (e.kind) {
    case SExpr::Kind::List: {
      std::string s = "(";
      for (size_t i = 0; i < e.items.size(); ++i) s += (i ? " " : "") + flat(e.items[i]);
      return s + ")";
    }
    case SExpr::Kind::Keyword: return ":" + e.text;
    case SExpr::Kind::String: {
      std::string q = "\"";
      for (char c : e.text) q += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
      return q + "\"";
    }
    default: return e.text;
  }
}

void emit(const SExpr& e, int indent, int width, std::string& out);

void emit_comments(const std::vector<std::string>& cs, int indent, std::string& out) {
  for (const auto& c : cs) out += c + "\n" + std::string(indent, ' ');
}

void emit(const SExpr& e, int indent, int width, std::string& out) {
  if (!e.is_list()) {
    out += flat(e);
    return;
  }
  std::string f = flat(e);
  if (!has_comments(e) && indent + static_cast<int>(f.size()) <= width) {
    out += f;
    return;
  }
  out += "(";
  size_t i = 0;
  // Keep the head, and one atom after it (a name), on the opening line.
  if (i < e.items.size() && !e.items[i].is_list() && e.items[i].comments_before.empty()) {
    out += flat(e.items[i++]);
    if (i < e.items.size() && !e.items[i].is_list() && e.items[i].kind != SExpr::Kind::Keyword && e.items[i].comments_before.empty())
      out += " " + flat(e.items[i++]);
  }
  bool first = (i == 0);
  for (; i < e.items.size(); ++i) {
    if (!first) out += "\n" + std::string(indent + 2, ' ');
    first = false;
    emit_comments(e.items[i].comments_before, indent + 2, out);
    // A keyword and its value stay together.
    if (e.items[i].kind == SExpr::Kind::Keyword && i + 1 < e.items.size() && e.items[i + 1].comments_before.empty()) {
      out += flat(e.items[i]) + " ";
      ++i;
      emit(e.items[i], indent + 2 + static_cast<int>(flat(e.items[i - 1]).size()) + 1, width, out);
      continue;
    }
    emit(e.items[i], indent + 2, width, out);
  }
  if (!e.comments_inside_end.empty()) {
    for (const auto& c : e.comments_inside_end) out += "\n" + std::string(indent + 2, ' ') + c;
    out += "\n" + std::string(indent, ' ');
  }
  out += ")";
}

}  // namespace

std::string format_sexpr(const SExpr& e, int width) {
  std::string out;
  emit_comments(e.comments_before, 0, out);
  emit(e, 0, width, out);
  return out;
}

std::string format_sexprs(const SExprFile& file, int width) {
  std::string out;
  for (size_t i = 0; i < file.items.size(); ++i) {
    if (i) out += "\n";
    out += format_sexpr(file.items[i], width) + "\n";
  }
  if (!file.trailing_comments.empty() && !out.empty()) out += "\n";
  for (const auto& c : file.trailing_comments) out += c + "\n";
  return out;
}

}  // namespace shapeml::syntax
