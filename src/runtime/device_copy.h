// Host <-> device copies and device fills through the CUDA plugin.
//
// Synchronization happens only at host boundaries, and these functions are
// host boundaries: each enqueues its work on a stream (NULL: the device's
// default stream) — so it is ordered after the work already on that stream,
// e.g. the kernels that produced the tensor — and returns when the work is
// complete (it synchronizes that stream). The result is then safe to use on
// any stream and from the host.
#pragma once
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace shapeml::runtime {

/// A new dense tensor in `mr` (which must hold device memory: a CUDA
/// resource or an adaptor or pool over one) with `src`'s values. `src` may
/// be a host tensor of any strides (copied dense first) or a contiguous
/// device tensor of the same device (a device-to-device copy).
Result<TensorRef> copy_to_device(const TensorRef& src, const MemoryResourcePtr& mr, void* stream);

/// A new dense host tensor in `mr` (NULL: the host resource) with the values
/// of the contiguous device tensor `src` (a host `src` is copied on the host).
Result<TensorRef> copy_to_host(const TensorRef& src, const MemoryResourcePtr& mr, void* stream);

/// Synchronizes `stream` (NULL: the default stream) of CUDA device `device`.
Status device_synchronize(int32_t device, void* stream);

/// Makes later work on `waiter` wait for the work enqueued on `waited` so
/// far (NULL: the device's runtime stream), without blocking the host.
Status device_order_after(int32_t device, void* waiter, void* waited);

// For Tensor::create / copy_of on a device resource: zero the new tensor
// (when `zero`) on the default stream, and in all cases wait for the
// default stream so that the allocation is usable on any stream.
Status device_fill_zero(const Tensor& t, bool zero);
// Copies `bytes` host bytes into the new device tensor `t` and waits.
Status device_copy_from_host(const Tensor& t, const void* data, size_t bytes);

}  // namespace shapeml::runtime
