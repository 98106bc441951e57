// Helpers for the executor tests: plans built by hand, host tensors held as
// doubles and encoded to each dtype's bytes, a runner that goes through the
// four executor functions with cudaMalloc'ed buffers.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "cuda/executor/executor.h"

namespace shapeml::cuda::test {

using plan::GpuDType;
using plan::GpuLaunch;
using plan::GpuPlan;
using plan::GpuSlot;
using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline float bf16_round(float f) {  // to nearest even, as the language does
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return f;
  u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// A dense host tensor; values as doubles (exact for every dtype used here:
// integers are kept below 2^53 except where a test needs a limit).
struct Tensor {
  GpuDType dt = GpuDType::F32;
  Shape shape;
  std::vector<double> v;
  int64_t numel() const { return test::numel(shape); }
};

inline std::vector<uint8_t> encode(const Tensor& t) {
  std::vector<uint8_t> b(static_cast<size_t>(t.numel() * plan::gpu_dtype_size(t.dt)));
  for (size_t i = 0; i < t.v.size(); ++i) {
    double x = t.v[i];
    switch (t.dt) {
      case GpuDType::F32: { float f = static_cast<float>(x); std::memcpy(&b[i * 4], &f, 4); break; }
      case GpuDType::F64: std::memcpy(&b[i * 8], &x, 8); break;
      case GpuDType::BF16: {
        float f = bf16_round(static_cast<float>(x));
        uint32_t u;
        std::memcpy(&u, &f, 4);
        uint16_t h = static_cast<uint16_t>(u >> 16);
        if (std::isnan(f)) h = 0x7FC0;
        std::memcpy(&b[i * 2], &h, 2);
        break;
      }
      case GpuDType::I32: { int32_t k = static_cast<int32_t>(static_cast<int64_t>(x)); std::memcpy(&b[i * 4], &k, 4); break; }
      case GpuDType::I64: { int64_t k = static_cast<int64_t>(x); std::memcpy(&b[i * 8], &k, 8); break; }
      case GpuDType::Bool: b[i] = x != 0 ? 1 : 0; break;
    }
  }
  return b;
}

inline std::vector<double> decode(GpuDType dt, const std::vector<uint8_t>& b, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dt) {
      case GpuDType::F32: { float f; std::memcpy(&f, &b[i * 4], 4); v[i] = f; break; }
      case GpuDType::F64: std::memcpy(&v[i], &b[i * 8], 8); break;
      case GpuDType::BF16: {
        uint16_t h;
        std::memcpy(&h, &b[i * 2], 2);
        uint32_t u = static_cast<uint32_t>(h) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        v[i] = f;
        break;
      }
      case GpuDType::I32: { int32_t k; std::memcpy(&k, &b[i * 4], 4); v[i] = k; break; }
      case GpuDType::I64: { int64_t k; std::memcpy(&k, &b[i * 8], 8); v[i] = static_cast<double>(k); break; }
      case GpuDType::Bool: v[i] = b[i] == 0 ? 0 : (b[i] == 1 ? 1 : -1000 - b[i]); break;  // not 0/1: an unwritten or bad bool
    }
  }
  return v;
}

// A plan under construction.
struct PlanBuilder {
  GpuPlan p;
  PlanBuilder() { p.entry = "test"; }
  int32_t slot(GpuSlot::Kind k, int32_t index, GpuDType dt, Shape shape, int64_t offset = 0) {
    GpuSlot s;
    s.kind = k;
    if (k == GpuSlot::Kind::View) s.alias = index;
    else s.index = index;
    s.dtype = dt;
    s.shape = std::move(shape);
    s.offset = offset;
    if (k == GpuSlot::Kind::Input || k == GpuSlot::Kind::HostInput) p.num_inputs = std::max(p.num_inputs, index + 1);
    if (k == GpuSlot::Kind::Output || k == GpuSlot::Kind::HostOutput) p.num_outputs = std::max(p.num_outputs, index + 1);
    if (k == GpuSlot::Kind::Temp) p.workspace_bytes = std::max(p.workspace_bytes, offset + s.bytes());
    p.slots.push_back(std::move(s));
    return static_cast<int32_t>(p.slots.size() - 1);
  }
  int32_t input(int32_t i, GpuDType dt, Shape s) { return slot(GpuSlot::Kind::Input, i, dt, std::move(s)); }
  int32_t output(int32_t i, GpuDType dt, Shape s) { return slot(GpuSlot::Kind::Output, i, dt, std::move(s)); }
  void launch(const std::string& kernel, const std::string& op, std::vector<int32_t> in, std::vector<int32_t> out, std::vector<int64_t> ints = {},
              double scalar = 0, bool flag = false) {
    GpuLaunch l;
    l.kind = plan::parse_launch_kind(kernel).value();
    l.op = op;
    l.inputs = std::move(in);
    l.outputs = std::move(out);
    l.ints = std::move(ints);
    l.scalar = scalar;
    l.flag = flag;
    l.library = l.kind == plan::LaunchKind::Matmul ? "cublasLt" : "shapeml";
    l.why = "test";
    p.launches.push_back(std::move(l));
  }
};

inline bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return false;
  int major = 0;
  return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess && major >= 9;
}

#define REQUIRE_GPU() \
  if (!::shapeml::cuda::test::have_gpu()) GTEST_SKIP() << "skipped: no GPU"

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x << ": " << cudaGetErrorString(x)

// How run() calls the plan.
struct RunOptions {
  int64_t misalign = 0;  // bytes added to every input pointer
  int32_t expect_rc = 0;            // the status plan_execute must return
  std::string* message = nullptr;   // receives plan_execute's message
};

// Builds, runs and reads back a plan; `outs` gives the outputs' dtypes and shapes.
inline std::vector<Tensor> run(const GpuPlan& p, const std::vector<Tensor>& inputs, const std::vector<std::pair<GpuDType, Shape>>& outs,
                        RunOptions opt = {}) {
  std::vector<Tensor> results;
  std::string err_text = p.to_text();
  shapeml_cuda_plan* plan = nullptr;
  char err[1024] = "";
  int32_t rc = plan_create(0, err_text.c_str(), &plan, err, sizeof err);
  EXPECT_EQ(rc, 0) << err << "\n" << err_text;
  if (rc != 0) return results;
  std::vector<void*> bufs, allocs;
  for (const Tensor& t : inputs) {
    std::vector<uint8_t> b = encode(t);
    void* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, b.size() + 64), cudaSuccess);
    allocs.push_back(d);
    char* at = static_cast<char*>(d) + opt.misalign;
    EXPECT_EQ(cudaMemcpy(at, b.data(), b.size(), cudaMemcpyHostToDevice), cudaSuccess);
    bufs.push_back(at);
  }
  for (const auto& [dt, shape] : outs) {
    size_t bytes = static_cast<size_t>(numel(shape) * plan::gpu_dtype_size(dt));
    void* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, bytes + 64), cudaSuccess);
    EXPECT_EQ(cudaMemset(d, 0xFF, bytes + 64), cudaSuccess);
    allocs.push_back(d);
    bufs.push_back(d);
  }
  int64_t wsb = plan_workspace_bytes(plan);
  EXPECT_GE(wsb, p.workspace_bytes);
  void* ws = nullptr;
  if (wsb > 0) {
    EXPECT_EQ(cudaMalloc(&ws, static_cast<size_t>(wsb)), cudaSuccess);
    EXPECT_EQ(cudaMemset(ws, 0xFF, static_cast<size_t>(wsb)), cudaSuccess);
  }
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  // cudaMemset may return before it is done, on the legacy stream, which a
  // non-blocking stream does not wait for: the 0xFF fills must land before
  // the plan writes the outputs.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  rc = plan_execute(plan, bufs.data(), ws, s, err, sizeof err);
  EXPECT_EQ(rc, opt.expect_rc) << err;
  if (opt.message) *opt.message = err;
  cudaError_t e = cudaStreamSynchronize(s);
  EXPECT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto& [dt, shape] = outs[i];
    std::vector<uint8_t> b(static_cast<size_t>(numel(shape) * plan::gpu_dtype_size(dt)));
    EXPECT_EQ(cudaMemcpy(b.data(), bufs[inputs.size() + i], b.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    results.push_back(Tensor{dt, shape, decode(dt, b, numel(shape))});
  }
  cudaStreamDestroy(s);
  for (void* d : allocs) cudaFree(d);
  if (ws) cudaFree(ws);
  plan_destroy(plan);
  return results;
}

}  // namespace shapeml::cuda::test
