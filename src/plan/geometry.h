// Host-side geometry of plan launches: dense and broadcast strides, and the
// coalescing of an iteration space (size-1 dims dropped, neighbours merged
// where every operand is contiguous across them). The plan verifier uses it
// to decide whether a launch fits the kernels' limits (plan/limits.h), the
// executor to compute the strides it hands the kernels, so the two cannot
// disagree about what "fits" means. Shapes and strides are in elements.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace shapeml::plan {

using Shape = std::vector<int64_t>;

/// Row-major strides of a dense tensor of `s`.
Shape dense_strides(const Shape& s);
/// The product of the dimensions (1 for rank 0).
int64_t numel(const Shape& s);
/// "[2 3 4]", as plan text and messages write shapes.
std::string shape_str(const Shape& s);

/// Strides of `in` broadcast to `out`: right-aligned, missing leading dims
/// and size-1 dims stretched (stride 0). False if `in` does not broadcast.
bool broadcast_strides(const Shape& in, const Shape& out, Shape& st);

/// The iteration space over `shape` with per-operand `strides`, simplified:
/// size-1 dims dropped, neighbours merged where every operand is contiguous
/// across them (a single element stays one dim of size 1). `sh` and `st`
/// get the result whatever its rank; the caller compares the rank with the
/// kernels' limit. (A fused launch's iota pseudo-operand, stride 1 on its
/// axis and 0 elsewhere, is contiguous across no neighbour of the axis, so
/// the axis survives as a dim of its own.)
void coalesce_dims(const Shape& shape, const std::vector<Shape>& strides, Shape& sh, std::vector<Shape>& st);

/// The rank of coalesce_dims' result.
size_t coalesced_rank(const Shape& shape, const std::vector<Shape>& strides);

/// A matmul's operands, read as the executor runs them: logical sizes (A
/// [..., M, K] x B [..., K, N] whatever the storage order), the broadcast
/// batch shape, and how many separate strided-batched GEMMs that batch
/// space takes (1 when B is shared and folded into M). Filled by
/// matmul_geometry, which returns "" or what is wrong.
struct MatmulGeometry {
  int64_t m = 0, k = 0, n = 0;
  Shape batch_a, batch_b, batch;  // batch dims of A, of B, and broadcast
  bool folded = false;            // B shared, A dense: one GEMM with the batch in M
  Shape coalesced_batch;          // the batch space after coalescing (not folded)
  std::vector<Shape> coalesced_strides;  // A's and B's strides over it, in matrices
  int64_t pieces = 0;             // separate GEMMs (each over the innermost coalesced dim)
};
std::string matmul_geometry(const Shape& a, const Shape& b, bool trans_a, bool trans_b, MatmulGeometry& g);

}  // namespace shapeml::plan
