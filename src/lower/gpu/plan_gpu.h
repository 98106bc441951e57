// The GPU back end's lowering: one entry point of the typed IR at one binding
// of its shape variables -> a dispatch plan (src/plan/plan.h) that the
// CUDA plugin executes. Decided here, at compile time: one slot per value,
// reshapes as views, results written straight into the output buffers, and
// the workspace layout (first-fit over live ranges, so values whose lives do
// not overlap share bytes; an operation never writes over its own operands).
// Calls are inlined. Host tensors may appear only as parameters that are
// copied to the device, or as results copied from it (mixed placement); a
// computation on host values inside a device entry is rejected (UNIMPLEMENTED:
// split the program into a host and a device function).
//
// Errors are returned (nullopt plus a message); nothing here prints, throws
// across the API, aborts or exits. This file includes no LLVM or CUDA header.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "plan/plan.h"
#include "ir/ir.h"
#include "lower/gpu/split_fp32_matmuls.h"

namespace shapeml::lower::gpu {

/// Whether `f` is a device function (some value of it lives on a CUDA
/// device): such an entry lowers to a plan, not to CPU code. (Calls are
/// inlined, so a host function that calls a device function is not one: it
/// fails in the CPU back end, which names the device value.)
bool is_device_function(const ir::Function& f);
/// Whether entry `f` runs on a device at `bindings`: as is_device_function,
/// with a generic entry's device variables at their bound values (spec §3.5).
bool is_device_entry(const ir::Function& f, const std::map<std::string, int64_t>& bindings);

/// Choices a user makes for the GPU code (compile options).
struct PlanOptions {
  /// Let calls replay the plan as a CUDA graph by default where that is safe
  /// (the plan's `graph` line; docs/design/cuda-graphs.md).
  bool graph = true;
  /// In a replayed graph, let launches that share no bytes run side by
  /// side (the plan's `branches` line; docs/design/cuda-graphs.md). On by
  /// default; `shapemlc --gpu-graph-branches off` keeps one chain (to compare).
  bool graph_branches = true;
  /// f32 matmuls may use TF32 tensor cores (10-bit mantissa inputs, fp32
  /// accumulation: ~1e-3 relative error instead of ~1e-6; PyTorch's
  /// `allow_tf32`). Off by default: results then match fp32 references.
  bool allow_tf32 = false;
  /// Merge groups of elementwise launches into single `fused` launches
  /// (lower/gpu/fuse_elementwise.h; bit-identical results, fewer launches),
  /// each running a kernel generated for it (`generate_kernels`). On by
  /// default: generated kernels measured faster than the unfused launches
  /// (docs/design/gpu-generated-kernels.md). Where no kernel can be
  /// generated (no NVRTC where the module is built) the plan keeps the
  /// unfused launches. `shapemlc --gpu-fuse off` turns it off.
  bool fuse = true;
  /// With `fuse`: compile each fused launch's program into a kernel of its
  /// own, shipped in the plan (lower/gpu/generate_kernels.h; NVRTC where the
  /// module is built). Off: the plugin interprets the programs (measured
  /// slower than unfused launches; `shapemlc --gpu-fuse-codegen off`, to
  /// compare).
  bool generate_kernels = true;
  /// Replace the launch groups of RMSNorm, a causal-masked softmax and a
  /// gated activation (SwiGLU) with one fused kernel each
  /// (lower/gpu/fuse_patterns.h). On by default; `shapemlc
  /// --gpu-fuse-patterns off` keeps the unfused launches (to compare).
  bool fuse_patterns = true;
  /// Replace scaled dot-product attention (bf16; f32 up to 256 keys) with one launch that keeps
  /// no scores in memory (lower/gpu/fuse_attention.h); needs fuse_patterns
  /// (the causal mask is folded into the softmax first). On by default;
  /// `shapemlc --gpu-fuse-attention off` keeps the GEMM/softmax/GEMM chain.
  bool fuse_attention = true;
  /// bf16 attention launches that cuDNN's fused attention takes say
  /// library `cudnn` (plan/attention_launch.h): the executor runs them on
  /// cuDNN where it finds it, measured faster (docs/design/gpu-attention.md).
  /// On by default; `shapemlc --gpu-cudnn-attention off` keeps the own kernel.
  bool cudnn_attention = true;
  /// Compute 2-4 projections of one activation with small weights as one
  /// wider GEMM over the weights copied side by side
  /// (lower/gpu/merge_projections.h); needs fuse_patterns. On by default;
  /// `shapemlc --gpu-merge-projections off` keeps one GEMM per projection.
  bool merge_projections = true;
  /// Run bf16 GEMMs of one activation and weights of one shape (q/k/v with
  /// large weights, gate/up) as one batched GEMM over the weights
  /// (lower/gpu/group_matmuls.h); needs fuse_patterns. On by default;
  /// `shapemlc --gpu-group-matmuls off` keeps one GEMM each.
  bool group_matmuls = true;
  /// f32 matmuls without TF32 (allow_tf32 off) of at least
  /// `split_min_flops` run as 3xTF32: each operand split into TF32 parts and
  /// one TF32 GEMM over a K three times as long, on tensor cores (~1e-5
  /// relative error: ten times TF32's accuracy, a tenth of fp32's;
  /// lower/gpu/split_fp32_matmuls.h). Off by default; `shapemlc
  /// --gpu-fp32-matmul 3xtf32|simt`.
  bool split_fp32_matmuls = false;
  int64_t split_min_flops = kSplitMinFlops;
};

/// The dispatch plan of `entry` at `bindings` (every shape variable bound,
/// `where` already checked by the driver).
std::optional<plan::GpuPlan> plan_function(const ir::Module& m, const std::string& entry, const std::map<std::string, int64_t>& bindings,
                                          std::string& error, const PlanOptions& options = {});

}  // namespace shapeml::lower::gpu
