// The back half of the pipeline (docs/design/stages.md), after the front half
// of src/driver/frontend.h has produced a verified typed IR:
//
//   lower     typed IR -> MLIR (linalg on tensors) -> LLVM IR, per
//             specialization (an entry point at concrete shape values)
//   artifact  the LLVM IR as machine code: in process (jit: a runtime Module
//             whose entry points are specialized on first call), or in a
//             shared object with a manifest (aot), for libshapeml_runtime.so
//
// `--emit=mlir|llvm` stop after lower. Every function returns a runtime
// Status/Result whose code says whose fault a failure is: INVALID_ARGUMENT
// (bindings that are malformed, incomplete or violate `where`), NOT_FOUND (no
// such entry point), IO_ERROR (the output cannot be written), INTERNAL (a
// bug in a stage). Nothing here prints, throws across the API or exits.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "lower/cpu/cpu_backend.h"
#include "lower/gpu/plan_gpu.h"
#include "runtime/memory_resource.h"
#include "runtime/module.h"
#include "runtime/status.h"

namespace shapeml::driver {

/// What `--emit=` can stop at after the front half.
enum class LowerStage {
  Mlir,         // MLIR as emitted (linalg on tensors), with matmul strategies
  LoweredMlir,  // after the MLIR pass pipeline (LLVM dialect)
  Llvm,         // optimized LLVM IR
  GpuPlan,      // a device entry's dispatch plan (src/plan/plan.h), with each choice and why
  GpuKernels,   // the CUDA C of the kernels generated for that plan's fused launches (lower/gpu/generate_kernels.h)
};

/// The target named by `name`: "native" or "x86-64"; INVALID_ARGUMENT
/// otherwise (the same spelling in shapemlc and the C ABI).
runtime::Result<lower::cpu::CpuTarget> parse_target(const std::string& name);

/// Checks a specialization against the typed IR before any code is made:
/// the entry exists (NOT_FOUND), every shape variable is bound once to a
/// value >= 1 and nothing else is bound, and the `where` constraints hold
/// (INVALID_ARGUMENT, naming the constraint and the values).
runtime::Status validate_specialization(const ir::Module& m, const artifact::Specialization& s);

/// lower: the text of one specialization at `stage`.
runtime::Result<std::string> lower_to_text(const ir::Module& m, const artifact::Specialization& s, LowerStage stage,
                                           const lower::cpu::CpuTarget& target, const lower::gpu::PlanOptions& gpu = {});

/// artifact (jit): a runtime module over the typed IR; each entry point is
/// lowered and compiled on its first call for each binding. At most
/// `cache_capacity` specializations stay compiled (0: the default, 64).
runtime::Result<std::shared_ptr<runtime::Module>> jit_module(ir::Module m, const lower::cpu::CpuTarget& target, const std::string& name,
                                                             runtime::MemoryResourcePtr memory = nullptr, size_t cache_capacity = 0);

/// artifact (aot): every specialization lowered and compiled into one shared
/// object at `out_path`. Specializations are validated first; two that bind
/// the same entry to the same values are INVALID_ARGUMENT.
runtime::Status build_shared_object(const ir::Module& m, const std::vector<artifact::Specialization>& specs,
                                    const lower::cpu::CpuTarget& target, const std::string& out_path, const lower::gpu::PlanOptions& gpu = {});

}  // namespace shapeml::driver
