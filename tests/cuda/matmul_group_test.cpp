// Matmul groups (plan.h; lower/gpu/group_matmuls.h): one pointer-array
// batched cuBLASLt GEMM of one A and k weights, against float64 loops over
// the same bf16 inputs and against the k separate GEMMs the group replaces;
// transposed weights, A with batch dims, odd sizes, element-aligned
// pointers, an empty inner dimension. Needs a GPU; skips without one.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace shapeml::cuda::test {
namespace {

Tensor random_bf16(Shape s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor t{GpuDType::BF16, s, {}};
  for (int64_t i = 0; i < t.numel(); ++i) t.v.push_back(bf16_round(static_cast<float>(u(rng))));
  return t;
}

// out [..., M, N] = a [..., M, K] w, w [K, N] (or [N, K] when tb), in float64.
std::vector<double> reference(const Tensor& a, const Tensor& w, bool tb) {
  const int64_t K = a.shape.back(), rows = a.numel() / std::max<int64_t>(K, 1), N = tb ? w.shape[0] : w.shape[1];
  std::vector<double> out(static_cast<size_t>(rows * N), 0.0);
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += a.v[static_cast<size_t>(m * K + k)] * w.v[static_cast<size_t>(tb ? n * K + k : k * N + n)];
      out[static_cast<size_t>(m * N + n)] = acc;
    }
  return out;
}

// A with k weights as one group (grouped) or as k matmul launches.
GpuPlan plan(const Shape& sa, const Shape& sw, const Shape& so, int k, bool tb, bool grouped) {
  PlanBuilder b;
  int32_t a = b.input(0, GpuDType::BF16, sa);
  std::vector<int32_t> ws, outs;
  for (int i = 0; i < k; ++i) ws.push_back(b.input(1 + i, GpuDType::BF16, sw));
  for (int i = 0; i < k; ++i) outs.push_back(b.output(i, GpuDType::BF16, so));
  if (grouped) {
    std::vector<int32_t> in = {a};
    in.insert(in.end(), ws.begin(), ws.end());
    b.launch("matmul", "", in, outs, {0, tb ? 1 : 0, k});
  } else {
    for (int i = 0; i < k; ++i) b.launch("matmul", "", {a, ws[static_cast<size_t>(i)]}, {outs[static_cast<size_t>(i)]}, {0, tb ? 1 : 0});
  }
  return b.p;
}

// Runs the group and the separate GEMMs; each result within bf16's rounding
// of the float64 product (one rounding of an f32-accumulated dot product).
void check(const Shape& sa, int64_t K, int64_t N, int k, bool tb, int64_t misalign = 0) {
  Shape so = sa;
  so.back() = N;
  const Shape sw = tb ? Shape{N, K} : Shape{K, N};
  std::vector<Tensor> in = {random_bf16(sa, 7)};
  for (int i = 0; i < k; ++i) in.push_back(random_bf16(sw, 100 + static_cast<uint32_t>(i)));
  std::vector<std::pair<GpuDType, Shape>> outs(static_cast<size_t>(k), {GpuDType::BF16, so});
  RunOptions opt;
  opt.misalign = misalign;
  auto got = run(plan(sa, sw, so, k, tb, true), in, outs, opt);
  auto apart = run(plan(sa, sw, so, k, tb, false), in, outs, opt);
  ASSERT_EQ(got.size(), static_cast<size_t>(k));
  ASSERT_EQ(apart.size(), static_cast<size_t>(k));
  for (int i = 0; i < k; ++i) {
    const std::vector<double> want = reference(in[0], in[static_cast<size_t>(1 + i)], tb);
    double worst = 0, worst_apart = 0;
    for (size_t j = 0; j < want.size(); ++j) {
      // bf16 keeps 8 bits: half an ulp of the result plus the f32 sum's error.
      const double tol = std::ldexp(std::fabs(want[j]), -8) + 1e-5 * std::sqrt(static_cast<double>(K));
      worst = std::max(worst, std::fabs(got[static_cast<size_t>(i)].v[j] - want[j]) / tol);
      worst_apart = std::max(worst_apart, std::fabs(apart[static_cast<size_t>(i)].v[j] - want[j]) / tol);
    }
    EXPECT_LE(worst, 1.0) << "result " << i << " of the group, K " << K << " N " << N << (tb ? " transposed" : "");
    EXPECT_LE(worst_apart, 1.0) << "result " << i << " of the separate GEMMs";
  }
}

TEST(MatmulGroup, ThreeWeightsAgainstFloat64AndTheSeparateGemms) {
  REQUIRE_GPU();
  check({2, 33, 40}, 40, 24, 3, false);  // A's batch dims fold into its rows; odd M
}

TEST(MatmulGroup, TransposedWeightsAndTheMostWeights) {
  REQUIRE_GPU();
  check({64, 128}, 128, 72, 8, true);
  check({5, 16}, 16, 8, 2, false);
}

TEST(MatmulGroup, ElementAlignedPointers) {
  REQUIRE_GPU();
  check({17, 24}, 24, 40, 2, false, 2);  // every input 2 bytes past 16-byte alignment
}

TEST(MatmulGroup, AnEmptyInnerDimensionGivesZerosInEveryResult) {
  REQUIRE_GPU();
  std::vector<Tensor> in = {Tensor{GpuDType::BF16, {4, 0}, {}}, Tensor{GpuDType::BF16, {0, 3}, {}}, Tensor{GpuDType::BF16, {0, 3}, {}}};
  auto got = run(plan({4, 0}, {0, 3}, {4, 3}, 2, false, true), in, {{GpuDType::BF16, {4, 3}}, {GpuDType::BF16, {4, 3}}});
  ASSERT_EQ(got.size(), 2u);
  for (const Tensor& t : got)
    for (double x : t.v) EXPECT_EQ(x, 0.0);
}

}  // namespace
}  // namespace shapeml::cuda::test
