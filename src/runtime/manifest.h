// The module manifest (format in common/compiled_entry.h): the entry points
// of a compiled module, their shape-polymorphic signatures, and the
// specializations that exist, parsed without any compiler component (the
// S-expression reader and dimension polynomials only).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/status.h"
#include "types/shape_inference.h"
#include "types/tensor_type.h"

namespace shapeml::runtime {

struct ParamSig {
  std::string name;
  types::TensorType type;
};

struct WhereSig {
  types::ShapeConstraint constraint;
  std::string text;  // as written in the manifest, for messages
};

/// Values of an entry's shape variables, by name; for a generic entry's
/// instance also those of its dtype and device variables (encoded as
/// types::dtype_binding_value / device_binding_value).
using Binding = std::map<std::string, int64_t>;

struct SpecializationSig {
  Binding bind;
  std::string symbol;
  /// `(kind gpu-plan)`: `symbol` names a dispatch plan (CodeProvider::
  /// plan_text), not CPU code. Exactly the specializations of device entries.
  bool gpu_plan = false;
};

/// One index-reading operation of an entry (calls inlined), numbered from 1
/// in the order the code runs them (docs/design/index-checks.md).
struct IndexSite {
  int64_t id = 0;
  std::string op;        // "gather", "take_along_axis"
  std::string location;  // "model.sml:12:15"
  size_t rank = 0;       // rank of its index tensor
  std::string operand;   // the index operand as written ("idx"), or ""
};

struct EntrySig {
  std::string name;
  std::vector<std::string> dims;  // shape variables, in declaration order
  /// `(dtypes ...)` and `(devices ...)` (spec §3.5): the dtype variables with
  /// what each ranges over, and the device variables, of a generic entry.
  /// A call binds them from its inputs and runs the entry's instance at
  /// those values (instantiate_entry).
  std::vector<std::pair<std::string, types::DTypeSet>> dtype_vars;
  std::vector<std::string> device_vars;
  /// An instance (instantiate_entry): the values of dtype_vars and
  /// device_vars, as types/tensor_type.h's binding values; every binding
  /// of the instance includes them. Empty for any other entry.
  Binding type_bind;
  /// Generic and not an instance: a call must instantiate it first.
  bool generic() const { return (!dtype_vars.empty() || !device_vars.empty()) && type_bind.empty(); }
  /// `(given ...)`: the variables of `dims` every call supplies (call
  /// options), in the order declared; the inference plan starts with them.
  std::vector<std::string> given;
  std::vector<WhereSig> where;
  std::vector<ParamSig> params;
  std::vector<types::TensorType> returns;
  std::vector<SpecializationSig> specializations;
  /// How a call binds `dims` from its input shapes (computed at parse time).
  types::InferencePlan inference;
  /// A parameter or result lives on a CUDA device: calls run a dispatch plan
  /// through the CUDA plugin.
  bool device = false;
  /// `(index-checks ...)`: the entry's code takes the error record after its
  /// outputs (int64_t[error_record_size()]); empty: no record, no cost.
  std::vector<IndexSite> index_sites;
  size_t error_record_size() const {
    size_t r = 0;
    for (const IndexSite& s : index_sites) r = std::max(r, s.rank);
    return index_sites.empty() ? 0 : 3 + r;
  }
};

struct Manifest {
  uint32_t abi = 0;
  std::string name;
  std::string target;  // "" when absent
  std::string module_id;  // (module-id ...): "" when absent (a module built before 0.4)
  std::vector<EntrySig> entries;
  const EntrySig* find(const std::string& entry) const;
};

/// Parses and validates manifest text. `origin` names it in messages (the
/// .so path). Errors are INVALID_ARGUMENT with "origin:line:col: ..." except
/// an (abi N) other than common::kCompiledEntryAbiVersion, which is INCOMPATIBLE_MODULE.
///
/// Validation: one (shapeml-module ...) form; (abi N) and (name X) present;
/// entry names unique; every dimension names only declared shape variables;
/// every shape variable appears in some parameter type (else no call could
/// bind it); each specialization binds every shape variable exactly once to a
/// value >= 1 that satisfies the `where` constraints, and no two bind the
/// same values.
Result<Manifest> parse_manifest(const std::string& text, const std::string& origin);

/// "T=bf16 Dv=cuda0 B=4 S=128": dtype, device, then shape variables, each
/// in the entry's declaration order.
std::string binding_str(const EntrySig& e, const Binding& b);

/// The dtype and device variables of generic entry `e` bound from its inputs'
/// dtypes and devices (the first parameter naming each; spec §3.5), as
/// binding values. INVALID_ARGUMENT when an input's dtype is not one its
/// variable ranges over (naming the input, the variable and its set).
/// `dtype(i)`, `device(i)`: input i's.
Result<Binding> bind_type_variables(const EntrySig& e, size_t inputs, const std::function<types::DType(size_t)>& dtype,
                                    const std::function<types::Device(size_t)>& device);

/// Generic entry `e` at `type_bind` (every dtype and device variable bound,
/// nothing else): the parameter and result types substituted, `device` as
/// the substituted types say, the specializations that bind these values.
/// INVALID_ARGUMENT for a missing, unknown or out-of-set value.
Result<EntrySig> instantiate_entry(const EntrySig& e, const Binding& type_bind);

}  // namespace shapeml::runtime
