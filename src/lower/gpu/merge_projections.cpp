#include "lower/gpu/merge_projections.h"

#include <algorithm>
#include <vector>

#include "plan/attention_launch.h"
#include "lower/gpu/plan_uses.h"

namespace shapeml::lower::gpu {

using plan::GpuLaunch;
using plan::GpuPlan;
using plan::GpuSlot;

namespace {

// TF32 GEMMs of small weights are short enough on the tensor cores that the
// weight copy costs more than the launches it saves: apart, they run side
// by side as graph branches (measured: docs/design/gpu-fused-kernels.md).
bool worth_merging(const GpuLaunch& gemm) { return gemm.op != "tf32"; }


int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

// One group: the grouped permute at `pi`. True when rewritten.
bool merge_at(GpuPlan& p, size_t pi) {
  const GpuLaunch perm = p.launches[pi];
  const size_t k = perm.inputs.size();
  if (perm.kind != plan::LaunchKind::Transpose || k < 2 || k > 4 || perm.outputs.size() != k) return false;
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
    if (mm.kind != plan::LaunchKind::Matmul || mm.inputs.size() != 2 || mm.scalar != 0 || mm.flag || !(mm.ints.empty() || mm.ints == std::vector<int64_t>{0, 0}))
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
  if (static_cast<int64_t>(k) * w0.bytes() > kMergeWeightBytes || !worth_merging(m0)) return false;
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

  // Slots, reused so that every view aliases an earlier slot (the plan verifier):
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
  const plan::GpuDType dt = t0.dtype;
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
  const int64_t part = product(O, 0, O.size()) * plan::gpu_dtype_size(dt);
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
  cat.kind = plan::LaunchKind::Concat;
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


// The projections of one fused attention launch (fuse_attention.h): q, k
// and v each read in place from the result of a GEMM of one activation.
// Merged, the launch reads the three from one [rows, 3N] result, each at its
// column offset: the strides of an access into [rows, N] are rows * N +
// columns, and stay rows * 3N + columns when no access crosses a row.
bool merge_for_attention(GpuPlan& p, size_t ai) {
  const GpuLaunch& at = p.launches[ai];
  if (at.kind != plan::LaunchKind::Attention) return false;
  plan::AttentionLayout a;
  if (!a.from_ints(at.ints)) return false;
  PlanUses u(p);
  plan::AttentionAccess* acc[3] = {&a.q, &a.k, &a.v};
  int32_t results[3];
  size_t gemms[3];
  for (int i = 0; i < 3; ++i) {
    const int32_t s = at.inputs[static_cast<size_t>(i)];
    const int32_t t = p.root(s);
    const GpuSlot& ts = p.slots[static_cast<size_t>(t)];
    if (ts.kind != GpuSlot::Kind::Temp || p.offset_in_root(s) != 0 || acc[i]->offset != 0 || u.root_readers(t) != 1 || u.producer(t) < 0) return false;
    const GpuLaunch& mm = p.launches[static_cast<size_t>(u.producer(t))];
    if (mm.kind != plan::LaunchKind::Matmul || mm.inputs.size() != 2 || mm.scalar != 0 || mm.flag || !(mm.ints.empty() || mm.ints == std::vector<int64_t>{0, 0}))
      return false;
    results[i] = t;
    gemms[i] = static_cast<size_t>(u.producer(t));
    if (i > 0 && gemms[i] <= gemms[i - 1]) return false;
  }
  const GpuLaunch& m0 = p.launches[gemms[0]];
  const GpuSlot& w0 = p.slots[static_cast<size_t>(m0.inputs[1])];
  const GpuSlot& t0 = p.slots[static_cast<size_t>(results[0])];
  if (w0.shape.size() != 2 || t0.shape.empty()) return false;
  const int64_t K = w0.shape[0], N = w0.shape[1];
  std::vector<int32_t> weights;
  for (int i = 0; i < 3; ++i) {
    const GpuLaunch& mm = p.launches[gemms[i]];
    const GpuSlot& w = p.slots[static_cast<size_t>(mm.inputs[1])];
    if (mm.inputs[0] != m0.inputs[0] || mm.op != m0.op || w.shape != w0.shape || w.dtype != w0.dtype || p.slots[static_cast<size_t>(results[i])].shape != t0.shape)
      return false;
    const int pw = u.producer(mm.inputs[1]);
    if (pw == -2 || (pw >= 0 && static_cast<size_t>(pw) >= gemms[0])) return false;
    weights.push_back(mm.inputs[1]);
  }
  if (3 * w0.bytes() > kMergeWeightBytes || !worth_merging(m0)) return false;
  // Every access stays inside one row of its result.
  const int64_t heads[3] = {a.heads, a.heads / a.group, a.heads / a.group}, rows[3] = {a.sq, a.sk, a.sk};
  for (int i = 0; i < 3; ++i) {
    const int64_t col = (acc[i]->batch % N) * (a.batch - 1) + (acc[i]->head % N) * (heads[i] - 1) + (acc[i]->row % N) * (rows[i] - 1) + a.dh - 1;
    if (col >= N) return false;
  }
  if (!(results[0] < results[1] && results[1] < results[2])) return false;  // views must follow what they alias
  auto widen = [&](int64_t st) { return st / N * 3 * N + st % N; };
  for (int i = 0; i < 3; ++i) {
    acc[i]->offset = i * N;
    acc[i]->batch = widen(acc[i]->batch), acc[i]->head = widen(acc[i]->head), acc[i]->row = widen(acc[i]->row);
  }

  // Slots: results[0] becomes the merged [rows..., 3N] result, the other two
  // views of it (their own views stay valid, and unread); the concatenated
  // weights are a new temporary.
  const int32_t merged = results[0];
  std::vector<int64_t> mshape = t0.shape;
  mshape.back() = 3 * N;
  p.slots[static_cast<size_t>(merged)].shape = mshape;
  for (int i = 1; i < 3; ++i) {
    GpuSlot& r = p.slots[static_cast<size_t>(results[i])];
    r.kind = GpuSlot::Kind::View;
    r.alias = merged;
    r.offset = 0;
  }
  GpuSlot wcat;
  wcat.kind = GpuSlot::Kind::Temp;
  wcat.dtype = w0.dtype;
  wcat.shape = {K, 3 * N};
  p.slots.push_back(wcat);
  const int32_t wslot = static_cast<int32_t>(p.slots.size() - 1);

  GpuLaunch fused = p.launches[ai];
  fused.inputs = {merged, merged, merged};
  fused.ints = a.to_ints();
  fused.why += "; q, k and v read from one merged projection";
  GpuLaunch cat;
  cat.kind = plan::LaunchKind::Concat;
  cat.inputs = weights;
  cat.outputs = {wslot};
  cat.ints = {1};
  cat.why = "3 projection weights of [" + std::to_string(K) + " x " + std::to_string(N) +
            "] side by side for one GEMM (one grouped copy; small weights: the separate GEMMs would be launch-bound)";
  GpuLaunch gemm = m0;
  gemm.inputs = {m0.inputs[0], wslot};
  gemm.outputs = {merged};
  gemm.why = "one GEMM for the q, k and v projections of one input (N = 3 x " + std::to_string(N) + ")" +
             (m0.op == "tf32" ? ", TF32 tensor cores (allowed by --gpu-tf32)" : "");
  std::vector<GpuLaunch> out;
  for (size_t i = 0; i < p.launches.size(); ++i) {
    if (i == gemms[0]) {
      out.push_back(cat);
      out.push_back(gemm);
    } else if (i == ai) {
      out.push_back(fused);
    } else if (i != gemms[1] && i != gemms[2]) {
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
      if (merge_at(plan, i) || merge_for_attention(plan, i)) {
        ++n;
        changed = true;
        break;
      }
  }
  return n;
}

}  // namespace shapeml::lower::gpu
