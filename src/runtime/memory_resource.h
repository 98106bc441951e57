/* Memory resources: where tensor storage comes from (RAPIDS RMM's design).
 *
 * The C half lives in include/shapeml_memory.h (stable ABI): a memory
 * resource is a vtable of C function pointers plus a `user` pointer. A user's own resource,
 * written in C, plugs in exactly like the built-in ones.
 *
 * The second half is the runtime's C++ view: MemoryResource, a reference
 * counted object that wraps such a vtable (or implements one), and the
 * built-ins: host, statistics adaptor, logging adaptor; the coalescing pool
 * is in pool_resource.h. See docs/design/runtime.md.
 */
#ifndef SHAPEML_RUNTIME_MEMORY_RESOURCE_H_
#define SHAPEML_RUNTIME_MEMORY_RESOURCE_H_

#include <stddef.h>
#include <stdint.h>

#include "shapeml_memory.h"  // the C vtable (stable ABI)
#include "shapeml_dlpack.h"  // DLDevice

#ifdef __cplusplus
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "common/struct_reader.h"
#include "runtime/status.h"

namespace shapeml::runtime {

/// Every runtime allocation is aligned to at least this (compiled_entry.h).
inline constexpr size_t kMinAlignment = 64;

class MemoryResource;
using MemoryResourcePtr = std::shared_ptr<MemoryResource>;

/// The C++ face of a memory resource. Shared ownership: every tensor that
/// holds memory from a resource holds a reference to it, so a resource is
/// destroyed only after its last allocation was returned.
class MemoryResource : public std::enable_shared_from_this<MemoryResource> {
 public:
  virtual ~MemoryResource() = default;

  /// NULL on failure (never throws). `alignment` must be a power of two.
  void* allocate(size_t bytes, size_t alignment, void* stream = nullptr) noexcept;
  void deallocate(void* ptr, size_t bytes, size_t alignment, void* stream = nullptr) noexcept;
  /// False when the resource keeps no statistics.
  bool statistics(shapeml_memory_statistics* out) const noexcept;

  /// A short name for messages and logs ("host", "statistics(host)", ...).
  virtual std::string name() const = 0;

  /// Where the memory lives: {kDLCPU, 0} for host memory, {kDLCUDA, n} for
  /// memory of CUDA device n, which nothing in the runtime touches from the
  /// host (adaptors and the pool only do arithmetic on its addresses).
  virtual DLDevice device() const noexcept { return {kDLCPU, 0}; }
  /// Waits until the work ordered on `stream` so far is done (NULL: the
  /// resource's default stream). The pool calls it before it hands a block
  /// freed on one stream to another. Host memory has nothing to wait for.
  virtual Status synchronize(void* stream) { return {}; }

  /// Why the last failed allocation on this thread failed, when a resource
  /// said so (the pool's sizes, a CUDA error); "" otherwise. Tensor creation
  /// appends it to its RESOURCE_EXHAUSTED message.
  static const std::string& last_failure() noexcept;
  static void clear_last_failure() noexcept;

  /// Wraps a user's vtable (reads min(struct_size, known) bytes). The
  /// wrapper calls vtable.destroy(user) when its last reference goes.
  /// `device` says where its memory lives (a user's device resource).
  static Result<MemoryResourcePtr> from_vtable(const shapeml_memory_resource& vtable, std::string name = "user",
                                               DLDevice device = {kDLCPU, 0});

  /// A vtable that forwards to this resource and holds a reference to it
  /// until its `destroy` is called: how a built-in resource is handed to C
  /// code or used as the upstream of a C user's adaptor.
  shapeml_memory_resource to_vtable();

 protected:
  virtual void* do_allocate(size_t bytes, size_t alignment, void* stream) noexcept = 0;
  virtual void do_deallocate(void* ptr, size_t bytes, size_t alignment, void* stream) noexcept = 0;
  virtual bool do_statistics(shapeml_memory_statistics* out) const noexcept { return false; }
  /// Records why an allocation failed (see last_failure()); never throws.
  static void note_failure(const std::string& why) noexcept;

 private:
  // allocate/deallocate while tracing is on: the same, inside a span.
  void* allocate_traced(size_t bytes, size_t alignment, void* stream) noexcept;
  void deallocate_traced(void* ptr, size_t bytes, size_t alignment, void* stream) noexcept;
};

/// The process-wide host resource: aligned_alloc/free, alignment >= 64.
/// Stateless; keeps no statistics.
MemoryResourcePtr host_memory_resource();

/// Counts bytes in use, the peak, and allocations over any upstream (NULL:
/// the host resource).
MemoryResourcePtr make_statistics_adaptor(MemoryResourcePtr upstream);

/// Calls `callback(user, line)` for every allocate and deallocate of the
/// upstream (NULL: the host resource), e.g. "allocate bytes=256 alignment=64 stream=(nil) -> 0x7f..".
/// Never writes to stdout or stderr. `user_destroy`, if not NULL, is called
/// with `user` when the adaptor is destroyed.
MemoryResourcePtr make_logging_adaptor(MemoryResourcePtr upstream, shapeml_log_callback callback, void* user,
                                       void (*user_destroy)(void*) = nullptr);

/// Copies a resource's statistics into `out`, honouring out->struct_size
/// (nothing is written for a size that is no field boundary).
void write_statistics(const shapeml_memory_statistics& in, shapeml_memory_statistics* out) noexcept;
/// Whether `struct_size` is an acceptable size of shapeml_memory_statistics.
bool statistics_size_ok(size_t struct_size) noexcept;

/// Field ends of the versioned structs of shapeml_memory.h (common/struct_reader.h).
#define SHAPEML_VT_END(f) SHAPEML_FIELD_END(shapeml_memory_resource, f)
inline constexpr std::initializer_list<size_t> kVtableFieldEnds = {SHAPEML_VT_END(struct_size), SHAPEML_VT_END(user), SHAPEML_VT_END(allocate),
                                                                   SHAPEML_VT_END(deallocate), SHAPEML_VT_END(statistics), SHAPEML_VT_END(destroy)};
#undef SHAPEML_VT_END
#define SHAPEML_ST_END(f) SHAPEML_FIELD_END(shapeml_memory_statistics, f)
inline constexpr std::initializer_list<size_t> kStatisticsFieldEnds = {
    SHAPEML_ST_END(struct_size), SHAPEML_ST_END(bytes_in_use), SHAPEML_ST_END(peak_bytes_in_use), SHAPEML_ST_END(allocation_count),
    SHAPEML_ST_END(deallocation_count), SHAPEML_ST_END(bytes_allocated_total), SHAPEML_ST_END(failed_allocation_count),
    SHAPEML_ST_END(bytes_reserved)};
#undef SHAPEML_ST_END

}  // namespace shapeml::runtime
#endif  /* __cplusplus */

#endif  /* SHAPEML_RUNTIME_MEMORY_RESOURCE_H_ */
