#include "artifact/module_manifest.h"

#include "common/compiled_entry.h"
#include "lower/cpu/emit_mlir.h"
#include "lower/cpu/index_sites.h"
#include "lower/gpu/plan_gpu.h"

namespace shapeml::artifact {

std::string specialization_symbol(const std::string& entry, size_t index) {
  return lower::cpu::default_func_name(entry) + "_" + std::to_string(index);
}

std::string manifest_text(const ir::Module& m, const std::vector<Specialization>& specs, const std::string& target,
                          std::vector<std::string>* symbols, bool every_function) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>> by_entry;
  // A function whose shape variables only a call's `:dims` can give is no
  // entry point (spec §4.19): the host could not bind them.
  if (every_function)
    for (const auto& f : m.functions) {
      if (!lower::cpu::undetermined_dims(f).empty()) continue;
      order.push_back(f.name);
      by_entry[f.name];
    }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!by_entry.count(specs[i].entry)) order.push_back(specs[i].entry);
    by_entry[specs[i].entry].push_back(i);
  }
  std::vector<std::string> syms(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) syms[i] = specialization_symbol(specs[i].entry, i);
  std::string s = "(shapeml-module (abi " + std::to_string(common::kCompiledEntryAbiVersion) + ") (name " + m.name + ") (target \"" + target + "\")" +
                  (m.id.empty() ? std::string() : " (module-id " + m.id + ")");
  for (const auto& e : order) {
    const ir::Function* f = m.find(e);
    if (!f) continue;
    s += "\n  (entry " + f->name;
    if (!f->dtype_vars.empty()) {  // spec §3.5: before the types that use them
      s += " (dtypes";
      for (const auto& [v, set] : f->dtype_vars) s += " (" + v + " " + types::dtype_set_str(set) + ")";
      s += ")";
    }
    if (!f->device_vars.empty()) {
      s += " (devices";
      for (const auto& v : f->device_vars) s += " " + v;
      s += ")";
    }
    s += " (dims";
    for (const auto& d : f->dims) s += " " + d;
    s += ")";
    if (!f->given.empty()) {
      s += " (given";
      for (const auto& g : f->given) s += " " + g;
      s += ")";
    }
    s += " (where";
    for (const auto& c : f->where) s += " " + c.str();
    s += ")\n    (params";
    for (ir::ValueId p : f->params) s += " (" + f->values[p].name + " " + f->values[p].type.str() + ")";
    s += ")\n    (returns";
    for (const auto& t : f->result_types) s += " " + t.str();
    s += ")";
    if (!f->generic() && lower::gpu::is_device_function(*f)) {
      s += " (kind gpu-plan)";
    } else if (auto sites = lower::cpu::index_sites(m, f->name); !sites.empty()) {
      // The error record's sites (abi 2; docs/design/index-checks.md).
      auto quote = [](const std::string& t) {
        std::string q = "\"";
        for (char c : t) {
          if (c == '"' || c == '\\') q += '\\';
          q += c;
        }
        return q + "\"";
      };
      s += "\n    (index-checks";
      for (size_t k = 0; k < sites.size(); ++k)
        s += " (site " + std::to_string(k + 1) + " " + sites[k].op + " " + quote(sites[k].location) + " " + std::to_string(sites[k].rank) + " " +
             quote(sites[k].operand) + ")";
      s += ")";
    }
    for (size_t i : by_entry[e]) {
      s += "\n    (specialization (bind";
      auto value_of = [&](const std::string& v) {
        auto it = specs[i].bindings.find(v);
        return it == specs[i].bindings.end() ? std::optional<int64_t>() : std::optional<int64_t>(it->second);
      };
      for (const auto& [v, set] : f->dtype_vars) s += " (" + v + " " + (value_of(v) ? types::dtype_binding_text(*value_of(v)) : "?") + ")";
      for (const auto& v : f->device_vars) s += " (" + v + " " + (value_of(v) ? types::device_binding_text(*value_of(v)) : "?") + ")";
      for (const auto& d : f->dims) {
        auto it = specs[i].bindings.find(d);
        s += " (" + d + " " + (it == specs[i].bindings.end() ? std::string("?") : std::to_string(it->second)) + ")";
      }
      s += ") (symbol " + syms[i] + ")" + (specs[i].gpu_plan.empty() ? "" : " (kind gpu-plan)") + ")";
    }
    s += ")";
  }
  s += ")\n";
  if (symbols) *symbols = syms;
  return s;
}

}  // namespace shapeml::artifact
