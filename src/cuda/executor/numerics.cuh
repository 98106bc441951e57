// Scalar semantics of the language (docs/spec/language.md §5) on the device:
// storage types, compute types (bf16 computes in f32 and rounds to nearest
// even once per operation), and every unary/binary/compare op and cast.
// No fast-math: subnormals are kept, sqrt/div are correctly rounded.
#pragma once
#ifndef __CUDACC_RTC__  // NVRTC (generated kernels, which never touch bf16): ops.h has the integer types
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#endif

#include "cuda/executor/ops.h"

namespace shapeml::cuda::kern {

// std::is_same_v, which NVRTC has only through a header that takes most of a
// second to compile.
template <class A, class B> constexpr bool same_v = false;
template <class A> constexpr bool same_v<A, A> = true;

// Compute type of a storage type: bf16 -> float, bool (uint8_t) -> uint8_t.
template <class T> struct Compute { using type = T; };
template <class T> __device__ __forceinline__ typename Compute<T>::type to_compute(T x) { return x; }
template <class T> __device__ __forceinline__ T from_compute(typename Compute<T>::type x) { return x; }
#ifndef __CUDACC_RTC__
using bf16 = __nv_bfloat16;
template <> struct Compute<bf16> { using type = float; };
template <> __device__ __forceinline__ float to_compute<bf16>(bf16 x) { return __bfloat162float(x); }
template <> __device__ __forceinline__ bf16 from_compute<bf16>(float x) { return __float2bfloat16_rn(x); }
#endif

template <class T> constexpr bool is_floating_v = false;
template <> constexpr bool is_floating_v<float> = true;
template <> constexpr bool is_floating_v<double> = true;

template <class T> __device__ __forceinline__ bool is_nan(T x) {
  if constexpr (is_floating_v<T>) return x != x;
  else return false;
}

// Two's-complement wrapping integer arithmetic (no signed overflow UB).
template <class T> struct Unsigned;
template <> struct Unsigned<int32_t> { using type = uint32_t; };
template <> struct Unsigned<int64_t> { using type = uint64_t; };
template <class T> __device__ __forceinline__ T wrap_add(T a, T b) {
  if constexpr (is_floating_v<T>) return a + b;
  else { using U = typename Unsigned<T>::type; return static_cast<T>(static_cast<U>(a) + static_cast<U>(b)); }
}
template <class T> __device__ __forceinline__ T wrap_sub(T a, T b) {
  if constexpr (is_floating_v<T>) return a - b;
  else { using U = typename Unsigned<T>::type; return static_cast<T>(static_cast<U>(a) - static_cast<U>(b)); }
}
template <class T> __device__ __forceinline__ T wrap_mul(T a, T b) {
  if constexpr (is_floating_v<T>) return a * b;
  else { using U = typename Unsigned<T>::type; return static_cast<T>(static_cast<U>(a) * static_cast<U>(b)); }
}

// max/min propagate NaN (the first NaN operand).
template <class T> __device__ __forceinline__ T nan_max(T a, T b) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return a > b ? a : b;
}
template <class T> __device__ __forceinline__ T nan_min(T a, T b) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return a < b ? a : b;
}

__device__ __forceinline__ float k_exp(float x) { return expf(x); }
__device__ __forceinline__ double k_exp(double x) { return exp(x); }
__device__ __forceinline__ float k_log(float x) { return logf(x); }
__device__ __forceinline__ double k_log(double x) { return log(x); }
__device__ __forceinline__ float k_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double k_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float k_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double k_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float k_erf(float x) { return erff(x); }
__device__ __forceinline__ double k_erf(double x) { return erf(x); }
__device__ __forceinline__ float k_erfc(float x) { return erfcf(x); }
__device__ __forceinline__ double k_erfc(double x) { return erfc(x); }
__device__ __forceinline__ float k_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ float k_sin(float x) { return sinf(x); }
__device__ __forceinline__ double k_sin(double x) { return sin(x); }
__device__ __forceinline__ float k_cos(float x) { return cosf(x); }
__device__ __forceinline__ double k_cos(double x) { return cos(x); }
__device__ __forceinline__ double k_pow(double x, double y) { return pow(x, y); }

// sigmoid without overflow: exp of a non-positive argument only.
// One exp for both signs, no branch (a warp whose lanes differ in sign
// would run both): e = exp(-|x|) is exp(-x) for x >= 0 and exp(x) below,
// so the values are those of 1 / (1 + exp(-x)) and exp(x) / (1 + exp(x)).
template <class F> __device__ __forceinline__ F k_sigmoid(F x) {
  const F e = k_exp(-fabs(x));  // NaN propagates
  return (x >= F(0) ? F(1) : e) / (F(1) + e);
}

// Unary op in the compute type C.
template <class C> __device__ __forceinline__ C unary_op(int32_t op, C x) {
  if constexpr (is_floating_v<C>) {
    switch (op) {
      case U_NEG: return -x;
      case U_ABS: return x < C(0) ? -x : (x == C(0) ? C(0) : x);  // abs(-0) = +0, NaN stays
      case U_EXP: return k_exp(x);
      case U_LOG: return k_log(x);
      case U_SQRT: return k_sqrt(x);
      case U_RSQRT: return C(1) / k_sqrt(x);
      case U_TANH: return k_tanh(x);
      case U_SIGMOID: return k_sigmoid(x);
      case U_RELU: return is_nan(x) ? x : (x > C(0) ? x : C(0));
      // exact gelu x*Phi(x) = x/2 * erfc(-x/sqrt 2): no cancellation for x < 0.
      case U_GELU: return C(0.5) * x * k_erfc(-x * C(0.70710678118654752440));
      case U_SILU: return x * k_sigmoid(x);
      // CUDA's sinf/cosf (without fast math) do a full range reduction: at
      // most 2 ulp for every finite argument (CUDA programming guide).
      case U_SIN: return k_sin(x);
      case U_COS: return k_cos(x);
      case U_ERF: return k_erf(x);
    }
    return x;
  } else {
    switch (op) {
      case U_NEG: return wrap_sub(C(0), x);
      case U_ABS: return x < C(0) ? wrap_sub(C(0), x) : x;  // abs(MIN) = MIN
      case U_RELU: return x > C(0) ? x : C(0);
    }
    return x;
  }
}

// Binary op in the compute type C.
template <class C> __device__ __forceinline__ C binary_op(int32_t op, C a, C b) {
  switch (op) {
    case B_ADD: return wrap_add(a, b);
    case B_SUB: return wrap_sub(a, b);
    case B_MUL: return wrap_mul(a, b);
    case B_DIV:
      if constexpr (is_floating_v<C>) {
        return a / b;
      } else {
        if (b == C(0)) return C(0);
        if (b == C(-1)) return wrap_sub(C(0), a);  // MIN / -1 = MIN (wraps)
        return a / b;                              // truncates toward zero
      }
    case B_MAX: return nan_max(a, b);
    case B_MIN: return nan_min(a, b);
    case B_POW:
      if constexpr (is_floating_v<C>) return k_pow(a, b);
      else return C(0);  // rejected at plan_create: pow needs a floating dtype
    case B_FLOORDIV:
    case B_MOD:
      // Integers only (rejected at plan_create otherwise). Floor semantics
      // (Python, NumPy), made total as the CPU's: x // 0 = x mod 0 = 0,
      // MIN // -1 = MIN (wraps), MIN mod -1 = 0.
      if constexpr (is_floating_v<C>) {
        return C(0);
      } else {
        if (b == C(0)) return C(0);
        if (b == C(-1)) return op == B_MOD ? C(0) : wrap_sub(C(0), a);
        C q = a / b, r = a - q * b;
        bool fix = r != C(0) && ((r < C(0)) != (b < C(0)));
        return op == B_MOD ? (fix ? r + b : r) : (fix ? q - C(1) : q);
      }
  }
  return a;
}

// Comparison: ordered (false on NaN) except ne.
template <class C> __device__ __forceinline__ uint8_t compare_op(int32_t op, C a, C b) {
  switch (op) {
    case C_EQ: return a == b;
    case C_NE: return a != b;
    case C_LT: return a < b;
    case C_LE: return a <= b;
    case C_GT: return a > b;
    case C_GE: return a >= b;
  }
  return 0;
}

// ---- casts (§5): via the compute types; bf16 -> f32 first, -> bf16 via f32.
// float -> int saturates, NaN -> 0.
template <class I, class F> __device__ __forceinline__ I sat_int(F x) {
  constexpr int bits = sizeof(I) * 8;
  const F lim = F(bits == 32 ? 2147483648.0 : 9223372036854775808.0);  // 2^(bits-1), exact in f32 and f64
  if (x != x) return I(0);
  if (x >= lim) return bits == 32 ? I(INT32_MAX) : I(INT64_MAX);
  if (x < -lim) return bits == 32 ? I(INT32_MIN) : I(INT64_MIN);
  return static_cast<I>(x);  // truncation toward zero, in range
}

template <class From, class To> __device__ __forceinline__ To cast_value(From v) {
  using CF = typename Compute<From>::type;
  CF x = to_compute(v);
  if constexpr (same_v<To, uint8_t>) {  // to bool: x != 0 (NaN -> true)
    return x != CF(0) ? 1 : 0;
  } else {
    using CT = typename Compute<To>::type;
    CT r;
    if constexpr (same_v<CF, uint8_t>) r = x ? CT(1) : CT(0);  // bool -> 0/1
    else if constexpr (is_floating_v<CF> && is_floating_v<CT>) r = static_cast<CT>(x);  // f64 -> f32 rounds to nearest even
    else if constexpr (is_floating_v<CF>) r = sat_int<CT>(x);
    else if constexpr (is_floating_v<CT>) r = static_cast<CT>(x);  // int -> float, nearest even
    else r = static_cast<CT>(static_cast<typename Unsigned<CT>::type>(x));  // int -> int: wraps
    return from_compute<To>(r);
  }
}

}  // namespace shapeml::cuda::kern
