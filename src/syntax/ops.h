// The operations of the language (spec §4): one enum shared by the parser,
// the checker's rules and every later stage.
#pragma once
#include <optional>
#include <string_view>

namespace shapeml::syntax {

enum class OpKind {
  // §4.4 elementwise unary
  Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu, Gelu, Silu, Sin, Cos,
  Not,  // §4.20 (bool)
  // §4.6 elementwise binary
  Add, Sub, Mul, Div, Max, Min, Pow,
  And, Or,  // §4.20 (bool)
  // §4.7 comparisons and select
  Eq, Ne, Lt, Le, Gt, Ge, Select,
  // §4.8-4.9
  Cast, Const, Fill, Iota,
  // §4.10-4.16
  Matmul, Transpose, Permute, Reshape, BroadcastTo, Concat, Slice,
  ReduceSum, ReduceMax, ReduceMean, ReduceMin,
  // §4.17
  CopyToDevice, CopyToHost,
  // §4.18
  Call,
  // §4.21-4.23
  Softmax, LogSoftmax, RepeatInterleave, DimValue,
  // indexing (run-time index checks, docs/design/index-checks.md)
  Gather, TakeAlongAxis,
};

enum class OpFamily { Unary, Binary, Compare, Select, Cast, Const, Fill, Iota, Matmul, Transpose, Permute,
                      Reshape, BroadcastTo, Concat, Slice, Reduce, CopyToDevice, CopyToHost, Call, Softmax, RepeatInterleave,
                      DimValue,
                      // indexing: one family each (their rules and lowerings differ)
                      Gather, TakeAlongAxis };

std::optional<OpKind> parse_op(std::string_view name);
std::string_view op_name(OpKind k);
OpFamily op_family(OpKind k);
/// Unary ops that need a floating dtype (exp, log, sin, ...), binary `pow`,
/// `reduce_mean`, `softmax`, `log_softmax`.
bool op_needs_floating(OpKind k);
/// The logical operations `not`, `and`, `or`: bool operands only (§4.20).
bool op_needs_bool(OpKind k);
/// Operations that read at run-time indices (gather, take_along_axis): an
/// entry containing one gets the hidden error record (index-checks.md).
bool op_reads_indices(OpKind k);

}  // namespace shapeml::syntax
