// The fused attention launch (src/cuda/executor/attention.cu,
// plan/attention_launch.h) on a real GPU against float64 loops computed here:
// odd lengths (not multiples of the 64-row tiles), one query row, head
// dimensions 20 to 256, causal masks with offsets (fully masked rows are
// NaN, as the unfused softmax makes them), grouped-query heads, strided
// operands (the layouts the planner gives it), and unaligned pointers.
// Without a GPU every test prints "skipped: no GPU".
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda/executor/cudnn_attention.h"
#include "plan/attention_launch.h"
#include "test_util.h"
#include "plan/verify.h"

namespace shapeml::cuda::test {
namespace {

using plan::AttentionAccess;
using plan::AttentionLayout;

std::mt19937_64& gen() {
  static std::mt19937_64 g(20261201);
  return g;
}

// Values in [-1, 1) stored exactly in `dt` (bf16 or f32).
Tensor uniform(Shape s, GpuDType dt = GpuDType::BF16) {
  Tensor t{dt, std::move(s), {}};
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float x = static_cast<float>(u(gen()));
    t.v.push_back(dt == GpuDType::BF16 ? bf16_round(x) : x);
  }
  return t;
}

double at(const Tensor& t, const AttentionAccess& a, int64_t b, int64_t h, int64_t s, int64_t d) {
  return t.v[static_cast<size_t>(a.offset + b * a.batch + h * a.head + s * a.row + d)];
}

// o[b, h, i, :] in float64, laid out dense [B, H, Sq, Dh].
std::vector<double> reference(const AttentionLayout& L, double scale, bool causal, const Tensor& q, const Tensor& k, const Tensor& v) {
  std::vector<double> o(static_cast<size_t>(L.batch * L.heads * L.sq * L.dh));
  std::vector<double> p(static_cast<size_t>(L.sk));
  for (int64_t b = 0; b < L.batch; ++b)
    for (int64_t h = 0; h < L.heads; ++h)
      for (int64_t i = 0; i < L.sq; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < L.sk; ++j) {
          double s = 0;
          for (int64_t d = 0; d < L.dh; ++d) s += at(q, L.q, b, h, i, d) * at(k, L.k, b, h / L.group, j, d);
          s *= scale;
          if (causal && j > i + L.offset) s = -INFINITY;
          p[static_cast<size_t>(j)] = s;
          mx = std::max(mx, s);
        }
        double sum = 0;
        for (double& x : p) sum += (x = std::exp(x - mx));  // all -inf: exp(NaN) = NaN, as PyTorch's softmax
        for (int64_t d = 0; d < L.dh; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < L.sk; ++j) acc += p[static_cast<size_t>(j)] / sum * at(v, L.v, b, h / L.group, j, d);
          o[static_cast<size_t>(((b * L.heads + h) * L.sq + i) * L.dh + d)] = acc;
        }
      }
  return o;
}

AttentionAccess dense_access(int64_t heads, int64_t rows, int64_t dh) { return {0, heads * rows * dh, rows * dh, dh}; }

// bf16 storage of the output and of the probabilities (rounded to bf16
// before the second product, as every flash kernel does): a few 2^-9
// relative, against values of order 0.1 to 1. f32: fp32 arithmetic
// throughout, a few 2^-24 per accumulated term.
// TF32 (op "tf32"): q, k, v and the probabilities rounded to 10-bit
// mantissas (2^-11 relative each) before the products.
void expect_close(const Tensor& got, const std::vector<double>& want, const std::string& what, bool tf32 = false) {
  ASSERT_EQ(got.v.size(), want.size()) << what;
  const double tol = tf32 ? 3e-3 : got.dt == GpuDType::F32 ? 1e-5 : 8e-3;
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 8; ++i) {
    const double g = got.v[i], w = want[i];
    const bool ok = std::isnan(w) ? std::isnan(g) : std::fabs(g - w) <= tol * (std::fabs(w) + 0.5);
    if (!ok) ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << w, ++bad;
  }
}

struct Case {
  int64_t batch, heads, group, sq, sk, dh;
  bool causal;
  int64_t offset;
};

std::string name(const Case& c) {
  return "B" + std::to_string(c.batch) + " H" + std::to_string(c.heads) + " G" + std::to_string(c.group) + " Sq" + std::to_string(c.sq) + " Sk" +
         std::to_string(c.sk) + " Dh" + std::to_string(c.dh) + (c.causal ? " causal" + std::to_string(c.offset) : "");
}

// q, k, v and o dense [B, H(kv), S, Dh], one plan, one launch.
void run_dense(const Case& c, int64_t misalign = 0, GpuDType dt = GpuDType::BF16, const std::string& op = "", const std::string& library = "shapeml") {
  AttentionLayout L;
  L.batch = c.batch, L.heads = c.heads, L.group = c.group, L.sq = c.sq, L.sk = c.sk, L.dh = c.dh, L.offset = c.offset;
  const int64_t hkv = c.heads / c.group;
  L.q = L.o = dense_access(c.heads, c.sq, c.dh);
  L.k = L.v = dense_access(hkv, c.sk, c.dh);
  const double scale = 1 / std::sqrt(static_cast<double>(c.dh));
  PlanBuilder b;
  int32_t q = b.input(0, dt, {c.batch, c.heads, c.sq, c.dh});
  int32_t k = b.input(1, dt, {c.batch, hkv, c.sk, c.dh});
  int32_t v = b.input(2, dt, {c.batch, hkv, c.sk, c.dh});
  int32_t o = b.output(0, dt, {c.batch, c.heads, c.sq, c.dh});
  b.launch("attention", op, {q, k, v}, {o}, L.to_ints(), scale, c.causal);
  b.p.launches.back().library = library;
  ASSERT_EQ(shapeml::plan::verify_message(b.p), "");
  Tensor tq = uniform({c.batch, c.heads, c.sq, c.dh}, dt), tk = uniform({c.batch, hkv, c.sk, c.dh}, dt), tv = uniform({c.batch, hkv, c.sk, c.dh}, dt);
  RunOptions opt;
  opt.misalign = misalign;
  auto out = run(b.p, {tq, tk, tv}, {{dt, {c.batch, c.heads, c.sq, c.dh}}}, opt);
  ASSERT_EQ(out.size(), 1u);
  expect_close(out[0], reference(L, scale, c.causal, tq, tk, tv), name(c) + (misalign ? " misaligned" : "") + " " + gpu_dtype_name(dt) + " " + op + " " + library,
               op == "tf32");
}

TEST(Attention, OddLengthsAndEveryHeadDimensionAgainstFloat64) {
  REQUIRE_GPU();
  for (const Case& c : std::vector<Case>{
           {2, 3, 1, 77, 77, 64, true, 0},     // not a multiple of the 64-row tiles
           {1, 2, 1, 1, 1, 64, true, 0},       // S = 1
           {2, 2, 1, 65, 65, 40, true, 0},     // head dimension 40 (padded to 64)
           {1, 2, 1, 130, 130, 128, true, 0},  // the large block's head dimension
           {1, 1, 1, 70, 70, 256, true, 0},    // the largest; 32-key tiles
           {2, 2, 1, 33, 129, 32, false, 0},   // no mask, Sq != Sk
           {1, 2, 1, 19, 19, 20, true, 0},     // dh % 8 != 0: element-wise tile loads
       })
    run_dense(c);
}

// Enough 128-row blocks to fill the device: the kernel with two m-tiles a
// warp (head dimensions 64 and 128).
TEST(Attention, ManyHeadsTakeTheTwoTileKernel) {
  REQUIRE_GPU();
  run_dense({4, 36, 1, 200, 200, 64, true, 0});
  run_dense({2, 34, 2, 150, 150, 128, true, 0});
  run_dense({2, 34, 1, 131, 131, 128, false, 0});
}

// Causal row tiles paired in one block (a long and a short one; the middle
// tile of an odd count alone) when the blocks are more than a wave on the
// device's SMs (132 on the H200): one and two m-tiles a warp, odd and even
// tile counts, and a key offset.
TEST(Attention, CausalRowTilesPairedAcrossTheWave) {
  REQUIRE_GPU();
  run_dense({2, 16, 1, 540, 540, 64, true, 0});   // 9 tiles of 64 rows: one m-tile, paired
  run_dense({2, 16, 1, 600, 600, 128, true, 0});  // 10 tiles of 64 rows
  run_dense({2, 40, 1, 300, 300, 64, true, 0});   // 3 tiles of 128 rows: two m-tiles, paired
  run_dense({2, 16, 2, 520, 530, 64, true, 10});  // keys ahead of the queries; grouped heads
}

TEST(Attention, CausalOffsetsDecodeRowsAndFullyMaskedRows) {
  REQUIRE_GPU();
  run_dense({2, 2, 1, 1, 37, 64, true, 36});   // a decode step: one query row against 37 cached keys
  run_dense({1, 2, 1, 5, 200, 64, true, 195}); // the last 5 rows of a 200-long prefix
  run_dense({1, 1, 1, 70, 70, 64, true, -1});  // j < i: row 0 sees nothing (NaN), like the unfused softmax
  run_dense({1, 1, 1, 9, 9, 64, true, -100});  // every row masked: all NaN
}

TEST(Attention, GroupedQueryHeadsReadTheirSharedKeyValueHead) {
  REQUIRE_GPU();
  run_dense({2, 8, 4, 50, 50, 64, true, 0});
  run_dense({1, 6, 3, 66, 66, 128, false, 0});
}

TEST(Attention, UnalignedPointersTakeTheElementWisePath) {
  REQUIRE_GPU();
  run_dense({1, 2, 1, 70, 70, 64, true, 0}, /*misalign=*/2);
}

// The layouts the planner gives the launch: q, k and v read in place from
// one merged projection [B, S, 3, H, Dh], o written as [B, S, H, Dh].
void run_merged_projection(GpuDType dt, const std::string& op = "", const std::string& library = "shapeml") {
  const int64_t B = 2, S = 67, H = 3, Dh = 64;
  AttentionLayout L;
  L.batch = B, L.heads = H, L.sq = L.sk = S, L.dh = Dh;
  const int64_t row = 3 * H * Dh;
  L.q = {0, S * row, Dh, row};
  L.k = {H * Dh, S * row, Dh, row};
  L.v = {2 * H * Dh, S * row, Dh, row};
  L.o = {0, S * H * Dh, Dh, H * Dh};
  PlanBuilder b;
  int32_t qkv = b.input(0, dt, {B * S, row});
  int32_t o = b.output(0, dt, {B, S, H, Dh});
  b.launch("attention", op, {qkv, qkv, qkv}, {o}, L.to_ints(), 0.125, true);
  b.p.launches.back().library = library;
  ASSERT_EQ(shapeml::plan::verify_message(b.p), "");
  Tensor t = uniform({B * S, row}, dt);
  auto out = run(b.p, {t}, {{dt, {B, S, H, Dh}}});
  ASSERT_EQ(out.size(), 1u);
  // The reference is [B, H, S, Dh]; the launch wrote [B, S, H, Dh].
  std::vector<double> want = reference(L, 0.125, true, t, t, t), got_bhsd(want.size());
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < Dh; ++d)
          got_bhsd[static_cast<size_t>(((bb * H + h) * S + s) * Dh + d)] = out[0].v[static_cast<size_t>(((bb * S + s) * H + h) * Dh + d)];
  expect_close(Tensor{dt, {B, H, S, Dh}, got_bhsd}, want, std::string("merged projection ") + gpu_dtype_name(dt) + " " + op, op == "tf32");
}

TEST(Attention, StridedOperandsOfTheMergedProjectionAndTheHeadMerge) {
  REQUIRE_GPU();
  run_merged_projection(GpuDType::BF16);
}

// The f32 kernel (attention_f32.cu): the same shapes and masks against the
// same float64 loops, at fp32 accuracy.
TEST(AttentionF32, OddLengthsHeadDimensionsMasksAndGroupsAgainstFloat64) {
  REQUIRE_GPU();
  for (const Case& c : std::vector<Case>{
           {2, 3, 1, 77, 77, 64, true, 0},      // not a multiple of the 16-row and 32-key tiles
           {1, 2, 1, 1, 1, 64, true, 0},        // S = 1
           {2, 2, 1, 65, 65, 40, true, 0},      // head dimension 40 (padded to 64)
           {1, 2, 1, 130, 130, 128, true, 0},   // the largest f32 head dimension
           {2, 2, 1, 33, 129, 32, false, 0},    // no mask, Sq != Sk
           {1, 2, 1, 19, 19, 20, true, 0},      // dh % 8 != 0
           {4, 4, 1, 128, 128, 64, true, 0},    // the small block's attention
           {2, 2, 1, 1, 37, 64, true, 36},      // a decode step against 37 cached keys
           {1, 1, 1, 70, 70, 64, true, -1},     // row 0 sees nothing: NaN
           {1, 1, 1, 9, 9, 64, true, -100},     // every row masked: all NaN
           {2, 8, 4, 50, 50, 64, true, 0},      // grouped-query heads
           {1, 6, 3, 66, 66, 128, false, 0},
           // beyond 256 keys: the register-tiled kernel (attention_f32_tiled.cu)
           {1, 2, 1, 300, 300, 64, true, 0},    // not a multiple of its 64-row and 64-key tiles
           {2, 3, 1, 257, 520, 128, false, 0},  // no mask, Sq != Sk
           {1, 2, 1, 512, 512, 128, true, 0},   // the large block's attention (per head)
           {1, 4, 2, 130, 700, 40, true, 570},  // grouped heads, head dimension 40, an offset
           {1, 1, 1, 70, 300, 64, true, -1},    // row 0 sees nothing: NaN
           {1, 2, 1, 100, 260, 20, true, 0},    // dh % 4 != 0: element-wise loads
           {2, 2, 1, 1, 400, 64, true, 399},    // one row (the planner keeps GEMMs there; the kernel still serves it)
       })
    run_dense(c, 0, GpuDType::F32);
  run_dense({1, 2, 1, 70, 70, 64, true, 0}, /*misalign=*/4, GpuDType::F32);  // 4-byte aligned pointers
  run_dense({1, 2, 1, 100, 300, 64, true, 0}, /*misalign=*/4, GpuDType::F32);
  run_merged_projection(GpuDType::F32);
}

// The TF32 kernel (attention_tf32.cu, op "tf32"): the same cases at TF32
// accuracy, plus the lengths of the large block (several 32- and 64-key
// tiles, causal row tiles in reverse order).
TEST(AttentionTf32, OddLengthsHeadDimensionsMasksAndGroupsAgainstFloat64) {
  REQUIRE_GPU();
  for (const Case& c : std::vector<Case>{
           {2, 3, 1, 77, 77, 64, true, 0},      // not a multiple of the 64-row and 64-key tiles
           {1, 2, 1, 1, 1, 64, true, 0},        // S = 1
           {2, 2, 1, 65, 65, 40, true, 0},      // head dimension 40 (padded to 64)
           {1, 2, 1, 130, 130, 128, true, 0},   // the largest f32 head dimension, 32-key tiles
           {2, 2, 1, 33, 129, 32, false, 0},    // no mask, Sq != Sk
           {1, 2, 1, 19, 19, 20, true, 0},      // dh % 4 == 0 but not 8: padded to 32
           {1, 2, 1, 19, 19, 18, true, 0},      // dh % 4 != 0: the element-wise loads
           {4, 4, 1, 128, 128, 64, true, 0},    // the small block's attention
           {1, 4, 1, 512, 512, 128, true, 0},   // the large block's lengths and head dimension
           {2, 2, 1, 1, 37, 64, true, 36},      // a decode step against 37 cached keys
           {1, 1, 1, 70, 70, 64, true, -1},     // row 0 sees nothing: NaN
           {1, 1, 1, 9, 9, 64, true, -100},     // every row masked: all NaN
           {2, 8, 4, 50, 50, 64, true, 0},      // grouped-query heads
           {1, 6, 3, 66, 300, 128, false, 0},
       })
    run_dense(c, 0, GpuDType::F32, "tf32");
  run_dense({1, 2, 1, 70, 70, 64, true, 0}, /*misalign=*/4, GpuDType::F32, "tf32");  // 4-byte aligned pointers
  run_merged_projection(GpuDType::F32, "tf32");
}


// cuDNN's fused attention (cudnn_attention.h): launches of library cudnn
// (the planner marks the bf16 launches plan::cudnn_attention_refusal
// accepts) against the same float64 loops, including the strided operands of
// a merged projection; the launch's trace span must name cuDNN (the
// executor falls back to the own kernel, silently but for the span, when
// cuDNN is absent). Without cuDNN on the machine the tests say why and skip.
std::vector<std::string>& seen_libraries() {
  static std::vector<std::string> s;
  return s;
}

std::string& seen_args() {  // the last span's arguments (its kernel says why the own kernel ran)
  static std::string s;
  return s;
}

struct LibraryObserver {
  shapeml_cuda_observer o{[]() -> uint32_t { return 1; },
                          [](const char*, const char*, uint64_t, uint64_t, const char* args, uint32_t) {
                            const std::string a = args ? args : "";
                            const size_t at = a.find("\"library\":\"");
                            if (at != std::string::npos) seen_libraries().push_back(a.substr(at + 11, a.find('"', at + 11) - at - 11)), seen_args() = a;
                          }};
  LibraryObserver() {
    seen_libraries().clear();
    set_observer(&o);
  }
  ~LibraryObserver() { set_observer(nullptr); }
};

bool cudnn_here(std::string& why) {
  kern::Attention a;
  a.batch = 1, a.heads = 1, a.sq = a.sk = 64, a.dh = 64, a.causal = true;
  for (auto& st : a.stride) st[0] = st[1] = 64 * 64, st[2] = 64;
  return CudnnAttention::create(a, why) != nullptr;
}

TEST(AttentionCudnn, RunsTheLaunchesMarkedForItAgainstFloat64) {
  REQUIRE_GPU();
  std::string why;
  if (!cudnn_here(why)) GTEST_SKIP() << "skipped: cuDNN's attention is not available here: " << why;
  const Case cases[] = {{1, 2, 1, 64, 64, 64, true, 0},    {2, 3, 1, 130, 130, 128, true, 0}, {1, 2, 1, 96, 200, 64, false, 0},
                        {1, 1, 1, 200, 96, 32, false, 0},  {2, 2, 1, 333, 333, 64, true, 0},  {1, 4, 1, 512, 512, 128, true, 0},
                        {1, 2, 1, 77, 77, 40, true, 0},    {1, 2, 1, 100, 300, 64, true, 0},  {2, 4, 2, 96, 96, 64, true, 0},
                        {1, 8, 4, 130, 130, 128, false, 0}};
  for (const Case& c : cases) {
    LibraryObserver obs;
    run_dense(c, 0, GpuDType::BF16, "", "cudnn");
    ASSERT_EQ(seen_libraries().size(), 1u) << name(c);
    EXPECT_EQ(seen_libraries()[0], "cudnn") << name(c) << ": " << seen_args();
  }
  LibraryObserver obs;
  run_merged_projection(GpuDType::BF16, "", "cudnn");  // q/k/v strided in one [B*S, 3*H*Dh] result, o head-merged
  ASSERT_EQ(seen_libraries().size(), 1u);
  EXPECT_EQ(seen_libraries()[0], "cudnn") << "merged projection: " << seen_args();
}

TEST(AttentionCudnn, UnalignedPointersRunTheOwnKernel) {
  REQUIRE_GPU();
  run_dense({1, 2, 1, 96, 96, 64, true, 0}, 2, GpuDType::BF16, "", "cudnn");
  run_dense({1, 2, 1, 96, 96, 64, true, 0}, 0, GpuDType::BF16, "", "cudnn");
}

}  // namespace
}  // namespace shapeml::cuda::test
