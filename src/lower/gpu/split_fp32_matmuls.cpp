#include "lower/gpu/split_fp32_matmuls.h"

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "plan/geometry.h"

namespace shapeml::lower::gpu {

using plan::GpuLaunch;
using plan::GpuPlan;
using plan::GpuSlot;
using plan::LaunchKind;

namespace {

// 2 M N K x batch, saturating (a plan's shapes are bounded, but be exact).
int64_t matmul_flops(const plan::MatmulGeometry& g) {
  long double f = 2.0L * static_cast<long double>(g.m) * static_cast<long double>(g.n) * static_cast<long double>(g.k) *
                  static_cast<long double>(plan::numel(g.batch));
  return f >= 9.0e18L ? INT64_MAX : static_cast<int64_t>(f);
}

}  // namespace

int split_fp32_matmuls(GpuPlan& p, int64_t min_flops) {
  // (source slot, axis, role) -> the split slot made for it; dropped when a
  // launch writes the source's bytes again.
  std::map<std::tuple<int32_t, int64_t, int>, int32_t> made;
  std::vector<GpuLaunch> out;
  out.reserve(p.launches.size());
  int count = 0;
  auto split = [&](int32_t src, int64_t axis, int role) -> int32_t {
    auto key = std::make_tuple(src, axis, role);
    if (auto it = made.find(key); it != made.end()) return it->second;
    GpuSlot s;
    s.kind = GpuSlot::Kind::Temp;
    s.dtype = plan::GpuDType::F32;
    s.shape = p.slots[static_cast<size_t>(src)].shape;
    s.shape[static_cast<size_t>(axis)] *= 3;
    p.slots.push_back(std::move(s));
    const int32_t slot = static_cast<int32_t>(p.slots.size() - 1);
    GpuLaunch l;
    l.kind = LaunchKind::Tf32Split;
    l.op = role == 0 ? "lhs" : "rhs";
    l.inputs = {src};
    l.outputs = {slot};
    l.ints = {axis};
    l.why = std::string("3xTF32: ") + (role == 0 ? "A" : "B") + " as TF32 parts (hi, " + (role == 0 ? "hi, lo" : "lo, hi") +
            ") along K for the GEMM that follows";
    out.push_back(std::move(l));
    made.emplace(key, slot);
    return slot;
  };
  for (GpuLaunch& l : p.launches) {
    bool take = l.kind == LaunchKind::Matmul && l.op.empty() && l.inputs.size() >= 2 && l.ints.size() < 3;  // not a group
    plan::MatmulGeometry g;
    if (take) {
      // By value: split() appends slots, which moves p.slots.
      const plan::Shape sa_shape = p.slots[static_cast<size_t>(l.inputs[0])].shape, sb_shape = p.slots[static_cast<size_t>(l.inputs[1])].shape;
      take = p.slots[static_cast<size_t>(l.inputs[0])].dtype == plan::GpuDType::F32 && p.slots[static_cast<size_t>(l.inputs[1])].dtype == plan::GpuDType::F32 &&
             p.slots[static_cast<size_t>(l.outputs[0])].dtype == plan::GpuDType::F32 && sa_shape.size() >= 2 && sb_shape.size() >= 2;
      const bool ta = !l.ints.empty() && l.ints[0] == 1, tb = !l.ints.empty() && l.ints[1] == 1;
      take = take && plan::matmul_geometry(sa_shape, sb_shape, ta, tb, g).empty() && g.k > 0 && matmul_flops(g) >= min_flops;
      if (take) {
        const int64_t ra = static_cast<int64_t>(sa_shape.size()), rb = static_cast<int64_t>(sb_shape.size());
        const int32_t sa = split(l.inputs[0], ta ? ra - 2 : ra - 1, 0);
        const int32_t sb = split(l.inputs[1], tb ? rb - 1 : rb - 2, 1);
        l.inputs[0] = sa, l.inputs[1] = sb;
        l.op = "tf32";
        const std::string plain = ", fp32 compute (no TF32)";
        if (l.why.size() >= plain.size() && l.why.compare(l.why.size() - plain.size(), plain.size(), plain) == 0) l.why.resize(l.why.size() - plain.size());
        l.why += ", 3xTF32: one TF32 GEMM over K = 3 x " + std::to_string(g.k) + " of the split operands (tensor cores; ~1e-5 relative error, between TF32's and fp32's)";
        ++count;
      }
    }
    // A launch that writes bytes a split was made from makes that split stale.
    for (int32_t w : l.outputs) {
      const int32_t root = p.root(w);
      for (auto it = made.begin(); it != made.end();) it = p.root(std::get<0>(it->first)) == root ? made.erase(it) : std::next(it);
    }
    out.push_back(std::move(l));
  }
  p.launches = std::move(out);
  return count;
}

}  // namespace shapeml::lower::gpu
