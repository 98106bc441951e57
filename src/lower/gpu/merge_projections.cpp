#include "lower/gpu/merge_projections.h"

#include <algorithm>
#include <vector>

#include "lower/gpu/plan_uses.h"

namespace shapeml::lower::gpu {

using abi::GpuLaunch;
using abi::GpuPlan;
using abi::GpuSlot;

namespace {

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

// One group: the grouped permute at `pi`. True when rewritten.
bool merge_at(GpuPlan& p, size_t pi) {
  const GpuLaunch perm = p.launches[pi];
  const size_t k = perm.inputs.size();
  if (perm.kernel != "transpose" || k < 2 || k > 4 || perm.outputs.size() != k) return false;
  PlanUses u(p);
  std::vector<int32_t> results, weights;
  std::vector<size_t> gemms;
  for (size_t i = 0; i < k; ++i) {
    const GpuSlot& v = p.slots[perm.inputs[i]];
    if (v.kind != GpuSlot::Kind::View || v.offset != 0) return false;
    int32_t t = v.alias;
    const GpuSlot& ts = p.slots[t];
    if (ts.kind != GpuSlot::Kind::Temp || u.root_readers(t) != 1 || u.views(t) != 1 || u.producer(t) < 0) return false;
    const GpuLaunch& mm = p.launches[static_cast<size_t>(u.producer(t))];
    if (mm.kernel != "matmul" || mm.inputs.size() != 2 || mm.scalar != 0 || mm.flag || !(mm.ints.empty() || mm.ints == std::vector<int64_t>{0, 0}))
      return false;
    results.push_back(t);
    weights.push_back(mm.inputs[1]);
    gemms.push_back(static_cast<size_t>(u.producer(t)));
  }
  const GpuLaunch& m0 = p.launches[gemms[0]];
  const GpuSlot& a = p.slots[m0.inputs[0]];
  const GpuSlot& w0 = p.slots[weights[0]];
  const GpuSlot& t0 = p.slots[results[0]];
  if (w0.shape.size() != 2 || a.shape.size() < 2) return false;
  for (size_t i = 0; i < k; ++i) {
    const GpuLaunch& mm = p.launches[gemms[i]];
    const GpuSlot& w = p.slots[weights[i]];
    if (mm.inputs[0] != m0.inputs[0] || mm.op != m0.op || w.shape != w0.shape || w.dtype != w0.dtype || p.slots[results[i]].shape != t0.shape)
      return false;
    if (i > 0 && gemms[i] <= gemms[i - 1]) return false;  // in order, each once
  }
  if (static_cast<int64_t>(k) * w0.bytes() > kMergeWeightBytes) return false;
  // The weights and the activation exist where the first GEMM runs (the
  // concatenation and the merged GEMM run there).
  for (int32_t s : weights)
    if (u.producer(s) == -2 || (u.producer(s) >= 0 && static_cast<size_t>(u.producer(s)) >= gemms[0])) return false;
  const int64_t N = w0.shape[1], K = w0.shape[0];
  // The heads view V of a result ([rows..., N] seen as [B, S, H, Dh]): split
  // it into row dims V[:j] and column dims V[j:] with prod(V[j:]) == N.
  const std::vector<int64_t>& V = p.slots[perm.inputs[0]].shape;
  size_t j = V.size();
  while (j > 0 && product(V, j, V.size()) < N) --j;
  if (j == 0 || j == V.size() || product(V, j, V.size()) != N) return false;
  const std::vector<int64_t>& P = perm.ints;
  if (P.size() != V.size()) return false;

  // Slots, reused so that every view aliases an earlier slot (validate()):
  //   results[0] -> Y, the permute's output [k, O...] (outputs become views of it)
  //   results[1] -> the merged GEMM's result [rows..., k*N]
  //   perm.inputs[k-1] (a view made after results[1]) -> that result seen as V' = V[:j] + [k] + V[j:]
  //   results[k-1] (k == 2: perm.inputs[0], now unused) -> the concatenated weights [K, k*N]
  const int32_t y = results[0], merged = results[1], merged_view = perm.inputs[k - 1];
  const int32_t wcat = k > 2 ? results[k - 1] : perm.inputs[0];
  if (!(merged < merged_view)) return false;
  std::vector<int64_t> O;
  for (int64_t d : P) O.push_back(V[static_cast<size_t>(d)]);
  for (size_t i = 0; i < k; ++i)
    if (p.slots[perm.outputs[i]].shape != O || p.slots[perm.outputs[i]].kind != GpuSlot::Kind::Temp || perm.outputs[i] <= y) return false;
  const abi::GpuDType dt = t0.dtype;
  std::vector<int64_t> merged_shape = t0.shape;
  merged_shape.back() = static_cast<int64_t>(k) * N;
  std::vector<int64_t> vprime(V.begin(), V.begin() + static_cast<std::ptrdiff_t>(j));
  vprime.push_back(static_cast<int64_t>(k));
  vprime.insert(vprime.end(), V.begin() + static_cast<std::ptrdiff_t>(j), V.end());
  std::vector<int64_t> pprime = {static_cast<int64_t>(j)};
  for (int64_t d : P) pprime.push_back(d < static_cast<int64_t>(j) ? d : d + 1);
  std::vector<int64_t> yshape = {static_cast<int64_t>(k)};
  yshape.insert(yshape.end(), O.begin(), O.end());

  auto temp = [&](int32_t s, std::vector<int64_t> shape) {
    GpuSlot& sl = p.slots[s];
    sl.kind = GpuSlot::Kind::Temp;
    sl.alias = -1;
    sl.index = 0;
    sl.dtype = dt;
    sl.shape = std::move(shape);
    sl.offset = 0;
  };
  temp(y, yshape);
  temp(merged, merged_shape);
  temp(wcat, {K, static_cast<int64_t>(k) * N});
  {
    GpuSlot& mv = p.slots[merged_view];
    mv.kind = GpuSlot::Kind::View;
    mv.alias = merged;
    mv.dtype = dt;
    mv.shape = vprime;
    mv.offset = 0;
  }
  const int64_t part = product(O, 0, O.size()) * abi::gpu_dtype_size(dt);
  for (size_t i = 0; i < k; ++i) {
    GpuSlot& o = p.slots[perm.outputs[i]];
    o.kind = GpuSlot::Kind::View;
    o.alias = y;
    o.offset = static_cast<int64_t>(i) * part;
  }
  // The other views of the old results stay valid and unread: they alias
  // y or the merged result (larger than before) or, for k = 4, a result no
  // launch writes any more.

  GpuLaunch cat;
  cat.kernel = "concat";
  cat.inputs = weights;
  cat.outputs = {wcat};
  cat.ints = {1};
  cat.why = std::to_string(k) + " projection weights of [" + std::to_string(K) + " x " + std::to_string(N) +
            "] side by side for one GEMM (one grouped copy; small weights: the separate GEMMs would be launch-bound)";
  GpuLaunch gemm = m0;
  gemm.inputs = {m0.inputs[0], wcat};
  gemm.outputs = {merged};
  gemm.why = "one GEMM for " + std::to_string(k) + " projections of one input (N = " + std::to_string(k) + " x " + std::to_string(N) + ")" +
             (m0.op == "tf32" ? ", TF32 tensor cores (allowed by --gpu-tf32)" : "");
  GpuLaunch split = perm;
  split.inputs = {merged_view};
  split.outputs = {y};
  split.ints = pprime;
  split.why = "the heads of " + std::to_string(k) + " projections split in one permute, written back to back (each a view at its offset)";

  std::vector<GpuLaunch> out;
  for (size_t i = 0; i < p.launches.size(); ++i) {
    if (i == gemms[0]) {
      out.push_back(cat);
      out.push_back(gemm);
    } else if (i == pi) {
      out.push_back(split);
    } else if (std::find(gemms.begin(), gemms.end(), i) == gemms.end()) {
      out.push_back(std::move(p.launches[i]));
    }
  }
  p.launches = std::move(out);
  return true;
}

}  // namespace

int merge_projections(GpuPlan& plan) {
  int n = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < plan.launches.size(); ++i)
      if (merge_at(plan, i)) {
        ++n;
        changed = true;
        break;
      }
  }
  return n;
}

}  // namespace shapeml::lower::gpu
