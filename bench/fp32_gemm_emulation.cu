// fp32 GEMMs on tensor cores with fp32 accuracy: which way is fastest on this GPU?
//
// Times the large transformer block's GEMM shapes (M = B*S = 2048 rows) through cuBLASLt as
//   simt     CUBLAS_COMPUTE_32F (what fp32 plans and PyTorch's fp32 use),
//   bf16x9   CUBLAS_COMPUTE_32F_EMULATED_16BFX9 with the EAGER emulation strategy,
//   3xtf32   each operand split into a TF32 "big" part and the TF32-rounded remainder, one TF32 GEMM over a
//            K three times as long: [A_big A_big A_small] . [B_big; B_small; B_big] (the small*small term dropped),
//   tf32     plain TF32 (for its error only),
// and reports each one's error against a float64 GEMM of the same inputs (max |C - C64| / max |C64|).
// Build: nvcc -O3 -arch=sm_90 bench/fp32_gemm_emulation.cu -lcublasLt -lcublas -o fp32_gemm_emulation
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_bench_check.h"

__device__ float round_tf32(float x) {
  unsigned u = __float_as_uint(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf, nan
  u += 0x1000u;                                     // round half away on the 13 dropped bits
  u &= 0xffffe000u;
  float r = __uint_as_float(u);
  if (isinf(r)) r = __uint_as_float(__float_as_uint(x) & 0xffffe000u);  // rounding overflowed: truncate
  return r;
}

// Column-major A [M x K] -> A3 [M x 3K] = [big | big | small];  B [K x N] -> B3 [3K x N] = [big; small; big].
__global__ void split_a(const float* a, float* a3, long mk, int round_small) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= mk) return;
  float x = a[i], big = round_tf32(x), small = isfinite(x) ? x - big : 0.f;
  if (round_small) small = round_tf32(small);
  a3[i] = big;
  a3[mk + i] = big;
  a3[2 * mk + i] = small;
}
__global__ void split_b(const float* b, float* b3, int K, int N, int round_small) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= (long)K * N) return;
  long n = i / K, k = i % K;
  float x = b[i], big = round_tf32(x), small = isfinite(x) ? x - big : 0.f;
  if (round_small) small = round_tf32(small);
  float* col = b3 + n * 3L * K;
  col[k] = big;
  col[K + k] = small;
  col[2 * K + k] = big;
}
__global__ void to_double(const float* x, double* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}

struct Lt {
  cublasLtHandle_t h;
  void* ws;
  size_t ws_bytes = 64u << 20;
};

// C[MxN] = A[MxK] B[KxN], column-major, fp32 storage; returns false when cuBLASLt has no algorithm.
static bool lt_gemm(Lt& lt, cublasComputeType_t ct, bool emulate, int M, int N, int K, const float* A, const float* B,
                    float* C, int reps, float* ms) {
  cublasLtMatmulDesc_t d;
  CB(cublasLtMatmulDescCreate(&d, ct, CUDA_R_32F));
  cublasLtEmulationDesc_t ed = nullptr;
  if (emulate) {
    CB(cublasLtEmulationDescCreate(&ed));
    cublasEmulationStrategy_t strat = CUBLAS_EMULATION_STRATEGY_EAGER;
    CB(cublasLtEmulationDescSetAttribute(ed, CUBLASLT_EMULATION_DESC_STRATEGY, &strat, sizeof strat));
    CB(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, &ed, sizeof ed));
  }
  cublasLtMatrixLayout_t la, lb, lc;
  CB(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, M, K, M));
  CB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, N, K));
  CB(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, M, N, M));
  cublasLtMatmulPreference_t p;
  CB(cublasLtMatmulPreferenceCreate(&p));
  CB(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &lt.ws_bytes, sizeof lt.ws_bytes));
  cublasLtMatmulHeuristicResult_t r[8];
  int n = 0;
  cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt.h, d, la, lb, lc, lc, p, 8, r, &n);
  bool ok = hs == CUBLAS_STATUS_SUCCESS && n > 0;
  float best = 1e30f;
  if (ok) {
    float one = 1, zero = 0;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int a = 0; a < n && a < 4; ++a) {
      if (cublasLtMatmul(lt.h, d, &one, A, la, B, lb, &zero, C, lc, C, lc, &r[a].algo, lt.ws, lt.ws_bytes, 0) !=
          CUBLAS_STATUS_SUCCESS)
        continue;
      CK(cudaEventRecord(e0));
      for (int i = 0; i < reps; ++i)
        CB(cublasLtMatmul(lt.h, d, &one, A, la, B, lb, &zero, C, lc, C, lc, &r[a].algo, lt.ws, lt.ws_bytes, 0));
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float t;
      CK(cudaEventElapsedTime(&t, e0, e1));
      if (t / reps < best) best = t / reps;
    }
    // leave C holding the first algorithm's result
    CB(cublasLtMatmul(lt.h, d, &one, A, la, B, lb, &zero, C, lc, C, lc, &r[0].algo, lt.ws, lt.ws_bytes, 0));
    CK(cudaDeviceSynchronize());
  } else {
    std::printf("    (no algorithm: heuristic status %d, %d results)\n", (int)hs, n);
  }
  *ms = best;
  cublasLtMatmulPreferenceDestroy(p);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(d);
  if (ed) cublasLtEmulationDescDestroy(ed);
  return ok;
}

static double rel_err(const std::vector<float>& c, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    num = std::fmax(num, std::fabs((double)c[i] - ref[i]));
    den = std::fmax(den, std::fabs(ref[i]));
  }
  return num / den;
}

int main() {
  Lt lt;
  CB(cublasLtCreate(&lt.h));
  CK(cudaMalloc(&lt.ws, lt.ws_bytes));
  cublasHandle_t blas;
  CB(cublasCreate(&blas));
  const int shapes[][3] = {{2048, 2048, 2048}, {2048, 5632, 2048}, {2048, 2048, 5632}, {512, 512, 128}, {512, 704, 256},
                           {1024, 1024, 1024}, {512, 2048, 2048}};
  std::srand(7);
  for (auto& s : shapes) {
    int M = s[0], N = s[1], K = s[2];
    long mk = (long)M * K, kn = (long)K * N, mn = (long)M * N;
    std::vector<float> ha(mk), hb(kn);
    for (auto& v : ha) v = (float)(2.0 * std::rand() / RAND_MAX - 1.0);
    for (auto& v : hb) v = (float)((2.0 * std::rand() / RAND_MAX - 1.0) / std::sqrt((double)K));
    float *a, *b, *c, *a3, *b3;
    double *a64, *b64, *c64;
    CK(cudaMalloc(&a, mk * 4));
    CK(cudaMalloc(&b, kn * 4));
    CK(cudaMalloc(&c, mn * 4));
    CK(cudaMalloc(&a3, 3 * mk * 4));
    CK(cudaMalloc(&b3, 3 * kn * 4));
    CK(cudaMalloc(&a64, mk * 8));
    CK(cudaMalloc(&b64, kn * 8));
    CK(cudaMalloc(&c64, mn * 8));
    CK(cudaMemcpy(a, ha.data(), mk * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, hb.data(), kn * 4, cudaMemcpyHostToDevice));
    to_double<<<(mk + 255) / 256, 256>>>(a, a64, mk);
    to_double<<<(kn + 255) / 256, 256>>>(b, b64, kn);
    double one = 1, zero = 0;
    CB(cublasDgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, a64, M, b64, K, &zero, c64, M));
    std::vector<double> ref(mn);
    CK(cudaMemcpy(ref.data(), c64, mn * 8, cudaMemcpyDeviceToHost));
    std::vector<float> hc(mn);
    double gflop = 2.0 * M * N * K / 1e9;
    std::printf("M=%d N=%d K=%d (%.1f GFLOP)\n", M, N, K, gflop);
    float ms;
    auto report = [&](const char* name, float t) {
      CK(cudaMemcpy(hc.data(), c, mn * 4, cudaMemcpyDeviceToHost));
      std::printf("  %-22s %8.4f ms  %7.1f TFLOP/s (fp32-equivalent)  rel err %.3e\n", name, t, gflop / t, rel_err(hc, ref));
    };
    if (lt_gemm(lt, CUBLAS_COMPUTE_32F, false, M, N, K, a, b, c, 20, &ms)) report("simt", ms);
    if (lt_gemm(lt, CUBLAS_COMPUTE_32F_FAST_TF32, false, M, N, K, a, b, c, 20, &ms)) report("tf32", ms);
    if (lt_gemm(lt, CUBLAS_COMPUTE_32F_EMULATED_16BFX9, true, M, N, K, a, b, c, 20, &ms)) report("bf16x9 (eager)", ms);
    for (int round_small = 0; round_small < 2; ++round_small) {
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      CK(cudaEventRecord(e0));
      for (int i = 0; i < 20; ++i) {
        split_a<<<(mk + 255) / 256, 256>>>(a, a3, mk, round_small);
        split_b<<<(kn + 255) / 256, 256>>>(b, b3, K, N, round_small);
      }
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float split_ms;
      CK(cudaEventElapsedTime(&split_ms, e0, e1));
      split_ms /= 20;
      if (lt_gemm(lt, CUBLAS_COMPUTE_32F_FAST_TF32, false, M, N, 3 * K, a3, b3, c, 20, &ms)) {
        char name[64];
        std::snprintf(name, sizeof name, "3xtf32%s gemm", round_small ? " rounded" : "");
        report(name, ms);
        std::printf("  %-22s %8.4f ms  (split of A and B; total %.4f ms)\n", "  split", split_ms, split_ms + ms);
      }
    }
    cudaFree(a); cudaFree(b); cudaFree(c); cudaFree(a3); cudaFree(b3); cudaFree(a64); cudaFree(b64); cudaFree(c64);
  }
  return 0;
}
