// Dispatch overhead of the CUDA plan executor: a plan of N small elementwise
// launches (alternating binary add and unary exp on 4096 f32 elements)
// through plan_execute. Prints host microseconds per launch (the time
// plan_execute takes to enqueue; target < 2 us) and device microseconds per
// launch (CUDA events around whole executions, launches back to back).
// The last column is the floor under the executor: host microseconds per
// launch of the same kernels called directly (kern::binary / kern::unary,
// one cudaLaunchKernel and cudaGetLastError each), so the executor's own
// share is the difference. Needs a GPU; exits 0 with "skipped: no GPU"
// without one.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "cuda/executor/executor.h"
#include "cuda/executor/kernels.h"

namespace plan = shapeml::plan;

using shapeml::plan::GpuDType;
using shapeml::plan::GpuLaunch;
using shapeml::plan::GpuPlan;
using shapeml::plan::GpuSlot;

#define CHECK(x)                                                                 \
  do {                                                                           \
    cudaError_t e_ = (x);                                                        \
    if (e_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e_));       \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

static GpuPlan make_plan(int n_launches, int64_t elems) {
  GpuPlan p;
  p.entry = "bench";
  p.num_inputs = 1;
  p.num_outputs = 1;
  auto slot = [&](GpuSlot::Kind k, int64_t offset) {
    GpuSlot s;
    s.kind = k;
    s.dtype = GpuDType::F32;
    s.shape = {elems};
    s.offset = offset;
    p.slots.push_back(s);
    return static_cast<int32_t>(p.slots.size() - 1);
  };
  int32_t in = slot(GpuSlot::Kind::Input, 0), out = slot(GpuSlot::Kind::Output, 0);
  int64_t bytes = (elems * 4 + 255) / 256 * 256;
  int32_t t0 = slot(GpuSlot::Kind::Temp, 0), t1 = slot(GpuSlot::Kind::Temp, bytes);
  p.workspace_bytes = 2 * bytes;
  int32_t cur = in;
  for (int i = 0; i < n_launches; ++i) {
    GpuLaunch l;
    int32_t dst = i == n_launches - 1 ? out : (i % 2 ? t1 : t0);
    if (i % 2 == 0) {
      l.kind = plan::LaunchKind::Binary;
      l.op = "add";
      l.inputs = {cur, in};
    } else {
      l.kind = plan::LaunchKind::Unary;
      l.op = "tanh";
      l.inputs = {cur};
    }
    l.outputs = {dst};
    p.launches.push_back(l);
    cur = dst;
  }
  return p;
}

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("skipped: no GPU\n");
    return 0;
  }
  const int64_t elems = 4096;
  std::printf("%10s %14s %16s %16s %18s\n", "launches", "host us/exec", "host us/launch", "device us/launch", "bare us/launch");
  for (int n : {1, 8, 64, 256}) {
    GpuPlan gp = make_plan(n, elems);
    std::string text = gp.to_text();
    shapeml_cuda_plan* plan = nullptr;
    char err[512];
    if (shapeml::cuda::plan_create(0, text.c_str(), &plan, err, sizeof err) != 0) {
      std::fprintf(stderr, "plan_create: %s\n", err);
      return 1;
    }
    void *in = nullptr, *out = nullptr, *ws = nullptr;
    CHECK(cudaMalloc(&in, elems * 4));
    CHECK(cudaMalloc(&out, elems * 4));
    CHECK(cudaMalloc(&ws, static_cast<size_t>(shapeml::cuda::plan_workspace_bytes(plan))));
    CHECK(cudaMemset(in, 0x3c, elems * 4));  // ~0.0115f: not zeros
    void* bufs[2] = {in, out};
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < 20; ++i)
      if (shapeml::cuda::plan_execute(plan, bufs, ws, s, err, sizeof err) != 0) {
        std::fprintf(stderr, "plan_execute: %s\n", err);
        return 1;
      }
    CHECK(cudaStreamSynchronize(s));
    // Host: time to enqueue one execution (median of many; the queue is
    // drained between samples so it never fills).
    std::vector<double> host;
    for (int rep = 0; rep < 200; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      shapeml::cuda::plan_execute(plan, bufs, ws, s, err, sizeof err);
      auto t1 = std::chrono::steady_clock::now();
      host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      if (rep % 8 == 7) CHECK(cudaStreamSynchronize(s));
    }
    CHECK(cudaStreamSynchronize(s));
    std::sort(host.begin(), host.end());
    // Device: events around 50 executions.
    const int reps = 50;
    CHECK(cudaEventRecord(e0, s));
    for (int rep = 0; rep < reps; ++rep) shapeml::cuda::plan_execute(plan, bufs, ws, s, err, sizeof err);
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    double med = host[host.size() / 2];
    // The same launches without the executor (median over samples, drained as above).
    namespace kern = shapeml::cuda::kern;
    kern::Geom g;
    g.rank = 1;
    g.shape[0] = elems;
    for (int k = 0; k < 3; ++k) g.stride[k][0] = 1;
    std::vector<double> bare;
    for (int rep = 0; rep < 200; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) {
        if (i % 2 == 0) kern::binary(kern::DT::F32, kern::B_ADD, in, in, out, g, elems, true, 1024, s);
        else kern::unary(kern::DT::F32, kern::U_TANH, out, out, elems, 1024, s);
      }
      auto t1 = std::chrono::steady_clock::now();
      bare.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      if (rep % 8 == 7) CHECK(cudaStreamSynchronize(s));
    }
    CHECK(cudaStreamSynchronize(s));
    std::sort(bare.begin(), bare.end());
    std::printf("%10d %14.2f %16.3f %16.3f %18.3f\n", n, med, med / n, ms * 1000.0 / (reps * n), bare[bare.size() / 2] / n);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(s);
    cudaFree(in);
    cudaFree(out);
    cudaFree(ws);
    shapeml::cuda::plan_destroy(plan);
  }
  return 0;
}
