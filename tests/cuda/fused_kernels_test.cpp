// The fused kernels the planner's pattern pass chooses (rmsnorm, the causal
// softmax, gated; src/lower/gpu/fuse_patterns.h) and the bf16 GEMM
// epilogues, on a real GPU, against float64 loops computed here and, where
// the arithmetic is the same, against the unfused launches bit for bit.
// Without a GPU every test prints "skipped: no GPU".
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace shapeml::cuda::test {
namespace {

std::mt19937_64& gen() {
  static std::mt19937_64 g(std::random_device{}());
  return g;
}

double stored(double x, GpuDType d) { return d == GpuDType::F64 ? x : d == GpuDType::F32 ? static_cast<float>(x) : bf16_round(static_cast<float>(x)); }

Tensor uniform(GpuDType d, Shape s, double lo, double hi) {
  Tensor t{d, std::move(s), {}};
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.v.push_back(stored(u(gen()), d));
  return t;
}

// |got - want| <= tol * (|want| + scale) element by element; NaN where want is NaN.
void expect_close(const Tensor& got, const std::vector<double>& want, double tol, double scale, const std::string& what) {
  ASSERT_EQ(got.v.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 8; ++i) {
    double g = got.v[i], w = want[i];
    bool ok = std::isnan(w) ? std::isnan(g) : std::isinf(w) ? g == w : std::fabs(g - w) <= tol * (std::fabs(w) + scale);
    if (!ok) ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << w, ++bad;
  }
}

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.v.size(), b.v.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < a.v.size() && bad < 8; ++i) {
    bool same = (std::isnan(a.v[i]) && std::isnan(b.v[i])) || std::memcmp(&a.v[i], &b.v[i], sizeof(double)) == 0;
    if (!same) ADD_FAILURE() << what << ": element " << i << " fused " << a.v[i] << " unfused " << b.v[i], ++bad;
  }
}

double tol_of(GpuDType d) { return d == GpuDType::F64 ? 1e-13 : d == GpuDType::F32 ? 2e-6 : 8e-3; }

// ---- rmsnorm -------------------------------------------------------------

TEST(FusedKernels, RmsNormAgainstFloat64EveryDtypeRowLengthAndAlignment) {
  REQUIRE_GPU();
  // 16-byte loads (n a multiple of 4/8/2 elements, aligned) and scalar
  // loads (odd n, or inputs 4 bytes off); one warp to 1024 threads a row;
  // rows held in registers (up to 2048 packs: 2056 and 8200 leave threads
  // with one pack or none) and rows read twice (40000).
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64, GpuDType::BF16})
    for (const Shape& shape : {Shape{3, 5, 7}, Shape{512, 256}, Shape{7, 2048}, Shape{1, 1}, Shape{2, 40000}, Shape{9, 4096}, Shape{5, 2056},
                               Shape{3, 8200}})
      for (int64_t misalign : {0, 4}) {
        if (misalign && dt == GpuDType::F64) continue;  // 8-byte elements stay 8-byte aligned in this runner
        const int64_t n = shape.back(), rows = numel(shape) / n;
        Tensor x = uniform(dt, shape, -3, 3), g = uniform(dt, {n}, 0.5, 1.5);
        const double eps = stored(1e-5, dt);
        std::vector<double> want(x.v.size());
        for (int64_t r = 0; r < rows; ++r) {
          double ss = 0;
          for (int64_t j = 0; j < n; ++j) ss += x.v[r * n + j] * x.v[r * n + j];
          double inv = 1 / std::sqrt(ss / n + eps);
          for (int64_t j = 0; j < n; ++j) want[r * n + j] = x.v[r * n + j] * inv * g.v[j];
        }
        PlanBuilder b;
        int32_t px = b.input(0, dt, shape), pg = b.input(1, dt, {n}), out = b.output(0, dt, shape);
        b.launch("rmsnorm", "", {px, pg}, {out}, {}, eps);
        RunOptions o;
        o.misalign = misalign;
        auto r = run(b.p, {x, g}, {{dt, shape}}, o);
        ASSERT_EQ(r.size(), 1u);
        // bf16: the exact value rounded once (half an ulp, 2^-9) plus f32 statistics.
        expect_close(r[0], want, dt == GpuDType::BF16 ? 4.5e-3 : tol_of(dt), 0,
                     std::string("rmsnorm ") + plan::gpu_dtype_name(dt) + " n=" + std::to_string(n) + " misalign " + std::to_string(misalign));
      }
}

// ---- causal softmax --------------------------------------------------------

// Causal reference: column j of the row at position i (along axis -2) is
// -inf when j > i + offset.
Tensor causal_input(const Tensor& x, int64_t offset) {
  Tensor m = x;
  const int64_t n = x.shape.back(), rows = x.shape[x.shape.size() - 2];
  for (int64_t k = 0; k < m.numel(); ++k) {
    int64_t j = k % n, i = (k / n) % rows;
    if (j > i + offset) m.v[static_cast<size_t>(k)] = -INFINITY;
  }
  return m;
}

std::vector<double> softmax_rows(const Tensor& x, bool log) {
  const int64_t n = x.shape.back();
  std::vector<double> out(x.v.size());
  for (int64_t r = 0; r < x.numel() / n; ++r) {
    const double* p = &x.v[static_cast<size_t>(r * n)];
    double m = -INFINITY;
    for (int64_t j = 0; j < n; ++j) m = std::max(m, p[j]);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(p[j] - m);
    for (int64_t j = 0; j < n; ++j)
      out[static_cast<size_t>(r * n + j)] = std::isinf(m) ? NAN : log ? (p[j] - m) - std::log(sum) : std::exp(p[j] - m) / sum;
  }
  return out;
}

TEST(FusedKernels, CausalSoftmaxAgainstFloat64AndBitIdenticalToSelectThenSoftmax) {
  REQUIRE_GPU();
  // Rows of every launch shape (warp: 1, 7, 128, 512; block: 600, 3000;
  // online: 12000 for bf16/f64 and 20001), offsets 0 (causal), -1 (strict:
  // the first row is fully masked, NaN as PyTorch gives) and 3; the rows of
  // the mask (axis -2) not equal to the row length.
  struct Case {
    Shape shape;
    int64_t offset;
  };
  const std::vector<Case> cases = {{{2, 3, 1, 1}, 0},   {{2, 3, 7, 7}, 0},   {{4, 128, 128}, 0}, {{4, 128, 128}, -1}, {{2, 9, 512}, 3},
                                   {{3, 600, 600}, 0}, {{2, 5, 3000}, 2990}, {{2, 4, 12000}, 11990}, {{1, 3, 20001}, 19998}, {{2, 5, 5}, -1}};
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64, GpuDType::BF16})
    for (const Case& c : cases)
      for (const char* op : {"softmax", "log_softmax"}) {
        const bool log = std::string(op) == "log_softmax";
        Tensor x = uniform(dt, c.shape, -8, 8);
        std::vector<double> want = softmax_rows(causal_input(x, c.offset), log);
        const std::string what = std::string(op) + " " + plan::gpu_dtype_name(dt) + " row " + std::to_string(c.shape.back()) + " offset " +
                                 std::to_string(c.offset);
        PlanBuilder fb;
        int32_t in = fb.input(0, dt, c.shape), out = fb.output(0, dt, c.shape);
        fb.launch("softmax", op, {in}, {out}, {-1, c.offset}, 0, true);
        auto fused = run(fb.p, {x}, {{dt, c.shape}});
        ASSERT_EQ(fused.size(), 1u);
        expect_close(fused[0], want, dt == GpuDType::BF16 ? 1e-2 : tol_of(dt), log ? 1 : 1e-6, what);
        // The unfused launches the pattern replaces: iota, iota, compare,
        // fill -inf, select, softmax.
        const int64_t R = c.shape[c.shape.size() - 2], C = c.shape.back();
        const int64_t mask_bytes = (R * C * 4 + 255) / 256 * 256, bool_bytes = (R * C + 255) / 256 * 256;
        const int64_t scalar_at = 2 * mask_bytes + bool_bytes, sel_at = scalar_at + 256;
        PlanBuilder ub;
        int32_t uin = ub.input(0, dt, c.shape), uout = ub.output(0, dt, c.shape);
        int32_t i0 = ub.slot(GpuSlot::Kind::Temp, 0, GpuDType::I32, {R, C}, 0), i1 = ub.slot(GpuSlot::Kind::Temp, 0, GpuDType::I32, {R, C}, mask_bytes);
        int32_t cond = ub.slot(GpuSlot::Kind::Temp, 0, GpuDType::Bool, {R, C}, 2 * mask_bytes);
        int32_t ninf = ub.slot(GpuSlot::Kind::Temp, 0, dt, {}, scalar_at), sel = ub.slot(GpuSlot::Kind::Temp, 0, dt, c.shape, sel_at);
        ub.launch("iota", "", {}, {i0}, {0});
        ub.launch("iota", "", {}, {i1}, {1});
        if (c.offset == 0) {
          ub.launch("compare", "ge", {i0, i1}, {cond});
        } else if (c.offset == -1) {
          ub.launch("compare", "gt", {i0, i1}, {cond});
        } else {
          continue;  // no two-iota comparison says j <= i + 3
        }
        ub.launch("fill", "", {}, {ninf}, {}, -INFINITY);
        ub.launch("select", "", {cond, uin, ninf}, {sel});
        ub.launch("softmax", op, {sel}, {uout}, {-1});
        auto unfused = run(ub.p, {x}, {{dt, c.shape}});
        ASSERT_EQ(unfused.size(), 1u);
        expect_same_bits(fused[0], unfused[0], what + " fused vs unfused");
      }
}

// ---- gated ----------------------------------------------------------------

TEST(FusedKernels, GatedAgainstFloat64AndBitIdenticalToTheUnfusedLaunchesInF32AndF64) {
  REQUIRE_GPU();
  for (GpuDType dt : {GpuDType::F32, GpuDType::F64, GpuDType::BF16})
    for (const Shape& shape : {Shape{5}, Shape{512, 704}, Shape{3, 7, 11}, Shape{1, 1}})
      for (const char* act : {"silu", "gelu", "sigmoid"})
        for (int64_t misalign : {0, 4}) {
          if (misalign && dt == GpuDType::F64) continue;
          Tensor a = uniform(dt, shape, -6, 6), bt = uniform(dt, shape, -2, 2);
          std::vector<double> want(a.v.size());
          for (size_t i = 0; i < want.size(); ++i) {
            double x = a.v[i];
            double f = std::string(act) == "silu" ? x / (1 + std::exp(-x)) : std::string(act) == "gelu" ? 0.5 * x * std::erfc(-x / std::sqrt(2.0))
                                                                                                   : 1 / (1 + std::exp(-x));
            want[i] = f * bt.v[i];
          }
          const std::string what = std::string("gated ") + act + " " + plan::gpu_dtype_name(dt) + " n=" + std::to_string(numel(shape)) +
                                   " misalign " + std::to_string(misalign);
          RunOptions o;
          o.misalign = misalign;
          PlanBuilder fb;
          int32_t pa = fb.input(0, dt, shape), pb = fb.input(1, dt, shape), out = fb.output(0, dt, shape);
          fb.launch("gated", act, {pa, pb}, {out});
          auto fused = run(fb.p, {a, bt}, {{dt, shape}}, o);
          ASSERT_EQ(fused.size(), 1u);
          // f32: the activation's own error (erfcf, expf: a few ulp) and two roundings.
          expect_close(fused[0], want, dt == GpuDType::BF16 ? 4.5e-3 : dt == GpuDType::F32 ? 4e-6 : 1e-14, 1e-30, what);
          if (dt == GpuDType::BF16) continue;  // bf16 rounds once fused, twice unfused
          PlanBuilder ub;
          int32_t ua = ub.input(0, dt, shape), ubb = ub.input(1, dt, shape), uout = ub.output(0, dt, shape);
          int32_t t = ub.slot(GpuSlot::Kind::Temp, 0, dt, shape, 0);
          ub.launch("unary", act, {ua}, {t});
          ub.launch("binary", "mul", {t, ubb}, {uout});
          auto unfused = run(ub.p, {a, bt}, {{dt, shape}}, o);
          ASSERT_EQ(unfused.size(), 1u);
          expect_same_bits(fused[0], unfused[0], what + " fused vs unfused");
        }
}

// ---- bf16 GEMM epilogues ----------------------------------------------------

TEST(FusedKernels, Bf16MatmulWithAlphaResidualAndBiasEpilogues) {
  REQUIRE_GPU();
  // out = alpha A B (+ C of the output's shape | + bias [N] on every row),
  // f32 accumulation, one rounding to bf16: within a few bf16 ulps of the
  // float64 product of the bf16 inputs.
  const GpuDType dt = GpuDType::BF16;
  for (const auto& [M, K, N] : {std::tuple<int64_t, int64_t, int64_t>{7, 33, 5}, {128, 256, 64}, {512, 64, 96}})
    for (int epi = 0; epi < 3; ++epi)
      for (double alpha : {0.0, 0.125}) {
        Tensor a = uniform(dt, {M, K}, -1, 1), w = uniform(dt, {K, N}, -1, 1);
        Tensor c = epi == 1 ? uniform(dt, {M, N}, -2, 2) : uniform(dt, {N}, -2, 2);
        std::vector<double> want(static_cast<size_t>(M * N));
        double scale = 0;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double s = 0, sa = 0;
            for (int64_t k = 0; k < K; ++k) s += a.v[i * K + k] * w.v[k * N + j], sa += std::fabs(a.v[i * K + k] * w.v[k * N + j]);
            double y = (alpha == 0 ? 1 : alpha) * s;
            if (epi == 1) y += c.v[i * N + j];
            if (epi == 2) y += c.v[j];
            want[i * N + j] = y;
            scale = std::max(scale, sa);
          }
        PlanBuilder b;
        int32_t pa = b.input(0, dt, {M, K}), pw = b.input(1, dt, {K, N});
        std::vector<int32_t> ins = {pa, pw};
        std::vector<Tensor> vals = {a, w};
        if (epi > 0) ins.push_back(b.input(2, dt, c.shape)), vals.push_back(c);
        int32_t out = b.output(0, dt, {M, N});
        b.launch("matmul", "", ins, {out}, {}, alpha, epi == 1);
        auto r = run(b.p, vals, {{dt, {M, N}}});
        ASSERT_EQ(r.size(), 1u);
        expect_close(r[0], want, 8e-3, 2e-2 * scale + 1e-3,
                     "bf16 matmul " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) + " epilogue " + std::to_string(epi) +
                         " alpha " + std::to_string(alpha));
      }
}

// ---- merged projections (merge_projections.h) -------------------------------

// Equal pieces concatenated along either axis take the grouped copy (one
// launch); a view at an offset reads the bytes from there.
TEST(FusedKernels, ConcatOfEqualPiecesAndViewsAtOffsets) {
  REQUIRE_GPU();
  for (GpuDType dt : {GpuDType::F32, GpuDType::BF16, GpuDType::F64})
    for (int64_t axis : {0, 1})
      for (int pieces : {2, 3, 4}) {
        const Shape ps = {5, 7};
        Shape os = ps;
        os[static_cast<size_t>(axis)] *= pieces;
        std::vector<Tensor> in;
        PlanBuilder b;
        std::vector<int32_t> ins;
        for (int k = 0; k < pieces; ++k) in.push_back(uniform(dt, ps, -4, 4)), ins.push_back(b.input(k, dt, ps));
        int32_t out = b.output(0, dt, os);
        b.launch("concat", "", ins, {out}, {axis});
        auto r = run(b.p, in, {{dt, os}});
        ASSERT_EQ(r.size(), 1u);
        std::vector<double> want(static_cast<size_t>(numel(os)));
        for (int k = 0; k < pieces; ++k)
          for (int64_t i = 0; i < 5; ++i)
            for (int64_t j = 0; j < 7; ++j) {
              int64_t oi = axis == 0 ? k * 5 + i : i, oj = axis == 1 ? k * 7 + j : j;
              want[static_cast<size_t>(oi * os[1] + oj)] = in[static_cast<size_t>(k)].v[static_cast<size_t>(i * 7 + j)];
            }
        expect_close(r[0], want, 0, 0, std::string("concat of ") + std::to_string(pieces) + " along " + std::to_string(axis));
      }
  // out = -(x[1]) through a view of x at the offset of x[1].
  Tensor x = uniform(GpuDType::F32, {3, 4, 6}, -2, 2);
  PlanBuilder b;
  int32_t px = b.input(0, GpuDType::F32, {3, 4, 6});
  int32_t v = b.slot(GpuSlot::Kind::View, px, GpuDType::F32, {4, 6}, 24 * 4);
  int32_t out = b.output(0, GpuDType::F32, {4, 6});
  b.launch("unary", "neg", {v}, {out});
  auto r = run(b.p, {x}, {{GpuDType::F32, {4, 6}}});
  ASSERT_EQ(r.size(), 1u);
  std::vector<double> want;
  for (int i = 24; i < 48; ++i) want.push_back(-x.v[static_cast<size_t>(i)]);
  expect_close(r[0], want, 0, 0, "a view at an offset");
}

// ---- cuBLASLt algorithm choice by timing (lt_tuning.h) ------------------------

// Two plans with the same GEMM (the small block's gate projection, where the
// heuristic's first choice is a split-K algorithm) compute it with the same
// algorithm: the same bits, and both against float64.
TEST(FusedKernels, TheTimedGemmChoiceIsTheSameInTwoPlansAndAccurate) {
  REQUIRE_GPU();
  // Opt-in (lt_tuning.h), read at every plan_create; off again however the test ends.
  struct Tuning {
    Tuning() { setenv("SHAPEML_CUBLASLT_TUNING", "on", 1); }
    ~Tuning() { unsetenv("SHAPEML_CUBLASLT_TUNING"); }
  } tuning;
  const int64_t M = 512, K = 256, N = 704;
  Tensor a = uniform(GpuDType::F32, {M, K}, -1, 1), w = uniform(GpuDType::F32, {K, N}, -1, 1);
  std::vector<double> want(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += a.v[i * K + k] * w.v[k * N + j];
      want[i * N + j] = s;
    }
  std::vector<Tensor> got;
  for (int plan = 0; plan < 2; ++plan) {
    PlanBuilder b;
    int32_t pa = b.input(0, GpuDType::F32, {M, K}), pw = b.input(1, GpuDType::F32, {K, N}), out = b.output(0, GpuDType::F32, {M, N});
    if (plan == 1) b.launch("fill", "", {}, {out}, {}, 7.0);  // another plan text, the same GEMM
    b.launch("matmul", "", {pa, pw}, {out});
    auto r = run(b.p, {a, w}, {{GpuDType::F32, {M, N}}});
    ASSERT_EQ(r.size(), 1u);
    expect_close(r[0], want, 2e-5, 1.0, "gate GEMM, plan " + std::to_string(plan));  // sums of 256 terms of magnitude <= 1
    got.push_back(r[0]);
  }
  expect_same_bits(got[0], got[1], "the same GEMM in two plans");
}

}  // namespace
}  // namespace shapeml::cuda::test
