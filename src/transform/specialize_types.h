// Generic functions made concrete (spec §3.5): the checker checks a function
// with dtype and device variables once, for every value of them; the back
// ends lower concrete programs only. Before an entry is lowered, this pass
// writes the module that entry needs at its dtype and device binding: the
// entry with every value, attribute and result type substituted, and each
// generic function it reaches, at the binding its call's (now concrete)
// arguments give, as an instance `F%T=bf16%Dv=cuda0`. A copy to the device
// a value is already on (`(copy_to_device x Dv)` at Dv = host) becomes the
// identity. A module without generic functions is returned as it is.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "ir/ir.h"

namespace shapeml::transform {

/// Takes the entry's dtype and device variables out of a specialization's
/// `bindings` (binding values, types/tensor_type.h) into `out`. False with
/// `error` when one is missing or not a dtype/device. Shape variables stay.
bool split_type_bindings(const ir::Function& entry, std::map<std::string, int64_t>& bindings, types::TypeBinding& out, std::string& error);

/// The module `entry` needs at `binding` (every dtype and device variable of
/// the entry bound to a concrete value). nullopt with `error` when the entry
/// does not exist or a value is not one its variable ranges over.
std::optional<ir::Module> specialize_types(const ir::Module& m, const std::string& entry, const types::TypeBinding& binding, std::string& error);

/// Both of the above: the module for `entry` at the dtype/device values in
/// `bindings`, which keep only the shape variables. For a module without
/// generic functions, `m` itself (no copy) through `storage`'s absence.
const ir::Module* specialize_for_binding(const ir::Module& m, const std::string& entry, std::map<std::string, int64_t>& bindings,
                                         std::optional<ir::Module>& storage, std::string& error);

}  // namespace shapeml::transform
