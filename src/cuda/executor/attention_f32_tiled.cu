// Fused attention for f32 on the FP32 cores, for sequences longer than
// attention_f32.cu serves (kernels.h: attention_f32 chooses): FlashAttention's
// forward pass with the register tiling of an SGEMM, so that an FMA costs
// well under one shared-memory load.
//
// A block of 256 threads owns 64 query rows of one (batch, head) and walks
// the keys in tiles of 64. Thread (ty, tx) of a 16 x 16 grid computes the
// scores of rows 4ty..4ty+3 against keys 4tx..4tx+3 (16 accumulators) from q
// and k held transposed in shared memory ([dim][row]: one 16-byte load gives
// four rows or four keys, and the sixteen ty of a warp read one address), and
// accumulates the output of the same four rows at dims 4tx + 64m (8 or 16
// accumulators) from v ([key][dim]) and the probabilities ([key][row]). The
// online softmax (row max and sum in the exp2 domain) is reduced across the
// row's sixteen tx, which share a half-warp. Everything is an f32 FMA: fp32
// accuracy, as attention_f32.cu. Under a causal mask a block stops at the
// last key its rows see, and the grid runs the longest rows first. The
// head dimension is padded to 64 or 128 with zeros.
#include <cstdint>

#include "cuda/executor/attention_common.cuh"
#include "cuda/executor/kernels.h"

namespace shapeml::cuda::kern {
namespace {

constexpr int kTiledThreads = 256;
constexpr int kTM = 64;  // query rows per block
constexpr int kTN = 64;  // keys per tile

// 112 KiB for kDH = 128: two blocks fit an SM's 227 KiB.
template <int kDH> struct TiledSmem {
  static constexpr size_t kFloats = static_cast<size_t>(kDH * kTM + kDH * kTN + kTN * kDH + kTN * kTM);
  static constexpr size_t kBytes = kFloats * sizeof(float);
};

// Where p[key][row group g] (four rows) lies: the row groups of a key are
// permuted by its key group, so that the sixteen keys 4tx + j one warp
// stores at once fall into different banks; readers (one key, two row
// groups) are unaffected.
__device__ __forceinline__ int p_at(int key, int g) { return key * kTM + 4 * (g ^ ((key >> 2) & 15)); }

// Rows [row0, row0 + 64) of an operand (dims [0, kDH), zero past `rows` and
// `dh`) into shared memory, transposed ([dim][row], ld 64: lanes take
// consecutive rows, so that the stores hit consecutive banks) or not
// ([row][dim], ld kDH: lanes take consecutive dims, coalesced); kVec:
// 16-byte global loads (dh % 4 == 0, aligned).
template <int kDH, bool kVec, bool kTransposed>
__device__ __forceinline__ void load_tile(float* dst, const float* base, int64_t row_stride, int64_t row0, int64_t rows, int dh, int tid) {
  constexpr int kG = kVec ? 4 : 1;
  constexpr int kGroups = kDH / kG;                      // dim groups a row has
  constexpr int kPer = kTN * kGroups / kTiledThreads;  // per thread
#pragma unroll 4
  for (int i = 0; i < kPer; ++i) {
    const int e = tid + i * kTiledThreads;
    const int j = kTransposed ? e % kTN : e / kGroups, d = (kTransposed ? e / kTN : e % kGroups) * kG;
    const int64_t row = row0 + j;
    float x[kG];
    if constexpr (kVec) {
      const float4 f = row < rows && d < dh ? *reinterpret_cast<const float4*>(base + row * row_stride + d) : make_float4(0.f, 0.f, 0.f, 0.f);
      x[0] = f.x, x[1] = f.y, x[2] = f.z, x[3] = f.w;
    } else {
      x[0] = row < rows && d < dh ? base[row * row_stride + d] : 0.f;
    }
#pragma unroll
    for (int t = 0; t < kG; ++t) {
      if constexpr (kTransposed) dst[(d + t) * kTN + j] = x[t];
      else dst[j * kDH + d + t] = x[t];
    }
  }
}

template <int kDH, bool kVec> __global__ void __launch_bounds__(kTiledThreads, 2) attention_f32_tiled_kernel(Attention a) {
  wait_for_predecessor();
  constexpr int kDM = kDH / 64;  // output float4 groups per thread (dims 4tx + 64m)
  extern __shared__ __align__(16) float smem_tiled[];
  float* sq = smem_tiled;      // [kDH][64 rows]
  float* sk = sq + kDH * kTM;  // [kDH][64 keys]
  float* sv = sk + kDH * kTN;  // [64 keys][kDH]
  float* sp = sv + kTN * kDH;  // [64 keys][64 rows], permuted (p_at)

  const int tid = static_cast<int>(threadIdx.x), tx = tid % 16, ty = tid / 16;
  const int64_t h = blockIdx.y, b = blockIdx.z, hk = h / a.group;
  // Longest rows first under a causal mask (their blocks read the most keys).
  const int64_t tiles = (a.sq + kTM - 1) / kTM;
  const int64_t row0 = (a.causal ? tiles - 1 - static_cast<int64_t>(blockIdx.x) : static_cast<int64_t>(blockIdx.x)) * kTM;
  const int dh = static_cast<int>(a.dh);
  const float* q = static_cast<const float*>(a.q) + b * a.stride[0][0] + h * a.stride[0][1];
  const float* k = static_cast<const float*>(a.k) + b * a.stride[1][0] + hk * a.stride[1][1];
  const float* v = static_cast<const float*>(a.v) + b * a.stride[2][0] + hk * a.stride[2][1];
  float* o = static_cast<float*>(a.o) + b * a.stride[3][0] + h * a.stride[3][1];

  load_tile<kDH, kVec, true>(sq, q, a.stride[0][2], row0, a.sq, dh, tid);

  const int64_t last_row = (row0 + kTM < a.sq ? row0 + kTM : a.sq) - 1;
  int64_t kend = a.sk;
  if (a.causal) {
    const int64_t see = last_row + a.offset + 1;
    kend = see < 0 ? 0 : see < kend ? see : kend;
  }

  const float to_log2 = a.scale * 1.4426950408889634f;
  float m[4], l[4], acc[4][4 * kDM];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = -INFINITY, l[i] = 0.f;
#pragma unroll
    for (int j = 0; j < 4 * kDM; ++j) acc[i][j] = 0.f;
  }

  for (int64_t k0 = 0; k0 < kend; k0 += kTN) {
    __syncthreads();  // the previous tile's k, v and p are consumed
    load_tile<kDH, kVec, true>(sk, k, a.stride[1][2], k0, a.sk, dh, tid);
    load_tile<kDH, kVec, false>(sv, v, a.stride[2][2], k0, a.sk, dh, tid);
    __syncthreads();

    float s[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) s[i][j] = 0.f;
#pragma unroll 4
    for (int d = 0; d < kDH; ++d) {
      const float4 qv = *reinterpret_cast<const float4*>(sq + d * kTM + 4 * ty);
      const float4 kv = *reinterpret_cast<const float4*>(sk + d * kTN + 4 * tx);
      const float qa[4] = {qv.x, qv.y, qv.z, qv.w}, ka[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) s[i][j] = fmaf(qa[i], ka[j], s[i][j]);
    }

    // Mask, scale into the exp2 domain, and the online softmax per row.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int64_t qi = row0 + 4 * ty + i;
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t kj = k0 + 4 * tx + j;
        const bool visible = kj < a.sk && qi < a.sq && (!a.causal || kj <= qi + a.offset);
        s[i][j] = visible ? s[i][j] * to_log2 : -INFINITY;
        tile_max = fmaxf(tile_max, s[i][j]);
      }
#pragma unroll
      for (int w = 1; w < 16; w <<= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, w));
      const float m_new = fmaxf(m[i], tile_max);
      const float shift = m_new == -INFINITY ? 0.f : m_new;  // nothing visible yet: exp2(-inf) = 0, not NaN
      const float alpha = exp2f(m[i] - shift);
      float psum = 0.f;
#pragma unroll
      for (int j = 0; j < 4; ++j) psum += (s[i][j] = exp2f(s[i][j] - shift));
#pragma unroll
      for (int w = 1; w < 16; w <<= 1) psum += __shfl_xor_sync(0xffffffffu, psum, w);
      l[i] = l[i] * alpha + psum;
      m[i] = m_new;
#pragma unroll
      for (int j = 0; j < 4 * kDM; ++j) acc[i][j] *= alpha;
    }
    // p as [key][row]: four rows of one key in one 16-byte store.
#pragma unroll
    for (int j = 0; j < 4; ++j) *reinterpret_cast<float4*>(sp + p_at(4 * tx + j, ty)) = make_float4(s[0][j], s[1][j], s[2][j], s[3][j]);
    __syncthreads();

    // acc[rows][dims] += p[rows][keys] v[keys][dims]
    const int kkeys = static_cast<int>(kend - k0 < kTN ? kend - k0 : kTN);  // keys past kend have p = 0 and v = 0: skip them
#pragma unroll 4
    for (int j = 0; j < kkeys; ++j) {
      const float4 pv = *reinterpret_cast<const float4*>(sp + p_at(j, ty));
      const float pa[4] = {pv.x, pv.y, pv.z, pv.w};
#pragma unroll
      for (int mm = 0; mm < kDM; ++mm) {
        const float4 vv = *reinterpret_cast<const float4*>(sv + j * kDH + 4 * tx + 64 * mm);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          acc[i][4 * mm + 0] = fmaf(pa[i], vv.x, acc[i][4 * mm + 0]);
          acc[i][4 * mm + 1] = fmaf(pa[i], vv.y, acc[i][4 * mm + 1]);
          acc[i][4 * mm + 2] = fmaf(pa[i], vv.z, acc[i][4 * mm + 2]);
          acc[i][4 * mm + 3] = fmaf(pa[i], vv.w, acc[i][4 * mm + 3]);
        }
      }
    }
  }

  // A row with no visible key: l = 0 and acc = 0, so 0/0 = NaN, as the
  // unfused softmax gives.
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t qi = row0 + 4 * ty + i;
    if (qi >= a.sq) continue;
#pragma unroll
    for (int mm = 0; mm < kDM; ++mm)
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int d = 4 * tx + 64 * mm + t;
        if (d < dh) o[qi * a.stride[3][2] + d] = acc[i][4 * mm + t] / l[i];
      }
  }
}

template <int kDH, bool kVec> cudaError_t allow_tiled_smem() {
  return cudaFuncSetAttribute(attention_f32_tiled_kernel<kDH, kVec>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(TiledSmem<kDH>::kBytes));
}

template <int kDH> cudaError_t launch_tiled(const Attention& a, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((a.sq + kTM - 1) / kTM), static_cast<unsigned>(a.heads), static_cast<unsigned>(a.batch));
  using attention_detail::aligned16;
  bool vec = a.dh % 4 == 0 && aligned16(a.q) && aligned16(a.k) && aligned16(a.v);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) vec = vec && a.stride[i][j] % 4 == 0;
  return launch_dependent(vec ? attention_f32_tiled_kernel<kDH, true> : attention_f32_tiled_kernel<kDH, false>, grid, dim3(kTiledThreads),
                          TiledSmem<kDH>::kBytes, s, a);
}

}  // namespace

cudaError_t attention_f32_tiled_setup() {
  cudaError_t e = allow_tiled_smem<64, true>();
  if (e == cudaSuccess) e = allow_tiled_smem<64, false>();
  if (e == cudaSuccess) e = allow_tiled_smem<128, true>();
  if (e == cudaSuccess) e = allow_tiled_smem<128, false>();
  return e;
}

cudaError_t attention_f32_tiled(const Attention& a, cudaStream_t s) {
  if (a.dh <= 64) return launch_tiled<64>(a, s);
  if (a.dh <= 128) return launch_tiled<128>(a, s);
  return cudaErrorInvalidValue;
}

}  // namespace shapeml::cuda::kern
