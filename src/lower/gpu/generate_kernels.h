// Kernel generation, the last plan pass before the graph decision: each
// `fused` launch (lower/gpu/fuse_elementwise.h) becomes a CUDA C kernel
// specialized to its program and its geometry (the node values in
// registers, the coalesced shape and every stride as constants), and all of
// a plan's kernels are compiled together with NVRTC into one code object
// that the plan carries (plan/plan.h's `code` line), so the machine that
// runs the module compiles nothing (docs/design/gpu-generated-kernels.md).
//
// Each node computes with the same numerics.cuh function the plugin's
// unfused kernels and its interpreter call, and its float result passes an
// optimization barrier before the next node reads it, so no two ops are
// contracted into one FMA: results are bit-identical to the unfused plan.
// The program stays in the launch's `ints`; the plugin interprets it when a
// code object cannot be loaded.
#pragma once
#include <string>

#include "plan/plan.h"

namespace shapeml::lower::gpu {

/// The architecture generated kernels are compiled for (machine code; the
/// PTX beside it serves newer GPUs).
inline constexpr const char* kGeneratedArch = "sm_90";

/// The CUDA C source of launch `l`'s kernel, an `extern "C"` kernel named
/// `name` taking (const void* in0, ..., void* out). `l` is a verified fused
/// launch of `p`.
std::string fused_kernel_source(const plan::GpuPlan& p, const plan::GpuLaunch& l, const std::string& name);

/// The CUDA C translation unit of every fused launch's kernel, named
/// shapeml_fused_<launch index>: what generate_fused_kernels compiles, and
/// what `shapemlc --emit=gpu-kernels` prints. "" when `p` has no fused launch.
std::string generated_source(const plan::GpuPlan& p);

/// Generates and compiles a kernel for every fused launch of `p`: on success
/// each names its kernel (`op`) and `p` carries the code object; returns the
/// number of kernels. When NVRTC is missing or fails, `p` is left to the
/// interpreter, each fused launch's `why` says why, and 0 is returned.
int generate_fused_kernels(plan::GpuPlan& p);

}  // namespace shapeml::lower::gpu
