// Per-call latency of a dispatch plan: direct execution (plan_execute, one
// launch after another) vs CUDA graph replay (graph_execute, recapture mode:
// executables cached by buffer addresses) vs the copy-in alternative (the
// graph owns its buffers; memcpy nodes copy inputs in and outputs out).
// Plans: the MLP of examples/mlp.sml on (cuda 0) at B=4 S=128 D=256 F=1024 (its
// `shapemlc --emit=gpu-plan` text, the first argument) and a launch-bound
// chain of 30 small elementwise launches. Prints one JSON object:
//   per plan and mode: enqueue_us (host time of one call, median),
//   call_sync_us (one call then cudaStreamSynchronize, median: latency),
//   back_to_back_us (wall time of 200 calls in a row / 200: throughput);
//   capture_us (the first graph call: capture + instantiate + launch),
//   rebind_us (a call with new buffer addresses: recapture + cudaGraphExecUpdate,
//   or, copy-in, resetting the memcpy nodes), identical (replay == direct, bytes).
// Needs a GPU; prints {"skipped": "no GPU"} without one. Figures, not assertions.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "cuda/executor/executor.h"
#include "cuda/executor/graph.h"

using shapeml::plan::GpuDType;
using shapeml::plan::GpuLaunch;
using shapeml::plan::GpuPlan;
using shapeml::plan::GpuSlot;
namespace sc = shapeml::cuda;

namespace {

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "gpu_graph_bench: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

// 30 launches over 4096 f32 elements: add, tanh, mul through two temporaries.
GpuPlan chain_plan(int n, int64_t elems) {
  GpuPlan p;
  p.entry = "chain";
  p.num_inputs = 2;
  p.num_outputs = 1;
  auto slot = [&](GpuSlot::Kind k, int32_t index, int64_t offset) {
    GpuSlot s;
    s.kind = k;
    s.index = index;
    s.shape = {elems};
    s.offset = offset;
    p.slots.push_back(s);
    return static_cast<int32_t>(p.slots.size() - 1);
  };
  int32_t a = slot(GpuSlot::Kind::Input, 0, 0), b = slot(GpuSlot::Kind::Input, 1, 0), out = slot(GpuSlot::Kind::Output, 0, 0);
  int64_t bytes = (elems * 4 + 255) / 256 * 256;
  int32_t t[2] = {slot(GpuSlot::Kind::Temp, 0, 0), slot(GpuSlot::Kind::Temp, 0, bytes)};
  p.workspace_bytes = 2 * bytes;
  int32_t cur = a;
  for (int i = 0; i < n; ++i) {
    GpuLaunch l;
    int32_t dst = i == n - 1 ? out : t[i % 2];
    l.kind = i % 3 == 1 ? shapeml::plan::LaunchKind::Unary : shapeml::plan::LaunchKind::Binary;
    l.op = i % 3 == 0 ? "add" : i % 3 == 1 ? "tanh" : "mul";
    l.inputs = i % 3 == 1 ? std::vector<int32_t>{cur} : std::vector<int32_t>{cur, i % 3 == 0 ? b : a};
    l.outputs = {dst};
    p.launches.push_back(l);
    cur = dst;
  }
  p.graph = true;
  p.graph_why = "bench";
  return p;
}

// One set of device buffers (inputs random, outputs) for a plan.
struct Buffers {
  std::vector<void*> ptrs;
  std::vector<size_t> bytes;
  int32_t num_inputs = 0;
  bool make(const GpuPlan& p, uint32_t seed) {
    num_inputs = p.num_inputs;
    bytes.assign(static_cast<size_t>(p.num_inputs + p.num_outputs), 0);
    for (const GpuSlot& s : p.slots) {
      if (s.kind == GpuSlot::Kind::Input) bytes[static_cast<size_t>(s.index)] = static_cast<size_t>(s.bytes());
      if (s.kind == GpuSlot::Kind::Output) bytes[static_cast<size_t>(p.num_inputs + s.index)] = static_cast<size_t>(s.bytes());
    }
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    for (size_t i = 0; i < bytes.size(); ++i) {
      void* q = nullptr;
      if (!ok(cudaMalloc(&q, std::max<size_t>(bytes[i], 1)), "cudaMalloc")) return false;
      ptrs.push_back(q);
      std::vector<float> h(bytes[i] / 4);
      for (float& x : h) x = d(rng);
      if (!ok(cudaMemcpy(q, h.data(), h.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy")) return false;
    }
    return true;
  }
  std::vector<uint8_t> output() const {
    std::vector<uint8_t> h(bytes[static_cast<size_t>(num_inputs)]);
    cudaMemcpy(h.data(), ptrs[static_cast<size_t>(num_inputs)], h.size(), cudaMemcpyDeviceToHost);
    return h;
  }
  ~Buffers() {
    for (void* q : ptrs) cudaFree(q);
  }
};

struct Timing {
  double enqueue = 0, call_sync = 0, back_to_back = 0;
};

// Times `call` (which enqueues one call on `s`).
Timing time_calls(const std::function<bool()>& call, cudaStream_t s) {
  Timing t;
  for (int i = 0; i < 20; ++i) call();  // warm
  cudaStreamSynchronize(s);
  std::vector<double> enq, lat;
  for (int rep = 0; rep < 300; ++rep) {
    auto t0 = Clock::now();
    call();
    enq.push_back(us_since(t0));
    cudaStreamSynchronize(s);
    lat.push_back(us_since(t0));
  }
  const int n = 200;
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) call();
    cudaStreamSynchronize(s);
    runs.push_back(us_since(t0) / n);
  }
  t.enqueue = median(enq);
  t.call_sync = median(lat);
  t.back_to_back = median(runs);
  return t;
}

std::string timing_json(const Timing& t) {
  char b[256];
  std::snprintf(b, sizeof b, "\"enqueue_us\": %.3f, \"call_sync_us\": %.3f, \"back_to_back_us\": %.3f", t.enqueue, t.call_sync, t.back_to_back);
  return b;
}

// All three modes on one plan; "" on failure (reason on stderr).
std::string bench_plan(const std::string& name, const GpuPlan& gp) {
  char err[1024] = {0};
  shapeml_cuda_plan* plan = nullptr;
  if (sc::plan_create(0, gp.to_text().c_str(), &plan, err, sizeof err) != 0) {
    std::fprintf(stderr, "gpu_graph_bench: %s: plan_create: %s\n", name.c_str(), err);
    return "";
  }
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  // Buffer sets: 0 for the steady state, 1.. for calls with new addresses.
  const size_t nsets = sc::kGraphMaxExecs + 4;
  std::vector<Buffers> sets(nsets);
  for (size_t k = 0; k < nsets; ++k)
    if (!sets[k].make(gp, 11 + static_cast<uint32_t>(k))) return "";
  void* ws = nullptr;
  cudaMalloc(&ws, std::max<size_t>(static_cast<size_t>(sc::plan_workspace_bytes(plan)), 1));
  cudaDeviceSynchronize();

  std::string out = "{\"name\": \"" + name + "\", \"launches\": " + std::to_string(gp.launches.size());
  // Direct.
  auto direct = [&]() { return sc::plan_execute(plan, sets[0].ptrs.data(), ws, s, err, sizeof err) == 0; };
  if (!direct()) {
    std::fprintf(stderr, "gpu_graph_bench: %s: plan_execute: %s\n", name.c_str(), err);
    return "";
  }
  cudaStreamSynchronize(s);
  std::vector<uint8_t> want = sets[0].output();
  out += ", \"direct\": {" + timing_json(time_calls(direct, s)) + "}";

  for (int32_t rebind : {sc::kGraphRebindRecapture, sc::kGraphRebindCopyIn}) {
    const char* mode = rebind == sc::kGraphRebindCopyIn ? "copy_in" : "graph";
    void* mem = nullptr;
    cudaMalloc(&mem, std::max<size_t>(static_cast<size_t>(sc::graph_memory_bytes(plan, rebind)), 1));
    shapeml_cuda_graph* g = nullptr;
    if (sc::graph_create(plan, rebind, mem, &g, err, sizeof err) != 0) {
      std::fprintf(stderr, "gpu_graph_bench: %s: graph_create: %s\n", name.c_str(), err);
      return "";
    }
    int32_t ran = 0;
    bool failed = false;
    auto call = [&](size_t k) {
      if (sc::graph_execute(g, sets[k].ptrs.data(), s, &ran, err, sizeof err) != 0 || !ran) {
        if (!failed) std::fprintf(stderr, "gpu_graph_bench: %s: graph_execute (%s): %s\n", name.c_str(), mode, err);
        failed = true;
        return false;
      }
      return true;
    };
    cudaMemsetAsync(sets[0].ptrs[static_cast<size_t>(gp.num_inputs)], 0xff, sets[0].bytes[static_cast<size_t>(gp.num_inputs)], s);
    auto t0 = Clock::now();
    call(0);
    cudaStreamSynchronize(s);
    double capture = us_since(t0);
    bool identical = !failed && sets[0].output() == want;
    Timing t = time_calls([&]() { return call(0); }, s);
    // Calls with new addresses: sets 1.. (recapture: the first ones fill the
    // cache, later ones update an executable; copy-in: node parameters).
    std::vector<double> rebinds;
    for (size_t k = 1; k < nsets && !failed; ++k) {
      auto r0 = Clock::now();
      call(k);
      cudaStreamSynchronize(s);
      if (rebind == sc::kGraphRebindCopyIn || k >= sc::kGraphMaxExecs) rebinds.push_back(us_since(r0));
    }
    int64_t counters[4];
    sc::graph_counters(g, counters);
    char b[512];
    std::snprintf(b, sizeof b,
                  ", \"capture_us\": %.1f, \"rebind_us\": %.1f, \"identical\": %s, \"captures\": %lld, \"replays\": %lld, \"updates\": %lld, "
                  "\"direct_runs\": %lld",
                  capture, median(rebinds), identical ? "true" : "false", static_cast<long long>(counters[0]), static_cast<long long>(counters[1]),
                  static_cast<long long>(counters[2]), static_cast<long long>(counters[3]));
    out += std::string(", \"") + mode + "\": {" + timing_json(t) + b + (failed ? ", \"failed\": true" : "") + "}";
    sc::graph_destroy(g, err, sizeof err);
    cudaFree(mem);
  }
  cudaFree(ws);
  cudaStreamDestroy(s);
  sc::plan_destroy(plan);
  return out + "}";
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("{\"skipped\": \"no GPU\"}\n");
    return 0;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::vector<std::string> results;
  if (argc > 1) {
    std::ifstream f(argv[1]);
    std::stringstream text;
    text << f.rdbuf();
    std::string perr;
    auto mlp = GpuPlan::parse(text.str(), perr);
    if (!mlp) {
      std::fprintf(stderr, "gpu_graph_bench: %s: %s\n", argv[1], perr.c_str());
      return 1;
    }
    results.push_back(bench_plan("mlp B4 S128 D256 F1024", *mlp));
  }
  results.push_back(bench_plan("chain of 30 elementwise launches, 4096 f32", chain_plan(30, 4096)));
  std::string json = std::string("{\"device\": \"") + prop.name + "\", \"plans\": [";
  bool all = true;
  for (size_t i = 0; i < results.size(); ++i) {
    all &= !results[i].empty();
    json += (i ? ", " : "") + (results[i].empty() ? std::string("null") : results[i]);
  }
  std::printf("%s]}\n", json.c_str());
  return all ? 0 : 1;
}
