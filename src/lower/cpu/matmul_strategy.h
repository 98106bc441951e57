// The matmul tiling strategy of the CPU back end (docs/design/cpu-codegen.md):
// which outer tiles, register micro-tile and packing a matmul of a given
// size gets for the target's vector width. emit_mlir writes the choice on
// the linalg op as attributes; pipeline.cpp turns them into a transform
// script (tile, pad/pack, tile, vectorize).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lower/cpu/emit_mlir.h"
#include "types/dtype.h"

namespace shapeml::lower::cpu {

/// The strategy of one matmul.
struct MatmulPlan {
  bool tiled = false;
  std::vector<int64_t> outer, inner;  // per loop of the op: [b,] m, n, k
  bool pack_b = false;                // copy each outer B tile to a contiguous buffer
  std::string text;                   // for the attribute and the comment
};

/// The strategy for an [M, K] x [K, N] product (`batched`: with a leading
/// batch loop) of dtype `dt` under `o` (its vector width, a requested naive
/// strategy, tile overrides).
MatmulPlan plan_matmul(bool batched, int64_t M, int64_t N, int64_t K, types::DType dt, const EmitOptions& o);

}  // namespace shapeml::lower::cpu
