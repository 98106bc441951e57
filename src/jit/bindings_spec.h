// Parsing specialization lists: "ENTRY:B=4,S=128;ENTRY2:N=8" (C ABI) and
// "B=4,S=128" with a default entry (`shapemlc --bind`).
#pragma once
#include <string>
#include <vector>

#include "lower/cpu/cpu_backend.h"

namespace shapeml::jit {

/// Parses one `[ENTRY:]VAR=VALUE,...` item; `default_entry` is used when the
/// item names none. Returns false with `error` naming the bad part.
bool parse_specialization(const std::string& item, const std::string& default_entry, artifact::Specialization& out, std::string& error);

/// Parses `;`-separated items.
bool parse_specializations(const std::string& text, const std::string& default_entry, std::vector<artifact::Specialization>& out,
                           std::string& error);

}  // namespace shapeml::jit
