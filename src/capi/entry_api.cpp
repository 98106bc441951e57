// The C ABI's module introspection and entry points (0.3): entry handles
// resolved once, their signatures (names, dtypes, symbolic dimensions as text
// and structure, shape variables, `where` constraints, AOT specializations),
// explicit specialization, and calls with options. Compiled into both
// libshapeml.so and libshapeml_runtime.so.
#include <algorithm>
#include <set>

#include "common/struct_reader.h"
#include "capi/handles.h"
#include "runtime/dlpack.h"
#include "runtime/shape_binding.h"

using shapeml::capi::guarded;
using shapeml::capi::make_status;
using shapeml::capi::memory_of;
using shapeml::capi::null_arg;
using shapeml::capi::tensor_of;
using shapeml::capi::to_status;
namespace rt = shapeml::runtime;
namespace types = shapeml::types;

namespace {

#define IO_END(f) SHAPEML_FIELD_END(shapeml_tensor_info, f)
constexpr std::initializer_list<size_t> kTensorInfoEnds = {IO_END(struct_size), IO_END(name),      IO_END(dtype), IO_END(device_type),
                                                           IO_END(device_id),   IO_END(rank),      IO_END(type)};
#undef IO_END
#define DIM_END(f) SHAPEML_FIELD_END(shapeml_dim_info, f)
constexpr std::initializer_list<size_t> kDimInfoEnds = {DIM_END(struct_size), DIM_END(kind), DIM_END(value), DIM_END(variable),
                                                        DIM_END(text)};
#undef DIM_END
#define CALL_END(f) SHAPEML_FIELD_END(shapeml_call_options, f)
constexpr std::initializer_list<size_t> kCallOptionsEnds = {CALL_END(struct_size), CALL_END(memory), CALL_END(outputs),
                                                            CALL_END(device_index), CALL_END(stream), CALL_END(graph),
                                                            CALL_END(reserved), CALL_END(num_threads),
                                                            CALL_END(num_dims)};
#undef CALL_END

shapeml_entry::Io describe(const std::string& name, const types::TensorType& t) {
  shapeml_entry::Io io;
  io.name = name;
  io.type = t.str();
  for (const types::Poly& p : t.shape) {
    shapeml_entry::Dim d{SHAPEML_DIM_EXPRESSION, 0, "", p.str()};
    if (auto c = p.constant_value()) {
      d.kind = SHAPEML_DIM_CONSTANT;
      d.value = *c;
    } else if (p.terms().size() == 1) {
      const types::Term& term = p.terms().begin()->second;
      if (term.coeff == 1 && term.atoms.size() == 1 && term.atoms[0].kind == types::Atom::Kind::Var) {
        d.kind = SHAPEML_DIM_VARIABLE;
        d.variable = term.atoms[0].var;
      }
    }
    io.dims.push_back(std::move(d));
  }
  return io;
}

const shapeml_entry::Io* io_at(const shapeml_entry* e, shapeml_io_kind kind, size_t index, const char* fn, shapeml_status** err) {
  const std::vector<shapeml_entry::Io>* list = kind == SHAPEML_IO_PARAM ? &e->params : kind == SHAPEML_IO_RESULT ? &e->results : nullptr;
  if (!list) {
    *err = make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": unknown kind " + std::to_string(kind) +
                                                            " (SHAPEML_IO_PARAM or SHAPEML_IO_RESULT)");
    return nullptr;
  }
  if (index >= list->size()) {
    *err = make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": entry `" + e->sig->name + "` has " + std::to_string(list->size()) +
                                                            (kind == SHAPEML_IO_PARAM ? " parameter(s)" : " result(s)") + "; index " +
                                                            std::to_string(index) + " is out of range");
    return nullptr;
  }
  return &(*list)[index];
}

std::string entry_list(const rt::Manifest& m) {
  std::string have;
  for (const auto& x : m.entries) have += (have.empty() ? "" : ", ") + x.name;
  return have.empty() ? "none" : have;
}

}  // namespace

namespace shapeml::capi {

const std::vector<std::unique_ptr<shapeml_entry>>& entries_of(shapeml_module* m) {
  std::call_once(m->entries_once, [m] {
    std::vector<std::unique_ptr<shapeml_entry>> list;
    for (const rt::EntrySig& sig : m->module->manifest().entries) {
      auto e = std::make_unique<shapeml_entry>();
      e->owner = m;
      e->sig = &sig;
      for (const rt::ParamSig& p : sig.params) e->params.push_back(describe(p.name, p.type));
      for (const types::TensorType& r : sig.returns) e->results.push_back(describe("", r));
      list.push_back(std::move(e));
    }
    m->entries = std::move(list);
  });
  return m->entries;
}

shapeml_status* read_module_options(const char* fn, const shapeml_module_options* in, shapeml_module_options& out) {
#define MO_END(f) SHAPEML_FIELD_END(shapeml_module_options, f)
  // 24: sizeof the 0.2 struct (three fields plus tail padding).
  static constexpr std::initializer_list<size_t> ends = {MO_END(struct_size), MO_END(memory), MO_END(target), 24,
                                                         MO_END(specialization_cache_capacity)};
#undef MO_END
  out = SHAPEML_MODULE_OPTIONS_INIT;
  if (!in) return nullptr;
  if (!common::read_versioned(*in, out, ends)) return bad_struct_size(fn, "options", in->struct_size, sizeof out, ends);
  if (!is_target(out.target))
    return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": options->target " + std::to_string(out.target) +
                                                            " is not a shapeml_target (" + kTargetsExpected + ")");
  return nullptr;
}

shapeml_module* new_module_handle(std::shared_ptr<runtime::Module> m) {
  auto* h = new shapeml_module;
  h->module = std::move(m);
  return h;
}

}  // namespace shapeml::capi

extern "C" {

SHAPEML_API const char* shapeml_module_name(const shapeml_module* m) { return m ? m->module->manifest().name.c_str() : nullptr; }

SHAPEML_API const char* shapeml_module_target(const shapeml_module* m) { return m ? m->module->manifest().target.c_str() : nullptr; }

SHAPEML_API shapeml_status* shapeml_module_get_entry(const shapeml_module* module, const char* name, shapeml_entry** out) {
  return guarded("shapeml_module_get_entry", [&]() -> shapeml_status* {
    const char* fn = "shapeml_module_get_entry";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!module) return null_arg(fn, "module");
    if (!name) return null_arg(fn, "name");
    auto* m = const_cast<shapeml_module*>(module);
    for (const auto& e : shapeml::capi::entries_of(m))
      if (e->sig->name == name) {
        *out = e.get();
        return nullptr;
      }
    return make_status(SHAPEML_STATUS_NOT_FOUND, std::string(fn) + ": module `" + m->module->origin() + "` has no entry point `" + name +
                                                     "` (it has: " + entry_list(m->module->manifest()) + ")");
  });
}

SHAPEML_API shapeml_status* shapeml_module_get_entry_at(const shapeml_module* module, size_t index, shapeml_entry** out) {
  return guarded("shapeml_module_get_entry_at", [&]() -> shapeml_status* {
    const char* fn = "shapeml_module_get_entry_at";
    if (!out) return null_arg(fn, "out");
    *out = nullptr;
    if (!module) return null_arg(fn, "module");
    const auto& list = shapeml::capi::entries_of(const_cast<shapeml_module*>(module));
    if (index >= list.size())
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": index " + std::to_string(index) + " is out of range (the module has " +
                                                              std::to_string(list.size()) + " entry points)");
    *out = list[index].get();
    return nullptr;
  });
}

SHAPEML_API const char* shapeml_entry_name(const shapeml_entry* e) { return e ? e->sig->name.c_str() : nullptr; }

SHAPEML_API size_t shapeml_entry_param_count(const shapeml_entry* e) { return e ? e->params.size() : 0; }

SHAPEML_API size_t shapeml_entry_result_count(const shapeml_entry* e) { return e ? e->results.size() : 0; }

SHAPEML_API size_t shapeml_entry_shape_variable_count(const shapeml_entry* e) { return e ? e->sig->dims.size() : 0; }

SHAPEML_API const char* shapeml_entry_shape_variable(const shapeml_entry* e, size_t i) {
  return e && i < e->sig->dims.size() ? e->sig->dims[i].c_str() : nullptr;
}

SHAPEML_API int32_t shapeml_entry_shape_variable_is_given(const shapeml_entry* e, size_t i) {
  if (!e || i >= e->sig->dims.size()) return 0;
  const auto& g = e->sig->given;
  return std::find(g.begin(), g.end(), e->sig->dims[i]) != g.end() ? 1 : 0;
}

SHAPEML_API size_t shapeml_entry_constraint_count(const shapeml_entry* e) { return e ? e->sig->where.size() : 0; }

SHAPEML_API const char* shapeml_entry_constraint(const shapeml_entry* e, size_t i) {
  return e && i < e->sig->where.size() ? e->sig->where[i].text.c_str() : nullptr;
}

SHAPEML_API shapeml_status* shapeml_entry_get_tensor_info(const shapeml_entry* e, shapeml_io_kind kind, size_t index, shapeml_tensor_info* out) {
  return guarded("shapeml_entry_get_tensor_info", [&]() -> shapeml_status* {
    const char* fn = "shapeml_entry_get_tensor_info";
    if (!e) return null_arg(fn, "entry");
    if (!out) return null_arg(fn, "out");
    shapeml_status* err = nullptr;
    const shapeml_entry::Io* io = io_at(e, kind, index, fn, &err);
    if (!io) return err;
    const types::TensorType& t = kind == SHAPEML_IO_PARAM ? e->sig->params[index].type : e->sig->returns[index];
    // A generic entry's variables (spec §3.5) have no DLPack value: -1.
    DLDevice dev = t.device.is_var() ? DLDevice{static_cast<DLDeviceType>(-1), -1} : rt::to_dl_device(t.device);
    shapeml_dtype dt = t.dtype == types::DType::Var ? SHAPEML_DTYPE_VARIABLE : static_cast<shapeml_dtype>(t.dtype);
    shapeml_tensor_info full{sizeof full, io->name.c_str(), dt, static_cast<int32_t>(dev.device_type), dev.device_id, t.rank(), io->type.c_str()};
    if (!shapeml::common::write_versioned(full, out, kTensorInfoEnds))
      return shapeml::capi::bad_struct_size(fn, "out", out->struct_size, sizeof full, kTensorInfoEnds);
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_entry_get_dim(const shapeml_entry* e, shapeml_io_kind kind, size_t index, size_t dim, shapeml_dim_info* out) {
  return guarded("shapeml_entry_get_dim", [&]() -> shapeml_status* {
    const char* fn = "shapeml_entry_get_dim";
    if (!e) return null_arg(fn, "entry");
    if (!out) return null_arg(fn, "out");
    shapeml_status* err = nullptr;
    const shapeml_entry::Io* io = io_at(e, kind, index, fn, &err);
    if (!io) return err;
    if (dim >= io->dims.size())
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": " + io->type + " has rank " + std::to_string(io->dims.size()) +
                                                              "; dimension " + std::to_string(dim) + " is out of range");
    const shapeml_entry::Dim& d = io->dims[dim];
    shapeml_dim_info full{sizeof full, d.kind, d.value, d.kind == SHAPEML_DIM_VARIABLE ? d.variable.c_str() : nullptr, d.text.c_str()};
    if (!shapeml::common::write_versioned(full, out, kDimInfoEnds))
      return shapeml::capi::bad_struct_size(fn, "out", out->struct_size, sizeof full, kDimInfoEnds);
    return nullptr;
  });
}

SHAPEML_API size_t shapeml_entry_aot_specialization_count(const shapeml_entry* e) { return e ? e->sig->specializations.size() : 0; }

SHAPEML_API shapeml_status* shapeml_entry_get_aot_specialization(const shapeml_entry* e, size_t index, int64_t* values, size_t num_values) {
  return guarded("shapeml_entry_get_aot_specialization", [&]() -> shapeml_status* {
    const char* fn = "shapeml_entry_get_aot_specialization";
    if (!e) return null_arg(fn, "entry");
    if (!values && num_values) return null_arg(fn, "values");
    const auto& specs = e->sig->specializations;
    if (index >= specs.size())
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": entry `" + e->sig->name + "` has " + std::to_string(specs.size()) +
                                                              " AOT specialization(s); index " + std::to_string(index) + " is out of range");
    if (num_values != e->sig->dims.size())
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": entry `" + e->sig->name + "` has " +
                                                              std::to_string(e->sig->dims.size()) + " shape variable(s), but num_values is " +
                                                              std::to_string(num_values));
    for (size_t i = 0; i < num_values; ++i) values[i] = specs[index].bind.at(e->sig->dims[i]);
    return nullptr;
  });
}

SHAPEML_API shapeml_status* shapeml_entry_specialize(shapeml_entry* e, const char* const* names, const int64_t* values, size_t count) {
  return guarded("shapeml_entry_specialize", [&]() -> shapeml_status* {
    const char* fn = "shapeml_entry_specialize";
    if (!e) return null_arg(fn, "entry");
    if (count && !names) return null_arg(fn, "names");
    if (count && !values) return null_arg(fn, "values");
    rt::Binding b;
    for (size_t i = 0; i < count; ++i) {
      if (!names[i]) return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": names[" + std::to_string(i) + "] is NULL");
      if (!b.emplace(names[i], values[i]).second)
        return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": shape variable `" + names[i] + "` is given twice");
    }
    return to_status(e->owner->module->specialize(*e->sig, b));
  });
}

SHAPEML_API shapeml_status* shapeml_entry_call(shapeml_entry* e, shapeml_tensor* const* inputs, size_t num_inputs, shapeml_tensor** outputs,
                                               size_t num_outputs, const shapeml_call_options* options) {
  return guarded("shapeml_entry_call", [&]() -> shapeml_status* {
    const char* fn = "shapeml_entry_call";
    if (outputs)
      for (size_t i = 0; i < num_outputs; ++i) outputs[i] = nullptr;
    if (!e) return null_arg(fn, "entry");
    shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
    if (options && !shapeml::common::read_versioned(*options, o, kCallOptionsEnds))
      return shapeml::capi::bad_struct_size(fn, "options", options->struct_size, sizeof o, kCallOptionsEnds);
    if (o.device_index != 0)
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": options->device_index is " + std::to_string(o.device_index) +
                                                              "; the device is the one the entry's types name, so it must be 0 in this release");
    // A generic entry's device is its inputs' (spec §3.5): the runtime checks
    // the instance's.
    if (o.stream && !e->sig->device && e->sig->device_vars.empty())
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT,
                         std::string(fn) + ": options->stream is set, but `" + e->sig->name + "` is a host entry (a stream is for device entries)");
    if (o.graph != SHAPEML_GRAPH_DEFAULT && o.graph != SHAPEML_GRAPH_ON && o.graph != SHAPEML_GRAPH_OFF)
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": options->graph is " + std::to_string(o.graph) +
                                                              " (expected SHAPEML_GRAPH_DEFAULT 0, SHAPEML_GRAPH_ON 1 or SHAPEML_GRAPH_OFF 2)");
    if (o.num_threads < 0)
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": options->num_threads is " + std::to_string(o.num_threads) +
                                                              " (expected 0 for the default, or a thread count >= 1)");
    if (num_inputs && !inputs) return null_arg(fn, "inputs");
    if (!o.outputs && num_outputs && !outputs) return null_arg(fn, "outputs");
    if (o.num_dims && !o.dim_names) return null_arg(fn, "options->dim_names");
    if (o.num_dims && !o.dim_values) return null_arg(fn, "options->dim_values");
    rt::Binding given;
    for (size_t i = 0; i < o.num_dims; ++i) {
      if (!o.dim_names[i]) return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": options->dim_names[" + std::to_string(i) + "] is NULL");
      if (!given.emplace(o.dim_names[i], o.dim_values[i]).second)
        return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": shape variable `" + o.dim_names[i] + "` is given twice in options->dim_names");
    }
    const rt::EntrySig& sig = *e->sig;
    if (num_outputs != sig.returns.size() && !(o.outputs && !outputs && num_outputs == 0))
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": `" + sig.name + "` returns " + std::to_string(sig.returns.size()) +
                                                              " tensor(s) but num_outputs is " + std::to_string(num_outputs));
    std::vector<rt::Tensor*> in(num_inputs);
    for (size_t i = 0; i < num_inputs; ++i) in[i] = inputs[i] ? tensor_of(inputs[i]) : nullptr;
    std::vector<rt::Tensor*> provided;
    if (o.outputs)
      for (size_t k = 0; k < sig.returns.size(); ++k) provided.push_back(o.outputs[k] ? tensor_of(o.outputs[k]) : nullptr);
    rt::CallOptions co;
    co.stream = o.stream;
    co.graph = static_cast<rt::GraphOption>(o.graph);
    co.threads = o.num_threads;
    co.dims = std::move(given);
    if (o.memory) co.memory = o.memory->mr;
    co.outputs = provided;
    std::vector<rt::TensorRef> out;
    rt::Status st = e->owner->module->call(sig, in, out, co);
    if (!st.ok()) return to_status(st);
    if (outputs)
      for (size_t k = 0; k < num_outputs && k < out.size(); ++k) outputs[k] = shapeml::capi::handle_of(std::move(out[k]));
    return nullptr;
  });
}

}  // extern "C"
