#include "plan/plan.h"
#include "plan/verify.h"
#include "common/base64.h"
#include "common/numbers.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <locale>
#include <sstream>

namespace shapeml::plan {

using common::format_double;
using common::parse_double;
using common::ParseDouble;

namespace {
uint16_t f32_to_bf16_bits(float f) {  // round to nearest even; NaN stays a quiet NaN
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

int64_t sat_to_int(double x, int bits) {  // the language's float -> int cast
  double lim = std::ldexp(1.0, bits - 1);
  if (std::isnan(x)) return 0;
  if (x >= lim) return bits == 32 ? INT32_MAX : INT64_MAX;
  if (x < -lim) return bits == 32 ? INT32_MIN : INT64_MIN;
  return static_cast<int64_t>(x);
}
}  // namespace

double gpu_stored_value(double v, GpuDType d) {
  if (d == GpuDType::F64) return v;
  float f = static_cast<float>(v);
  if (d == GpuDType::BF16 && !std::isnan(f)) {  // the bf16 value, back in f32
    uint32_t u = static_cast<uint32_t>(f32_to_bf16_bits(f)) << 16;
    std::memcpy(&f, &u, 4);
  }
  return f;
}

uint64_t gpu_scalar_bits(double v, GpuDType d) {
  switch (d) {
    case GpuDType::F32: {
      float f = static_cast<float>(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return u;
    }
    case GpuDType::F64: {
      uint64_t u;
      std::memcpy(&u, &v, 8);
      return u;
    }
    case GpuDType::BF16: return f32_to_bf16_bits(static_cast<float>(v));
    case GpuDType::I32: return static_cast<uint32_t>(static_cast<int32_t>(sat_to_int(v, 32)));
    case GpuDType::I64: return static_cast<uint64_t>(sat_to_int(v, 64));
    case GpuDType::Bool: return v != 0 ? 1 : 0;
  }
  return 0;
}

int64_t gpu_dtype_size(GpuDType d) {
  switch (d) {
    case GpuDType::F32: return 4;
    case GpuDType::F64: return 8;
    case GpuDType::BF16: return 2;
    case GpuDType::I32: return 4;
    case GpuDType::I64: return 8;
    case GpuDType::Bool: return 1;
  }
  return 0;
}

const char* gpu_dtype_name(GpuDType d) {
  switch (d) {
    case GpuDType::F32: return "f32";
    case GpuDType::F64: return "f64";
    case GpuDType::BF16: return "bf16";
    case GpuDType::I32: return "i32";
    case GpuDType::I64: return "i64";
    case GpuDType::Bool: return "bool";
  }
  return "?";
}

std::optional<GpuDType> parse_gpu_dtype(const std::string& s) {
  for (GpuDType d : {GpuDType::F32, GpuDType::F64, GpuDType::BF16, GpuDType::I32, GpuDType::I64, GpuDType::Bool})
    if (s == gpu_dtype_name(d)) return d;
  return std::nullopt;
}

namespace {
constexpr LaunchKind kAllKinds[] = {
    LaunchKind::Unary,  LaunchKind::Binary, LaunchKind::Compare,   LaunchKind::Select,    LaunchKind::Cast,   LaunchKind::Fill,
    LaunchKind::Iota,   LaunchKind::Matmul, LaunchKind::Transpose, LaunchKind::Reduce,    LaunchKind::Softmax, LaunchKind::Scan,
    LaunchKind::RmsNorm, LaunchKind::Gated, LaunchKind::Repeat,    LaunchKind::Gather,    LaunchKind::TakeAlong, LaunchKind::Attention,
    LaunchKind::Concat, LaunchKind::Fused,  LaunchKind::Slice,     LaunchKind::Broadcast, LaunchKind::Copy,
    LaunchKind::Tf32Split};
}  // namespace

const char* slot_kind_name(GpuSlot::Kind k) {
  switch (k) {
    case GpuSlot::Kind::Input: return "input";
    case GpuSlot::Kind::Output: return "output";
    case GpuSlot::Kind::Temp: return "temp";
    case GpuSlot::Kind::View: return "view";
    case GpuSlot::Kind::HostInput: return "host_input";
    case GpuSlot::Kind::HostOutput: return "host_output";
  }
  return "?";
}

const char* launch_kind_name(LaunchKind k) {
  switch (k) {
    case LaunchKind::Unary: return "unary";
    case LaunchKind::Binary: return "binary";
    case LaunchKind::Compare: return "compare";
    case LaunchKind::Select: return "select";
    case LaunchKind::Cast: return "cast";
    case LaunchKind::Fill: return "fill";
    case LaunchKind::Iota: return "iota";
    case LaunchKind::Matmul: return "matmul";
    case LaunchKind::Transpose: return "transpose";
    case LaunchKind::Reduce: return "reduce";
    case LaunchKind::Softmax: return "softmax";
    case LaunchKind::Scan: return "scan";
    case LaunchKind::RmsNorm: return "rmsnorm";
    case LaunchKind::Gated: return "gated";
    case LaunchKind::Repeat: return "repeat";
    case LaunchKind::Gather: return "gather";
    case LaunchKind::TakeAlong: return "take_along";
    case LaunchKind::Attention: return "attention";
    case LaunchKind::Concat: return "concat";
    case LaunchKind::Fused: return "fused";
    case LaunchKind::Slice: return "slice";
    case LaunchKind::Broadcast: return "broadcast";
    case LaunchKind::Copy: return "copy";
    case LaunchKind::Tf32Split: return "tf32_split";
  }
  return "?";
}

namespace {
int index_of(const std::string& op, std::initializer_list<const char*> names) {
  int i = 0;
  for (const char* n : names) {
    if (op == n) return i;
    ++i;
  }
  return -1;
}
}  // namespace

int reduce_op_number(const std::string& op) { return index_of(op, {"sum", "max", "mean", "min"}); }
int softmax_op_number(const std::string& op) { return index_of(op, {"softmax", "log_softmax"}); }

std::optional<LaunchKind> parse_launch_kind(const std::string& s) {
  for (LaunchKind k : kAllKinds)
    if (s == launch_kind_name(k)) return k;
  return std::nullopt;
}

int64_t GpuSlot::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? " " : "") + std::to_string(s[i]);
  return t + "]";
}

template <class T>
std::string list_text(const std::vector<T>& v) {
  std::string t = std::to_string(v.size());
  for (const auto& x : v) t += " " + std::to_string(x);
  return t;
}

// A whitespace tokenizer over one line that reports what it expected.
struct Tokens {
  std::istringstream in;
  std::string error;
  explicit Tokens(const std::string& line) : in(line) { in.imbue(std::locale::classic()); }  // never the host's locale
  bool word(std::string& out, const char* what) {
    if (in >> out) return true;
    if (error.empty()) error = std::string("expected ") + what;
    return false;
  }
  bool expect(const char* kw) {
    std::string w;
    if (!(in >> w) || w != kw) {
      if (error.empty()) error = std::string("expected `") + kw + "`";
      return false;
    }
    return true;
  }
  template <class T>
  bool number(T& out, const char* what) {
    std::string w;
    if (!word(w, what)) return false;
    auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), out);
    if (ec != std::errc() || p != w.data() + w.size()) {
      if (error.empty()) error = std::string("expected ") + what + ", got `" + w + "`";
      return false;
    }
    return true;
  }
  template <class T>
  bool list(std::vector<T>& out, const char* what) {
    int64_t n = 0;
    if (!number(n, what) || n < 0 || n > (1 << 20)) {
      if (error.empty()) error = std::string("bad count for ") + what;
      return false;
    }
    out.resize(static_cast<size_t>(n));
    for (auto& x : out)
      if (!number(x, what)) return false;
    return true;
  }
};

}  // namespace

std::string GpuPlan::to_text() const {
  std::string s = "gpu-plan " + entry + " device " + std::to_string(device) + " inputs " + std::to_string(num_inputs) + " outputs " +
                  std::to_string(num_outputs) + " workspace " + std::to_string(workspace_bytes) + "\n";
  s += "bind " + std::to_string(binding.size());
  for (const auto& [k, v] : binding) s += " " + k + " " + std::to_string(v);
  s += "\n";
  for (size_t i = 0; i < slots.size(); ++i) {
    const GpuSlot& sl = slots[i];
    s += "slot " + std::to_string(i) + " " + slot_kind_name(sl.kind) + " " + std::to_string(sl.kind == GpuSlot::Kind::View ? sl.alias : sl.index) +
         " " + gpu_dtype_name(sl.dtype) + " " + list_text(sl.shape) + " offset " + std::to_string(sl.offset) + " ; " +
         shape_text(sl.shape) + " " + std::to_string(sl.bytes()) + " bytes\n";
  }
  s += std::string("graph ") + (graph ? "on" : "off") + " ; " + graph_why + "\n";
  s += std::string("branches ") + (branches ? "on" : "off") + " ; " + branches_why + "\n";
  if (!code_arch.empty())
    s += "code " + code_arch + " cubin " + common::base64_encode(code_cubin) + " ptx " + common::base64_encode(code_ptx) + " ; " +
         std::to_string(code_cubin.size()) + "-byte cubin, " + std::to_string(code_ptx.size()) + "-byte PTX\n";
  for (const GpuLaunch& l : launches) {
    std::string scalar = format_double(l.scalar, 17);  // locale-independent
    s += std::string("launch ") + launch_kind_name(l.kind) + " " + (l.op.empty() ? "-" : l.op) + " " + l.library + " in " + list_text(l.inputs) + " out " +
         list_text(l.outputs) + " ints " + list_text(l.ints) + " scalar " + scalar + " flag " + (l.flag ? "1" : "0");
    if (!l.why.empty()) s += " ; " + l.why;
    s += "\n";
  }
  return s;
}

std::optional<GpuPlan> GpuPlan::parse(const std::string& text, std::string& error, bool* over_limit) {
  GpuPlan p;
  std::istringstream lines(text);
  std::string line;
  int lineno = 0;
  bool header = false;
  auto fail = [&](const std::string& m) {
    error = "gpu plan line " + std::to_string(lineno) + ": " + m;
    return std::nullopt;
  };
  while (std::getline(lines, line)) {
    ++lineno;
    std::string why;
    if (size_t c = line.find(" ; "); c != std::string::npos) {
      why = line.substr(c + 3);
      line.resize(c);
    }
    Tokens t(line);
    std::string head;
    if (!(t.in >> head)) continue;  // blank
    if (head == "gpu-plan") {
      if (!t.word(p.entry, "an entry name") || !t.expect("device") || !t.number(p.device, "a device") || !t.expect("inputs") ||
          !t.number(p.num_inputs, "an input count") || !t.expect("outputs") || !t.number(p.num_outputs, "an output count") ||
          !t.expect("workspace") || !t.number(p.workspace_bytes, "a workspace size"))
        return fail(t.error);
      header = true;
    } else if (!header) {
      return fail("expected the `gpu-plan` header first");
    } else if (head == "bind") {
      int64_t n = 0;
      if (!t.number(n, "a count")) return fail(t.error);
      for (int64_t i = 0; i < n; ++i) {
        std::string k;
        int64_t v = 0;
        if (!t.word(k, "a variable") || !t.number(v, "a value")) return fail(t.error);
        p.binding[k] = v;
      }
    } else if (head == "slot") {
      GpuSlot s;
      int64_t id = 0;
      std::string kind, dt;
      int32_t idx = 0;
      if (!t.number(id, "a slot number") || !t.word(kind, "a slot kind") || !t.number(idx, "an index") || !t.word(dt, "a dtype") ||
          !t.list(s.shape, "a dimension") || !t.expect("offset") || !t.number(s.offset, "an offset"))
        return fail(t.error);
      if (id != static_cast<int64_t>(p.slots.size())) return fail("slots must be numbered 0, 1, ... in order");
      bool known = false;
      for (auto k : {GpuSlot::Kind::Input, GpuSlot::Kind::Output, GpuSlot::Kind::Temp, GpuSlot::Kind::View, GpuSlot::Kind::HostInput,
                     GpuSlot::Kind::HostOutput})
        if (kind == slot_kind_name(k)) {
          s.kind = k;
          known = true;
        }
      if (!known) return fail("unknown slot kind `" + kind + "`");
      auto d = parse_gpu_dtype(dt);
      if (!d) return fail("unknown dtype `" + dt + "`");
      s.dtype = *d;
      if (s.kind == GpuSlot::Kind::View) s.alias = idx;
      else s.index = idx;
      p.slots.push_back(std::move(s));
    } else if (head == "graph") {
      std::string v;
      if (!t.word(v, "on or off")) return fail(t.error);
      if (v != "on" && v != "off") return fail("graph must be on or off, got `" + v + "`");
      p.graph = v == "on";
      p.graph_why = why;
    } else if (head == "branches") {
      std::string v;
      if (!t.word(v, "on or off")) return fail(t.error);
      if (v != "on" && v != "off") return fail("branches must be on or off, got `" + v + "`");
      p.branches = v == "on";
      p.branches_why = why;
    } else if (head == "code") {
      std::string cubin, ptx;
      if (!t.word(p.code_arch, "an architecture") || !t.expect("cubin") || !t.word(cubin, "the cubin (base64)") || !t.expect("ptx") ||
          !t.word(ptx, "the PTX (base64)"))
        return fail(t.error);
      if (!common::base64_decode(cubin, p.code_cubin)) return fail("the code's cubin is not base64");
      if (!common::base64_decode(ptx, p.code_ptx)) return fail("the code's PTX is not base64");
    } else if (head == "launch") {
      GpuLaunch l;
      std::string scalar, flag;
      std::string kind;
      if (!t.word(kind, "a kernel") || !t.word(l.op, "an op") || !t.word(l.library, "a library") || !t.expect("in") ||
          !t.list(l.inputs, "a slot") || !t.expect("out") || !t.list(l.outputs, "a slot") || !t.expect("ints") || !t.list(l.ints, "an integer") ||
          !t.expect("scalar") || !t.word(scalar, "a scalar") || !t.expect("flag") || !t.word(flag, "0 or 1"))
        return fail(t.error);
      auto k = parse_launch_kind(kind);
      if (!k) return fail("unknown kernel `" + kind + "`");
      l.kind = *k;
      if (l.op == "-") l.op.clear();
      // %.17g round-trips; "inf"/"nan" too. from_chars: locale-independent.
      if (parse_double(scalar, l.scalar) == ParseDouble::Malformed) return fail("bad scalar `" + scalar + "`");
      if (flag != "0" && flag != "1") return fail("flag must be 0 or 1");
      l.flag = flag == "1";
      l.why = why;
      p.launches.push_back(std::move(l));
    } else {
      return fail("unknown line `" + head + "`");
    }
  }
  if (!header) {
    error = "gpu plan: empty";
    return std::nullopt;
  }
  if (auto d = verify_plan(p)) {
    if (over_limit) *over_limit = d->over_limit;
    error = "gpu plan: " + d->message;
    return std::nullopt;
  }
  return p;
}

}  // namespace shapeml::plan
