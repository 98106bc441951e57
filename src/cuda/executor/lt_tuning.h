// The cuBLASLt algorithm of a plan's GEMM, optionally chosen by timing
// (SHAPEML_CUBLASLT_TUNING=on; docs/design/cublaslt-tuning.md): the
// heuristic's first choice is a guess from a performance model (for the
// small GEMMs of a transformer block on the H200 it picks split-K variants,
// a second reduce kernel per GEMM). With tuning on, plan_create asks for up
// to kLtCandidates, times each on scratch buffers of the GEMM's sizes and
// keeps the fastest. The choice is cached per process by the GEMM's full
// description, so two plans with the same GEMM (a fused and an unfused plan,
// say) compute it with the same algorithm and the same bits. Off by default:
// inside the block's graph replay the timed choices measured no faster.
#pragma once
#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shapeml::cuda {

constexpr int kLtCandidates = 8;

/// One GEMM as prepared for cuBLASLt (the executor's column-major view:
/// Lt's A is our B, its B our A) and the bytes each operand spans.
struct LtProblem {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  bool f64 = false, bias = false, accumulate = false;
  size_t lt_a_bytes = 0, lt_b_bytes = 0, c_bytes = 0, bias_bytes = 0;
  int device = 0;
  std::string key;  // everything that decides the algorithm's validity and speed
};

/// Whether SHAPEML_CUBLASLT_TUNING=on asks for timed choices (read at each
/// plan_create); off, plan_create asks the heuristic for one candidate only.
bool lt_tuning_on();

/// The index into `candidates` to use: the fastest when timing ran, else 0.
/// Never fails: any error while timing (no memory for the scratch buffers,
/// a candidate that does not run) keeps the heuristic's order. `note` says
/// what was decided (for traces and tests).
size_t fastest_lt_candidate(cublasLtHandle_t h, const LtProblem& p, const std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                            std::string& note);

}  // namespace shapeml::cuda
