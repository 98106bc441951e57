#include "plan/launch_dependencies.h"

#include <algorithm>

namespace shapeml::plan {

namespace {

bool overlap(const ByteRange& a, const ByteRange& b) { return a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end; }

bool any_overlap(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
  for (const ByteRange& x : a)
    for (const ByteRange& y : b)
      if (overlap(x, y)) return true;
  return false;
}

bool conflict(const LaunchAccess& earlier, const LaunchAccess& later) {
  return any_overlap(earlier.writes, later.reads) || any_overlap(earlier.writes, later.writes) || any_overlap(earlier.reads, later.writes);
}

}  // namespace

std::vector<std::vector<size_t>> launch_dependencies(const std::vector<LaunchAccess>& launches) {
  const size_t n = launches.size();
  const size_t words = (n + 63) / 64;
  // ancestors[j]: bit i set when j waits for i, directly or through others.
  std::vector<std::vector<uint64_t>> ancestors(n, std::vector<uint64_t>(words, 0));
  std::vector<std::vector<size_t>> deps(n);
  for (size_t j = 0; j < n; ++j) {
    std::vector<uint64_t>& anc = ancestors[j];
    // Latest first: an earlier conflicting launch that a kept one already
    // waits for needs no edge of its own.
    for (size_t i = j; i-- > 0;) {
      if ((anc[i / 64] >> (i % 64)) & 1u) continue;
      if (!conflict(launches[i], launches[j])) continue;
      deps[j].push_back(i);
      anc[i / 64] |= uint64_t{1} << (i % 64);
      for (size_t w = 0; w < words; ++w) anc[w] |= ancestors[i][w];
    }
    std::reverse(deps[j].begin(), deps[j].end());
  }
  return deps;
}

}  // namespace shapeml::plan
