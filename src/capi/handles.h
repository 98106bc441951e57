// The C ABI's handle types over runtime objects, shared by the runtime-only
// library and the full SDK.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
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

// An entry point's handle: its signature plus every string the ABI hands out
// about it, made once (borrowed by callers for the module's lifetime).
struct shapeml_entry {
  struct Dim {
    shapeml_dim_kind kind;
    int64_t value;
    std::string variable, text;
  };
  struct Io {
    std::string name, type;
    std::vector<Dim> dims;
  };
  shapeml_module* owner = nullptr;
  const shapeml::runtime::EntrySig* sig = nullptr;
  std::vector<Io> params, results;
};

struct shapeml_module {
  std::atomic<int64_t> refs{1};
  std::shared_ptr<shapeml::runtime::Module> module;
  // Entry handles, made on first use (any thread) by capi::entries_of().
  std::once_flag entries_once;
  std::vector<std::unique_ptr<shapeml_entry>> entries;
};

namespace shapeml::capi {

/// A shapeml_target value this library knows (NATIVE, X86_64, X86_64_V3/V4).
inline bool is_target(int32_t t) { return t >= SHAPEML_TARGET_NATIVE && t <= SHAPEML_TARGET_X86_64_V4; }
inline constexpr const char* kTargetsExpected =
    "SHAPEML_TARGET_NATIVE 0, SHAPEML_TARGET_X86_64 1, SHAPEML_TARGET_X86_64_V3 2 or SHAPEML_TARGET_X86_64_V4 3";


inline runtime::Tensor* tensor_of(shapeml_tensor* t) { return reinterpret_cast<runtime::Tensor*>(t); }
inline const runtime::Tensor* tensor_of(const shapeml_tensor* t) { return reinterpret_cast<const runtime::Tensor*>(t); }
inline shapeml_tensor* handle_of(runtime::TensorRef&& t) { return reinterpret_cast<shapeml_tensor*>(t.detach()); }

/// `*out` = an owned handle for a new resource, or the failure as a status.
inline shapeml_status* new_memory(runtime::Result<runtime::MemoryResourcePtr> r, shapeml_memory** out) {
  if (!r.ok()) return to_status(r.status());
  auto* m = new shapeml_memory;
  m->mr = std::move(r).value();
  *out = m;
  return nullptr;
}

/// `*out` = an owned handle for a new tensor, or the failure as a status.
inline shapeml_status* finish_tensor(runtime::Result<runtime::TensorRef> r, shapeml_tensor** out) {
  if (!r.ok()) return to_status(r.status());
  *out = handle_of(std::move(r).value());
  return nullptr;
}

inline runtime::MemoryResourcePtr memory_of(shapeml_memory* m) { return m ? m->mr : runtime::host_memory_resource(); }

/// The module's entry handles, made once (thread-safe). Throws only
/// std::bad_alloc (callers run inside the guard).
const std::vector<std::unique_ptr<shapeml_entry>>& entries_of(shapeml_module* m);

/// Reads a caller's shapeml_module_options with the struct_size reader:
/// defaults for NULL, INVALID_ARGUMENT naming `fn` for a bad struct_size.
shapeml_status* read_module_options(const char* fn, const shapeml_module_options* in, shapeml_module_options& out);

/// A new module handle (one reference) over `m`.
shapeml_module* new_module_handle(std::shared_ptr<runtime::Module> m);

}  // namespace shapeml::capi
