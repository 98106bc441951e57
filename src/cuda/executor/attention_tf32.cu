// Fused attention for f32 operands in a TF32 plan (kernels.h,
// plan/attention_launch.h; docs/design/gpu-attention.md): FlashAttention-2's
// forward pass on the tensor cores' mma.sync m16n8k8 (TF32 operands, f32
// accumulation), for the plans whose matmuls already run in TF32
// (`--gpu-tf32`, PyTorch's allow_tf32): the attention launch is then as
// precise as the two GEMMs it replaces.
//
// One block of 4 warps owns 64 query rows of one (batch, head), a warp 16.
// The block walks the keys in tiles of kBN (64, or 32 for head dimensions
// over 64, for registers): q k^T into f32 accumulators, scale and mask, an
// online softmax (running row max and sum in the exp2 domain, f32), the
// probabilities rounded to TF32 in registers and multiplied with v into f32
// output accumulators, divided by the row sum once at the end. Operands are
// rounded to TF32 to nearest (cvt.rna) where they enter the tensor cores.
//
// The accumulator layout of the scores mma is not the A layout of the next
// one (a thread holds columns 2t and 2t+1 of a row, the A fragment wants
// columns t and t+4). Since the second product sums over keys, the kernel
// reorders the keys of each 8-key chunk instead of moving data: logical
// column t is key 2t and t+4 is key 2t+1, and v's rows are read in the same
// order, so no shuffle is needed.
//
// Tiles reach shared memory by cp.async (16-byte copies, zero-filled past
// the ends) when every pointer and stride allows, else element by element,
// in two stages (the next key/value tile loads while this one computes);
// rows are padded by 4 floats, which makes every fragment load of q, k and
// v free of bank conflicts.
#include <cstdint>
#include <initializer_list>

#include "cuda/executor/attention_common.cuh"
#include "cuda/executor/kernels.h"

namespace shapeml::cuda::kern {
namespace {

constexpr int kWarps = 4;
constexpr int kBM = 16 * kWarps;  // query rows per block

template <int kDH> struct Tf32Tiles {
  static constexpr int kBN = kDH <= 64 ? 64 : 32;  // key rows per tile
  static constexpr int kLD = kDH + 4;              // shared-memory row, floats
  // q, and two stages of k and v
  static constexpr size_t kSmem = static_cast<size_t>(kBM + 4 * kBN) * kLD * sizeof(float);
};

using namespace attention_detail;


__device__ __forceinline__ uint32_t tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// d += a b: a 16x8 (row-major fragment), b 8x8 (column-major fragment).
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Rows [row0, row0 + kRows) of a [n, dh] operand (rows `stride` floats
// apart) into shared memory, zero past n and past dh.
template <int kDH, int kRows, bool kAligned>
__device__ __forceinline__ void load_tile(float* sm, const float* g, int64_t stride, int row0, int n, int dh) {
  constexpr int kLD = Tf32Tiles<kDH>::kLD, kChunks = kDH / 4;
  for (int c = threadIdx.x; c < kRows * kChunks; c += kWarps * 32) {
    const int r = c / kChunks, d = (c % kChunks) * 4;
    const bool row_ok = row0 + r < n;
    float* dst = sm + r * kLD + d;
    if constexpr (kAligned) {
      const bool ok = row_ok && d < dh;  // dh % 4 == 0 here
      cp_async16(dst, ok ? g + static_cast<int64_t>(row0 + r) * stride + d : g, ok);
    } else {
      const float* src = g + static_cast<int64_t>(row0 + r) * stride + d;
#pragma unroll
      for (int e = 0; e < 4; ++e) dst[e] = row_ok && d + e < dh ? src[e] : 0.0f;
    }
  }
}

template <int kDH, bool kAligned> __global__ void __launch_bounds__(kWarps * 32) attention_tf32_kernel(Attention a) {
  wait_for_predecessor();
  using T = Tf32Tiles<kDH>;
  constexpr int kBN = T::kBN, kLD = T::kLD;
  constexpr int kSN = kBN / 8;  // n-tiles of a score tile (8 keys each)
  constexpr int kON = kDH / 8;  // n-tiles of the output
  constexpr int kKC = kDH / 8;  // k-chunks of q k^T
  extern __shared__ __align__(16) float smem_tf32[];
  float* sq = smem_tf32;
  auto stage_k = [&](int i) { return sq + (kBM + 2 * i * kBN) * kLD; };  // v: kBN rows after it

  const int64_t h = blockIdx.y, b = blockIdx.z, hk = h / a.group;
  const float* q = static_cast<const float*>(a.q) + b * a.stride[0][0] + h * a.stride[0][1];
  const float* k = static_cast<const float*>(a.k) + b * a.stride[1][0] + hk * a.stride[1][1];
  const float* v = static_cast<const float*>(a.v) + b * a.stride[2][0] + hk * a.stride[2][1];
  float* o = static_cast<float*>(a.o) + b * a.stride[3][0] + h * a.stride[3][1];
  const int sq_n = static_cast<int>(a.sq), sk_n = static_cast<int>(a.sk), dh = static_cast<int>(a.dh);
  // The longest causal rows first: block x takes row tile (last - x).
  const int tiles = (sq_n + kBM - 1) / kBM;
  const int q0 = (tiles - 1 - static_cast<int>(blockIdx.x)) * kBM;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row_lo = q0 + warp * 16 + g;  // this thread's rows: row_lo and row_lo + 8

  int kend = sk_n;
  if (a.causal) {
    const int64_t last_row = (q0 + kBM < sq_n ? q0 + kBM : sq_n) - 1;
    const int64_t seen = last_row + a.offset + 1;
    kend = static_cast<int>(seen < 0 ? 0 : seen < sk_n ? seen : sk_n);
  }

  load_tile<kDH, kBM, kAligned>(sq, q, a.stride[0][2], q0, sq_n, dh);
  cp_async_commit();
  if (kend > 0) {
    load_tile<kDH, kBN, kAligned>(stage_k(0), k, a.stride[1][2], 0, sk_n, dh);
    load_tile<kDH, kBN, kAligned>(stage_k(0) + kBN * kLD, v, a.stride[2][2], 0, sk_n, dh);
    cp_async_commit();
  }

  const float scale = a.scale * 1.4426950408889634f;  // scores in the exp2 domain
  float acc[kON][4];
#pragma unroll
  for (int n = 0; n < kON; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
  float mrow[2] = {-INFINITY, -INFINITY}, lrow[2] = {0.0f, 0.0f};
  uint32_t qf[kKC][4];

  for (int k0 = 0, stage = 0; k0 < kend; k0 += kBN, stage ^= 1) {
    cp_async_wait<0>();  // this tile (and q)
    __syncthreads();      // visible to every warp; every warp is done with the other stage
    if (k0 + kBN < kend) {
      load_tile<kDH, kBN, kAligned>(stage_k(stage ^ 1), k, a.stride[1][2], k0 + kBN, sk_n, dh);
      load_tile<kDH, kBN, kAligned>(stage_k(stage ^ 1) + kBN * kLD, v, a.stride[2][2], k0 + kBN, sk_n, dh);
      cp_async_commit();
    }
    if (k0 == 0) {  // q's fragments, rounded once, kept in registers
      const float* p = sq + (warp * 16 + g) * kLD + t;
#pragma unroll
      for (int kc = 0; kc < kKC; ++kc)
        qf[kc][0] = tf32(p[kc * 8]), qf[kc][1] = tf32(p[8 * kLD + kc * 8]), qf[kc][2] = tf32(p[kc * 8 + 4]),
        qf[kc][3] = tf32(p[8 * kLD + kc * 8 + 4]);
    }
    const float* sk = stage_k(stage);
    const float* sv = sk + kBN * kLD;

    float s[kSN][4];
#pragma unroll
    for (int n = 0; n < kSN; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kc = 0; kc < kKC; ++kc)
#pragma unroll
      for (int n = 0; n < kSN; ++n) {
        const float* kp = sk + (n * 8 + g) * kLD + kc * 8 + t;  // b0 = k[key n*8+g][dim kc*8+t], b1 at dim + 4
        mma(s[n], qf[kc], tf32(kp[0]), tf32(kp[4]));
      }

    // Scale, mask, the new row maxima, the probabilities.
    const bool mask = k0 + kBN > sk_n || (a.causal && static_cast<int64_t>(k0) + kBN - 1 > static_cast<int64_t>(q0 + warp * 16) + a.offset);
    float mnew[2] = {mrow[0], mrow[1]};
#pragma unroll
    for (int n = 0; n < kSN; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[n][e] * scale;
        if (mask) {
          const int col = k0 + n * 8 + t * 2 + (e & 1);
          const int64_t row = row_lo + (e >> 1) * 8;
          if (col >= sk_n || (a.causal && col > row + a.offset)) x = -INFINITY;
        }
        s[n][e] = x;
        mnew[e >> 1] = fmaxf(mnew[e >> 1], x);
      }
    float base[2], keep[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      mnew[i] = fmaxf(mnew[i], __shfl_xor_sync(0xffffffffu, mnew[i], 1));
      mnew[i] = fmaxf(mnew[i], __shfl_xor_sync(0xffffffffu, mnew[i], 2));
      base[i] = mnew[i] == -INFINITY ? 0.0f : mnew[i];  // a row masked so far: exp2(-inf) = 0, not NaN
      keep[i] = exp2f(mrow[i] - base[i]);
      mrow[i] = mnew[i];
    }
    float sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < kSN; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = exp2f(s[n][e] - base[e >> 1]);
        s[n][e] = p;
        sum[e >> 1] += p;
      }
    lrow[0] = lrow[0] * keep[0] + sum[0];
    lrow[1] = lrow[1] * keep[1] + sum[1];
#pragma unroll
    for (int n = 0; n < kON; ++n) acc[n][0] *= keep[0], acc[n][1] *= keep[0], acc[n][2] *= keep[1], acc[n][3] *= keep[1];

    // o += p v, one 8-key chunk at a time, keys reordered (see the top).
#pragma unroll
    for (int j = 0; j < kSN; ++j) {
      const uint32_t pa[4] = {tf32(s[j][0]), tf32(s[j][2]), tf32(s[j][1]), tf32(s[j][3])};
      const float* vp = sv + (j * 8 + 2 * t) * kLD + g;  // b0 = v[key 2t][dim n*8+g], b1 = v[key 2t+1][...]
#pragma unroll
      for (int n = 0; n < kON; ++n) mma(acc[n], pa, tf32(vp[n * 8]), tf32(vp[kLD + n * 8]));
    }
  }
  cp_async_wait<0>();  // q, when no key was visible

  float inv[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    lrow[i] += __shfl_xor_sync(0xffffffffu, lrow[i], 1);
    lrow[i] += __shfl_xor_sync(0xffffffffu, lrow[i], 2);
    inv[i] = 1.0f / lrow[i];  // a row with no visible key: 0/0 = NaN, as the unfused softmax
  }
  if (kend == 0) inv[0] = inv[1] = __int_as_float(0x7fc00000);
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int row = row_lo + i * 8;
    if (row >= sq_n) continue;
    float* orow = o + static_cast<int64_t>(row) * a.stride[3][2];
#pragma unroll
    for (int n = 0; n < kON; ++n) {
      const int col = n * 8 + t * 2;
      const float x0 = acc[n][2 * i] * inv[i], x1 = acc[n][2 * i + 1] * inv[i];
      if constexpr (kAligned) {
        if (col < dh) *reinterpret_cast<float2*>(orow + col) = make_float2(x0, x1);
      } else {
        if (col < dh) orow[col] = x0;
        if (col + 1 < dh) orow[col + 1] = x1;
      }
    }
  }
}

template <int kDH, bool kAligned> cudaError_t launch_tf32(const Attention& a, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((a.sq + kBM - 1) / kBM), static_cast<unsigned>(a.heads), static_cast<unsigned>(a.batch));
  return launch_dependent(attention_tf32_kernel<kDH, kAligned>, grid, dim3(kWarps * 32), Tf32Tiles<kDH>::kSmem, s, a);
}

template <int kDH> cudaError_t allow_smem_tf32() {
  for (auto* f : {&attention_tf32_kernel<kDH, true>, &attention_tf32_kernel<kDH, false>}) {
    cudaError_t e = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Tf32Tiles<kDH>::kSmem));
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}


}  // namespace

cudaError_t attention_tf32_setup() {
  cudaError_t e = allow_smem_tf32<32>();
  if (e == cudaSuccess) e = allow_smem_tf32<64>();
  if (e == cudaSuccess) e = allow_smem_tf32<128>();
  return e;
}

cudaError_t attention_tf32(const Attention& a, cudaStream_t s) {
  // 16-byte copies need every row start 16-byte aligned: pointers, strides
  // in multiples of 4 floats, whole 4-float chunks of the head; the float2
  // stores need o 8-byte aligned with even strides (implied).
  bool aligned = a.dh % 4 == 0 && aligned16(a.q) && aligned16(a.k) && aligned16(a.v) && aligned16(a.o);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) aligned = aligned && a.stride[i][j] % 4 == 0;
  if (a.dh <= 32) return aligned ? launch_tf32<32, true>(a, s) : launch_tf32<32, false>(a, s);
  if (a.dh <= 64) return aligned ? launch_tf32<64, true>(a, s) : launch_tf32<64, false>(a, s);
  if (a.dh <= 128) return aligned ? launch_tf32<128, true>(a, s) : launch_tf32<128, false>(a, s);
  return cudaErrorInvalidValue;
}

}  // namespace shapeml::cuda::kern
