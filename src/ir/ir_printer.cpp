#include <sstream>

#include "ir/ir.h"
#include "common/numbers.h"

namespace shapeml::ir {

static std::string attrs_text(const Binding& b) {
  using syntax::OpFamily;
  const Attrs& a = b.attrs;
  std::string s;
  auto ints = [](const std::vector<int64_t>& v) {
    std::string r = "(";
    for (size_t i = 0; i < v.size(); ++i) r += (i ? " " : "") + std::to_string(v[i]);
    return r + ")";
  };
  switch (syntax::op_family(b.op)) {
    case OpFamily::Reduce: s = ":axes " + ints(a.axes) + (a.keepdims ? " :keepdims true" : ""); break;
    case OpFamily::Permute: s = ":perm " + ints(a.axes); break;
    case OpFamily::Concat: case OpFamily::Iota: case OpFamily::Softmax: s = ":axis " + std::to_string(a.axis); break;
    case OpFamily::RepeatInterleave: s = ":axis " + std::to_string(a.axis) + " :repeats " + a.size.str(); break;
    case OpFamily::DimValue: s = ":dim " + a.size.str(); break;
    case OpFamily::Slice: s = ":axis " + std::to_string(a.axis) + " :start " + a.start.str() + " :size " + a.size.str(); break;
    case OpFamily::Reshape: case OpFamily::BroadcastTo: s = ":shape " + types::shape_str(a.shape); break;
    case OpFamily::Cast: s = ":to " + a.dtype_value().str(); break;
    case OpFamily::CopyToDevice: s = ":device " + types::device_name(a.device); break;
    case OpFamily::Const: case OpFamily::Fill: {
      // to_chars: independent of the global C++ locale (6 significant
      // digits, as the stream printed before).
      s = ":value " + (a.is_int ? std::to_string(a.int_value) : common::format_double(a.float_value, 6));
      break;
    }
    case OpFamily::Call: {
      s = ":callee " + a.callee;
      if (!a.call_dims.empty()) {
        s += " :dims (";
        for (size_t i = 0; i < a.call_dims.size(); ++i) s += (i ? " (" : "(") + a.call_dims[i].first + " " + a.call_dims[i].second.str() + ")";
        s += ")";
      }
      break;
    }
    case OpFamily::TakeAlongAxis: s = ":axis " + std::to_string(a.axis); break;
    case OpFamily::Scan: s = ":axis " + std::to_string(a.axis) + (a.reverse ? " :reverse true" : ""); break;
    default: break;
  }
  return s.empty() ? s : " {" + s + "}";
}

std::string print_module(const Module& m) {
  std::string out = "module " + m.name + "\n";
  for (const Function& f : m.functions) {
    out += "\nfunc " + f.name + "[";
    for (size_t i = 0; i < f.dims.size(); ++i) out += (i ? ", " : "") + f.dims[i];
    out += "]";
    for (const auto& [v, set] : f.dtype_vars) out += " dtype " + v + " in {" + types::dtype_set_str(set) + "}";
    for (const auto& v : f.device_vars) out += " device " + v;
    if (!f.given.empty()) {
      out += " given";
      for (const auto& g : f.given) out += " " + g;
    }
    if (!f.where.empty()) {
      out += " where";
      for (const auto& c : f.where) out += " " + c.str();
    }
    out += "\n  params";
    for (ValueId p : f.params) out += " " + f.values[p].name + ": " + f.values[p].type.str();
    out += "\n";
    for (const Binding& b : f.body) {
      out += "  ";
      for (size_t i = 0; i < b.results.size(); ++i) out += (i ? ", " : "") + f.values[b.results[i]].name;
      out += " = " + std::string(syntax::op_name(b.op)) + "(";
      for (size_t i = 0; i < b.operands.size(); ++i) out += (i ? ", " : "") + f.values[b.operands[i]].name;
      out += ")" + attrs_text(b) + " :";
      for (ValueId r : b.results) out += " " + f.values[r].type.str();
      out += "\n";
    }
    out += "  return";
    for (ValueId r : f.results) out += " " + f.values[r].name;
    out += "\n";
  }
  return out;
}

}  // namespace shapeml::ir
