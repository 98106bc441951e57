// Attention fusion: the launch chain the planner emits for scaled
// dot-product attention, as the transformer block and StoryLM-0 write it,
//   matmul(q, k^T) * scale -> softmax over the keys (causal mask folded in or
//   none) -> matmul(., v)
// becomes one `attention` launch (plan/attention_launch.h): no [Sq, Sk] scores
// or probabilities in memory (docs/design/gpu-attention.md). Around it:
//   - a key/value `repeat` over the head axis (repeat_interleave for
//     grouped-query attention) becomes the launch's group, no copy;
//   - a permute that keeps the last axis (the head split of a projection
//     [B, S, H, Dh] -> [B, H, S, Dh]) feeding q, k or v, and the permute of
//     the result (the head merge), become strided reads and writes: no copy.
// bf16, and f32 with head dimensions up to 128 and up to 256 keys (the f32
// kernel runs on the FP32 cores: longer sequences keep the cuBLAS GEMMs,
// which measured faster there). A chain
// fuses only through temporaries nothing else reads, as in fuse_patterns.
// The launches it replaces are left unread for the dead-launch pass, except
// the head-merge permute, which it removes (its output is now written by
// the attention launch).
//
// Plain data: no CUDA, no IR. Never fails: what it does not recognize stays.
#pragma once
#include "plan/plan.h"

namespace shapeml::lower::gpu {

/// Rewrites every recognized attention chain of `plan`; returns how many.
/// With `cudnn`, the launches cuDNN's fused attention takes
/// (plan::cudnn_attention_refusal) say library `cudnn`.
int fuse_attention(plan::GpuPlan& plan, bool cudnn = true);

}  // namespace shapeml::lower::gpu
