// Source text and spans: every node of every stage keeps the bytes it came from.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace shapeml::syntax {

/// Half-open byte range [begin, end) in one SourceFile.
struct Span {
  uint32_t begin = 0, end = 0;
};

struct LineCol {
  uint32_t line = 1, col = 1;  // 1-based; col counts bytes
};

class SourceFile {
 public:
  SourceFile(std::string name, std::string text);
  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }
  LineCol line_col(uint32_t offset) const;
  /// The text of 1-based line `line`, without its newline.
  std::string line_text(uint32_t line) const;

 private:
  std::string name_, text_;
  std::vector<uint32_t> line_starts_;
};

}  // namespace shapeml::syntax
