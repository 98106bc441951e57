// Who writes and who reads each slot of a plan, from its launch list as it
// is: what the plan passes (fuse_patterns, merge_projections) ask before they
// swallow an intermediate. Recomputed after every rewrite (a rewrite changes
// what its launch reads). Plain data, header-only.
#pragma once
#include <cstdint>
#include <vector>

#include "plan/plan.h"

namespace shapeml::lower::gpu {

class PlanUses {
 public:
  explicit PlanUses(const plan::GpuPlan& p)
      : p_(p), producer_(p.slots.size(), -1), readers_(p.slots.size(), 0), root_readers_(p.slots.size(), 0), views_(p.slots.size(), 0) {
    for (size_t i = 0; i < p.launches.size(); ++i) {
      for (int32_t s : p.launches[i].outputs) producer_[s] = producer_[s] == -1 ? static_cast<int>(i) : -2;  // -2: written twice
      for (int32_t s : p.launches[i].inputs) ++readers_[s], ++root_readers_[p.root(s)];
    }
    for (const plan::GpuSlot& s : p.slots)
      if (s.kind == plan::GpuSlot::Kind::View && s.alias >= 0) ++views_[s.alias];
  }

  /// The launch index writing `s`: -1 none (an input), -2 more than one.
  int producer(int32_t s) const { return producer_[s]; }
  /// Reads of slot `s` itself; of its bytes through any view; views of it.
  int readers(int32_t s) const { return readers_[s]; }
  int root_readers(int32_t s) const { return root_readers_[s]; }
  int views(int32_t s) const { return views_[s]; }

  /// The launch writing `s` if it is of `kind` (and `op` when given), else nullptr.
  const plan::GpuLaunch* made_by(int32_t s, plan::LaunchKind kind, const char* op = nullptr) const {
    int i = producer_[s];
    if (i < 0) return nullptr;
    const plan::GpuLaunch& l = p_.launches[static_cast<size_t>(i)];
    if (l.kind != kind || (op && l.op != op)) return nullptr;
    return &l;
  }

  /// An intermediate a pass may swallow: a temporary with one reader, no
  /// view and one writer.
  bool private_temp(int32_t s) const {
    return p_.slots[s].kind == plan::GpuSlot::Kind::Temp && readers_[s] == 1 && views_[s] == 0 && producer_[s] >= 0;
  }

  /// The same bytes and shape: one slot, or views of one root at one offset with one shape.
  bool same(int32_t a, int32_t b) const {
    if (a == b) return true;
    const plan::GpuSlot &x = p_.slots[a], &y = p_.slots[b];
    return x.dtype == y.dtype && x.shape == y.shape && p_.root(a) == p_.root(b) && p_.offset_in_root(a) == p_.offset_in_root(b);
  }

 private:
  const plan::GpuPlan& p_;
  std::vector<int> producer_, readers_, root_readers_, views_;
};

}  // namespace shapeml::lower::gpu
