#include "lower/gpu/group_matmuls.h"

#include <set>
#include <string>
#include <vector>

#include "plan/limits.h"

namespace shapeml::lower::gpu {

using plan::GpuLaunch;
using plan::GpuPlan;

namespace {

// A member: one A, one 2-D weight, one result, nothing fused into it.
bool plain_bf16_gemm(const GpuPlan& p, const GpuLaunch& l) {
  if (l.kind != plan::LaunchKind::Matmul || l.inputs.size() != 2 || l.outputs.size() != 1) return false;
  if (l.scalar != 0 || l.flag || !l.op.empty() || !(l.ints.empty() || l.ints.size() == 2)) return false;
  const plan::GpuSlot& w = p.slots[static_cast<size_t>(l.inputs[1])];
  return w.shape.size() == 2 && w.dtype == plan::GpuDType::BF16;
}

std::vector<int64_t> transposes(const GpuLaunch& l) { return l.ints.empty() ? std::vector<int64_t>{0, 0} : l.ints; }

// Whether launch j may run at position i < j, in a group with launch i:
// nothing in between touches the bytes it writes or changes what it reads.
bool movable(const GpuPlan& p, size_t i, size_t j) {
  const GpuLaunch& m = p.launches[j];
  const int32_t out = p.root(m.outputs[0]);
  const std::set<int32_t> read = {p.root(m.inputs[0]), p.root(m.inputs[1])};
  for (size_t x = i + 1; x < j; ++x) {
    const GpuLaunch& l = p.launches[x];
    for (int32_t s : l.inputs)
      if (p.root(s) == out) return false;
    for (int32_t s : l.outputs)
      if (p.root(s) == out || read.count(p.root(s))) return false;
  }
  return true;
}

}  // namespace

int group_matmuls(GpuPlan& p) {
  int groups = 0;
  for (size_t i = 0; i < p.launches.size(); ++i) {
    if (!plain_bf16_gemm(p, p.launches[i])) continue;
    const GpuLaunch first = p.launches[i];
    const plan::GpuSlot& w0 = p.slots[static_cast<size_t>(first.inputs[1])];
    const plan::GpuSlot& c0 = p.slots[static_cast<size_t>(first.outputs[0])];
    std::vector<size_t> members = {i};
    for (size_t j = i + 1; j < p.launches.size() && static_cast<int64_t>(members.size()) < plan::kMaxGemmGroup; ++j) {
      const GpuLaunch& l = p.launches[j];
      if (!plain_bf16_gemm(p, l) || l.inputs[0] != first.inputs[0] || transposes(l) != transposes(first)) continue;
      const plan::GpuSlot& w = p.slots[static_cast<size_t>(l.inputs[1])];
      const plan::GpuSlot& c = p.slots[static_cast<size_t>(l.outputs[0])];
      if (w.shape != w0.shape || c.shape != c0.shape || c.dtype != c0.dtype) continue;
      // Distinct results, none of them a weight of the group.
      bool clash = false;
      for (size_t m : members) {
        const GpuLaunch& g = p.launches[m];
        clash |= p.root(g.outputs[0]) == p.root(l.outputs[0]) || p.root(g.outputs[0]) == p.root(l.inputs[1]) ||
                 p.root(l.outputs[0]) == p.root(g.inputs[1]) || p.root(l.outputs[0]) == p.root(first.inputs[0]);
      }
      if (clash || !movable(p, i, j)) continue;
      members.push_back(j);
    }
    if (members.size() < 2) continue;
    GpuLaunch g = first;
    const int64_t k = static_cast<int64_t>(members.size());
    g.ints = transposes(first);
    g.ints.push_back(k);
    g.inputs = {first.inputs[0]};
    g.outputs.clear();
    for (size_t m : members) {
      g.inputs.push_back(p.launches[m].inputs[1]);
      g.outputs.push_back(p.launches[m].outputs[0]);
    }
    g.why = std::to_string(k) + " GEMMs of one activation as one batched GEMM over their weights (cuBLASLt pointer arrays)";
    p.launches[i] = std::move(g);
    for (size_t m = members.size(); m-- > 1;) p.launches.erase(p.launches.begin() + static_cast<std::ptrdiff_t>(members[m]));
    ++groups;
  }
  return groups;
}

}  // namespace shapeml::lower::gpu
