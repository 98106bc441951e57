#include "transform/reverse_mode.h"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

#include "transform/inline_calls.h"
#include "transform/ir_builder.h"

namespace shapeml::transform {
namespace {

using syntax::OpKind;
using types::Poly;
using types::Shape;
using types::TensorType;
using ir::ValueId;
using K = types::ShapeConstraint::Kind;

// The operations with a derivative rule, for E0602's note.
const char* kDifferentiable =
    "neg abs exp log sqrt rsqrt tanh sigmoid relu gelu silu sin cos erf add sub mul div max min pow select cast matmul transpose permute "
    "reshape broadcast_to concat slice reduce_sum reduce_mean reduce_max reduce_min softmax log_softmax repeat_interleave cumsum gather "
    "take_along_axis "
    "copy_to_device copy_to_host";

// Thrown by a rule that does not exist; reported as E0602 at the binding.
struct NoRule {
  std::string why;
};

class ReverseSweep {
 public:
  ReverseSweep(ir::Function& g, IrBuilder& b) : g_(g), b_(b) {}

  // The body of g (already holding the forward sweep) and its results.
  void run(ValueId output, const std::vector<ValueId>& wrt) {
    std::vector<bool> varied(g_.values.size(), false), useful(g_.values.size(), false);
    for (ValueId p : wrt) varied[p] = true;
    for (const auto& bd : g_.body) {
      bool any = std::any_of(bd.operands.begin(), bd.operands.end(), [&](ValueId o) { return varied[o]; });
      for (ValueId r : bd.results) varied[r] = any && (g_.values[r].type.possible_dtypes() & ~types::kFloatingDTypes) == 0;
    }
    useful[output] = true;
    for (auto it = g_.body.rbegin(); it != g_.body.rend(); ++it)
      if (std::any_of(it->results.begin(), it->results.end(), [&](ValueId r) { return useful[r]; }))
        for (ValueId o : it->operands) useful[o] = true;

    std::vector<ir::Binding> forward = g_.body;  // the sweep appends to g_.body
    span_ = g_.span;
    if (varied[output]) adj_[output] = b_.fill(1.0, type(output), g_.span);
    for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
      const ir::Binding& bd = *it;
      if (bd.results.size() != 1) continue;  // calls are inlined; nothing else has several results
      ValueId y = bd.results[0];
      if (!varied[y] || !useful[y] || !adj_.count(y)) continue;
      span_ = bd.span;
      for (size_t i = 0; i < bd.operands.size(); ++i) {
        ValueId x = bd.operands[i];
        if (!varied[x]) continue;
        try {
          accumulate(x, vjp(bd, i, adj_.at(y)));
        } catch (const NoRule& e) {
          missing_ = MissingRule{bd.op, bd.span, i, e.why};
          return;
        }
      }
    }
    g_.results = {output};
    for (ValueId p : wrt) g_.results.push_back(adj_.count(p) ? adj_.at(p) : b_.fill(0.0, type(p), g_.span));
  }

  struct MissingRule {
    OpKind op;
    syntax::Span span;
    size_t operand;
    std::string why;
  };
  const std::optional<MissingRule>& missing() const { return missing_; }

 private:
  // By value: emitting grows g_.values, which would leave a reference dangling.
  TensorType type(ValueId v) const { return g_.values[v].type; }

  void accumulate(ValueId x, ValueId ct) {
    auto it = adj_.find(x);
    if (it == adj_.end()) adj_[x] = ct;
    else it->second = bin(OpKind::Add, it->second, ct);
  }

  ValueId emit(OpKind op, std::vector<ValueId> operands, ir::Attrs a = {}) { return b_.emit(op, std::move(operands), std::move(a), span_); }
  ValueId un(OpKind op, ValueId x) { return emit(op, {x}); }
  ValueId bin(OpKind op, ValueId x, ValueId y) { return emit(op, {x, y}); }
  ValueId scalar(double v, ValueId like) { return b_.constant(v, types::DTypeValue::of(type(like)), type(like).device, span_); }
  ValueId reshape(ValueId x, const Shape& s) {
    ir::Attrs a;
    a.shape = s;
    return emit(OpKind::Reshape, {x}, a);
  }
  ValueId reduce_sum(ValueId x, std::vector<int64_t> axes, bool keepdims) {
    std::sort(axes.begin(), axes.end());
    ir::Attrs a;
    a.axes = std::move(axes);
    a.keepdims = keepdims;
    return emit(OpKind::ReduceSum, {x}, a);
  }
  ValueId broadcast_to(ValueId x, const Shape& s) {
    ir::Attrs a;
    a.shape = s;
    return emit(OpKind::BroadcastTo, {x}, a);
  }
  ValueId transpose(ValueId x) { return un(OpKind::Transpose, x); }

  // The cotangent `g` of a broadcast result, summed back to `target`'s
  // shape (B-Shape, spec §4.5): over the leading axes the operand lacks and
  // over the axes where it is the literal 1 and the result is not.
  ValueId unbroadcast(ValueId g, TensorType target) {
    const Shape gs = type(g).shape;
    const Shape ts = target.shape;
    size_t lead = gs.size() - ts.size();
    std::vector<int64_t> axes;
    for (size_t i = 0; i < lead; ++i) axes.push_back(static_cast<int64_t>(i));
    for (size_t i = 0; i < ts.size(); ++i)
      if (ts[i].is_one() && !gs[lead + i].is_one()) axes.push_back(static_cast<int64_t>(lead + i));
    if (axes.empty()) return g;
    ValueId s = reduce_sum(g, axes, true);
    return lead ? reshape(s, ts) : s;
  }

  // concat's and slice's axis as written (may count from the end).
  static size_t axis_of(int64_t axis, size_t rank) { return static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis); }

  // `t`'s shape with a 1 inserted at `axis`.
  static Shape with_one_at(const Shape& s, size_t axis) {
    Shape out = s;
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(axis), Poly::constant(1));
    return out;
  }

  // The cotangent of operand `i` of `bd`, given the cotangent `g` of its result.
  ValueId vjp(const ir::Binding& bd, size_t i, ValueId g) {
    const std::vector<ValueId>& x = bd.operands;
    ValueId y = bd.results[0];
    const ir::Attrs& at = bd.attrs;
    switch (bd.op) {
      case OpKind::Neg: return un(OpKind::Neg, g);
      case OpKind::Abs: {  // sign(x), 0 at 0 as in PyTorch
        ValueId zero = scalar(0, x[0]);
        ir::Attrs c;
        c.set_dtype(types::DTypeValue::of(type(x[0])));
        ValueId pos = emit(OpKind::Cast, {bin(OpKind::Gt, x[0], zero)}, c);
        ValueId neg = emit(OpKind::Cast, {bin(OpKind::Lt, x[0], zero)}, c);
        return bin(OpKind::Mul, g, bin(OpKind::Sub, pos, neg));
      }
      case OpKind::Exp: return bin(OpKind::Mul, g, y);
      case OpKind::Log: return bin(OpKind::Div, g, x[0]);
      case OpKind::Sqrt: return bin(OpKind::Div, bin(OpKind::Mul, g, scalar(0.5, g)), y);  // g / (2 sqrt x)
      case OpKind::Rsqrt:                                                                      // -x^(-3/2) / 2 = -y^3 / 2
        return bin(OpKind::Mul, bin(OpKind::Mul, g, scalar(-0.5, g)), bin(OpKind::Mul, y, bin(OpKind::Mul, y, y)));
      case OpKind::Tanh: return bin(OpKind::Mul, g, bin(OpKind::Sub, scalar(1, y), bin(OpKind::Mul, y, y)));
      case OpKind::Sigmoid: return bin(OpKind::Mul, g, bin(OpKind::Mul, y, bin(OpKind::Sub, scalar(1, y), y)));
      case OpKind::Relu: return emit(OpKind::Select, {bin(OpKind::Gt, x[0], scalar(0, x[0])), g, scalar(0, g)});
      case OpKind::Silu: {  // s (1 + x (1 - s)), s = sigmoid(x)
        ValueId s = un(OpKind::Sigmoid, x[0]);
        ValueId d = bin(OpKind::Mul, s, bin(OpKind::Add, scalar(1, s), bin(OpKind::Mul, x[0], bin(OpKind::Sub, scalar(1, s), s))));
        return bin(OpKind::Mul, g, d);
      }
      case OpKind::Erf: {  // 2/sqrt(pi) exp(-x^2)
        ValueId e = un(OpKind::Exp, bin(OpKind::Mul, bin(OpKind::Mul, x[0], x[0]), scalar(-1, x[0])));
        return bin(OpKind::Mul, g, bin(OpKind::Mul, e, scalar(1.12837916709551257390, e)));
      }
      case OpKind::Gelu: {  // Phi(x) + x phi(x), as PyTorch's exact-GELU backward
        ValueId cdf = bin(OpKind::Mul, bin(OpKind::Add, un(OpKind::Erf, bin(OpKind::Mul, x[0], scalar(0.70710678118654752440, x[0]))),
                                           scalar(1, x[0])),
                          scalar(0.5, x[0]));
        ValueId pdf = bin(OpKind::Mul, un(OpKind::Exp, bin(OpKind::Mul, bin(OpKind::Mul, x[0], x[0]), scalar(-0.5, x[0]))),
                          scalar(0.39894228040143267794, x[0]));
        return bin(OpKind::Mul, g, bin(OpKind::Add, cdf, bin(OpKind::Mul, x[0], pdf)));
      }
      case OpKind::Cumsum: {  // each input element reaches every later (earlier, reversed) output: the opposite scan
        ir::Attrs c = at;
        c.reverse = !at.reverse;
        return emit(OpKind::Cumsum, {g}, c);
      }
      case OpKind::Sin: return bin(OpKind::Mul, g, un(OpKind::Cos, x[0]));
      case OpKind::Cos: return un(OpKind::Neg, bin(OpKind::Mul, g, un(OpKind::Sin, x[0])));
      case OpKind::Add: return unbroadcast(g, type(x[i]));
      case OpKind::Sub: return unbroadcast(i == 0 ? g : un(OpKind::Neg, g), type(x[i]));
      case OpKind::Mul: return unbroadcast(bin(OpKind::Mul, g, x[1 - i]), type(x[i]));
      case OpKind::Div:
        if (i == 0) return unbroadcast(bin(OpKind::Div, g, x[1]), type(x[0]));
        return unbroadcast(un(OpKind::Neg, bin(OpKind::Div, bin(OpKind::Mul, g, y), x[1])), type(x[1]));  // -g a / b^2 = -g y / b
      case OpKind::Max:
      case OpKind::Min: {  // as PyTorch's maximum/minimum: the larger (smaller) operand takes g, ties split it in halves
        ValueId a = x[i], o = x[1 - i];
        ValueId wins = bin(bd.op == OpKind::Max ? OpKind::Gt : OpKind::Lt, a, o);
        ValueId half = bin(OpKind::Mul, g, scalar(0.5, g));
        ValueId d = emit(OpKind::Select, {wins, g, emit(OpKind::Select, {bin(OpKind::Eq, a, o), half, scalar(0, g)})});
        return unbroadcast(d, type(a));
      }
      case OpKind::Pow: {  // as PyTorch: d/da = b a^(b-1) (0 where b = 0); d/db = y log a (0 where a = 0 and b >= 0)
        ValueId a = x[0], e = x[1];
        if (i == 0) {
          ValueId d = bin(OpKind::Mul, bin(OpKind::Mul, g, e), bin(OpKind::Pow, a, bin(OpKind::Sub, e, scalar(1, e))));
          return unbroadcast(emit(OpKind::Select, {bin(OpKind::Eq, e, scalar(0, e)), scalar(0, g), d}), type(a));
        }
        ValueId d = bin(OpKind::Mul, bin(OpKind::Mul, g, y), un(OpKind::Log, a));
        ValueId zero_base = bin(OpKind::And, bin(OpKind::Eq, a, scalar(0, a)), bin(OpKind::Ge, e, scalar(0, e)));
        return unbroadcast(emit(OpKind::Select, {zero_base, scalar(0, g), d}), type(e));
      }
      case OpKind::Select: {
        if (i == 0) throw NoRule{"the condition is not differentiable"};
        ValueId zero = scalar(0, g);
        ValueId s = i == 1 ? emit(OpKind::Select, {x[0], g, zero}) : emit(OpKind::Select, {x[0], zero, g});
        return unbroadcast(s, type(x[i]));
      }
      case OpKind::Cast: {
        ir::Attrs c;
        c.set_dtype(types::DTypeValue::of(type(x[0])));
        return emit(OpKind::Cast, {g}, c);
      }
      case OpKind::Matmul: {  // dA = g B^T, dB = A^T g, each summed over the batch axes it was broadcast along
        ValueId d = i == 0 ? bin(OpKind::Matmul, g, transpose(x[1])) : bin(OpKind::Matmul, transpose(x[0]), g);
        return unbroadcast(d, type(x[i]));
      }
      case OpKind::Transpose: return transpose(g);
      case OpKind::Permute: {
        ir::Attrs p;
        p.axes.resize(at.axes.size());
        for (size_t k = 0; k < at.axes.size(); ++k) p.axes[static_cast<size_t>(at.axes[k])] = static_cast<int64_t>(k);
        return emit(OpKind::Permute, {g}, p);
      }
      case OpKind::Reshape: return reshape(g, type(x[0]).shape);
      case OpKind::BroadcastTo: return unbroadcast(g, type(x[0]));
      case OpKind::Concat: {
        size_t ax = axis_of(at.axis, type(x[0]).rank());
        Poly start = Poly::constant(0);
        for (size_t k = 0; k < i; ++k) start = start + type(x[k]).shape[ax];
        ir::Attrs s;
        s.axis = static_cast<int64_t>(ax);
        s.start = start;
        s.size = type(x[i]).shape[ax];
        return emit(OpKind::Slice, {g}, s);
      }
      case OpKind::Slice: return slice_vjp(bd, g);
      case OpKind::ReduceSum:
      case OpKind::ReduceMean: {
        const TensorType xt = type(x[0]);
        Shape kept = xt.shape;
        Poly count = Poly::constant(1);
        for (int64_t a : at.axes) {
          count = count * xt.shape[static_cast<size_t>(a)];
          kept[static_cast<size_t>(a)] = Poly::constant(1);
        }
        ValueId gk = at.keepdims ? g : reshape(g, kept);
        if (bd.op == OpKind::ReduceMean) {
          ir::Attrs n;
          n.size = count;
          n.set_dtype(types::DTypeValue::of(xt));
          n.device = xt.device;
          gk = bin(OpKind::Div, gk, emit(OpKind::DimValue, {}, n));
        }
        return broadcast_to(gk, xt.shape);
      }
      case OpKind::ReduceMax:
      case OpKind::ReduceMin: {  // as PyTorch's amax/amin: g shared evenly by the positions that attain the extremum
        TensorType xt = type(x[0]);
        Shape kept = xt.shape;
        for (int64_t a : at.axes) kept[static_cast<size_t>(a)] = Poly::constant(1);
        ValueId gk = at.keepdims ? g : reshape(g, kept);
        ValueId yk = at.keepdims ? y : reshape(y, kept);
        ValueId hit = bin(OpKind::Eq, x[0], yk);
        ir::Attrs c;
        c.set_dtype(types::DTypeValue::of(xt));
        ValueId count = reduce_sum(emit(OpKind::Cast, {hit}, c), at.axes, true);
        return emit(OpKind::Select, {hit, bin(OpKind::Div, gk, count), scalar(0, g)});
      }
      case OpKind::Softmax: {  // y (g - sum(g y))
        ValueId s = reduce_sum(bin(OpKind::Mul, g, y), {at.axis}, true);
        return bin(OpKind::Mul, y, bin(OpKind::Sub, g, s));
      }
      case OpKind::LogSoftmax: {  // g - exp(y) sum(g)
        ValueId s = reduce_sum(g, {at.axis}, true);
        return bin(OpKind::Sub, g, bin(OpKind::Mul, un(OpKind::Exp, y), s));
      }
      case OpKind::RepeatInterleave: {  // each source element received r copies: sum them
        const Shape xs = type(x[0]).shape;
        size_t ax = static_cast<size_t>(at.axis);
        Shape split = xs;
        split.insert(split.begin() + static_cast<std::ptrdiff_t>(ax) + 1, at.size);
        return reduce_sum(reshape(g, split), {static_cast<int64_t>(ax) + 1}, false);
      }
      case OpKind::TakeAlongAxis: {
        if (i == 1) throw NoRule{"indices are not differentiable"};
        // dx = g at the taken positions, 0 elsewhere: a one-hot select
        // along the axis (deterministic; no scatter).
        const TensorType xt = type(x[0]);
        size_t ax = static_cast<size_t>(at.axis);
        ir::Attrs io;
        io.set_dtype(types::DTypeValue::of(type(x[1])));
        io.device = xt.device;
        io.shape = xt.shape;
        io.axis = at.axis;
        ValueId positions = emit(OpKind::Iota, {}, io);
        ValueId hit = bin(OpKind::Eq, reshape(x[1], with_one_at(type(x[1]).shape, ax)), positions);
        return emit(OpKind::Select, {hit, reshape(g, with_one_at(type(g).shape, ax)), scalar(0, g)});
      }
      case OpKind::Gather: return gather_vjp(bd, i, g);
      case OpKind::CopyToDevice:
      case OpKind::CopyToHost: {
        const types::Device d = type(x[0]).device;
        if (d.kind == types::Device::Kind::Host) return un(OpKind::CopyToHost, g);
        ir::Attrs c;
        c.device = d;
        return emit(OpKind::CopyToDevice, {g}, c);
      }
      default: throw NoRule{""};
    }
  }

  // dx of `(slice x :axis a :start s :size n)` along an axis of extent d:
  // g placed at [s, s + n), zeros elsewhere. When the widths of the zero
  // pads before (s) and after (d - s - n) are each provably 0 or >= 1, it is
  // concat(zeros(s), g, zeros(d - s - n)). Otherwise (a pad that may be
  // empty for some shapes) a pad of fixed width d on both sides and a slice
  // that selects the window: slice(concat(zeros(d), g, zeros(d)), start d -
  // s, size d), whose obligations follow from the forward slice's.
  ValueId slice_vjp(const ir::Binding& bd, ValueId g) {
    const TensorType xt = type(bd.operands[0]);
    size_t ax = axis_of(bd.attrs.axis, xt.rank());
    const Poly& d = xt.shape[ax];
    Poly before = bd.attrs.start, after = d - bd.attrs.start - bd.attrs.size;
    auto decided = [&](const Poly& n) -> std::optional<bool> {  // nonempty?
      if (b_.proves({K::Eq, n, Poly::constant(0)})) return false;
      if (b_.proves({K::Ge, n, Poly::constant(1)})) return true;
      return std::nullopt;
    };
    auto zeros = [&](const Poly& n) {
      TensorType z = xt;
      z.shape[ax] = n;
      return b_.fill(0.0, z, span_);
    };
    ir::Attrs c;
    c.axis = static_cast<int64_t>(ax);
    auto pre = decided(before), post = decided(after);
    if (pre && post) {
      std::vector<ValueId> parts;
      if (*pre) parts.push_back(zeros(before));
      parts.push_back(g);
      if (*post) parts.push_back(zeros(after));
      return parts.size() == 1 ? g : emit(OpKind::Concat, parts, c);
    }
    ValueId wide = emit(OpKind::Concat, {zeros(d), g, zeros(d)}, c);
    ir::Attrs s;
    s.axis = static_cast<int64_t>(ax);
    s.start = d - bd.attrs.start;
    s.size = d;
    return emit(OpKind::Slice, {wide}, s);
  }

  // d table of `(gather table idx)`: table [V d...], idx I, result I ++ d.
  // d table = onehot(idx)^T g as one contraction over the N = prod(I)
  // lookups: deterministic on every back end (no scatter, no atomics).
  ValueId gather_vjp(const ir::Binding& bd, size_t i, ValueId g) {
    if (i == 1) throw NoRule{"indices are not differentiable"};
    const TensorType tt = type(bd.operands[0]);
    const TensorType it = type(bd.operands[1]);
    Poly n = Poly::constant(1), row = Poly::constant(1);
    for (const auto& d : it.shape) n = n * d;
    for (size_t k = 1; k < tt.rank(); ++k) row = row * tt.shape[k];
    ValueId ids = reshape(bd.operands[1], {n, Poly::constant(1)});
    ir::Attrs io;
    io.set_dtype(types::DTypeValue::of(it));
    io.device = tt.device;
    io.shape = {Poly::constant(1), tt.shape[0]};
    io.axis = 1;
    ir::Attrs c;
    c.set_dtype(types::DTypeValue::of(tt));
    ValueId onehot = emit(OpKind::Cast, {bin(OpKind::Eq, ids, emit(OpKind::Iota, {}, io))}, c);  // [N V]
    ValueId rows = reshape(g, {n, row});                                                          // [N prod(d)]
    ValueId d = bin(OpKind::Matmul, transpose(onehot), rows);                                     // [V prod(d)]
    return tt.rank() == 2 && tt.shape[1] == row ? d : reshape(d, tt.shape);
  }

  ir::Function& g_;
  IrBuilder& b_;
  std::map<ValueId, ValueId> adj_;
  syntax::Span span_;
  std::optional<MissingRule> missing_;
};

}  // namespace

void reverse_mode(ir::Module& m, syntax::DiagnosticSink& diags, unsigned obligation_timeout_ms) {
  for (size_t fi = 0; fi < m.functions.size(); ++fi) {
    if (m.functions[fi].grad_of.empty()) continue;
    ir::Function& g = m.functions[fi];
    const ir::Function* of = m.find(g.grad_of);
    if (!of) throw std::logic_error("`" + g.name + "` differentiates a missing function `" + g.grad_of + "`");
    ir::Function flat = inline_calls(m, *of);
    g.values = std::move(flat.values);
    g.params = std::move(flat.params);
    g.body = std::move(flat.body);
    std::vector<ValueId> wrt;
    for (size_t k : g.wrt) wrt.push_back(g.params.at(k));
    IrBuilder b(g, obligation_timeout_ms);
    ReverseSweep sweep(g, b);
    sweep.run(flat.results.at(0), wrt);
    if (const auto& miss = sweep.missing()) {
      auto& d = diags.report("E0602", miss->span,
                             "`" + g.name + "` differentiates `" + of->name + "`, which applies `" + std::string(syntax::op_name(miss->op)) +
                                 "` to a value that depends on a differentiated parameter; " +
                                 (miss->why.empty() ? "shapeml has no derivative rule for `" + std::string(syntax::op_name(miss->op)) + "`"
                                                    : "its operand " + std::to_string(miss->operand + 1) + " cannot be differentiated: " + miss->why));
      d.notes.push_back(std::string("operations with a derivative rule: ") + kDifferentiable);
      d.notes.push_back("help: if this parameter needs no gradient, leave it out with `(grad " + g.name + " " + of->name + " :wrt (P...))`");
      return;
    }
  }
}

}  // namespace shapeml::transform
