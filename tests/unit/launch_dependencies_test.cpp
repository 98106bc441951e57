// The dependencies of a replayed graph's launches (src/plan/launch_dependencies.h)
// and the plan's `branches` line: hand-made cases for each hazard, and random
// launch sets checked against a brute-force closure: every conflicting pair
// is ordered by a path, and no kept edge is implied by the others. No GPU.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "lower/gpu/plan_gpu.h"
#include "plan/launch_dependencies.h"
#include "plan/plan.h"
#include "plan/verify.h"

namespace plan = shapeml::plan;
using plan::ByteRange;
using plan::LaunchAccess;

namespace {

LaunchAccess acc(std::vector<ByteRange> reads, std::vector<ByteRange> writes) { return {std::move(reads), std::move(writes)}; }
using Deps = std::vector<std::vector<size_t>>;

TEST(LaunchDependencies, ReadersOfOneBufferAreIndependent) {
  // Two launches read x [0, 100) and write disjoint outputs: no edge.
  Deps d = plan::launch_dependencies({acc({{0, 100}}, {{100, 200}}), acc({{0, 100}}, {{200, 300}})});
  EXPECT_EQ(d, (Deps{{}, {}}));
}

TEST(LaunchDependencies, EachHazardOrders) {
  EXPECT_EQ(plan::launch_dependencies({acc({}, {{0, 8}}), acc({{4, 12}}, {{100, 108}})}), (Deps{{}, {0}}));  // read after write
  EXPECT_EQ(plan::launch_dependencies({acc({{0, 8}}, {{100, 108}}), acc({}, {{7, 9}})}), (Deps{{}, {0}}));  // write after read
  EXPECT_EQ(plan::launch_dependencies({acc({}, {{0, 8}}), acc({}, {{0, 8}})}), (Deps{{}, {0}}));            // write after write
}

TEST(LaunchDependencies, TouchingAndEmptyRangesDoNotOverlap) {
  EXPECT_EQ(plan::launch_dependencies({acc({}, {{0, 8}}), acc({{8, 16}}, {{16, 24}})}), (Deps{{}, {}}));
  EXPECT_EQ(plan::launch_dependencies({acc({}, {{4, 4}}), acc({{0, 8}}, {{8, 16}})}), (Deps{{}, {}}));
}

TEST(LaunchDependencies, RedundantEdgesAreDropped) {
  // a writes X; b reads X, writes Y; c reads X and Y: c waits for b only
  // (b already waits for a).
  Deps chain = plan::launch_dependencies({acc({}, {{0, 8}}), acc({{0, 8}}, {{8, 16}}), acc({{0, 16}}, {{16, 24}})});
  EXPECT_EQ(chain, (Deps{{}, {0}, {1}}));
  // A diamond: b and c both read a's X, d reads both results.
  Deps diamond = plan::launch_dependencies(
      {acc({}, {{0, 8}}), acc({{0, 8}}, {{8, 16}}), acc({{0, 8}}, {{16, 24}}), acc({{8, 24}}, {{24, 32}})});
  EXPECT_EQ(diamond, (Deps{{}, {0}, {0}, {1, 2}}));
}

TEST(LaunchDependencies, WorkspaceReuseOrdersTheLaterWriter) {
  // The small block's shape: a temp T at [0, 64) is read by launch 1, and
  // its bytes are reused by launch 2's output: launch 2 waits for 1 (write
  // after read), though it reads nothing launch 1 wrote.
  Deps d = plan::launch_dependencies({acc({{1000, 1064}}, {{0, 64}}), acc({{0, 64}}, {{2000, 2064}}), acc({{1000, 1064}}, {{0, 32}})});
  EXPECT_EQ(d, (Deps{{}, {0}, {1}}));
}

// Brute force: reach[i][j] when j must follow i, through any chain of conflicts.
TEST(LaunchDependencies, RandomPlansMatchTheClosure) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 200; ++round) {
    const size_t n = 1 + rng() % 24;
    std::vector<LaunchAccess> ls(n);
    auto r = [&] {
      uintptr_t b = rng() % 64;
      return ByteRange{b, b + 1 + rng() % 8};
    };
    for (LaunchAccess& l : ls) {
      for (unsigned k = rng() % 3; k > 0; --k) l.reads.push_back(r());
      for (unsigned k = rng() % 2 + 1; k > 0; --k) l.writes.push_back(r());
    }
    auto ov = [](const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
      for (auto& x : a)
        for (auto& y : b)
          if (x.begin < y.end && y.begin < x.end) return true;
      return false;
    };
    std::vector<std::vector<char>> conflict(n, std::vector<char>(n, 0)), reach(n, std::vector<char>(n, 0));
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j)
        conflict[i][j] = ov(ls[i].writes, ls[j].reads) || ov(ls[i].writes, ls[j].writes) || ov(ls[i].reads, ls[j].writes);
    Deps d = plan::launch_dependencies(ls);
    ASSERT_EQ(d.size(), n);
    // Reachability through the kept edges.
    for (size_t j = 0; j < n; ++j)
      for (size_t i : d[j]) {
        ASSERT_LT(i, j);
        reach[i][j] = 1;
        for (size_t k = 0; k < i; ++k)
          if (reach[k][i]) reach[k][j] = 1;
      }
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) {
        if (conflict[i][j]) {
          EXPECT_TRUE(reach[i][j]) << "round " << round << ": launch " << j << " does not wait for " << i;
        }
      }
    // No kept edge i -> j has another path: through some other kept k -> j with i reaching k.
    for (size_t j = 0; j < n; ++j)
      for (size_t i : d[j])
        for (size_t k : d[j]) {
          if (k != i) {
            EXPECT_FALSE(reach[i][k]) << "round " << round << ": edge " << i << " -> " << j << " is implied via " << k;
          }
        }
  }
}

TEST(GraphBranches, ThePlanLineRoundTripsAndDefaultsOff) {
  const char* text =
      "gpu-plan f device 0 inputs 1 outputs 1 workspace 0\n"
      "bind 0\n"
      "slot 0 input 0 f32 1 4 offset 0\n"
      "slot 1 output 0 f32 1 4 offset 0\n"
      "graph on ; device slots only\n"
      "launch unary neg shapeml in 1 0 out 1 1 ints 0 scalar 0 flag 0\n";
  std::string err;
  auto p = plan::GpuPlan::parse(text, err);
  ASSERT_TRUE(p) << err;
  EXPECT_FALSE(p->branches);  // a plan made before the line: one chain
  plan::decide_graph_branches(*p, true);
  EXPECT_TRUE(p->branches);
  auto q = plan::GpuPlan::parse(p->to_text(), err);
  ASSERT_TRUE(q) << err;
  EXPECT_TRUE(q->branches);
  EXPECT_EQ(q->branches_why, p->branches_why);
  plan::decide_graph_branches(*p, false);
  EXPECT_FALSE(p->branches);
  p->graph = false;
  plan::decide_graph_branches(*p, true);
  EXPECT_FALSE(p->branches);  // no graph, no branches
  std::string bad = std::string(text) + "branches maybe\n";
  EXPECT_FALSE(plan::GpuPlan::parse(bad, err));
  EXPECT_NE(err.find("branches must be on or off"), std::string::npos) << err;
}

}  // namespace
