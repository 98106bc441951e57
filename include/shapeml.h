/**
 * @file shapeml.h
 * @brief The stable C ABI of shapeml, a shape-typed tensor compiler.
 *
 * Conventions (see docs/design/c-abi.md):
 * - Every fallible call returns a `shapeml_status*`; NULL means success. A
 *   status has a stable numeric code and a message and is freed with
 *   shapeml_status_free(). Nothing is reported through thread-local state.
 * - Objects are opaque handles, reference counted with `_retain`/`_release`;
 *   `_release(NULL)` is a no-op. `_create` returns an owned reference; strings
 *   returned by getters are borrowed and live as long as their parent object.
 * - Every options or output struct begins with `size_t struct_size`; fields
 *   are only ever appended; the library reads min(struct_size, known size).
 *   Use the `SHAPEML_*_INIT` macros to fill defaults.
 * - Enums are `int32_t`. The library never prints to stdout, never aborts the
 *   process, never lets a C++ exception cross this boundary.
 * - A `struct_size` must be the size of some published version of the struct
 *   or end at one of its field boundaries (or be larger than the library
 *   knows); a size that ends inside a field (e.g. half a pointer) is
 *   INVALID_ARGUMENT.
 * - Every `@return` lists the status codes a function can return. Any
 *   function that allocates can also return RESOURCE_EXHAUSTED, and any
 *   function INTERNAL (a bug in shapeml); those two are not repeated.
 *
 * Thread safety (docs/guide/README.md, "Threads"):
 * - shapeml_status: owned by one caller; do not share without a lock.
 * - shapeml_context, shapeml_module, shapeml_entry, shapeml_memory: safe to
 *   use from any number of threads at once (immutable after creation, or
 *   internally synchronized).
 * - shapeml_check_result, shapeml_npz: immutable after creation; every
 *   getter may be called from any number of threads at once.
 * - shapeml_tensor: reference counting and getters are thread-safe; the
 *   data is not synchronized: writing a tensor (as a call's output, or
 *   through shapeml_tensor_data) while another thread reads or writes it is
 *   a data race, as for any buffer.
 * - Retain/release of every object is atomic; release the last reference
 *   only when no other thread uses the object.
 *
 * Declarations under `#ifdef SHAPEML_UNSTABLE_API` form the unstable tier:
 * they may change in any release and live in their own linker version node.
 */
#ifndef SHAPEML_H_
#define SHAPEML_H_

#include <stddef.h>
#include <stdint.h>

#include "shapeml_dlpack.h"
#include "shapeml_memory.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Marks a symbol as exported from libshapeml.so. */
#if defined(SHAPEML_BUILDING_LIBRARY)
#define SHAPEML_API __attribute__((visibility("default")))
#else
#define SHAPEML_API
#endif

/** @name Version
 *  Compile-time version of this header; compare with shapeml_version() at run time. */
/**@{*/
#define SHAPEML_VERSION_MAJOR 0 /**< Incremented on an incompatible ABI change (SONAME libshapeml.so.MAJOR). */
#define SHAPEML_VERSION_MINOR 4 /**< Incremented when symbols or struct fields are appended. */
#define SHAPEML_VERSION_PATCH 0 /**< Incremented for fixes without ABI change. */
/**@}*/

/** The library's version as "MAJOR.MINOR.PATCH".
 *  @return a static string (never NULL, never freed). */
SHAPEML_API const char* shapeml_version(void);

/** The library's version as a number.
 *  @return MAJOR * 10000 + MINOR * 100 + PATCH. */
SHAPEML_API uint32_t shapeml_version_number(void);

/* ------------------------------------------------------------------------ */
/** @name Status */
/**@{*/

/** Stable status codes. Append-only: a value never changes meaning
 *  (docs/design/status-codes.md says which condition gets which code). */
typedef int32_t shapeml_status_code;
enum {
  SHAPEML_STATUS_OK = 0,               /**< Success (a NULL status). */
  SHAPEML_STATUS_INVALID_ARGUMENT = 1, /**< A NULL handle, a bad index, a malformed options struct, a bad shape, dtype or binding. */
  SHAPEML_STATUS_RESOURCE_EXHAUSTED = 2, /**< (since 0.3; same code as OUT_OF_MEMORY) An allocation failed, a pool's
                                              limit was reached, or a size exceeds what can be represented. */
  SHAPEML_STATUS_OUT_OF_MEMORY = 2,    /**< The 0.1 name of RESOURCE_EXHAUSTED, kept for source compatibility. */
  SHAPEML_STATUS_NOT_FOUND = 3,        /**< A named thing (file, entry point, specialization, array) does not exist. */
  SHAPEML_STATUS_IO_ERROR = 4,         /**< A file could not be read or written. */
  SHAPEML_STATUS_CHECK_FAILED = 5,     /**< The program has errors; its diagnostics say which. */
  SHAPEML_STATUS_UNIMPLEMENTED = 6,    /**< Valid, but not supported by this build (e.g. device tensors). */
  SHAPEML_STATUS_UNAVAILABLE = 7,      /**< A device, plugin or library is missing at run time. */
  SHAPEML_STATUS_INTERNAL = 8,         /**< A bug in shapeml; the message says where. */
  SHAPEML_STATUS_FAILED_PRECONDITION = 9, /**< (since 0.3) The arguments are valid but an object's state forbids the
                                               operation (e.g. a read-only tensor as a call's output). */
  SHAPEML_STATUS_INCOMPATIBLE_MODULE = 10, /**< (since 0.3) A module was built for another module ABI version;
                                               rebuild it with a matching shapemlc. */
  SHAPEML_STATUS_OUT_OF_RANGE = 11 /**< (since 0.3) A call's data held an index outside its valid range (an index of
                                        `gather` or `take_along_axis` < 0 or >= the size it indexes); the message names
                                        the operation, its source location, the index and its position. The call's
                                        outputs are unspecified (docs/design/index-checks.md). */
};

/** An error: a code and a message. Owned by the caller; free with shapeml_status_free(). */
typedef struct shapeml_status shapeml_status;

/** The code of `status`.
 *  @return the code; SHAPEML_STATUS_OK for NULL. */
SHAPEML_API shapeml_status_code shapeml_status_get_code(const shapeml_status* status);

/** The message of `status`.
 *  @return UTF-8 text, borrowed until the status is freed; "" for NULL. */
SHAPEML_API const char* shapeml_status_get_message(const shapeml_status* status);

/** Frees `status`; NULL is a no-op. */
SHAPEML_API void shapeml_status_free(shapeml_status* status);

/** A human-readable name for a code.
 *  @return a static string, e.g. "INVALID_ARGUMENT"; "UNKNOWN" for a number
 *          that is no code. Code 2 is "RESOURCE_EXHAUSTED". */
SHAPEML_API const char* shapeml_status_code_name(shapeml_status_code code);

/**
 * (since 0.3) Creates a status, for code written by a user that must hand a
 * shapeml-style error to shapeml or to its own callers (a binding's
 * callbacks, a wrapper around an entry call). The message is copied.
 * @param code a SHAPEML_STATUS_* value.
 * @param message UTF-8 text; NULL means "".
 * @return NULL when `code` is SHAPEML_STATUS_OK; a new status (owned by the
 *         caller, free with shapeml_status_free()) otherwise; for a number
 *         that is no code, an INVALID_ARGUMENT status saying so (with the
 *         message); when memory is exhausted, the static RESOURCE_EXHAUSTED
 *         status (never NULL).
 */
SHAPEML_API shapeml_status* shapeml_status_create(shapeml_status_code code, const char* message);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Context */
/**@{*/

/** Owns compiler settings and (later) caches. Thread-safe: immutable after
 *  creation, usable from any number of threads at once. */
typedef struct shapeml_context shapeml_context;

/** Options for shapeml_context_create(). Initialize with SHAPEML_CONTEXT_OPTIONS_INIT. */
typedef struct shapeml_context_options {
  size_t struct_size;             /**< sizeof(shapeml_context_options) as compiled by the caller. */
  uint32_t obligation_timeout_ms; /**< Z3 budget per shape obligation; 0 means the default (2000). */
  uint64_t trace_flags;           /**< (since 0.4) Nonzero: shapeml_context_create() starts the process-wide trace recorder
                                       with these flags, as shapeml_unstable_trace_start() does (1 = spans, 3 = spans and GPU
                                       time per operation); 0 leaves tracing as it is. The trace is written with
                                       shapeml_unstable_trace_flush_to_file() or shapeml_unstable_trace_flush()
                                       (docs/design/observability.md). */
} shapeml_context_options;

/** Default context options. */
#define SHAPEML_CONTEXT_OPTIONS_INIT {sizeof(shapeml_context_options), 2000u, 0u}

/**
 * Creates a context.
 * @param options may be NULL for defaults; otherwise `struct_size` must be at
 *        least `sizeof(size_t)`.
 * @param out receives an owned reference; set to NULL on failure.
 * @return NULL on success; INVALID_ARGUMENT for a NULL `out` or a bad
 *         `struct_size`.
 */
SHAPEML_API shapeml_status* shapeml_context_create(const shapeml_context_options* options, shapeml_context** out);

/** Adds a reference to `context`; NULL is a no-op. */
SHAPEML_API void shapeml_context_retain(shapeml_context* context);

/** Drops a reference to `context`; NULL is a no-op. */
SHAPEML_API void shapeml_context_release(shapeml_context* context);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Checking source and reading diagnostics */
/**@{*/

/** The outcome of checking one source buffer: its diagnostics. Thread-safe:
 *  immutable after creation; every getter may run on many threads at once. */
typedef struct shapeml_check_result shapeml_check_result;

/** Diagnostic severities. */
typedef int32_t shapeml_severity;
enum { SHAPEML_SEVERITY_ERROR = 0, SHAPEML_SEVERITY_WARNING = 1, SHAPEML_SEVERITY_NOTE = 2 };

/** Output formats for shapeml_check_result_render(). */
typedef int32_t shapeml_format;
enum { SHAPEML_FORMAT_TEXT = 0, SHAPEML_FORMAT_JSON = 1 };

/**
 * One diagnostic, filled by shapeml_check_result_get_diagnostic(). Strings are
 * borrowed from the result. Lines and columns are 1-based; columns count bytes.
 */
typedef struct shapeml_diagnostic {
  size_t struct_size;        /**< Set by the caller to sizeof(shapeml_diagnostic). */
  const char* code;          /**< Stable code, e.g. "E0301" (docs/errors.md). */
  shapeml_severity severity; /**< SHAPEML_SEVERITY_*. */
  const char* message;       /**< One-line summary. */
  const char* file;          /**< The name given to shapeml_check_source(). */
  uint32_t line;             /**< Start line of the span. */
  uint32_t column;           /**< Start column of the span. */
  uint32_t end_line;         /**< End line of the span. */
  uint32_t end_column;       /**< End column (exclusive) of the span. */
  uint32_t offset;           /**< Start byte offset of the span. */
  uint32_t length;           /**< Byte length of the span. */
  const char* expected;      /**< Expected type or shape, or "". */
  const char* actual;        /**< Actual type or shape, or "". */
  size_t counterexample_count; /**< Shape variables in the counterexample (0 if none). */
  size_t note_count;         /**< Number of notes. */
} shapeml_diagnostic;

/** Initializer for shapeml_diagnostic. */
#define SHAPEML_DIAGNOSTIC_INIT {sizeof(shapeml_diagnostic), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

/**
 * Parses and type-checks `length` bytes of `source`, named `name` in
 * diagnostics. A program with errors is not a failure of this call: the
 * status is NULL and the result holds the diagnostics. The status reports
 * only misuse (NULL arguments) and resource exhaustion.
 * @param context the context whose options (obligation budget) apply; borrowed, may be shared by threads.
 * @param length bytes of `source` (it need not be NUL-terminated; embedded NULs are errors in the program).
 * @param name may be NULL ("<source>").
 * @param source may be NULL only when `length` is 0.
 * @param out receives an owned result; set to NULL on failure.
 * @return NULL on success (also for a program with errors);
 *         INVALID_ARGUMENT for a NULL `context`, `out`, or `source` with a
 *         non-zero length.
 */
SHAPEML_API shapeml_status* shapeml_check_source(shapeml_context* context, const char* name, const char* source, size_t length,
                                                 shapeml_check_result** out);

/** Adds a reference to `result`; NULL is a no-op. */
SHAPEML_API void shapeml_check_result_retain(shapeml_check_result* result);

/** Drops a reference to `result`; NULL is a no-op. */
SHAPEML_API void shapeml_check_result_release(shapeml_check_result* result);

/** Whether the program checked.
 *  @return 1 when the program checked without errors, 0 otherwise (also for NULL). */
SHAPEML_API int32_t shapeml_check_result_passed(const shapeml_check_result* result);

/** @return the number of diagnostics; 0 for NULL. */
SHAPEML_API size_t shapeml_check_result_diagnostic_count(const shapeml_check_result* result);

/** Fills `*out` (whose struct_size the caller set) with diagnostic `index`.
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments, a bad
 *          `struct_size` or an index out of range. */
SHAPEML_API shapeml_status* shapeml_check_result_get_diagnostic(const shapeml_check_result* result, size_t index, shapeml_diagnostic* out);

/** Note `note_index` of diagnostic `index` (borrowed from the result) in `*out`.
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments or an index out of range. */
SHAPEML_API shapeml_status* shapeml_check_result_get_note(const shapeml_check_result* result, size_t index, size_t note_index,
                                                          const char** out);

/** Entry `k` of diagnostic `index`'s counterexample: a shape variable (borrowed) and its value.
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments or an index out of range. */
SHAPEML_API shapeml_status* shapeml_check_result_get_counterexample(const shapeml_check_result* result, size_t index, size_t k,
                                                                    const char** name, int64_t* value);

/**
 * All diagnostics rendered as text (with source line and caret) or as a JSON
 * array. The string is borrowed from the result.
 * @return NULL on success; INVALID_ARGUMENT for NULL arguments or an unknown format.
 */
SHAPEML_API shapeml_status* shapeml_check_result_render(const shapeml_check_result* result, shapeml_format format, const char** out);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Memory (since 0.2)
 *  A shapeml_memory is a reference-counted memory resource: the built-in host
 *  resource, an adaptor over another one, or a user's C vtable. NULL wherever
 *  a shapeml_memory* is accepted means the host resource. */
/**@{*/

/** A reference-counted memory resource. Thread-safe: every built-in resource
 *  may allocate from many threads at once (a user's vtable must be too). */
typedef struct shapeml_memory shapeml_memory;

/** The host resource (64-byte aligned, thread-safe) in `*out` (owned).
 *  @return NULL on success; INVALID_ARGUMENT for a NULL `out`. */
SHAPEML_API shapeml_status* shapeml_memory_create_host(shapeml_memory** out);

/**
 * Wraps a user's resource. The library copies the vtable and calls
 * `resource->destroy(resource->user)` once, when the last tensor allocated
 * from it and the last reference are gone. On failure `destroy` is not called.
 * @return NULL on success; INVALID_ARGUMENT for NULL arguments, a
 *         `struct_size` that is not a field boundary of the vtable (e.g. one
 *         that ends inside a function pointer), or a NULL allocate/deallocate.
 */
SHAPEML_API shapeml_status* shapeml_memory_create_from_resource(const shapeml_memory_resource* resource, shapeml_memory** out);

/** Counts bytes in use, peak, allocations over `upstream` (NULL: host).
 *  @return NULL on success; INVALID_ARGUMENT for a NULL `out`. */
SHAPEML_API shapeml_status* shapeml_memory_create_statistics_adaptor(shapeml_memory* upstream, shapeml_memory** out);

/** A coalescing pool over `upstream` (NULL: host); `maximum_bytes` 0 = unbounded.
 *  An allocation beyond the limit fails (a tensor creation then returns RESOURCE_EXHAUSTED).
 *  @return NULL on success; INVALID_ARGUMENT for a NULL `out`. */
SHAPEML_API shapeml_status* shapeml_memory_create_pool(shapeml_memory* upstream, size_t maximum_bytes, shapeml_memory** out);

/** Reports every allocate/deallocate on `upstream` to `callback` (never to stdout).
 *  @return NULL on success; INVALID_ARGUMENT for a NULL `out` or `callback`. */
SHAPEML_API shapeml_status* shapeml_memory_create_logging_adaptor(shapeml_memory* upstream, shapeml_log_callback callback, void* user,
                                                                  shapeml_memory** out);

/** Fills `*out` (caller sets struct_size).
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments or a bad
 *          `struct_size`; NOT_FOUND when the resource keeps no statistics. */
SHAPEML_API shapeml_status* shapeml_memory_get_statistics(const shapeml_memory* memory, shapeml_memory_statistics* out);

/** Adds a reference; NULL is a no-op. */
SHAPEML_API void shapeml_memory_retain(shapeml_memory* memory);

/** Drops a reference; NULL is a no-op. */
SHAPEML_API void shapeml_memory_release(shapeml_memory* memory);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Tensors (since 0.2)
 *  A shapeml_tensor is a dense tensor whose first member is a DLPack
 *  DLTensor. Host tensors, and (since 0.3) CUDA device tensors made from a device memory resource (see Devices). */
/**@{*/

/** Element types; the numbering is stable. */
typedef int32_t shapeml_dtype;
enum { SHAPEML_DTYPE_F32 = 0, SHAPEML_DTYPE_F64 = 1, SHAPEML_DTYPE_BF16 = 2, SHAPEML_DTYPE_I32 = 3, SHAPEML_DTYPE_I64 = 4, SHAPEML_DTYPE_BOOL = 5,
       /** Only in a generic entry's signature (shapeml_entry_get_tensor_info()): a dtype variable, named by the
        *  type's text; a call binds it from its inputs (spec §3.5). Never a tensor's dtype. */
       SHAPEML_DTYPE_VARIABLE = 6 };

/** A reference-counted tensor. Reference counting and every getter are
 *  thread-safe; the data is not synchronized (see the file comment). */
typedef struct shapeml_tensor shapeml_tensor;

/** A zero-filled, row-major host tensor from `memory` (NULL: host) in `*out` (owned).
 *  `shape` may be NULL when `rank` is 0.
 *  @return NULL on success; INVALID_ARGUMENT for a NULL `out` or `shape`, an
 *          unknown dtype, a negative dimension or rank above 64;
 *          RESOURCE_EXHAUSTED when the element count overflows (the
 *          product of the dimensions, zeros counted as 1, must fit in 64-bit
 *          bytes, whatever their order, as NumPy requires: (2^32, 2^32, 0) is
 *          refused) or the resource cannot allocate. */
SHAPEML_API shapeml_status* shapeml_tensor_create(shapeml_memory* memory, shapeml_dtype dtype, size_t rank, const int64_t* shape,
                                                  shapeml_tensor** out);

/** A tensor holding a copy of `bytes` bytes at `data`, which must equal the tensor's size.
 *  @return as shapeml_tensor_create(); also INVALID_ARGUMENT for a NULL
 *          `data` with `bytes` > 0 or a `bytes` that is not the tensor's size. */
SHAPEML_API shapeml_status* shapeml_tensor_create_copy(shapeml_memory* memory, shapeml_dtype dtype, size_t rank, const int64_t* shape,
                                                       const void* data, size_t bytes, shapeml_tensor** out);

/** (since 0.3) As shapeml_tensor_create(), but the data is not initialized
 *  (for outputs that are written before they are read).
 *  @return as shapeml_tensor_create(). */
SHAPEML_API shapeml_status* shapeml_tensor_create_uninitialized(shapeml_memory* memory, shapeml_dtype dtype, size_t rank,
                                                                const int64_t* shape, shapeml_tensor** out);

/** (since 0.3) Flags for shapeml_tensor_wrap(). */
enum {
  SHAPEML_TENSOR_READ_ONLY = 1 /**< shapeml never writes the data; the tensor is rejected as a call's output. */
};

/** (since 0.3) Called once with `user` and the wrapped data pointer when a wrapping tensor dies. */
typedef void (*shapeml_tensor_deleter)(void* user, void* data);

/**
 * (since 0.3) Wraps a user's host buffer without copying. The tensor's
 * element (i0, i1, ...) is at `data + sum(ik * strides[k]) * element_size`.
 * The data need not be aligned (a call copies an unaligned input; an
 * unaligned output is computed into aligned memory and copied back).
 * @param rank number of dimensions (0 for a scalar).
 * @param deleter_user passed to `deleter` unchanged.
 * @param dtype a SHAPEML_DTYPE_*.
 * @param shape `rank` dimensions (may be NULL when `rank` is 0).
 * @param strides `rank` strides in elements, or NULL for row-major. Entry
 *        calls accept only row-major (compact) tensors.
 * @param data the first element; may be NULL only when the tensor has no elements.
 * @param deleter may be NULL (the caller keeps the buffer alive longer than
 *        the tensor); otherwise called exactly once, with `deleter_user` and
 *        `data`, when the last reference goes — only if this call succeeds:
 *        on failure the caller still owns the buffer and the deleter is not called.
 *        A deleter that throws (a C++ host) is contained: the exception is dropped.
 * @param flags 0 or SHAPEML_TENSOR_READ_ONLY.
 * @param out receives an owned reference; NULL on failure.
 * @return NULL on success; INVALID_ARGUMENT for a NULL `out`, `shape` or
 *         `data` (with elements), an unknown dtype, a negative dimension,
 *         rank above 64, a negative stride, strides whose farthest
 *         element (sum of (dim - 1) * stride) is not addressable in 64-bit
 *         byte offsets, or unknown flag bits; RESOURCE_EXHAUSTED when the
 *         byte size overflows.
 */
SHAPEML_API shapeml_status* shapeml_tensor_wrap(shapeml_dtype dtype, size_t rank, const int64_t* shape, const int64_t* strides, void* data,
                                                shapeml_tensor_deleter deleter, void* deleter_user, uint32_t flags, shapeml_tensor** out);

/** Adds a reference; NULL is a no-op. */
SHAPEML_API void shapeml_tensor_retain(shapeml_tensor* tensor);

/** Drops a reference; NULL is a no-op. */
SHAPEML_API void shapeml_tensor_release(shapeml_tensor* tensor);

/** @return the dtype; -1 for NULL. */
SHAPEML_API shapeml_dtype shapeml_tensor_dtype(const shapeml_tensor* tensor);

/** @return the rank; 0 for NULL. */
SHAPEML_API size_t shapeml_tensor_rank(const shapeml_tensor* tensor);

/** @return the shape (`rank` entries, borrowed for the tensor's life); NULL for NULL. */
SHAPEML_API const int64_t* shapeml_tensor_shape(const shapeml_tensor* tensor);

/** @return the first element (data + byte_offset); NULL for NULL or a tensor without elements.
 *  Do not write through it when the tensor is read-only. */
SHAPEML_API void* shapeml_tensor_data(const shapeml_tensor* tensor);

/** @return the size of the elements in bytes (element count * element size); 0 for NULL. */
SHAPEML_API size_t shapeml_tensor_byte_size(const shapeml_tensor* tensor);

/** @return a borrowed DLTensor view (valid while the tensor lives); NULL for NULL. */
SHAPEML_API const DLTensor* shapeml_tensor_dltensor(const shapeml_tensor* tensor);

/** (since 0.3) @return the strides in elements (`rank` entries, always
 *  explicit, borrowed for the tensor's life); NULL for NULL. */
SHAPEML_API const int64_t* shapeml_tensor_strides(const shapeml_tensor* tensor);

/** (since 0.3) @return the device the data lives on ({kDLCPU, 0} for host
 *  tensors); {0, 0} (no valid device type) for NULL. */
SHAPEML_API DLDevice shapeml_tensor_device(const shapeml_tensor* tensor);

/** (since 0.3) @return 1 when shapeml must not write the tensor (a
 *  read-only DLPack import, or wrapped with SHAPEML_TENSOR_READ_ONLY), 0
 *  otherwise (also for NULL). */
SHAPEML_API int32_t shapeml_tensor_is_read_only(const shapeml_tensor* tensor);

/**
 * Exports as a legacy DLManagedTensor, zero copy. The tensor stays alive
 * until the consumer calls `(*out)->deleter(*out)`. The legacy struct has
 * no flags: export a read-only tensor with the versioned function instead.
 * @return NULL on success; INVALID_ARGUMENT for NULL arguments;
 *         FAILED_PRECONDITION for a read-only tensor (the legacy struct
 *         cannot carry the flag, so the consumer could write it).
 */
SHAPEML_API shapeml_status* shapeml_tensor_export_dlpack(shapeml_tensor* tensor, DLManagedTensor** out);

/** Exports as a DLPack 1.x DLManagedTensorVersioned (version 1.0), zero copy (same ownership
 *  rule). The READ_ONLY flag is set when the tensor is read-only.
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments. */
SHAPEML_API shapeml_status* shapeml_tensor_export_dlpack_versioned(shapeml_tensor* tensor, DLManagedTensorVersioned** out);

/**
 * Imports a host (kDLCPU) or CUDA (kDLCUDA, since 0.3) DLManagedTensor, zero
 * copy. On success shapeml owns it and calls its deleter when the tensor
 * dies; on failure the caller still owns it. Other devices, unsupported
 * dtypes and non-compact strides are rejected. For a CUDA tensor the stream
 * handshake is the caller's, per the DLPack protocol: the producer's writes
 * must be complete, or ordered before the streams shapeml will use (the
 * default stream, or the caller's), before the tensor is used. Importing
 * does not load the CUDA plugin and does not synchronize.
 * @return NULL on success; INVALID_ARGUMENT for NULL arguments, a bad
 *         descriptor (rank, shape, dtype, strides, byte_offset) or an
 *         out-of-range device type; UNIMPLEMENTED for another device.
 */
SHAPEML_API shapeml_status* shapeml_tensor_import_dlpack(DLManagedTensor* managed, shapeml_tensor** out);

/** Imports a DLManagedTensorVersioned (major version 1), zero copy; same rules. With
 *  DLPACK_FLAG_BITMASK_READ_ONLY the tensor is read-only: it is rejected as a call's
 *  output and keeps the flag when exported again.
 *  @return as shapeml_tensor_import_dlpack(); UNIMPLEMENTED also for a major version other than 1. */
SHAPEML_API shapeml_status* shapeml_tensor_import_dlpack_versioned(DLManagedTensorVersioned* managed, shapeml_tensor** out);

/** Reads a NumPy .npy file (C order, little-endian f4/f8/i4/i8/b1) into `*out` (owned).
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments or a
 *          malformed file; NOT_FOUND when there is no file; IO_ERROR when it
 *          cannot be read; UNIMPLEMENTED for a dtype or order shapeml lacks. */
SHAPEML_API shapeml_status* shapeml_tensor_load_npy(const char* path, shapeml_memory* memory, shapeml_tensor** out);

/** Writes a NumPy .npy file (version 1.0 header).
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments; IO_ERROR when the file cannot be written. */
SHAPEML_API shapeml_status* shapeml_tensor_save_npy(const shapeml_tensor* tensor, const char* path);

/** The arrays of a NumPy .npz archive (stored or deflated entries).
 *  Thread-safe: immutable after loading. */
typedef struct shapeml_npz shapeml_npz;

/** Reads every array of an .npz archive into `*out` (owned; release with shapeml_npz_release()).
 *  @return as shapeml_tensor_load_npy(). */
SHAPEML_API shapeml_status* shapeml_npz_load(const char* path, shapeml_memory* memory, shapeml_npz** out);

/** @return the number of arrays; 0 for NULL. */
SHAPEML_API size_t shapeml_npz_count(const shapeml_npz* npz);

/** @return the name of array `index` (without `.npy`), borrowed from the archive; NULL when out of range. */
SHAPEML_API const char* shapeml_npz_name(const shapeml_npz* npz, size_t index);

/** A new reference to the array called `name` in `*out`.
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments; NOT_FOUND (naming the available arrays). */
SHAPEML_API shapeml_status* shapeml_npz_get(const shapeml_npz* npz, const char* name, shapeml_tensor** out);

/** Drops the archive; tensors taken from it stay valid. NULL is a no-op. */
SHAPEML_API void shapeml_npz_release(shapeml_npz* npz);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Devices (since 0.3)
 *  CUDA devices, their memory and host<->device copies. Device types are
 *  DLPack's: kDLCPU (1) and kDLCUDA (2). The CUDA plugin (libshapeml_cuda.so)
 *  is loaded the first time one of these functions needs a CUDA device, from
 *  $SHAPEML_CUDA_PLUGIN if set, else next to this library, else through the
 *  dynamic loader's search path (docs/design/cuda-plugin.md); a program that
 *  never asks for a CUDA device never loads it. A missing plugin, driver,
 *  library or GPU is SHAPEML_STATUS_UNAVAILABLE with a message naming what is
 *  missing; the outcome of the first attempt is kept for the process.
 *
 *  Streams are `cudaStream_t` passed as `void*`, all non-blocking and owned
 *  by shapeml unless the caller passes its own. A call with a NULL stream
 *  runs on its module's default stream: for a module compiled in a context
 *  (shapeml_module_compile()), that context's stream for the device — each
 *  context has its own, so work of two contexts runs concurrently
 *  (shapeml_unstable_context_default_stream()); for a loaded module, the
 *  device's default stream (shapeml_device_default_stream()), one per device
 *  for the process. Other functions with a NULL stream use the device's
 *  default stream, except that copies of a call's device output run on the
 *  stream that computes it.
 *
 *  Ordering on shapeml's streams is automatic: a call waits (on the GPU, not
 *  the host) for inputs still being computed on another of shapeml's
 *  streams; its device outputs are allocated in order on its stream and
 *  freed on it; a tensor's memory is freed only after the work of shapeml's
 *  streams that used it. Device tensors made with the ordinary
 *  shapeml_tensor_create* functions (their DLTensor device is {kDLCUDA, n})
 *  and by copies are complete when the call returns. With a caller's stream
 *  the caller orders: inputs must be ready on it, and the outputs (allocated
 *  in order on the device's default stream, complete before the plan runs)
 *  are released in order on the default stream, so work on the caller's
 *  stream that uses a tensor must be complete (or the default stream must
 *  wait for it) before its last release. shapeml_tensor_data() of a device
 *  tensor is a device pointer. All functions here are thread-safe. */
/**@{*/

/**
 * (since 0.3) The number of devices of a type.
 * @param device_type kDLCPU (always 1) or kDLCUDA.
 * @param out receives the count; 0 on failure.
 * @return NULL on success; INVALID_ARGUMENT for a NULL `out` or another
 *         device type; UNAVAILABLE when the CUDA plugin cannot be loaded or
 *         CUDA cannot be initialized (no driver, no GPU): the message names
 *         the plugin path tried with the loader's error, or the CUDA error.
 */
SHAPEML_API shapeml_status* shapeml_device_count(int32_t device_type, int32_t* out);

/**
 * (since 0.3) A device's name, e.g. "NVIDIA H200"; "cpu" for the host.
 * @param device_type kDLCUDA (host devices have no names).
 * @param device the device ordinal, 0 .. shapeml_device_count() - 1.
 * @param out receives a string owned by the library, valid until the
 *        process ends; NULL on failure.
 * @return NULL on success; INVALID_ARGUMENT for a NULL `out`, another device
 *         type or a device that does not exist; UNAVAILABLE as
 *         shapeml_device_count(); INTERNAL for a CUDA failure (named).
 */
SHAPEML_API shapeml_status* shapeml_device_name(int32_t device_type, int32_t device, const char** out);

/**
 * (since 0.3) The default stream of CUDA device `device` (a cudaStream_t,
 * non-blocking, owned by the library and valid until the process ends).
 * Work shapeml does for a NULL stream runs on it, except calls of modules
 * compiled in a context (that context's stream) and copies of a call's
 * output (the stream that computes it).
 * @return NULL on success; INVALID_ARGUMENT for a NULL `out` or a device that
 *         does not exist; UNAVAILABLE as shapeml_device_count(); the CUDA
 *         error's status when the stream cannot be created.
 */
SHAPEML_API shapeml_status* shapeml_device_default_stream(int32_t device, void** out);

/**
 * (since 0.3) Waits until all work enqueued on `stream` (NULL: the default
 * stream of CUDA device `device`) is complete.
 * @return NULL on success; INVALID_ARGUMENT for a device that does not
 *         exist; UNAVAILABLE as shapeml_device_count(); the status of a CUDA
 *         error that the stream's work raised (named: cudaStreamSynchronize).
 */
SHAPEML_API shapeml_status* shapeml_device_synchronize(int32_t device, void* stream);

/**
 * (since 0.3) A memory resource of CUDA device `device` over cudaMalloc and
 * cudaFree (cudaFree synchronizes the device: use it as a pool's upstream,
 * e.g. shapeml_memory_create_pool(cuda, max, &pool)). The statistics,
 * logging and pool adaptors work over it; they never touch device memory
 * from the host. Allocations are 256-byte aligned.
 * @param device the CUDA device ordinal, 0 .. shapeml_device_count() - 1.
 * @param out receives a new resource (owned; shapeml_memory_release()).
 * @return NULL on success; INVALID_ARGUMENT for a NULL `out` or a device that
 *         does not exist; UNAVAILABLE as shapeml_device_count().
 */
SHAPEML_API shapeml_status* shapeml_memory_create_cuda(int32_t device, shapeml_memory** out);

/**
 * (since 0.3) A stream-ordered memory resource of CUDA device `device`:
 * cudaMallocAsync/cudaFreeAsync on the device's default memory pool, ordered
 * on the stream passed to the allocation (NULL: the default stream).
 * @param device the CUDA device ordinal, 0 .. shapeml_device_count() - 1.
 * @param release_threshold bytes of freed memory the device's pool keeps
 *        rather than returning to the driver when a stream synchronizes
 *        (UINT64_MAX: keep all). It is an attribute of the device's pool, so
 *        the last resource created for a device sets it for every one.
 * @param out receives a new resource (owned; shapeml_memory_release()).
 * @return NULL on success; INVALID_ARGUMENT for a NULL `out` or a device that
 *         does not exist; UNAVAILABLE as shapeml_device_count(), or when the
 *         device has no stream-ordered allocator.
 */
SHAPEML_API shapeml_status* shapeml_memory_create_cuda_async(int32_t device, uint64_t release_threshold, shapeml_memory** out);

/**
 * (since 0.3) As shapeml_memory_create_from_resource(), for a user's
 * resource whose memory lives on `device` ({kDLCUDA, n}: tensors made from
 * it are device tensors; {kDLCPU, 0}: the same as the host variant). The
 * resource receives the caller's streams as its `stream` argument (NULL: the
 * device's default stream, which it may look up with
 * shapeml_device_default_stream()). No CUDA is loaded by this call.
 * @return as shapeml_memory_create_from_resource(); INVALID_ARGUMENT also
 *         for a device that is neither the host nor CUDA.
 */
SHAPEML_API shapeml_status* shapeml_memory_create_from_device_resource(const shapeml_memory_resource* resource, DLDevice device,
                                                                        shapeml_memory** out);

/** (since 0.3) @return where `memory`'s allocations live: {kDLCPU, 0} for host
 *  memory and NULL, {kDLCUDA, n} for device n. Thread-safe. */
SHAPEML_API DLDevice shapeml_memory_device(const shapeml_memory* memory);

/**
 * (since 0.3) Copies `src` into a new dense tensor allocated from the device
 * resource `memory`. `src` is a host tensor (any strides) or a row-major
 * tensor on the same device. The copy is enqueued on `stream` (NULL: the
 * default stream, or for a device `src` that a call may still be computing,
 * the stream computing it), after the work already there and after the
 * work writing `src`, and the call returns when it is complete (it
 * synchronizes that stream): the result is usable on any stream. Reads `src`
 * only.
 * @param src the tensor to copy (borrowed; only read).
 * @param memory device memory the copy is allocated from (its device is the destination).
 * @param stream the cudaStream_t the copy is ordered on; NULL: the destination device's default stream (see above).
 * @param out receives the new tensor (owned); NULL on failure.
 * @return NULL on success; INVALID_ARGUMENT for NULL arguments or a `memory`
 *         that is not device memory; UNIMPLEMENTED for a source on another
 *         device or a strided device source; RESOURCE_EXHAUSTED when the
 *         allocation fails (the message has the sizes, or the CUDA error);
 *         UNAVAILABLE as shapeml_device_count(); the CUDA error's status
 *         (named: cudaMemcpyAsync, cudaStreamSynchronize) otherwise.
 */
SHAPEML_API shapeml_status* shapeml_tensor_copy_to_device(const shapeml_tensor* src, shapeml_memory* memory, void* stream,
                                                          shapeml_tensor** out);

/**
 * (since 0.3) Copies the row-major device tensor `src` into a new host
 * tensor from `memory` (NULL: the host resource), ordered on `stream` (NULL:
 * the stream of shapeml's that computes `src` when a call may still be
 * writing it, else the default stream of `src`'s device) after the work
 * already there and after the work writing `src`, and returns when the
 * values are on the host (it synchronizes that stream). A host `src` is
 * copied on the host.
 * @param src the tensor to copy (borrowed; only read).
 * @param memory host memory the copy is allocated from; NULL: the host resource.
 * @param stream the cudaStream_t the copy is ordered on; NULL: see above.
 * @param out receives the new tensor (owned); NULL on failure.
 * @return NULL on success; INVALID_ARGUMENT for NULL arguments or a `memory`
 *         that is not host memory; UNIMPLEMENTED for a strided device source;
 *         RESOURCE_EXHAUSTED when the host allocation fails; UNAVAILABLE as
 *         shapeml_device_count(); the CUDA error's status (named) otherwise.
 */
SHAPEML_API shapeml_status* shapeml_tensor_copy_to_host(const shapeml_tensor* src, shapeml_memory* memory, void* stream,
                                                        shapeml_tensor** out);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Modules (since 0.2)
 *  A module is a checked program whose entry points can be called: compiled
 *  in-process (JIT, libshapeml only) or loaded from an ahead-of-time shared
 *  object (also in libshapeml_runtime). */
/**@{*/

/** A reference-counted module. Thread-safe: every function may be called on
 *  the same module from any number of threads at once (a JIT module compiles
 *  a new binding without blocking calls of bindings already compiled). */
typedef struct shapeml_module shapeml_module;

/** Code generation targets. */
typedef int32_t shapeml_target;
enum {
  SHAPEML_TARGET_NATIVE = 0,    /**< The host CPU's full instruction set. */
  SHAPEML_TARGET_X86_64 = 1,    /**< A portable x86-64 baseline, for artifacts that travel. */
  /** (since 0.4) x86-64-v3 of the psABI (AVX2, FMA, BMI2: Haswell, Zen 1 and
   *  later): shipped modules at 256-bit vector width. A module built for it
   *  is refused with FAILED_PRECONDITION, naming what is missing, on a CPU
   *  without these features; a JIT target the host lacks likewise. */
  SHAPEML_TARGET_X86_64_V3 = 2,
  /** (since 0.4) x86-64-v4 (AVX-512 F/BW/CD/DQ/VL: Skylake-X, Zen 4 and
   *  later), 512-bit vectors; refused as SHAPEML_TARGET_X86_64_V3 is. */
  SHAPEML_TARGET_X86_64_V4 = 3
};

/** Options for loading and compiling modules. */
typedef struct shapeml_module_options {
  size_t struct_size;     /**< sizeof(shapeml_module_options). */
  shapeml_memory* memory; /**< Where outputs are allocated; NULL: host. Retained by the module. */
  shapeml_target target;  /**< JIT target. */
  /** (since 0.3) Most specializations a JIT module keeps compiled at once
   *  (all entries together); 0 means the default, 64. When a new binding
   *  would exceed it, the least recently used specialization that no call is
   *  running is evicted (its machine code freed) and recompiled when needed
   *  again. While every cached one is running, the cache grows past the
   *  capacity by at most the number of concurrent calls. AOT specializations
   *  are never evicted and do not count. */
  size_t specialization_cache_capacity;
} shapeml_module_options;

/** Default module options. */
#define SHAPEML_MODULE_OPTIONS_INIT {sizeof(shapeml_module_options), NULL, SHAPEML_TARGET_NATIVE, 0}

/**
 * Checks and JIT-compiles `source`. Every function is an entry point,
 * specialized and compiled on its first call for each binding of its shape
 * variables (then cached). A program with errors returns CHECK_FAILED whose
 * message holds the rendered diagnostics. Only in libshapeml.so.
 * @param context the context whose options (obligation budget) apply; borrowed.
 * @param name names the program in diagnostics and the module in messages; may be NULL ("<source>").
 * @param source the program text; may be NULL only when `length` is 0.
 * @param length bytes of `source`.
 * @param options may be NULL for defaults (SHAPEML_MODULE_OPTIONS_INIT); read up to its `struct_size`.
 * @param out receives an owned reference; NULL on failure.
 * @return NULL on success; INVALID_ARGUMENT for NULL arguments, a bad
 *         `struct_size` or an unknown target; CHECK_FAILED.
 */
SHAPEML_API shapeml_status* shapeml_module_compile(shapeml_context* context, const char* name, const char* source, size_t length,
                                                   const shapeml_module_options* options, shapeml_module** out);

/**
 * Loads an ahead-of-time compiled module (`shapemlc build`). A file that is
 * not a shapeml module, or was built for another module ABI, is an error that
 * says so. Loading runs the object's code: load only trusted paths.
 * @param path a shared object built by `shapemlc build` or shapeml_module_build(). Loading runs its code and trusts its manifest: load only trusted paths.
 * @param options may be NULL for defaults (SHAPEML_MODULE_OPTIONS_INIT); read up to its `struct_size`.
 * @param out receives an owned reference; NULL on failure.
 * @return NULL on success; INVALID_ARGUMENT for NULL arguments, a bad
 *         `struct_size`, a file that is not a shapeml module or whose
 *         manifest is malformed; NOT_FOUND when there is no file; IO_ERROR
 *         when it cannot be read; INCOMPATIBLE_MODULE when it was built for
 *         another module ABI version.
 */
SHAPEML_API shapeml_status* shapeml_module_load(const char* path, const shapeml_module_options* options, shapeml_module** out);

/**
 * Compiles `source` ahead of time into a shared object at `out_path`.
 * `bindings` lists the specializations, separated by `;`, each
 * `ENTRY:VAR=VALUE,VAR=VALUE` (e.g. "mlp:T=f32,Dv=host,B=4,S=128,D=256,F=1024").
 * Only in libshapeml.so. Since 0.3, prefer shapeml_module_build(), which
 * takes the bindings as arrays.
 * @return NULL on success; INVALID_ARGUMENT for NULL arguments, an unknown
 *         target or a malformed binding list (an empty item between `;` or
 *         `,` is malformed); NOT_FOUND for an unknown
 *         entry; CHECK_FAILED; INTERNAL when code generation or linking fails.
 */
SHAPEML_API shapeml_status* shapeml_module_build_shared_object(shapeml_context* context, const char* name, const char* source, size_t length,
                                                               const char* bindings, shapeml_target target, const char* out_path);

/** Adds a reference; NULL is a no-op. */
SHAPEML_API void shapeml_module_retain(shapeml_module* module);

/** Drops a reference; NULL is a no-op. */
SHAPEML_API void shapeml_module_release(shapeml_module* module);

/** @return the number of entry points; 0 for NULL. */
SHAPEML_API size_t shapeml_module_entry_count(const shapeml_module* module);

/** @return the name of entry `index`, borrowed from the module; NULL when out of range. */
SHAPEML_API const char* shapeml_module_entry_name(const shapeml_module* module, size_t index);

/** Looks up `entry`: its number of inputs and outputs (either pointer may be NULL).
 *  @return NULL on success; INVALID_ARGUMENT for a NULL module or entry; NOT_FOUND (listing the entries). */
SHAPEML_API shapeml_status* shapeml_module_lookup(const shapeml_module* module, const char* entry, size_t* num_inputs, size_t* num_outputs);

/**
 * Calls `entry`. Each input's dtype, rank, shape and device are checked
 * against the entry's signature, shape variables are bound from the inputs
 * and the `where` constraints checked (INVALID_ARGUMENT naming the input,
 * dimension, constraint and values). On success `outputs[0..num_outputs)`
 * receive new tensors (owned by the caller); on failure they are set to NULL.
 * Equivalent to shapeml_entry_call() with default options.
 * @return as shapeml_entry_call(); also NOT_FOUND for an unknown entry.
 */
SHAPEML_API shapeml_status* shapeml_module_call(shapeml_module* module, const char* entry, shapeml_tensor* const* inputs, size_t num_inputs,
                                                shapeml_tensor** outputs, size_t num_outputs);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Capabilities (since 0.3)
 *  What this library can do, so that a binding does not probe for symbols. */
/**@{*/

/** Filled by shapeml_get_capabilities(). */
typedef struct shapeml_capabilities {
  size_t struct_size;          /**< Set by the caller: sizeof(shapeml_capabilities). */
  uint32_t abi_major;          /**< SHAPEML_VERSION_MAJOR of the library. */
  uint32_t abi_minor;          /**< SHAPEML_VERSION_MINOR of the library (which symbols and fields exist). */
  uint32_t abi_patch;          /**< SHAPEML_VERSION_PATCH of the library. */
  uint32_t module_abi_version; /**< The newest compiled-module ABI version this library loads (shapeml_module_load);
                                    2 since 0.3 (index checks), which still loads version 1 modules. */
  int32_t jit;                 /**< 1 when shapeml_module_compile() works (libshapeml.so), 0 otherwise. */
  int32_t aot_build;           /**< 1 when shapeml_module_build() works (libshapeml.so), 0 otherwise. */
  int32_t cuda_plugin;         /**< 1 when the CUDA plugin loads and finds a CUDA device (asking loads it, once); 0 otherwise. */
} shapeml_capabilities;

/** Initializer for shapeml_capabilities. */
#define SHAPEML_CAPABILITIES_INIT {sizeof(shapeml_capabilities), 0, 0, 0, 0, 0, 0, 0}

/** Fills `*out` (caller sets struct_size; a shorter struct gets its prefix).
 *  @return NULL on success; INVALID_ARGUMENT for a NULL `out` or a bad `struct_size`. */
SHAPEML_API shapeml_status* shapeml_get_capabilities(shapeml_capabilities* out);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Module and entry introspection (since 0.3)
 *  An entry point as a handle, resolved once, that describes its signature
 *  and is called without looking its name up again. */
/**@{*/

/** An entry point of a module. Borrowed from the module: valid while the
 *  module lives (hold a module reference as long as you use its entries);
 *  never released. Thread-safe like its module. */
typedef struct shapeml_entry shapeml_entry;

/** @return the module's name (from its source or manifest), borrowed; NULL for NULL. */
SHAPEML_API const char* shapeml_module_name(const shapeml_module* module);

/** @return the code-generation target the module was built for, e.g.
 *  "x86-64" or "znver3" (borrowed); "" when the manifest names none; NULL for NULL. */
SHAPEML_API const char* shapeml_module_target(const shapeml_module* module);

/** Resolves entry `name` into `*out` (borrowed from the module).
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments; NOT_FOUND (listing the entries). */
SHAPEML_API shapeml_status* shapeml_module_get_entry(const shapeml_module* module, const char* name, shapeml_entry** out);

/** Entry `index` (0 .. shapeml_module_entry_count() - 1) in `*out` (borrowed).
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments or an index out of range. */
SHAPEML_API shapeml_status* shapeml_module_get_entry_at(const shapeml_module* module, size_t index, shapeml_entry** out);

/** @return the entry's name (borrowed); NULL for NULL. */
SHAPEML_API const char* shapeml_entry_name(const shapeml_entry* entry);

/** @return the number of parameters (inputs); 0 for NULL. */
SHAPEML_API size_t shapeml_entry_param_count(const shapeml_entry* entry);

/** @return the number of results (outputs); 0 for NULL. */
SHAPEML_API size_t shapeml_entry_result_count(const shapeml_entry* entry);

/** @return the number of shape variables (`dims`); 0 for NULL. */
SHAPEML_API size_t shapeml_entry_shape_variable_count(const shapeml_entry* entry);

/** @return shape variable `index` in declaration order (borrowed); NULL for NULL or out of range. */
SHAPEML_API const char* shapeml_entry_shape_variable(const shapeml_entry* entry, size_t index);

/** (since 0.4) Whether shape variable `index` is one the caller gives
 *  (declared `(given ...)` in the source, spec §4.19): every call passes its
 *  value in shapeml_call_options.dim_names/dim_values, since no input shape
 *  determines it (e.g. a number of heads). The other variables are inferred
 *  from the input shapes.
 *  @return 1 if given at the call, 0 if inferred, NULL entry or out of range. */
SHAPEML_API int32_t shapeml_entry_shape_variable_is_given(const shapeml_entry* entry, size_t index);

/** @return the number of `where` constraints; 0 for NULL. */
SHAPEML_API size_t shapeml_entry_constraint_count(const shapeml_entry* entry);

/** @return `where` constraint `index` as text in the language's syntax, e.g.
 *  "(= (mod D 4) 0)" (borrowed); NULL for NULL or out of range. */
SHAPEML_API const char* shapeml_entry_constraint(const shapeml_entry* entry, size_t index);

/** Which side of an entry's signature a tensor is on. */
typedef int32_t shapeml_io_kind;
enum { SHAPEML_IO_PARAM = 0, SHAPEML_IO_RESULT = 1 };

/** The type of one parameter or result, filled by shapeml_entry_get_tensor_info(). Strings are borrowed from the module. */
typedef struct shapeml_tensor_info {
  size_t struct_size;   /**< Set by the caller: sizeof(shapeml_tensor_info). */
  const char* name;     /**< The parameter's name; "" for a result. */
  shapeml_dtype dtype;  /**< Element type; SHAPEML_DTYPE_VARIABLE for a generic entry's dtype variable. */
  int32_t device_type;  /**< DLDeviceType (kDLCPU, kDLCUDA); -1 for a generic entry's device variable (named by `type`). */
  int32_t device_id;    /**< Device ordinal; -1 for a device variable. */
  size_t rank;          /**< Number of dimensions. */
  const char* type;     /**< The whole type as text, e.g. "(tensor f32 (B (* 2 N)) host)". */
} shapeml_tensor_info;

/** Initializer for shapeml_tensor_info. */
#define SHAPEML_TENSOR_INFO_INIT {sizeof(shapeml_tensor_info), NULL, 0, 0, 0, 0, NULL}

/** Fills `*out` (caller sets struct_size) with parameter or result `index`.
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments, an unknown
 *          kind, an index out of range or a bad `struct_size`. */
SHAPEML_API shapeml_status* shapeml_entry_get_tensor_info(const shapeml_entry* entry, shapeml_io_kind kind, size_t index,
                                                          shapeml_tensor_info* out);

/** What a symbolic dimension is. */
typedef int32_t shapeml_dim_kind;
enum {
  SHAPEML_DIM_CONSTANT = 0,   /**< A number, e.g. 4. */
  SHAPEML_DIM_VARIABLE = 1,   /**< A lone shape variable, e.g. B. */
  SHAPEML_DIM_EXPRESSION = 2  /**< Anything else, e.g. (* 2 N) or (+ N 1). */
};

/** One dimension of a parameter or result, filled by shapeml_entry_get_dim(). Strings are borrowed from the module. */
typedef struct shapeml_dim_info {
  size_t struct_size;    /**< Set by the caller: sizeof(shapeml_dim_info). */
  shapeml_dim_kind kind; /**< SHAPEML_DIM_*. */
  int64_t value;         /**< The value of a constant; 0 otherwise. */
  const char* variable;  /**< The variable's name when kind is VARIABLE; NULL otherwise. */
  const char* text;      /**< The dimension polynomial in canonical text, e.g. "4", "B", "(* 2 N)". */
} shapeml_dim_info;

/** Initializer for shapeml_dim_info. */
#define SHAPEML_DIM_INFO_INIT {sizeof(shapeml_dim_info), 0, 0, NULL, NULL}

/** Fills `*out` (caller sets struct_size) with dimension `dim` of parameter or result `index`.
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments, an unknown
 *          kind, an index or dimension out of range or a bad `struct_size`. */
SHAPEML_API shapeml_status* shapeml_entry_get_dim(const shapeml_entry* entry, shapeml_io_kind kind, size_t index, size_t dim,
                                                  shapeml_dim_info* out);

/** @return the number of ahead-of-time specializations the module holds for
 *  this entry (from its manifest; JIT-made ones are not counted); 0 for NULL. */
SHAPEML_API size_t shapeml_entry_aot_specialization_count(const shapeml_entry* entry);

/** The binding of AOT specialization `index`: writes the value of every shape
 *  variable, in the order of shapeml_entry_shape_variable(), into `values`.
 *  @param entry the entry (borrowed from its module).
 *  @param index which specialization, 0 .. shapeml_entry_aot_specialization_count() - 1.
 *  @param values receives `num_values` values, in shape-variable order.
 *  @param num_values must equal shapeml_entry_shape_variable_count().
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments, an index out
 *          of range or a wrong `num_values`. */
SHAPEML_API shapeml_status* shapeml_entry_get_aot_specialization(const shapeml_entry* entry, size_t index, int64_t* values,
                                                                 size_t num_values);

/**
 * Makes sure a specialization for the given binding exists (warm-up): a JIT
 * module compiles it now if it has not; an AOT module checks that it holds
 * it. `names[i]` = `values[i]` for every shape variable, each exactly once.
 * @return NULL on success; INVALID_ARGUMENT for NULL arguments, an unknown
 *         or repeated variable, a missing one, a value < 1 or a violated
 *         `where` constraint; NOT_FOUND when an AOT module lacks the binding;
 *         RESOURCE_EXHAUSTED when a shape of the binding is too large;
 *         UNIMPLEMENTED when the entry cannot be compiled for the CPU;
 *         INTERNAL when code generation fails.
 */
SHAPEML_API shapeml_status* shapeml_entry_specialize(shapeml_entry* entry, const char* const* names, const int64_t* values, size_t count);

/** Whether a device call replays its dispatch plan as a CUDA graph
 *  (shapeml_call_options.graph; docs/design/cuda-graphs.md). */
typedef enum shapeml_graph_mode {
  /** As the plan says: replay when it was compiled with graphs on (the
   *  default wherever the plan can be captured: device tensors only, no
   *  index checks, which synchronize to report a bad index). If
   *  capturing fails, the call runs the launches directly instead, and so do
   *  later calls of that binding on that stream. */
  SHAPEML_GRAPH_DEFAULT = 0,
  /** Replay even if the plan was compiled with graphs off; FAILED_PRECONDITION
   *  for a plan that cannot be captured (host parameters or results, or
   *  gather/take_along_axis index checks), and a
   *  failed capture is returned as an error (naming the CUDA call). */
  SHAPEML_GRAPH_ON = 1,
  /** Enqueue the launches one by one (no graph). */
  SHAPEML_GRAPH_OFF = 2
} shapeml_graph_mode;

/** Options for shapeml_entry_call(). Initialize with SHAPEML_CALL_OPTIONS_INIT. */
typedef struct shapeml_call_options {
  size_t struct_size;     /**< sizeof(shapeml_call_options). */
  /** Where outputs and intermediates made by the runtime (aligned copies of
   *  inputs and outputs) are allocated, and, for modules built by 0.4 or
   *  later, the temporaries of the generated CPU code; NULL: the module's
   *  resource. A temporary the resource cannot give ends the call with
   *  SHAPEML_STATUS_RESOURCE_EXHAUSTED naming the entry, the binding and the
   *  bytes (docs/design/temp-memory.md). */
  shapeml_memory* memory;
  /** Caller-provided outputs, one per result, or NULL to allocate new ones.
   *  Each must have the result's dtype and exact shape (evaluated under the
   *  binding of this call), live where the result's type says (the host, or
   *  its CUDA device for a device entry), be row-major, not be read-only and
   *  not overlap any input. The results are written into them. */
  shapeml_tensor* const* outputs;
  /** Reserved (the device is the one the entry's types name): must be 0. */
  int32_t device_index;
  /** Device entries: the cudaStream_t the dispatch plan is enqueued on; NULL:
   *  the module's default stream: its context's for a module compiled in one
   *  (shapeml_unstable_context_default_stream()), else the runtime's stream
   *  for the device (shapeml_device_default_stream()). With your own stream,
   *  inputs must be ready on it (see "Devices").
   *  The call returns once the work is enqueued; results that live on the
   *  host are complete on return. Must be NULL for a host entry, and for a
   *  generic entry whose inputs bind its device variables to the host (that
   *  is refused once the inputs are read, before anything is written). */
  void* stream;
  /** Device entries (since 0.3, appended): a shapeml_graph_mode. With graph
   *  replay, the first call of a binding on a stream captures the plan's
   *  launches in a CUDA graph (with its own workspace, kept until the
   *  specialization is dropped) and later calls on that stream replay it;
   *  new output or input addresses are captured again (a few address sets
   *  are kept). Results are bit-identical to direct execution. Ignored by
   *  host entries. */
  int32_t graph;
  /** Reserved, never read: the tail padding of the 0.3 layout, which a 0.3
   *  caller's struct_size covers but leaves uninitialized (so num_threads
   *  follows it, past every 0.3 struct_size). Set it to 0. */
  int32_t reserved;
  /** Host entries (since 0.4, appended): how many threads the parallel loops
   *  of the generated code may use during this call, the calling thread
   *  included; 0: the default, `SHAPEML_NUM_THREADS` when the environment
   *  sets it to a positive number when the runtime starts, else the CPUs the
   *  process may run on; 1: the calling thread only. Results are bitwise the
   *  same for every count (docs/design/cpu-threads.md). Loops run by the
   *  runtime's pool, or by the parallel-for a host installed
   *  (shapeml_unstable_set_parallel_for()); a call made from inside such a
   *  loop runs its own loops serially. Modules built before 0.4 ignore it.
   *  Must be >= 0; ignored by device entries. */
  int32_t num_threads;
  /** (since 0.4, appended) The values of the entry's shape variables given
   *  at the call (shapeml_entry_shape_variable_is_given()): `num_dims`
   *  names in `dim_names` with their values in `dim_values`, exactly the
   *  given variables, each once and >= 1. The call checks them with the
   *  inferred ones against the input shapes and the `where` constraints
   *  (INVALID_ARGUMENT naming the variable otherwise). NULL/0 for an entry
   *  without given variables. */
  const char* const* dim_names;
  const int64_t* dim_values; /**< `num_dims` values, one per name in dim_names. */
  size_t num_dims;           /**< How many names dim_names holds. */
} shapeml_call_options;

/** Default call options. */
#define SHAPEML_CALL_OPTIONS_INIT {sizeof(shapeml_call_options), NULL, NULL, 0, NULL, SHAPEML_GRAPH_DEFAULT, 0, 0, NULL, NULL, 0}

/**
 * Calls `entry` on `inputs` (one per parameter). Inputs are checked as in
 * shapeml_module_call() (dtype, rank, shape, device, `where`). Without
 * caller-provided outputs, `outputs[0 .. num_outputs)` receive new tensors
 * (owned by the caller); with them (options->outputs), `outputs` may be NULL,
 * or else receives a new reference to each provided tensor. On failure every
 * `outputs[i]` is set to NULL and provided outputs may hold partial results.
 * @param entry the entry (borrowed from its module).
 * @param inputs `num_inputs` tensors, one per parameter in order (borrowed; never modified).
 * @param num_inputs must equal shapeml_entry_param_count().
 * @param outputs receives `num_outputs` tensors (see above); may be NULL only with caller-provided outputs.
 * @param options may be NULL for defaults.
 * @param num_outputs must equal shapeml_entry_result_count().
 * @return NULL on success; INVALID_ARGUMENT for NULL arguments, a bad
 *         `struct_size`, a non-zero device_index, a stream for a host entry, an unknown
 *         `graph` mode, wrong input or
 *         output counts, an input or provided output of the wrong dtype,
 *         rank, shape or device, a non-row-major one, an output that overlaps
 *         an input, or a violated `where` constraint; FAILED_PRECONDITION for
 *         a read-only provided output, or SHAPEML_GRAPH_ON for a plan that cannot
 *         be captured; NOT_FOUND when an AOT module has no
 *         specialization for the binding; UNIMPLEMENTED for an entry that
 *         takes or returns device tensors; RESOURCE_EXHAUSTED when an output
 *         cannot be allocated or a shape is too large; OUT_OF_RANGE (since
 *         0.3) when an index of `gather` or `take_along_axis` in the data is
 *         outside its range (outputs unspecified, provided ones may be
 *         written); INTERNAL when code generation fails.
 */
SHAPEML_API shapeml_status* shapeml_entry_call(shapeml_entry* entry, shapeml_tensor* const* inputs, size_t num_inputs,
                                               shapeml_tensor** outputs, size_t num_outputs, const shapeml_call_options* options);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Ahead-of-time builds with options (since 0.3, libshapeml.so only) */
/**@{*/

/** One specialization to build: entry `entry` with `names[i]` = `values[i]`
 *  for every one of its shape variables. Its layout is frozen (an array element). */
typedef struct shapeml_binding {
  const char* entry;         /**< The entry point's name. */
  size_t count;              /**< Number of names and values. */
  const char* const* names;  /**< Shape variable names. */
  const int64_t* values;     /**< Their values (>= 1). */
} shapeml_binding;

/** Options for shapeml_module_build(). Initialize with SHAPEML_BUILD_OPTIONS_INIT. */
typedef struct shapeml_build_options {
  size_t struct_size;               /**< sizeof(shapeml_build_options). */
  shapeml_target target;            /**< Code generation target. */
  const shapeml_binding* bindings;  /**< The specializations to build. */
  size_t num_bindings;              /**< At least 1. */
  /** (appended in 0.3) Device entries: a shapeml_graph_mode for the plans'
   *  `graph` line. SHAPEML_GRAPH_DEFAULT or SHAPEML_GRAPH_ON: `graph on`
   *  wherever the plan can be captured (calls then replay it as a CUDA graph
   *  by default); SHAPEML_GRAPH_OFF: `graph off` (calls run the launches
   *  directly unless they pass SHAPEML_GRAPH_ON). */
  int32_t gpu_graph;
} shapeml_build_options;

/** Default build options (portable x86-64, no bindings yet, graph replay where safe). */
#define SHAPEML_BUILD_OPTIONS_INIT {sizeof(shapeml_build_options), SHAPEML_TARGET_X86_64, NULL, 0, SHAPEML_GRAPH_DEFAULT}

/**
 * Checks `source` and compiles the specializations in `options` ahead of time
 * into a shared object at `out_path`, loadable by shapeml_module_load() in
 * either library.
 * @return NULL on success; INVALID_ARGUMENT for NULL arguments, a bad
 *         `struct_size`, an unknown target or `gpu_graph` mode, no bindings, a binding with an
 *         unknown, repeated or missing variable, a value < 1, a violated
 *         `where` constraint, or two equal bindings; NOT_FOUND for an unknown
 *         entry; CHECK_FAILED; IO_ERROR when `out_path` cannot be written;
 *         RESOURCE_EXHAUSTED when a shape is too large; UNIMPLEMENTED for an
 *         entry that is not a CPU program; UNAVAILABLE when the system linker
 *         is missing; INTERNAL when code generation fails.
 */
SHAPEML_API shapeml_status* shapeml_module_build(shapeml_context* context, const char* name, const char* source, size_t length,
                                                 const shapeml_build_options* options, const char* out_path);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Function table (since 0.4)
 *  Every stable function of this header as one versioned table, so that a
 *  binding that loads the library with `dlopen` resolves one symbol,
 *  shapeml_get_api(), and checks the version once (as PJRT's GetPjrtApi).
 *  Design: docs/design/get-api.md. */
/**@{*/

/**
 * The library's function table, returned by shapeml_get_api(). Owned by the
 * library: static, immutable, valid as long as the library is loaded, and
 * safe to read from any number of threads.
 *
 * Members are only ever appended (in the order of the linker version nodes:
 * a minor release appends the functions of its node). The library sets
 * `struct_size` to the size of the table it has, so a caller compiled with a
 * newer header checks SHAPEML_API_HAS() before using a member that an older
 * library may lack. A member is NULL when this library does not provide the
 * function: the compiler's functions (context, checking, JIT, AOT builds) in
 * libshapeml_runtime.so, whose `compiler` is 0. Each member has exactly the
 * type of the function it names; its documentation is that function's.
 */
typedef struct shapeml_api {
  size_t struct_size; /**< sizeof(shapeml_api) as the library was compiled: how many members exist. */
  uint32_t abi_major; /**< SHAPEML_VERSION_MAJOR of the library (equal to the `abi_major` that was asked for). */
  uint32_t abi_minor; /**< SHAPEML_VERSION_MINOR of the library: which functions and struct fields exist. */
  uint32_t abi_patch; /**< SHAPEML_VERSION_PATCH of the library. */
  int32_t compiler;   /**< 1 in libshapeml.so (the compiler's members are set), 0 in libshapeml_runtime.so (they are NULL). */
  /* Functions of the SHAPEML_0.1 version node. */
  const char* (*version)(void); /**< shapeml_version(). */
  uint32_t (*version_number)(void); /**< shapeml_version_number(). */
  shapeml_status_code (*status_get_code)(const shapeml_status* status); /**< shapeml_status_get_code(). */
  const char* (*status_get_message)(const shapeml_status* status); /**< shapeml_status_get_message(). */
  void (*status_free)(shapeml_status* status); /**< shapeml_status_free(). */
  const char* (*status_code_name)(shapeml_status_code code); /**< shapeml_status_code_name(). */
  /** shapeml_context_create(). NULL in libshapeml_runtime.so. */
  shapeml_status* (*context_create)(const shapeml_context_options* options, shapeml_context** out);
  void (*context_retain)(shapeml_context* context); /**< shapeml_context_retain(). NULL in libshapeml_runtime.so. */
  void (*context_release)(shapeml_context* context); /**< shapeml_context_release(). NULL in libshapeml_runtime.so. */
  /** shapeml_check_source(). NULL in libshapeml_runtime.so. */
  shapeml_status* (*check_source)(shapeml_context* context, const char* name, const char* source, size_t length, shapeml_check_result** out);
  void (*check_result_retain)(shapeml_check_result* result); /**< shapeml_check_result_retain(). NULL in libshapeml_runtime.so. */
  void (*check_result_release)(shapeml_check_result* result); /**< shapeml_check_result_release(). NULL in libshapeml_runtime.so. */
  int32_t (*check_result_passed)(const shapeml_check_result* result); /**< shapeml_check_result_passed(). NULL in libshapeml_runtime.so. */
  /** shapeml_check_result_diagnostic_count(). NULL in libshapeml_runtime.so. */
  size_t (*check_result_diagnostic_count)(const shapeml_check_result* result);
  /** shapeml_check_result_get_diagnostic(). NULL in libshapeml_runtime.so. */
  shapeml_status* (*check_result_get_diagnostic)(const shapeml_check_result* result, size_t index, shapeml_diagnostic* out);
  /** shapeml_check_result_get_note(). NULL in libshapeml_runtime.so. */
  shapeml_status* (*check_result_get_note)(const shapeml_check_result* result, size_t index, size_t note_index, const char** out);
  /** shapeml_check_result_get_counterexample(). NULL in libshapeml_runtime.so. */
  shapeml_status* (*check_result_get_counterexample)(const shapeml_check_result* result, size_t index, size_t k, const char** name, int64_t* value);
  /** shapeml_check_result_render(). NULL in libshapeml_runtime.so. */
  shapeml_status* (*check_result_render)(const shapeml_check_result* result, shapeml_format format, const char** out);
  /* Functions of the SHAPEML_0.2 version node. */
  shapeml_status* (*memory_create_host)(shapeml_memory** out); /**< shapeml_memory_create_host(). */
  /** shapeml_memory_create_from_resource(). */
  shapeml_status* (*memory_create_from_resource)(const shapeml_memory_resource* resource, shapeml_memory** out);
  /** shapeml_memory_create_statistics_adaptor(). */
  shapeml_status* (*memory_create_statistics_adaptor)(shapeml_memory* upstream, shapeml_memory** out);
  /** shapeml_memory_create_pool(). */
  shapeml_status* (*memory_create_pool)(shapeml_memory* upstream, size_t maximum_bytes, shapeml_memory** out);
  /** shapeml_memory_create_logging_adaptor(). */
  shapeml_status* (*memory_create_logging_adaptor)(shapeml_memory* upstream, shapeml_log_callback callback, void* user, shapeml_memory** out);
  /** shapeml_memory_get_statistics(). */
  shapeml_status* (*memory_get_statistics)(const shapeml_memory* memory, shapeml_memory_statistics* out);
  void (*memory_retain)(shapeml_memory* memory); /**< shapeml_memory_retain(). */
  void (*memory_release)(shapeml_memory* memory); /**< shapeml_memory_release(). */
  /** shapeml_tensor_create(). */
  shapeml_status* (*tensor_create)(shapeml_memory* memory, shapeml_dtype dtype, size_t rank, const int64_t* shape, shapeml_tensor** out);
  /** shapeml_tensor_create_copy(). */
  shapeml_status* (*tensor_create_copy)(shapeml_memory* memory, shapeml_dtype dtype, size_t rank, const int64_t* shape, const void* data, size_t bytes, shapeml_tensor** out);
  void (*tensor_retain)(shapeml_tensor* tensor); /**< shapeml_tensor_retain(). */
  void (*tensor_release)(shapeml_tensor* tensor); /**< shapeml_tensor_release(). */
  shapeml_dtype (*tensor_dtype)(const shapeml_tensor* tensor); /**< shapeml_tensor_dtype(). */
  size_t (*tensor_rank)(const shapeml_tensor* tensor); /**< shapeml_tensor_rank(). */
  const int64_t* (*tensor_shape)(const shapeml_tensor* tensor); /**< shapeml_tensor_shape(). */
  void* (*tensor_data)(const shapeml_tensor* tensor); /**< shapeml_tensor_data(). */
  size_t (*tensor_byte_size)(const shapeml_tensor* tensor); /**< shapeml_tensor_byte_size(). */
  const DLTensor* (*tensor_dltensor)(const shapeml_tensor* tensor); /**< shapeml_tensor_dltensor(). */
  shapeml_status* (*tensor_export_dlpack)(shapeml_tensor* tensor, DLManagedTensor** out); /**< shapeml_tensor_export_dlpack(). */
  /** shapeml_tensor_export_dlpack_versioned(). */
  shapeml_status* (*tensor_export_dlpack_versioned)(shapeml_tensor* tensor, DLManagedTensorVersioned** out);
  shapeml_status* (*tensor_import_dlpack)(DLManagedTensor* managed, shapeml_tensor** out); /**< shapeml_tensor_import_dlpack(). */
  /** shapeml_tensor_import_dlpack_versioned(). */
  shapeml_status* (*tensor_import_dlpack_versioned)(DLManagedTensorVersioned* managed, shapeml_tensor** out);
  shapeml_status* (*tensor_load_npy)(const char* path, shapeml_memory* memory, shapeml_tensor** out); /**< shapeml_tensor_load_npy(). */
  shapeml_status* (*tensor_save_npy)(const shapeml_tensor* tensor, const char* path); /**< shapeml_tensor_save_npy(). */
  shapeml_status* (*npz_load)(const char* path, shapeml_memory* memory, shapeml_npz** out); /**< shapeml_npz_load(). */
  size_t (*npz_count)(const shapeml_npz* npz); /**< shapeml_npz_count(). */
  const char* (*npz_name)(const shapeml_npz* npz, size_t index); /**< shapeml_npz_name(). */
  shapeml_status* (*npz_get)(const shapeml_npz* npz, const char* name, shapeml_tensor** out); /**< shapeml_npz_get(). */
  void (*npz_release)(shapeml_npz* npz); /**< shapeml_npz_release(). */
  /** shapeml_module_compile(). NULL in libshapeml_runtime.so. */
  shapeml_status* (*module_compile)(shapeml_context* context, const char* name, const char* source, size_t length, const shapeml_module_options* options, shapeml_module** out);
  /** shapeml_module_load(). */
  shapeml_status* (*module_load)(const char* path, const shapeml_module_options* options, shapeml_module** out);
  /** shapeml_module_build_shared_object(). NULL in libshapeml_runtime.so. */
  shapeml_status* (*module_build_shared_object)(shapeml_context* context, const char* name, const char* source, size_t length, const char* bindings, shapeml_target target, const char* out_path);
  void (*module_retain)(shapeml_module* module); /**< shapeml_module_retain(). */
  void (*module_release)(shapeml_module* module); /**< shapeml_module_release(). */
  size_t (*module_entry_count)(const shapeml_module* module); /**< shapeml_module_entry_count(). */
  const char* (*module_entry_name)(const shapeml_module* module, size_t index); /**< shapeml_module_entry_name(). */
  /** shapeml_module_lookup(). */
  shapeml_status* (*module_lookup)(const shapeml_module* module, const char* entry, size_t* num_inputs, size_t* num_outputs);
  /** shapeml_module_call(). */
  shapeml_status* (*module_call)(shapeml_module* module, const char* entry, shapeml_tensor* const* inputs, size_t num_inputs, shapeml_tensor** outputs, size_t num_outputs);
  /* Functions of the SHAPEML_0.3 version node. */
  shapeml_status* (*device_count)(int32_t device_type, int32_t* out); /**< shapeml_device_count(). */
  shapeml_status* (*device_default_stream)(int32_t device, void** out); /**< shapeml_device_default_stream(). */
  shapeml_status* (*device_name)(int32_t device_type, int32_t device, const char** out); /**< shapeml_device_name(). */
  shapeml_status* (*device_synchronize)(int32_t device, void* stream); /**< shapeml_device_synchronize(). */
  size_t (*entry_aot_specialization_count)(const shapeml_entry* entry); /**< shapeml_entry_aot_specialization_count(). */
  /** shapeml_entry_call(). */
  shapeml_status* (*entry_call)(shapeml_entry* entry, shapeml_tensor* const* inputs, size_t num_inputs, shapeml_tensor** outputs, size_t num_outputs, const shapeml_call_options* options);
  const char* (*entry_constraint)(const shapeml_entry* entry, size_t index); /**< shapeml_entry_constraint(). */
  size_t (*entry_constraint_count)(const shapeml_entry* entry); /**< shapeml_entry_constraint_count(). */
  /** shapeml_entry_get_aot_specialization(). */
  shapeml_status* (*entry_get_aot_specialization)(const shapeml_entry* entry, size_t index, int64_t* values, size_t num_values);
  /** shapeml_entry_get_dim(). */
  shapeml_status* (*entry_get_dim)(const shapeml_entry* entry, shapeml_io_kind kind, size_t index, size_t dim, shapeml_dim_info* out);
  /** shapeml_entry_get_tensor_info(). */
  shapeml_status* (*entry_get_tensor_info)(const shapeml_entry* entry, shapeml_io_kind kind, size_t index, shapeml_tensor_info* out);
  const char* (*entry_name)(const shapeml_entry* entry); /**< shapeml_entry_name(). */
  size_t (*entry_param_count)(const shapeml_entry* entry); /**< shapeml_entry_param_count(). */
  size_t (*entry_result_count)(const shapeml_entry* entry); /**< shapeml_entry_result_count(). */
  const char* (*entry_shape_variable)(const shapeml_entry* entry, size_t index); /**< shapeml_entry_shape_variable(). */
  size_t (*entry_shape_variable_count)(const shapeml_entry* entry); /**< shapeml_entry_shape_variable_count(). */
  int32_t (*entry_shape_variable_is_given)(const shapeml_entry* entry, size_t index); /**< shapeml_entry_shape_variable_is_given(). */
  /** shapeml_entry_specialize(). */
  shapeml_status* (*entry_specialize)(shapeml_entry* entry, const char* const* names, const int64_t* values, size_t count);
  shapeml_status* (*get_capabilities)(shapeml_capabilities* out); /**< shapeml_get_capabilities(). */
  /** shapeml_module_build(). NULL in libshapeml_runtime.so. */
  shapeml_status* (*module_build)(shapeml_context* context, const char* name, const char* source, size_t length, const shapeml_build_options* options, const char* out_path);
  shapeml_status* (*memory_create_cuda)(int32_t device, shapeml_memory** out); /**< shapeml_memory_create_cuda(). */
  /** shapeml_memory_create_cuda_async(). */
  shapeml_status* (*memory_create_cuda_async)(int32_t device, uint64_t release_threshold, shapeml_memory** out);
  /** shapeml_memory_create_from_device_resource(). */
  shapeml_status* (*memory_create_from_device_resource)(const shapeml_memory_resource* resource, DLDevice device, shapeml_memory** out);
  DLDevice (*memory_device)(const shapeml_memory* memory); /**< shapeml_memory_device(). */
  /** shapeml_module_get_entry(). */
  shapeml_status* (*module_get_entry)(const shapeml_module* module, const char* name, shapeml_entry** out);
  /** shapeml_module_get_entry_at(). */
  shapeml_status* (*module_get_entry_at)(const shapeml_module* module, size_t index, shapeml_entry** out);
  const char* (*module_name)(const shapeml_module* module); /**< shapeml_module_name(). */
  const char* (*module_target)(const shapeml_module* module); /**< shapeml_module_target(). */
  shapeml_status* (*status_create)(shapeml_status_code code, const char* message); /**< shapeml_status_create(). */
  /** shapeml_tensor_copy_to_device(). */
  shapeml_status* (*tensor_copy_to_device)(const shapeml_tensor* src, shapeml_memory* memory, void* stream, shapeml_tensor** out);
  /** shapeml_tensor_copy_to_host(). */
  shapeml_status* (*tensor_copy_to_host)(const shapeml_tensor* src, shapeml_memory* memory, void* stream, shapeml_tensor** out);
  /** shapeml_tensor_create_uninitialized(). */
  shapeml_status* (*tensor_create_uninitialized)(shapeml_memory* memory, shapeml_dtype dtype, size_t rank, const int64_t* shape, shapeml_tensor** out);
  DLDevice (*tensor_device)(const shapeml_tensor* tensor); /**< shapeml_tensor_device(). */
  int32_t (*tensor_is_read_only)(const shapeml_tensor* tensor); /**< shapeml_tensor_is_read_only(). */
  const int64_t* (*tensor_strides)(const shapeml_tensor* tensor); /**< shapeml_tensor_strides(). */
  /** shapeml_tensor_wrap(). */
  shapeml_status* (*tensor_wrap)(shapeml_dtype dtype, size_t rank, const int64_t* shape, const int64_t* strides, void* data, shapeml_tensor_deleter deleter, void* deleter_user, uint32_t flags, shapeml_tensor** out);
} shapeml_api;

/** Whether the table `api` (a `const shapeml_api*`) has the member `member`
 *  (a table from an older library is shorter). A member that exists may still
 *  be NULL (see shapeml_api). */
#define SHAPEML_API_HAS(api, member) ((api)->struct_size >= offsetof(shapeml_api, member) + sizeof((api)->member))

/**
 * (since 0.4) The function table of this library for ABI major version
 * `abi_major` (pass SHAPEML_VERSION_MAJOR). The one symbol a `dlopen` user
 * needs to resolve; exported by both libshapeml.so and libshapeml_runtime.so.
 * Never fails in any other way and never allocates.
 * @param abi_major the major version the caller was written for.
 * @return the library's table (static; never freed), or NULL when the library
 *         does not implement major version `abi_major`.
 */
SHAPEML_API const shapeml_api* shapeml_get_api(uint32_t abi_major);
/**@}*/

#ifdef SHAPEML_UNSTABLE_API
/* ------------------------------------------------------------------------ */
/** @name Unstable tier: may change in any release. */
/**@{*/

/** Checker statistics for one result. */
typedef struct shapeml_unstable_check_stats {
  size_t struct_size;      /**< sizeof(shapeml_unstable_check_stats). */
  size_t obligations;      /**< Shape obligations discharged. */
  size_t syntactic;        /**< Of those, decided by normalization alone. */
  size_t z3_queries;       /**< Queries sent to Z3. */
  double z3_seconds;       /**< Time spent in Z3. */
  double total_seconds;    /**< Parse + check time. */
} shapeml_unstable_check_stats;

/** Fills `*out` (caller sets struct_size) with the statistics of `result`.
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments or a bad `struct_size`. */
SHAPEML_API shapeml_status* shapeml_unstable_check_result_stats(const shapeml_check_result* result, shapeml_unstable_check_stats* out);

/**
 * The stream of CUDA device `device` that calls of modules compiled in
 * `context` run on when they pass no stream (a cudaStream_t, non-blocking,
 * made on first use, distinct from every other context's and from
 * shapeml_device_default_stream()). It stays valid while the context, a
 * module compiled in it, or a tensor such a module computed is alive. Wait
 * for a call's device results with shapeml_device_synchronize(device, stream),
 * or order another library's work after them on this stream.
 * @return NULL on success; INVALID_ARGUMENT for a NULL `context` or `out`, or
 *         a device that does not exist; UNAVAILABLE as shapeml_device_count();
 *         the CUDA error's status when the stream cannot be created.
 */
SHAPEML_API shapeml_status* shapeml_unstable_context_default_stream(shapeml_context* context, int32_t device, void** out);

/**
 * Makes later work on `stream` (a cudaStream_t; NULL: the device's default
 * stream) wait for the work shapeml enqueued that writes `tensor` — a
 * device call's output whose plan may still be running — without blocking
 * the host (an event). The producer's half of the DLPack stream handshake:
 * call it with the consumer's stream before another library reads the
 * tensor (the Python binding's `__dlpack__(stream=...)` does). A host
 * tensor, a complete one, or one written on a caller's stream (whose order
 * is the caller's) needs nothing: NULL at once.
 * @return NULL on success; INVALID_ARGUMENT for a NULL `tensor`; the CUDA
 *         error's status when the wait cannot be enqueued.
 */
SHAPEML_API shapeml_status* shapeml_unstable_stream_wait_tensor(void* stream, const shapeml_tensor* tensor);

/* -- Generic entries (0.4, unstable: spec §3.5, docs/design/generic-types.md) -- */

/** One dtype or device variable of a generic entry, filled by
 *  shapeml_unstable_entry_get_type_variable(). `name` is borrowed from the module. */
typedef struct shapeml_unstable_type_variable {
  size_t struct_size; /**< Set by the caller: sizeof(shapeml_unstable_type_variable). */
  const char* name;   /**< As declared, e.g. "T" or "Dv". */
  int32_t is_device;  /**< 1 for a device variable, 0 for a dtype variable. */
  uint32_t dtypes;    /**< A dtype variable's dtypes: bit (1u << SHAPEML_DTYPE_x) for each it ranges over; 0 for a device variable. */
} shapeml_unstable_type_variable;

/** Initializer for shapeml_unstable_type_variable. */
#define SHAPEML_UNSTABLE_TYPE_VARIABLE_INIT {sizeof(shapeml_unstable_type_variable), NULL, 0, 0}

/** A dtype variable's value `dtype` (a SHAPEML_DTYPE_*) among shapeml_entry_specialize()'s
 *  `values`, beside the shape variables' (which are >= 1, so neither is taken for the other).
 *  A call binds dtype and device variables from its inputs and needs none of these. */
#define SHAPEML_UNSTABLE_BIND_DTYPE(dtype) ((int64_t)-16 - (int64_t)(dtype))
/** A device variable's value: the host (see SHAPEML_UNSTABLE_BIND_DTYPE). */
#define SHAPEML_UNSTABLE_BIND_HOST ((int64_t)-1000)
/** A device variable's value: CUDA device `n` (see SHAPEML_UNSTABLE_BIND_DTYPE). */
#define SHAPEML_UNSTABLE_BIND_CUDA(n) ((int64_t)-1001 - (int64_t)(n))

/** @return how many dtype and device variables `entry` has (0 for an entry
 *  that is not generic, or NULL): its dtype variables in declaration order,
 *  then its device variables. */
SHAPEML_API size_t shapeml_unstable_entry_type_variable_count(const shapeml_entry* entry);

/** Fills `*out` (caller sets struct_size) with variable `index`, 0 ..
 *  shapeml_unstable_entry_type_variable_count() - 1.
 *  @return NULL on success; INVALID_ARGUMENT for NULL arguments, an index
 *          out of range or a bad `struct_size`. */
SHAPEML_API shapeml_status* shapeml_unstable_entry_get_type_variable(const shapeml_entry* entry, size_t index,
                                                                    shapeml_unstable_type_variable* out);

/* -- Threads (0.4, unstable: docs/design/cpu-threads.md) -- */

/** Iterations [begin, end) of one parallel loop of generated code. */
typedef void (*shapeml_unstable_parallel_task)(void* closure, int64_t begin, int64_t end);

/** A host's parallel-for: must call `task(closure, begin, end)` over
 *  disjoint ranges that together cover [0, count), on at most `max_threads`
 *  threads at a time (the calling thread may be one, or run them all), and
 *  return when every one has returned. `user` is what was installed with it.
 *  Tasks never fail and never block on each other. */
typedef void (*shapeml_unstable_parallel_for_fn)(void* user, int64_t count, int32_t max_threads, shapeml_unstable_parallel_task task,
                                                 void* closure);

/**
 * Runs the parallel loops of every later host call in this process through
 * `fn` instead of the runtime's own thread pool (as Halide's
 * `halide_set_custom_do_par_for`, oneDNN's threadpool interface), so that an
 * application with its own task system keeps one set of threads. NULL
 * restores the runtime's pool. Loops already running finish where they
 * started; `fn` and `user` must stay valid until the next call of this
 * function and every loop started before it has returned. A loop of a call
 * whose shapeml_call_options.num_threads is 1, or of a call made from inside
 * a task, does not reach `fn`: it runs on the calling thread.
 * @return NULL (it cannot fail).
 */
SHAPEML_API shapeml_status* shapeml_unstable_set_parallel_for(shapeml_unstable_parallel_for_fn fn, void* user);

/* -- Observability (0.4, unstable: the record and trace formats may still change; docs/design/observability.md) -- */

/** Log levels, in increasing severity. */
typedef int32_t shapeml_unstable_log_level;
enum {
  SHAPEML_UNSTABLE_LOG_TRACE = 0, /**< Finest detail. */
  SHAPEML_UNSTABLE_LOG_DEBUG = 1, /**< Per-operation detail (each Z3 query, each specialization). */
  SHAPEML_UNSTABLE_LOG_INFO = 2,  /**< Milestones (a module created, a shared object built). */
  SHAPEML_UNSTABLE_LOG_WARN = 3,  /**< Something failed or fell back (the default threshold). */
  SHAPEML_UNSTABLE_LOG_ERROR = 4, /**< A failure the library could not handle. */
  SHAPEML_UNSTABLE_LOG_OFF = 5    /**< Nothing (as a threshold). */
};

/** One key/value of a log record; both strings borrowed for the sink call. */
typedef struct shapeml_unstable_log_field {
  const char* key;   /**< E.g. "module". */
  const char* value; /**< E.g. "m-0123456789abcdef". */
} shapeml_unstable_log_field;

/** A structured log record, valid only during the sink call. */
typedef struct shapeml_unstable_log_record {
  size_t struct_size;                        /**< sizeof(shapeml_unstable_log_record) of the library. */
  shapeml_unstable_log_level level;          /**< SHAPEML_UNSTABLE_LOG_*. */
  const char* component;                     /**< "driver", "parse", "check", "smt", "lower", "codegen", "link", "runtime",
                                                  "memory", "cuda" or "capi". */
  const char* message;                       /**< What happened, one line. */
  size_t num_fields;                         /**< Number of entries of `fields`. */
  const shapeml_unstable_log_field* fields;  /**< Key/values. */
  uint64_t time_ns;                          /**< Monotonic clock (CLOCK_MONOTONIC) in nanoseconds. */
  uint32_t thread;                           /**< Small number of the logging thread (the trace's `tid`). */
  const char* module_id;                     /**< The module whose work logged this, or "". */
  const char* entry;                         /**< The entry point being called, or "". */
} shapeml_unstable_log_record;

/** A log sink: called on the thread that logs, possibly on several threads at
 *  once. It must not call shapeml_unstable_log_set_sink(); records that
 *  shapeml functions called from inside the sink would log are dropped. */
typedef void (*shapeml_unstable_log_sink)(void* user, const shapeml_unstable_log_record* record);

/**
 * Installs the process-wide log sink of this library (NULL: none; the
 * default). Without a sink the library formats and prints nothing. Records
 * at or above the component's level (SHAPEML_LOG, read when the library is
 * loaded, or shapeml_unstable_log_set_levels(); default `warn`) reach it.
 * @return NULL (cannot fail).
 */
SHAPEML_API shapeml_status* shapeml_unstable_log_set_sink(shapeml_unstable_log_sink sink, void* user);

/**
 * Sets log levels from a spec in SHAPEML_LOG's syntax: a bare level sets
 * every component, COMPONENT=LEVEL one of them ("info,smt=debug").
 * @return NULL on success; INVALID_ARGUMENT for a NULL or empty spec, an
 *         empty item ("info,", ","), an unknown level or component (nothing
 *         changed); UNIMPLEMENTED in a build without instrumentation
 *         (SHAPEML_INSTRUMENTATION=OFF).
 */
SHAPEML_API shapeml_status* shapeml_unstable_log_set_levels(const char* spec);

/** Trace flags. */
enum {
  SHAPEML_UNSTABLE_TRACE_SPANS = 1,     /**< Record spans of the compiler and the runtime. */
  SHAPEML_UNSTABLE_TRACE_GPU_TIMING = 2 /**< Also time every GPU operation with CUDA events (synchronizes after each plan). */
};

/** Options of shapeml_unstable_trace_start(). */
typedef struct shapeml_unstable_trace_options {
  size_t struct_size; /**< sizeof(shapeml_unstable_trace_options). */
  uint64_t flags;     /**< SHAPEML_UNSTABLE_TRACE_* (SPANS is implied). */
} shapeml_unstable_trace_options;

/** Default trace options: spans only. */
#define SHAPEML_UNSTABLE_TRACE_OPTIONS_INIT {sizeof(shapeml_unstable_trace_options), SHAPEML_UNSTABLE_TRACE_SPANS}

/**
 * Starts recording spans, process-wide for this library (NULL options: spans
 * only). Events are kept in memory (bounded; extra ones are counted as
 * dropped) until flushed.
 * @return NULL on success; INVALID_ARGUMENT for a bad `struct_size`;
 *         UNIMPLEMENTED in a build without instrumentation.
 */
SHAPEML_API shapeml_status* shapeml_unstable_trace_start(const shapeml_unstable_trace_options* options);

/** Stops recording; what was recorded stays until flushed.
 *  @return NULL (cannot fail). */
SHAPEML_API shapeml_status* shapeml_unstable_trace_stop(void);

/**
 * Writes the recorded events to `path` as Chrome trace-event JSON (opens in
 * ui.perfetto.dev and chrome://tracing) and forgets them. The file is
 * written as save_npy writes: to a temporary beside it, renamed into place,
 * so a previous trace at `path` is replaced whole or not at all.
 * @return NULL on success; INVALID_ARGUMENT for a NULL path; IO_ERROR when
 *         `path` is not a regular file (a FIFO, a device: refused without
 *         opening it) or the file cannot be created or written (a full disk).
 *         On every failure the events are kept for a later flush.
 */
SHAPEML_API shapeml_status* shapeml_unstable_trace_flush_to_file(const char* path);

/** Receives a trace document, possibly in several pieces, in order. */
typedef void (*shapeml_unstable_trace_writer)(void* user, const char* data, size_t size);

/**
 * Hands the recorded events, as the same JSON document, to `write` and
 * forgets them.
 * @return NULL on success; INVALID_ARGUMENT for a NULL `write`.
 */
SHAPEML_API shapeml_status* shapeml_unstable_trace_flush(shapeml_unstable_trace_writer write, void* user);
/**@}*/
#endif

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* SHAPEML_H_ */
