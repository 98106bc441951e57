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
#define SHAPEML_VERSION_MINOR 2 /**< Incremented when symbols or struct fields are appended. */
#define SHAPEML_VERSION_PATCH 0 /**< Incremented for fixes without ABI change. */
/**@}*/

/** The library's version as "MAJOR.MINOR.PATCH"; a static string. */
SHAPEML_API const char* shapeml_version(void);

/** The library's version as MAJOR * 10000 + MINOR * 100 + PATCH. */
SHAPEML_API uint32_t shapeml_version_number(void);

/* ------------------------------------------------------------------------ */
/** @name Status */
/**@{*/

/** Stable status codes. Append-only: a value never changes meaning. */
typedef int32_t shapeml_status_code;
enum {
  SHAPEML_STATUS_OK = 0,               /**< Success (a NULL status). */
  SHAPEML_STATUS_INVALID_ARGUMENT = 1, /**< A NULL handle, a bad index, a malformed options struct. */
  SHAPEML_STATUS_OUT_OF_MEMORY = 2,    /**< An allocation failed. */
  SHAPEML_STATUS_NOT_FOUND = 3,        /**< A named thing (file, entry point) does not exist. */
  SHAPEML_STATUS_IO_ERROR = 4,         /**< A file could not be read or written. */
  SHAPEML_STATUS_CHECK_FAILED = 5,     /**< The program has errors; its diagnostics say which. */
  SHAPEML_STATUS_UNIMPLEMENTED = 6,    /**< Not supported by this build. */
  SHAPEML_STATUS_UNAVAILABLE = 7,      /**< A device or library is missing at run time. */
  SHAPEML_STATUS_INTERNAL = 8          /**< A bug in shapeml; the message says where. */
};

/** An error: a code and a message. Owned by the caller; free with shapeml_status_free(). */
typedef struct shapeml_status shapeml_status;

/** The code of `status`; SHAPEML_STATUS_OK for NULL. */
SHAPEML_API shapeml_status_code shapeml_status_get_code(const shapeml_status* status);

/** The message of `status` (UTF-8, borrowed until the status is freed); "" for NULL. */
SHAPEML_API const char* shapeml_status_get_message(const shapeml_status* status);

/** Frees `status`; NULL is a no-op. */
SHAPEML_API void shapeml_status_free(shapeml_status* status);

/** A static, human-readable name for a code, e.g. "INVALID_ARGUMENT". */
SHAPEML_API const char* shapeml_status_code_name(shapeml_status_code code);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Context */
/**@{*/

/** Owns compiler settings and (later) caches; safe to share across threads once created. */
typedef struct shapeml_context shapeml_context;

/** Options for shapeml_context_create(). Initialize with SHAPEML_CONTEXT_OPTIONS_INIT. */
typedef struct shapeml_context_options {
  size_t struct_size;             /**< sizeof(shapeml_context_options) as compiled by the caller. */
  uint32_t obligation_timeout_ms; /**< Z3 budget per shape obligation; 0 means the default (2000). */
} shapeml_context_options;

/** Default context options. */
#define SHAPEML_CONTEXT_OPTIONS_INIT {sizeof(shapeml_context_options), 2000u}

/**
 * Creates a context.
 * @param options may be NULL for defaults; otherwise `struct_size` must be at
 *        least `sizeof(size_t)`.
 * @param out receives an owned reference; set to NULL on failure.
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

/** The outcome of checking one source buffer: its diagnostics. */
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
 * @param name may be NULL ("<source>").
 * @param source may be NULL only when `length` is 0.
 * @param out receives an owned result; set to NULL on failure.
 */
SHAPEML_API shapeml_status* shapeml_check_source(shapeml_context* context, const char* name, const char* source, size_t length,
                                                 shapeml_check_result** out);

/** Adds a reference to `result`; NULL is a no-op. */
SHAPEML_API void shapeml_check_result_retain(shapeml_check_result* result);

/** Drops a reference to `result`; NULL is a no-op. */
SHAPEML_API void shapeml_check_result_release(shapeml_check_result* result);

/** 1 when the program checked without errors, 0 otherwise (also for NULL). */
SHAPEML_API int32_t shapeml_check_result_passed(const shapeml_check_result* result);

/** Number of diagnostics; 0 for NULL. */
SHAPEML_API size_t shapeml_check_result_diagnostic_count(const shapeml_check_result* result);

/** Fills `*out` (whose struct_size the caller set) with diagnostic `index`. */
SHAPEML_API shapeml_status* shapeml_check_result_get_diagnostic(const shapeml_check_result* result, size_t index, shapeml_diagnostic* out);

/** Note `note_index` of diagnostic `index` (borrowed). */
SHAPEML_API shapeml_status* shapeml_check_result_get_note(const shapeml_check_result* result, size_t index, size_t note_index,
                                                          const char** out);

/** Entry `k` of diagnostic `index`'s counterexample: a shape variable and its value. */
SHAPEML_API shapeml_status* shapeml_check_result_get_counterexample(const shapeml_check_result* result, size_t index, size_t k,
                                                                    const char** name, int64_t* value);

/**
 * All diagnostics rendered as text (with source line and caret) or as a JSON
 * array. The string is borrowed from the result.
 */
SHAPEML_API shapeml_status* shapeml_check_result_render(const shapeml_check_result* result, shapeml_format format, const char** out);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Memory (since 0.2)
 *  A shapeml_memory is a reference-counted memory resource: the built-in host
 *  resource, an adaptor over another one, or a user's C vtable. NULL wherever
 *  a shapeml_memory* is accepted means the host resource. */
/**@{*/

/** A reference-counted memory resource. */
typedef struct shapeml_memory shapeml_memory;

/** The host resource (64-byte aligned, thread-safe). */
SHAPEML_API shapeml_status* shapeml_memory_create_host(shapeml_memory** out);

/**
 * Wraps a user's resource. The library copies the vtable and calls
 * `resource->destroy(resource->user)` once, when the last tensor allocated
 * from it and the last reference are gone. On failure `destroy` is not called.
 */
SHAPEML_API shapeml_status* shapeml_memory_create_from_resource(const shapeml_memory_resource* resource, shapeml_memory** out);

/** Counts bytes in use, peak, allocations over `upstream` (NULL: host). */
SHAPEML_API shapeml_status* shapeml_memory_create_statistics_adaptor(shapeml_memory* upstream, shapeml_memory** out);

/** A coalescing pool over `upstream` (NULL: host); `maximum_bytes` 0 = unbounded. */
SHAPEML_API shapeml_status* shapeml_memory_create_pool(shapeml_memory* upstream, size_t maximum_bytes, shapeml_memory** out);

/** Reports every allocate/deallocate on `upstream` to `callback` (never to stdout). */
SHAPEML_API shapeml_status* shapeml_memory_create_logging_adaptor(shapeml_memory* upstream, shapeml_log_callback callback, void* user,
                                                                  shapeml_memory** out);

/** Fills `*out` (caller sets struct_size); NOT_FOUND when the resource keeps no statistics. */
SHAPEML_API shapeml_status* shapeml_memory_get_statistics(const shapeml_memory* memory, shapeml_memory_statistics* out);

/** Adds a reference; NULL is a no-op. */
SHAPEML_API void shapeml_memory_retain(shapeml_memory* memory);

/** Drops a reference; NULL is a no-op. */
SHAPEML_API void shapeml_memory_release(shapeml_memory* memory);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Tensors (since 0.2)
 *  A shapeml_tensor is a dense tensor whose first member is a DLPack
 *  DLTensor. Host tensors only in this release. */
/**@{*/

/** Element types; the numbering is stable. */
typedef int32_t shapeml_dtype;
enum { SHAPEML_DTYPE_F32 = 0, SHAPEML_DTYPE_F64 = 1, SHAPEML_DTYPE_BF16 = 2, SHAPEML_DTYPE_I32 = 3, SHAPEML_DTYPE_I64 = 4, SHAPEML_DTYPE_BOOL = 5 };

/** A reference-counted tensor. */
typedef struct shapeml_tensor shapeml_tensor;

/** A zero-filled, row-major host tensor from `memory` (NULL: host). `shape` may be NULL when `rank` is 0. */
SHAPEML_API shapeml_status* shapeml_tensor_create(shapeml_memory* memory, shapeml_dtype dtype, size_t rank, const int64_t* shape,
                                                  shapeml_tensor** out);

/** A tensor holding a copy of `bytes` bytes at `data`, which must equal the tensor's size. */
SHAPEML_API shapeml_status* shapeml_tensor_create_copy(shapeml_memory* memory, shapeml_dtype dtype, size_t rank, const int64_t* shape,
                                                       const void* data, size_t bytes, shapeml_tensor** out);

/** Adds a reference; NULL is a no-op. */
SHAPEML_API void shapeml_tensor_retain(shapeml_tensor* tensor);

/** Drops a reference; NULL is a no-op. */
SHAPEML_API void shapeml_tensor_release(shapeml_tensor* tensor);

/** The dtype; -1 for NULL. */
SHAPEML_API shapeml_dtype shapeml_tensor_dtype(const shapeml_tensor* tensor);

/** The rank; 0 for NULL. */
SHAPEML_API size_t shapeml_tensor_rank(const shapeml_tensor* tensor);

/** The shape (`rank` entries, borrowed); NULL for NULL. */
SHAPEML_API const int64_t* shapeml_tensor_shape(const shapeml_tensor* tensor);

/** The first element (row-major, dense); NULL for NULL. */
SHAPEML_API void* shapeml_tensor_data(const shapeml_tensor* tensor);

/** Size of the data in bytes; 0 for NULL. */
SHAPEML_API size_t shapeml_tensor_byte_size(const shapeml_tensor* tensor);

/** A borrowed DLTensor view (valid while the tensor lives); NULL for NULL. */
SHAPEML_API const DLTensor* shapeml_tensor_dltensor(const shapeml_tensor* tensor);

/**
 * Exports as a legacy DLManagedTensor, zero copy. The tensor stays alive
 * until the consumer calls `(*out)->deleter(*out)`.
 */
SHAPEML_API shapeml_status* shapeml_tensor_export_dlpack(shapeml_tensor* tensor, DLManagedTensor** out);

/** Exports as a DLPack 1.0 DLManagedTensorVersioned, zero copy (same ownership rule). */
SHAPEML_API shapeml_status* shapeml_tensor_export_dlpack_versioned(shapeml_tensor* tensor, DLManagedTensorVersioned** out);

/**
 * Imports a host DLManagedTensor, zero copy. On success shapeml owns it and
 * calls its deleter when the tensor dies; on failure the caller still owns it.
 * Non-CPU devices, unsupported dtypes and non-compact strides are rejected.
 */
SHAPEML_API shapeml_status* shapeml_tensor_import_dlpack(DLManagedTensor* managed, shapeml_tensor** out);

/** Imports a DLManagedTensorVersioned (major version 1), zero copy; same rules. */
SHAPEML_API shapeml_status* shapeml_tensor_import_dlpack_versioned(DLManagedTensorVersioned* managed, shapeml_tensor** out);

/** Reads a NumPy .npy file (C order, little-endian f4/f8/i4/i8/b1). */
SHAPEML_API shapeml_status* shapeml_tensor_load_npy(const char* path, shapeml_memory* memory, shapeml_tensor** out);

/** Writes a NumPy .npy file (version 1.0 header). */
SHAPEML_API shapeml_status* shapeml_tensor_save_npy(const shapeml_tensor* tensor, const char* path);

/** The arrays of a NumPy .npz archive (stored or deflated entries). */
typedef struct shapeml_npz shapeml_npz;

/** Reads every array of an .npz archive. */
SHAPEML_API shapeml_status* shapeml_npz_load(const char* path, shapeml_memory* memory, shapeml_npz** out);

/** Number of arrays; 0 for NULL. */
SHAPEML_API size_t shapeml_npz_count(const shapeml_npz* npz);

/** Name of array `index` (without `.npy`), borrowed; NULL when out of range. */
SHAPEML_API const char* shapeml_npz_name(const shapeml_npz* npz, size_t index);

/** A new reference to the array called `name`; NOT_FOUND names the available ones. */
SHAPEML_API shapeml_status* shapeml_npz_get(const shapeml_npz* npz, const char* name, shapeml_tensor** out);

/** Drops the archive; tensors taken from it stay valid. NULL is a no-op. */
SHAPEML_API void shapeml_npz_release(shapeml_npz* npz);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Modules (since 0.2)
 *  A module is a checked program whose entry points can be called: compiled
 *  in-process (JIT, libshapeml only) or loaded from an ahead-of-time shared
 *  object (also in libshapeml_runtime). */
/**@{*/

/** A reference-counted module. */
typedef struct shapeml_module shapeml_module;

/** Code generation targets. */
typedef int32_t shapeml_target;
enum {
  SHAPEML_TARGET_NATIVE = 0, /**< The host CPU's full instruction set. */
  SHAPEML_TARGET_X86_64 = 1  /**< A portable x86-64 baseline, for artifacts that travel. */
};

/** Options for loading and compiling modules. */
typedef struct shapeml_module_options {
  size_t struct_size;     /**< sizeof(shapeml_module_options). */
  shapeml_memory* memory; /**< Where outputs are allocated; NULL: host. Retained by the module. */
  shapeml_target target;  /**< JIT target. */
} shapeml_module_options;

/** Default module options. */
#define SHAPEML_MODULE_OPTIONS_INIT {sizeof(shapeml_module_options), NULL, SHAPEML_TARGET_NATIVE}

/**
 * Checks and JIT-compiles `source`. Every function is an entry point,
 * specialized and compiled on its first call for each binding of its shape
 * variables (then cached). A program with errors returns CHECK_FAILED whose
 * message holds the rendered diagnostics.
 */
SHAPEML_API shapeml_status* shapeml_module_compile(shapeml_context* context, const char* name, const char* source, size_t length,
                                                   const shapeml_module_options* options, shapeml_module** out);

/**
 * Loads an ahead-of-time compiled module (`shapemlc build`). A file that is
 * not a shapeml module, or was built for another module ABI, is an error that
 * says so.
 */
SHAPEML_API shapeml_status* shapeml_module_load(const char* path, const shapeml_module_options* options, shapeml_module** out);

/**
 * Compiles `source` ahead of time into a shared object at `out_path`.
 * `bindings` lists the specializations, separated by `;`, each
 * `ENTRY:VAR=VALUE,VAR=VALUE` (e.g. "mlp:B=4,S=128,D=256,F=1024").
 */
SHAPEML_API shapeml_status* shapeml_module_build_shared_object(shapeml_context* context, const char* name, const char* source, size_t length,
                                                               const char* bindings, shapeml_target target, const char* out_path);

/** Adds a reference; NULL is a no-op. */
SHAPEML_API void shapeml_module_retain(shapeml_module* module);

/** Drops a reference; NULL is a no-op. */
SHAPEML_API void shapeml_module_release(shapeml_module* module);

/** Number of entry points; 0 for NULL. */
SHAPEML_API size_t shapeml_module_entry_count(const shapeml_module* module);

/** Name of entry `index`, borrowed; NULL when out of range. */
SHAPEML_API const char* shapeml_module_entry_name(const shapeml_module* module, size_t index);

/** Looks up `entry`: its number of inputs and outputs. NOT_FOUND lists the entries. */
SHAPEML_API shapeml_status* shapeml_module_lookup(const shapeml_module* module, const char* entry, size_t* num_inputs, size_t* num_outputs);

/**
 * Calls `entry`. Each input's dtype, rank, shape and device are checked
 * against the entry's signature, shape variables are bound from the inputs
 * and the `where` constraints checked (INVALID_ARGUMENT naming the input,
 * dimension, constraint and values). On success `outputs[0..num_outputs)`
 * receive new tensors (owned by the caller); on failure they are set to NULL.
 */
SHAPEML_API shapeml_status* shapeml_module_call(shapeml_module* module, const char* entry, shapeml_tensor* const* inputs, size_t num_inputs,
                                                shapeml_tensor** outputs, size_t num_outputs);
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

/** Fills `*out` with the statistics of `result`. */
SHAPEML_API shapeml_status* shapeml_unstable_check_result_stats(const shapeml_check_result* result, shapeml_unstable_check_stats* out);
/**@}*/
#endif

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* SHAPEML_H_ */
