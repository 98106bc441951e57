// The expression program of a `fused` launch (plan/plan.h): a group of
// elementwise launches that the compiler merged into one kernel
// (src/lower/gpu/fuse_elementwise.cpp makes it, src/cuda/executor runs it;
// docs/design/gpu-fusion.md). Shared by both sides and header-only, so the
// compiler, the plan verifier and the plugin agree on one encoding and on one
// set of typing rules.
//
// The program is SSA: node k may use only nodes < k; the last node is the
// launch's output value, evaluated once per output element. It is stored in
// the launch's `ints` as
//   ints = {n, then n records of kFields integers: kind op dtype a b c}
// with, per kind:
//   load     a = which launch input (read at the output element's position,
//            broadcast right-aligned to the output's shape); dtype = the
//            input slot's
//   const    a = the bit pattern of a double (std::bit_cast); the executor
//            converts it to `dtype` exactly as a `fill` launch converts its
//            scalar, so an inlined fill is the same value
//   iota     a = an axis of the OUTPUT's shape: the element's index along it,
//            converted to dtype as the `iota` launch converts it
//   unary    op: neg abs exp log sqrt rsqrt tanh sigmoid relu gelu silu sin
//            cos erf not (0..14); a = operand
//   binary   op: add sub mul div max min pow floordiv mod and or (0..10); a, b
//   compare  op: eq ne lt le gt ge (0..5); a, b; dtype bool
//   select   a = condition (bool), b = value if true, c = value if false
//   cast     a = operand; dtype = the target
// Unused fields are -1. Each op has the typing rule of its unfused launch
// (check() below), and bf16 is not a node type (bf16 rounds after every op;
// the fusion pass leaves bf16 groups unfused).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "plan/geometry.h"
#include "plan/plan.h"

namespace shapeml::plan::fused {

enum Kind : int32_t { kLoad = 0, kConst = 1, kIota = 2, kUnary = 3, kBinary = 4, kCompare = 5, kSelect = 6, kCast = 7 };

// Unary ops 0..13 and binary ops 0..8 are numbered as the executor's kernels
// (cuda/executor/kernels.h) and the plan's op names; `not`, `and`, `or` follow.
constexpr int32_t kUnaryNot = 14, kBinaryAnd = 9, kBinaryOr = 10;

constexpr int kFields = 6;
// Bounds that keep the kernel's parameter block small (a fixed-size struct
// passed by value, < 4 KB) and its register file at 32 entries.
constexpr int kMaxNodes = 32;
constexpr int kMaxInputs = 8;
constexpr int kMaxIotaAxes = 8;

struct Node {
  int32_t kind = kLoad, op = -1;
  GpuDType dtype = GpuDType::F32;
  int64_t a = -1, b = -1, c = -1;
};

inline const char* const* unary_names() {
  static const char* const n[] = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "silu", "sin", "cos", "erf", "not"};
  return n;
}
inline const char* const* binary_names() {
  static const char* const n[] = {"add", "sub", "mul", "div", "max", "min", "pow", "floordiv", "mod", "and", "or"};
  return n;
}
inline const char* const* compare_names() {
  static const char* const n[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return n;
}
constexpr int kNumUnary = 15, kNumBinary = 11, kNumCompare = 6;

/// The op number of `name` for kind (unary, binary or compare), or -1.
inline int32_t op_number(int32_t kind, const std::string& name) {
  const char* const* names = kind == kUnary ? unary_names() : kind == kBinary ? binary_names() : kind == kCompare ? compare_names() : nullptr;
  int count = kind == kUnary ? kNumUnary : kind == kBinary ? kNumBinary : kind == kCompare ? kNumCompare : 0;
  for (int i = 0; i < count; ++i)
    if (name == names[i]) return i;
  return -1;
}

inline int64_t double_bits(double v) {
  int64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}
inline double bits_double(int64_t b) {
  double v;
  std::memcpy(&v, &b, 8);
  return v;
}

inline std::vector<int64_t> encode(const std::vector<Node>& nodes) {
  std::vector<int64_t> ints{static_cast<int64_t>(nodes.size())};
  for (const Node& n : nodes) {
    ints.insert(ints.end(), {n.kind, n.op, static_cast<int64_t>(n.dtype), n.a, n.b, n.c});
  }
  return ints;
}

/// Decodes `ints`; "" when well formed (sizes, kinds, dtypes), else why not.
inline std::string decode(const std::vector<int64_t>& ints, std::vector<Node>& nodes) {
  nodes.clear();
  if (ints.empty()) return "fused program: empty";
  int64_t n = ints[0];
  if (n < 1 || n > kMaxNodes) return "fused program: " + std::to_string(n) + " nodes (1 to " + std::to_string(kMaxNodes) + ")";
  if (static_cast<int64_t>(ints.size()) != 1 + n * kFields) return "fused program: ints has the wrong length for " + std::to_string(n) + " nodes";
  for (int64_t k = 0; k < n; ++k) {
    const int64_t* f = &ints[static_cast<size_t>(1 + k * kFields)];
    Node nd;
    if (f[0] < kLoad || f[0] > kCast) return "fused program: node " + std::to_string(k) + " has unknown kind " + std::to_string(f[0]);
    if (f[2] < 0 || f[2] > static_cast<int64_t>(GpuDType::Bool)) return "fused program: node " + std::to_string(k) + " has unknown dtype";
    if (f[1] < -1 || f[1] > 64) return "fused program: node " + std::to_string(k) + " has a bad op";
    nd.kind = static_cast<int32_t>(f[0]);
    nd.op = static_cast<int32_t>(f[1]);
    nd.dtype = static_cast<GpuDType>(f[2]);
    nd.a = f[3], nd.b = f[4], nd.c = f[5];
    nodes.push_back(nd);
  }
  return "";
}

inline bool is_float_dt(GpuDType d) { return d == GpuDType::F32 || d == GpuDType::F64; }
inline bool is_int_dt(GpuDType d) { return d == GpuDType::I32 || d == GpuDType::I64; }

/// The typing rules, which are the unfused launches' (the executor's
/// prepare): "" when `nodes` is a program over inputs of `input_dtypes` into
/// an output of `out_dtype` and rank `out_rank`, else the first problem.
inline std::string check(const std::vector<Node>& nodes, const std::vector<GpuDType>& input_dtypes, GpuDType out_dtype, size_t out_rank) {
  if (nodes.empty() || nodes.size() > static_cast<size_t>(kMaxNodes)) return "fused program: bad node count";
  if (input_dtypes.size() > static_cast<size_t>(kMaxInputs)) return "fused program: more than " + std::to_string(kMaxInputs) + " inputs";
  std::vector<int64_t> iota_axes;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& n = nodes[k];
    std::string at = "fused program node " + std::to_string(k) + ": ";
    if (n.dtype == GpuDType::BF16) return at + "bf16 is not a fused node type";
    auto arg = [&](int64_t i) { return i >= 0 && i < static_cast<int64_t>(k); };
    auto dt = [&](int64_t i) { return nodes[static_cast<size_t>(i)].dtype; };
    switch (n.kind) {
      case kLoad:
        if (n.a < 0 || n.a >= static_cast<int64_t>(input_dtypes.size())) return at + "load of a missing input";
        if (input_dtypes[static_cast<size_t>(n.a)] != n.dtype) return at + "load dtype differs from the input's";
        break;
      case kConst: break;
      case kIota: {
        if (n.a < 0 || n.a >= static_cast<int64_t>(out_rank)) return at + "iota axis out of range";
        bool seen = false;
        for (int64_t x : iota_axes) seen |= x == n.a;
        if (!seen) iota_axes.push_back(n.a);
        if (iota_axes.size() > static_cast<size_t>(kMaxIotaAxes)) return at + "too many iota axes";
        break;
      }
      case kUnary:
        if (!arg(n.a) || dt(n.a) != n.dtype) return at + "unary operand missing or of another dtype";
        if (n.op == kUnaryNot) {
          if (n.dtype != GpuDType::Bool) return at + "`not` takes bool";
        } else if (n.op < 0 || n.op >= kNumUnary) {
          return at + "unknown unary op";
        } else if (!(is_float_dt(n.dtype) || (is_int_dt(n.dtype) && (n.op == 0 || n.op == 1 || n.op == 8)))) {  // neg abs relu
          return at + "`" + unary_names()[n.op] + "` does not take " + gpu_dtype_name(n.dtype);
        }
        break;
      case kBinary:
        if (!arg(n.a) || !arg(n.b) || dt(n.a) != n.dtype || dt(n.b) != n.dtype) return at + "binary operands missing or of another dtype";
        if (n.op == kBinaryAnd || n.op == kBinaryOr) {
          if (n.dtype != GpuDType::Bool) return at + "`and`/`or` take bool";
        } else if (n.op < 0 || n.op >= kNumBinary) {
          return at + "unknown binary op";
        } else if (!(is_float_dt(n.dtype) || is_int_dt(n.dtype)) || (n.op == 6 && !is_float_dt(n.dtype)) ||  // 6: pow
                   ((n.op == 7 || n.op == 8) && !is_int_dt(n.dtype))) {                                     // 7, 8: floordiv, mod
          return at + "`" + binary_names()[n.op] + "` does not take " + gpu_dtype_name(n.dtype);
        }
        break;
      case kCompare:
        if (!arg(n.a) || !arg(n.b) || dt(n.a) != dt(n.b)) return at + "compare operands missing or of different dtypes";
        if (n.dtype != GpuDType::Bool) return at + "a comparison gives bool";
        if (n.op < 0 || n.op >= kNumCompare) return at + "unknown compare op";
        break;
      case kSelect:
        if (!arg(n.a) || !arg(n.b) || !arg(n.c)) return at + "select operand missing";
        if (dt(n.a) != GpuDType::Bool) return at + "select condition is not bool";
        if (dt(n.b) != n.dtype || dt(n.c) != n.dtype) return at + "select branches of another dtype";
        break;
      case kCast:
        if (!arg(n.a)) return at + "cast operand missing";
        break;
      default: return at + "unknown kind";
    }
  }
  if (nodes.back().dtype != out_dtype) return "fused program: the last node's dtype is not the output's";
  return "";
}

/// The operands of a fused launch as its kernels index them (the
/// interpreter in the plugin, the generated kernels, the verifier's limits):
/// each input's broadcast strides over the output, then one pseudo-operand
/// per distinct iota axis, in order of first use, with stride 1 on that axis
/// and 0 elsewhere (its offset is the index along the axis).
struct Operands {
  std::vector<Shape> strides;            // inputs, then iota axes
  std::vector<size_t> iota_operand;      // node k (an iota): its operand
};

/// Fills `ops` for a program of `nodes` over inputs of `input_shapes` into
/// `out_shape`; -1 when every input broadcasts, else the first one that does
/// not.
inline int64_t operands(const std::vector<Node>& nodes, const std::vector<Shape>& input_shapes, const Shape& out_shape, Operands& ops) {
  ops.strides.clear();
  ops.iota_operand.assign(nodes.size(), 0);
  for (size_t i = 0; i < input_shapes.size(); ++i) {
    Shape st;
    if (!broadcast_strides(input_shapes[i], out_shape, st)) return static_cast<int64_t>(i);
    ops.strides.push_back(std::move(st));
  }
  std::vector<int64_t> axes;
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (nodes[k].kind != kIota) continue;
    size_t at = 0;
    while (at < axes.size() && axes[at] != nodes[k].a) ++at;
    if (at == axes.size()) {
      axes.push_back(nodes[k].a);
      Shape e1(out_shape.size(), 0);
      e1[static_cast<size_t>(nodes[k].a)] = 1;
      ops.strides.push_back(std::move(e1));
    }
    ops.iota_operand[k] = input_shapes.size() + at;
  }
  return -1;
}

}  // namespace shapeml::plan::fused
