#include "cuda/executor/lt_tuning.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace shapeml::cuda {
namespace {

// Scratch device memory for the timing runs, freed on every path.
struct Scratch {
  std::vector<void*> ptrs;
  ~Scratch() {
    for (void* p : ptrs) cudaFree(p);
  }
  void* get(size_t bytes) {
    void* p = nullptr;
    if (cudaMalloc(&p, std::max<size_t>(bytes, 256)) != cudaSuccess) return nullptr;
    ptrs.push_back(p);
    // Non-zero, finite values in every dtype (0x3c bytes: f32 0.0115, bf16
    // 0.0115, f64 ~9e-19): zeros can run faster than real data.
    if (cudaMemset(p, 0x3c, std::max<size_t>(bytes, 256)) != cudaSuccess) return nullptr;
    return p;
  }
};

// The thread may make calls that are unsafe during another stream's
// capture (cudaMalloc, synchronization of our own stream): a plan created
// while the host program captures a graph must not invalidate that capture.
struct RelaxedCapture {
  cudaStreamCaptureMode prev = cudaStreamCaptureModeRelaxed;
  RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&prev); }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&prev); }
};

// Median time of `runs` launches of candidate `c` in ms, or a negative
// number when it fails.
float time_candidate(cublasLtHandle_t h, const LtProblem& p, const cublasLtMatmulHeuristicResult_t& c, void* a, void* b, void* d, void* ws,
                     cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* alpha = p.f64 ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* beta = p.f64 ? static_cast<const void*>(p.accumulate ? &one_d : &zero_d) : static_cast<const void*>(p.accumulate ? &one_f : &zero_f);
  auto once = [&] {
    return cublasLtMatmul(h, p.desc, alpha, a, p.la, b, p.lb, beta, d, p.lc, d, p.lc, &c.algo, c.workspaceSize ? ws : nullptr, c.workspaceSize, s);
  };
  for (int i = 0; i < 2; ++i)
    if (once() != CUBLAS_STATUS_SUCCESS) return -1;
  std::vector<float> t;
  for (int r = 0; r < 5; ++r) {
    if (cudaEventRecord(e0, s) != cudaSuccess) return -1;
    for (int i = 0; i < 4; ++i)
      if (once() != CUBLAS_STATUS_SUCCESS) return -1;
    float ms = 0;
    if (cudaEventRecord(e1, s) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess || cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
      return -1;
    t.push_back(ms / 4);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int32_t split_k(const cublasLtMatmulAlgo_t& algo) {
  int32_t v = 1;
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS) return 1;
  return v;
}

}  // namespace

// Opt-in: timed choices measured no faster inside the block's graph replay
// (docs/design/cublaslt-tuning.md), and the heuristic's choice is the same
// in every process.
bool lt_tuning_on() {
  const char* v = std::getenv("SHAPEML_CUBLASLT_TUNING");
  return v && (std::strcmp(v, "on") == 0 || std::strcmp(v, "1") == 0);
}

size_t fastest_lt_candidate(cublasLtHandle_t h, const LtProblem& p, const std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                            std::string& note) {
  if (!lt_tuning_on()) {
    note = "the heuristic's first (timing is opt-in: SHAPEML_CUBLASLT_TUNING=on)";
    return 0;
  }
  if (candidates.size() < 2) {
    note = "the heuristic's only candidate";
    return 0;
  }
  static std::mutex mu;
  static std::map<std::string, int> chosen;  // key -> index into the (deterministic) heuristic list
  const std::string key = std::to_string(p.device) + "|" + p.key;
  std::lock_guard<std::mutex> lock(mu);  // one timing at a time: concurrent runs would time each other
  if (auto it = chosen.find(key); it != chosen.end() && static_cast<size_t>(it->second) < candidates.size()) {
    note = "candidate " + std::to_string(it->second) + " of " + std::to_string(candidates.size()) + " (timed before in this process)";
    return static_cast<size_t>(it->second);
  }
  RelaxedCapture relaxed;
  size_t best = 0;
  {
    Scratch mem;
    size_t ws_bytes = 0;
    for (const auto& c : candidates) ws_bytes = std::max(ws_bytes, c.workspaceSize);
    void* a = mem.get(p.lt_a_bytes);
    void* b = mem.get(p.lt_b_bytes);
    void* d = mem.get(p.c_bytes);
    void* bias = p.bias ? mem.get(p.bias_bytes) : nullptr;
    void* ws = ws_bytes ? mem.get(ws_bytes) : nullptr;
    cudaStream_t s = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    bool ok = a && b && d && (!p.bias || bias) && (!ws_bytes || ws) && cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
              cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess;
    if (ok && p.bias) ok = cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) == CUBLAS_STATUS_SUCCESS;
    std::vector<float> t(candidates.size(), -1);
    if (ok)
      for (size_t i = 0; i < candidates.size(); ++i) t[i] = time_candidate(h, p, candidates[i], a, b, d, ws, s, e0, e1);
    if (s) cudaStreamSynchronize(s);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (s) cudaStreamDestroy(s);
    (void)cudaGetLastError();  // a failed candidate's error is not the plan's
    for (size_t i = 0; i < t.size(); ++i)
      if (t[i] > 0 && (t[best] <= 0 || t[i] < t[best])) best = i;
    if (!ok || t[best] <= 0) {
      note = "the heuristic's first (timing could not run)";
      return 0;
    }
    note = "candidate " + std::to_string(best) + " of " + std::to_string(candidates.size()) + " by time: " + std::to_string(t[best] * 1000) +
           " us (split-K " + std::to_string(split_k(candidates[best].algo)) + ") against the heuristic's first " +
           (t[0] > 0 ? std::to_string(t[0] * 1000) + " us (split-K " + std::to_string(split_k(candidates[0].algo)) + ")" : "(failed)");
  }
  chosen[key] = static_cast<int>(best);
  return best;
}

}  // namespace shapeml::cuda
