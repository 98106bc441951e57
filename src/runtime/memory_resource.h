/* Memory resources: where tensor storage comes from (RAPIDS RMM's design).
 *
 * The first half of this header is plain C (it compiles as C11 and C++) so
 * that it can move into include/shapeml.h unchanged: a memory resource is a
 * vtable of C function pointers plus a `user` pointer. A user's own resource,
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

#ifdef __cplusplus
extern "C" {
#endif

/** Counters reported by a resource's `statistics` callback. Every field is
 *  since the resource was created. The resource writes only
 *  min(struct_size, the size it knows) bytes. */
typedef struct shapeml_memory_statistics {
  size_t struct_size;                /**< Set by the caller: sizeof(shapeml_memory_statistics). */
  uint64_t bytes_in_use;             /**< Bytes handed out and not yet returned (as requested). */
  uint64_t peak_bytes_in_use;        /**< Maximum of bytes_in_use. */
  uint64_t allocation_count;         /**< Successful allocate calls. */
  uint64_t deallocation_count;       /**< deallocate calls. */
  uint64_t bytes_allocated_total;    /**< Sum of the sizes of all successful allocations. */
  uint64_t failed_allocation_count;  /**< allocate calls that returned NULL. */
  uint64_t bytes_reserved;           /**< Pools: bytes held from the upstream resource (0 otherwise). */
} shapeml_memory_statistics;

/** Initializer for shapeml_memory_statistics. */
#define SHAPEML_MEMORY_STATISTICS_INIT {sizeof(shapeml_memory_statistics), 0, 0, 0, 0, 0, 0, 0}

/**
 * A memory resource: a C vtable. Rules (docs/design/runtime.md):
 * - `allocate` returns a pointer aligned to at least `alignment` (a power of
 *   two; the runtime always asks for >= 64) to at least `bytes` bytes, or NULL
 *   on failure. The runtime never asks for 0 bytes.
 * - `deallocate` is *sized*: it receives the same `bytes`, `alignment` and
 *   `stream` that the matching allocate received.
 * - `stream` is an execution stream (a cudaStream_t for device resources);
 *   NULL for host memory. Deallocation is stream-ordered: the memory may be
 *   reused by work enqueued on `stream` after the call.
 * - `statistics` may be NULL; otherwise it fills `*out` and returns 1, or
 *   returns 0 when the resource keeps no statistics.
 * - `destroy` may be NULL; it is called exactly once, when the last user of
 *   the resource lets go (never while an allocation is outstanding, when every
 *   allocation came through the runtime).
 * - All callbacks may be called from several threads at once.
 */
typedef struct shapeml_memory_resource {
  size_t struct_size; /**< sizeof(shapeml_memory_resource) as compiled by the caller. */
  void* user;         /**< Passed to every callback. */
  void* (*allocate)(void* user, size_t bytes, size_t alignment, void* stream);
  void (*deallocate)(void* user, void* ptr, size_t bytes, size_t alignment, void* stream);
  int32_t (*statistics)(void* user, shapeml_memory_statistics* out);
  void (*destroy)(void* user);
} shapeml_memory_resource;

/** Receives one line of text from the logging adaptor (no trailing newline). */
typedef void (*shapeml_log_callback)(void* user, const char* line);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#ifdef __cplusplus
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

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

  /// Wraps a user's vtable (reads min(struct_size, known) bytes). The
  /// wrapper calls vtable.destroy(user) when its last reference goes.
  static Result<MemoryResourcePtr> from_vtable(const shapeml_memory_resource& vtable, std::string name = "user");

  /// A vtable that forwards to this resource and holds a reference to it
  /// until its `destroy` is called: how a built-in resource is handed to C
  /// code or used as the upstream of a C user's adaptor.
  shapeml_memory_resource to_vtable();

 protected:
  virtual void* do_allocate(size_t bytes, size_t alignment, void* stream) noexcept = 0;
  virtual void do_deallocate(void* ptr, size_t bytes, size_t alignment, void* stream) noexcept = 0;
  virtual bool do_statistics(shapeml_memory_statistics* out) const noexcept { return false; }
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

/// Copies a resource's statistics into `out`, honouring out->struct_size.
void write_statistics(const shapeml_memory_statistics& in, shapeml_memory_statistics* out) noexcept;

}  // namespace shapeml::runtime
#endif  /* __cplusplus */

#endif  /* SHAPEML_RUNTIME_MEMORY_RESOURCE_H_ */
