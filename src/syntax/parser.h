// The parser: S-expressions -> AST. Reports malformed forms (E0003) and keeps
// going, so that one file yields every independent syntax error.
#pragma once
#include <optional>

#include "syntax/ast.h"
#include "syntax/diagnostic.h"
#include "syntax/sexpr.h"

namespace shapeml::syntax {

/// Parses a whole file. Returns nullopt when no module could be recovered.
std::optional<ModuleAst> parse_module(const SExprFile& file, DiagnosticSink& diags);

/// Prints an AST back as S-expressions in canonical layout (`--emit=ast`).
std::string print_module(const ModuleAst& m);
std::string print_type(const TypeAst& t);
std::string print_dim(const DimAst& d);

}  // namespace shapeml::syntax
