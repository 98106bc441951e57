// The operations of the language (spec §4): one enum shared by the parser,
// the checker's rules and every later stage.
#pragma once
#include <optional>
#include <string_view>

namespace shapeml::syntax {

enum class OpKind {
  // §4.4 elementwise unary
  Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu, Gelu, Silu, Sin, Cos, Erf,
  Not,  // §4.20 (bool)
  // §4.6 elementwise binary
  Add, Sub, Mul, Div, Max, Min, Pow,
  FloorDiv, Mod,  // integral only
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
  // §4.27 scans
  Cumsum,
  // §4.28-4.30 derived operations: the elaborator writes them as the
  // primitive operations above (check/derived_ops.h); they never reach the IR.
  Squeeze, Unsqueeze, Pad, Argmax, Argmin, TopK,
};

enum class OpFamily { Unary, Binary, Compare, Select, Cast, Const, Fill, Iota, Matmul, Transpose, Permute,
                      Reshape, BroadcastTo, Concat, Slice, Reduce, CopyToDevice, CopyToHost, Call, Softmax, RepeatInterleave,
                      DimValue,
                      // indexing: one family each (their rules and lowerings differ)
                      Gather, TakeAlongAxis,
                      Scan,
                      // derived (check/derived_ops.h): one family each
                      Squeeze, Unsqueeze, Pad, ArgReduce, TopK };

std::optional<OpKind> parse_op(std::string_view name);
std::string_view op_name(OpKind k);
OpFamily op_family(OpKind k);
/// Unary ops that need a floating dtype (exp, log, sin, ...), binary `pow`,
/// `reduce_mean`, `softmax`, `log_softmax`.
bool op_needs_floating(OpKind k);
/// The logical operations `not`, `and`, `or`: bool operands only (§4.20).
bool op_needs_bool(OpKind k);
/// `floordiv` and `mod`: integral (i32, i64) operands only (§4.6).
bool op_needs_integral(OpKind k);
/// Operations the elaborator expands into primitive ones (check/derived_ops.h).
bool op_is_derived(OpKind k);
/// Operations that read at run-time indices (gather, take_along_axis): an
/// entry containing one gets the hidden error record (index-checks.md).
bool op_reads_indices(OpKind k);

}  // namespace shapeml::syntax
