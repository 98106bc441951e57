#include "lower/gpu/plan_gpu.h"
#include "lower/gpu/fuse_elementwise.h"
#include "lower/gpu/generate_kernels.h"
#include "lower/gpu/fuse_attention.h"
#include "lower/gpu/fuse_patterns.h"
#include "lower/gpu/group_matmuls.h"
#include "lower/gpu/merge_projections.h"
#include "lower/gpu/split_fp32_matmuls.h"
#include "transform/specialize_types.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "common/numbers.h"
#include "plan/layout.h"
#include "plan/verify.h"
#include "types/shape_inference.h"

namespace shapeml::lower::gpu {

using plan::GpuLaunch;
using plan::GpuPlan;
using plan::GpuSlot;
using syntax::OpFamily;
using syntax::OpKind;

namespace {

struct PlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

plan::GpuDType gpu_dtype(types::DType d) { return static_cast<plan::GpuDType>(static_cast<int32_t>(d)); }

bool on_device(const types::TensorType& t) { return t.device.kind == types::Device::Kind::Cuda; }

using plan::gpu_dtype_is_float;

class Planner {
 public:
  Planner(const ir::Module& m, const PlanOptions& o) : m_(m), opts_(o) {}

  GpuPlan run(const ir::Function& f, const std::map<std::string, int64_t>& env) {
    plan_.entry = f.name;
    plan_.binding = env;
    plan_.num_inputs = static_cast<int32_t>(f.params.size());
    plan_.num_outputs = static_cast<int32_t>(f.results.size());
    std::vector<int> args;
    for (size_t i = 0; i < f.params.size(); ++i) {
      const types::TensorType& t = f.values[f.params[i]].type;
      int s = new_slot(on_device(t) ? GpuSlot::Kind::Input : GpuSlot::Kind::HostInput, static_cast<int32_t>(i), t, env);
      if (on_device(t)) note_device(t);
      args.push_back(s);
    }
    top_results_.clear();
    for (ir::ValueId r : f.results) top_results_.insert(r);
    std::vector<int> results = emit_function(f, env, args, 0);
    bind_outputs(f, env, results);
    verify("lowering");
    if (opts_.fuse_patterns && fuse_patterns(plan_) > 0) verify("pattern fusion");
    remove_dead_launches();
    fold_transposes_into_matmuls();
    verify("transpose folding");
    if (opts_.fuse_patterns && opts_.fuse_attention && fuse_attention(plan_, opts_.cudnn_attention) > 0) {
      verify("attention fusion");
      remove_dead_launches();
    }
    if (opts_.fuse_patterns) {
      int grouped = group_permutes(plan_);
      if (grouped > 0) verify("permute grouping");
      if (opts_.merge_projections && merge_projections(plan_) > 0) verify("projection merging");
    }
    if (opts_.split_fp32_matmuls && !opts_.allow_tf32 && split_fp32_matmuls(plan_, opts_.split_min_flops) > 0) verify("3xTF32 splitting");
    if (opts_.fuse_patterns && opts_.group_matmuls && group_matmuls(plan_) > 0) verify("matmul grouping");
    if (device_ < 0) throw PlanError("`" + f.name + "` touches no CUDA device: it is a host function (use the CPU back end)");
    plan_.device = device_;
    drop_unused_slots();
    plan::layout_workspace(plan_);
    verify("the workspace layout", plan::PlanStage::LaidOut);
    return plan_;
  }

 private:
  // The plan verifier after a pass (before the workspace layout, temps
  // have no offsets yet): a pass that breaks the plan is a compiler bug.
  // A plan over a kernel limit (plan/limits.h) is a valid program this back
  // end cannot run: UNIMPLEMENTED, naming the launch, not a compiler bug.
  void verify(const char* pass, plan::PlanStage stage = plan::PlanStage::BeforeLayout) {
    auto d = plan::verify_plan(plan_, stage);
    if (!d) return;
    if (d->over_limit) throw PlanError(d->message + ": over a kernel limit, which is not supported by the GPU back end");
    throw PlanError(std::string("internal: ") + pass + " made a plan the verifier refuses: " + d->message);
  }

  void note_device(const types::TensorType& t) {
    if (t.device.kind == types::Device::Kind::Host) return;
    if (device_ >= 0 && device_ != t.device.ordinal)
      throw PlanError("the entry uses devices cuda(" + std::to_string(device_) + ") and cuda(" + std::to_string(t.device.ordinal) +
                      "): one plan runs on one device");
    device_ = t.device.ordinal;
  }

  std::vector<int64_t> eval_shape(const types::TensorType& t, const std::map<std::string, int64_t>& env, const std::string& what) {
    std::vector<int64_t> out;
    int64_t n = 1;
    for (const auto& d : t.shape) {
      auto v = d.eval(env);
      if (!v) throw PlanError(what + ": dimension " + d.str() + " cannot be evaluated (unbound variable or overflow)");
      if (*v < 0) throw PlanError(what + ": dimension " + d.str() + " evaluates to " + std::to_string(*v));
      if (__builtin_mul_overflow(n, *v, &n) || n > (int64_t{1} << 48)) throw PlanError(what + ": too many elements");
      out.push_back(*v);
    }
    return out;
  }

  int new_slot(GpuSlot::Kind k, int32_t index, const types::TensorType& t, const std::map<std::string, int64_t>& env) {
    GpuSlot s;
    s.kind = k;
    s.index = index;
    s.dtype = gpu_dtype(t.dtype);
    s.shape = eval_shape(t, env, "a value");
    plan_.slots.push_back(std::move(s));
    return static_cast<int>(plan_.slots.size() - 1);
  }

  // The slot whose bytes `s` is (a view's alias, transitively).
  int root(int s) const { return plan_.root(s); }
  void launch(GpuLaunch l) { plan_.launches.push_back(std::move(l)); }

  // An i64 [1] workspace slot that stays live to the end of the plan: an
  // index launch's bounds-check record, read after the last launch.
  int record_slot() {
    GpuSlot s;
    s.kind = GpuSlot::Kind::Temp;
    s.dtype = plan::GpuDType::I64;
    s.shape = {1};
    plan_.slots.push_back(std::move(s));
    return static_cast<int>(plan_.slots.size() - 1);
  }

  // " at FILE:LINE:COL" of a span, when the module knows its source.
  std::string source_location(const syntax::Span& sp) const {
    if (!m_.source) return "";
    syntax::LineCol lc = m_.source->line_col(sp.begin);
    return " at " + m_.source->name() + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.col);
  }

  std::vector<int> emit_function(const ir::Function& f, const std::map<std::string, int64_t>& env, const std::vector<int>& args, int depth) {
    if (depth > 64) throw PlanError("calls nested too deeply");
    std::vector<int> vals(f.values.size(), -1);
    for (size_t i = 0; i < f.params.size(); ++i) vals[f.params[i]] = args[i];
    std::vector<int> uses(f.values.size(), 0);
    for (const ir::Binding& b : f.body)
      for (ir::ValueId o : b.operands) ++uses[o];
    for (ir::ValueId r : f.results) ++uses[r];
    for (const ir::Binding& b : f.body) {
      std::vector<int> ins;
      for (ir::ValueId o : b.operands) {
        if (vals[o] < 0) throw PlanError("internal: operand used before it is defined");
        ins.push_back(vals[o]);
      }
      OpFamily fam = syntax::op_family(b.op);
      if (fam == OpFamily::Call) {
        const ir::Function* callee = m_.find(b.attrs.callee);
        if (!callee) throw PlanError("internal: unknown callee `" + b.attrs.callee + "`");
        std::vector<types::Shape> param_shapes;
        std::vector<std::vector<int64_t>> arg_sizes;
        for (size_t i = 0; i < callee->params.size() && i < ins.size(); ++i) {
          param_shapes.push_back(callee->values[callee->params[i]].type.shape);
          arg_sizes.push_back(plan_.slots[ins[i]].shape);
        }
        std::vector<const std::vector<int64_t>*> ptrs;
        for (const auto& a : arg_sizes) ptrs.push_back(&a);
        // `:dims` given at the call, evaluated in the caller; the rest inferred.
        std::map<std::string, int64_t> given;
        for (const auto& [v, p] : b.attrs.call_dims) {
          auto x = p.eval(env);
          if (!x) throw PlanError("explicit shape argument " + v + " = " + p.str() + " of the call to `" + callee->name + "` cannot be evaluated");
          given[v] = *x;
        }
        types::ConcreteSolve solved = types::solve_call_shape_variables(callee->dims, param_shapes, callee->where, ptrs, given);
        if (solved.failure) throw PlanError("internal: the arguments of the call to `" + callee->name + "` do not bind its shape variables");
        std::vector<int> rs = emit_function(*callee, solved.binding, ins, depth + 1);
        for (size_t i = 0; i < rs.size() && i < b.results.size(); ++i) vals[b.results[i]] = rs[i];
        continue;
      }
      const types::TensorType& rt = f.values[b.results[0]].type;
      std::string what = "`" + std::string(syntax::op_name(b.op)) + "` in `" + f.name + "`";
      if (fam == OpFamily::Reshape) {
        // A reshape of a dense tensor is a view: the same bytes, another shape.
        GpuSlot v;
        v.kind = GpuSlot::Kind::View;
        v.alias = root(ins[0]);
        v.dtype = gpu_dtype(rt.dtype);
        v.shape = eval_shape(rt, env, what);
        plan_.slots.push_back(std::move(v));
        vals[b.results[0]] = static_cast<int>(plan_.slots.size() - 1);
        continue;
      }
      if (b.op == OpKind::Add && fuse_into_matmul(b, ins, uses, vals)) continue;
      bool result_on_host = !on_device(rt);
      if (fam == OpFamily::CopyToHost) {
        // Only a returned value may come back to the host: the plan runs
        // nothing on the host.
        if (depth != 0 || !top_results_.count(b.results[0]))
          throw PlanError(what + ": a value copied to the host must be a result of the entry (host computation inside a device entry is not "
                                 "supported: split the program into a device and a host function)");
        GpuSlot s;
        s.kind = GpuSlot::Kind::HostOutput;
        s.index = -1;  // set in bind_outputs
        s.dtype = gpu_dtype(rt.dtype);
        s.shape = eval_shape(rt, env, what);
        plan_.slots.push_back(std::move(s));
        int out = static_cast<int>(plan_.slots.size() - 1);
        launch({plan::LaunchKind::Copy, "", {ins[0]}, {out}, {}, 0, false, "shapeml", "device to host (copy_to_host)"});
        vals[b.results[0]] = out;
        continue;
      }
      if (result_on_host)
        throw PlanError(what + " computes on the host inside a device entry; only parameters may be copied to the device and results back "
                               "(split the program into a device and a host function)");
      note_device(rt);
      for (int s : ins) {
        GpuSlot::Kind k = plan_.slots[root(s)].kind;
        if ((k == GpuSlot::Kind::HostInput || k == GpuSlot::Kind::HostOutput) && fam != OpFamily::CopyToDevice)
          throw PlanError(what + " reads a host tensor inside a device entry; copy it with `copy_to_device` first");
      }
      if (b.op == OpKind::Mul && scale_matmul(b, ins, uses, vals)) continue;
      int out = new_slot(GpuSlot::Kind::Temp, 0, rt, env);
      vals[b.results[0]] = out;
      GpuLaunch l;
      l.inputs = ins;
      l.outputs = {out};
      std::string name(syntax::op_name(b.op));
      switch (fam) {
        case OpFamily::Unary:
        case OpFamily::Binary:
          if (auto c = fold_constant(b.op, ins, plan_.slots[out].dtype)) {
            // Every operand is a known constant (e.g. rsqrt of dim_value Dh):
            // the value is computed here, exactly as the kernel would.
            l.kind = plan::LaunchKind::Fill;
            l.inputs.clear();
            l.scalar = *c;
            l.why = name + " of constants, folded";
            break;
          }
          l.kind = fam == OpFamily::Unary ? plan::LaunchKind::Unary : plan::LaunchKind::Binary;
          l.op = name;
          break;
        case OpFamily::Compare: l.kind = plan::LaunchKind::Compare; l.op = name; break;
        case OpFamily::Select: l.kind = plan::LaunchKind::Select; break;
        case OpFamily::Cast: l.kind = plan::LaunchKind::Cast; break;
        case OpFamily::Const:
        case OpFamily::Fill:
          l.kind = plan::LaunchKind::Fill;
          l.scalar = b.attrs.is_int ? static_cast<double>(b.attrs.int_value) : b.attrs.float_value;
          break;
        case OpFamily::Iota: l.kind = plan::LaunchKind::Iota; l.ints = {b.attrs.axis}; break;
        case OpFamily::Matmul: {
          l.kind = plan::LaunchKind::Matmul;
          l.library = "cublasLt";
          const auto& a = plan_.slots[ins[0]].shape;
          const auto& w = plan_.slots[ins[1]].shape;
          int64_t rows = 1;
          for (size_t i = 0; i + 1 < a.size(); ++i) rows *= a[i];
          const auto& o = plan_.slots[out].shape;
          int64_t batches = 1;
          for (size_t i = 0; i + 2 < o.size(); ++i) batches *= o[i];
          bool broadcast = a.size() != o.size() || !std::equal(a.begin(), a.end() - 2, o.begin()) ||
                           (w.size() > 2 && (w.size() != o.size() || !std::equal(w.begin(), w.end() - 2, o.begin())));
          l.why = w.size() == 2 && a.size() > 2
                      ? "shared weight: one GEMM of [" + std::to_string(rows) + " x " + std::to_string(a.back()) + "] x [" +
                            std::to_string(w[0]) + " x " + std::to_string(w[1]) + "] (the batch folds into M; no copies)"
                  : o.size() > 2 ? "strided batched GEMM over " + std::to_string(batches) + " batches" +
                                       (broadcast ? " (batch dims broadcast: stride 0, no copies)" : "")
                                 : "one GEMM";
          plan::GpuDType mdt = plan_.slots[ins[0]].dtype;
          if (mdt == plan::GpuDType::F32 && opts_.allow_tf32) l.op = "tf32";
          l.why += mdt == plan::GpuDType::F64 ? ", fp64 compute" : l.op == "tf32" ? ", TF32 tensor cores (allowed by --gpu-tf32)" : ", fp32 compute (no TF32)";
          break;
        }
        case OpFamily::Transpose: {
          l.kind = plan::LaunchKind::Transpose;
          size_t r = plan_.slots[ins[0]].shape.size();
          for (size_t i = 0; i < r; ++i) l.ints.push_back(static_cast<int64_t>(i));
          std::swap(l.ints[r - 1], l.ints[r - 2]);
          break;
        }
        case OpFamily::Permute: l.kind = plan::LaunchKind::Transpose; l.ints = b.attrs.axes; break;
        case OpFamily::BroadcastTo: l.kind = plan::LaunchKind::Broadcast; break;
        case OpFamily::Concat: l.kind = plan::LaunchKind::Concat; l.ints = {b.attrs.axis}; break;
        case OpFamily::Slice: {
          auto st = b.attrs.start.eval(env);
          if (!st) throw PlanError(std::string(types::kBindingOverflows) + ": " + what + ": the start " + b.attrs.start.str() + " cannot be evaluated at this binding");
          l.kind = plan::LaunchKind::Slice;
          l.ints = {b.attrs.axis, *st};
          break;
        }
        case OpFamily::Reduce:
          l.kind = plan::LaunchKind::Reduce;
          l.op = b.op == OpKind::ReduceSum ? "sum" : b.op == OpKind::ReduceMax ? "max" : b.op == OpKind::ReduceMin ? "min" : "mean";
          l.ints = b.attrs.axes;
          std::sort(l.ints.begin(), l.ints.end());
          l.flag = b.attrs.keepdims;
          break;
        case OpFamily::Scan:
          l.kind = plan::LaunchKind::Scan;
          l.ints = {b.attrs.axis};
          l.flag = b.attrs.reverse;
          l.why = b.attrs.reverse ? "cumsum from the end of axis " + std::to_string(b.attrs.axis) : "";
          break;
        case OpFamily::Softmax:
          l.kind = plan::LaunchKind::Softmax;
          l.op = name;  // softmax | log_softmax
          l.ints = {b.attrs.axis};
          break;
        case OpFamily::RepeatInterleave: {
          auto r = b.attrs.size.eval(env);
          if (!r) throw PlanError(std::string(types::kBindingOverflows) + ": " + what + ": the repeats " + b.attrs.size.str() + " cannot be evaluated at this binding");
          if (*r < 1) throw PlanError(what + ": the repeats " + b.attrs.size.str() + " do not evaluate to a positive number");
          l.kind = plan::LaunchKind::Repeat;
          l.ints = {b.attrs.axis, *r};
          break;
        }
        case OpFamily::DimValue: {
          // A shape variable's value is known when the plan is made: a fill.
          auto v = b.attrs.size.eval(env);
          if (!v) throw PlanError(std::string(types::kBindingOverflows) + ": " + what + ": " + b.attrs.size.str() + " cannot be evaluated at this binding");
          l.kind = plan::LaunchKind::Fill;
          l.scalar = static_cast<double>(*v);
          l.why = "dim_value " + b.attrs.size.str() + " = " + std::to_string(*v);
          break;
        }
        case OpFamily::CopyToDevice:
          l.kind = plan::LaunchKind::Copy;
          l.why = plan_.slots[root(ins[0])].kind == GpuSlot::Kind::HostInput ? "host to device (copy_to_device)" : "device to device";
          break;
        case OpFamily::Gather:
        case OpFamily::TakeAlongAxis:
          // Indices are checked on the device; the second output is the
          // bounds-check record the executor reads after the plan.
          l.kind = fam == OpFamily::Gather ? plan::LaunchKind::Gather : plan::LaunchKind::TakeAlong;
          if (fam == OpFamily::TakeAlongAxis) l.ints = {b.attrs.axis};
          l.outputs.push_back(record_slot());
          l.why = "`" + name + "`" + source_location(b.span) + ": indices checked on the device, reported after the plan";
          break;
        default: throw PlanError("internal: " + what + " has no GPU lowering");
      }
      if (l.kind == plan::LaunchKind::Fill && gpu_dtype_is_float(plan_.slots[out].dtype)) constant_[out] = plan::gpu_stored_value(l.scalar, plan_.slots[out].dtype);
      launch(std::move(l));
    }
    std::vector<int> rs;
    for (ir::ValueId r : f.results) rs.push_back(vals[r]);
    return rs;
  }

  // `(add (matmul a w) c)`, the matmul's value used only here, in any
  // floating dtype, becomes the matmul's cuBLASLt epilogue (one launch
  // fewer, one pass over the output fewer; bf16 then rounds once, after the
  // add, where the unfused launches round the product too), and the add's
  // value is the matmul's slot:
  //   c a vector of the last dimension: the BIAS epilogue;
  //   c of the output's shape (a residual connection): C = c, beta = 1
  //   (launch flag 1).
  bool fuse_into_matmul(const ir::Binding& b, const std::vector<int>& ins, const std::vector<int>& uses, std::vector<int>& vals) {
    if (plan_.launches.empty() || ins.size() != 2) return false;
    GpuLaunch& mm = plan_.launches.back();
    if (mm.kind != plan::LaunchKind::Matmul || mm.inputs.size() != 2) return false;
    for (int side = 0; side < 2; ++side) {
      int prod = ins[side], c = ins[1 - side];
      if (prod != mm.outputs[0] || prod == c) continue;
      ir::ValueId pv = b.operands[side];
      // The product has no other reader: one use here, and no other value of
      // this function (e.g. a call's second result) names its slot.
      if (uses[pv] != 1 || std::count(vals.begin(), vals.end(), prod) != 1) continue;
      const GpuSlot& out = plan_.slots[prod];
      const GpuSlot& cs = plan_.slots[root(c)];
      if (!gpu_dtype_is_float(out.dtype)) continue;
      if (cs.kind == GpuSlot::Kind::HostInput || cs.kind == GpuSlot::Kind::HostOutput) continue;
      if (plan_.slots[c].dtype != out.dtype) continue;
      if (plan_.slots[c].shape == std::vector<int64_t>{out.shape.back()}) {
        mm.why += "; the bias add fused into the epilogue";
      } else if (plan_.slots[c].shape == out.shape) {
        mm.flag = true;
        mm.why += "; the residual add fused into the GEMM (C = the addend, beta = 1)";
      } else {
        continue;
      }
      mm.inputs.push_back(c);
      vals[b.results[0]] = prod;
      return true;
    }
    return false;
  }

  // The value of a slot filled with a known f32/f64 constant (fill, const,
  // dim_value, or an exact op of such), rounded to its dtype.
  std::optional<double> constant(int s) const {
    auto it = constant_.find(s);
    if (it == constant_.end()) return std::nullopt;
    return it->second;
  }

  // An op whose operands are all known constants, when its result is exact
  // on both sides (IEEE: negation, square root, +, -, *, /; rsqrt is 1/sqrt
  // as the kernels compute it), in the dtype: the same bits as the kernel
  // (bf16: the f32 result rounded to bf16, as the kernels store it).
  std::optional<double> fold_constant(OpKind op, const std::vector<int>& ins, plan::GpuDType dt) const {
    if (!gpu_dtype_is_float(dt)) return std::nullopt;
    std::vector<double> v;
    for (int s : ins) {
      auto c = constant(s);
      if (!c || plan_.slots[s].dtype != dt) return std::nullopt;
      v.push_back(*c);
    }
    auto calc = [&](auto x) -> std::optional<double> {
      using T = decltype(x);
      T a = static_cast<T>(v[0]), b = v.size() > 1 ? static_cast<T>(v[1]) : T(0);
      switch (op) {
        case OpKind::Neg: return static_cast<double>(-a);
        case OpKind::Sqrt: return static_cast<double>(std::sqrt(a));
        case OpKind::Rsqrt: return static_cast<double>(T(1) / std::sqrt(a));
        case OpKind::Add: return static_cast<double>(a + b);
        case OpKind::Sub: return static_cast<double>(a - b);
        case OpKind::Mul: return static_cast<double>(a * b);
        case OpKind::Div: return static_cast<double>(a / b);
        default: return std::nullopt;
      }
    };
    // bf16 computes in f32 and rounds the result, as the kernels do.
    if (dt == plan::GpuDType::F64) return calc(0.0);
    std::optional<double> r = calc(0.0f);
    if (r) r = plan::gpu_stored_value(*r, dt);
    return r;
  }

  // `(mul (matmul a b) c)` with c a known scalar constant (attention's
  // 1/sqrt(Dh)), the product used only here and not yet read: cuBLASLt's
  // alpha (launch scalar), one launch and one pass over the scores fewer.
  bool scale_matmul(const ir::Binding& b, const std::vector<int>& ins, const std::vector<int>& uses, std::vector<int>& vals) {
    if (ins.size() != 2) return false;
    for (int side = 0; side < 2; ++side) {
      int prod = ins[side];
      auto c = constant(ins[1 - side]);
      if (!c || plan_.slots[ins[1 - side]].numel() != 1 || plan_.slots[ins[1 - side]].shape.size() > plan_.slots[prod].shape.size()) continue;
      if (uses[b.operands[side]] != 1 || std::count(vals.begin(), vals.end(), prod) != 1) continue;
      for (size_t i = plan_.launches.size(); i-- > 0;) {
        GpuLaunch& mm = plan_.launches[i];
        bool writes = std::find(mm.outputs.begin(), mm.outputs.end(), prod) != mm.outputs.end();
        bool reads = std::find(mm.inputs.begin(), mm.inputs.end(), prod) != mm.inputs.end();
        if (reads) break;  // read since it was made: too late
        if (!writes) continue;
        if (mm.kind != plan::LaunchKind::Matmul || mm.inputs.size() != 2 || mm.scalar != 0 || plan_.slots[prod].dtype != plan_.slots[ins[1 - side]].dtype)
          break;
        if (!gpu_dtype_is_float(plan_.slots[prod].dtype)) break;
        mm.scalar = *c;
        mm.why += "; scaled by " + common::format_double(*c, 9) + " (alpha)";
        vals[b.results[0]] = prod;
        return true;
      }
    }
    return false;
  }

  // Launches whose outputs nothing reads (temporaries only): a constant fill
  // that folding or alpha scaling made unused.
  void remove_dead_launches() {
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<int> readers(plan_.slots.size(), 0);
      for (const GpuLaunch& l : plan_.launches)
        for (int32_t s : l.inputs) ++readers[root(s)];
      for (size_t i = plan_.launches.size(); i-- > 0;) {
        const GpuLaunch& l = plan_.launches[i];
        if (l.kind == plan::LaunchKind::Gather || l.kind == plan::LaunchKind::TakeAlong) continue;  // their record is read after the plan
        bool dead = true;
        for (int32_t s : l.outputs) dead &= plan_.slots[s].kind == GpuSlot::Kind::Temp && readers[s] == 0 && !has_view(s);
        if (!dead) continue;
        plan_.launches.erase(plan_.launches.begin() + static_cast<std::ptrdiff_t>(i));
        changed = true;
      }
    }
  }

  bool has_view(int s) const {
    for (const GpuSlot& v : plan_.slots)
      if (v.kind == GpuSlot::Kind::View && v.alias == s) return true;
    return false;
  }

  // A matmul operand made by a transpose of the last two dims that nothing
  // else reads is read transposed by cuBLASLt instead (ints = {transA,
  // transB}): one launch and one pass over that operand fewer.
  void fold_transposes_into_matmuls() {
    std::vector<int> readers(plan_.slots.size(), 0);
    for (const GpuLaunch& l : plan_.launches)
      for (int32_t s : l.inputs) ++readers[root(s)];
    std::vector<bool> dead(plan_.launches.size(), false);
    std::vector<int> producer(plan_.slots.size(), -1);
    for (size_t i = 0; i < plan_.launches.size(); ++i)
      for (int32_t s : plan_.launches[i].outputs) producer[s] = static_cast<int>(i);
    for (GpuLaunch& mm : plan_.launches) {
      if (mm.kind != plan::LaunchKind::Matmul) continue;
      std::vector<int64_t> trans = {0, 0};
      for (int side = 0; side < 2; ++side) {
        int32_t s = mm.inputs[side];
        int p = producer[s];
        if (p < 0 || plan_.slots[s].kind != GpuSlot::Kind::Temp || readers[s] != 1) continue;
        const GpuLaunch& t = plan_.launches[p];
        size_t r = t.ints.size();
        bool swap_last = t.kind == plan::LaunchKind::Transpose && r >= 2 && t.ints[r - 1] == static_cast<int64_t>(r - 2) &&
                         t.ints[r - 2] == static_cast<int64_t>(r - 1);
        for (size_t i = 0; swap_last && i + 2 < r; ++i) swap_last = t.ints[i] == static_cast<int64_t>(i);
        plan::GpuDType dt = plan_.slots[s].dtype;  // cuBLASLt's dtypes; integer matmuls are our own kernel
        if (!swap_last || (dt != plan::GpuDType::F32 && dt != plan::GpuDType::F64 && dt != plan::GpuDType::BF16)) continue;
        mm.inputs[side] = t.inputs[0];
        trans[side] = 1;
        dead[p] = true;
      }
      if (trans[0] || trans[1]) {
        mm.ints = trans;
        mm.why += std::string("; ") + (trans[0] ? "A" : "") + (trans[0] && trans[1] ? " and " : "") + (trans[1] ? "B" : "") +
                  " read transposed (the transpose launch folded into the GEMM)";
      }
    }
    if (std::find(dead.begin(), dead.end(), true) == dead.end()) return;
    std::vector<GpuLaunch> kept;
    for (size_t i = 0; i < plan_.launches.size(); ++i)
      if (!dead[i]) kept.push_back(std::move(plan_.launches[i]));
    plan_.launches = std::move(kept);
  }

  // Results go straight into the output buffers where they are temporaries
  // of their own; anything else (a parameter, a view, a value returned twice)
  // is copied into the output buffer.
  void bind_outputs(const ir::Function& f, const std::map<std::string, int64_t>& env, const std::vector<int>& results) {
    std::set<int> taken;
    for (size_t i = 0; i < results.size(); ++i) {
      int s = results[i];
      GpuSlot& sl = plan_.slots[s];
      if (sl.kind == GpuSlot::Kind::HostOutput && sl.index < 0) {
        sl.index = static_cast<int32_t>(i);
        taken.insert(s);
        continue;
      }
      if (sl.kind == GpuSlot::Kind::Temp && !taken.count(s)) {
        sl.kind = GpuSlot::Kind::Output;
        sl.index = static_cast<int32_t>(i);
        taken.insert(s);
        continue;
      }
      // A reshape of a temporary (the same bytes in another shape): the
      // temporary itself becomes the output buffer, no copy.
      if (sl.kind == GpuSlot::Kind::View) {
        int r = root(s);
        GpuSlot& rs = plan_.slots[r];
        if (rs.kind == GpuSlot::Kind::Temp && !taken.count(r) && rs.bytes() == sl.bytes() && rs.dtype == sl.dtype) {
          rs.kind = GpuSlot::Kind::Output;
          rs.index = static_cast<int32_t>(i);
          rs.offset = 0;
          taken.insert(r);
          continue;
        }
      }
      const types::TensorType& t = f.result_types[i];
      int out = new_slot(on_device(t) ? GpuSlot::Kind::Output : GpuSlot::Kind::HostOutput, static_cast<int32_t>(i), t, env);
      launch({plan::LaunchKind::Copy, "", {s}, {out}, {}, 0, false, "shapeml", "result " + std::to_string(i) + " is not a fresh value: copied into its buffer"});
      taken.insert(out);
    }
  }

  // Slots no launch touches, directly or through a view (temporaries of
  // launches a pass replaced): dropped, so that they take no workspace. The
  // rest keep their order, so a view still follows what it aliases.
  void drop_unused_slots() {
    const size_t n = plan_.slots.size();
    std::vector<bool> keep(n, false);
    auto mark = [&](int32_t s) {
      for (;; s = plan_.slots[static_cast<size_t>(s)].alias) {
        keep[static_cast<size_t>(s)] = true;
        if (plan_.slots[static_cast<size_t>(s)].kind != GpuSlot::Kind::View) break;
      }
    };
    for (const GpuLaunch& l : plan_.launches) {
      for (int32_t s : l.inputs) mark(s);
      for (int32_t s : l.outputs) mark(s);
    }
    std::vector<int32_t> to(n, -1);
    std::vector<GpuSlot> kept;
    for (size_t i = 0; i < n; ++i) {
      GpuSlot::Kind k = plan_.slots[i].kind;
      if (!keep[i] && (k == GpuSlot::Kind::Temp || k == GpuSlot::Kind::View)) continue;
      to[i] = static_cast<int32_t>(kept.size());
      kept.push_back(plan_.slots[i]);
      if (kept.back().kind == GpuSlot::Kind::View) kept.back().alias = to[static_cast<size_t>(kept.back().alias)];
    }
    if (kept.size() == n) return;
    for (GpuLaunch& l : plan_.launches) {
      for (int32_t& s : l.inputs) s = to[static_cast<size_t>(s)];
      for (int32_t& s : l.outputs) s = to[static_cast<size_t>(s)];
    }
    plan_.slots = std::move(kept);
  }

  const ir::Module& m_;
  PlanOptions opts_;
  std::map<int, double> constant_;  // slot -> its known constant value (constant())
  GpuPlan plan_;
  int device_ = -1;
  std::set<ir::ValueId> top_results_;
};

}  // namespace

bool is_device_entry(const ir::Function& f, const std::map<std::string, int64_t>& bindings) {
  if (f.device_vars.empty()) return is_device_function(f);
  types::TypeBinding b;
  for (const auto& v : f.device_vars)
    if (auto it = bindings.find(v); it != bindings.end())
      if (auto d = types::device_from_binding(it->second)) b.devices[v] = *d;
  for (const auto& v : f.values)
    if (on_device(types::substitute(v.type, b))) return true;
  for (const auto& t : f.result_types)
    if (on_device(types::substitute(t, b))) return true;
  return false;
}

bool is_device_function(const ir::Function& f) {
  for (const auto& v : f.values)
    if (on_device(v.type)) return true;
  for (const auto& t : f.result_types)
    if (on_device(t)) return true;
  return false;
}


std::optional<plan::GpuPlan> plan_function(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings,
                                          std::string& error, const PlanOptions& options) {
  if (!m.find(entry)) {
    error = "no function `" + entry + "`";
    return std::nullopt;
  }
  // A generic entry (spec §3.5): the module at its dtype/device values.
  std::map<std::string, int64_t> shape_bindings = bindings;
  std::optional<ir::Module> storage;
  const ir::Module* mm = transform::specialize_for_binding(m, entry, shape_bindings, storage, error);
  if (!mm) return std::nullopt;
  const ir::Function* f = mm->find(entry);
  try {
    plan::GpuPlan p = Planner(*mm, options).run(*f, shape_bindings);
    if (options.fuse) {
      plan::GpuPlan fused = fuse_elementwise(p);
      // Every plan pass ends with the plan verifier (as check/verify.cpp
      // does for the IR): a pass that breaks the plan is a compiler bug.
      if (auto d = plan::verify_plan(fused)) throw PlanError("internal: elementwise fusion made a plan the verifier refuses: " + d->message);
      bool any = false;
      for (const auto& l : fused.launches) any |= l.kind == plan::LaunchKind::Fused;
      if (!options.generate_kernels) {
        p = std::move(fused);  // the interpreter, asked for
      } else if (any && generate_fused_kernels(fused) > 0) {
        if (auto d = plan::verify_plan(fused)) throw PlanError("internal: kernel generation made a plan the verifier refuses: " + d->message);
        p = std::move(fused);
      }
      // else: no kernel could be generated (no NVRTC where the module is
      // built): the unfused launches, which measured faster than the
      // interpreter (docs/design/gpu-generated-kernels.md).
    }
    plan::decide_graph_replay(p, options.graph);
    plan::decide_graph_branches(p, options.graph_branches);
    return p;
  } catch (const PlanError& e) {
    error = e.what();
  } catch (const std::exception& e) {
    error = std::string("internal: ") + e.what();
  }
  return std::nullopt;
}

}  // namespace shapeml::lower::gpu
