// An `attention` launch (plan/attention_launch.h) of library `cudnn` run by
// cuDNN's fused attention instead of shapeml's own kernel (attention.cu):
// the planner marks the bf16 launches cuDNN's graph takes
// (plan::cudnn_attention_refusal), where cuDNN measured faster
// (docs/design/gpu-attention.md, "cuDNN beside the own kernel").
//
// cuDNN is optional. It is loaded with dlopen the first time a plan asks
// for it (SHAPEML_CUDNN names the library; the default is libcudnn.so.9 on
// the loader's path and the plugin's run path), so the plugin links nothing
// of it and a machine without cuDNN runs the own kernel. The graph is cuDNN
// 9's composite scaled dot-product attention in the C backend API
// (cudnn_graph.h): q kᵀ -> scale -> causal select -> softmax (max, sub, exp,
// sum, div) -> · v, the form cuDNN's heuristics map to its flash-attention
// engine. Everything is decided at plan creation (graph, engine, execution
// plan); a call only enqueues.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "cuda/executor/kernels.h"

namespace shapeml::cuda {

/// A prepared cuDNN execution plan for one attention launch.
class CudnnAttention {
 public:
  /// The execution plan for `a` (a bf16 launch that
  /// plan::cudnn_attention_refusal accepts) on the current device; null with
  /// `why` set when cuDNN is absent, too old, or none of its engines takes
  /// the graph.
  static std::unique_ptr<CudnnAttention> create(const kern::Attention& a, std::string& why);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  /// Enqueues the attention on `stream`: every pointer 16-byte aligned
  /// (the caller checks and runs the own kernel otherwise), `workspace`
  /// workspace_bytes() long. "" on success, else what failed.
  std::string run(const void* q, const void* k, const void* v, void* o, void* workspace, cudaStream_t stream);
  size_t workspace_bytes() const { return workspace_; }
  /// The engine cuDNN chose and the library's version, for trace spans.
  const std::string& engine() const { return engine_; }

 private:
  CudnnAttention() = default;
  void* handle_ = nullptr;  // cudnnHandle_t
  void* plan_ = nullptr;    // the execution plan (cudnnBackendDescriptor_t)
  size_t workspace_ = 0;
  float scale_ = 1.0f;
  bool causal_ = false;
  std::string engine_;
  // The handle's stream is set per call: one plan run from several host
  // threads takes turns.
  std::mutex mu_;
};

}  // namespace shapeml::cuda
