// 3xTF32 matmuls (lower/gpu/split_fp32_matmuls.h, the `tf32_split` kernel):
// the split parts bit for bit against a host split, and whole GEMMs run
// through the pass against float64 loops: an order of magnitude more
// accurate than TF32 (not fp32's accuracy: the tensor cores' accumulation
// truncates), the epilogues kept, infinities and NaNs where fp32 puts them. Needs a GPU;
// skips without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"
#include "lower/gpu/split_fp32_matmuls.h"
#include "plan/layout.h"
#include "plan/verify.h"

namespace shapeml::cuda::test {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The host's statement of plan.h's rule, written from the definition.
float hi_of(float x) {
  if (!std::isfinite(x)) return x;
  uint32_t r = (bits(x) + 0x1000u) & 0xffffe000u;
  float h = from_bits(r);
  return std::isinf(h) ? from_bits(bits(x) & 0xffffe000u) : h;
}
void parts(float x, float& hi, float& hi_f, float& lo_f) {
  hi = hi_of(x);
  hi_f = std::isfinite(x) ? hi : 0.f;
  lo_f = std::isfinite(x) ? hi_of(x - hi) : 0.f;
}

Tensor random_f32(Shape s, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t{GpuDType::F32, s, {}};
  for (int64_t i = 0; i < t.numel(); ++i) t.v.push_back(static_cast<float>(u(rng)));
  return t;
}

// out [batch.., M, N] = A B with A stored [.., M, K] (or [.., K, M] when ta),
// B [.., K, N] (or [.., N, K] when tb); batch dims equal or B unbatched.
std::vector<double> matmul_ref(const Tensor& a, const Tensor& b, bool ta, bool tb, int64_t& M, int64_t& N, int64_t& K) {
  const size_t ra = a.shape.size(), rb = b.shape.size();
  M = ta ? a.shape[ra - 1] : a.shape[ra - 2], K = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  N = tb ? b.shape[rb - 2] : b.shape[rb - 1];
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < ra; ++i) batch *= a.shape[i];
  const bool b_batched = rb > 2;
  std::vector<double> out(static_cast<size_t>(batch * M * N));
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          double x = a.v[static_cast<size_t>(z * M * K + (ta ? k * M + m : m * K + k))];
          double y = b.v[static_cast<size_t>((b_batched ? z * K * N : 0) + (tb ? n * K + k : k * N + n))];
          acc += x * y;
        }
        out[static_cast<size_t>((z * M + m) * N + n)] = acc;
      }
  return out;
}

double rel_frobenius(const std::vector<double>& got, const std::vector<double>& want) {
  double se = 0, sr = 0;
  for (size_t i = 0; i < want.size(); ++i) se += (got[i] - want[i]) * (got[i] - want[i]), sr += want[i] * want[i];
  return std::sqrt(se / std::max(sr, 1e-300));
}

// One matmul launch (op "" or "tf32"), optionally passed through the 3xTF32 pass.
GpuPlan matmul_plan(Shape sa, Shape sb, Shape so, bool ta, bool tb, const char* op, bool split, int extra = 0, double alpha = 0) {
  PlanBuilder b;
  int32_t pa = b.input(0, GpuDType::F32, sa), pb = b.input(1, GpuDType::F32, sb);
  std::vector<int32_t> ins = {pa, pb};
  if (extra == 1) ins.push_back(b.input(2, GpuDType::F32, {so.back()}));  // bias
  if (extra == 2) ins.push_back(b.input(2, GpuDType::F32, so));           // residual
  int32_t out = b.output(0, GpuDType::F32, so);
  b.launch("matmul", op, ins, {out}, {ta ? 1 : 0, tb ? 1 : 0}, alpha, extra == 2);
  if (split) {
    EXPECT_GT(lower::gpu::split_fp32_matmuls(b.p, 1), 0);
    plan::layout_workspace(b.p);
    EXPECT_EQ(plan::verify_message(b.p, plan::PlanStage::LaidOut), "");
  }
  return b.p;
}

}  // namespace

TEST(Tf32Split, PartsAreTheHostSplitBitForBit) {
  REQUIRE_GPU();
  const float specials[] = {0.f, -0.f, 1.f, -1.f, 1.0001f, 0.99999f, 3.14159265f, 1e-30f, 1e30f, std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(), 1e-40f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), from_bits(0x3f801000u) /* a tie */, from_bits(0x3f803000u)};
  // [2, 5, 7]: odd blocks (the scalar path); [2, 8, 16]: 16-byte packs.
  for (Shape shape : {Shape{2, 5, 7}, Shape{2, 8, 16}})
    for (int64_t axis : {int64_t{1}, int64_t{2}})
      for (const char* role : {"lhs", "rhs"}) {
        Tensor x = random_f32(shape, 3, -4, 4);
        for (size_t i = 0; i < std::size(specials); ++i) x.v[i * 3] = specials[i];
        Shape so = shape;
        so[static_cast<size_t>(axis)] *= 3;
        PlanBuilder b;
        int32_t in = b.input(0, GpuDType::F32, shape), out = b.output(0, GpuDType::F32, so);
        b.launch("tf32_split", role, {in}, {out}, {axis});
        auto r = run(b.p, {x}, {{GpuDType::F32, so}});
        ASSERT_EQ(r.size(), 1u);
        int64_t inner = 1;
        for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
        const int64_t n = shape[static_cast<size_t>(axis)], blk = n * inner;
        for (int64_t i = 0; i < x.numel(); ++i) {
          float hi, hi_f, lo_f;
          parts(static_cast<float>(x.v[static_cast<size_t>(i)]), hi, hi_f, lo_f);
          const float want[3] = {hi, std::string(role) == "lhs" ? hi_f : lo_f, std::string(role) == "lhs" ? lo_f : hi_f};
          const int64_t o = i / blk, at = o * 3 * blk + (i - o * blk);
          for (int j = 0; j < 3; ++j) {
            float got = static_cast<float>(r[0].v[static_cast<size_t>(at + j * blk)]);
            EXPECT_EQ(bits(got), bits(want[j])) << role << " axis " << axis << " element " << i << " (" << x.v[static_cast<size_t>(i)]
                                                << ") part " << j;
          }
          // hi carries the top 11 significant bits; hi + lo is x to ~2^-22.
          if (std::isfinite(x.v[static_cast<size_t>(i)]) && std::fabs(x.v[static_cast<size_t>(i)]) > 1e-30) {
            EXPECT_EQ(bits(hi) & 0x1fffu, 0u);
            EXPECT_LE(std::fabs((double)hi + lo_f - x.v[static_cast<size_t>(i)]), std::fabs(x.v[static_cast<size_t>(i)]) * 0x1p-21);
          }
        }
      }
}

TEST(Tf32Split, MatmulsAreAnOrderOfMagnitudeMoreAccurateThanTf32) {
  REQUIRE_GPU();
  struct Case {
    Shape a, b;
    bool ta, tb;
    int extra;  // 0 none, 1 bias, 2 residual
    double alpha;
  };
  const std::vector<Case> cases = {
      {{64, 96}, {96, 80}, false, false, 0, 0},       {{2, 33, 257}, {257, 71}, false, false, 1, 0},  // odd sizes, bias
      {{3, 40, 64}, {3, 64, 24}, false, false, 0, 0}, {{3, 64, 40}, {3, 24, 64}, true, true, 2, 0},   // batched, transposed, residual
      {{128, 512}, {512, 256}, false, false, 0, 0.125},                                                 // alpha
  };
  for (const Case& c : cases) {
    Tensor a = random_f32(c.a, 11), w = random_f32(c.b, 12);
    int64_t M, N, K;
    std::vector<double> want = matmul_ref(a, w, c.ta, c.tb, M, N, K);
    Shape so(c.a.begin(), c.a.end() - 2);
    so.push_back(M);
    so.push_back(N);
    std::vector<Tensor> ins = {a, w};
    const double alpha = c.alpha == 0 ? 1 : c.alpha;
    for (double& v : want) v *= alpha;
    if (c.extra == 1) {
      ins.push_back(random_f32({N}, 13));
      for (size_t i = 0; i < want.size(); ++i) want[i] += ins[2].v[i % static_cast<size_t>(N)];
    } else if (c.extra == 2) {
      ins.push_back(random_f32(so, 14));
      for (size_t i = 0; i < want.size(); ++i) want[i] += ins[2].v[i];
    }
    const std::string what = "[" + std::to_string(M) + " x " + std::to_string(K) + "] x [" + std::to_string(K) + " x " + std::to_string(N) + "]";
    auto three = run(matmul_plan(c.a, c.b, so, c.ta, c.tb, "", true, c.extra, c.alpha), ins, {{GpuDType::F32, so}});
    auto simt = run(matmul_plan(c.a, c.b, so, c.ta, c.tb, "", false, c.extra, c.alpha), ins, {{GpuDType::F32, so}});
    auto tf32 = run(matmul_plan(c.a, c.b, so, c.ta, c.tb, "tf32", false, c.extra, c.alpha), ins, {{GpuDType::F32, so}});
    ASSERT_EQ(three.size(), 1u);
    const double e3 = rel_frobenius(three[0].v, want), ef = rel_frobenius(simt[0].v, want), et = rel_frobenius(tf32[0].v, want);
    // fp32 GEMMs land near 1e-7 here, TF32 near 3e-4, 3xTF32 (truncating accumulation, K <= 512) near 1e-6.
    EXPECT_LT(e3, 1e-5) << what << " (fp32 " << ef << ", tf32 " << et << ")";
    EXPECT_GT(et, 10 * e3) << what << ": 3xTF32 is not an order of magnitude more accurate than TF32";
  }
}

TEST(Tf32Split, InfinitiesAndNaNsLandWhereFp32PutsThem) {
  REQUIRE_GPU();
  // A [4, 16] with inf, -inf and NaN in rows 1..3; B [16, 8] has one inf in
  // column 5 and one exactly representable column (lo = 0) in column 2.
  const float inf = std::numeric_limits<float>::infinity();
  Tensor a = random_f32({4, 16}, 21, 0.5, 1.5), w = random_f32({16, 8}, 22, 0.5, 1.5);
  a.v[1 * 16 + 3] = inf;
  a.v[2 * 16 + 7] = -inf;
  a.v[3 * 16 + 0] = std::numeric_limits<float>::quiet_NaN();
  for (int k = 0; k < 16; ++k) w.v[static_cast<size_t>(k * 8 + 2)] = 1.0 + k / 8.0;
  w.v[9 * 8 + 5] = inf;
  int64_t M, N, K;
  std::vector<double> want = matmul_ref(a, w, false, false, M, N, K);
  auto r = run(matmul_plan({4, 16}, {16, 8}, {4, 8}, false, false, "", true), {a, w}, {{GpuDType::F32, {4, 8}}});
  ASSERT_EQ(r.size(), 1u);
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = r[0].v[i], x = want[i];
    if (std::isnan(x)) EXPECT_TRUE(std::isnan(g)) << "element " << i << ": " << g;
    else if (std::isinf(x)) EXPECT_EQ(g, x) << "element " << i;
    else EXPECT_NEAR(g, x, 1e-5 * std::fabs(x)) << "element " << i;
  }
  // The cases that distinguish: inf * (a column with lo = 0) stays inf, and -inf meets the +inf of column 5 only in row 2 (NaN there).
  EXPECT_EQ(r[0].v[1 * 8 + 2], inf);
  EXPECT_EQ(r[0].v[2 * 8 + 2], -inf);
  EXPECT_EQ(r[0].v[0 * 8 + 5], inf);
}

}  // namespace shapeml::cuda::test
