// The C ABI's handle types over runtime objects, shared by the runtime-only
// library and the full SDK.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "capi/status.h"
#include "runtime/memory_resource.h"
#include "runtime/module.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"

struct shapeml_memory {
  std::atomic<int64_t> refs{1};
  shapeml::runtime::MemoryResourcePtr mr;
};

// A shapeml_tensor* *is* the runtime Tensor (whose first member is the
// DLTensor); its reference count is the tensor's own.
struct shapeml_tensor;

struct shapeml_npz {
  std::atomic<int64_t> refs{1};
  std::vector<shapeml::runtime::NpzEntry> entries;
};

struct shapeml_module {
  std::atomic<int64_t> refs{1};
  std::shared_ptr<shapeml::runtime::Module> module;
};

namespace shapeml::capi {

inline runtime::Tensor* tensor_of(shapeml_tensor* t) { return reinterpret_cast<runtime::Tensor*>(t); }
inline const runtime::Tensor* tensor_of(const shapeml_tensor* t) { return reinterpret_cast<const runtime::Tensor*>(t); }
inline shapeml_tensor* handle_of(runtime::TensorRef&& t) { return reinterpret_cast<shapeml_tensor*>(t.detach()); }

inline runtime::MemoryResourcePtr memory_of(shapeml_memory* m) { return m ? m->mr : runtime::host_memory_resource(); }

}  // namespace shapeml::capi
