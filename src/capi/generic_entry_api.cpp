// The C ABI's view of a generic entry's dtype and device variables (spec
// §3.5; unstable tier, 0.4): which there are, in declaration order (dtype
// variables, then device variables), and the dtypes each dtype variable
// ranges over. Their values at a call come from the inputs; for
// shapeml_entry_specialize they are the SHAPEML_UNSTABLE_BIND_* values.
// Compiled into both libshapeml.so and libshapeml_runtime.so.
#define SHAPEML_UNSTABLE_API
#include "capi/handles.h"
#include "capi/status.h"
#include "common/struct_reader.h"
#include "types/tensor_type.h"

using shapeml::capi::guarded;
using shapeml::capi::make_status;
using shapeml::capi::null_arg;

namespace {

#define TV_END(f) SHAPEML_FIELD_END(shapeml_unstable_type_variable, f)
constexpr std::initializer_list<size_t> kTypeVariableEnds = {TV_END(struct_size), TV_END(name), TV_END(is_device), TV_END(dtypes)};
#undef TV_END

// The binding values are the runtime's own (types/tensor_type.h).
static_assert(SHAPEML_UNSTABLE_BIND_DTYPE(SHAPEML_DTYPE_BF16) == -16 - static_cast<int64_t>(shapeml::types::DType::BF16));
static_assert(SHAPEML_UNSTABLE_BIND_HOST == -1000);
static_assert(SHAPEML_UNSTABLE_BIND_CUDA(3) == -1004);

}  // namespace

SHAPEML_API size_t shapeml_unstable_entry_type_variable_count(const shapeml_entry* e) {
  return e ? e->sig->dtype_vars.size() + e->sig->device_vars.size() : 0;
}

SHAPEML_API shapeml_status* shapeml_unstable_entry_get_type_variable(const shapeml_entry* e, size_t index, shapeml_unstable_type_variable* out) {
  return guarded("shapeml_unstable_entry_get_type_variable", [&]() -> shapeml_status* {
    const char* fn = "shapeml_unstable_entry_get_type_variable";
    if (!e) return null_arg(fn, "entry");
    if (!out) return null_arg(fn, "out");
    const auto& dts = e->sig->dtype_vars;
    const auto& dvs = e->sig->device_vars;
    if (index >= dts.size() + dvs.size())
      return make_status(SHAPEML_STATUS_INVALID_ARGUMENT, std::string(fn) + ": entry `" + e->sig->name + "` has " +
                                                              std::to_string(dts.size() + dvs.size()) + " dtype or device variable(s); index " +
                                                              std::to_string(index) + " is out of range");
    shapeml_unstable_type_variable full{sizeof full, nullptr, 0, 0};
    if (index < dts.size()) {
      full.name = dts[index].first.c_str();
      full.dtypes = dts[index].second;  // bit d for DType d, which is SHAPEML_DTYPE_d
    } else {
      full.name = dvs[index - dts.size()].c_str();
      full.is_device = 1;
    }
    if (!shapeml::common::write_versioned(full, out, kTypeVariableEnds))
      return shapeml::capi::bad_struct_size(fn, "out", out->struct_size, sizeof full, kTypeVariableEnds);
    return nullptr;
  });
}
