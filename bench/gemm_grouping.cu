// GEMMs that share their input: separate launches, one batched launch, or one merged GEMM?
//
// The transformer block's q, k, v projections (and gate, up) multiply the same activation X by
// two or three weights. Issue 22 asks for them as one GEMM. This measures, in bf16 with f32
// accumulation through cuBLASLt, for the large block's shapes (M = B*S = 2048 rows):
//   separate  one cublasLtMatmul per weight (what the plan runs today),
//   pointers  one cublasLtMatmul in CUBLASLT_BATCH_MODE_POINTER_ARRAY over the weights,
//             X's pointer repeated (weights and outputs anywhere),
//   strided   one strided-batched cublasLtMatmul, X's batch stride 0 (needs the weights
//             equally spaced, e.g. one [n, K, N] allocation),
//   merged    one GEMM against the weights concatenated along N (the layout the small
//             block's merged projection copies its weights into per call),
// each with the heuristic's first algorithm and the fastest of its top 8, the weights cold in L2
// (a 128 MiB scrub before every timed call, as in the block, where they are read once per call).
// Build: nvcc -O3 -arch=sm_90 bench/gemm_grouping.cu -lcublasLt -o gemm_grouping
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_bench_check.h"

namespace {

cublasLtHandle_t lt;
void* workspace;
constexpr size_t kWorkspace = 32u << 20;
void* scrub;
constexpr size_t kScrub = 128u << 20;

__global__ void fill(__nv_bfloat16* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u + seed;
    h ^= h >> 13;
    p[i] = __float2bfloat16(((h & 0xffff) / 65536.0f - 0.5f) * 0.05f);
  }
}

__nv_bfloat16* alloc(size_t n, unsigned seed) {
  __nv_bfloat16* p;
  CK(cudaMalloc(&p, n * sizeof(__nv_bfloat16)));
  fill<<<1024, 256>>>(p, n, seed);
  return p;
}

// Row-major Y[M, N] = X[M, K] W[K, N], as column-major C[N, M] = A[N, K] B[K, M]; `batch`
// instances, in pointer-array mode when `ptrs` (device arrays A, B, C of `batch` pointers each)
// else strided (a_stride, b_stride, c_stride elements).
struct Gemm {
  cublasLtMatmulDesc_t desc{};
  cublasLtMatrixLayout_t a{}, b{}, c{};
  std::vector<cublasLtMatmulHeuristicResult_t> algos;

  Gemm(int64_t M, int64_t N, int64_t K, int batch, bool ptrs, int64_t a_stride, int64_t b_stride, int64_t c_stride) {
    CB(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CB(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, N, K, N));
    CB(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, K, M, K));
    CB(cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, N, M, N));
    if (batch > 1) {
      const int64_t strides[3] = {a_stride, b_stride, c_stride};
      cublasLtMatrixLayout_t ls[3] = {a, b, c};
      const uint32_t mode = ptrs ? CUBLASLT_BATCH_MODE_POINTER_ARRAY : CUBLASLT_BATCH_MODE_STRIDED;
      for (int i = 0; i < 3; ++i) {
        CB(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
        if (ptrs) {
          CB(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, sizeof mode));
        } else {
          CB(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i], sizeof strides[i]));
        }
      }
    }
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = kWorkspace;
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    algos.resize(8);
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, desc, a, b, c, c, pref, 8, algos.data(), &found);
    algos.resize(st == CUBLAS_STATUS_SUCCESS ? found : 0);
    cublasLtMatmulPreferenceDestroy(pref);
  }

  cublasStatus_t run(int algo, const void* A, const void* B, void* C, cudaStream_t s) const {
    const float one = 1.0f, zero = 0.0f;
    return cublasLtMatmul(lt, desc, &one, A, a, B, b, &zero, C, c, C, c, &algos[algo].algo, workspace, kWorkspace, s);
  }
};

// Median time (ms) of `calls` (each issues its launches on the stream), L2 scrubbed before each.
template <class F> double time_ms(F&& call) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ts;
  for (int r = 0; r < 25; ++r) {
    CK(cudaMemsetAsync(scrub, r, kScrub, 0));
    CK(cudaEventRecord(e0, 0));
    if (!call()) return -1;
    CK(cudaEventRecord(e1, 0));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 5) ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return ts[ts.size() / 2];
}

// The heuristic's first algorithm and the fastest of those it returned.
template <class F> void report(const char* what, const Gemm& g, double gflop, F&& call) {
  if (g.algos.empty()) {
    std::printf("  %-10s no algorithm\n", what);
    return;
  }
  double first = time_ms([&] { return call(0); }), best = first;
  int arg = 0;
  for (int i = 1; i < (int)g.algos.size(); ++i) {
    double t = time_ms([&] { return call(i); });
    if (t > 0 && t < best) best = t, arg = i;
  }
  std::printf("  %-10s heuristic #0 %8.4f ms (%5.0f TFLOP/s)   best of %zu (#%d) %8.4f ms (%5.0f TFLOP/s)\n", what, first, gflop / first, g.algos.size(), arg,
              best, gflop / best);
}

void shape(int64_t M, int64_t N, int64_t K, int n) {
  const double gflop = 2.0 * M * N * K * n / 1e9;
  std::printf("X[%ld, %ld] times %d weights [%ld, %ld] (%.1f GFLOP)\n", (long)M, (long)K, n, (long)K, (long)N, gflop);
  __nv_bfloat16* x = alloc(M * K, 1);
  // One allocation of n weights and of n outputs: the separate and pointer-array runs use the
  // same buffers as the strided one (their placement does not matter to them).
  __nv_bfloat16* w = alloc(K * N * n, 2);
  __nv_bfloat16* y = alloc(M * N * n, 3);
  __nv_bfloat16* wcat = alloc(K * N * n, 4);  // [K, n N]
  const void* hp[3][3];
  for (int i = 0; i < n; ++i) hp[0][i] = w + K * N * i, hp[1][i] = x, hp[2][i] = y + M * N * i;
  void** dp;
  CK(cudaMalloc(&dp, sizeof hp));
  CK(cudaMemcpy(dp, hp, sizeof hp, cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize());

  Gemm one(M, N, K, 1, false, 0, 0, 0);
  report("separate", one, gflop, [&](int algo) {
    for (int i = 0; i < n; ++i)
      if (one.run(algo, w + K * N * i, x, y + M * N * i, 0) != CUBLAS_STATUS_SUCCESS) return false;
    return true;
  });
  Gemm ptr(M, N, K, n, true, 0, 0, 0);
  report("pointers", ptr, gflop, [&](int algo) { return ptr.run(algo, dp, dp + 3, dp + 6, 0) == CUBLAS_STATUS_SUCCESS; });
  Gemm strided(M, N, K, n, false, K * N, 0, M * N);
  report("strided", strided, gflop, [&](int algo) { return strided.run(algo, w, x, y, 0) == CUBLAS_STATUS_SUCCESS; });
  Gemm merged(M, N * n, K, 1, false, 0, 0, 0);
  report("merged", merged, gflop, [&](int algo) { return merged.run(algo, wcat, x, y, 0) == CUBLAS_STATUS_SUCCESS; });
  CK(cudaDeviceSynchronize());
  cudaFree(x), cudaFree(w), cudaFree(y), cudaFree(wcat), cudaFree(dp);
}

}  // namespace

int main() {
  CB(cublasLtCreate(&lt));
  CK(cudaMalloc(&workspace, kWorkspace));
  CK(cudaMalloc(&scrub, kScrub));
  shape(2048, 2048, 2048, 3);  // q, k, v of the large block (D 2048)
  shape(2048, 5632, 2048, 2);  // gate, up (F 5632)
  shape(512, 256, 256, 3);     // the small block's q, k, v (B4 S128 D256)
  shape(512, 704, 256, 2);     // its gate, up
  return 0;
}
