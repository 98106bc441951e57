// Fused attention for f32 (kernels.h, plan/attention_launch.h;
// docs/design/gpu-attention.md): FlashAttention's forward pass on the FP32
// cores, for the short sequences where the unfused chain (head-split
// permute, scores GEMM, causal softmax, probabilities GEMM, head-merge
// permute) is five launches of a few microseconds each.
//
// fp32 throughout: the scores, the online softmax (running row max and sum,
// in the exp2 domain) and the output accumulators are f32 and every product
// is an FMA in f32, so the result has fp32 accuracy (no TF32 rounding of the
// operands), whatever the plan's matmuls use.
//
// One block of 128 threads owns kBM = 16 query rows of one (batch, head);
// eight consecutive lanes serve one row: each computes the scores of four of
// the tile's 32 keys and accumulates an eighth of the row's head dimension
// (four consecutive dims of every 32). Shared memory is read as float4, so
// that every FMA is not one shared-memory load.
// The row's max and sum are reduced across its eight lanes with shuffles, so
// no block-wide barrier sits between the scores and the products. Key and
// value tiles go through shared memory with rows padded by four floats (the
// reads of k across rows are then free of bank conflicts). Under a causal mask a
// block stops at the last key its rows can see.
#include <cstdint>
#include <type_traits>

#include "cuda/executor/attention_common.cuh"
#include "cuda/executor/kernels.h"
#include "plan/attention_launch.h"

namespace shapeml::cuda::kern {
namespace {

constexpr int kThreads = 128;
constexpr int kBM = 16;                    // query rows per block
constexpr int kBN = 32;                    // keys per tile
constexpr int kLanesPerRow = kThreads / kBM;  // 8
constexpr int kKeysPerLane = kBN / kLanesPerRow;  // 4

template <int kDH> struct F32Tiles {
  // Rows padded by 4 floats: 16-byte aligned for the float4 reads, and the
  // eight rows a quarter-warp reads land in distinct banks.
  static constexpr int kLD = kDH + 4;
  static constexpr int kDimsPerLane = kDH / kLanesPerRow;  // lane c: dims 4c + 32m + t
  static constexpr int kLP = kBN + 4;                       // a row of probabilities
  static constexpr size_t kSmem = static_cast<size_t>(kBM * kLD + 2 * kBN * kLD + kBM * kLP) * sizeof(float);
};

// One [kBN or kBM rows] x kDH tile of an operand, moved global -> registers
// -> shared memory: the loads of the next tile are issued before the
// current one is computed (they are in flight during it), as 16-byte loads
// when every pointer and stride allows (kVec), else one float at a time.
template <int kRows, int kDH, bool kVec> struct TileLoad {
  static constexpr int kG = kVec ? 4 : 1;
  static constexpr int kPerThread = kRows * kDH / kG / kThreads;
  static_assert(kPerThread * kG * kThreads == kRows * kDH, "whole tiles per thread");
  using Vec = typename std::conditional<kVec, float4, float>::type;
  Vec r[kPerThread];

  __device__ __forceinline__ void fetch(const float* base, int64_t row_stride, int64_t row0, int64_t rows, int dh, int tid) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int e = (tid + i * kThreads) * kG, j = e / kDH, d = e % kDH;
      const int64_t row = row0 + j;
      const bool in = row < rows && d < dh;  // kVec: dh % 4 == 0, so the whole group is in
      if constexpr (kVec) r[i] = in ? *reinterpret_cast<const float4*>(base + row * row_stride + d) : make_float4(0.f, 0.f, 0.f, 0.f);
      else r[i] = in ? base[row * row_stride + d] : 0.f;
    }
  }
  __device__ __forceinline__ void store(float* dst, int ld, int tid) const {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int e = (tid + i * kThreads) * kG, j = e / kDH, d = e % kDH;
      if constexpr (kVec) *reinterpret_cast<float4*>(dst + j * ld + d) = r[i];
      else dst[j * ld + d] = r[i];
    }
  }
};

template <int kDH, bool kVec> __global__ void __launch_bounds__(kThreads) attention_f32_kernel(Attention a) {
  wait_for_predecessor();
  using T = F32Tiles<kDH>;
  extern __shared__ __align__(16) float smem_f32[];
  float* sq = smem_f32;           // [kBM][kLD]
  float* sk = sq + kBM * T::kLD;  // [kBN][kLD]
  float* sv = sk + kBN * T::kLD;  // [kBN][kLD]
  float* sp = sv + kBN * T::kLD;  // [kBM][kLP]

  const int tid = static_cast<int>(threadIdx.x);
  const int r = tid / kLanesPerRow, c = tid % kLanesPerRow;
  const int64_t h = blockIdx.y, b = blockIdx.z, hk = h / a.group;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kBM;
  const int dh = static_cast<int>(a.dh);
  const float* q = static_cast<const float*>(a.q) + b * a.stride[0][0] + h * a.stride[0][1];
  const float* k = static_cast<const float*>(a.k) + b * a.stride[1][0] + hk * a.stride[1][1];
  const float* v = static_cast<const float*>(a.v) + b * a.stride[2][0] + hk * a.stride[2][1];
  float* o = static_cast<float*>(a.o) + b * a.stride[3][0] + h * a.stride[3][1];

  {
    TileLoad<kBM, kDH, kVec> tq;
    tq.fetch(q, a.stride[0][2], row0, a.sq, dh, tid);
    tq.store(sq, T::kLD, tid);
  }

  // The keys this block reads: all of them, or, under a causal mask, up to
  // the last one its last row sees.
  const int64_t last_row = (row0 + kBM < a.sq ? row0 + kBM : a.sq) - 1;
  int64_t kend = a.sk;
  if (a.causal) {
    const int64_t see = last_row + a.offset + 1;
    kend = see < 0 ? 0 : see < kend ? see : kend;
  }

  const int64_t qi = row0 + r;
  const float to_log2 = a.scale * 1.4426950408889634f;  // scores in the exp2 domain
  float m = -INFINITY, l = 0.f;                          // the row's running max and sum
  float acc[T::kDimsPerLane];
#pragma unroll
  for (int j = 0; j < T::kDimsPerLane; ++j) acc[j] = 0.f;

  // Prefetching holds a tile of k and of v in registers; the scalar path of
  // the widest head would spill them, so it loads each tile when it needs it.
  constexpr bool kPrefetch = kVec || kDH <= 64;
  TileLoad<kBN, kDH, kVec> tk, tv;
  if (kPrefetch && kend > 0) tk.fetch(k, a.stride[1][2], 0, a.sk, dh, tid), tv.fetch(v, a.stride[2][2], 0, a.sk, dh, tid);
  for (int64_t k0 = 0; k0 < kend; k0 += kBN) {
    if (!kPrefetch) tk.fetch(k, a.stride[1][2], k0, a.sk, dh, tid), tv.fetch(v, a.stride[2][2], k0, a.sk, dh, tid);
    __syncthreads();  // the previous tile is consumed (and, the first time, q is written)
    tk.store(sk, T::kLD, tid);
    tv.store(sv, T::kLD, tid);
    __syncthreads();
    if (kPrefetch && k0 + kBN < kend)  // the next tile's loads fly while this one computes
      tk.fetch(k, a.stride[1][2], k0 + kBN, a.sk, dh, tid), tv.fetch(v, a.stride[2][2], k0 + kBN, a.sk, dh, tid);

    float s[kKeysPerLane];
#pragma unroll
    for (int jj = 0; jj < kKeysPerLane; ++jj) s[jj] = 0.f;
#pragma unroll 4
    for (int d = 0; d < kDH; d += 4) {  // padded dimensions are zero in q and k
      const float4 qd = *reinterpret_cast<const float4*>(sq + r * T::kLD + d);
#pragma unroll
      for (int jj = 0; jj < kKeysPerLane; ++jj) {
        const float4 kd = *reinterpret_cast<const float4*>(sk + (c + kLanesPerRow * jj) * T::kLD + d);
        s[jj] = fmaf(qd.x, kd.x, s[jj]);
        s[jj] = fmaf(qd.y, kd.y, s[jj]);
        s[jj] = fmaf(qd.z, kd.z, s[jj]);
        s[jj] = fmaf(qd.w, kd.w, s[jj]);
      }
    }
    float tile_max = -INFINITY;
#pragma unroll
    for (int jj = 0; jj < kKeysPerLane; ++jj) {
      const int64_t kj = k0 + c + kLanesPerRow * jj;
      const bool visible = kj < a.sk && qi < a.sq && (!a.causal || kj <= qi + a.offset);
      s[jj] = visible ? s[jj] * to_log2 : -INFINITY;
      tile_max = fmaxf(tile_max, s[jj]);
    }
#pragma unroll
    for (int w = 1; w < kLanesPerRow; w <<= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, w));
    const float m_new = fmaxf(m, tile_max);
    // Nothing visible yet: shift by 0, so exp2(-inf) is 0, never NaN.
    const float shift = m_new == -INFINITY ? 0.f : m_new;
    const float alpha = exp2f(m - shift);
    float psum = 0.f;
#pragma unroll
    for (int jj = 0; jj < kKeysPerLane; ++jj) {
      const float p = exp2f(s[jj] - shift);
      sp[r * T::kLP + c + kLanesPerRow * jj] = p;
      psum += p;
    }
#pragma unroll
    for (int w = 1; w < kLanesPerRow; w <<= 1) psum += __shfl_xor_sync(0xffffffffu, psum, w);
    l = l * alpha + psum;
    m = m_new;
#pragma unroll
    for (int j = 0; j < T::kDimsPerLane; ++j) acc[j] *= alpha;
    __syncwarp();  // row r's probabilities are written and read by its own eight lanes, one warp
#pragma unroll 2
    for (int j = 0; j < kBN; j += 4) {
      const float4 p4 = *reinterpret_cast<const float4*>(sp + r * T::kLP + j);
      const float pj[4] = {p4.x, p4.y, p4.z, p4.w};
#pragma unroll
      for (int t = 0; t < 4; ++t)
#pragma unroll
        for (int m = 0; m < kDH / 32; ++m) {
          const float4 vv = *reinterpret_cast<const float4*>(sv + (j + t) * T::kLD + 4 * c + 32 * m);
          acc[4 * m + 0] = fmaf(pj[t], vv.x, acc[4 * m + 0]);
          acc[4 * m + 1] = fmaf(pj[t], vv.y, acc[4 * m + 1]);
          acc[4 * m + 2] = fmaf(pj[t], vv.z, acc[4 * m + 2]);
          acc[4 * m + 3] = fmaf(pj[t], vv.w, acc[4 * m + 3]);
        }
    }
  }

  if (qi < a.sq) {
    // A row with no visible key: l = 0 and acc = 0, so 0/0 = NaN, as the
    // unfused softmax gives.
#pragma unroll
    for (int jj = 0; jj < T::kDimsPerLane; ++jj) {
      const int d = 4 * c + 32 * (jj / 4) + jj % 4;
      if (d < dh) o[qi * a.stride[3][2] + d] = acc[jj] / l;
    }
  }
}

template <int kDH> cudaError_t launch_f32(const Attention& a, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((a.sq + kBM - 1) / kBM), static_cast<unsigned>(a.heads), static_cast<unsigned>(a.batch));
  static_assert(F32Tiles<kDH>::kSmem <= 48 * 1024, "the default shared-memory limit: no opt-in attribute needed");
  // 16-byte loads need every row start 16-byte aligned: pointers, strides in
  // multiples of 4 floats, and whole 4-float groups of the head.
  using attention_detail::aligned16;
  bool vec = a.dh % 4 == 0 && aligned16(a.q) && aligned16(a.k) && aligned16(a.v);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) vec = vec && a.stride[i][j] % 4 == 0;
  return launch_dependent(vec ? attention_f32_kernel<kDH, true> : attention_f32_kernel<kDH, false>, grid, dim3(kThreads),
                          F32Tiles<kDH>::kSmem, s, a);
}

}  // namespace

cudaError_t attention_f32(const Attention& a, cudaStream_t s) {
  if (a.sk > shapeml::plan::kAttentionF32ShortKeys) return attention_f32_tiled(a, s);
  if (a.dh <= 32) return launch_f32<32>(a, s);
  if (a.dh <= 64) return launch_f32<64>(a, s);
  if (a.dh <= 128) return launch_f32<128>(a, s);
  return cudaErrorInvalidValue;
}

}  // namespace shapeml::cuda::kern
