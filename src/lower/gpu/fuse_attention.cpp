#include "lower/gpu/fuse_attention.h"

#include <optional>
#include <string>
#include <vector>

#include "plan/attention_launch.h"
#include "plan/geometry.h"
#include "common/numbers.h"
#include "lower/gpu/plan_uses.h"

namespace shapeml::lower::gpu {

using plan::AttentionAccess;
using plan::AttentionLayout;
using plan::GpuDType;
using plan::GpuLaunch;
using plan::GpuPlan;
using plan::dense_strides;
using plan::GpuSlot;

namespace {

// An operand as the launch will address it: a slot and a strided access.
struct Operand {
  int32_t slot = -1;
  AttentionAccess at;
};

// A [B, H, S, Dh] (or [B, S, Dh]) slot read or written as it is.
Operand direct(const GpuPlan& p, int32_t s) {
  const std::vector<int64_t>& sh = p.slots[s].shape;
  std::vector<int64_t> st = dense_strides(sh);
  if (sh.size() == 4) return {s, {0, st[0], st[1], st[2]}};
  return {s, {0, st[0], 0, st[1]}};
}

// A permute keeping the last axis, of rank 4, one (input, output) pair.
bool head_permute(const GpuLaunch& l) {
  return l.kind == plan::LaunchKind::Transpose && l.inputs.size() == 1 && l.outputs.size() == 1 && l.ints.size() == 4 && l.ints[3] == 3;
}

// Slot s [B, H, S, Dh], read by the chain only: the permute that made it
// read as strides into its input instead.
Operand source(const GpuPlan& p, const PlanUses& u, int32_t s) {
  if (p.slots[s].shape.size() != 4 || !u.private_temp(s)) return direct(p, s);
  const GpuLaunch* t = u.made_by(s, plan::LaunchKind::Transpose);
  if (!t || !head_permute(*t)) return direct(p, s);
  std::vector<int64_t> in = dense_strides(p.slots[t->inputs[0]].shape);
  const std::vector<int64_t>& P = t->ints;
  return {t->inputs[0], {0, in[static_cast<size_t>(P[0])], in[static_cast<size_t>(P[1])], in[static_cast<size_t>(P[2])]}};
}

// A key/value repeat over the head axis (repeat_interleave of grouped-query
// attention): its input and the repeat count.
std::optional<std::pair<int32_t, int64_t>> head_repeat(const GpuPlan& p, const PlanUses& u, int32_t s) {
  if (p.slots[s].shape.size() != 4 || !u.private_temp(s)) return std::nullopt;
  const GpuLaunch* r = u.made_by(s, plan::LaunchKind::Repeat);
  if (!r || r->ints.size() != 2 || (r->ints[0] != 1 && r->ints[0] != -3) || r->ints[1] < 1) return std::nullopt;
  return std::make_pair(r->inputs[0], r->ints[1]);
}

bool is_plain_gemm(const GpuLaunch& l) {
  return l.kind == plan::LaunchKind::Matmul && l.inputs.size() == 2 && l.outputs.size() == 1 && !l.flag && (l.scalar == 0 || l.scalar == 1);
}

// Fuses the chain ending in the matmul at `i`; true when rewritten.
bool fuse_at(GpuPlan& p, size_t i, bool cudnn) {
  PlanUses u(p);
  GpuLaunch& pv = p.launches[i];
  if (!is_plain_gemm(pv) || !(pv.ints.empty() || pv.ints == std::vector<int64_t>{0, 0})) return false;
  const int32_t probs = pv.inputs[0], v = pv.inputs[1], ctx = pv.outputs[0];
  const GpuLaunch* sm = u.made_by(probs, plan::LaunchKind::Softmax, "softmax");
  if (!sm || !u.private_temp(probs)) return false;
  const int32_t scores = sm->inputs[0];
  const GpuLaunch* qk = u.made_by(scores, plan::LaunchKind::Matmul);
  if (!qk || !u.private_temp(scores) || qk->inputs.size() != 2 || qk->flag || qk->ints != std::vector<int64_t>{0, 1}) return false;
  const int32_t q = qk->inputs[0], k = qk->inputs[1];

  // Shapes: q [..., Sq, Dh], k [..., Sk, Dh] (stored untransposed), v [..., Sk, Dh], batch dims equal, rank 3 or 4.
  const std::vector<int64_t>&qs = p.slots[q].shape, &ks = p.slots[k].shape, &vs = p.slots[v].shape, &ss = p.slots[scores].shape;
  const size_t r = qs.size();
  if ((r != 3 && r != 4) || ks.size() != r || vs.size() != r || ss.size() != r || p.slots[ctx].shape.size() != r) return false;
  const int64_t last = static_cast<int64_t>(r) - 1;
  if (sm->ints.empty() || (sm->ints[0] != -1 && sm->ints[0] != last)) return false;
  const GpuDType dt = p.slots[q].dtype;
  if (dt != GpuDType::BF16 && dt != GpuDType::F32) return false;
  for (int32_t s : {q, k, v, scores, probs, ctx})
    if (p.slots[s].dtype != dt) return false;
  for (size_t d = 0; d + 2 < r; ++d)
    if (ks[d] != qs[d] || vs[d] != qs[d]) return false;
  const int64_t sq = qs[r - 2], dh = qs[r - 1], sk = ks[r - 2];
  if (ks[r - 1] != dh || vs[r - 2] != sk || vs[r - 1] != dh || dh > plan::kAttentionMaxHeadDim) return false;
  // f32 in a TF32 plan (both products allowed TF32) runs on the TF32 tensor
  // cores beyond kAttentionF32ShortKeys keys. Full f32 runs on the FP32
  // cores: up to that many keys in 16-row blocks, beyond it in the
  // register-tiled 64-row blocks, which need 64 query rows to beat the
  // cuBLAS GEMMs (a decode row against a long cache keeps them;
  // docs/design/gpu-attention.md). Up to kAttentionF32ShortKeys the
  // FP32-core kernel serves TF32 plans too: its 16-row blocks fill the GPU
  // where the tensor-core kernel's 64-row blocks do not, it measured faster
  // there, and it is more precise.
  const bool tf32 = dt == GpuDType::F32 && qk->op == "tf32" && pv.op == "tf32" && sk > plan::kAttentionF32ShortKeys;
  if (dt == GpuDType::F32 && !tf32 && sk > plan::kAttentionF32ShortKeys && sq < plan::kAttentionF32TiledMinRows) return false;

  AttentionLayout a;
  a.batch = qs[0];
  a.heads = r == 4 ? qs[1] : 1;
  a.sq = sq, a.sk = sk, a.dh = dh;
  a.offset = sm->flag ? sm->ints[1] : 0;

  // Grouped-query heads: both k and v repeated alike, or neither taken apart.
  int32_t ksrc = k, vsrc = v;
  auto rk = head_repeat(p, u, k), rv = head_repeat(p, u, v);
  if (rk && rv && rk->second == rv->second) ksrc = rk->first, vsrc = rv->first, a.group = rk->second;
  Operand oq = source(p, u, q), ok = source(p, u, ksrc), ov = source(p, u, vsrc);

  // The head merge after it: written in place by the launch.
  Operand oo = direct(p, ctx);
  int merge = -1;
  if (r == 4 && u.private_temp(ctx)) {
    for (size_t j = i + 1; j < p.launches.size(); ++j) {
      const GpuLaunch& t = p.launches[j];
      bool reads = false;
      for (int32_t s : t.inputs) reads |= s == ctx;
      if (!reads) continue;
      if (head_permute(t) && t.inputs[0] == ctx) {
        std::vector<int64_t> out = dense_strides(p.slots[t.outputs[0]].shape);
        int64_t st[4] = {0, 0, 0, 0};
        for (size_t d = 0; d < 4; ++d) st[t.ints[d]] = out[d];
        oo = {t.outputs[0], {0, st[0], st[1], st[2]}};
        merge = static_cast<int>(j);
      }
      break;
    }
  }

  a.q = oq.at, a.k = ok.at, a.v = ov.at, a.o = oo.at;
  GpuLaunch at;
  at.kind = plan::LaunchKind::Attention;
  if (tf32) at.op = "tf32";
  at.inputs = {oq.slot, ok.slot, ov.slot};
  at.outputs = {oo.slot};
  at.ints = a.to_ints();
  at.scalar = qk->scalar == 0 ? 1.0 : qk->scalar;
  at.flag = sm->flag;
  at.why = std::string(tf32 ? "TF32 tensor cores, as the matmuls it replaces: " : "") + "softmax(q k^T * " + common::format_double(at.scalar, 9) + (sm->flag ? ", causal" : "") +
           ") v in one launch: no [" + std::to_string(sq) + " x " + std::to_string(sk) + "] scores in memory" +
           (a.group > 1 ? "; " + std::to_string(a.group) + " query heads per key/value head, no repeat" : "") +
           (oq.slot != q || ok.slot != ksrc || ov.slot != vsrc ? "; head split read in place" : "") + (merge >= 0 ? "; head merge written in place" : "");
  if (cudnn && plan::cudnn_attention_refusal(a, dt, at.flag).empty()) {
    at.library = "cudnn";
    at.why += "; cuDNN's fused attention where the executor finds cuDNN";
  }
  if (!plan::check_attention(p, at).empty()) return false;
  pv = std::move(at);
  if (merge >= 0) p.launches.erase(p.launches.begin() + merge);
  return true;
}

}  // namespace

int fuse_attention(GpuPlan& plan, bool cudnn) {
  int n = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < plan.launches.size(); ++i)
      if (fuse_at(plan, i, cudnn)) {
        ++n;
        changed = true;
        break;
      }
  }
  return n;
}

}  // namespace shapeml::lower::gpu
