// S-expressions: the concrete syntax tree that the reader produces and the
// formatter prints. Comments are kept as trivia so `shapemlc fmt` loses none.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "syntax/diagnostic.h"
#include "syntax/source.h"

namespace shapeml::syntax {

/// Lists nested deeper than this are rejected (E0005): it bounds every
/// recursive walk of the tree.
inline constexpr int kMaxNesting = 256;

struct SExpr {
  enum class Kind { List, Symbol, Keyword, Int, Float, String } kind = Kind::Symbol;
  /// Symbol or keyword name (keyword without ':'), the literal as written,
  /// or a string literal's value (escapes `\"` and `\\` resolved).
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  std::vector<SExpr> items;
  Span span;
  std::vector<std::string> comments_before;  // `;` comments on lines before this item
  std::vector<std::string> comments_inside_end;  // list only: comments before its `)`

  bool is_list() const { return kind == Kind::List; }
  bool is_symbol(const char* s = nullptr) const { return kind == Kind::Symbol && (!s || text == s); }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  bool is_string() const { return kind == Kind::String; }
};

struct SExprFile {
  std::vector<SExpr> items;
  std::vector<std::string> trailing_comments;
};

/// Reads every top-level form; lexical and bracket errors go to `diags`
/// (E0001 lexical, E0002 brackets, E0004 literal range, E0005 nesting).
/// String literals ("...", with \" and \\) are read for the module manifest
/// (`(target "x86-64")`); the language itself has none, so its parser
/// rejects them wherever they appear.
SExprFile read_sexprs(const SourceFile& src, DiagnosticSink& diags);

/// Canonical layout: a list that fits in the width stays on one line;
/// otherwise its head (and first atom) stay on the opening line and each
/// further item goes on its own line, indented by two.
std::string format_sexprs(const SExprFile& file, int width = 80);
std::string format_sexpr(const SExpr& e, int width = 80);

}  // namespace shapeml::syntax
