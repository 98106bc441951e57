#include "plan/verify.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "plan/attention_launch.h"
#include "plan/fused_program.h"
#include "plan/geometry.h"
#include "plan/limits.h"

namespace shapeml::plan {

namespace {

bool is_int(GpuDType d) { return d == GpuDType::I32 || d == GpuDType::I64; }
bool is_numeric(GpuDType d) { return gpu_dtype_is_float(d) || is_int(d); }
bool is_host(const GpuSlot& s) { return s.kind == GpuSlot::Kind::HostInput || s.kind == GpuSlot::Kind::HostOutput; }

// The rules of one launch. Each check returns false after recording the
// defect; `at` names the launch as every message does.
class LaunchVerifier {
 public:
  LaunchVerifier(const GpuPlan& p, size_t index) : p_(p), l_(p.launches[index]), index_(static_cast<int32_t>(index)) {
    at_ = "launch " + std::to_string(index) + " (" + launch_kind_name(l_.kind) + (l_.op.empty() ? "" : " " + l_.op) + "): ";
  }

  std::optional<PlanDefect> run() {
    if (operands() && placement() && rules()) return std::nullopt;
    return defect_;
  }

 private:
  bool bad(const std::string& msg) {
    defect_ = PlanDefect{index_, false, at_ + msg};
    return false;
  }
  bool over(const std::string& msg) {
    defect_ = PlanDefect{index_, true, at_ + msg};
    return false;
  }
  const GpuSlot& in(size_t i) const { return p_.slots[static_cast<size_t>(l_.inputs[i])]; }
  const GpuSlot& out(size_t i = 0) const { return p_.slots[static_cast<size_t>(l_.outputs[i])]; }

  // An iteration space the strided kernels can take.
  bool fits(const Shape& shape, const std::vector<Shape>& strides) {
    if (coalesced_rank(shape, strides) <= static_cast<size_t>(kMaxRank)) return true;
    return over("more than " + std::to_string(kMaxRank) + " dimensions after coalescing " + shape_str(shape));
  }
  // An axis of `rank` dims (negative from the end) in range; `ax` gets it.
  bool axis(int64_t a, size_t rank, size_t& ax) {
    int64_t r = static_cast<int64_t>(rank), v = a < 0 ? a + r : a;
    if (v < 0 || v >= r) return bad("axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank));
    ax = static_cast<size_t>(v);
    return true;
  }

  // Slot indices and how many inputs and outputs the kind takes.
  bool operands() {
    for (int32_t s : l_.inputs)
      if (s < 0 || static_cast<size_t>(s) >= p_.slots.size()) return bad("input slot out of range");
    for (int32_t s : l_.outputs)
      if (s < 0 || static_cast<size_t>(s) >= p_.slots.size()) return bad("output slot out of range");
    const size_t n_in = l_.inputs.size(), n_out = l_.outputs.size();
    auto want = [&](size_t i, size_t o) {
      if (n_in != i) return bad("expects " + std::to_string(i) + " input(s)");
      if (n_out != o) return bad("expects " + std::to_string(o) + " output(s)");
      return true;
    };
    switch (l_.kind) {
      case LaunchKind::Transpose:
        if (n_in > 1) {  // a group of permutes of one geometry, pairwise
          if (n_in > static_cast<size_t>(kMaxCopyGroup) || n_out != n_in)
            return bad("a transpose group has 2 to " + std::to_string(kMaxCopyGroup) + " inputs and as many outputs");
          return true;
        }
        return want(1, 1);
      case LaunchKind::Unary: case LaunchKind::Cast: case LaunchKind::Reduce: case LaunchKind::Slice: case LaunchKind::Broadcast:
      case LaunchKind::Copy: case LaunchKind::Softmax: case LaunchKind::Repeat: case LaunchKind::Scan: case LaunchKind::Tf32Split:
        return want(1, 1);
      case LaunchKind::Binary: case LaunchKind::Compare: case LaunchKind::RmsNorm: case LaunchKind::Gated: return want(2, 1);
      case LaunchKind::Gather: case LaunchKind::TakeAlong: return want(2, 2);  // the result and the bounds-check record
      case LaunchKind::Matmul:
        if (l_.ints.size() == 3) {  // a group: one A, k weights, k results
          const int64_t k = l_.ints[2];
          if (k < 2 || k > kMaxGemmGroup) return bad("a matmul group has 2 to " + std::to_string(kMaxGemmGroup) + " weights");
          return want(static_cast<size_t>(1 + k), static_cast<size_t>(k));
        }
        return want(n_in == 3 ? 3 : 2, 1);  // optional bias or residual
      case LaunchKind::Select: case LaunchKind::Attention: return want(3, 1);
      case LaunchKind::Fill: case LaunchKind::Iota: return want(0, 1);
      case LaunchKind::Concat:
        if (n_in == 0) return bad("expects at least one input");
        return want(n_in, 1);
      case LaunchKind::Fused:
        if (n_in > static_cast<size_t>(fused::kMaxInputs)) return over("more than " + std::to_string(fused::kMaxInputs) + " inputs");
        return want(n_in, 1);
    }
    return bad("unknown kernel");
  }

  // Only a copy moves bytes between host and device slots.
  bool placement() {
    if (l_.kind == LaunchKind::Copy) return true;
    for (int32_t s : l_.inputs)
      if (is_host(p_.slots[static_cast<size_t>(s)])) return bad("slot " + std::to_string(s) + " is a host slot; only a copy reads host memory");
    for (int32_t s : l_.outputs)
      if (is_host(p_.slots[static_cast<size_t>(s)])) return bad("slot " + std::to_string(s) + " is a host slot; only a copy writes host memory");
    return true;
  }

  bool rules() {
    switch (l_.kind) {
      case LaunchKind::Unary: return unary();
      case LaunchKind::Binary: case LaunchKind::Compare: return binary();
      case LaunchKind::Select: return select();
      case LaunchKind::Cast:
        if (in(0).shape != out().shape) return bad("input and output shapes differ");
        return true;
      case LaunchKind::Fill: return true;
      case LaunchKind::Iota: {
        if (l_.ints.size() != 1) return bad("iota needs ints = {axis}");
        size_t ax;
        return axis(l_.ints[0], out().shape.size(), ax);
      }
      case LaunchKind::Fused: return fused_program();
      case LaunchKind::Transpose: return transpose();
      case LaunchKind::Broadcast: {
        Shape sa;
        if (in(0).dtype != out().dtype) return bad("input and output dtypes differ");
        if (!broadcast_strides(in(0).shape, out().shape, sa)) return bad(shape_str(in(0).shape) + " does not broadcast to " + shape_str(out().shape));
        return fits(out().shape, {dense_strides(out().shape), sa});
      }
      case LaunchKind::Slice: return slice();
      case LaunchKind::Concat: return concat();
      case LaunchKind::Copy:
        if (in(0).bytes() != out().bytes()) return bad("input and output sizes differ");
        return true;
      case LaunchKind::Reduce: return reduce();
      case LaunchKind::Matmul: return matmul();
      case LaunchKind::Softmax: return softmax();
      case LaunchKind::Scan: {
        const GpuSlot& a = in(0);
        if (a.dtype != out().dtype || a.shape != out().shape || !is_numeric(a.dtype)) return bad("cumsum needs one numeric dtype and shape");
        if (l_.ints.size() != 1) return bad("cumsum needs ints = {axis}");
        size_t ax;
        return axis(l_.ints[0], a.shape.size(), ax);
      }
      case LaunchKind::RmsNorm: {
        const GpuSlot &x = in(0), &g = in(1);
        if (!gpu_dtype_is_float(x.dtype) || g.dtype != x.dtype || out().dtype != x.dtype) return bad("rmsnorm needs one floating dtype");
        if (x.shape.empty() || out().shape != x.shape) return bad("rmsnorm: the output must have the input's shape, of rank >= 1");
        if (g.shape != Shape{x.shape.back()}) return bad("rmsnorm: the scale must be a vector of the last dimension " + std::to_string(x.shape.back()));
        if (!std::isfinite(l_.scalar) || l_.scalar < 0) return bad("rmsnorm: eps must be finite and >= 0");
        return true;
      }
      case LaunchKind::Gated: {
        const GpuSlot &a = in(0), &b = in(1);
        int op = fused::op_number(fused::kUnary, l_.op);
        if (op < 0 || op >= fused::kUnaryNot) return bad("unknown gate activation `" + l_.op + "`");
        if (!gpu_dtype_is_float(a.dtype) || b.dtype != a.dtype || out().dtype != a.dtype) return bad("gated needs one floating dtype");
        if (b.shape != a.shape || out().shape != a.shape) return bad("gated needs operands and output of one shape");
        return true;
      }
      case LaunchKind::Repeat: return repeat();
      case LaunchKind::Attention:
        if (std::string e = check_attention(p_, l_); !e.empty()) return bad(e);
        return true;
      case LaunchKind::Gather: case LaunchKind::TakeAlong: return index();
      case LaunchKind::Tf32Split: return tf32_split();
    }
    return bad("unknown kernel");
  }

  // x [..., R, C] -> [..., 3R, C] or [..., R, 3C] (plan.h).
  bool tf32_split() {
    const GpuSlot& a = in(0);
    if (a.dtype != GpuDType::F32 || out().dtype != GpuDType::F32) return bad("tf32_split takes and gives f32");
    if (l_.op != "lhs" && l_.op != "rhs") return bad("tf32_split's op is lhs or rhs, not `" + l_.op + "`");
    const size_t r = a.shape.size();
    if (r < 2 || l_.ints.size() != 1 || (l_.ints[0] != static_cast<int64_t>(r) - 2 && l_.ints[0] != static_cast<int64_t>(r) - 1))
      return bad("tf32_split needs an operand of rank >= 2 and ints = {axis}, one of its last two axes");
    Shape want = a.shape;
    const size_t ax = static_cast<size_t>(l_.ints[0]);
    if (__builtin_mul_overflow(want[ax], int64_t{3}, &want[ax])) return bad("the tripled axis overflows");
    if (out().shape != want) return bad("output " + shape_str(out().shape) + ", expected " + shape_str(want));
    return true;
  }

  bool unary() {
    const GpuSlot& a = in(0);
    if (a.dtype != out().dtype || a.shape != out().shape) return bad("input and output differ in dtype or shape");
    if (l_.op == "not") {
      if (a.dtype != GpuDType::Bool) return bad(std::string("`not` does not take ") + gpu_dtype_name(a.dtype));
      return true;
    }
    int op = fused::op_number(fused::kUnary, l_.op);
    if (op < 0 || op >= fused::kUnaryNot) return bad("unknown unary op `" + l_.op + "`");
    bool int_ok = l_.op == "neg" || l_.op == "abs" || l_.op == "relu";
    if (!(gpu_dtype_is_float(a.dtype) || (is_int(a.dtype) && int_ok))) return bad("`" + l_.op + "` does not take " + gpu_dtype_name(a.dtype));
    return true;
  }

  bool binary() {
    const GpuSlot &a = in(0), &b = in(1);
    const bool cmp = l_.kind == LaunchKind::Compare;
    const bool logical = !cmp && (l_.op == "and" || l_.op == "or");
    if (logical && (a.dtype != GpuDType::Bool || b.dtype != GpuDType::Bool || out().dtype != GpuDType::Bool))
      return bad("`" + l_.op + "` takes and gives bool");
    int op = logical ? 0 : cmp ? fused::op_number(fused::kCompare, l_.op) : fused::op_number(fused::kBinary, l_.op);
    if (op < 0) return bad("unknown " + std::string(launch_kind_name(l_.kind)) + " op `" + l_.op + "`");
    if (a.dtype != b.dtype) return bad("operands of different dtypes");
    if (cmp ? out().dtype != GpuDType::Bool : out().dtype != a.dtype) return bad("wrong output dtype");
    if (!cmp && !logical) {
      const bool integral_only = l_.op == "floordiv" || l_.op == "mod";
      if (!is_numeric(a.dtype) || (l_.op == "pow" && !gpu_dtype_is_float(a.dtype)) || (integral_only && !is_int(a.dtype)))
        return bad("`" + l_.op + "` does not take " + gpu_dtype_name(a.dtype));
    }
    Shape sa, sb;
    if (!broadcast_strides(a.shape, out().shape, sa) || !broadcast_strides(b.shape, out().shape, sb))
      return bad("operands " + shape_str(a.shape) + " and " + shape_str(b.shape) + " do not broadcast to " + shape_str(out().shape));
    return fits(out().shape, {sa, sb});
  }

  bool select() {
    const GpuSlot &c = in(0), &a = in(1), &b = in(2);
    if (c.dtype != GpuDType::Bool) return bad("the condition is not bool");
    if (a.dtype != out().dtype || b.dtype != out().dtype) return bad("branches and output differ in dtype");
    Shape sc, sa, sb;
    if (!broadcast_strides(c.shape, out().shape, sc) || !broadcast_strides(a.shape, out().shape, sa) || !broadcast_strides(b.shape, out().shape, sb))
      return bad("operands do not broadcast to " + shape_str(out().shape));
    return fits(out().shape, {sc, sa, sb});
  }

  bool fused_program() {
    if (!l_.op.empty() && !generated_kernel()) return false;
    std::vector<fused::Node> nodes;
    std::string e = fused::decode(l_.ints, nodes);
    std::vector<GpuDType> in_dt;
    for (int32_t s : l_.inputs) in_dt.push_back(p_.slots[static_cast<size_t>(s)].dtype);
    if (e.empty()) e = fused::check(nodes, in_dt, out().dtype, out().shape.size());
    if (!e.empty()) return bad(e);
    std::vector<Shape> shapes;
    for (size_t i = 0; i < l_.inputs.size(); ++i) shapes.push_back(in(i).shape);
    fused::Operands ops;
    if (int64_t i = fused::operands(nodes, shapes, out().shape, ops); i >= 0)
      return bad("input " + shape_str(shapes[static_cast<size_t>(i)]) + " does not broadcast to " + shape_str(out().shape));
    if (ops.strides.size() > static_cast<size_t>(kFusedMaxOperands)) return over("more than " + std::to_string(kFusedMaxOperands) + " operands");
    return fits(out().shape, ops.strides);
  }

  // A fused launch that names a generated kernel: the plan carries a code
  // object and its PTX defines an entry of that name (the cubin is the same
  // compilation's machine code).
  bool generated_kernel() {
    bool ident = !l_.op.empty() && !(l_.op[0] >= '0' && l_.op[0] <= '9');
    for (char c : l_.op) ident = ident && (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'));
    if (!ident) return bad("op `" + l_.op + "` is not a kernel name");
    if (p_.code_arch.empty() || p_.code_cubin.empty() || p_.code_ptx.empty())
      return bad("names the generated kernel `" + l_.op + "`, but the plan has no code object");
    const std::string entry = ".entry " + l_.op;
    for (size_t at = p_.code_ptx.find(entry); at != std::string::npos; at = p_.code_ptx.find(entry, at + 1)) {
      char next = at + entry.size() < p_.code_ptx.size() ? p_.code_ptx[at + entry.size()] : ' ';
      if (next == '(' || next == ' ' || next == '\n' || next == '\t') return true;
    }
    return bad("names the generated kernel `" + l_.op + "`, which the plan's code object does not define");
  }

  bool transpose() {
    const GpuSlot& a = in(0);
    for (size_t k = 1; k < l_.inputs.size(); ++k)
      if (in(k).dtype != a.dtype || in(k).shape != a.shape || out(k).dtype != out().dtype || out(k).shape != out().shape)
        return bad("every pair of a transpose group must have the first pair's dtypes and shapes");
    const size_t r = a.shape.size();
    if (a.dtype != out().dtype || out().shape.size() != r || l_.ints.size() != r) return bad("permutation, input and output ranks differ");
    std::vector<bool> seen(r, false);
    Shape in_dense = dense_strides(a.shape), in_st(r);
    for (size_t i = 0; i < r; ++i) {
      int64_t q = l_.ints[i];
      if (q < 0 || q >= static_cast<int64_t>(r) || seen[static_cast<size_t>(q)]) return bad("ints is not a permutation");
      seen[static_cast<size_t>(q)] = true;
      if (out().shape[i] != a.shape[static_cast<size_t>(q)]) return bad("output shape is not the permuted input shape");
      in_st[i] = in_dense[static_cast<size_t>(q)];
    }
    return fits(out().shape, {dense_strides(out().shape), in_st});
  }

  bool slice() {
    const GpuSlot& a = in(0);
    if (l_.ints.size() != 2) return bad("slice needs ints = {axis, start}");
    const size_t r = a.shape.size();
    size_t ax;
    if (a.dtype != out().dtype || out().shape.size() != r) return bad("input and output differ in dtype or rank");
    if (!axis(l_.ints[0], r, ax)) return false;
    for (size_t d = 0; d < r; ++d)
      if (d != ax && out().shape[d] != a.shape[d]) return bad("output shape differs from the input off the axis");
    const int64_t start = l_.ints[1];
    if (start < 0 || start > a.shape[ax] - out().shape[ax]) return bad("slice out of range");
    return fits(out().shape, {dense_strides(out().shape), dense_strides(a.shape)});
  }

  bool concat() {
    if (l_.ints.size() != 1) return bad("concat needs ints = {axis}");
    const size_t r = out().shape.size();
    size_t ax;
    if (!axis(l_.ints[0], r, ax)) return false;
    int64_t at = 0;
    const Shape out_st = dense_strides(out().shape);
    for (size_t i = 0; i < l_.inputs.size(); ++i) {
      const GpuSlot& a = in(i);
      if (a.dtype != out().dtype || a.shape.size() != r) return bad("an input differs in dtype or rank");
      for (size_t d = 0; d < r; ++d)
        if (d != ax && a.shape[d] != out().shape[d]) return bad("an input differs off the axis");
      if (__builtin_add_overflow(at, a.shape[ax], &at)) return bad("input sizes along the axis overflow");
      if (!fits(a.shape, {out_st, dense_strides(a.shape)})) return false;
    }
    if (at != out().shape[ax]) return bad("input sizes along the axis do not add up to the output's");
    return true;
  }

  bool reduce() {
    const GpuSlot& a = in(0);
    const std::string& op = l_.op;
    if (reduce_op_number(op) < 0) return bad("unknown reduce op `" + op + "`");
    if (a.dtype != out().dtype || !is_numeric(a.dtype) || (op == "mean" && !gpu_dtype_is_float(a.dtype)))
      return bad("`" + op + "` does not take " + gpu_dtype_name(a.dtype) + " to " + gpu_dtype_name(out().dtype));
    const size_t r = a.shape.size();
    std::vector<bool> red(r, false);
    for (int64_t x : l_.ints) {
      int64_t v = x < 0 ? x + static_cast<int64_t>(r) : x;
      if (v < 0 || v >= static_cast<int64_t>(r) || red[static_cast<size_t>(v)]) return bad("bad or repeated reduction axis");
      red[static_cast<size_t>(v)] = true;
    }
    Shape want, in_st = dense_strides(a.shape), ks, kst, rs, rst;
    for (size_t d = 0; d < r; ++d) {
      if (!red[d]) want.push_back(a.shape[d]);
      else if (l_.flag) want.push_back(1);
      (red[d] ? rs : ks).push_back(a.shape[d]);
      (red[d] ? rst : kst).push_back(in_st[d]);
    }
    if (want != out().shape) return bad("output shape " + shape_str(out().shape) + ", expected " + shape_str(want));
    return fits(ks, {kst}) && fits(rs, {rst});
  }

  // k GEMMs of one A and k weights of one shape (plan.h): each as a plain
  // matmul, the weights 2-D (one batched GEMM over them, A's batch folded
  // into its rows).
  bool matmul_group() {
    const int64_t k = l_.ints[2];
    if (l_.scalar != 0 || l_.flag) return bad("a matmul group has no scale, bias or residual");
    if (!l_.op.empty()) return bad("a matmul group has no op");
    if (!gpu_dtype_is_float(in(0).dtype)) return bad("a matmul group needs a floating dtype");
    if (in(1).shape.size() != 2) return bad("a matmul group's weights are matrices");
    for (int64_t i = 0; i < k; ++i) {
      const GpuSlot &b = in(static_cast<size_t>(1 + i)), &c = p_.slots[static_cast<size_t>(l_.outputs[static_cast<size_t>(i)])];
      if (b.shape != in(1).shape || b.dtype != in(1).dtype) return bad("the weights of a matmul group differ in shape or dtype");
      if (c.shape != out().shape || c.dtype != out().dtype) return bad("the results of a matmul group differ in shape or dtype");
      // Every result is its own slot, read by no GEMM of the group (one
      // launch reads A and every weight while it writes the results).
      for (int64_t j = 0; j <= k; ++j)
        if (l_.outputs[static_cast<size_t>(i)] == l_.inputs[static_cast<size_t>(j)] || (j < k && j != i && l_.outputs[static_cast<size_t>(j)] == l_.outputs[static_cast<size_t>(i)]))
          return bad("a matmul group writes one slot twice or over its activation or a weight");
    }
    return matmul_of(in(0), in(1), out(), nullptr);
  }

  bool matmul() {
    if (l_.ints.size() == 3) return matmul_group();
    return matmul_of(in(0), in(1), out(), l_.inputs.size() == 3 ? &in(2) : nullptr);
  }

  // out = A B (+ the addend: a bias or, `flag`, a residual), the launch's
  // ints {transA, transB} (a group's third int is its size).
  bool matmul_of(const GpuSlot& a, const GpuSlot& b, const GpuSlot& o, const GpuSlot* addend) {
    if (a.dtype != b.dtype || a.dtype != o.dtype || !is_numeric(a.dtype)) return bad("matmul needs one numeric dtype");
    if (!l_.op.empty() && l_.op != "tf32") return bad("unknown matmul op `" + l_.op + "`");
    if (!l_.ints.empty() && (l_.ints.size() < 2 || l_.ints.size() > 3 || (l_.ints[0] != 0 && l_.ints[0] != 1) || (l_.ints[1] != 0 && l_.ints[1] != 1)))
      return bad("matmul ints must be {transA, transB}, each 0 or 1, and for a group its size");
    const bool trans_a = !l_.ints.empty() && l_.ints[0] == 1, trans_b = !l_.ints.empty() && l_.ints[1] == 1;
    const bool fl = gpu_dtype_is_float(a.dtype);
    if (l_.scalar != 0 && l_.scalar != 1 && !fl) return bad("a matmul scale (alpha) needs a floating dtype");
    if ((trans_a || trans_b) && !fl) return bad("transposed operands need a floating dtype (cuBLASLt)");
    MatmulGeometry g;
    if (std::string e = matmul_geometry(a.shape, b.shape, trans_a, trans_b, g); !e.empty()) return bad(e);
    if (addend) {
      const GpuSlot& c = *addend;
      if (!fl || c.dtype != a.dtype) return bad("a fused addend must have the product's floating dtype");
      if (l_.flag) {
        if (c.shape != o.shape) return bad("a fused residual must have the output's shape " + shape_str(o.shape));
      } else {
        if (c.shape != Shape{g.n}) return bad("a fused bias must be a vector of the output's last dimension");
        if (g.k == 0 && numel(g.batch) > 0 && g.m > 0 && g.n > 0) return bad("a fused bias with an empty inner dimension");
      }
    }
    Shape want = g.batch;
    want.push_back(g.m);
    want.push_back(g.n);
    if (want != o.shape) return bad("output shape " + shape_str(o.shape) + ", expected " + shape_str(want));
    if (!g.folded && numel(g.batch) > 0 && g.m > 0 && g.n > 0 && g.k > 0) {  // what runs as GEMMs
      if (g.coalesced_batch.size() > static_cast<size_t>(kMaxRank))
        return over("more than " + std::to_string(kMaxRank) + " dimensions after coalescing the batch " + shape_str(g.batch));
      if (g.pieces > kMaxGemmPieces)
        return over("more than " + std::to_string(kMaxGemmPieces) + " separate GEMMs for this broadcast of batch dimensions");
    }
    return true;
  }

  bool softmax() {
    const GpuSlot& a = in(0);
    if (softmax_op_number(l_.op) < 0) return bad("unknown softmax op `" + l_.op + "`");
    if (a.dtype != out().dtype || a.shape != out().shape || !gpu_dtype_is_float(a.dtype)) return bad("softmax needs one floating dtype and shape");
    if (l_.ints.size() != (l_.flag ? 2u : 1u)) return bad(l_.flag ? "a causal softmax needs ints = {axis, offset}" : "softmax needs ints = {axis}");
    size_t ax;
    if (!axis(l_.ints[0], a.shape.size(), ax)) return false;
    if (l_.flag && (a.shape.size() < 2 || ax + 1 != a.shape.size())) return bad("a causal softmax runs over the last axis of a tensor of rank >= 2");
    return true;
  }

  bool repeat() {
    const GpuSlot& a = in(0);
    if (l_.ints.size() != 2 || l_.ints[1] < 1) return bad("repeat needs ints = {axis, repeats >= 1}");
    size_t ax;
    if (!axis(l_.ints[0], a.shape.size(), ax)) return false;
    Shape want = a.shape;
    if (__builtin_mul_overflow(want[ax], l_.ints[1], &want[ax])) return bad("the repeated dimension overflows");
    if (a.dtype != out().dtype || want != out().shape) return bad("output " + shape_str(out().shape) + ", expected " + shape_str(want));
    return true;
  }

  bool index() {
    const GpuSlot &x = in(0), &idx = in(1), &rec = out(1);
    if (idx.dtype != GpuDType::I32 && idx.dtype != GpuDType::I64) return bad("indices must be i32 or i64");
    if (x.dtype != out().dtype) return bad("input and output dtypes differ");
    if (rec.kind != GpuSlot::Kind::Temp || rec.dtype != GpuDType::I64 || rec.numel() != 1)
      return bad("the bounds-check record must be a temp i64 slot of one element");
    if (l_.kind == LaunchKind::Gather) {
      if (x.shape.empty()) return bad("gather needs a table of rank >= 1");
      Shape want = idx.shape;
      want.insert(want.end(), x.shape.begin() + 1, x.shape.end());
      if (want != out().shape) return bad("output " + shape_str(out().shape) + ", expected " + shape_str(want));
      return true;
    }
    if (l_.ints.size() != 1) return bad("take_along needs ints = {axis}");
    size_t ax;
    if (!axis(l_.ints[0], x.shape.size(), ax)) return false;
    Shape want = x.shape;
    want.erase(want.begin() + static_cast<std::ptrdiff_t>(ax));
    if (idx.shape != want || out().shape != want) return bad("indices and output must have the input's shape without the axis, " + shape_str(want));
    return true;
  }

  const GpuPlan& p_;
  const GpuLaunch& l_;
  int32_t index_;
  std::string at_;
  PlanDefect defect_;
};

std::optional<PlanDefect> verify_slots(const GpuPlan& p, PlanStage stage) {
  auto bad = [](const std::string& m) { return std::optional<PlanDefect>(PlanDefect{-1, false, m}); };
  if (p.num_inputs < 0 || p.num_outputs < 0 || p.workspace_bytes < 0) return bad("negative counts");
  for (size_t i = 0; i < p.slots.size(); ++i) {
    const GpuSlot& s = p.slots[i];
    std::string at = "slot " + std::to_string(i) + " (" + slot_kind_name(s.kind) + "): ";
    // Element and byte counts that fit in int64 (numel() and bytes() are
    // plain products: a plan's text must not make them wrap). The extent
    // (every dimension taken as at least 1) must fit too: dense strides and
    // stride x dimension products, which the geometry computes for empty
    // slots as well, are bounded by it.
    int64_t count = 1, extent = 1, bytes = 0;
    for (int64_t d : s.shape) {
      if (d < 0) return bad(at + "negative dimension");
      if (__builtin_mul_overflow(count, d, &count) || __builtin_mul_overflow(extent, d > 0 ? d : 1, &extent))
        return bad(at + "the element count overflows 64 bits");
    }
    if (__builtin_mul_overflow(extent, gpu_dtype_size(s.dtype), &bytes)) return bad(at + "the byte count overflows 64 bits");
    bytes = count * gpu_dtype_size(s.dtype);
    switch (s.kind) {
      case GpuSlot::Kind::Input:
      case GpuSlot::Kind::HostInput:
        if (s.index < 0 || s.index >= p.num_inputs) return bad(at + "input index out of range");
        break;
      case GpuSlot::Kind::Output:
      case GpuSlot::Kind::HostOutput:
        if (s.index < 0 || s.index >= p.num_outputs) return bad(at + "output index out of range");
        break;
      case GpuSlot::Kind::Temp:
        if (stage == PlanStage::LaidOut && (s.offset < 0 || s.offset % 256 != 0 || s.offset > p.workspace_bytes - bytes))
          return bad(at + "outside the workspace");
        break;
      case GpuSlot::Kind::View:
        if (s.alias < 0 || static_cast<size_t>(s.alias) >= i) return bad(at + "a view must alias an earlier slot");
        if (s.offset < 0 || s.offset % gpu_dtype_size(s.dtype) != 0) return bad(at + "a view's offset must be a non-negative multiple of its element size");
        if (s.offset > p.slots[static_cast<size_t>(s.alias)].bytes() - bytes) return bad(at + "a view reaches past the end of what it aliases");
        break;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<PlanDefect> verify_plan(const GpuPlan& p, PlanStage stage) {
  if (auto d = verify_slots(p, stage)) return d;
  for (size_t i = 0; i < p.launches.size(); ++i)
    if (auto d = LaunchVerifier(p, i).run()) return d;
  if (p.graph)
    if (std::string b = graph_blocker(p); !b.empty()) return PlanDefect{-1, false, "graph on, but the plan cannot be captured: " + b};
  return std::nullopt;
}

std::string verify_message(const GpuPlan& p, PlanStage stage) {
  auto d = verify_plan(p, stage);
  return d ? d->message : "";
}

std::string graph_blocker(const GpuPlan& p) {
  for (size_t i = 0; i < p.slots.size(); ++i)
    if (is_host(p.slots[i]))
      return "slot " + std::to_string(i) + " is a " + slot_kind_name(p.slots[i].kind) + " (a copy from or to pageable host memory cannot be captured)";
  for (size_t i = 0; i < p.launches.size(); ++i)
    if (checks_indices(p.launches[i].kind))
      return "launch " + std::to_string(i) + " (" + launch_kind_name(p.launches[i].kind) +
             ") checks its indices: the call synchronizes to report a bad one, which a captured graph cannot";
  return "";
}

void decide_graph_replay(GpuPlan& p, bool allowed) {
  std::string blocker = graph_blocker(p);
  p.graph = allowed && blocker.empty();
  if (!blocker.empty()) p.graph_why = "cannot be captured: " + blocker;
  else if (!allowed) p.graph_why = "graph replay turned off by the compile option (the plan could be captured)";
  else p.graph_why = "device slots only: the first call captures the launches in a CUDA graph, later calls replay it";
}

void decide_graph_branches(GpuPlan& p, bool allowed) {
  p.branches = p.graph && allowed;
  if (!p.graph) p.branches_why = "no graph replay";
  else if (!allowed) p.branches_why = "turned off by the compile option: the graph is one chain in plan order";
  else p.branches_why = "launches that share no bytes run side by side in the graph";
}

}  // namespace shapeml::plan
