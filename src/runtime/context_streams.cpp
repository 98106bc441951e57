#include "runtime/context_streams.h"

#include <algorithm>

#include "runtime/cuda_plugin_loader.h"

namespace shapeml::runtime {

ContextStreams::~ContextStreams() {
  if (!plugin_) return;
  for (void* s : streams_) {
    if (!s) continue;
    char err[256] = "";
    plugin_->api().stream_destroy(s, err, sizeof err);  // nothing to report to: a destructor
  }
}

Result<void*> ContextStreams::stream(int32_t device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!plugin_) {
    auto p = cuda_plugin();
    if (!p) return p.status();
    plugin_ = *p;
    streams_.assign(static_cast<size_t>(plugin_->device_count()), nullptr);
  }
  if (Status st = plugin_->check_device(device, "context stream"); !st.ok()) return st;
  void*& s = streams_[static_cast<size_t>(device)];
  if (!s) {
    char err[256] = "";
    if (int32_t rc = plugin_->api().stream_create(device, &s, err, sizeof err)) {
      s = nullptr;
      return plugin_status(rc, err, "creating the context's stream for cuda:" + std::to_string(device));
    }
  }
  return s;
}

bool ContextStreams::owns(void* stream) const {
  std::lock_guard<std::mutex> lock(mu_);
  return stream && std::find(streams_.begin(), streams_.end(), stream) != streams_.end();
}

}  // namespace shapeml::runtime
