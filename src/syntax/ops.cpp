#include "syntax/ops.h"

#include <array>
#include <utility>

namespace shapeml::syntax {
namespace {
constexpr std::pair<OpKind, std::string_view> kNames[] = {
    {OpKind::Neg, "neg"}, {OpKind::Abs, "abs"}, {OpKind::Exp, "exp"}, {OpKind::Log, "log"}, {OpKind::Sqrt, "sqrt"},
    {OpKind::Rsqrt, "rsqrt"}, {OpKind::Tanh, "tanh"}, {OpKind::Sigmoid, "sigmoid"}, {OpKind::Relu, "relu"},
    {OpKind::Gelu, "gelu"}, {OpKind::Silu, "silu"}, {OpKind::Add, "add"}, {OpKind::Sub, "sub"}, {OpKind::Mul, "mul"},
    {OpKind::Div, "div"}, {OpKind::Max, "max"}, {OpKind::Min, "min"}, {OpKind::Pow, "pow"}, {OpKind::Eq, "eq"},
    {OpKind::Ne, "ne"}, {OpKind::Lt, "lt"}, {OpKind::Le, "le"}, {OpKind::Gt, "gt"}, {OpKind::Ge, "ge"},
    {OpKind::Select, "select"}, {OpKind::Cast, "cast"}, {OpKind::Const, "const"}, {OpKind::Fill, "fill"},
    {OpKind::Iota, "iota"}, {OpKind::Matmul, "matmul"}, {OpKind::Transpose, "transpose"}, {OpKind::Permute, "permute"},
    {OpKind::Reshape, "reshape"}, {OpKind::BroadcastTo, "broadcast_to"}, {OpKind::Concat, "concat"},
    {OpKind::Slice, "slice"}, {OpKind::ReduceSum, "reduce_sum"}, {OpKind::ReduceMax, "reduce_max"},
    {OpKind::ReduceMean, "reduce_mean"}, {OpKind::CopyToDevice, "copy_to_device"}, {OpKind::CopyToHost, "copy_to_host"},
    {OpKind::Call, "call"}, {OpKind::Sin, "sin"}, {OpKind::Cos, "cos"}, {OpKind::Not, "not"}, {OpKind::And, "and"},
    {OpKind::Or, "or"}, {OpKind::ReduceMin, "reduce_min"}, {OpKind::Softmax, "softmax"},
    {OpKind::LogSoftmax, "log_softmax"}, {OpKind::RepeatInterleave, "repeat_interleave"}, {OpKind::DimValue, "dim_value"},
    // indexing
    {OpKind::Gather, "gather"}, {OpKind::TakeAlongAxis, "take_along_axis"},
    {OpKind::Erf, "erf"}, {OpKind::FloorDiv, "floordiv"}, {OpKind::Mod, "mod"}, {OpKind::Cumsum, "cumsum"},
    {OpKind::Squeeze, "squeeze"}, {OpKind::Unsqueeze, "unsqueeze"}, {OpKind::Pad, "pad"}, {OpKind::Argmax, "argmax"},
    {OpKind::Argmin, "argmin"}, {OpKind::TopK, "top_k"},
};
}  // namespace

std::optional<OpKind> parse_op(std::string_view name) {
  for (const auto& [k, n] : kNames)
    if (n == name) return k;
  return std::nullopt;
}

std::string_view op_name(OpKind k) {
  for (const auto& [kk, n] : kNames)
    if (kk == k) return n;
  return "?";
}

OpFamily op_family(OpKind k) {
  switch (k) {
    case OpKind::Neg: case OpKind::Abs: case OpKind::Exp: case OpKind::Log: case OpKind::Sqrt: case OpKind::Rsqrt:
    case OpKind::Tanh: case OpKind::Sigmoid: case OpKind::Relu: case OpKind::Gelu: case OpKind::Silu:
    case OpKind::Sin: case OpKind::Cos: case OpKind::Erf: case OpKind::Not:
      return OpFamily::Unary;
    case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Max: case OpKind::Min:
    case OpKind::Pow: case OpKind::FloorDiv: case OpKind::Mod: case OpKind::And: case OpKind::Or:
      return OpFamily::Binary;
    case OpKind::Eq: case OpKind::Ne: case OpKind::Lt: case OpKind::Le: case OpKind::Gt: case OpKind::Ge:
      return OpFamily::Compare;
    case OpKind::Select: return OpFamily::Select;
    case OpKind::Cast: return OpFamily::Cast;
    case OpKind::Const: return OpFamily::Const;
    case OpKind::Fill: return OpFamily::Fill;
    case OpKind::Iota: return OpFamily::Iota;
    case OpKind::Matmul: return OpFamily::Matmul;
    case OpKind::Transpose: return OpFamily::Transpose;
    case OpKind::Permute: return OpFamily::Permute;
    case OpKind::Reshape: return OpFamily::Reshape;
    case OpKind::BroadcastTo: return OpFamily::BroadcastTo;
    case OpKind::Concat: return OpFamily::Concat;
    case OpKind::Slice: return OpFamily::Slice;
    case OpKind::ReduceSum: case OpKind::ReduceMax: case OpKind::ReduceMean: case OpKind::ReduceMin: return OpFamily::Reduce;
    case OpKind::CopyToDevice: return OpFamily::CopyToDevice;
    case OpKind::CopyToHost: return OpFamily::CopyToHost;
    case OpKind::Call: return OpFamily::Call;
    case OpKind::Softmax: case OpKind::LogSoftmax: return OpFamily::Softmax;
    case OpKind::RepeatInterleave: return OpFamily::RepeatInterleave;
    case OpKind::DimValue: return OpFamily::DimValue;
    case OpKind::Gather: return OpFamily::Gather;
    case OpKind::TakeAlongAxis: return OpFamily::TakeAlongAxis;
    case OpKind::Cumsum: return OpFamily::Scan;
    case OpKind::Squeeze: return OpFamily::Squeeze;
    case OpKind::Unsqueeze: return OpFamily::Unsqueeze;
    case OpKind::Pad: return OpFamily::Pad;
    case OpKind::Argmax: case OpKind::Argmin: return OpFamily::ArgReduce;
    case OpKind::TopK: return OpFamily::TopK;
  }
  return OpFamily::Unary;
}

bool op_needs_floating(OpKind k) {
  switch (k) {
    case OpKind::Exp: case OpKind::Log: case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Tanh:
    case OpKind::Sigmoid: case OpKind::Gelu: case OpKind::Silu: case OpKind::Pow: case OpKind::ReduceMean:
    case OpKind::Sin: case OpKind::Cos: case OpKind::Erf: case OpKind::Softmax: case OpKind::LogSoftmax:
      return true;
    default:
      return false;
  }
}

bool op_needs_bool(OpKind k) { return k == OpKind::Not || k == OpKind::And || k == OpKind::Or; }
bool op_needs_integral(OpKind k) { return k == OpKind::FloorDiv || k == OpKind::Mod; }
bool op_is_derived(OpKind k) {
  OpFamily f = op_family(k);
  return f == OpFamily::Squeeze || f == OpFamily::Unsqueeze || f == OpFamily::Pad || f == OpFamily::ArgReduce || f == OpFamily::TopK;
}
bool op_reads_indices(OpKind k) { return k == OpKind::Gather || k == OpKind::TakeAlongAxis; }

}  // namespace shapeml::syntax
