// Fused attention for bf16 (kernels.h, plan/attention_launch.h;
// docs/design/gpu-attention.md): FlashAttention-2's forward pass on the
// tensor cores' mma.sync m16n8k16 (bf16 in, f32 accumulate).
//
// One block of 4 warps owns 64 query rows of one (batch, head); each warp
// owns 16 of them. The block walks the key/value rows in tiles of kBN (64,
// or 32 for head dimensions over 128, for registers): q k^T into f32
// accumulators, mask, an online softmax (running row max and sum, in the
// exp2 domain, the scale folded into the exponent), the probabilities
// rounded to bf16 in registers (the accumulator layout of one mma is the
// operand layout of the next) and multiplied into the f32 output
// accumulators, which are divided by the row
// sum once at the end and rounded to bf16 once, at the store. The [Sq, Sk]
// scores never reach memory. Under a causal mask a block stops at the last
// key its rows can see, and the heaviest blocks start first, or, when the
// blocks are more than one wave, each block takes a long and a short row tile.
//
// Tiles reach shared memory by cp.async (16-byte copies, zero-filled past
// the ends) when every pointer and stride allows, else element by element,
// in two stages: the next key/value tile loads while this one computes;
// rows are padded by 16 bytes so that the fragment loads are free of bank
// conflicts.
#include <cuda_bf16.h>

#include <cstdint>
#include <initializer_list>

#include "cuda/executor/attention_common.cuh"
#include "cuda/executor/kernels.h"

namespace shapeml::cuda::kern {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 4;

// kMT m-tiles of 16 query rows per warp: 2 halves the shared-memory reads
// per mma (each k and v fragment serves both), 1 keeps more blocks for
// short sequences and the registers of head dimensions over 128.
template <int kDH, int kMT> struct Tiles {
  static constexpr int kBM = 16 * kWarps * kMT;     // query rows per block
  static constexpr int kBN = kDH * kMT <= 128 ? 64 : 32;  // key rows per tile (32: for registers)
  static constexpr int kLD = kDH + 8;               // shared-memory row, elements
  // q, and two stages of k and v (the next tile loads while this one computes)
  static constexpr size_t kSmem = static_cast<size_t>(kBM + 4 * kBN) * kLD * sizeof(bf16);
};

using namespace attention_detail;


// d += a b: a 16x16 (row-major fragment), b 16x8 (column-major fragment).
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8x8 bf16 matrices, transposed on the way (the b fragments of v).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// Four 8x8 bf16 matrices as they are (the b fragments of k).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// 2^x by the SFU alone (subnormal results flush to 0: a probability below
// 2^-126 of the row's largest); exp2f adds the subnormal scaling around it.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t ld32(const bf16* p) { return *reinterpret_cast<const uint32_t*>(p); }

__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // lo in the low half: the lower column
  return *reinterpret_cast<uint32_t*>(&v);
}

// Rows [row0, row0 + kRows) of a [n, dh] operand (rows `stride` elements
// apart) into shared memory, zero past n and past dh. A thread copies the
// same 8-element chunk of every kStep-th row: its addresses are one base
// and constant offsets, not a division and a 64-bit product per chunk.
template <int kDH, int kRows, bool kAligned>
__device__ __forceinline__ void load_tile(bf16* sm, const bf16* g, int64_t stride, int row0, int n, int dh) {
  constexpr int kLD = kDH + 8, kChunks = kDH / 8, kThreadsPerBlock = kWarps * 32;
  static_assert(kThreadsPerBlock % kChunks == 0, "a thread's chunks share a column");
  constexpr int kStep = kThreadsPerBlock / kChunks;
  static_assert(kRows % kStep == 0, "every thread copies the same number of chunks");
  const int r0 = static_cast<int>(threadIdx.x) / kChunks, d = (static_cast<int>(threadIdx.x) % kChunks) * 8;
  const bf16* src = g + static_cast<int64_t>(row0 + r0) * stride + d;
  bf16* dst = sm + r0 * kLD + d;
  const int64_t step = kStep * stride;
#pragma unroll
  for (int i = 0; i < kRows / kStep; ++i) {
    const bool row_ok = row0 + r0 + i * kStep < n;
    if constexpr (kAligned) {
      const bool ok = row_ok && d < dh;  // dh % 8 == 0 here
      cp_async16(dst + i * kStep * kLD, ok ? src + i * step : g, ok);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) dst[i * kStep * kLD + e] = row_ok && d + e < dh ? src[i * step + e] : __float2bfloat16(0.0f);
    }
  }
}

// The query rows [qb kBM, (qb + 1) kBM) of head h of batch b.
template <int kDH, int kMT, bool kAligned>
__device__ __forceinline__ void attend_rows(const Attention& a, int qb, int64_t h, int64_t b, unsigned char* smem_raw) {
  constexpr int kBM = Tiles<kDH, kMT>::kBM, kBN = Tiles<kDH, kMT>::kBN, kLD = Tiles<kDH, kMT>::kLD;
  constexpr int kSN = kBN / 8;   // n-tiles of a score tile
  constexpr int kON = kDH / 8;   // n-tiles of the output
  constexpr int kKC = kDH / 16;  // k-chunks of q k^T
  constexpr bool kQInRegisters = kMT == 1 && kDH <= 128;
  bf16* sq = reinterpret_cast<bf16*>(smem_raw);
  // stage i: k at sq + (kBM + 2 i kBN) kLD, v kBN rows after it
  auto stage_k = [&](int i) { return sq + (kBM + 2 * i * kBN) * kLD; };

  const int64_t hk = h / a.group;
  const bf16* q = static_cast<const bf16*>(a.q) + b * a.stride[0][0] + h * a.stride[0][1];
  const bf16* k = static_cast<const bf16*>(a.k) + b * a.stride[1][0] + hk * a.stride[1][1];
  const bf16* v = static_cast<const bf16*>(a.v) + b * a.stride[2][0] + hk * a.stride[2][1];
  bf16* o = static_cast<bf16*>(a.o) + b * a.stride[3][0] + h * a.stride[3][1];
  const int sq_n = static_cast<int>(a.sq), sk_n = static_cast<int>(a.sk), dh = static_cast<int>(a.dh);
  const int q0 = qb * kBM;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // This thread's rows: m-tile mt holds block rows mt*64 + warp*16 + g and + 8.
  auto row_of = [&](int mt, int half) { return q0 + mt * 16 * kWarps + warp * 16 + g + half * 8; };

  // Keys this block can see.
  int kend = sk_n;
  if (a.causal) {
    const int64_t last_row = (q0 + kBM < sq_n ? q0 + kBM : sq_n) - 1;
    const int64_t seen = last_row + a.offset + 1;
    kend = static_cast<int>(seen < 0 ? 0 : seen < sk_n ? seen : sk_n);
  }

  load_tile<kDH, kBM, kAligned>(sq, q, a.stride[0][2], q0, sq_n, dh);
  cp_async_commit();

  const float scale = a.scale * 1.4426950408889634f;  // scores in the exp2 domain; > 0
  float acc[kMT][kON][4];
  float mrow[kMT][2], lrow[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int n = 0; n < kON; ++n) acc[mt][n][0] = acc[mt][n][1] = acc[mt][n][2] = acc[mt][n][3] = 0.0f;
    mrow[mt][0] = mrow[mt][1] = -INFINITY;
    lrow[mt][0] = lrow[mt][1] = 0.0f;
  }
  uint32_t qf[kQInRegisters ? kKC : 1][4];

  auto q_fragment = [&](int mt, int kc, uint32_t (&f)[4]) {
    const bf16* p = sq + (mt * 16 * kWarps + warp * 16 + g) * kLD + kc * 16 + t * 2;
    f[0] = ld32(p), f[1] = ld32(p + 8 * kLD), f[2] = ld32(p + 8), f[3] = ld32(p + 8 * kLD + 8);
  };

  if (kend > 0) {
    load_tile<kDH, kBN, kAligned>(stage_k(0), k, a.stride[1][2], 0, sk_n, dh);
    load_tile<kDH, kBN, kAligned>(stage_k(0) + kBN * kLD, v, a.stride[2][2], 0, sk_n, dh);
    cp_async_commit();
  }
  for (int k0 = 0, stage = 0; k0 < kend; k0 += kBN, stage ^= 1) {
    cp_async_wait<0>();  // this tile (and q)
    __syncthreads();     // visible to every warp; and every warp is done with the other stage
    if (k0 + kBN < kend) {  // the next tile, while this one computes
      load_tile<kDH, kBN, kAligned>(stage_k(stage ^ 1), k, a.stride[1][2], k0 + kBN, sk_n, dh);
      load_tile<kDH, kBN, kAligned>(stage_k(stage ^ 1) + kBN * kLD, v, a.stride[2][2], k0 + kBN, sk_n, dh);
      cp_async_commit();
    }
    const bf16* sk = stage_k(stage);
    const bf16* sv = sk + kBN * kLD;
    if constexpr (kQInRegisters) {
      if (k0 == 0) {
#pragma unroll
        for (int kc = 0; kc < kKC; ++kc) q_fragment(0, kc, qf[kc]);
      }
    }

    float s[kMT][kSN][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int n = 0; n < kSN; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
#pragma unroll
    for (int kc = 0; kc < kKC; ++kc) {
      uint32_t af[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        if constexpr (kQInRegisters) {
          af[mt][0] = qf[kc][0], af[mt][1] = qf[kc][1], af[mt][2] = qf[kc][2], af[mt][3] = qf[kc][3];
        } else {
          q_fragment(mt, kc, af[mt]);
        }
      }
#pragma unroll
      for (int n = 0; n < kSN; n += 2) {  // two key n-tiles from one ldmatrix, for every m-tile
        uint32_t kb[4];
        ldmatrix_x4(kb, sk + (n * 8 + (lane & 7) + (lane >> 4) * 8) * kLD + kc * 16 + ((lane >> 3) & 1) * 8);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma(s[mt][n], af[mt], kb[0], kb[1]);
          mma(s[mt][n + 1], af[mt], kb[2], kb[3]);
        }
      }
    }

    // Mask, the new row maxima, the probabilities. A tile's maxima are
    // taken of the raw scores and scaled once (the scale is positive,
    // plan/attention_launch.h, so max(s) scale = max(s scale)), and each
    // probability is one FMA and one ex2: exp2(s scale - max).
    const bool mask = k0 + kBN > sk_n || (a.causal && static_cast<int64_t>(k0) + kBN - 1 > static_cast<int64_t>(row_of(0, 0) - g) + a.offset);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      float mnew[2] = {-INFINITY, -INFINITY};  // this tile's, raw
#pragma unroll
      for (int n = 0; n < kSN; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (mask) {
            const int col = k0 + n * 8 + t * 2 + (e & 1);
            const int64_t row = row_of(mt, e >> 1);
            if (col >= sk_n || (a.causal && col > row + a.offset)) s[mt][n][e] = -INFINITY;
          }
          mnew[e >> 1] = fmaxf(mnew[e >> 1], s[mt][n][e]);
        }
      }
      float base[2], keep[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        mnew[i] = fmaxf(mnew[i], __shfl_xor_sync(0xffffffffu, mnew[i], 1));
        mnew[i] = fmaxf(mnew[i], __shfl_xor_sync(0xffffffffu, mnew[i], 2));
        const float m = fmaxf(mrow[mt][i], mnew[i] * scale);  // the running maximum, scaled
        base[i] = m == -INFINITY ? 0.0f : m;                    // a row masked so far: exp2(-inf) = 0, not NaN
        keep[i] = m == mrow[mt][i] ? 1.0f : fast_exp2(mrow[mt][i] - base[i]);
        mrow[mt][i] = m;
      }
      float sum[2] = {0.0f, 0.0f};
#pragma unroll
      for (int n = 0; n < kSN; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float p = fast_exp2(fmaf(s[mt][n][e], scale, -base[e >> 1]));
          s[mt][n][e] = p;
          sum[e >> 1] += p;
        }
      }
      lrow[mt][0] = lrow[mt][0] * keep[0] + sum[0];
      lrow[mt][1] = lrow[mt][1] * keep[1] + sum[1];
      // Once the maxima settle (most tiles after the first few) keep is
      // exactly 1 for every row of the warp, and the rescale is skipped.
      if (__any_sync(0xffffffffu, keep[0] != 1.0f || keep[1] != 1.0f)) {
#pragma unroll
        for (int n = 0; n < kON; ++n) acc[mt][n][0] *= keep[0], acc[mt][n][1] *= keep[0], acc[mt][n][2] *= keep[1], acc[mt][n][3] *= keep[1];
      }
    }

#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      uint32_t pa[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        pa[mt][0] = pack(s[mt][2 * kk][0], s[mt][2 * kk][1]), pa[mt][1] = pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]), pa[mt][3] = pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
      const bf16* vrow = sv + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kLD + (lane >> 4) * 8;
#pragma unroll
      for (int nd = 0; nd < kDH / 16; ++nd) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, vrow + nd * 16);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma(acc[mt][2 * nd], pa[mt], vb[0], vb[1]);
          mma(acc[mt][2 * nd + 1], pa[mt], vb[2], vb[3]);
        }
      }
    }
  }
  cp_async_wait<0>();  // q, when no key was visible

#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    // Row sums over the quad; a row with no visible key is 0/0 = NaN.
    float inv[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      lrow[mt][i] += __shfl_xor_sync(0xffffffffu, lrow[mt][i], 1);
      lrow[mt][i] += __shfl_xor_sync(0xffffffffu, lrow[mt][i], 2);
      inv[i] = 1.0f / lrow[mt][i];
    }
    if (kend == 0) inv[0] = inv[1] = __int_as_float(0x7fc00000);  // no key at all: NaN, as the unfused softmax
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int row = row_of(mt, i);
      if (row >= sq_n) continue;
      bf16* orow = o + static_cast<int64_t>(row) * a.stride[3][2];
#pragma unroll
      for (int n = 0; n < kON; ++n) {
        const int col = n * 8 + t * 2;
        const float x0 = acc[mt][n][2 * i] * inv[i], x1 = acc[mt][n][2 * i + 1] * inv[i];
        if constexpr (kAligned) {
          if (col < dh) *reinterpret_cast<__nv_bfloat162*>(orow + col) = __floats2bfloat162_rn(x0, x1);
        } else {
          if (col < dh) orow[col] = __float2bfloat16_rn(x0);
          if (col + 1 < dh) orow[col + 1] = __float2bfloat16_rn(x1);
        }
      }
    }
  }
}

// One block a row tile, the longest causal rows first; or, `paired`, a
// block the row tiles i and n-1-i one after the other, so that under a
// causal mask every block does the same work and no SM idles behind the
// last long block (gpu-attention.md).
template <int kDH, int kMT, bool kAligned> __global__ void __launch_bounds__(kWarps * 32) attention_bf16(Attention a, bool paired) {
  wait_for_predecessor();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int64_t h = blockIdx.y, b = blockIdx.z;
  const int last = static_cast<int>((a.sq + Tiles<kDH, kMT>::kBM - 1) / Tiles<kDH, kMT>::kBM) - 1;
  const int first = last - static_cast<int>(blockIdx.x);
  attend_rows<kDH, kMT, kAligned>(a, first, h, b, smem_raw);
  const int second = static_cast<int>(blockIdx.x);
  if (paired && second < first) {
    __syncthreads();  // every warp is done with the shared tiles of the first
    attend_rows<kDH, kMT, kAligned>(a, second, h, b, smem_raw);
  }
}

template <int kDH, int kMT, bool kAligned> cudaError_t launch(const Attention& a, bool paired, cudaStream_t s) {
  using T = Tiles<kDH, kMT>;
  const int64_t tiles = (a.sq + T::kBM - 1) / T::kBM;
  const dim3 grid(static_cast<unsigned>(paired ? (tiles + 1) / 2 : tiles), static_cast<unsigned>(a.heads), static_cast<unsigned>(a.batch));
  return launch_dependent(attention_bf16<kDH, kMT, kAligned>, grid, dim3(kWarps * 32), T::kSmem, s, a, paired);
}

template <int kDH, int kMT> cudaError_t allow_smem() {
  for (auto* f : {&attention_bf16<kDH, kMT, true>, &attention_bf16<kDH, kMT, false>}) {
    cudaError_t e = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Tiles<kDH, kMT>::kSmem));
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

template <int kDH, int kMT> cudaError_t launch_aligned(bool aligned, bool paired, const Attention& a, cudaStream_t s) {
  return aligned ? launch<kDH, kMT, true>(a, paired, s) : launch<kDH, kMT, false>(a, paired, s);
}


}  // namespace

cudaError_t attention_setup() {
  cudaError_t e = allow_smem<32, 1>();
  if (e == cudaSuccess) e = allow_smem<64, 1>();
  if (e == cudaSuccess) e = allow_smem<64, 2>();
  if (e == cudaSuccess) e = allow_smem<128, 1>();
  if (e == cudaSuccess) e = allow_smem<128, 2>();
  if (e == cudaSuccess) e = allow_smem<256, 1>();
  if (e == cudaSuccess) e = attention_tf32_setup();
  if (e == cudaSuccess) e = attention_f32_tiled_setup();
  return e;
}

cudaError_t attention(const Attention& a, cudaStream_t s) {
  // 16-byte copies need every row start 16-byte aligned: pointers, strides
  // in multiples of 8 elements, and whole 8-element chunks of the head.
  bool aligned = a.dh % 8 == 0 && aligned16(a.q) && aligned16(a.k) && aligned16(a.v) && aligned16(a.o);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) aligned = aligned && a.stride[i][j] % 8 == 0;
  // Two m-tiles a warp when the 128-row blocks still fill every SM. Under a
  // causal mask a block takes a long and a short row tile (`paired`) when
  // that still leaves a block per SM, or when single tiles are more than
  // the SMs hold at once (two a multiprocessor): the blocks then do equal
  // work, where unpaired the SMs that drew the long tiles finish last.
  const int64_t bh = a.heads * a.batch, sms = a.sms;
  const int64_t tiles128 = (a.sq + 127) / 128, tiles64 = (a.sq + 63) / 64;
  bool wide = tiles128 * bh >= sms, paired = false;
  if (a.causal) {
    wide = (tiles128 + 1) / 2 * bh >= sms;
    paired = wide ? tiles128 > 1 : tiles64 * bh > 2 * sms;
  }
  const bool paired64 = a.causal && tiles64 > 1 && ((tiles64 + 1) / 2 * bh >= sms || tiles64 * bh > 2 * sms);
  if (a.dh <= 32) return launch_aligned<32, 1>(aligned, paired64, a, s);
  if (a.dh <= 64) return wide ? launch_aligned<64, 2>(aligned, paired, a, s) : launch_aligned<64, 1>(aligned, paired, a, s);
  if (a.dh <= 128) return wide ? launch_aligned<128, 2>(aligned, paired, a, s) : launch_aligned<128, 1>(aligned, paired, a, s);
  if (a.dh <= 256) return launch_aligned<256, 1>(aligned, paired64, a, s);
  return cudaErrorInvalidValue;
}

}  // namespace shapeml::cuda::kern
