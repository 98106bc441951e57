#include "plan/layout.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace shapeml::plan {

void layout_workspace(GpuPlan& p) {
  const size_t n = p.slots.size();
  const int64_t end = static_cast<int64_t>(p.launches.size());
  std::vector<int64_t> def(n, end), last(n, -1);  // launch indices; def == end: never written
  for (size_t j = 0; j < p.launches.size(); ++j) {
    const GpuLaunch& l = p.launches[j];
    const int64_t at = static_cast<int64_t>(j);
    for (size_t k = 0; k < l.outputs.size(); ++k) {
      size_t s = static_cast<size_t>(p.root(l.outputs[k]));
      def[s] = std::min(def[s], at);
      last[s] = std::max(last[s], k > 0 ? INT64_MAX : at);
    }
    for (int32_t i : l.inputs) {
      size_t s = static_cast<size_t>(p.root(i));
      last[s] = std::max(last[s], at);
    }
  }
  std::vector<size_t> temps;
  for (size_t i = 0; i < n; ++i)
    if (p.slots[i].kind == GpuSlot::Kind::Temp) {
      if (def[i] == end) def[i] = 0;  // read but never written (no pass makes one): live from the start
      last[i] = std::max(last[i], def[i]);
      temps.push_back(i);
    }
  std::sort(temps.begin(), temps.end(), [&](size_t a, size_t b) { return def[a] != def[b] ? def[a] < def[b] : a < b; });
  struct Placed {
    int64_t offset, end, def, last;
  };
  std::vector<Placed> placed;
  int64_t total = 0;
  for (size_t s : temps) {
    const int64_t bytes = (p.slots[s].bytes() + 255) / 256 * 256;
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed& q : placed)
      if (!(q.last < def[s] || last[s] < q.def)) busy.push_back({q.offset, q.end});
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (const auto& [b, e] : busy) {
      if (at + bytes <= b) break;
      at = std::max(at, e);
    }
    p.slots[s].offset = at;
    placed.push_back({at, at + bytes, def[s], last[s]});
    total = std::max(total, at + bytes);
  }
  p.workspace_bytes = total;
}

}  // namespace shapeml::plan
