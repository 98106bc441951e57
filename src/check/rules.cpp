#include "check/rules.h"

#include <algorithm>
#include <map>
#include <set>

#include "types/shape_inference.h"

namespace shapeml::check {

using syntax::OpFamily;
using syntax::OpKind;
using types::DType;
using types::Poly;
using types::Shape;
using types::ShapeConstraint;
using types::TensorType;
using K = ShapeConstraint::Kind;

namespace {

std::string opn(OpKind op) { return "`" + std::string(syntax::op_name(op)) + "`"; }

// A dtype variable is a dtype of its own: equal only to itself (spec §3.5).
std::vector<std::string> var_mismatch_notes(const TensorType& a, const TensorType& b) {
  std::vector<std::string> notes;
  for (const TensorType* t : {&a, &b})
    if (t->dtype == DType::Var)
      notes.push_back("`" + t->dtype_var + "` is a dtype variable (" + types::dtype_set_str(t->dtype_set) +
                      "): it equals only itself, whatever value a call gives it");
  return notes;
}

bool same_dtype(OpKind op, const std::vector<TensorType>& in, size_t from, RuleEnv& env) {
  for (size_t i = from + 1; i < in.size(); ++i)
    if (!in[i].same_dtype(in[from])) {
      auto notes = var_mismatch_notes(in[from], in[i]);
      notes.push_back("shapeml never converts implicitly; convert one side with `(cast X " + in[from].dtype_str() + ")`");
      env.fail({"E0201", "operands of " + opn(op) + " have different dtypes " + in[from].dtype_str() + " and " + in[i].dtype_str(), in[from].str(),
                in[i].str(), notes});
      return false;
    }
  return true;
}

// Whether every dtype `t` may have is in `allowed`; otherwise the note that
// names the first that is not (a dtype variable ranges over several).
bool dtypes_within(const TensorType& t, types::DTypeSet allowed) { return (t.possible_dtypes() & ~allowed) == 0 && t.possible_dtypes() != 0; }
std::string not_within(const TensorType& t, types::DTypeSet allowed) {
  if (t.dtype != DType::Var) return std::string(types::dtype_name(t.dtype));
  types::DTypeSet bad = t.possible_dtypes() & ~allowed;
  return "`" + t.dtype_var + "`, which may be " + types::dtype_set_str(bad);
}
std::string restrict_help(const TensorType& t, types::DTypeSet allowed) {
  types::DTypeSet ok = t.dtype_set & allowed;
  return "help: restrict the dtype variable: `(dtypes (" + t.dtype_var + " " + (ok ? types::dtype_set_str(ok) : types::dtype_set_str(allowed)) + "))`";
}

bool same_device(OpKind op, const std::vector<TensorType>& in, RuleEnv& env) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].device != in[0].device) {
      bool to_host = in[0].device.kind == types::Device::Kind::Host;
      std::vector<std::string> notes;
      for (const types::Device* d : {&in[0].device, &in[i].device})
        if (d->is_var()) notes.push_back("`" + d->var + "` is a device variable: it equals only itself, whatever device a call gives it");
      notes.push_back(to_host ? "help: move the second operand with `(copy_to_host X)`, or the first with `(copy_to_device X " +
                                    types::device_name(in[i].device) + ")`"
                              : "help: move the second operand with `(copy_to_device X " + types::device_name(in[0].device) + ")`");
      env.fail({"E0401", "operands of " + opn(op) + " live on different devices, " + types::device_name(in[0].device) + " and " +
                             types::device_name(in[i].device),
                in[0].str(), in[i].str(), notes});
      return false;
    }
  return true;
}

// The dtype class an operation needs (§4.4, §4.6, §4.16, §4.20-4.25):
// bool for the logical operations, floating for the transcendental ones,
// numeric otherwise.
bool dtype_ok(OpKind op, const TensorType& t, RuleEnv& env) {
  const bool var = t.dtype == DType::Var;
  if (syntax::op_needs_bool(op)) {
    if (dtypes_within(t, types::dtype_bit(DType::Bool))) return true;
    env.fail({"E0202", opn(op) + " needs a bool operand, not " + not_within(t, types::dtype_bit(DType::Bool)), "", t.str(),
              {var ? restrict_help(t, types::dtype_bit(DType::Bool))
                   : "make a bool with a comparison such as `(ne X 0)`, or convert with `(cast X bool)`"}});
    return false;
  }
  if (syntax::op_needs_integral(op)) {
    if (dtypes_within(t, types::kIntegralDTypes)) return true;
    env.fail({"E0202", opn(op) + " needs an integral (i32, i64) operand, not " + not_within(t, types::kIntegralDTypes), "", t.str(),
              {var ? restrict_help(t, types::kIntegralDTypes)
                   : "floor division and modulo are defined on integers; for floating operands use `div`"}});
    return false;
  }
  types::DTypeSet want = syntax::op_needs_floating(op) ? types::kFloatingDTypes : types::kNumericDTypes;
  bool ok = dtypes_within(t, want);
  if (!ok)
    env.fail({"E0202", opn(op) + " needs a " + std::string(syntax::op_needs_floating(op) ? "floating (f32, f64, bf16)" : "numeric") +
                           " operand, not " + not_within(t, want),
              "", t.str(), {var ? restrict_help(t, want) : "convert with `(cast X f32)` first"}});
  return ok;
}

// Operations along one axis (softmax, repeat_interleave) need an axis to
// name: rank >= 1 (E0203), checked before the axis itself (E0204).
bool rank_at_least_1(OpKind op, const TensorType& t, RuleEnv& env) {
  if (t.rank() >= 1) return true;
  env.fail({"E0203", opn(op) + " needs an operand of rank >= 1, got rank 0", "", t.str(), {"reshape a scalar with `(reshape X (1))`"}});
  return false;
}

// Normalizes an axis that may count from the end.
std::optional<int64_t> norm_axis(OpKind op, int64_t a, size_t rank, RuleEnv& env) {
  int64_t r = static_cast<int64_t>(rank);
  if (a < -r || a >= r) {
    env.fail({"E0204", "axis " + std::to_string(a) + " is out of range for " + opn(op) + " on a rank-" + std::to_string(rank) + " tensor",
              "", "", {"valid axes are " + std::to_string(-r) + " .. " + std::to_string(r - 1)}});
    return std::nullopt;
  }
  return a < 0 ? a + r : a;
}

bool require_eq(const Poly& a, const Poly& b, Failure f, RuleEnv& env) { return env.require({K::Eq, a, b}, f); }

Poly product(const Shape& s) {
  Poly p = Poly::constant(1);
  for (const auto& d : s) p = p * d;
  return p;
}

// §4.24 T-Gather and §4.25 T-TakeAlongAxis: the indices are i32 or i64, on
// the data's device; the values are checked at run time (index-checks.md).
std::optional<TensorType> type_indexing(OpKind op, const std::vector<TensorType>& in, const ir::Attrs& at, RuleEnv& env) {
  const TensorType &x = in[0], &idx = in[1];
  if (!same_device(op, in, env)) return std::nullopt;
  if (!dtypes_within(idx, types::kIntegralDTypes)) {
    env.fail({"E0201", "the indices of " + opn(op) + " must be i32 or i64, not " + not_within(idx, types::kIntegralDTypes), "", idx.str(),
              {"help: convert them with `(cast IDX i64)`"}, 1});
    return std::nullopt;
  }
  if (op == OpKind::Gather) {
    if (x.rank() < 1) {
      env.fail({"E0203", "the table of `gather` must have rank >= 1 (rows are taken along its first axis)", "", x.str(), {}, 0});
      return std::nullopt;
    }
    Shape out = idx.shape;
    out.insert(out.end(), x.shape.begin() + 1, x.shape.end());
    return types::make_type(types::DTypeValue::of(x), out, x.device);
  }
  if (x.rank() < 1 || idx.rank() + 1 != x.rank()) {
    env.fail({"E0203", "the indices of `take_along_axis` must have rank " + std::to_string(x.rank() == 0 ? 0 : x.rank() - 1) +
                           " (the data's rank without the axis), got rank " + std::to_string(idx.rank()),
              x.str(), idx.str(), {"one index per position of the data with the axis removed, e.g. (B T) targets for (B T V) logits"}, 1,
              "data", "indices", 0, 1});
    return std::nullopt;
  }
  auto ax = norm_axis(op, at.axis, x.rank(), env);
  if (!ax) return std::nullopt;
  bool ok = true;
  for (size_t i = 0, j = 0; i < x.rank(); ++i) {
    if (static_cast<int64_t>(i) == *ax) continue;
    ok &= require_eq(x.shape[i], idx.shape[j],
                     {"E0301", "`take_along_axis`: dimension " + std::to_string(j) + " of the indices is " + idx.shape[j].str() + " where " +
                                   x.shape[i].str() + " (dimension " + std::to_string(i) + " of the data) is expected",
                      x.str(), idx.str(), {"the indices' shape is the data's shape with axis " + std::to_string(*ax) + " removed"}, 1, "data",
                      "indices", 0, 1},
                     env);
    ++j;
  }
  if (!ok) return std::nullopt;
  return types::make_type(types::DTypeValue::of(x), idx.shape, x.device);
}

}  // namespace

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b, const std::string& what, RuleEnv& env) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  bool ok = true;
  for (size_t i = 0; i < n; ++i) {
    // Right-aligned: position i of the result.
    std::optional<Poly> da, db;
    if (i + a.size() >= n) da = a[i + a.size() - n];
    if (i + b.size() >= n) db = b[i + b.size() - n];
    if (!da) { out[i] = *db; continue; }
    if (!db) { out[i] = *da; continue; }
    if (*da == *db || db->is_one()) { out[i] = *da; continue; }
    if (da->is_one()) { out[i] = *db; continue; }
    out[i] = *da;
    Failure f{"E0302", what + ": dimensions " + da->str() + " and " + db->str() + " cannot be broadcast together", types::shape_str(a),
              types::shape_str(b),
              {"broadcasting stretches only dimensions that are the literal 1; other dimensions must be equal",
               "dimension " + std::to_string(i - (n - std::max(a.size(), b.size()))) + " of the result (counting from 0 at the left)"}};
    // The usual cause: a reduction dropped an axis that the other operand
    // keeps, e.g. (B S D) with the sum over D, of shape (B S).
    const Shape& longer = a.size() > b.size() ? a : b;
    const Shape& shorter = a.size() > b.size() ? b : a;
    if (longer.size() == shorter.size() + 1 && std::equal(shorter.begin(), shorter.end(), longer.begin()))
      f.notes.push_back("help: the shorter operand looks like a reduction over the last axis of the longer one; reduce with `:keepdims true` "
                        "to keep that axis as 1");
    ok &= env.require({K::Eq, *da, *db}, f);
  }
  if (!ok) return std::nullopt;
  return out;
}

bool check_well_formed(const TensorType& t, RuleEnv& env) {
  bool ok = true;
  for (const auto& d : t.shape)
    if (!d.obviously_positive())
      ok &= env.require({K::Ge, d, Poly::constant(1)},
                        {"E0305", "dimension " + d.str() + " may be less than 1", "", t.str(), {"every dimension of a tensor type must be >= 1"}});
  return ok;
}

bool check_subsumes(const TensorType& actual, const TensorType& expected, const std::string& what, RuleEnv& env) {
  if (!actual.same_dtype(expected)) {
    auto notes = var_mismatch_notes(expected, actual);
    notes.push_back("convert with `(cast X " + expected.dtype_str() + ")`");
    env.fail({"E0201", what + " has dtype " + actual.dtype_str() + " where " + expected.dtype_str() + " is expected", expected.str(), actual.str(),
              notes});
    return false;
  }
  if (actual.device != expected.device) {
    env.fail({"E0401", what + " lives on " + types::device_name(actual.device) + " where " + types::device_name(expected.device) + " is expected",
              expected.str(), actual.str(),
              {expected.device.kind == types::Device::Kind::Host ? "help: move it with `(copy_to_host X)`"
                                                                 : "help: move it with `(copy_to_device X " + types::device_name(expected.device) + ")`"}});
    return false;
  }
  if (actual.rank() != expected.rank()) {
    env.fail({"E0203", what + " has rank " + std::to_string(actual.rank()) + " where rank " + std::to_string(expected.rank()) + " is expected",
              expected.str(), actual.str(), {}});
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < actual.rank(); ++i)
    ok &= require_eq(actual.shape[i], expected.shape[i],
                     {"E0301", what + ": dimension " + std::to_string(i) + " is " + actual.shape[i].str() + " where " + expected.shape[i].str() + " is expected",
                      expected.str(), actual.str(), {}},
                     env);
  return ok;
}

std::optional<TensorType> type_op(OpKind op, const std::vector<TensorType>& in, const ir::Attrs& at, RuleEnv& env) {
  switch (syntax::op_family(op)) {
    case OpFamily::Unary: {  // §4.4 T-Unary
      if (!dtype_ok(op, in[0], env)) return std::nullopt;
      return in[0];
    }
    case OpFamily::Binary:    // §4.6 T-Binary
    case OpFamily::Compare: {  // §4.7 T-Compare
      if (!same_dtype(op, in, 0, env) || !same_device(op, in, env)) return std::nullopt;
      if (op_family(op) == OpFamily::Binary && !dtype_ok(op, in[0], env)) return std::nullopt;
      auto s = broadcast_shapes(in[0].shape, in[1].shape, "operands of " + opn(op), env);
      if (!s) return std::nullopt;
      return types::make_type(op_family(op) == OpFamily::Compare ? types::DTypeValue::concrete(DType::Bool) : types::DTypeValue::of(in[0]), *s,
                              in[0].device);
    }
    case OpFamily::Select: {  // §4.7 T-Select
      if (!dtypes_within(in[0], types::dtype_bit(DType::Bool))) {
        env.fail({"E0201", "the condition of `select` must be bool, not " + not_within(in[0], types::dtype_bit(DType::Bool)), "", in[0].str(),
                  {"make a condition with a comparison such as `(gt X 0)`"}});
        return std::nullopt;
      }
      if (!same_dtype(op, in, 1, env) || !same_device(op, in, env)) return std::nullopt;
      auto s = broadcast_shapes(in[0].shape, in[1].shape, "operands of `select`", env);
      if (!s) return std::nullopt;
      s = broadcast_shapes(*s, in[2].shape, "operands of `select`", env);
      if (!s) return std::nullopt;
      return types::make_type(types::DTypeValue::of(in[1]), *s, in[0].device);
    }
    case OpFamily::Cast:  // §4.8 T-Cast
      return types::make_type(at.dtype_value(), in[0].shape, in[0].device);
    case OpFamily::Const:  // §4.9 T-Const
      return types::make_type(at.dtype_value(), {}, at.device);
    case OpFamily::Fill: {  // §4.9 T-Fill
      TensorType t = types::make_type(at.dtype_value(), at.shape, at.device);
      if (!check_well_formed(t, env)) return std::nullopt;
      return t;
    }
    case OpFamily::Iota: {  // §4.9 T-Iota
      TensorType t = types::make_type(at.dtype_value(), at.shape, at.device);
      if (!dtypes_within(t, types::kNumericDTypes)) {
        env.fail({"E0202", "`iota` makes numeric tensors, not " + not_within(t, types::kNumericDTypes), "", t.str(), {}});
        return std::nullopt;
      }
      if (at.axis < 0 || at.axis >= static_cast<int64_t>(t.rank())) {
        env.fail({"E0204", "`iota` axis " + std::to_string(at.axis) + " is out of range for rank " + std::to_string(t.rank()), "", t.str(), {}});
        return std::nullopt;
      }
      if (!check_well_formed(t, env)) return std::nullopt;
      return t;
    }
    case OpFamily::Matmul: {  // §4.10 T-Matmul
      const TensorType &a = in[0], &b = in[1];
      if (!same_dtype(op, in, 0, env) || !same_device(op, in, env) || !dtype_ok(op, a, env)) return std::nullopt;
      if (a.rank() < 2 || b.rank() < 2) {
        env.fail({"E0203", "`matmul` needs operands of rank >= 2, got ranks " + std::to_string(a.rank()) + " and " + std::to_string(b.rank()),
                  a.str(), b.str(), {"reshape a vector to a matrix with `(reshape X (1 N))`"}});
        return std::nullopt;
      }
      const Poly& k1 = a.shape[a.rank() - 1];
      const Poly& k2 = b.shape[b.rank() - 2];
      // Neither operand is "wrong" on its own: both are shown, labelled, and
      // the caret goes on the right one (the one a fix usually changes).
      Failure contraction{"E0301",
                          "`matmul` contraction dimensions differ: " + k1.str() + " (last of the left operand) vs " + k2.str() +
                              " (second to last of the right operand)",
                          a.str(), b.str(), {}, 1, "left operand", "right operand", 0, 1};
      if (b.shape.back() == k1 && k2 != k1)
        contraction.notes.push_back("help: the right operand's last dimension is " + k1.str() +
                                    ": if it is stored transposed, write `(matmul A (transpose B))`");
      else
        contraction.notes.push_back("help: the left operand's last dimension must equal the right operand's second to last; state it with `(where (= " +
                                    k1.str() + " " + k2.str() + "))` if it always holds");
      bool ok = require_eq(k1, k2, contraction, env);
      // Batch dimensions (all but the last two) broadcast by B-Shape (§4.5),
      // as in NumPy/PyTorch: (M K) x (B K N), (B 1 M K) x (H K N).
      Shape batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
      auto batch = broadcast_shapes(batch_a, batch_b, "batch dimensions of `matmul`", env);
      if (!ok || !batch) return std::nullopt;
      Shape out = *batch;
      out.push_back(a.shape[a.rank() - 2]);
      out.push_back(b.shape[b.rank() - 1]);
      return types::make_type(types::DTypeValue::of(a), out, a.device);
    }
    case OpFamily::Transpose: {  // §4.11 T-Transpose
      if (in[0].rank() < 2) {
        env.fail({"E0203", "`transpose` needs rank >= 2, got rank " + std::to_string(in[0].rank()), "", in[0].str(), {}});
        return std::nullopt;
      }
      TensorType t = in[0];
      std::swap(t.shape[t.rank() - 1], t.shape[t.rank() - 2]);
      return t;
    }
    case OpFamily::Permute: {  // §4.11 T-Permute
      const auto& p = at.axes;
      std::vector<int64_t> sorted = p;
      std::sort(sorted.begin(), sorted.end());
      bool is_perm = p.size() == in[0].rank();
      for (size_t i = 0; is_perm && i < sorted.size(); ++i) is_perm = sorted[i] == static_cast<int64_t>(i);
      if (!is_perm) {
        env.fail({"E0204", "`permute` needs a permutation of 0.." + std::to_string(static_cast<int64_t>(in[0].rank()) - 1) + " for a rank-" +
                               std::to_string(in[0].rank()) + " tensor",
                  "", in[0].str(), {}});
        return std::nullopt;
      }
      TensorType t = in[0];
      for (size_t i = 0; i < p.size(); ++i) t.shape[i] = in[0].shape[static_cast<size_t>(p[i])];
      return t;
    }
    case OpFamily::Reshape: {  // §4.12 T-Reshape
      TensorType t = types::make_type(types::DTypeValue::of(in[0]), at.shape, in[0].device);
      if (!check_well_formed(t, env)) return std::nullopt;
      Poly from = product(in[0].shape), to = product(at.shape);
      if (!require_eq(from, to,
                      {"E0303", "`reshape` changes the number of elements: " + from.str() + " elements into " + to.str(),
                       types::shape_str(at.shape), types::shape_str(in[0].shape),
                       {"a reshape must keep the element count for every shape satisfying the `where` constraints"}},
                      env))
        return std::nullopt;
      return t;
    }
    case OpFamily::BroadcastTo: {  // §4.13 T-BroadcastTo
      const Shape& s = in[0].shape;
      const Shape& to = at.shape;
      TensorType t = types::make_type(types::DTypeValue::of(in[0]), to, in[0].device);
      if (!check_well_formed(t, env)) return std::nullopt;
      if (s.size() > to.size()) {
        env.fail({"E0203", "`broadcast_to` cannot lower the rank from " + std::to_string(s.size()) + " to " + std::to_string(to.size()),
                  types::shape_str(to), types::shape_str(s), {}});
        return std::nullopt;
      }
      bool ok = true;
      for (size_t i = 0; i < s.size(); ++i) {
        const Poly& a = s[i];
        const Poly& b = to[i + to.size() - s.size()];
        if (a.is_one() || a == b) continue;
        ok &= env.require({K::Eq, a, b}, {"E0302", "`broadcast_to` cannot stretch dimension " + a.str() + " to " + b.str(), types::shape_str(to),
                                          types::shape_str(s), {"only dimensions that are the literal 1 are stretched"}});
      }
      if (!ok) return std::nullopt;
      return t;
    }
    case OpFamily::Concat: {  // §4.14 T-Concat
      if (!same_dtype(op, in, 0, env) || !same_device(op, in, env)) return std::nullopt;
      for (size_t i = 1; i < in.size(); ++i)
        if (in[i].rank() != in[0].rank()) {
          env.fail({"E0203", "operands of `concat` have ranks " + std::to_string(in[0].rank()) + " and " + std::to_string(in[i].rank()), in[0].str(),
                    in[i].str(), {}});
          return std::nullopt;
        }
      auto ax = norm_axis(op, at.axis, in[0].rank(), env);
      if (!ax) return std::nullopt;
      TensorType t = in[0];
      bool ok = true;
      for (size_t i = 1; i < in.size(); ++i) {
        t.shape[*ax] = t.shape[*ax] + in[i].shape[*ax];
        for (size_t d = 0; d < in[0].rank(); ++d)
          if (d != static_cast<size_t>(*ax))
            ok &= require_eq(in[0].shape[d], in[i].shape[d],
                             {"E0301", "operands of `concat` differ in dimension " + std::to_string(d) + " (not the concatenated axis)", in[0].str(),
                              in[i].str(), {}},
                             env);
      }
      if (!ok) return std::nullopt;
      return t;
    }
    case OpFamily::Slice: {  // §4.15 T-Slice
      auto ax = norm_axis(op, at.axis, in[0].rank(), env);
      if (!ax) return std::nullopt;
      const Poly& d = in[0].shape[*ax];
      bool ok = env.require({K::Ge, at.start, Poly::constant(0)}, {"E0304", "`slice` start " + at.start.str() + " may be negative", "", "", {}});
      ok &= env.require({K::Ge, at.size, Poly::constant(1)}, {"E0304", "`slice` size " + at.size.str() + " may be less than 1", "", "", {}});
      ok &= env.require({K::Le, at.start + at.size, d},
                        {"E0304", "`slice` reads past the end of axis " + std::to_string(*ax) + ": start " + at.start.str() + " + size " +
                                      at.size.str() + " may exceed " + d.str(),
                         "", in[0].str(), {}});
      if (!ok) return std::nullopt;
      TensorType t = in[0];
      t.shape[*ax] = at.size;
      return t;
    }
    case OpFamily::Reduce: {  // §4.16 T-Reduce
      if (!dtype_ok(op, in[0], env)) return std::nullopt;
      // at.axes are normalized by the elaborator; validate again for the verifier.
      std::set<int64_t> axes;
      for (int64_t a : at.axes) {
        auto n = norm_axis(op, a, in[0].rank(), env);
        if (!n) return std::nullopt;
        if (!axes.insert(*n).second) {
          env.fail({"E0204", "axis " + std::to_string(a) + " is reduced twice", "", in[0].str(), {}});
          return std::nullopt;
        }
      }
      TensorType t = in[0];
      t.shape.clear();
      for (size_t i = 0; i < in[0].rank(); ++i) {
        if (!axes.count(static_cast<int64_t>(i))) t.shape.push_back(in[0].shape[i]);
        else if (at.keepdims) t.shape.push_back(Poly::constant(1));
      }
      return t;
    }
    case OpFamily::Gather:         // §4.24 T-Gather
    case OpFamily::TakeAlongAxis:  // §4.25 T-TakeAlongAxis
      return type_indexing(op, in, at, env);
    case OpFamily::CopyToDevice:  // §4.17
      return types::make_type(types::DTypeValue::of(in[0]), in[0].shape, at.device);
    case OpFamily::CopyToHost:
      return types::make_type(types::DTypeValue::of(in[0]), in[0].shape, types::Device::host());
    case OpFamily::Softmax: {  // §4.21 T-Softmax
      if (!dtype_ok(op, in[0], env) || !rank_at_least_1(op, in[0], env) || !norm_axis(op, at.axis, in[0].rank(), env)) return std::nullopt;
      return in[0];
    }
    case OpFamily::RepeatInterleave: {  // §4.22 T-RepeatInterleave
      if (!rank_at_least_1(op, in[0], env)) return std::nullopt;
      auto ax = norm_axis(op, at.axis, in[0].rank(), env);
      if (!ax) return std::nullopt;
      if (!at.size.obviously_positive() &&
          !env.require({K::Ge, at.size, Poly::constant(1)},
                       {"E0305", "`repeat_interleave` repeats " + at.size.str() + " may be less than 1", "", in[0].str(),
                        {"each element is repeated `:repeats` times, which must be >= 1 for every shape satisfying the `where` constraints"}}))
        return std::nullopt;
      TensorType t = in[0];
      t.shape[*ax] = t.shape[*ax] * at.size;
      return t;
    }
    case OpFamily::DimValue: {  // §4.23 T-DimValue
      TensorType t = types::make_type(at.dtype_value(), {}, at.device);
      if (!dtypes_within(t, types::kNumericDTypes)) {
        env.fail({"E0202", "`dim_value` makes numeric tensors, not " + not_within(t, types::kNumericDTypes), "", "",
                  {"compare the value instead, e.g. `(gt (dim_value N i64) 1)`"}});
        return std::nullopt;
      }
      return t;
    }
    case OpFamily::Scan: {  // §4.27 T-Scan
      if (!dtype_ok(op, in[0], env) || !rank_at_least_1(op, in[0], env) || !norm_axis(op, at.axis, in[0].rank(), env)) return std::nullopt;
      return in[0];
    }
    case OpFamily::Squeeze:  // derived (check/derived_ops.h): expanded before typing
    case OpFamily::Unsqueeze:
    case OpFamily::Pad:
    case OpFamily::ArgReduce:
    case OpFamily::TopK:
    case OpFamily::Call:
      break;
  }
  env.fail({"E0900", "internal: no typing rule for " + opn(op), "", "", {}});
  return std::nullopt;
}

std::optional<std::vector<TensorType>> type_call(const ir::Function& callee, const std::vector<TensorType>& args, RuleEnv& env,
                                                        const std::vector<std::pair<std::string, Poly>>& given) {
  const std::string& name = callee.name;
  // Explicit shape arguments (`:dims`): callee variables, once each, >= 1.
  std::map<std::string, Poly> given_map;
  for (const auto& [v, p] : given) {
    if (std::find(callee.dims.begin(), callee.dims.end(), v) == callee.dims.end()) {
      std::string all;
      for (const auto& d : callee.dims) all += (all.empty() ? "" : " ") + d;
      env.fail({"E0306", "`" + v + "` is not a shape variable of `" + name + "`", "", "",
                {all.empty() ? "`" + name + "` declares no shape variables" : "its shape variables are: " + all}});
      return std::nullopt;
    }
    if (!given_map.emplace(v, p).second) {
      env.fail({"E0306", "shape variable `" + v + "` of `" + name + "` is given twice in `:dims`", "", "", {}});
      return std::nullopt;
    }
    if (!p.obviously_positive() &&
        !env.require({K::Ge, p, Poly::constant(1)}, {"E0305", "the explicit value " + p.str() + " of `" + v + "` may be less than 1", "", "",
                                                     {"every shape variable is >= 1"}}))
      return std::nullopt;
  }
  // Variables the callee declares `given` come from the call, never from
  // the arguments (spec §4.19).
  for (const std::string& g : callee.given)
    if (!given_map.count(g)) {
      env.fail({"E0306", "`" + name + "` takes shape variable `" + g + "` at the call, and this call does not give it", "", "",
                {"`" + name + "` declares `(given " + g + ")`: every call supplies it",
                 "help: give it: `(call " + name + " :dims ((" + g + " DIM)) ...)`"}});
      return std::nullopt;
    }
  if (args.size() != callee.params.size()) {
    env.fail({"E0205", "`" + name + "` takes " + std::to_string(callee.params.size()) + " argument(s), got " + std::to_string(args.size()), "", "",
              {}});
    return std::nullopt;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorType& pt = callee.values[callee.params[i]].type;
    if (pt.rank() != args[i].rank()) {
      env.fail({"E0203", "argument " + std::to_string(i + 1) + " of `" + name + "` has rank " + std::to_string(args[i].rank()) +
                             " where rank " + std::to_string(pt.rank()) + " is expected",
                pt.str(), args[i].str(), {}});
      return std::nullopt;
    }
  }
  // The callee's dtype and device variables (spec §3.5): each takes the
  // dtype (device) of the first argument whose parameter type names it, and
  // must be one its declaration allows; the parameter types, instantiated,
  // then check against every argument as usual.
  std::vector<TensorType> param_types;
  for (ir::ValueId p : callee.params) param_types.push_back(callee.values[p].type);
  const types::TypeBinding tb = types::bind_type_variables(param_types, args);
  std::set<std::string> checked;
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorType& pt = param_types[i];
    if (pt.dtype == DType::Var && checked.insert(pt.dtype_var).second) {
      const types::DTypeValue& v = tb.dtypes.at(pt.dtype_var);
      if ((v.possible() & ~pt.dtype_set) != 0) {
        std::string what = v.dtype == DType::Var ? "`" + v.var + "`, which may be " + types::dtype_set_str(v.possible() & ~pt.dtype_set)
                                                  : v.str();
        env.fail({"E0201", "argument " + std::to_string(i + 1) + " of `" + name + "` gives dtype variable `" + pt.dtype_var + "` the dtype " + what +
                               ", which it does not range over",
                  pt.str(), args[i].str(), {"`" + name + "` declares `(dtypes (" + pt.dtype_var + " " + types::dtype_set_str(pt.dtype_set) + "))`"}});
        return std::nullopt;
      }
    }
  }
  // The callee's shape variables, by the one rule of types/shape_inference.h
  // on the arguments' symbolic dimensions.
  std::vector<types::Shape> param_shapes, arg_shapes;
  for (size_t i = 0; i < args.size(); ++i) {
    param_shapes.push_back(callee.values[callee.params[i]].type.shape);
    arg_shapes.push_back(args[i].shape);
  }
  std::set<std::string> given_names;
  for (const auto& [v, p] : given_map) given_names.insert(v);
  types::InferencePlan plan = types::plan_shape_inference(callee.dims, param_shapes, callee.where, given_names);
  types::SymbolicSolve solved = types::solve_shape_variables_symbolic(plan, arg_shapes, given_map);
  if (solved.failed_step) {
    // A division that is not exact over the caller's variables may be under
    // its `where` clause: with (= H (* Hk G)) the caller's H is Hk G, and H
    // over Hk is G. Retry with every caller equality that defines a variable
    // (VAR = P, VAR not in P) applied to the arguments' dimensions; what the
    // retry infers is then checked against the arguments as usual, under the
    // same hypotheses.
    std::map<std::string, Poly> defs;
    for (const types::ShapeConstraint& c : env.hypotheses()) {
      if (c.kind != types::ShapeConstraint::Kind::Eq) continue;
      for (const auto& [v, p] : {std::pair{&c.lhs, &c.rhs}, std::pair{&c.rhs, &c.lhs}}) {
        std::set<std::string> lv, pv;
        v->free_vars(lv);
        p->free_vars(pv);
        if (lv.size() == 1 && *v == Poly::var(*lv.begin()) && !pv.count(*lv.begin()) && !defs.count(*lv.begin())) {
          defs.emplace(*lv.begin(), *p);
          break;
        }
      }
    }
    if (!defs.empty()) {
      std::vector<types::Shape> rewritten = arg_shapes;
      for (auto& shape : rewritten)
        for (auto& d : shape) d = d.subst(defs);
      types::SymbolicSolve retry = types::solve_shape_variables_symbolic(plan, rewritten, given_map);
      if (!retry.failed_step) solved = std::move(retry);
    }
  }
  std::map<std::string, Poly>& sub = solved.substitution;
  if (solved.failed_step) {
    const types::InferenceStep& st = plan.steps[*solved.failed_step];
    std::string from = st.source == types::InferenceStep::Source::ParamDim
                           ? "dimension " + std::to_string(st.dim) + " of argument " + std::to_string(st.param + 1) + ", " +
                                 arg_shapes[st.param][st.dim].str() + ", against " + st.equation.str()
                           : "the `where` equality " + callee.where[st.where_index].str();
    env.fail({"E0306", "cannot infer shape variable `" + st.var + "` of `" + name + "` from " + from, "", "",
              {"solving for `" + st.var + "` needs a division that is not exact for every value of the caller's shape variables",
               "help: give it at the call: `(call " + name + " :dims ((" + st.var + " DIM)) ...)`"}});
    return std::nullopt;
  }
  for (const auto& d : callee.dims)
    if (!sub.count(d)) {
      env.fail({"E0306", "cannot infer shape variable `" + d + "` of `" + name + "` from the arguments", "", "",
                {"a shape variable is inferred from a parameter dimension that is the variable alone or linear in it, or from a `where` "
                 "equality",
                 "help: give it at the call: `(call " + name + " :dims ((" + d + " DIM)) ...)`"}});
      return std::nullopt;
    }
  std::string bound;
  for (const auto& d : callee.dims) bound += (bound.empty() ? "" : ", ") + d + "=" + sub[d].str();
  bool ok = true;
  // The callee was checked for values >= 1 of its variables (§3.4): an
  // inferred value must be >= 1 too, as an explicit one is above. (Found by
  // the Coq model's T-Call, docs/design/proofs.md: (+ N 1) against K infers
  // N = K - 1, which is 0 at K = 1.)
  for (const auto& d : callee.dims)
    if (!given_map.count(d) && !sub[d].obviously_positive())
      ok &= env.require({K::Ge, sub[d], Poly::constant(1)},
                        {"E0305", "the call binds shape variable `" + d + "` of `" + name + "` to " + sub[d].str() + ", which may be less than 1", "",
                         "", {"inferred: " + bound, "every shape variable is >= 1: the callee was checked only for such values"}});
  for (size_t i = 0; i < args.size(); ++i) {
    TensorType pt = types::substitute(callee.values[callee.params[i]].type, tb);
    for (auto& d : pt.shape) d = d.subst(sub);
    ok &= check_subsumes(args[i], pt, "argument " + std::to_string(i + 1) + " of `" + name + "`", env);
  }
  for (const auto& c : callee.where)
    ok &= env.require(c.subst(sub), {"E0306", "the call may violate `" + name + "`'s constraint " + c.str(), "", "", {"inferred: " + bound}});
  if (!ok) return std::nullopt;
  std::vector<TensorType> rts;
  for (auto t : callee.result_types) {
    t = types::substitute(t, tb);
    for (auto& d : t.shape) d = d.subst(sub);
    rts.push_back(t);
  }
  return rts;
}

}  // namespace shapeml::check
