// The runtime half of the C ABI: memory, tensors, DLPack, npy/npz, loading
// and calling modules. Compiled into both libshapeml.so and
// libshapeml_runtime.so.
#include <algorithm>
#include <cstring>

#include "capi/handles.h"
#include "runtime/dlpack.h"
#include "runtime/parallel_for.h"
#include "runtime/pool_resource.h"

using shapeml::capi::guarded;
using shapeml::capi::handle_of;
using shapeml::capi::finish_tensor;
using shapeml::capi::make_status;
using shapeml::capi::memory_of;
using shapeml::capi::new_memory;
using shapeml::capi::null_arg;
using shapeml::capi::tensor_of;
using shapeml::capi::to_status;
namespace rt = shapeml::runtime;
namespace types = shapeml::types;

namespace {

shapeml_status* check_dtype(const char* fn, shapeml_dtype d) {
  if (d < SHAPEML_DTYPE_F32 || d > SHAPEML_DTYPE_BOOL)
    return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": unknown dtype " + std::to_string(d));
  return nullptr;
}

}  // namespace

extern "C" {

// ---- memory ----------------------------------------------------------------

SHAPEML_API shapeml_status* shapeml_memory_create_host(shapeml_memory** out) {
  return guarded("shapeml_memory_create_host", [&]() -> shapeml_status* {
    if (!out) return null_arg("shapeml_memory_create_host", "out");
    *out = nullptr;
    return new_memory(rt::host_memory_resource(), out);
  });
}

SHAPEML_API shapeml_status* shapeml_memory_create_from_resource(const shapeml_memory_resource* resource, shapeml_memory** out) {
  return guarded("shapeml_memory_create_from_resource", [&]() -> shapeml_status* {
    const char* fn = "shapeml_memory_create_from_resource";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!resource) return null_arg(fn, "resource");
    auto r = rt::MemoryResource::from_vtable(*resource);
    if (!r.ok()) return to_status(r.status());
    return new_memory(r.value(), out);
  });
}

SHAPEML_API shapeml_status* shapeml_memory_create_statistics_adaptor(shapeml_memory* upstream, shapeml_memory** out) {
  return guarded("shapeml_memory_create_statistics_adaptor", [&]() -> shapeml_status* {
    if (!out) return null_arg("shapeml_memory_create_statistics_adaptor", "out");
    *out = nullptr;
    return new_memory(rt::make_statistics_adaptor(memory_of(upstream)), out);
  });
}

SHAPEML_API shapeml_status* shapeml_memory_create_pool(shapeml_memory* upstream, size_t maximum_bytes, shapeml_memory** out) {
  return guarded("shapeml_memory_create_pool", [&]() -> shapeml_status* {
    if (!out) return null_arg("shapeml_memory_create_pool", "out");
    *out = nullptr;
    rt::PoolOptions o;
    o.maximum_bytes = maximum_bytes;
    return new_memory(rt::MemoryResourcePtr(rt::make_pool_resource(memory_of(upstream), o)), out);
  });
}

SHAPEML_API shapeml_status* shapeml_memory_create_logging_adaptor(shapeml_memory* upstream, shapeml_log_callback callback, void* user,
                                                                  shapeml_memory** out) {
  return guarded("shapeml_memory_create_logging_adaptor", [&]() -> shapeml_status* {
    const char* fn = "shapeml_memory_create_logging_adaptor";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!callback) return null_arg(fn, "callback");
    return new_memory(rt::make_logging_adaptor(memory_of(upstream), callback, user), out);
  });
}

SHAPEML_API shapeml_status* shapeml_memory_get_statistics(const shapeml_memory* memory, shapeml_memory_statistics* out) {
  return guarded("shapeml_memory_get_statistics", [&]() -> shapeml_status* {
    const char* fn = "shapeml_memory_get_statistics";
    if (!memory) return null_arg(fn, "memory");
    if (!out) return null_arg(fn, "out");
    if (!rt::statistics_size_ok(out->struct_size))
      return shapeml::capi::bad_struct_size(fn, "out", out->struct_size, sizeof(shapeml_memory_statistics), rt::kStatisticsFieldEnds);
    if (!memory->mr->statistics(out))
      return make_status(SHAPEML_STATUS_NOT_FOUND, std::string(fn) + ": this resource keeps no statistics (wrap it in a statistics adaptor)");
    return nullptr;
  });
}

SHAPEML_API void shapeml_memory_retain(shapeml_memory* m) {
  if (m) m->refs.fetch_add(1, std::memory_order_relaxed);
}

SHAPEML_API void shapeml_memory_release(shapeml_memory* m) {
  if (m && m->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete m;
}

// ---- tensors -----------------------------------------------------------------

SHAPEML_API shapeml_status* shapeml_tensor_create(shapeml_memory* memory, shapeml_dtype dtype, size_t rank, const int64_t* shape,
                                                  shapeml_tensor** out) {
  return guarded("shapeml_tensor_create", [&]() -> shapeml_status* {
    const char* fn = "shapeml_tensor_create";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (rank && !shape) return null_arg(fn, "shape");
    if (auto* s = check_dtype(fn, dtype)) return s;
    return finish_tensor(rt::Tensor::create(static_cast<types::DType>(dtype), std::span<const int64_t>(shape, rank), memory_of(memory)), out);
  });
}

SHAPEML_API shapeml_status* shapeml_tensor_create_copy(shapeml_memory* memory, shapeml_dtype dtype, size_t rank, const int64_t* shape,
                                                       const void* data, size_t bytes, shapeml_tensor** out) {
  return guarded("shapeml_tensor_create_copy", [&]() -> shapeml_status* {
    const char* fn = "shapeml_tensor_create_copy";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (rank && !shape) return null_arg(fn, "shape");
    if (!data && bytes) return null_arg(fn, "data");
    if (auto* s = check_dtype(fn, dtype)) return s;
    return finish_tensor(rt::Tensor::copy_of(static_cast<types::DType>(dtype), std::span<const int64_t>(shape, rank), data, bytes, memory_of(memory)),
                         out);
  });
}

SHAPEML_API shapeml_status* shapeml_tensor_create_uninitialized(shapeml_memory* memory, shapeml_dtype dtype, size_t rank, const int64_t* shape,
                                                                shapeml_tensor** out) {
  return guarded("shapeml_tensor_create_uninitialized", [&]() -> shapeml_status* {
    const char* fn = "shapeml_tensor_create_uninitialized";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (rank && !shape) return null_arg(fn, "shape");
    if (auto* s = check_dtype(fn, dtype)) return s;
    return finish_tensor(
        rt::Tensor::create(static_cast<types::DType>(dtype), std::span<const int64_t>(shape, rank), memory_of(memory), /*zero=*/false), out);
  });
}

SHAPEML_API shapeml_status* shapeml_tensor_wrap(shapeml_dtype dtype, size_t rank, const int64_t* shape, const int64_t* strides, void* data,
                                                shapeml_tensor_deleter deleter, void* deleter_user, uint32_t flags, shapeml_tensor** out) {
  return guarded("shapeml_tensor_wrap", [&]() -> shapeml_status* {
    const char* fn = "shapeml_tensor_wrap";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (rank && !shape) return null_arg(fn, "shape");
    if (auto* s = check_dtype(fn, dtype)) return s;
    if (flags & ~static_cast<uint32_t>(SHAPEML_TENSOR_READ_ONLY))
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": unknown flag bits " + std::to_string(flags & ~1u) +
                                                              " (only SHAPEML_TENSOR_READ_ONLY is defined)");
    if (rank > static_cast<size_t>(rt::kMaxRank))
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": rank " + std::to_string(rank) + " is above " + std::to_string(rt::kMaxRank));
    bool empty = false;
    for (size_t i = 0; i < rank; ++i) empty |= shape[i] == 0;
    if (!data && !empty) return null_arg(fn, "data");
    if (strides)
      for (size_t i = 0; i < rank; ++i)
        if (strides[i] < 0)
          return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": stride " + std::to_string(i) + " is negative (" +
                                                                  std::to_string(strides[i]) + ")");
    struct Owner {
      shapeml_tensor_deleter deleter;
      void* user;
      void* data;
    };
    rt::TensorDeleter del;
    std::unique_ptr<Owner> owner;
    if (deleter) {
      owner = std::make_unique<Owner>(Owner{deleter, deleter_user, data});
      del.ctx = owner.get();
      del.fn = [](void* ctx) {
        std::unique_ptr<Owner> o(static_cast<Owner*>(ctx));
        o->deleter(o->user, o->data);
      };
    }
    auto r = rt::Tensor::borrow(static_cast<types::DType>(dtype), std::span<const int64_t>(shape, rank),
                                strides ? std::span<const int64_t>(strides, rank) : std::span<const int64_t>(), data, types::Device::host(), del);
    if (!r.ok()) return make_status(static_cast<shapeml_status_code>(r.status().code()), std::string(fn) + ": " + r.status().message());
    owner.release();  // the tensor owns it now
    (*r)->set_read_only((flags & SHAPEML_TENSOR_READ_ONLY) != 0);
    *out = handle_of(std::move(r).value());
    return nullptr;
  });
}

SHAPEML_API void shapeml_tensor_retain(shapeml_tensor* t) {
  if (t) tensor_of(t)->retain();
}

SHAPEML_API void shapeml_tensor_release(shapeml_tensor* t) {
  if (t) tensor_of(t)->release();
}

SHAPEML_API shapeml_dtype shapeml_tensor_dtype(const shapeml_tensor* t) { return t ? static_cast<shapeml_dtype>(tensor_of(t)->dtype()) : -1; }

SHAPEML_API size_t shapeml_tensor_rank(const shapeml_tensor* t) { return t ? static_cast<size_t>(tensor_of(t)->ndim()) : 0; }

SHAPEML_API const int64_t* shapeml_tensor_shape(const shapeml_tensor* t) { return t ? tensor_of(t)->dl().shape : nullptr; }

SHAPEML_API void* shapeml_tensor_data(const shapeml_tensor* t) { return t ? tensor_of(t)->data() : nullptr; }

SHAPEML_API size_t shapeml_tensor_byte_size(const shapeml_tensor* t) { return t ? tensor_of(t)->nbytes() : 0; }

SHAPEML_API const DLTensor* shapeml_tensor_dltensor(const shapeml_tensor* t) { return t ? &tensor_of(t)->dl() : nullptr; }

SHAPEML_API const int64_t* shapeml_tensor_strides(const shapeml_tensor* t) { return t ? tensor_of(t)->dl().strides : nullptr; }

SHAPEML_API DLDevice shapeml_tensor_device(const shapeml_tensor* t) {
  if (!t) {
    DLDevice none;
    none.device_type = static_cast<DLDeviceType>(0);
    none.device_id = 0;
    return none;
  }
  return tensor_of(t)->dl().device;
}

SHAPEML_API int32_t shapeml_tensor_is_read_only(const shapeml_tensor* t) { return t && tensor_of(t)->is_read_only() ? 1 : 0; }

SHAPEML_API shapeml_status* shapeml_tensor_export_dlpack(shapeml_tensor* t, DLManagedTensor** out) {
  return guarded("shapeml_tensor_export_dlpack", [&]() -> shapeml_status* {
    const char* fn = "shapeml_tensor_export_dlpack";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!t) return null_arg(fn, "tensor");
    auto r = rt::to_dlpack(rt::TensorRef::share(tensor_of(t)));
    if (!r.ok()) return to_status(r.status());
    *out = r.value();
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_tensor_export_dlpack_versioned(shapeml_tensor* t, DLManagedTensorVersioned** out) {
  return guarded("shapeml_tensor_export_dlpack_versioned", [&]() -> shapeml_status* {
    const char* fn = "shapeml_tensor_export_dlpack_versioned";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!t) return null_arg(fn, "tensor");
    auto r = rt::to_dlpack_versioned(rt::TensorRef::share(tensor_of(t)));
    if (!r.ok()) return to_status(r.status());
    *out = r.value();
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_tensor_import_dlpack(DLManagedTensor* managed, shapeml_tensor** out) {
  return guarded("shapeml_tensor_import_dlpack", [&]() -> shapeml_status* {
    const char* fn = "shapeml_tensor_import_dlpack";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!managed) return null_arg(fn, "managed");
    return finish_tensor(rt::from_dlpack(managed), out);
  });
}

SHAPEML_API shapeml_status* shapeml_tensor_import_dlpack_versioned(DLManagedTensorVersioned* managed, shapeml_tensor** out) {
  return guarded("shapeml_tensor_import_dlpack_versioned", [&]() -> shapeml_status* {
    const char* fn = "shapeml_tensor_import_dlpack_versioned";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!managed) return null_arg(fn, "managed");
    return finish_tensor(rt::from_dlpack_versioned(managed), out);
  });
}

SHAPEML_API shapeml_status* shapeml_tensor_load_npy(const char* path, shapeml_memory* memory, shapeml_tensor** out) {
  return guarded("shapeml_tensor_load_npy", [&]() -> shapeml_status* {
    const char* fn = "shapeml_tensor_load_npy";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!path) return null_arg(fn, "path");
    return finish_tensor(rt::read_npy(std::string(path), memory_of(memory)), out);
  });
}

SHAPEML_API shapeml_status* shapeml_tensor_save_npy(const shapeml_tensor* t, const char* path) {
  return guarded("shapeml_tensor_save_npy", [&]() -> shapeml_status* {
    const char* fn = "shapeml_tensor_save_npy";
    if (!t) return null_arg(fn, "tensor");
    if (!path) return null_arg(fn, "path");
    return to_status(rt::write_npy(path, *tensor_of(t)));
  });
}

SHAPEML_API shapeml_status* shapeml_npz_load(const char* path, shapeml_memory* memory, shapeml_npz** out) {
  return guarded("shapeml_npz_load", [&]() -> shapeml_status* {
    const char* fn = "shapeml_npz_load";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!path) return null_arg(fn, "path");
    auto r = rt::read_npz(path, memory_of(memory));
    if (!r.ok()) return to_status(r.status());
    auto* z = new shapeml_npz;
    z->entries = std::move(r).value();
    *out = z;
    return nullptr;
  });
}

SHAPEML_API size_t shapeml_npz_count(const shapeml_npz* z) { return z ? z->entries.size() : 0; }

SHAPEML_API const char* shapeml_npz_name(const shapeml_npz* z, size_t i) { return z && i < z->entries.size() ? z->entries[i].name.c_str() : nullptr; }

SHAPEML_API shapeml_status* shapeml_npz_get(const shapeml_npz* z, const char* name, shapeml_tensor** out) {
  return guarded("shapeml_npz_get", [&]() -> shapeml_status* {
    const char* fn = "shapeml_npz_get";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!z) return null_arg(fn, "npz");
    if (!name) return null_arg(fn, "name");
    std::string have;
    for (const auto& e : z->entries) {
      if (e.name == name) {
        *out = handle_of(rt::TensorRef(e.tensor));
        return nullptr;
      }
      have += (have.empty() ? "" : ", ") + e.name;
    }
    return make_status(SHAPEML_STATUS_NOT_FOUND, std::string(fn) + ": no array `" + name + "` in the archive (it has: " + have + ")");
  });
}

SHAPEML_API void shapeml_npz_release(shapeml_npz* z) {
  if (z && z->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete z;
}

// ---- modules -----------------------------------------------------------------

SHAPEML_API shapeml_status* shapeml_module_load(const char* path, const shapeml_module_options* options, shapeml_module** out) {
  return guarded("shapeml_module_load", [&]() -> shapeml_status* {
    const char* fn = "shapeml_module_load";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!path) return null_arg(fn, "path");
    shapeml_module_options o;
    if (auto* st = shapeml::capi::read_module_options(fn, options, o)) return st;
    auto r = rt::Module::load(path, memory_of(o.memory));
    if (!r.ok()) return to_status(r.status());
    *out = shapeml::capi::new_module_handle(r.value());
    return nullptr;
  });
}

SHAPEML_API void shapeml_module_retain(shapeml_module* m) {
  if (m) m->refs.fetch_add(1, std::memory_order_relaxed);
}

SHAPEML_API void shapeml_module_release(shapeml_module* m) {
  if (m && m->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete m;
}

SHAPEML_API size_t shapeml_module_entry_count(const shapeml_module* m) { return m ? m->module->manifest().entries.size() : 0; }

SHAPEML_API const char* shapeml_module_entry_name(const shapeml_module* m, size_t i) {
  if (!m || i >= m->module->manifest().entries.size()) return nullptr;
  return m->module->manifest().entries[i].name.c_str();
}

SHAPEML_API shapeml_status* shapeml_module_lookup(const shapeml_module* m, const char* entry, size_t* num_inputs, size_t* num_outputs) {
  return guarded("shapeml_module_lookup", [&]() -> shapeml_status* {
    const char* fn = "shapeml_module_lookup";
    if (!m) return null_arg(fn, "module");
    if (!entry) return null_arg(fn, "entry");
    const auto* e = m->module->manifest().find(entry);
    if (!e) {
      std::string have;
      for (const auto& x : m->module->manifest().entries) have += (have.empty() ? "" : ", ") + x.name;
      return make_status(SHAPEML_STATUS_NOT_FOUND, std::string(fn) + ": module `" + m->module->origin() + "` has no entry point `" + entry +
                                                       "` (it has: " + have + ")");
    }
    if (num_inputs) *num_inputs = e->params.size();
    if (num_outputs) *num_outputs = e->returns.size();
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_module_call(shapeml_module* m, const char* entry, shapeml_tensor* const* inputs, size_t num_inputs,
                                                shapeml_tensor** outputs, size_t num_outputs) {
  return guarded("shapeml_module_call", [&]() -> shapeml_status* {
    const char* fn = "shapeml_module_call";
    if (outputs)
      for (size_t i = 0; i < num_outputs; ++i) outputs[i] = nullptr;
    if (!m) return null_arg(fn, "module");
    if (!entry) return null_arg(fn, "entry");
    if (num_inputs && !inputs) return null_arg(fn, "inputs");
    if (num_outputs && !outputs) return null_arg(fn, "outputs");
    shapeml_entry* e = nullptr;
    for (const auto& x : shapeml::capi::entries_of(m))
      if (x->sig->name == entry) e = x.get();
    if (!e) {
      std::string have;
      for (const auto& x : m->module->manifest().entries) have += (have.empty() ? "" : ", ") + x.name;
      return make_status(SHAPEML_STATUS_NOT_FOUND, m->module->origin() + ": no entry `" + entry + "` (entries: " + (have.empty() ? "none" : have) + ")");
    }
    if (num_outputs != e->sig->returns.size())
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": `" + entry + "` returns " + std::to_string(e->sig->returns.size()) +
                                                              " tensor(s) but num_outputs is " + std::to_string(num_outputs));
    return shapeml_entry_call(e, inputs, num_inputs, outputs, num_outputs, nullptr);
  });
}

}  // extern "C"

extern "C" {

SHAPEML_API shapeml_status* shapeml_unstable_set_parallel_for(shapeml_unstable_parallel_for_fn fn, void* user) {
  rt::set_host_parallel_for(fn, user);
  return nullptr;
}

}  // extern "C"
