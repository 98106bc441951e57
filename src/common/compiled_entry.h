// The contract between generated code (JIT or AOT) and the runtime.
//
// A *specialization* is one entry point compiled for concrete values of its
// shape variables, so every tensor it touches has a static shape. Its machine
// code has the C signature
//
//     void SYMBOL(void** buffers);
//
// where buffers[0 .. n_in-1] are the inputs' data pointers and
// buffers[n_in .. n_in+n_out-1] the outputs' data pointers, in parameter /
// result order. Every buffer is dense, row-major, at least 64-byte aligned,
// allocated by the runtime (outputs too: destination-passing style), and
// holds exactly the specialized shape. Generated code never allocates the
// buffers it returns and never frees any buffer it is given.
//
// Since 0.5 every CPU specialization also exports `void* SYMBOL_temp_hooks[2]`
// (zero-initialized data): {void* (*alloc)(int64_t bytes), void (*free)(void*)}.
// The code allocates its heap temporaries through them when they are set
// (the runtime sets them when it resolves SYMBOL: runtime/temp_memory.h),
// else through malloc/free. Older modules lack the table and still load.
//
// Since 0.5 every CPU specialization also exports `void* SYMBOL_parallel_hooks[1]`
// (zero-initialized): {void (*parallel_for)(int64_t n, void (*task)(void*
// closure, int64_t begin, int64_t end), void* closure)}. The code's parallel
// loops call it when it is set (runtime/parallel_for.h), which must run
// task over disjoint ranges covering [0, n) and return when all are done;
// else the code runs task(closure, 0, n) itself.
//
// An AOT shared object exports, besides the SYMBOLs:
//
//     const char* shapeml_module_manifest(void);   // static NUL-terminated text
//     uint32_t    shapeml_module_abi_version(void); // == kCompiledEntryAbiVersion
//
// The manifest is an S-expression (read with src/syntax's reader):
//
//   (shapeml-module (abi 1) (name NAME) (target "x86-64-v3") (module-id m-0123456789abcdef)
//     (entry FN (dims B S D) (where CONSTRAINT...)
//       (params (x (tensor f32 (B S D) host)) ...)
//       (returns (tensor f32 (B S D) host) ...)
//       (specialization (bind (B 4) (S 128) (D 256)) (symbol shapeml_FN_0))
//       (index-checks (site 1 gather "model.sml:12:15" 2 "idx") ...)   ; abi 2, only with index ops
//       ...)
//
// (module-id ...) (0.4, optional) is the module ID of the trace spans of its
// compile and its runs (docs/design/observability.md).
//
// An entry with (index-checks ...) takes one more buffer after its outputs,
// the error record: int64_t[3 + R] (R the largest RANK of its sites), zeroed
// by the runtime; the code writes {site ID, index, bound, coordinates...} of
// the first out-of-range index (docs/design/index-checks.md).
//     ...)
//
// Types and constraints use the language's own syntax (docs/spec), so the
// runtime re-derives shapes by evaluating dimension polynomials with the
// bound values, without any compiler component.
#pragma once
#include <cstdint>

namespace shapeml::common {

/// 2 (0.3): an entry may carry `(index-checks (site ID OP "FILE:LINE:COL"
/// RANK "OPERAND") ...)`; its code then takes one more buffer, after the
/// outputs: the error record (docs/design/index-checks.md). Modules of
/// version 1 (no index checks) are still loaded.
inline constexpr uint32_t kCompiledEntryAbiVersion = 2;
inline constexpr uint32_t kOldestCompiledEntryAbiVersion = 1;

using CompiledEntryFn = void (*)(void** buffers);

}  // namespace shapeml::common
