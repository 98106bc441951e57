// DLPack import and export for host and CUDA tensors, zero copy, in both flavours:
// the legacy DLManagedTensor (DLPack 0.x) and the versioned
// DLManagedTensorVersioned of DLPack 1.0 (declared in include/shapeml_dlpack.h).
// Ownership rules: docs/design/dlpack.md.
//
// CUDA tensors (kDLCUDA) and streams: these functions exchange descriptors
// only and never synchronize. Per the DLPack protocol the stream handshake is
// the caller's: before exporting, the producer's work on the tensor must be
// ordered before the consumer's stream (Python's __dlpack__(stream=...) makes
// the producer wait with an event); before importing, the caller makes the
// consumer's stream (shapeml: the stream it passes, or the device's default
// stream) wait for the producer's. Memory stays owned by the exporter until
// the deleter runs, which the consumer calls only after its own uses are
// complete or ordered.
#pragma once
#include "shapeml_dlpack.h"

#include "runtime/status.h"
#include "runtime/tensor.h"

namespace shapeml::runtime {

/// Exports `t` without copying. The returned managed tensor holds a reference
/// to `t` (its data stays valid) until the consumer calls its deleter, exactly
/// once. Its shape and strides arrays belong to the managed tensor (strides
/// are always explicit). A read-only tensor is FAILED_PRECONDITION (the
/// legacy struct has no flags to say so).
Result<DLManagedTensor*> to_dlpack(const TensorRef& t);

/// As to_dlpack, versioned: version {1, 0}; flags READ_ONLY when `t` is
/// read-only, or when `read_only` is true (the consumer must not write).
Result<DLManagedTensorVersioned*> to_dlpack_versioned(const TensorRef& t, bool read_only = false);

/// Imports a managed tensor without copying. On success the returned tensor
/// owns `m`: m->deleter(m) runs (once) when the last reference to the tensor
/// goes. On failure nothing is taken: the caller still owns `m` and must
/// call its deleter.
///
/// Rejected: a NULL tensor; a device other than kDLCPU and kDLCUDA
/// (UNIMPLEMENTED; a kDLCUDA tensor is imported as a device tensor without
/// loading the CUDA plugin); a dtype shapeml lacks (INVALID_ARGUMENT: u8, f16, complex,
/// lanes != 1, ...); non-compact strides (INVALID_ARGUMENT: the runtime
/// never copies behind the caller's back on import — copy first, e.g.
/// numpy.ascontiguousarray / torch.contiguous); a negative dimension; a NULL
/// data pointer with elements; rank above kMaxRank.
Result<TensorRef> from_dlpack(DLManagedTensor* m);

/// As from_dlpack, versioned. Also rejected: version.major != 1
/// (UNIMPLEMENTED; nothing past `version` is read then). Any minor version
/// of major 1 is accepted. READ_ONLY makes the tensor read-only.
Result<TensorRef> from_dlpack_versioned(DLManagedTensorVersioned* m);

}  // namespace shapeml::runtime
