// The element types and op codes every kernel dispatches on, numbered as the
// plan's (plan::GpuDType, plan/fused_program.h's op numbers). Device-safe and
// free of host declarations, so NVRTC compiles it too: the kernels the
// compiler generates per program (plan/generated_kernel.h) include
// numerics.cuh, which includes this, and get the same numerics bit for bit.
#pragma once
#ifdef __CUDACC_RTC__
// NVRTC has no standard headers of its own: the fixed-width types and limits
// the kernels use, as every CUDA target defines them (LP64), so a generated
// kernel needs no include path on the machine that builds the module.
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#else
#include <cstdint>
#endif

namespace shapeml::cuda::kern {

/// Element types, numbered as plan::GpuDType.
enum class DT : int32_t { F32 = 0, F64 = 1, BF16 = 2, I32 = 3, I64 = 4, Bool = 5 };

enum UnaryOp : int32_t { U_NEG, U_ABS, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_TANH, U_SIGMOID, U_RELU, U_GELU, U_SILU, U_SIN, U_COS, U_ERF };
enum LogicalOp : int32_t { L_AND, L_OR };
enum BinaryOp : int32_t { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_POW, B_FLOORDIV, B_MOD };
// The fused interpreter's `and` and `or` (plan/fused_program.h): after the binary ops.
constexpr int32_t kFusedAnd = B_MOD + 1, kFusedOr = B_MOD + 2;
enum CompareOp : int32_t { C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE };
enum ReduceOp : int32_t { R_SUM, R_MAX, R_MEAN, R_MIN };

}  // namespace shapeml::cuda::kern
