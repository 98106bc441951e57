// Sibling projections merged into one GEMM: the Q, K and V projections of
// attention read one activation with weights of one shape, and each result
// is split into heads by a permute (grouped by group_permutes). When the
// weights are small (kMergeWeightBytes in all; measured in
// docs/design/gpu-fused-kernels.md: there the GEMMs are launch-bound and the
// copy is cheap), the plan instead
//   1. concatenates the weights along N in one launch (a grouped copy),
//   2. runs one GEMM x [K, k*N] -> [rows, k*N],
//   3. splits the heads of all k results in one permute, writing the k
//      results back to back; each former result is a view at its offset.
// k = 2..4 GEMMs; the grouped permute's pairs must each read a view of one
// of the GEMMs' results, nothing else may read those results, the GEMMs have
// no epilogue. 4 launches (k GEMMs, 1 permute) become 3. The GEMM computes
// every output element as the separate GEMMs did (the same dot products;
// the algorithm may differ, so not bit for bit).
//
// The same for a fused attention launch (fuse_attention.h) whose q, k and v
// are read in place from three such GEMMs' results: one GEMM, and the launch
// reads the three at their column offsets of the merged result (3 GEMMs ->
// 1 concat + 1 GEMM).
//
// Not for TF32 GEMMs (op "tf32"): there the separate GEMMs, parallel graph
// branches, measured faster than the copy and one wider GEMM.
//
// Plain data, never fails: a plan that does not match is left as it is.
#pragma once
#include <cstdint>

#include "plan/plan.h"

namespace shapeml::lower::gpu {

constexpr int64_t kMergeWeightBytes = int64_t{4} << 20;

/// Rewrites every matching group of `plan` in place; returns how many.
int merge_projections(plan::GpuPlan& plan);

}  // namespace shapeml::lower::gpu
