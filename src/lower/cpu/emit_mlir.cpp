// Typed IR -> MLIR text. See emit_mlir.h and docs/design/cpu-codegen.md.
//
// Every operation of the language becomes tensor-level MLIR with static
// shapes: elementwise families are linalg.generic (broadcasting is in the
// indexing maps: a literal-1 operand dimension reads index 0), matmul is
// linalg.matmul / linalg.batch_matmul, layout operations are linalg.transpose
// and tensor.{collapse,expand}_shape / {extract,insert}_slice, reductions are
// linalg.generic with reduction iterators. Scalar constants (`const`, `fill`
// and the literals of binary operations) are kept symbolic and become scalar
// constants inside the consuming generic; they are materialized as
// linalg.fill only when an operation needs the tensor. The scalar semantics
// of each operation are scalar_math.h's, the matmul tiling is
// matmul_strategy.h's, the index-check sites are index_sites.h's.
#include "lower/cpu/emit_mlir.h"
#include "transform/specialize_types.h"

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "lower/cpu/matmul_strategy.h"
#include "lower/cpu/mlir_text.h"
#include "lower/cpu/scalar_math.h"
#include "types/shape_inference.h"
#include "common/numbers.h"

namespace shapeml::lower::cpu {

using syntax::OpFamily;
using syntax::OpKind;
using types::DType;

namespace {

// ---- types -------------------------------------------------------------------

struct Ty {
  DType dt = DType::F32;
  std::vector<int64_t> shape;
  size_t rank() const { return shape.size(); }
};

std::string dims_prefix(const std::vector<int64_t>& s) {
  std::string r;
  for (int64_t d : s) r += std::to_string(d) + "x";
  return r;
}

std::string tensor_ty(const Ty& t) { return "tensor<" + dims_prefix(t.shape) + storage_ty(t.dt) + ">"; }
// Buffers at the function boundary: bool is one byte.
std::string memref_ty(const Ty& t) { return "memref<" + dims_prefix(t.shape) + storage_ty(t.dt) + ">"; }

std::string int_list(const std::vector<int64_t>& v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + "]";
}

// ---- literals ----------------------------------------------------------------

struct Lit {
  bool is_int = false;
  int64_t i = 0;
  double f = 0;
  double as_double() const { return is_int ? static_cast<double>(i) : f; }
};

float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (std::isnan(x)) {
    u = (u & 0xffff0000u) | 0x00400000u;  // stay a (quiet) NaN
  } else {
    uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;  // round to nearest, ties to even
    u &= 0xffff0000u;
  }
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// The bf16 bit pattern of v as a (signed) i16 literal.
std::string bf16_bits_attr(float v) {
  float r = round_bf16(v);
  uint32_t u;
  std::memcpy(&u, &r, 4);
  return std::to_string(static_cast<int16_t>(static_cast<uint16_t>(u >> 16)));
}

// `VALUE : TYPE` for a scalar of dtype `d` holding literal `l` (the exact
// value of dtype d; for bf16 the value rounded to bf16).
std::string scalar_attr(const Lit& l, DType d) {
  switch (d) {
    case DType::Bool: return (l.is_int ? l.i != 0 : l.f != 0) ? "1 : i8" : "0 : i8";  // stored as a byte
    case DType::I32:
    case DType::I64: return std::to_string(l.is_int ? l.i : static_cast<int64_t>(l.f)) + " : " + elem_ty(d);
    case DType::F32:
    case DType::F64: return float_attr(l.as_double(), d) + " : " + elem_ty(d);
    case DType::BF16: return bf16_bits_attr(static_cast<float>(l.as_double())) + " : i16";
    case DType::Var: break;  // specialized away before lowering
  }
  return "?";
}

// The literal's value converted to the compute type of `d` (for bf16: the
// bf16-rounded value as f32).
std::string compute_scalar_attr(const Lit& l, DType d) {
  if (d == DType::BF16) return float_attr(round_bf16(static_cast<float>(l.as_double())), DType::F32) + " : f32";
  if (d == DType::Bool) return (l.is_int ? l.i != 0 : l.f != 0) ? "true" : "false";
  return scalar_attr(l, d);
}

std::string sanitize(const std::string& s) {
  std::string r;
  for (char c : s) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (r.empty()) r = "v";
  return r;
}

// ---- emitter -------------------------------------------------------------------

// A value during emission: an SSA tensor, or a splat constant that is not
// materialized yet.
struct Val {
  Val() = default;
  Val(std::string s, Ty t, std::optional<Lit> sp) : ssa(std::move(s)), ty(std::move(t)), splat(sp) {}
  std::string ssa;  // empty while only `splat` is known
  Ty ty;
  std::optional<Lit> splat;
  // Produced by an operation of this function instance (not a parameter, an
  // alias of one, or a call result): its buffer may be reused.
  bool owned = false;
  // Produced by an elementwise linalg.generic: it will be fused into its
  // consumer, so its buffer is never reused (that would block the fusion).
  bool elementwise = false;
  // Set when the value is `tensor.expand_shape flat_ssa flat_groups`: a
  // returned value is then written through a collapsed view of its output
  // buffer (empty-tensor elimination does not see through expand_shape).
  std::string flat_ssa, flat_groups;
  Ty flat_ty;
};

class Emitter;

class Emitter final : public NameSource {
 public:
  Emitter(const ir::Module& m, const EmitOptions& o) : m_(m), o_(o) {}

  // The code-size budget of one specialization (spec: "Implementation
  // limits"): every operation emitted, inlined calls included, costs 1 and a
  // matmul kCodegenMatmulCost. MLIR's one-shot bufferization analysis and
  // the per-matmul transform scripts are super-linear in the function's
  // size (250 matmuls: 3.4 s, 1,000: 140 s), so past the budget the
  // specialization is refused with a status rather than compiled for
  // minutes. Elementwise chains are linear (10,000 lets: 0.9 s).
  void charge(const ir::Binding& b, const ir::Function& f) {
    cost_ += syntax::op_family(b.op) == OpFamily::Matmul ? kCodegenMatmulCost : 1;
    if (cost_ > kCodegenBudget)
      fail("function `" + f.name + "` is too large for the CPU back end: with calls inlined it has more than " +
           std::to_string(kCodegenBudget) + " operations (a matmul counts as " + std::to_string(kCodegenMatmulCost) +
           "); compile time would grow faster than linearly. Split the work into several entry points");
  }

  std::string fresh(const std::string& hint) override {
    std::string base = sanitize(hint);
    if (std::isdigit(static_cast<unsigned char>(base[0]))) base = "t" + base;
    // Resume from the last suffix this base got: probing from 1 every time
    // made a function with thousands of values quadratic (a 2,000-let chain
    // spent 3 s here). The names are the same: every suffix below the
    // counter is taken.
    int& k = next_suffix_[base];
    std::string n = k == 0 ? base : base + "_" + std::to_string(k);
    while (used_.count(n)) n = base + "_" + std::to_string(++k);
    if (k == 0) k = 1;
    used_.insert(n);
    return "%" + n;
  }

  std::string run(const std::string& entry, const std::map<std::string, int64_t>& bindings) {
    const ir::Function* f = m_.find(entry);
    if (!f) fail("no function `" + entry + "` in module `" + m_.name + "`");
    check_bindings(*f, bindings);
    std::string fname = o_.func_name.empty() ? default_func_name(entry) : o_.func_name;
    for (char c : fname)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$')) fail("invalid function name `" + fname + "`");

    // Signature: inputs then outputs, all static memrefs.
    std::vector<std::string> args;
    std::vector<Val> params;
    std::string prologue;
    for (ir::ValueId p : f->params) {
      const ir::Value& v = f->values[p];
      Ty t = eval_type(v.type, bindings, "parameter `" + v.name + "`");
      std::string buf = fresh(v.name + "_buf");
      args.push_back(buf + ": " + memref_ty(t) + " {llvm.noalias}");
      std::string ten = fresh(v.name);
      if (t.dt == DType::Bool) {
        std::string raw = fresh(v.name + "_i8");
        prologue += "    " + raw + " = bufferization.to_tensor " + buf + " restrict : " + memref_ty(t) + "\n";
        params.push_back({raw, t, std::nullopt});
        pending_bool_inputs_.push_back({params.size() - 1, ten});
      } else {
        prologue += "    " + ten + " = bufferization.to_tensor " + buf + " restrict : " + memref_ty(t) + "\n";
        params.push_back({ten, t, std::nullopt});
      }
    }
    std::vector<Ty> out_tys;
    for (size_t i = 0; i < f->results.size(); ++i) {
      Ty t = eval_type(f->result_types[i], bindings, "result " + std::to_string(i));
      out_tys.push_back(t);
      args.push_back(fresh("out" + std::to_string(i)) + ": " + memref_ty(t) + " {llvm.noalias}");
    }
    // Index checks (docs/design/index-checks.md): one more buffer, after the
    // outputs, only for entries that read run-time indices.
    std::vector<IndexSite> sites = index_sites(m_, entry);
    std::string record_arg;
    Ty record_ty{DType::I64, {}};
    if (!sites.empty()) {
      size_t r = 0;
      for (const auto& s : sites) r = std::max(r, s.rank);
      record_ty.shape = {static_cast<int64_t>(3 + r)};
      record_arg = fresh("error_record");
      args.push_back(record_arg + ": " + memref_ty(record_ty) + " {llvm.noalias}");
    }
    body_ = prologue;
    // Bool inputs: bytes normalized to 0/1 (any non-zero byte is true).
    for (auto& [idx, name] : pending_bool_inputs_) params[idx] = normalize_bool_input(params[idx].ssa, params[idx].ty, name);

    size_t views_at = body_.size();  // output views go here: they must dominate every use
    std::string views;
    std::vector<Val> results = emit_function(*f, bindings, params, 0);
    for (size_t i = 0; i < results.size(); ++i) {
      Val r = results[i];
      if (r.ty.shape != out_tys[i].shape || r.ty.dt != out_tys[i].dt) fail("internal: result " + std::to_string(i) + " has an unexpected type");
      std::string out = args[f->params.size() + i].substr(0, args[f->params.size() + i].find(':'));
      std::string t = materialize(r);
      std::string tt = tensor_ty(r.ty), mt = memref_ty(r.ty);
      if (!r.flat_ssa.empty()) {
        // Write the unexpanded value through a collapsed view of the output.
        std::string view = fresh(out.substr(1) + "_flat");
        views += "    " + view + " = memref.collapse_shape " + out + " " + r.flat_groups + " : " + mt + " into " + memref_ty(r.flat_ty) + "\n";
        t = r.flat_ssa;
        tt = tensor_ty(r.flat_ty);
        mt = memref_ty(r.flat_ty);
        out = view;
      }
      line("bufferization.materialize_in_destination " + t + " in restrict writable " + out + " : (" + tt + ", " + mt + ") -> ()");
    }
    if (!sites.empty()) {
      if (checks_.size() != sites.size()) fail("internal: " + std::to_string(checks_.size()) + " index checks emitted, " + std::to_string(sites.size()) + " expected");
      std::string rec = error_record(record_ty);
      line("bufferization.materialize_in_destination " + rec + " in restrict writable " + record_arg + " : (" + tensor_ty(record_ty) + ", " +
           memref_ty(record_ty) + ") -> ()");
    }
    body_.insert(views_at, views);
    line("return");

    std::string hdr = "// shapeml: entry `" + entry + "` of module `" + m_.name + "` specialized to";
    if (bindings.empty()) hdr += " (no shape variables)";
    for (const auto& [k, v] : bindings) hdr += " " + k + "=" + std::to_string(v);
    std::string s = hdr + "\n";
    s += "// inputs then outputs are dense row-major buffers (destination-passing style)\n";
    s += "module attributes {shapeml.entry = \"" + entry + "\"} {\n";
    s += "  func.func @" + fname + "(";
    for (size_t i = 0; i < args.size(); ++i) s += (i ? ",\n      " : "") + args[i];
    s += ") {\n" + body_ + "  }\n}\n";
    return s;
  }

 private:
  friend struct Region;

  void line(const std::string& s) { body_ += "    " + s + "\n"; }

  // ---- bindings and types ----
  void check_bindings(const ir::Function& f, const std::map<std::string, int64_t>& b) {
    for (const auto& d : f.dims) {
      auto it = b.find(d);
      if (it == b.end()) fail("shape variable `" + d + "` of `" + f.name + "` is not bound");
      if (it->second < 1) fail("shape variable `" + d + "` is bound to " + std::to_string(it->second) + "; shape variables are >= 1");
    }
    for (const auto& [k, v] : b)
      if (std::find(f.dims.begin(), f.dims.end(), k) == f.dims.end()) fail("`" + f.name + "` has no shape variable `" + k + "`");
    for (const auto& c : f.where) {
      auto ok = c.eval(b);
      if (!ok || !*ok) fail("the bindings violate the constraint " + c.str() + " of `" + f.name + "`");
    }
  }

  Ty eval_type(const types::TensorType& t, const std::map<std::string, int64_t>& env, const std::string& what) {
    if (t.device.kind != types::Device::Kind::Host)
      fail(what + " lives on " + types::device_name(t.device) + ": not a CPU program (the CPU back end compiles host code only)");
    Ty r;
    r.dt = t.dtype;
    int64_t n = 1;
    for (const auto& d : t.shape) {
      auto v = d.eval(env);
      if (!v) fail(what + ": dimension " + d.str() + " cannot be evaluated (unbound variable or overflow)");
      if (*v < 1) fail(what + ": dimension " + d.str() + " evaluates to " + std::to_string(*v));
      if (__builtin_mul_overflow(n, *v, &n) || n > (int64_t{1} << 56)) fail(what + ": too many elements");
      r.shape.push_back(*v);
    }
    return r;
  }

  // ---- function bodies (callees are inlined) ----
  std::vector<Val> emit_function(const ir::Function& f, const std::map<std::string, int64_t>& env, const std::vector<Val>& args, int depth) {
    if (depth > 64) fail("calls nested too deeply");
    std::vector<std::optional<Val>> vals(f.values.size());
    for (size_t i = 0; i < f.params.size(); ++i) {
      Val a = args[i];
      a.owned = false;
      vals[f.params[i]] = a;
    }
    auto get = [&](ir::ValueId id) -> const Val& {
      if (!vals[id]) fail("internal: value " + f.values[id].name + " used before its binding");
      return *vals[id];
    };
    // Last use of every value (binding index; results live forever). An
    // operation whose result may share its operand's buffer (a view or an
    // identity) extends the operand's life to the result's last use.
    const size_t forever = f.body.size();
    std::vector<size_t> last(f.values.size(), 0);
    for (ir::ValueId r : f.results) last[r] = forever;
    for (size_t i = f.body.size(); i-- > 0;) {
      const ir::Binding& b = f.body[i];
      OpFamily fam = syntax::op_family(b.op);
      bool alias = fam == OpFamily::BroadcastTo || fam == OpFamily::Reshape || fam == OpFamily::Transpose || fam == OpFamily::Permute ||
                   fam == OpFamily::Slice || fam == OpFamily::CopyToHost || fam == OpFamily::Cast || fam == OpFamily::Call ||
                   fam == OpFamily::RepeatInterleave;
      size_t u = i;
      if (alias)
        for (ir::ValueId r : b.results) u = std::max(u, last[r]);
      for (ir::ValueId o : b.operands) last[o] = std::max(last[o], u);
    }
    for (size_t bi = 0; bi < f.body.size(); ++bi) {
      const ir::Binding& b = f.body[bi];
      charge(b, f);
      std::vector<Val> ins;
      for (ir::ValueId o : b.operands) ins.push_back(get(o));
      if (b.op == OpKind::Call) {
        const ir::Function* callee = m_.find(b.attrs.callee);
        if (!callee) fail("internal: unknown callee `" + b.attrs.callee + "`");
        // The callee's shape variables, by the one rule of types/shape_inference.h.
        std::vector<types::Shape> param_shapes;
        std::vector<std::vector<int64_t>> arg_sizes;
        for (size_t i = 0; i < callee->params.size() && i < ins.size(); ++i) {
          param_shapes.push_back(callee->values[callee->params[i]].type.shape);
          arg_sizes.push_back(ins[i].ty.shape);
        }
        std::vector<const std::vector<int64_t>*> arg_ptrs;
        for (const auto& a : arg_sizes) arg_ptrs.push_back(&a);
        // `:dims` given at the call: evaluated in the caller, then the rest inferred.
        std::map<std::string, int64_t> given;
        for (const auto& [v, p] : b.attrs.call_dims) {
          auto x = p.eval(env);
          if (!x) fail("explicit shape argument " + v + " = " + p.str() + " of the call to `" + callee->name + "` cannot be evaluated (unbound variable or overflow)");
          given[v] = *x;
        }
        types::ConcreteSolve solved = types::solve_call_shape_variables(callee->dims, param_shapes, callee->where, arg_ptrs, given);
        if (solved.failure) fail("internal: the arguments of the call to `" + callee->name + "` do not bind its shape variables");
        std::map<std::string, int64_t> cenv = solved.binding;
        check_bindings(*callee, cenv);
        line("// call @" + callee->name + " inlined with" + [&] {
          std::string s;
          for (const auto& [k, v] : cenv) s += " " + k + "=" + std::to_string(v);
          return s.empty() ? std::string(" no shape variables") : s;
        }());
        std::vector<Val> rs = emit_function(*callee, cenv, ins, depth + 1);
        if (rs.size() != b.results.size()) fail("internal: call result count");
        for (size_t i = 0; i < rs.size(); ++i) {
          Ty want = eval_type(f.values[b.results[i]].type, env, "a result of `" + callee->name + "`");
          if (want.shape != rs[i].ty.shape || want.dt != rs[i].ty.dt) fail("internal: call result shape mismatch");
          rs[i].owned = false;
          vals[b.results[i]] = rs[i];
        }
        continue;
      }
      const ir::Value& rv = f.values[b.results.at(0)];
      Ty rt = eval_type(rv.type, env, "`" + rv.name + "`");
      dying_.assign(ins.size(), false);
      for (size_t k = 0; k < ins.size(); ++k) dying_[k] = ins[k].owned && !ins[k].elementwise && last[b.operands[k]] == bi;
      Val v = emit_op(b, ins, rt, rv.name, env);
      dying_.clear();
      bool same = false;
      for (const auto& in : ins)
        if (!v.ssa.empty() && v.ssa == in.ssa) {
          same = true;
          v.owned = in.owned;
          v.elementwise = in.elementwise;
        }
      if (!same) v.owned = !v.ssa.empty();
      vals[b.results[0]] = v;
    }
    std::vector<Val> out;
    for (ir::ValueId r : f.results) out.push_back(get(r));
    return out;
  }

  // ---- materialization ----
  std::string empty(const Ty& t) {
    std::string n = fresh("empty");
    line(n + " = tensor.empty() : " + tensor_ty(t));
    return n;
  }

  std::string fill(const std::string& scalar_attr_text, const Ty& t, const std::string& hint, std::string dest = "") {
    std::string c = fresh("cst");
    line(c + " = arith.constant " + scalar_attr_text);
    std::string e = dest.empty() ? empty(t) : dest;
    std::string n = fresh(hint);
    line(n + " = linalg.fill ins(" + c + " : " + storage_ty(t.dt) + ") outs(" + e + " : " + tensor_ty(t) + ") -> " + tensor_ty(t));
    return n;
  }

  std::string materialize(Val& v) {
    if (!v.ssa.empty()) return v.ssa;
    v.ssa = fill(scalar_attr(*v.splat, v.ty.dt), v.ty, "splat");
    return v.ssa;
  }

  static std::string affine_map_for(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape) {
    size_t n = out_shape.size(), k = in_shape.size();
    std::string dims, res;
    for (size_t i = 0; i < n; ++i) dims += (i ? ", d" : "d") + std::to_string(i);
    for (size_t j = 0; j < k; ++j) {
      size_t idx = j + n - k;
      std::string e = (in_shape[j] == 1 && out_shape[idx] != 1) ? "0" : "d" + std::to_string(idx);
      res += (j ? ", " : "") + e;
    }
    return "affine_map<(" + dims + ") -> (" + res + ")>";
  }

  static std::string identity_map(size_t n) { return affine_map_for(std::vector<int64_t>(n, 2), std::vector<int64_t>(n, 2)); }

  static std::string iterators(size_t n, const std::set<size_t>& reduced = {}) {
    std::string r = "[";
    for (size_t i = 0; i < n; ++i) r += std::string(i ? ", " : "") + (reduced.count(i) ? "\"reduction\"" : "\"parallel\"");
    return r + "]";
  }

  using BodyFn = std::function<std::string(Region&, const std::vector<std::string>&)>;

  // out[i...] = fn(ins broadcast to `out`), computed in the compute types:
  // bf16 inputs arrive as f32 and an f32 result is rounded to a bf16 output.
  Val elementwise(const std::vector<Val>& ins, const Ty& out, const BodyFn& fn, const std::string& hint, bool reuse = false) {
    std::vector<std::string> maps, in_names, in_types, args;
    Region r{*this, ""};
    std::vector<std::string> scalars(ins.size());
    std::string bb_args;
    std::vector<std::pair<size_t, std::string>> tensor_args;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (ins[i].splat && ins[i].ssa.empty()) continue;
      std::string a = fresh("in");
      tensor_args.push_back({i, a});
      maps.push_back(affine_map_for(ins[i].ty.shape, out.shape));
      in_names.push_back(ins[i].ssa);
      in_types.push_back(tensor_ty(ins[i].ty));
      bb_args += a + ": " + storage_ty(ins[i].ty.dt) + ", ";
    }
    std::string o = fresh("out");
    bb_args += o + ": " + storage_ty(out.dt);
    for (size_t i = 0; i < ins.size(); ++i)
      if (ins[i].splat && ins[i].ssa.empty()) scalars[i] = r.cst(compute_scalar_attr(*ins[i].splat, ins[i].ty.dt));
    for (auto& [i, a] : tensor_args) scalars[i] = load_compute(r, a, ins[i].ty.dt);
    std::string res = store_compute(r, fn(r, scalars), out.dt);
    maps.push_back(identity_map(out.rank()));
    // Compute in place into an operand that dies here (same type, produced
    // by a non-elementwise op of this function): one buffer fewer.
    std::string e;
    for (size_t i = 0; i < ins.size() && e.empty(); ++i)
      if (reuse && i < dying_.size() && dying_[i] && !ins[i].ssa.empty() && tensor_ty(ins[i].ty) == tensor_ty(out)) e = ins[i].ssa;
    if (e.empty()) e = empty(out);
    std::string n = fresh(hint);
    std::string s = n + " = linalg.generic {indexing_maps = [";
    for (size_t i = 0; i < maps.size(); ++i) s += (i ? ", " : "") + maps[i];
    s += "], iterator_types = " + iterators(out.rank()) + "}";
    if (!in_names.empty()) {
      s += " ins(";
      for (size_t i = 0; i < in_names.size(); ++i) s += (i ? ", " : "") + in_names[i];
      s += " : ";
      for (size_t i = 0; i < in_types.size(); ++i) s += (i ? ", " : "") + in_types[i];
      s += ")";
    }
    s += " outs(" + e + " : " + tensor_ty(out) + ") {\n    ^bb0(" + bb_args + "):\n" + r.text;
    s += "      linalg.yield " + res + " : " + storage_ty(out.dt) + "\n    } -> " + tensor_ty(out);
    line(s);
    Val v{n, out, std::nullopt};
    v.elementwise = true;
    return v;
  }

  // A bool input's bytes, normalized to 0 and 1 (any non-zero byte is true):
  // bool values are bytes inside the function too (storage_ty), and what
  // passes through to an output unchanged must be 0 or 1.
  Val normalize_bool_input(const std::string& raw, const Ty& t, const std::string& name) {
    std::string a = fresh("in"), o = fresh("out");
    Region r{*this, ""};
    std::string x = store_compute(r, load_compute(r, a, DType::Bool), DType::Bool);
    std::string e = empty(t);
    std::string n = name;  // reserved by the caller
    std::string m = identity_map(t.rank());
    line(n + " = linalg.generic {indexing_maps = [" + m + ", " + m + "], iterator_types = " + iterators(t.rank()) + "} ins(" + raw + " : " +
         tensor_ty(t) + ") outs(" + e + " : " + tensor_ty(t) + ") {\n    ^bb0(" + a + ": i8, " + o + ": i8):\n" + r.text + "      linalg.yield " +
         x + " : i8\n    } -> " + tensor_ty(t));
    return {n, t, std::nullopt};
  }


  // ---- operations ----
  Val emit_op(const ir::Binding& b, std::vector<Val>& ins, const Ty& rt, const std::string& name, const std::map<std::string, int64_t>& env) {
    std::string hint = name.empty() ? "t" : (name[0] == '%' ? "t" + name.substr(1) : name);
    switch (syntax::op_family(b.op)) {
      case OpFamily::Unary: {
        DType cd = compute_dt(ins[0].ty.dt);
        return elementwise(ins, rt, [&](Region& r, const std::vector<std::string>& x) { return unary(r, b.op, x[0], cd); }, hint, true);
      }
      case OpFamily::Binary: {
        DType cd = compute_dt(ins[0].ty.dt);
        return elementwise(ins, rt, [&](Region& r, const std::vector<std::string>& x) { return binary(r, b.op, x[0], x[1], cd); }, hint, true);
      }
      case OpFamily::Compare: {
        DType cd = compute_dt(ins[0].ty.dt);
        return elementwise(ins, rt, [&](Region& r, const std::vector<std::string>& x) { return compare(r, b.op, x[0], x[1], cd); }, hint, true);
      }
      case OpFamily::Select: {
        DType cd = compute_dt(rt.dt);
        return elementwise(
            ins, rt,
            [&](Region& r, const std::vector<std::string>& x) {
              return r.op("arith.select " + x[0] + ", " + x[1] + ", " + x[2] + " : " + elem_ty(cd), "sel");
            },
            hint, true);
      }
      case OpFamily::Cast: {
        DType from = ins[0].ty.dt;
        if (from == rt.dt) return Val{ins[0].ssa, rt, ins[0].splat};
        return elementwise(ins, rt, [&](Region& r, const std::vector<std::string>& x) { return cast(r, x[0], from, rt.dt); }, hint, true);
      }
      case OpFamily::Const:
      case OpFamily::Fill: {
        Lit l{b.attrs.is_int, b.attrs.int_value, b.attrs.float_value};
        return Val{"", rt, l};
      }
      case OpFamily::Iota: {
        int64_t axis = b.attrs.axis;
        if (axis < 0 || axis >= static_cast<int64_t>(rt.rank())) fail("internal: iota axis");
        DType cd = compute_dt(rt.dt);
        return elementwise(
            {}, rt,
            [&](Region& r, const std::vector<std::string>&) {
              std::string i = r.op("linalg.index " + std::to_string(axis) + " : index", "i");
              if (is_int(cd)) return r.op("arith.index_cast " + i + " : index to " + elem_ty(cd), "iv");
              std::string w = r.op("arith.index_cast " + i + " : index to i64", "iw");
              return r.op("arith.sitofp " + w + " : i64 to " + elem_ty(cd), "iv");
            },
            hint);
      }
      case OpFamily::Matmul: return matmul(ins[0], ins[1], rt, hint);
      case OpFamily::Transpose:
      case OpFamily::Permute: {
        std::vector<int64_t> perm;
        size_t n = ins[0].ty.rank();
        if (b.op == OpKind::Transpose) {
          for (size_t i = 0; i < n; ++i) perm.push_back(static_cast<int64_t>(i));
          std::swap(perm[n - 1], perm[n - 2]);
        } else {
          perm = b.attrs.axes;
        }
        if (ins[0].splat && ins[0].ssa.empty()) return Val{"", rt, ins[0].splat};
        bool ident = true;
        for (size_t i = 0; i < perm.size(); ++i) ident &= perm[i] == static_cast<int64_t>(i);
        if (ident) return Val{ins[0].ssa, rt, std::nullopt};
        std::string e = empty(rt);
        std::string r = fresh(hint);
        line(r + " = linalg.transpose ins(" + ins[0].ssa + " : " + tensor_ty(ins[0].ty) + ") outs(" + e + " : " + tensor_ty(rt) +
             ") permutation = " + int_list(perm));
        return {r, rt, std::nullopt};
      }
      case OpFamily::Reshape: return reshape(ins[0], rt, hint);
      case OpFamily::BroadcastTo: {
        if (ins[0].splat && ins[0].ssa.empty()) return Val{"", rt, ins[0].splat};
        if (ins[0].ty.shape == rt.shape) return Val{ins[0].ssa, rt, std::nullopt};
        return elementwise(ins, rt, [&](Region&, const std::vector<std::string>& x) { return x[0]; }, hint, true);
      }
      case OpFamily::Concat: {
        int64_t axis = b.attrs.axis;
        if (axis < 0) axis += static_cast<int64_t>(rt.rank());
        std::string acc = empty(rt);
        int64_t off = 0;
        for (auto& v : ins) {
          std::string src = materialize(v);
          std::vector<int64_t> offs(rt.rank(), 0), ones(rt.rank(), 1);
          offs[axis] = off;
          std::string n = fresh(hint + "_part");
          line(n + " = tensor.insert_slice " + src + " into " + acc + int_list(offs) + " " + int_list(v.ty.shape) + " " + int_list(ones) + " : " +
               tensor_ty(v.ty) + " into " + tensor_ty(rt));
          acc = n;
          off += v.ty.shape[axis];
        }
        return {acc, rt, std::nullopt};
      }
      case OpFamily::Slice: {
        if (ins[0].splat && ins[0].ssa.empty()) return Val{"", rt, ins[0].splat};
        int64_t axis = b.attrs.axis;
        if (axis < 0) axis += static_cast<int64_t>(rt.rank());
        auto st = b.attrs.start.eval(env);
        if (!st) fail(std::string(types::kBindingOverflows) + ": the `slice` start " + b.attrs.start.str() + " cannot be evaluated at this binding");
        if (*st < 0 || *st + rt.shape[axis] > ins[0].ty.shape[axis]) fail("internal: slice out of range");
        if (ins[0].ty.shape == rt.shape) return Val{ins[0].ssa, rt, std::nullopt};
        std::vector<int64_t> offs(rt.rank(), 0), ones(rt.rank(), 1);
        offs[axis] = *st;
        std::string n = fresh(hint);
        line(n + " = tensor.extract_slice " + ins[0].ssa + int_list(offs) + " " + int_list(rt.shape) + " " + int_list(ones) + " : " +
             tensor_ty(ins[0].ty) + " to " + tensor_ty(rt));
        return {n, rt, std::nullopt};
      }
      case OpFamily::Reduce: return reduce(b.op, b.attrs.axes, ins[0], rt, hint);
      case OpFamily::Softmax: return softmax(b.op, ins[0], b.attrs.axis, rt, hint);
      case OpFamily::RepeatInterleave: {
        auto reps = b.attrs.size.eval(env);
        if (!reps) fail(std::string(types::kBindingOverflows) + ": the `repeat_interleave` count " + b.attrs.size.str() + " cannot be evaluated at this binding");
        if (*reps < 1) fail("internal: repeat_interleave repeats " + b.attrs.size.str() + " do not evaluate to a count >= 1");
        return repeat_interleave(ins[0], b.attrs.axis, *reps, rt, hint);
      }
      case OpFamily::DimValue: {
        // The dimension's value at this binding, converted as `cast` converts
        // an i64 (spec §4.23): int -> float rounds to nearest (bf16 through
        // f32), i64 -> i32 wraps.
        auto v = b.attrs.size.eval(env);
        if (!v) fail(std::string(types::kBindingOverflows) + ": `dim_value` of " + b.attrs.size.str() + " cannot be evaluated at this binding");
        Lit l;
        switch (rt.dt) {
          case DType::F32: case DType::BF16: l.f = static_cast<double>(static_cast<float>(*v)); break;
          case DType::F64: l.f = static_cast<double>(*v); break;
          case DType::I32: l.is_int = true; l.i = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(*v))); break;
          case DType::I64: l.is_int = true; l.i = *v; break;
          case DType::Bool: fail("internal: dim_value of dtype bool");
          case DType::Var: fail("internal: a dtype variable reached the CPU back end");
        }
        return Val{"", rt, l};
      }
      case OpFamily::CopyToHost: return Val{ins[0].ssa, rt, ins[0].splat};
      case OpFamily::CopyToDevice:
        fail("`copy_to_device` to " + types::device_name(b.attrs.device) + ": not a CPU program (the CPU back end compiles host code only)");
      case OpFamily::Call: break;
      case OpFamily::Gather: return indexed_read(ins[0], ins[1], rt, hint, 0, ins[1].ty.rank());
      case OpFamily::TakeAlongAxis: return indexed_read(ins[0], ins[1], rt, hint, static_cast<size_t>(b.attrs.axis), 0);
      case OpFamily::Scan: return cumsum(ins[0], b.attrs.axis, b.attrs.reverse, rt, hint);
      case OpFamily::Squeeze: case OpFamily::Unsqueeze: case OpFamily::Pad: case OpFamily::ArgReduce: case OpFamily::TopK: break;  // expanded by the elaborator
    }
    fail("internal: unhandled operation `" + std::string(syntax::op_name(b.op)) + "`");
  }

  // Collapse/expand helpers. Reassociation of `from` (rank n) into one group.
  std::string collapse(const std::string& src, const Ty& from, const Ty& to, const std::string& groups, const std::string& hint) {
    std::string n = fresh(hint);
    line(n + " = tensor.collapse_shape " + src + " " + groups + " : " + tensor_ty(from) + " into " + tensor_ty(to));
    return n;
  }
  std::string expand(const std::string& src, const Ty& from, const Ty& to, const std::string& groups, const std::string& hint) {
    std::string n = fresh(hint);
    line(n + " = tensor.expand_shape " + src + " " + groups + " output_shape " + int_list(to.shape) + " : " + tensor_ty(from) + " into " +
         tensor_ty(to));
    return n;
  }
  static std::string one_group(size_t n) {
    std::string g = "[[";
    for (size_t i = 0; i < n; ++i) g += (i ? ", " : "") + std::to_string(i);
    return g + "]]";
  }

  Val reshape(Val& x, const Ty& rt, const std::string& hint) {
    if (x.splat && x.ssa.empty()) return Val{"", rt, x.splat};
    if (x.ty.shape == rt.shape) return Val{x.ssa, rt, std::nullopt};
    int64_t n = 1;
    for (int64_t d : x.ty.shape) n *= d;
    Ty flat{x.ty.dt, {n}};
    std::string f = x.ssa;
    if (x.ty.rank() == 0) f = expand(f, x.ty, flat, "[]", hint + "_flat");
    else if (x.ty.rank() > 1) f = collapse(f, x.ty, flat, one_group(x.ty.rank()), hint + "_flat");
    if (rt.rank() == 1) return {f, rt, std::nullopt};
    if (rt.rank() == 0) return {collapse(f, flat, rt, "[]", hint), rt, std::nullopt};
    Val v{expand(f, flat, rt, one_group(rt.rank()), hint), rt, std::nullopt};
    v.flat_ssa = f;
    v.flat_ty = flat;
    v.flat_groups = one_group(rt.rank());
    return v;
  }

  // linalg.(batch_)matmul lhs x rhs into init, with the tiling strategy
  // plan_matmul() picks for its sizes as attributes (pipeline.cpp applies it).
  std::string linalg_matmul(bool batched, const std::string& lhs, const Ty& lt, const std::string& rhs, const Ty& rtb, const std::string& init,
                            const Ty& ct, DType dt, const std::string& hint) {
    const int64_t K = lt.shape[lt.rank() - 1], N = rtb.shape[rtb.rank() - 1];
    MatmulPlan plan = plan_matmul(batched, ct.shape[ct.rank() - 2], N, K, dt, o_);
    std::string attrs = "shapeml.strategy = \"" + plan.text + "\"";
    if (plan.tiled) attrs += ", shapeml.tile_outer = array<i64: " + int_list(plan.outer).substr(1, int_list(plan.outer).size() - 2) +
                             ">, shapeml.tile_inner = array<i64: " + int_list(plan.inner).substr(1, int_list(plan.inner).size() - 2) + ">";
    if (plan.pack_b) attrs += ", shapeml.pack_b";
    line("// matmul strategy: " + plan.text);
    std::string mm = fresh(hint + "_mm");
    line(mm + " = linalg." + std::string(batched ? "batch_matmul" : "matmul") + " {" + attrs + "} ins(" + lhs + ", " + rhs + " : " + tensor_ty(lt) +
         ", " + tensor_ty(rtb) + ") outs(" + init + " : " + tensor_ty(ct) + ") -> " + tensor_ty(ct));
    return mm;
  }

  // An f32 matmul over a long inner dimension (K >= kLongK), in blocks of
  // K: each block's product in f32 (the tuned kernel), the blocks summed in
  // f64, rounded to f32 once. One sequential f32 accumulator over K = 2^20
  // is off by 1.7e-4 relative (OpenBLAS, which also blocks K: 1.2e-6); this
  // keeps the error at the blocks' own (cpu-threads.md "Accurate sums").
  // Each block adds a pass over the [M, N] partials, 20 bytes an element
  // against 2 KC flops: 256-wide blocks where the output is small (the
  // long-K reductions of a gradient), 512-wide where it is large, so that
  // the passes stay a few percent of the product's time.
  static constexpr int64_t kLongK = 4096, kLongKBlock = 256, kLongKBlockLarge = 512, kLargeOutput = 1 << 16;
  std::string long_k_matmul(const std::string& a, const Ty& at, const std::string& b, const Ty& bt, const Ty& ct, const std::string& hint) {
    const int64_t M = at.shape[0], K = at.shape[1], N = bt.shape[1], KC = M * N > kLargeOutput ? kLongKBlockLarge : kLongKBlock;
    const int64_t full = K / KC * KC;
    Ty c64{DType::F64, ct.shape}, c32{DType::F32, ct.shape};
    const std::string ty64 = tensor_ty(c64), ty32 = tensor_ty(c32);
    // acc += f64(p), elementwise over [M, N]
    auto accumulate = [&](const std::string& acc, const std::string& p) {
      std::string r = fresh(hint + "_acc"), pi = fresh("p"), ai = fresh("a"), e = fresh("e"), sum = fresh("s");
      line(r + " = linalg.generic {indexing_maps = [" + identity_map(2) + ", " + identity_map(2) + "], iterator_types = [\"parallel\", \"parallel\"]} ins(" +
           p + " : " + ty32 + ") outs(" + acc + " : " + ty64 + ") {\n    ^bb0(" + pi + ": f32, " + ai + ": f64):\n      " + e + " = arith.extf " + pi +
           " : f32 to f64\n      " + sum + " = arith.addf " + ai + ", " + e + " : f64\n      linalg.yield " + sum + " : f64\n    } -> " + ty64);
      return r;
    };
    auto block = [&](const std::string& acc, const std::string& k0, int64_t kc) {
      Ty abk{DType::F32, {M, kc}}, bbk{DType::F32, {kc, N}};
      std::string as = fresh(hint + "_lhs_blk"), bs = fresh(hint + "_rhs_blk");
      line(as + " = tensor.extract_slice " + a + "[0, " + k0 + "] [" + std::to_string(M) + ", " + std::to_string(kc) + "] [1, 1] : " + tensor_ty(at) +
           " to " + tensor_ty(abk));
      line(bs + " = tensor.extract_slice " + b + "[" + k0 + ", 0] [" + std::to_string(kc) + ", " + std::to_string(N) + "] [1, 1] : " + tensor_ty(bt) +
           " to " + tensor_ty(bbk));
      std::string z = fill("0.0 : f32", c32, hint + "_blk_init");
      return accumulate(acc, linalg_matmul(false, as, abk, bs, bbk, z, c32, DType::F32, hint + "_blk"));
    };
    std::string acc = fill("0.0 : f64", c64, hint + "_acc_init");
    if (full > 0) {
      std::string lo = fresh("c"), hi = fresh("c"), st = fresh("c"), kb = fresh("kb"), it = fresh("acc"), r = fresh(hint + "_blocks");
      line(lo + " = arith.constant 0 : index");
      line(hi + " = arith.constant " + std::to_string(full) + " : index");
      line(st + " = arith.constant " + std::to_string(KC) + " : index");
      line(r + " = scf.for " + kb + " = " + lo + " to " + hi + " step " + st + " iter_args(" + it + " = " + acc + ") -> (" + ty64 + ") {");
      std::string next = block(it, kb, KC);
      line("scf.yield " + next + " : " + ty64);
      line("}");
      acc = r;
    }
    if (K > full) acc = block(acc, std::to_string(full), K - full);
    std::string out = fresh(hint + "_mm"), xi = fresh("x"), oi = fresh("o"), tr = fresh("t");
    line(out + " = linalg.generic {indexing_maps = [" + identity_map(2) + ", " + identity_map(2) + "], iterator_types = [\"parallel\", \"parallel\"]} ins(" +
         acc + " : " + ty64 + ") outs(" + empty(c32) + " : " + ty32 + ") {\n    ^bb0(" + xi + ": f64, " + oi + ": f32):\n      " + tr + " = arith.truncf " +
         xi + " : f64 to f32\n      linalg.yield " + tr + " : f32\n    } -> " + ty32);
    return out;
  }

  Val matmul(Val& a_in, Val& b_in, const Ty& rt, const std::string& hint) {
    Val a = a_in, b = b_in;
    if (rt.dt == DType::BF16) {
      // bf16 operands are widened to f32 once; the product accumulates in f32.
      auto widen = [&](const Val& v, const std::string& h) {
        return elementwise({v}, Ty{DType::F32, v.ty.shape}, [](Region&, const std::vector<std::string>& x) { return x[0]; }, h);
      };
      a = widen(a, hint + "_lhs_f32");
      b = widen(b, hint + "_rhs_f32");
    }
    broadcast_batch(a, b, rt, hint);
    std::string as = materialize(a), bs = materialize(b);
    size_t ra = a.ty.rank(), rb = b.ty.rank();
    int64_t M = a.ty.shape[ra - 2], K = a.ty.shape[ra - 1], N = b.ty.shape[rb - 1];
    DType dt = rt.dt;
    DType acc = dt == DType::BF16 ? DType::F32 : dt;  // bf16 accumulates in f32
    bool batched = rb > 2;
    int64_t batch = 1;
    for (size_t i = 0; i + 2 < ra; ++i) batch *= a.ty.shape[i];
    Ty a2, b2, c2;
    std::string a2s = as, b2s = bs;
    if (!batched) {
      // [..., M, K] x [K, N]: fold the leading dims into M.
      a2 = {a.ty.dt, {batch * M, K}};
      if (ra > 2) {
        std::string g = "[[";
        for (size_t i = 0; i + 1 < ra; ++i) g += (i ? ", " : "") + std::to_string(i);
        g += "], [" + std::to_string(ra - 1) + "]]";
        a2s = collapse(as, a.ty, a2, g, hint + "_lhs");
      }
      b2 = b.ty;
      c2 = {acc, {batch * M, N}};
    } else {
      a2 = {a.ty.dt, {batch, M, K}};
      b2 = {b.ty.dt, {batch, K, N}};
      if (ra > 3) {
        std::string g = "[[";
        for (size_t i = 0; i + 2 < ra; ++i) g += (i ? ", " : "") + std::to_string(i);
        g += "], [" + std::to_string(ra - 2) + "], [" + std::to_string(ra - 1) + "]]";
        a2s = collapse(as, a.ty, a2, g, hint + "_lhs");
        b2s = collapse(bs, b.ty, b2, g, hint + "_rhs");
      }
      c2 = {acc, {batch, M, N}};
    }
    // Unfolding the leading dims again at the end: rt = expand(c2, groups).
    size_t r = rt.rank();
    std::string groups = "[[";
    size_t lead = batched ? r - 2 : r - 1;
    for (size_t i = 0; i < lead; ++i) groups += (i ? ", " : "") + std::to_string(i);
    groups += "]";
    for (size_t i = lead; i < r; ++i) groups += ", [" + std::to_string(i) + "]";
    groups += "]";
    bool unfold = c2.shape != rt.shape;
    std::string z = fill(is_float(acc) ? float_attr(0.0, acc) + " : " + elem_ty(acc) : "0 : " + elem_ty(acc), c2, hint + "_init");
    auto emit_mm = [&](const std::string& lhs, const Ty& lt, const std::string& init, const Ty& ct) {
      return linalg_matmul(batched, lhs, lt, b2s, b2, init, ct, dt, hint);
    };
    // AVX2 with M not a multiple of 6 (e.g. 512): the rows up to a multiple
    // of 48 get the 6 x 2-vector micro-kernel (see plan_matmul), the rest
    // (< 48 rows) a second matmul with the 4-row one; both write slices of
    // one accumulator.
    int64_t Mf = c2.shape[c2.rank() - 2];
    int64_t lanes = std::max<int64_t>(1, o_.vector_bits / ((acc == DType::F64 || acc == DType::I64) ? 64 : 32));
    int64_t split = 0;
    if (!batched && o_.matmul != MatmulStrategy::Naive && o_.matmul_tile_outer.empty() && o_.matmul_tile_inner.empty() &&
        o_.vector_bits < 512 && Mf >= 256 && Mf % 6 != 0 && N % (2 * lanes) == 0)
      split = Mf - Mf % 48;
    std::string mm;
    if (!batched && acc == DType::F32 && K >= kLongK) {
      mm = long_k_matmul(a2s, a2, b2s, b2, c2, hint);
    } else if (!split) {
      mm = emit_mm(a2s, a2, z, c2);
    } else {
      auto part = [&](const std::string& src, const Ty& from, int64_t row, int64_t rows, int64_t cols, const std::string& h) {
        Ty to{from.dt, {rows, cols}};
        std::string v = fresh(h);
        line(v + " = tensor.extract_slice " + src + "[" + std::to_string(row) + ", 0] [" + std::to_string(rows) + ", " + std::to_string(cols) +
             "] [1, 1] : " + tensor_ty(from) + " to " + tensor_ty(to));
        return std::make_pair(v, to);
      };
      auto put = [&](const std::string& src, const Ty& st, const std::string& dst, int64_t row, const std::string& h) {
        std::string v = fresh(h);
        line(v + " = tensor.insert_slice " + src + " into " + dst + "[" + std::to_string(row) + ", 0] [" + std::to_string(st.shape[0]) + ", " +
             std::to_string(st.shape[1]) + "] [1, 1] : " + tensor_ty(st) + " into " + tensor_ty(c2));
        return v;
      };
      auto [a_top, at] = part(a2s, a2, 0, split, K, hint + "_lhs_top");
      auto [c_top, ct] = part(z, c2, 0, split, N, hint + "_acc_top");
      std::string t = put(emit_mm(a_top, at, c_top, ct), ct, z, 0, hint + "_top");
      auto [a_bot, ab] = part(a2s, a2, split, Mf - split, K, hint + "_lhs_rest");
      auto [c_bot, cb] = part(t, c2, split, Mf - split, N, hint + "_acc_rest");
      mm = put(emit_mm(a_bot, ab, c_bot, cb), cb, t, split, hint + "_all");
    }
    Val res{mm, c2, std::nullopt};
    if (dt == DType::BF16) res = elementwise({res}, Ty{DType::BF16, c2.shape}, [](Region&, const std::vector<std::string>& x) { return x[0]; },
                                             hint + "_bf16");
    if (unfold) {
      Val v{expand(res.ssa, res.ty, rt, groups, hint), rt, std::nullopt};
      v.flat_ssa = res.ssa;
      v.flat_ty = res.ty;
      v.flat_groups = groups;
      res = v;
    }
    return res;
  }

  // §4.10 batch broadcasting, brought back to the two tuned paths: a right
  // operand whose batch dimensions are all 1 (and no more of them than the
  // left has) is the shared weight [K, N] (collapsed, no copy); otherwise
  // each operand whose batch dimensions differ from the result's is
  // broadcast to them (a copy, O(batch·M·K), small next to the product's
  // O(batch·M·N·K)) and the equal-batch batch_matmul runs.
  void broadcast_batch(Val& a, Val& b, const Ty& rt, const std::string& hint) {
    size_t ra = a.ty.rank(), rb = b.ty.rank(), r = rt.rank();
    if (rb == 2) return;  // shared weight already
    std::vector<int64_t> batch(rt.shape.begin(), rt.shape.end() - 2);
    std::vector<int64_t> ba(a.ty.shape.begin(), a.ty.shape.end() - 2), bb(b.ty.shape.begin(), b.ty.shape.end() - 2);
    if (ba == batch && bb == batch) return;  // equal batches
    bool b_ones = std::all_of(bb.begin(), bb.end(), [](int64_t d) { return d == 1; });
    if (b_ones && rb <= ra) {
      Ty w{b.ty.dt, {b.ty.shape[rb - 2], b.ty.shape[rb - 1]}};
      std::string g = "[[";
      for (size_t i = 0; i + 1 < rb; ++i) g += (i ? ", " : "") + std::to_string(i);
      g += "], [" + std::to_string(rb - 1) + "]]";
      b = Val{collapse(materialize(b), b.ty, w, g, hint + "_rhs_2d"), w, std::nullopt};
      return;
    }
    auto widen = [&](Val& v, const std::string& h) {
      std::vector<int64_t> full = batch;
      full.push_back(v.ty.shape[v.ty.rank() - 2]);
      full.push_back(v.ty.shape[v.ty.rank() - 1]);
      if (v.ty.shape == full) return;
      materialize(v);
      v = elementwise({v}, Ty{v.ty.dt, full}, [](Region&, const std::vector<std::string>& x) { return x[0]; }, h);
    };
    (void)r;
    widen(a, hint + "_lhs_bcast");
    widen(b, hint + "_rhs_bcast");
  }

  // ---- indexing (§4.24-4.25) and their run-time checks -------------------------
  // docs/design/index-checks.md. The index read at run time is clamped to
  // [0, bound) before it addresses anything, so no read leaves the tensor;
  // a separate reduction over the indices finds the first (row-major)
  // position holding an index outside [0, bound) (negative indices are not
  // wrapped), and error_record() turns the sites' findings into the record.
  struct IndexCheck {
    int64_t site = 0;
    std::string has, value, bound;       // i1, i64, i64 scalars
    std::vector<std::string> coords;     // i64 scalars
  };

  std::string clamped_index(Region& r, const std::string& iv, DType idt, int64_t bound) {
    std::string v = idt == DType::I32 ? r.op("arith.extsi " + iv + " : i32 to i64", "iv") : iv;
    std::string lo = r.op("arith.maxsi " + v + ", " + r.cst("0 : i64") + " : i64", "ix");
    std::string hi = r.op("arith.minsi " + lo + ", " + r.cst(std::to_string(bound - 1) + " : i64") + " : i64", "ix");
    return r.op("arith.index_cast " + hi + " : i64 to index", "ix");
  }

  void index_check(const Val& idx, int64_t bound) {
    const Ty& it = idx.ty;
    size_t m = it.rank();
    const std::string max = std::to_string(std::numeric_limits<int64_t>::max());
    std::string init = fill(max + " : i64", Ty{DType::I64, {}}, "chk_init");
    Region r{*this, ""};
    std::string a = fresh("in"), o = fresh("acc");
    std::string v = it.dt == DType::I32 ? r.op("arith.extsi " + a + " : i32 to i64", "iv") : a;
    // Unsigned: a negative index compares as huge, so one test covers both ends.
    std::string bad = r.op("arith.cmpi uge, " + v + ", " + r.cst(std::to_string(bound) + " : i64") + " : i64", "bad");
    std::string flat = r.cst("0 : i64");
    for (size_t d = 0; d < m; ++d) {
      std::string i = r.op("linalg.index " + std::to_string(d) + " : index", "i");
      std::string i64 = r.op("arith.index_cast " + i + " : index to i64", "i");
      std::string sc = r.op("arith.muli " + flat + ", " + r.cst(std::to_string(it.shape[d]) + " : i64") + " : i64", "f");
      flat = r.op("arith.addi " + sc + ", " + i64 + " : i64", "f");
    }
    std::string cand = r.op("arith.select " + bad + ", " + flat + ", " + r.cst(max + " : i64") + " : i64", "cand");
    std::string res = r.op("arith.minsi " + o + ", " + cand + " : i64", "first");
    std::string dims;
    for (size_t i = 0; i < m; ++i) dims += (i ? ", d" : "d") + std::to_string(i);
    std::set<size_t> all;
    for (size_t i = 0; i < m; ++i) all.insert(i);
    std::string g = fresh("chk");
    line(g + " = linalg.generic {indexing_maps = [" + identity_map(m) + ", affine_map<(" + dims + ") -> ()>], iterator_types = " +
         iterators(m, all) + "} ins(" + idx.ssa + " : " + tensor_ty(it) + ") outs(" + init + " : tensor<i64>) {\n    ^bb0(" + a + ": " +
         storage_ty(it.dt) + ", " + o + ": i64):\n" + r.text + "      linalg.yield " + res + " : i64\n    } -> tensor<i64>");
    IndexCheck c;
    c.site = static_cast<int64_t>(checks_.size()) + 1;
    std::string first = fresh("chk_first");
    line(first + " = tensor.extract " + g + "[] : tensor<i64>");
    std::string mx = fresh("c");
    line(mx + " = arith.constant " + max + " : i64");
    c.has = fresh("chk_has");
    line(c.has + " = arith.cmpi ne, " + first + ", " + mx + " : i64");
    std::string zero = fresh("c");
    line(zero + " = arith.constant 0 : i64");
    std::string pos = fresh("chk_pos");
    line(pos + " = arith.select " + c.has + ", " + first + ", " + zero + " : i64");
    // Row-major coordinates of the position, innermost last.
    c.coords.assign(m, "");
    std::string rest = pos;
    std::vector<std::string> index_coords(m);
    for (size_t d = m; d-- > 0;) {
      std::string dn = fresh("c");
      line(dn + " = arith.constant " + std::to_string(it.shape[d]) + " : i64");
      c.coords[d] = fresh("chk_c");
      line(c.coords[d] + " = arith.remsi " + rest + ", " + dn + " : i64");
      std::string q = fresh("chk_q");
      line(q + " = arith.divsi " + rest + ", " + dn + " : i64");
      rest = q;
      index_coords[d] = fresh("chk_i");
      line(index_coords[d] + " = arith.index_cast " + c.coords[d] + " : i64 to index");
    }
    std::string at;
    for (size_t d = 0; d < m; ++d) at += (d ? ", " : "") + index_coords[d];
    std::string raw = fresh("chk_raw");
    line(raw + " = tensor.extract " + idx.ssa + "[" + at + "] : " + tensor_ty(it));
    if (it.dt == DType::I32) {
      c.value = fresh("chk_value");
      line(c.value + " = arith.extsi " + raw + " : i32 to i64");
    } else {
      c.value = raw;
    }
    c.bound = fresh("c");
    line(c.bound + " = arith.constant " + std::to_string(bound) + " : i64");
    checks_.push_back(std::move(c));
  }

  // {site, index, bound, coordinates..., 0...} of the first site (in program
  // order) that found a bad index; all zero when none did.
  std::string error_record(const Ty& record_ty) {
    size_t n = static_cast<size_t>(record_ty.shape[0]);
    std::string zero = fresh("c");
    line(zero + " = arith.constant 0 : i64");
    std::vector<std::string> cur(n, zero);
    for (size_t k = checks_.size(); k-- > 0;) {
      const IndexCheck& c = checks_[k];
      std::string id = fresh("c");
      line(id + " = arith.constant " + std::to_string(c.site) + " : i64");
      std::vector<std::string> mine = {id, c.value, c.bound};
      for (const auto& x : c.coords) mine.push_back(x);
      for (size_t j = 0; j < n; ++j) {
        std::string v = j < mine.size() ? mine[j] : zero;
        std::string s = fresh("rec");
        line(s + " = arith.select " + c.has + ", " + v + ", " + cur[j] + " : i64");
        cur[j] = s;
      }
    }
    std::string rec = fresh("error_rec");
    std::string elems;
    for (size_t j = 0; j < n; ++j) elems += (j ? ", " : "") + cur[j];
    line(rec + " = tensor.from_elements " + elems + " : " + tensor_ty(record_ty));
    return rec;
  }

  // Both index operations read out[p] = data[c], one generic over the
  // result: c is the result's loop indices from `skip` on, with the clamped
  // idx[p[0 .. rank(idx))] inserted at position `axis` of c.
  //   gather:          axis 0, skip = rank(idx)  (table[idx[i...], j...])
  //   take_along_axis: axis a, skip = 0          (x[i... with idx[i...] at a])
  Val indexed_read(Val& data, Val& idx, const Ty& rt, const std::string& hint, size_t axis, size_t skip) {
    std::string ds = materialize(data), is = materialize(idx);
    if (axis >= data.ty.rank()) fail("internal: index operation axis");
    int64_t bound = data.ty.shape[axis];
    size_t m = idx.ty.rank(), n = rt.rank();
    Region r{*this, ""};
    std::string a = fresh("in"), o = fresh("out");
    std::vector<std::string> at;
    for (size_t d = skip; d < n; ++d) at.push_back(r.op("linalg.index " + std::to_string(d) + " : index", "j"));
    at.insert(at.begin() + static_cast<std::ptrdiff_t>(axis), clamped_index(r, a, idx.ty.dt, bound));
    std::string list;
    for (size_t i = 0; i < at.size(); ++i) list += (i ? ", " : "") + at[i];
    std::string v = r.op("tensor.extract " + ds + "[" + list + "] : " + tensor_ty(data.ty), "g");
    std::string dims, idx_res;
    for (size_t i = 0; i < n; ++i) dims += (i ? ", d" : "d") + std::to_string(i);
    for (size_t i = 0; i < m; ++i) idx_res += (i ? ", d" : "d") + std::to_string(i);
    std::string e = empty(rt);
    std::string g = fresh(hint);
    line(g + " = linalg.generic {indexing_maps = [affine_map<(" + dims + ") -> (" + idx_res + ")>, " + identity_map(n) +
         "], iterator_types = " + iterators(n) + "} ins(" + is + " : " + tensor_ty(idx.ty) + ") outs(" + e + " : " + tensor_ty(rt) +
         ") {\n    ^bb0(" + a + ": " + storage_ty(idx.ty.dt) + ", " + o + ": " + storage_ty(rt.dt) + "):\n" + r.text + "      linalg.yield " + v +
         " : " + storage_ty(rt.dt) + "\n    } -> " + tensor_ty(rt));
    index_check(idx, bound);
    return {g, rt, std::nullopt};
  }

  // reduce_{sum,max,min,mean} of x over `axes_attr`; rt is the result type
  // (its shape says whether the reduced axes are kept as 1). `wide_acc`
  // (f64 for an f32 x) accumulates in a wider type; rt.dt is then that type.
  Val reduce(OpKind op, const std::vector<int64_t>& axes_attr, Val& x, const Ty& rt, const std::string& hint,
             std::optional<DType> wide_acc = std::nullopt) {
    std::string xs = materialize(x);
    size_t n = x.ty.rank();
    std::set<size_t> axes;
    for (int64_t a : axes_attr) axes.insert(static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(n) : a));
    DType dt = x.ty.dt;
    // bf16 accumulates in f32; f32 sums and means in f64: a sequential f32
    // sum of n terms is off by up to n/2 ulp (over 2^20 values 1.5e-5
    // relative, PyTorch's blocked sum 5.7e-8), in f64 the only error left is
    // the final rounding to f32, and the result does not depend on how a
    // loop is split (cpu-threads.md).
    const bool sum_like = op == OpKind::ReduceSum || op == OpKind::ReduceMean;
    DType acc = wide_acc.value_or(sum_like && dt == DType::F32 ? DType::F64 : compute_dt(dt));
    std::vector<int64_t> kept;
    std::string outmap_res;
    std::string dims;
    for (size_t i = 0; i < n; ++i) {
      dims += (i ? ", d" : "d") + std::to_string(i);
      if (!axes.count(i)) {
        kept.push_back(x.ty.shape[i]);
        outmap_res += (outmap_res.empty() ? "d" : ", d") + std::to_string(i);
      }
    }
    Ty red{acc, kept};
    // max and min start from the identity of the dtype (-inf/+inf, or the
    // integral extremes) and propagate NaN (arith.maximumf/minimumf).
    bool is_max = op == OpKind::ReduceMax, is_min = op == OpKind::ReduceMin;
    std::string init;
    if (is_max || is_min) {
      double inf = std::numeric_limits<double>::infinity();
      if (is_float(acc)) init = float_attr(is_max ? -inf : inf, acc) + " : " + elem_ty(acc);
      else if (is_max) init = std::to_string(int_bits(acc) == 32 ? int64_t{INT32_MIN} : INT64_MIN) + " : " + elem_ty(acc);
      else init = std::to_string(int_bits(acc) == 32 ? int64_t{INT32_MAX} : INT64_MAX) + " : " + elem_ty(acc);
    } else {
      init = is_float(acc) ? float_attr(0.0, acc) + " : " + elem_ty(acc) : "0 : " + elem_ty(acc);
    }
    std::string z = fill(init, red, hint + "_init");
    Region r{*this, ""};
    std::string a = fresh("in"), o = fresh("acc");
    std::string v = load_compute(r, a, dt);
    if (compute_dt(dt) != acc) v = r.op("arith.extf " + v + " : " + elem_ty(compute_dt(dt)) + " to " + elem_ty(acc), "w");
    std::string t = elem_ty(acc);
    std::string res;
    // Float accumulations may be reassociated: LLVM then keeps one partial
    // result per vector lane (and per unrolled copy) instead of one serial
    // chain of dependent adds (4-cycle latency each) or scalar max/min;
    // max/min are exact either way, and a sum's partial sums are in the same
    // (f64 for f32) accumulator, so its error stays the final rounding's.
    // The order is fixed by the code, not by the thread count (cpu-threads.md).
    const std::string reassoc = is_float(acc) ? " fastmath<reassoc>" : "";
    if (is_max) res = r.op(std::string(is_float(acc) ? "arith.maximumf " : "arith.maxsi ") + o + ", " + v + reassoc + " : " + t, "m");
    else if (is_min) res = r.op(std::string(is_float(acc) ? "arith.minimumf " : "arith.minsi ") + o + ", " + v + reassoc + " : " + t, "m");
    else res = r.op(std::string(is_float(acc) ? "arith.addf " : "arith.addi ") + o + ", " + v + reassoc + " : " + t, "s");
    std::string nm = fresh(hint + "_red");
    line(nm + " = linalg.generic {indexing_maps = [" + identity_map(n) + ", affine_map<(" + dims + ") -> (" + outmap_res +
         ")>], iterator_types = " + iterators(n, axes) + "} ins(" + xs + " : " + tensor_ty(x.ty) + ") outs(" + z + " : " + tensor_ty(red) +
         ") {\n    ^bb0(" + a + ": " + storage_ty(dt) + ", " + o + ": " + t + "):\n" + r.text + "      linalg.yield " + res + " : " + t +
         "\n    } -> " + tensor_ty(red));
    Val cur{nm, red, std::nullopt};
    Ty fin{rt.dt, kept};
    // The result rounded once, from the accumulator's type to the result's.
    const bool narrow = is_float(acc) && rt.dt != DType::BF16 && acc != compute_dt(rt.dt);
    auto rounded = [&, narrow](Region& rr, const std::string& v) {
      return narrow ? rr.op("arith.truncf " + v + " : " + t + " to " + elem_ty(compute_dt(rt.dt)), "r") : v;
    };
    if (op == OpKind::ReduceMean) {
      int64_t count = 1;
      for (size_t i : axes) count *= x.ty.shape[i];
      double c = static_cast<double>(count);
      cur = elementwise({cur}, fin, [&](Region& rr, const std::vector<std::string>& in) {
        return rounded(rr, rr.op("arith.divf " + in[0] + ", " + fconst(rr, c, acc) + " : " + t, "mean"));
      }, hint + "_mean");
    } else if (narrow) {
      cur = elementwise({cur}, fin, [&](Region& rr, const std::vector<std::string>& in) { return rounded(rr, in[0]); }, hint + "_round");
    } else if (rt.dt == DType::BF16) {
      cur = elementwise({cur}, fin, [](Region&, const std::vector<std::string>& in) { return in[0]; }, hint + "_bf16");
    }
    if (cur.ty.shape == rt.shape) return {cur.ssa, rt, std::nullopt};
    // keepdims: expand the reduced tensor, grouping every inserted 1 with a
    // neighbouring kept dimension.
    if (kept.empty()) return {expand(cur.ssa, cur.ty, rt, "[]", hint), rt, std::nullopt};
    std::vector<std::vector<int64_t>> groups;
    std::vector<int64_t> leading;
    for (size_t i = 0; i < n; ++i) {
      if (!axes.count(i)) {
        groups.push_back(groups.empty() ? leading : std::vector<int64_t>{});
        groups.back().push_back(static_cast<int64_t>(i));
      } else if (groups.empty()) {
        leading.push_back(static_cast<int64_t>(i));
      } else {
        groups.back().push_back(static_cast<int64_t>(i));
      }
    }
    std::string g = "[";
    for (size_t i = 0; i < groups.size(); ++i) g += (i ? ", " : "") + int_list(groups[i]);
    g += "]";
    Val kd{expand(cur.ssa, cur.ty, rt, g, hint), rt, std::nullopt};
    kd.flat_ssa = cur.ssa;
    kd.flat_ty = cur.ty;
    kd.flat_groups = g;
    return kd;
  }

  // softmax / log_softmax along `axis`, numerically stable (spec §4.21):
  // m = max(x), e = exp(x - m), s = sum(e); softmax = e / s and log_softmax =
  // (x - m) - log(s). x - m <= 0, so exp never overflows, and the largest
  // term is exp(0) = 1, so s >= 1 and log(s) is well conditioned. f32 sums
  // in f64: a sequential f32 sum of n terms is off by up to n/2 ulp (6e-6
  // relative over a 4099-wide row, 100x PyTorch's), and every output carries
  // that error. log(s) and the rounding of s happen once per row. Built from
  // reduce() and elementwise(); bf16 computes in f32 and rounds once at the
  // end. A row of -inf gives m = -inf and x - m = NaN: NaN, as PyTorch.
  Val softmax(OpKind op, Val& x, int64_t axis, const Ty& rt, const std::string& hint) {
    DType cd = compute_dt(x.ty.dt);
    DType sd = x.ty.dt == DType::F32 ? DType::F64 : cd;  // the sum's type
    std::string t = elem_ty(cd);
    std::vector<int64_t> one_axis{axis};
    Ty kept{x.ty.dt, x.ty.shape};
    kept.shape[static_cast<size_t>(axis)] = 1;
    Val m = reduce(OpKind::ReduceMax, one_axis, x, kept, hint + "_max");  // exact, so bf16 loses nothing
    Val e = elementwise({x, m}, Ty{cd, x.ty.shape}, [&](Region& r, const std::vector<std::string>& v) {
      return exp_op(r, r.op("arith.subf " + v[0] + ", " + v[1] + " : " + t), cd);
    }, hint + "_exp");
    Val s = reduce(OpKind::ReduceSum, one_axis, e, Ty{sd, kept.shape}, hint + "_sum", sd);
    bool log = op == OpKind::LogSoftmax;
    Val n = elementwise({s}, Ty{cd, kept.shape}, [&](Region& r, const std::vector<std::string>& v) {
      std::string y = log ? log_op(r, v[0], sd) : v[0];
      return sd == cd ? y : r.op("arith.truncf " + y + " : " + elem_ty(sd) + " to " + t);
    }, hint + (log ? "_logsum" : "_norm"));
    if (!log)
      return elementwise({e, n}, rt, [&](Region& r, const std::vector<std::string>& v) {
        return r.op("arith.divf " + v[0] + ", " + v[1] + " : " + t);
      }, hint);
    return elementwise({x, m, n}, rt, [&](Region& r, const std::vector<std::string>& v) {
      std::string d = r.op("arith.subf " + v[0] + ", " + v[1] + " : " + t);
      return r.op("arith.subf " + d + ", " + v[2] + " : " + t);
    }, hint);
  }

  // cumsum along `axis` (spec §4.27): one step per position k of the axis
  // (from the end when reversed) adds the slice of x at k (the axis kept as
  // 1) to a running sum and stores the sum, rounded to the result's dtype,
  // at k. f32 sums in f64 (so the result is the correctly rounded prefix
  // sum in practice; PyTorch's CPU cumsum also accumulates in double), bf16
  // in f32, integers wrap.
  Val cumsum(Val& x, int64_t axis, bool reverse, const Ty& rt, const std::string& hint) {
    std::string xs = materialize(x);
    const size_t a = static_cast<size_t>(axis);
    const int64_t d = x.ty.shape[a];
    const DType acc = x.ty.dt == DType::F32 ? DType::F64 : compute_dt(x.ty.dt);
    if (a + 1 == rt.rank() && d >= kScanRowMin) return cumsum_rows(xs, x.ty, reverse, rt, acc, hint);
    Ty step_x{x.ty.dt, x.ty.shape}, step_acc{acc, x.ty.shape};
    step_x.shape[a] = step_acc.shape[a] = 1;
    std::string sizes = int_list(step_x.shape), ones = int_list(std::vector<int64_t>(rt.rank(), 1));
    std::string init = is_float(acc) ? float_attr(0.0, acc) + " : " + elem_ty(acc) : "0 : " + elem_ty(acc);
    std::string acc0 = fill(init, step_acc, hint + "_sum_init"), out0 = empty(rt);
    std::string lo = fresh("c"), hi = fresh("c"), st = fresh("c"), last = fresh("c"), k = fresh("k"), ia = fresh("sum"), io = fresh("out");
    std::string res = fresh(hint + "_scan");
    line(lo + " = arith.constant 0 : index");
    line(hi + " = arith.constant " + std::to_string(d) + " : index");
    line(st + " = arith.constant 1 : index");
    line(last + " = arith.constant " + std::to_string(d - 1) + " : index");
    line(res + ":2 = scf.for " + k + " = " + lo + " to " + hi + " step " + st + " iter_args(" + ia + " = " + acc0 + ", " + io + " = " + out0 +
         ") -> (" + tensor_ty(step_acc) + ", " + tensor_ty(rt) + ") {");
    std::string at = k;
    if (reverse) {
      at = fresh("kr");
      line(at + " = arith.subi " + last + ", " + k + " : index");
    }
    std::string offs = "[";
    for (size_t i = 0; i < rt.rank(); ++i) offs += std::string(i ? ", " : "") + (i == a ? at : "0");
    offs += "]";
    std::string cur = fresh(hint + "_at");
    line(cur + " = tensor.extract_slice " + xs + offs + " " + sizes + " " + ones + " : " + tensor_ty(x.ty) + " to " + tensor_ty(step_x));
    // The running sum is updated in place (outs = the loop's own sum):
    // one-shot bufferization needs the yielded value to be the iter_arg's buffer.
    const std::string t = elem_ty(acc);
    Region r{*this, ""};
    std::string in = fresh("in"), o = fresh("acc");
    std::string v = load_compute(r, in, x.ty.dt);
    if (compute_dt(x.ty.dt) != acc) v = r.op("arith.extf " + v + " : " + elem_ty(compute_dt(x.ty.dt)) + " to " + t, "w");
    std::string added = r.op(std::string(is_float(acc) ? "arith.addf " : "arith.addi ") + o + ", " + v + " : " + t, "s");
    Val sum{fresh(hint + "_sum"), step_acc, std::nullopt};
    line(sum.ssa + " = linalg.generic {indexing_maps = [" + identity_map(rt.rank()) + ", " + identity_map(rt.rank()) + "], iterator_types = " +
         iterators(rt.rank()) + "} ins(" + cur + " : " + tensor_ty(step_x) + ") outs(" + ia + " : " + tensor_ty(step_acc) + ") {\n    ^bb0(" + in + ": " +
         storage_ty(x.ty.dt) + ", " + o + ": " + t + "):\n" + r.text + "      linalg.yield " + added + " : " + t + "\n    } -> " + tensor_ty(step_acc));
    Ty step_out{rt.dt, step_x.shape};
    Val rounded = elementwise({sum}, step_out, [&](Region& r, const std::vector<std::string>& v) {
      return compute_dt(rt.dt) == acc ? v[0] : r.op("arith.truncf " + v[0] + " : " + t + " to " + elem_ty(compute_dt(rt.dt)), "r");
    }, hint + "_round");
    std::string put = fresh(hint + "_put");
    line(put + " = tensor.insert_slice " + rounded.ssa + " into " + io + offs + " " + sizes + " " + ones + " : " + tensor_ty(step_out) + " into " +
         tensor_ty(rt));
    line("scf.yield " + sum.ssa + ", " + put + " : " + tensor_ty(step_acc) + ", " + tensor_ty(rt));
    line("}");
    return {res + "#1", rt, std::nullopt};
  }

  // cumsum along the innermost axis of length >= kScanRowMin: x viewed as
  // [rows, d]; per row a scalar loop along the contiguous axis with the
  // running sum in a register. The slice loop above would step d times over
  // strided slices of `rows` elements (a [64, 4096] f32 scan: 2.7 ms against
  // this form's fraction of it; docs/design/derived-ops.md).
  static constexpr int64_t kScanRowMin = 64;
  Val cumsum_rows(const std::string& xs, const Ty& xt, bool reverse, const Ty& rt, DType acc, const std::string& hint) {
    const int64_t d = xt.shape.back();
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < xt.rank(); ++i) rows *= xt.shape[i];
    Ty x2{xt.dt, {rows, d}}, o2{rt.dt, {rows, d}};
    std::string lead;
    for (size_t i = 0; i + 1 < xt.rank(); ++i) lead += (i ? ", " : "") + std::to_string(i);
    std::string groups = "[[" + lead + "], [" + std::to_string(xt.rank() - 1) + "]]";
    std::string src = xs;
    if (xt.rank() == 1) src = expand(xs, xt, x2, "[[0, 1]]", hint + "_rows");
    else if (xt.rank() > 2) src = collapse(xs, xt, x2, groups, hint + "_rows");
    const std::string t = elem_ty(acc);
    std::string zero = fresh("c"), one = fresh("c"), nrows = fresh("c"), nd = fresh("c"), last = fresh("c"), z = fresh("z");
    line(zero + " = arith.constant 0 : index");
    line(one + " = arith.constant 1 : index");
    line(nrows + " = arith.constant " + std::to_string(rows) + " : index");
    line(nd + " = arith.constant " + std::to_string(d) + " : index");
    line(last + " = arith.constant " + std::to_string(d - 1) + " : index");
    line(z + " = arith.constant " + (is_float(acc) ? float_attr(0.0, acc) : "0") + " : " + t);
    std::string out = fresh(hint + "_scan"), r = fresh("r"), o = fresh("o"), k = fresh("k"), s = fresh("sum"), o_in = fresh("o");
    std::string inner = fresh(hint + "_row");
    line(out + " = scf.for " + r + " = " + zero + " to " + nrows + " step " + one + " iter_args(" + o + " = " + empty(o2) + ") -> (" +
         tensor_ty(o2) + ") {");
    line(inner + ":2 = scf.for " + k + " = " + zero + " to " + nd + " step " + one + " iter_args(" + s + " = " + z + ", " + o_in + " = " + o +
         ") -> (" + t + ", " + tensor_ty(o2) + ") {");
    Region g{*this, ""};
    std::string at = reverse ? g.op("arith.subi " + last + ", " + k + " : index", "kr") : k;
    std::string v = g.op("tensor.extract " + src + "[" + r + ", " + at + "] : " + tensor_ty(x2), "v");
    v = load_compute(g, v, xt.dt);
    if (compute_dt(xt.dt) != acc) v = g.op("arith.extf " + v + " : " + elem_ty(compute_dt(xt.dt)) + " to " + t, "w");
    std::string sum = g.op(std::string(is_float(acc) ? "arith.addf " : "arith.addi ") + s + ", " + v + " : " + t, "s");
    std::string y = compute_dt(rt.dt) == acc ? sum : g.op("arith.truncf " + sum + " : " + t + " to " + elem_ty(compute_dt(rt.dt)), "y");
    y = store_compute(g, y, rt.dt);
    std::string put = g.op("tensor.insert " + y + " into " + o_in + "[" + r + ", " + at + "] : " + tensor_ty(o2), "put");
    body_ += g.text;
    line("scf.yield " + sum + ", " + put + " : " + t + ", " + tensor_ty(o2));
    line("}");
    line("scf.yield " + inner + "#1 : " + tensor_ty(o2));
    line("}");
    if (rt.rank() == 2) return {out, rt, std::nullopt};
    if (rt.rank() == 1) return {collapse(out, o2, rt, "[[0, 1]]", hint), rt, std::nullopt};
    return {expand(out, o2, rt, groups, hint), rt, std::nullopt};
  }

  // repeat_interleave (spec §4.22): out[.., i, ..] = x[.., i / r, ..]. x is
  // viewed as [.., d, 1, ..], broadcast to [.., d, r, ..] by an elementwise
  // copy (the broadcasting map reads index 0 of the 1), and collapsed to
  // [.., d*r, ..].
  Val repeat_interleave(Val& x, int64_t axis, int64_t reps, const Ty& rt, const std::string& hint) {
    if (x.splat && x.ssa.empty()) return Val{"", rt, x.splat};
    if (reps == 1) return Val{x.ssa, rt, std::nullopt};
    size_t a = static_cast<size_t>(axis);
    std::string groups = "[";
    for (size_t i = 0; i < x.ty.rank(); ++i) {
      groups += i ? ", " : "";
      groups += i == a ? int_list({static_cast<int64_t>(i), static_cast<int64_t>(i + 1)})
                       : int_list({static_cast<int64_t>(i < a ? i : i + 1)});
    }
    groups += "]";
    Ty split{x.ty.dt, x.ty.shape};
    split.shape.insert(split.shape.begin() + static_cast<std::ptrdiff_t>(a) + 1, 1);
    Ty wide = split;
    wide.shape[a + 1] = reps;
    Val v{expand(x.ssa, x.ty, split, groups, hint + "_split"), split, std::nullopt};
    Val w = elementwise({v}, wide, [](Region&, const std::vector<std::string>& in) { return in[0]; }, hint + "_rep");
    return {collapse(w.ssa, wide, rt, groups, hint), rt, std::nullopt};
  }

  const ir::Module& m_;
  const EmitOptions& o_;
  std::set<std::string> used_;
  std::map<std::string, int> next_suffix_;
  size_t cost_ = 0;  // charge(): the code-size budget used so far  // fresh(): the next suffix to try per base name
  std::string body_;
  std::vector<std::pair<size_t, std::string>> pending_bool_inputs_;
  std::vector<bool> dying_;  // per operand of the op being emitted
  std::vector<IndexCheck> checks_;  // the index checks emitted so far, in site order
};

}  // namespace

int64_t ConcreteTensor::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t ConcreteTensor::byte_size() const {
  int64_t w = 4;
  switch (dtype) {
    case DType::F32: case DType::I32: w = 4; break;
    case DType::F64: case DType::I64: w = 8; break;
    case DType::BF16: w = 2; break;
    case DType::Bool: w = 1; break;
    case DType::Var: break;
  }
  return num_elements() * w;
}

std::vector<std::string> undetermined_dims(const ir::Function& f) {
  std::vector<types::Shape> shapes;
  for (ir::ValueId p : f.params) shapes.push_back(f.values[p].type.shape);
  return types::plan_shape_inference(f.dims, shapes, f.where, std::set<std::string>(f.given.begin(), f.given.end())).undetermined;
}

std::string default_func_name(const std::string& entry) { return "shapeml_" + sanitize(entry); }

bool specialize_signature(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings,
                          ConcreteSignature& out, std::string& error) {
  EmitOptions o;
  o.matmul = MatmulStrategy::Naive;
  std::string text = emit_mlir(m, entry, bindings, o, &error);
  if (text.empty()) return false;
  const ir::Function* f = m.find(entry);
  out = {};
  auto conv = [&](const types::TensorType& t) {
    ConcreteTensor c;
    c.dtype = t.dtype;
    for (const auto& d : t.shape) c.shape.push_back(*d.eval(bindings));
    return c;
  };
  for (ir::ValueId p : f->params) out.params.push_back(conv(f->values[p].type));
  for (const auto& t : f->result_types) out.results.push_back(conv(t));
  std::vector<IndexSite> sites = index_sites(m, entry);
  for (const IndexSite& s : sites) out.error_record = std::max(out.error_record, 3 + s.rank);
  return true;
}

std::string emit_mlir(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings, const EmitOptions& opts,
                      std::string* error) {
  try {
    // A generic entry (spec §3.5): the module at its dtype/device values.
    std::map<std::string, int64_t> shape_bindings = bindings;
    std::optional<ir::Module> storage;
    std::string serr;
    const ir::Module* mm = transform::specialize_for_binding(m, entry, shape_bindings, storage, serr);
    if (!mm) {
      if (error) *error = serr;
      return "";
    }
    Emitter e(*mm, opts);
    return e.run(entry, shape_bindings);
  } catch (const EmitError& ex) {
    if (error) *error = ex.what();
  } catch (const types::DimOverflow& ex) {
    if (error) *error = ex.what();
  } catch (const std::exception& ex) {
    if (error) *error = std::string("internal error while emitting MLIR: ") + ex.what();
  }
  return "";
}

}  // namespace shapeml::lower::cpu
