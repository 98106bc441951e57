// The CUDA streams of one shapeml context (docs/design/cuda-plugin.md,
// "Streams"): one non-blocking stream per device, made through the plugin on
// the first device call that needs it, destroyed when the last holder lets
// go. Holders: the context, the modules compiled in it, and every device
// tensor whose memory is ordered on one of its streams (a call's outputs) —
// so a stream outlives all the work and memory ordered on it, whatever the
// order in which the caller releases things. A context that never calls a
// device entry loads no CUDA library.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/status.h"

namespace shapeml::runtime {

class CudaPlugin;

class ContextStreams {
 public:
  ContextStreams() = default;
  ContextStreams(const ContextStreams&) = delete;
  ContextStreams& operator=(const ContextStreams&) = delete;
  /// Destroys the streams made (cudaStreamDestroy returns at once; the
  /// driver releases a stream when its enqueued work is done).
  ~ContextStreams();

  /// The stream of CUDA device `device`, made on first use (thread-safe);
  /// UNAVAILABLE without the plugin, INVALID_ARGUMENT for a device that does
  /// not exist, the plugin's status when the stream cannot be made.
  Result<void*> stream(int32_t device);

  /// Whether `stream` is one of these streams (already made).
  bool owns(void* stream) const;

 private:
  mutable std::mutex mu_;
  const CudaPlugin* plugin_ = nullptr;  // set with the first stream
  std::vector<void*> streams_;          // by device, NULL until made
};

using ContextStreamsPtr = std::shared_ptr<ContextStreams>;

}  // namespace shapeml::runtime
