#include "check/derived_ops.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <set>

namespace shapeml::check {

using syntax::OpKind;
using types::DType;
using types::Poly;
using types::Shape;
using types::ShapeConstraint;
using types::TensorType;
using K = ShapeConstraint::Kind;

namespace {

// top_k's bound on k: each value is one round of ~12 bindings.
constexpr int64_t kMaxTopK = 256;

std::string opn(OpKind op) { return "`" + std::string(syntax::op_name(op)) + "`"; }

// An axis of a rank-`rank` tensor, possibly counted from the end, as 0..rank-1.
std::optional<int64_t> axis_in(OpKind op, int64_t a, int64_t rank, RuleEnv& env, const TensorType& t) {
  if (a < -rank || a >= rank) {
    env.fail({"E0204", "axis " + std::to_string(a) + " is out of range for " + opn(op) + " on a rank-" + std::to_string(t.rank()) + " tensor",
              "", t.str(), {rank == 0 ? "a rank-0 tensor has no axis" : "valid axes are " + std::to_string(-rank) + " .. " + std::to_string(rank - 1)}});
    return std::nullopt;
  }
  return a < 0 ? a + rank : a;
}

bool rank_at_least_1(OpKind op, const TensorType& t, RuleEnv& env) {
  if (t.rank() >= 1) return true;
  env.fail({"E0203", opn(op) + " needs an operand of rank >= 1, got rank 0", "", t.str(), {"reshape a scalar with `(reshape X (1))`"}});
  return false;
}

// The i64 position of every element along `axis` (an iota of t's shape), and
// the axis' extent as a rank-0 i64: the "no hit" position of an argmax.
struct Positions {
  ir::ValueId pos, past_end;
};
std::optional<Positions> positions(const TensorType& t, int64_t axis, DerivedOpSink& sink) {
  ir::Attrs io;
  io.dtype = DType::I64;
  io.device = t.device;
  io.shape = t.shape;
  io.axis = axis;
  auto pos = sink.emit(OpKind::Iota, {}, io);
  ir::Attrs dv;
  dv.size = t.shape[static_cast<size_t>(axis)];
  dv.dtype = DType::I64;
  dv.device = t.device;
  auto past_end = sink.emit(OpKind::DimValue, {}, dv);
  if (!pos || !past_end) return std::nullopt;
  return Positions{*pos, *past_end};
}

std::optional<ir::ValueId> reshape_to(ir::ValueId x, Shape s, DerivedOpSink& sink) {
  ir::Attrs a;
  a.shape = std::move(s);
  return sink.emit(OpKind::Reshape, {x}, a);
}

// §4.28 squeeze: the named dimensions, each provably 1, removed (a reshape).
std::optional<ir::ValueId> squeeze(ir::ValueId x, const DerivedAttrs& at, DerivedOpSink& sink) {
  const TensorType t = sink.type(x);
  RuleEnv& env = sink.env();
  std::vector<int64_t> written = at.axis ? std::vector<int64_t>{*at.axis} : at.axes;
  std::set<int64_t> axes;
  for (int64_t a : written) {
    auto n = axis_in(OpKind::Squeeze, a, static_cast<int64_t>(t.rank()), env, t);
    if (!n) return std::nullopt;
    if (!axes.insert(*n).second) {
      env.fail({"E0204", "axis " + std::to_string(a) + " is squeezed twice", "", t.str(), {}});
      return std::nullopt;
    }
  }
  bool ok = true;
  for (int64_t a : axes) {
    const Poly& d = t.shape[static_cast<size_t>(a)];
    if (d.is_one()) continue;
    ok &= env.require({K::Eq, d, Poly::constant(1)},
                      {"E0301", "`squeeze`: dimension " + std::to_string(a) + " is " + d.str() + ", which may not be 1", "", t.str(),
                       {"only dimensions of extent 1 can be removed; `reduce_sum` or `slice` remove others",
                        "help: if it is always 1, state it with `(where (= " + d.str() + " 1))`"}});
  }
  if (!ok) return std::nullopt;
  Shape out;
  for (size_t i = 0; i < t.rank(); ++i)
    if (!axes.count(static_cast<int64_t>(i))) out.push_back(t.shape[i]);
  return reshape_to(x, out, sink);
}

// §4.28 unsqueeze: a dimension 1 inserted before position `axis` of the
// result (-1: at the end), as torch.unsqueeze.
std::optional<ir::ValueId> unsqueeze(ir::ValueId x, const DerivedAttrs& at, DerivedOpSink& sink) {
  const TensorType t = sink.type(x);
  auto a = axis_in(OpKind::Unsqueeze, *at.axis, static_cast<int64_t>(t.rank()) + 1, sink.env(), t);
  if (!a) return std::nullopt;
  Shape out = t.shape;
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(*a), Poly::constant(1));
  return reshape_to(x, out, sink);
}

// §4.29 pad: `low` copies of the value before the axis, `high` after. When
// each width is provably 0 or provably >= 1 it is one concat of the
// non-empty parts; otherwise (a width that is 0 for some shapes and not for
// others, e.g. (- K 1)) a concat of two pads of width P = low + high + 1 >= 1
// around x, and the slice of the window [P - low, P + d + high): every
// obligation of that form follows from low >= 0 and high >= 0.
std::optional<ir::ValueId> pad(ir::ValueId x, const DerivedAttrs& at, DerivedOpSink& sink) {
  const TensorType t = sink.type(x);
  RuleEnv& env = sink.env();
  if (!rank_at_least_1(OpKind::Pad, t, env)) return std::nullopt;
  auto ax = axis_in(OpKind::Pad, *at.axis, static_cast<int64_t>(t.rank()), env, t);
  if (!ax) return std::nullopt;
  const size_t a = static_cast<size_t>(*ax);
  bool ok = true;
  for (const auto& [w, name] : {std::pair{&at.low, ":low"}, std::pair{&at.high, ":high"}}) {
    auto c = w->constant_value();
    if ((c && *c >= 0) || w->obviously_positive()) continue;
    ok &= env.require({K::Ge, *w, Poly::constant(0)},
                        {"E0309", "`pad` width `" + std::string(name) + " " + w->str() + "` may be negative", "", t.str(),
                         {"a pad adds elements; remove elements with `slice`"}});
  }
  if (!ok) return std::nullopt;
  syntax::ExprAst zero;
  zero.kind = syntax::ExprAst::Kind::Number;
  zero.is_int = true;
  zero.literal = "0";
  const syntax::ExprAst& value = at.value ? *at.value : zero;
  auto padding = [&](const Poly& width) {
    TensorType p = t;
    p.shape[a] = width;
    return sink.fill(value, p);
  };
  auto nonempty = [&](const Poly& n) -> std::optional<bool> {
    if (n.constant_value() == 0 || sink.proves({K::Eq, n, Poly::constant(0)})) return false;
    if (n.obviously_positive() || sink.proves({K::Ge, n, Poly::constant(1)})) return true;
    return std::nullopt;
  };
  ir::Attrs cat;
  cat.axis = *ax;
  auto pre = nonempty(at.low), post = nonempty(at.high);
  if (pre && post) {
    std::vector<ir::ValueId> parts;
    if (*pre) {
      auto p = padding(at.low);
      if (!p) return std::nullopt;
      parts.push_back(*p);
    }
    parts.push_back(x);
    if (*post) {
      auto p = padding(at.high);
      if (!p) return std::nullopt;
      parts.push_back(*p);
    }
    if (parts.size() == 1) {  // both widths 0: the operand itself, as a new value
      ir::Attrs same;
      same.shape = t.shape;
      return sink.emit(OpKind::BroadcastTo, {x}, same);
    }
    return sink.emit(OpKind::Concat, parts, cat);
  }
  Poly wide = at.low + at.high + Poly::constant(1);
  auto p = padding(wide);
  if (!p) return std::nullopt;
  auto both = sink.emit(OpKind::Concat, {*p, x, *p}, cat);
  if (!both) return std::nullopt;
  ir::Attrs window;
  window.axis = *ax;
  window.start = at.high + Poly::constant(1);  // P - low
  window.size = t.shape[a] + at.low + at.high;
  return sink.emit(OpKind::Slice, {*both}, window);
}

// §4.30 argmax / argmin: the i64 index of the first extremum along the axis,
// a NaN counting as the extremum (as NumPy and PyTorch). With m the
// reduce_max (reduce_min) over the axis, which propagates NaN, the hits are
// x = m or x is NaN (a NaN exists exactly when m is NaN); the result is the
// smallest hit position: reduce_min of select(hit, iota, d).
std::optional<ir::ValueId> arg_extremum(OpKind op, ir::ValueId x, const DerivedAttrs& at, DerivedOpSink& sink) {
  const TensorType t = sink.type(x);
  RuleEnv& env = sink.env();
  if ((t.possible_dtypes() & ~types::kNumericDTypes) != 0) {
    env.fail({"E0202", opn(op) + " needs a numeric operand, not " + t.dtype_str(), "", t.str(),
              {t.dtype == DType::Var ? "help: restrict the dtype variable to numeric dtypes: `(dtypes (" + t.dtype_var + " numeric))`"
                                     : "convert with `(cast X i32)` first"}});
    return std::nullopt;
  }
  if (!rank_at_least_1(op, t, env)) return std::nullopt;
  auto ax = axis_in(op, *at.axis, static_cast<int64_t>(t.rank()), env, t);
  if (!ax) return std::nullopt;
  ir::Attrs red;
  red.axes = {*ax};
  red.keepdims = true;
  auto m = sink.emit(op == OpKind::Argmax ? OpKind::ReduceMax : OpKind::ReduceMin, {x}, red);
  if (!m) return std::nullopt;
  auto hit = sink.emit(OpKind::Eq, {x, *m}, {});
  if (!hit) return std::nullopt;
  if (t.possible_dtypes() & types::kFloatingDTypes) {  // (x != x is false on integers)
    auto nan = sink.emit(OpKind::Ne, {x, x}, {});
    if (!nan) return std::nullopt;
    hit = sink.emit(OpKind::Or, {*hit, *nan}, {});
    if (!hit) return std::nullopt;
  }
  auto where = positions(t, *ax, sink);
  if (!where) return std::nullopt;
  auto cand = sink.emit(OpKind::Select, {*hit, where->pos, where->past_end}, {});
  if (!cand) return std::nullopt;
  red.keepdims = at.keepdims;
  return sink.emit(OpKind::ReduceMin, {*cand}, red);
}

}  // namespace

// §4.31 top_k: K rounds of the argmax above over the positions not taken
// yet (a taken position reads as the dtype's lowest value, and is excluded
// from the hits, so a real lowest value still counts once), each giving the
// next index and, through take_along_axis, its value (whose derivative
// reaches exactly that position, as PyTorch's topk); the rounds are
// concatenated along the axis. Descending, ties and NaN as argmax: a NaN is
// the largest, equal values come in increasing index order.
std::optional<std::pair<ir::ValueId, ir::ValueId>> expand_top_k(ir::ValueId x, const DerivedAttrs& at, DerivedOpSink& sink) {
  const TensorType t = sink.type(x);
  RuleEnv& env = sink.env();
  const types::DTypeSet may = t.possible_dtypes();
  if ((may & ~types::kNumericDTypes) != 0) {
    env.fail({"E0202", "`top_k` needs a numeric operand, not " + t.dtype_str(), "", t.str(),
              {t.dtype == DType::Var ? "help: restrict the dtype variable to numeric dtypes: `(dtypes (" + t.dtype_var + " numeric))`"
                                     : "convert with `(cast X i32)` first"}});
    return std::nullopt;
  }
  // The lowest value marks a taken position: -inf, or the integer minimum.
  if ((may & types::kFloatingDTypes) ? (may & ~types::kFloatingDTypes) != 0 : (may != types::dtype_bit(DType::I32) && may != types::dtype_bit(DType::I64))) {
    env.fail({"E0202", "`top_k` on dtype variable `" + t.dtype_var + "` needs one lowest value for every dtype it may be (" +
                           types::dtype_set_str(may) + ")",
              "", t.str(), {"help: restrict it to floating dtypes, or to one integral dtype"}});
    return std::nullopt;
  }
  if (!rank_at_least_1(OpKind::TopK, t, env)) return std::nullopt;
  auto ax = axis_in(OpKind::TopK, *at.axis, static_cast<int64_t>(t.rank()), env, t);
  if (!ax) return std::nullopt;
  const size_t a = static_cast<size_t>(*ax);
  const Poly& d = t.shape[a];
  if (at.k > kMaxTopK) {
    env.fail({"E0304", "`top_k` :k " + std::to_string(at.k) + " is over the limit of " + std::to_string(kMaxTopK), "", t.str(),
              {"top_k is written as one argmax round per value (spec §4.31); for a full sort this is too many"}});
    return std::nullopt;
  }
  if (!env.require({K::Le, Poly::constant(at.k), d},
                   {"E0304", "`top_k` :k " + std::to_string(at.k) + " may exceed the extent " + d.str() + " of axis " + std::to_string(a), "",
                    t.str(), {"k values are taken from the axis, which must have at least k for every shape"}}))
    return std::nullopt;
  const bool floating = (may & types::kFloatingDTypes) != 0;
  syntax::ExprAst lowest;
  lowest.kind = syntax::ExprAst::Kind::Number;
  if (floating) {
    lowest.literal = "-inf";
    lowest.float_value = -std::numeric_limits<double>::infinity();
  } else {
    lowest.is_int = true;
    lowest.int_value = may == types::dtype_bit(DType::I32) ? INT32_MIN : INT64_MIN;
    lowest.float_value = static_cast<double>(lowest.int_value);
    lowest.literal = std::to_string(lowest.int_value);
  }
  Shape one = t.shape;
  one[a] = Poly::constant(1);
  Shape without = t.shape;
  without.erase(without.begin() + static_cast<std::ptrdiff_t>(a));
  auto where = positions(t, *ax, sink);
  TensorType rank0 = t;
  rank0.shape.clear();
  auto low = sink.fill(lowest, rank0);
  if (!where || !low) return std::nullopt;
  const ir::ValueId pos = where->pos, past_end = where->past_end;
  std::optional<ir::ValueId> nan;
  if (floating && !(nan = sink.emit(OpKind::Ne, {x, x}, {}))) return std::nullopt;
  std::optional<ir::ValueId> taken;
  std::vector<ir::ValueId> values, indices;
  ir::Attrs red;
  red.axes = {*ax};
  red.keepdims = true;
  ir::Attrs take;
  take.axis = *ax;
  for (int64_t j = 0; j < at.k; ++j) {
    std::optional<ir::ValueId> open = x;
    if (taken) open = sink.emit(OpKind::Select, {*taken, *low, x}, {});
    if (!open) return std::nullopt;
    auto m = sink.emit(OpKind::ReduceMax, {*open}, red);
    if (!m) return std::nullopt;
    auto hit = sink.emit(OpKind::Eq, {x, *m}, {});
    if (hit && nan) hit = sink.emit(OpKind::Or, {*hit, *nan}, {});
    if (hit && taken) {
      auto free = sink.emit(OpKind::Not, {*taken}, {});
      hit = free ? sink.emit(OpKind::And, {*hit, *free}, {}) : std::nullopt;
    }
    if (!hit) return std::nullopt;
    auto cand = sink.emit(OpKind::Select, {*hit, pos, past_end}, {});
    auto idx = cand ? sink.emit(OpKind::ReduceMin, {*cand}, red) : std::nullopt;
    auto flat = idx ? reshape_to(*idx, without, sink) : std::nullopt;
    auto val = flat ? sink.emit(OpKind::TakeAlongAxis, {x, *flat}, take) : std::nullopt;
    auto val1 = val ? reshape_to(*val, one, sink) : std::nullopt;
    if (!val1) return std::nullopt;
    values.push_back(*val1);
    indices.push_back(*idx);
    if (j + 1 < at.k) {
      auto now = sink.emit(OpKind::Eq, {pos, *idx}, {});
      taken = now && taken ? sink.emit(OpKind::Or, {*taken, *now}, {}) : now;
      if (!taken) return std::nullopt;
    }
  }
  ir::Attrs cat;
  cat.axis = *ax;
  auto vs = values.size() == 1 ? std::optional<ir::ValueId>(values[0]) : sink.emit(OpKind::Concat, values, cat);
  auto is = indices.size() == 1 ? std::optional<ir::ValueId>(indices[0]) : sink.emit(OpKind::Concat, indices, cat);
  if (!vs || !is) return std::nullopt;
  return std::pair{*vs, *is};
}

std::optional<ir::ValueId> expand_derived(OpKind op, ir::ValueId x, const DerivedAttrs& a, DerivedOpSink& sink) {
  switch (syntax::op_family(op)) {
    case syntax::OpFamily::Squeeze: return squeeze(x, a, sink);
    case syntax::OpFamily::Unsqueeze: return unsqueeze(x, a, sink);
    case syntax::OpFamily::Pad: return pad(x, a, sink);
    case syntax::OpFamily::ArgReduce: return arg_extremum(op, x, a, sink);
    default: break;
  }
  sink.env().fail({"E0900", "internal: " + opn(op) + " is not a derived operation", "", "", {}});
  return std::nullopt;
}

}  // namespace shapeml::check
