#include "lower/cpu/matmul_strategy.h"

#include <algorithm>

namespace shapeml::lower::cpu {
namespace {

using types::DType;

std::string list(const std::vector<int64_t>& v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + "]";
}

// Largest multiple of `unit` that divides `n` and is <= cap (at least `unit`,
// which must divide n).
int64_t tile_for(int64_t n, int64_t unit, int64_t cap) {
  int64_t best = unit;
  for (int64_t t = unit; t <= std::min(n, cap); t += unit)
    if (n % t == 0) best = t;
  return best;
}

int64_t largest_divisor_from(int64_t n, std::initializer_list<int64_t> cands) {
  for (int64_t c : cands)
    if (c <= n && n % c == 0) return c;
  return 1;
}

}  // namespace

MatmulPlan plan_matmul(bool batched, int64_t M, int64_t N, int64_t K, DType dt, const EmitOptions& o) {
  MatmulPlan p;
  std::string dims = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  if (o.matmul == MatmulStrategy::Naive) {
    p.text = "naive loops (requested) " + dims;
    return p;
  }
  int acc_bits = (dt == DType::F64 || dt == DType::I64) ? 64 : 32;
  int64_t lanes = std::max<int64_t>(1, o.vector_bits / acc_bits);
  // Micro-tile: mr rows x nr columns of accumulators held in vector registers
  // (16 registers with AVX2: 6 x 2 or 4 x 2 vectors; 32 with AVX-512: 8 x 2).
  int64_t mr_cap = o.vector_bits >= 512 ? 8 : 4;
  int64_t nr = largest_divisor_from(N, {2 * lanes, lanes, lanes / 2 > 0 ? lanes / 2 : 1, 4, 2, 1});
  int64_t mr = 1;
  if (o.vector_bits < 512 && nr == 2 * lanes && M % 6 == 0) {
    // 12 accumulators cover the FMA latency better than 8 (Zen 3: 4 cycles,
    // 2 pipes); 384x512x512 f32: 2.9 -> 2.5 ms.
    mr = 6;
  } else {
    for (int64_t c = mr_cap; c >= 1; --c)
      if (M % c == 0) {
        mr = c;
        break;
      }
  }
  // Row tiles of up to 64, or 128 when B is larger than a core's L2 (1 MiB):
  // every row tile copies its B tiles again (packing below), and from L3 or
  // memory those copies are a visible share of a large GEMM's time
  // (docs/design/cpu-codegen.md, "128-row tiles"). Small B keeps 64-row
  // tiles and twice the parallel row ranges.
  const int64_t b_bytes = K * N * (acc_bits / 8);
  int64_t tm = tile_for(M, mr, b_bytes > (int64_t{1} << 20) ? 128 : 64), tn = tile_for(N, nr, 128), tk = tile_for(K, 1, 64);
  int64_t kr = 1;
  const auto& oo = o.matmul_tile_outer;
  const auto& oi = o.matmul_tile_inner;
  bool valid = oo.size() == 3 && oi.size() == 3;
  for (size_t i = 0; valid && i < 3; ++i) valid = oo[i] > 0 && oi[i] > 0 && oo[i] % oi[i] == 0;
  if (valid && M % oo[0] == 0 && N % oo[1] == 0 && K % oo[2] == 0) {
    tm = oo[0], tn = oo[1], tk = oo[2];
    mr = oi[0], nr = oi[1], kr = oi[2];
  }
  p.tiled = true;
  if (batched) {
    p.outer = {1, tm, tn, tk};
    p.inner = {1, mr, nr, kr};
  } else {
    p.outer = {tm, tn, tk};
    p.inner = {mr, nr, kr};
  }
  // Packing: B rows `N * elem` bytes apart alias in L1 (a 4 KiB stride puts
  // the k rows of a micro-panel into one cache set), so from a 2 KiB stride
  // each outer B tile is copied into a contiguous buffer (tk x tn, row stride
  // tn) before the micro-kernels sweep it. 512x256x1024 f32: 5.1 -> 3.5 ms.
  p.pack_b = N * (acc_bits / 8) >= 2048 && tk > 1;
  p.text = "tile " + list(p.outer) + " then " + list(p.inner) + " + vectorize" + (p.pack_b ? ", pack B tile" : "") + " (" + dims + ")";
  return p;
}

}  // namespace shapeml::lower::cpu
