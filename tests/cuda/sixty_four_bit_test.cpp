// The 64-bit index paths of the fused kernels (rows.cu, softmax.cu with a
// mask, copy.cu's grouped permute): every test's output has more than 2^32
// elements, which fits on the H200 (each test uses at most 35 GB). Inputs
// are set with cudaMemset and a few cudaMemcpy'd marks (no host copy of the
// whole tensor); outputs are poisoned first and read back where an index
// wrapping at 2^32 would have gone wrong: the first and the last rows.
// Left out of the compute-sanitizer runs (minutes under memcheck). Without
// a GPU every test prints "skipped: no GPU".
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

namespace shapeml::cuda::test {
namespace {

constexpr int64_t k2p32 = int64_t{1} << 32;

bool room_for(size_t bytes) {
  size_t free_b = 0, total = 0;
  return cudaMemGetInfo(&free_b, &total) == cudaSuccess && free_b > bytes + (size_t{2} << 30);
}

// Runs `p` over device buffers (inputs then outputs), returns plan_execute's code.
int32_t run_on(const GpuPlan& p, std::vector<void*> bufs, std::string& msg) {
  std::string text = p.to_text();
  shapeml_cuda_plan* plan = nullptr;
  char err[1024] = "";
  int32_t rc = plan_create(0, text.c_str(), &plan, err, sizeof err);
  if (rc) {
    msg = err;
    return rc;
  }
  void* ws = nullptr;
  if (int64_t n = plan_workspace_bytes(plan); n > 0 && cudaMalloc(&ws, static_cast<size_t>(n)) != cudaSuccess) {
    plan_destroy(plan);
    msg = "no workspace";
    return -1;
  }
  rc = plan_execute(plan, bufs.data(), ws, nullptr, err, sizeof err);
  msg = err;
  if (cudaDeviceSynchronize() != cudaSuccess) rc = -2;
  if (ws) cudaFree(ws);
  plan_destroy(plan);
  return rc;
}

float f32_of_byte(uint8_t b) {
  uint32_t u = 0x01010101u * b;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
float bf16_of_byte(uint8_t b) {
  uint32_t u = (0x0101u * b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
float bf16_at(const std::vector<uint16_t>& v, size_t i) {
  uint32_t u = uint32_t{v[i]} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(SixtyFourBit, RmsNormRowsPastTwoToTheThirtyTwo) {
  REQUIRE_GPU();
  const int64_t n = 4096, rows = k2p32 / n + 3, total = rows * n;
  if (!room_for(static_cast<size_t>(2 * total * 4))) GTEST_SKIP() << "not enough device memory";
  void *x = nullptr, *g = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMalloc(&x, static_cast<size_t>(total * 4)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, static_cast<size_t>(total * 4)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&g, static_cast<size_t>(n * 4)), cudaSuccess);
  ASSERT_EQ(cudaMemset(x, 0x3f, static_cast<size_t>(total * 4)), cudaSuccess);
  ASSERT_EQ(cudaMemset(g, 0x40, static_cast<size_t>(n * 4)), cudaSuccess);
  ASSERT_EQ(cudaMemset(out, 0xff, static_cast<size_t>(total * 4)), cudaSuccess);
  PlanBuilder b;
  int32_t px = b.input(0, GpuDType::F32, {rows, n}), pg = b.input(1, GpuDType::F32, {n}), po = b.output(0, GpuDType::F32, {rows, n});
  b.launch("rmsnorm", "", {px, pg}, {po}, {}, static_cast<double>(1e-5f));
  std::string msg;
  ASSERT_EQ(run_on(b.p, {x, g, out}, msg), 0) << msg;
  const double c = f32_of_byte(0x3f), w = f32_of_byte(0x40);
  const double want = c / std::sqrt(c * c + static_cast<double>(1e-5f)) * w;
  for (int64_t row : {int64_t{0}, rows / 2, rows - 1}) {
    std::vector<float> got(static_cast<size_t>(n));
    ASSERT_EQ(cudaMemcpy(got.data(), static_cast<float*>(out) + row * n, static_cast<size_t>(n * 4), cudaMemcpyDeviceToHost), cudaSuccess);
    for (int64_t j = 0; j < n; j += 97) EXPECT_NEAR(got[static_cast<size_t>(j)], want, 2e-6 * want) << "row " << row << " col " << j;
    EXPECT_NEAR(got.back(), want, 2e-6 * want) << "row " << row;
  }
  for (void* p : {x, g, out}) cudaFree(p);
}

TEST(SixtyFourBit, GatedProductPastTwoToTheThirtyTwoElements) {
  REQUIRE_GPU();
  const int64_t n = k2p32 + 4096;
  if (!room_for(static_cast<size_t>(3 * n * 2))) GTEST_SKIP() << "not enough device memory";
  void *a = nullptr, *bb = nullptr, *out = nullptr;
  for (void** p : {&a, &bb, &out}) ASSERT_EQ(cudaMalloc(p, static_cast<size_t>(n * 2)), cudaSuccess);
  ASSERT_EQ(cudaMemset(a, 0x3f, static_cast<size_t>(n * 2)), cudaSuccess);
  ASSERT_EQ(cudaMemset(bb, 0xc0, static_cast<size_t>(n * 2)), cudaSuccess);
  ASSERT_EQ(cudaMemset(out, 0xff, static_cast<size_t>(n * 2)), cudaSuccess);
  PlanBuilder b;
  int32_t pa = b.input(0, GpuDType::BF16, {n}), pb = b.input(1, GpuDType::BF16, {n}), po = b.output(0, GpuDType::BF16, {n});
  b.launch("gated", "silu", {pa, pb}, {po});
  std::string msg;
  ASSERT_EQ(run_on(b.p, {a, bb, out}, msg), 0) << msg;
  const double x = bf16_of_byte(0x3f), y = bf16_of_byte(0xc0);
  const double want = x / (1 + std::exp(-x)) * y;
  for (int64_t at : {int64_t{0}, k2p32 - 8, n - 4096}) {
    std::vector<uint16_t> got(4096);
    ASSERT_EQ(cudaMemcpy(got.data(), static_cast<uint16_t*>(out) + at, 4096 * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t j = 0; j < got.size(); j += 111) EXPECT_NEAR(bf16_at(got, j), want, 4e-3 * std::fabs(want)) << "element " << at + static_cast<int64_t>(j);
    EXPECT_NEAR(bf16_at(got, got.size() - 1), want, 4e-3 * std::fabs(want)) << "the last element";
  }
  for (void* p : {a, bb, out}) cudaFree(p);
}

TEST(SixtyFourBit, CausalSoftmaxRowsPastTwoToTheThirtyTwo) {
  REQUIRE_GPU();
  const int64_t n = 4096, rows = k2p32 / n + 1, total = rows * n;
  if (!room_for(static_cast<size_t>(2 * total * 2))) GTEST_SKIP() << "not enough device memory";
  void *x = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMalloc(&x, static_cast<size_t>(total * 2)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, static_cast<size_t>(total * 2)), cudaSuccess);
  ASSERT_EQ(cudaMemset(x, 0x3f, static_cast<size_t>(total * 2)), cudaSuccess);
  ASSERT_EQ(cudaMemset(out, 0xff, static_cast<size_t>(total * 2)), cudaSuccess);
  PlanBuilder b;
  int32_t px = b.input(0, GpuDType::BF16, {1, rows, n}), po = b.output(0, GpuDType::BF16, {1, rows, n});
  b.launch("softmax", "softmax", {px}, {po}, {-1, 0}, 0, true);
  std::string msg;
  ASSERT_EQ(run_on(b.p, {x, out}, msg), 0) << msg;
  // Row r keeps columns j <= r: r+1 equal values of 1/(r+1), the rest 0.
  for (int64_t row : {int64_t{5}, rows - 1}) {
    std::vector<uint16_t> got(static_cast<size_t>(n));
    ASSERT_EQ(cudaMemcpy(got.data(), static_cast<uint16_t*>(out) + row * n, static_cast<size_t>(n * 2), cudaMemcpyDeviceToHost), cudaSuccess);
    const int64_t keep = std::min(row + 1, n);
    for (int64_t j = 0; j < n; j += 37) {
      double want = j < keep ? 1.0 / static_cast<double>(keep) : 0.0;
      EXPECT_NEAR(bf16_at(got, static_cast<size_t>(j)), want, 4e-3 * want) << "row " << row << " col " << j;
    }
  }
  for (void* p : {x, out}) cudaFree(p);
}

TEST(SixtyFourBit, GroupedPermutePastTwoToTheThirtyTwoElements) {
  REQUIRE_GPU();
  // bool [1, S, H, 3] -> [1, H, S, 3]: 3-byte rows, so the copy cannot widen
  // its elements and indexes more than 2^32 of them.
  const int64_t S = 1398102, H = 1024, D = 3, total = S * H * D;
  ASSERT_GT(total, k2p32);
  if (!room_for(static_cast<size_t>(4 * total))) GTEST_SKIP() << "not enough device memory";
  std::vector<void*> in(2), out(2);
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(cudaMalloc(&in[k], static_cast<size_t>(total)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out[k], static_cast<size_t>(total)), cudaSuccess);
    ASSERT_EQ(cudaMemset(in[k], 0, static_cast<size_t>(total)), cudaSuccess);
    ASSERT_EQ(cudaMemset(out[k], 0xff, static_cast<size_t>(total)), cudaSuccess);
  }
  // Marks: byte k of in[k][0, s, h, :] is 1 (the rest 0) at the last (s, h)
  // and at one in the middle.
  const std::vector<std::pair<int64_t, int64_t>> marks = {{S - 1, H - 1}, {S / 2, 7}};
  const uint8_t one = 1;
  for (int k = 0; k < 2; ++k)
    for (auto [s, h] : marks)
      ASSERT_EQ(cudaMemcpy(static_cast<uint8_t*>(in[k]) + (s * H + h) * D + k, &one, 1, cudaMemcpyHostToDevice), cudaSuccess);
  PlanBuilder b;
  int32_t i0 = b.input(0, GpuDType::Bool, {1, S, H, D}), i1 = b.input(1, GpuDType::Bool, {1, S, H, D});
  int32_t o0 = b.output(0, GpuDType::Bool, {1, H, S, D}), o1 = b.output(1, GpuDType::Bool, {1, H, S, D});
  b.launch("transpose", "", {i0, i1}, {o0, o1}, {0, 2, 1, 3});
  std::string msg;
  ASSERT_EQ(run_on(b.p, {in[0], in[1], out[0], out[1]}, msg), 0) << msg;
  for (int k = 0; k < 2; ++k)
    for (auto [s, h] : marks) {
      uint8_t got[3] = {9, 9, 9};
      ASSERT_EQ(cudaMemcpy(got, static_cast<uint8_t*>(out[k]) + (h * S + s) * D, 3, cudaMemcpyDeviceToHost), cudaSuccess);
      for (int j = 0; j < 3; ++j) EXPECT_EQ(got[j], j == k ? 1 : 0) << "pair " << k << " s " << s << " h " << h << " byte " << j;
    }
  uint8_t last = 9;
  ASSERT_EQ(cudaMemcpy(&last, static_cast<uint8_t*>(out[1]) + total - 1, 1, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(last, 0) << "the last byte was written";
  for (int k = 0; k < 2; ++k) cudaFree(in[k]), cudaFree(out[k]);
}

}  // namespace
}  // namespace shapeml::cuda::test
