#include "jit/bindings_spec.h"

#include <charconv>

#include "types/tensor_type.h"

namespace shapeml::jit {

static std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool parse_specialization(const std::string& raw, const std::string& default_entry, artifact::Specialization& out, std::string& error) {
  std::string item = trim(raw);
  out = {};
  size_t colon = item.find(':');
  std::string list = item;
  if (colon != std::string::npos) {
    out.entry = trim(item.substr(0, colon));
    list = item.substr(colon + 1);
  } else {
    out.entry = default_entry;
  }
  if (out.entry.empty()) {
    error = "`" + item + "` names no entry point (write ENTRY:VAR=VALUE,...)";
    return false;
  }
  if (trim(list).empty()) return true;  // an entry without shape variables
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string kv = trim(list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (kv.empty()) {  // `N=4,,M=2`, `N=4,`: a mistake, not nothing
      error = "an empty VAR=VALUE item in `" + item + "`";
      return false;
    }
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      error = "`" + kv + "` is not VAR=VALUE";
      return false;
    }
    std::string var = trim(kv.substr(0, eq)), val = trim(kv.substr(eq + 1));
    int64_t v = 0;
    auto [p, ec] = std::from_chars(val.data(), val.data() + val.size(), v);
    if (ec != std::errc() || p != val.data() + val.size() || v < 1) {
      // A dtype or device variable's value (spec §3.5): `T=bf16`, `Dv=cuda0`.
      if (auto d = types::parse_dtype_binding(val)) v = *d;
      else if (auto dv = types::parse_device_binding(val)) v = *dv;
      else {
        error = "the value of `" + var + "` must be a positive integer (a shape variable), a dtype (f32 f64 bf16 i32 i64 bool) or a device (host, cuda0, ...), not `" +
                val + "`";
        return false;
      }
    }
    if (out.bindings.count(var)) {
      error = "`" + var + "` is bound twice";
      return false;
    }
    out.bindings[var] = v;
  }
  return true;
}

bool parse_specializations(const std::string& text, const std::string& default_entry, std::vector<artifact::Specialization>& out,
                           std::string& error) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t semi = text.find(';', pos);
    std::string item = text.substr(pos, semi == std::string::npos ? std::string::npos : semi - pos);
    pos = semi == std::string::npos ? text.size() + 1 : semi + 1;
    if (trim(item).empty()) {  // `addv:N=4;;`, a trailing `;`: a mistake, not nothing
      if (trim(text).empty()) break;
      error = "an empty specialization between `;` in `" + text + "`";
      return false;
    }
    artifact::Specialization s;
    if (!parse_specialization(item, default_entry, s, error)) return false;
    out.push_back(std::move(s));
  }
  if (out.empty()) {
    error = "no specialization given";
    return false;
  }
  return true;
}

}  // namespace shapeml::jit
