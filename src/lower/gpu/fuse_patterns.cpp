#include "lower/gpu/fuse_patterns.h"

#include <cmath>
#include <optional>
#include <vector>

#include "common/numbers.h"
#include "lower/gpu/plan_uses.h"

namespace shapeml::lower::gpu {

using plan::GpuDType;
using plan::GpuLaunch;
using plan::GpuPlan;
using plan::GpuSlot;

namespace {

using plan::gpu_dtype_is_float;

// The value of a one-element fill, rounded to its dtype.
std::optional<double> constant(const GpuPlan& p, const PlanUses& u, int32_t s) {
  const GpuLaunch* f = u.made_by(s, plan::LaunchKind::Fill);
  if (!f || !f->inputs.empty() || p.slots[s].numel() != 1) return std::nullopt;
  return plan::gpu_stored_value(f->scalar, p.slots[s].dtype);
}

bool last_axis(int64_t axis, size_t rank) { return axis == -1 || axis == static_cast<int64_t>(rank) - 1; }

// mul(mul(x, rsqrt(add(mean(mul(x, x)), eps))), g) -> rmsnorm {x, g}.
bool rmsnorm(const GpuPlan& p, const PlanUses& u, GpuLaunch& l) {
  if (l.kind != plan::LaunchKind::Binary || l.op != "mul") return false;
  const GpuSlot& y = p.slots[l.outputs[0]];
  if (!gpu_dtype_is_float(y.dtype) || y.shape.empty()) return false;
  for (int side = 0; side < 2; ++side) {
    int32_t t5 = l.inputs[side], g = l.inputs[1 - side];
    if (p.slots[g].shape != std::vector<int64_t>{y.shape.back()} || p.slots[g].dtype != y.dtype || !u.private_temp(t5)) continue;
    const GpuLaunch* scale = u.made_by(t5, plan::LaunchKind::Binary, "mul");
    if (!scale) continue;
    for (int s2 = 0; s2 < 2; ++s2) {
      int32_t x = scale->inputs[s2], t4 = scale->inputs[1 - s2];
      const GpuSlot& xs = p.slots[x];
      std::vector<int64_t> stat = xs.shape;
      if (stat.empty() || xs.shape != y.shape || xs.dtype != y.dtype) continue;
      stat.back() = 1;
      if (p.slots[t4].shape != stat || !u.private_temp(t4)) continue;
      const GpuLaunch* rs = u.made_by(t4, plan::LaunchKind::Unary, "rsqrt");
      if (!rs || !u.private_temp(rs->inputs[0])) continue;
      const GpuLaunch* add = u.made_by(rs->inputs[0], plan::LaunchKind::Binary, "add");
      if (!add) continue;
      for (int s3 = 0; s3 < 2; ++s3) {
        int32_t t2 = add->inputs[s3];
        std::optional<double> eps = constant(p, u, add->inputs[1 - s3]);
        if (!eps || !(*eps >= 0) || !std::isfinite(*eps) || p.slots[add->inputs[1 - s3]].dtype != y.dtype || !u.private_temp(t2)) continue;
        const GpuLaunch* mean = u.made_by(t2, plan::LaunchKind::Reduce, "mean");
        if (!mean || !mean->flag || mean->ints.size() != 1 || !last_axis(mean->ints[0], xs.shape.size()) || !u.private_temp(mean->inputs[0]))
          continue;
        const GpuLaunch* sq = u.made_by(mean->inputs[0], plan::LaunchKind::Binary, "mul");
        if (!sq || !u.same(sq->inputs[0], x) || !u.same(sq->inputs[1], x)) continue;
        l.kind = plan::LaunchKind::RmsNorm;
        l.op.clear();
        l.inputs = {x, g};
        l.ints.clear();
        l.scalar = *eps;
        l.flag = false;
        l.why = "RMSNorm x * rsqrt(mean(x^2, -1) + " + common::format_double(*eps, 9) +
                ") * g in one launch instead of 7 (statistics in f32, one read of the row from memory)";
        return true;
      }
    }
  }
  return false;
}

// The offset of a causal comparison of two iotas over [R, C]: keep iff
// j <= i + offset, with i the row (axis 0) and j the column (axis 1).
std::optional<int64_t> causal_offset(const GpuPlan& p, const PlanUses& u, int32_t cond) {
  const GpuLaunch* cmp = u.made_by(cond, plan::LaunchKind::Compare);
  if (!cmp || !u.private_temp(cond) || p.slots[cond].shape.size() != 2) return std::nullopt;
  int64_t axis[2];
  for (int k = 0; k < 2; ++k) {
    int32_t s = cmp->inputs[k];
    const GpuLaunch* io = u.made_by(s, plan::LaunchKind::Iota);
    GpuDType dt = p.slots[s].dtype;
    if (!io || io->ints.size() != 1 || p.slots[s].shape != p.slots[cond].shape || (dt != GpuDType::I32 && dt != GpuDType::I64)) return std::nullopt;
    axis[k] = io->ints[0] < 0 ? io->ints[0] + 2 : io->ints[0];
  }
  if (axis[0] == 0 && axis[1] == 1) {  // cmp(i, j)
    if (cmp->op == "ge") return 0;
    if (cmp->op == "gt") return -1;
  } else if (axis[0] == 1 && axis[1] == 0) {  // cmp(j, i)
    if (cmp->op == "le") return 0;
    if (cmp->op == "lt") return -1;
  }
  return std::nullopt;
}

// softmax(select(causal, s, -inf), -1) -> softmax {s} with the mask folded in.
bool causal_softmax(const GpuPlan& p, const PlanUses& u, GpuLaunch& l) {
  if (l.kind != plan::LaunchKind::Softmax || l.flag || l.ints.size() != 1) return false;
  int32_t sel = l.inputs[0];
  const GpuSlot& ss = p.slots[sel];
  if (ss.shape.size() < 2 || !last_axis(l.ints[0], ss.shape.size()) || !u.private_temp(sel)) return false;
  const GpuLaunch* se = u.made_by(sel, plan::LaunchKind::Select);
  if (!se) return false;
  int32_t cond = se->inputs[0], scores = se->inputs[1];
  std::optional<double> fill = constant(p, u, se->inputs[2]);
  if (!fill || !(std::isinf(*fill) && *fill < 0) || p.slots[scores].shape != ss.shape) return false;
  const std::vector<int64_t>& cs = p.slots[cond].shape;
  if (cs.size() != 2 || cs[0] != ss.shape[ss.shape.size() - 2] || cs[1] != ss.shape.back()) return false;
  std::optional<int64_t> off = causal_offset(p, u, cond);
  if (!off) return false;
  l.inputs = {scores};
  l.flag = true;
  l.ints = {l.ints[0], *off};
  l.why = std::string("causal mask (column j kept where j <= i") + (*off == 0 ? "" : " - 1") +
          ") folded into the softmax: one launch instead of 6, no mask tensor";
  return true;
}

// mul(act(a), b) -> gated {a, b}.
bool gated(const GpuPlan& p, const PlanUses& u, GpuLaunch& l) {
  if (l.kind != plan::LaunchKind::Binary || l.op != "mul") return false;
  const GpuSlot& y = p.slots[l.outputs[0]];
  if (!gpu_dtype_is_float(y.dtype)) return false;
  for (int side = 0; side < 2; ++side) {
    int32_t t = l.inputs[side], b = l.inputs[1 - side];
    const GpuLaunch* act = u.made_by(t, plan::LaunchKind::Unary);
    if (!act || act->op == "not" || !u.private_temp(t)) continue;
    int32_t a = act->inputs[0];
    if (p.slots[a].shape != y.shape || p.slots[b].shape != y.shape || p.slots[a].dtype != y.dtype || p.slots[b].dtype != y.dtype) continue;
    l.kind = plan::LaunchKind::Gated;
    l.why = act->op + "(a) * b in one launch instead of 2 (one pass over the product)";
    l.op = act->op;
    l.inputs = {a, b};
    return true;
  }
  return false;
}

}  // namespace

int fuse_patterns(GpuPlan& plan) {
  int n = 0;
  // One rewrite at a time, each against fresh use counts: a rewrite changes
  // what its launch reads.
  for (bool changed = true; changed;) {
    changed = false;
    PlanUses u(plan);
    for (GpuLaunch& l : plan.launches) {
      if (rmsnorm(plan, u, l) || causal_softmax(plan, u, l) || gated(plan, u, l)) {
        ++n;
        changed = true;
        break;
      }
    }
  }
  return n;
}

int group_permutes(GpuPlan& plan) {
  auto groupable = [&](const GpuLaunch& l) {
    if (l.kind != plan::LaunchKind::Transpose || l.inputs.size() != 1 || l.outputs.size() != 1) return false;
    const size_t r = l.ints.size();
    return r >= 2 && l.ints.back() == static_cast<int64_t>(r - 1) && plan.slots[l.inputs[0]].shape.size() == r;
  };
  auto same_geometry = [&](const GpuLaunch& a, const GpuLaunch& b) {
    const GpuSlot &x = plan.slots[a.inputs[0]], &y = plan.slots[b.inputs[0]];
    return a.ints == b.ints && x.shape == y.shape && x.dtype == y.dtype;
  };
  // Whether a launch in (from, to) reads the bytes of slot s.
  auto read_between = [&](size_t from, size_t to, int32_t s) {
    for (size_t k = from + 1; k < to; ++k)
      for (int32_t in : plan.launches[k].inputs)
        if (plan.root(in) == plan.root(s)) return true;
    return false;
  };
  std::vector<bool> dead(plan.launches.size(), false);
  int removed = 0;
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    if (dead[i] || !groupable(plan.launches[i])) continue;
    std::vector<size_t> members = {i};
    for (size_t j = i + 1; j < plan.launches.size() && members.size() < 4; ++j) {
      if (dead[j] || !groupable(plan.launches[j]) || !same_geometry(plan.launches[i], plan.launches[j])) continue;
      bool ok = true;
      for (size_t m : members) ok &= !read_between(m, j, plan.launches[m].outputs[0]);
      if (!ok) break;
      members.push_back(j);
    }
    if (members.size() < 2) continue;
    GpuLaunch& last = plan.launches[members.back()];
    std::vector<int32_t> ins, outs;
    for (size_t m : members) ins.push_back(plan.launches[m].inputs[0]), outs.push_back(plan.launches[m].outputs[0]);
    last.inputs = ins;
    last.outputs = outs;
    last.why = std::to_string(members.size()) + " permutes of one geometry in one launch";
    for (size_t k = 0; k + 1 < members.size(); ++k) dead[members[k]] = true, ++removed;
  }
  if (removed == 0) return 0;
  std::vector<GpuLaunch> kept;
  for (size_t i = 0; i < plan.launches.size(); ++i)
    if (!dead[i]) kept.push_back(std::move(plan.launches[i]));
  plan.launches = std::move(kept);
  return removed;
}

}  // namespace shapeml::lower::gpu
