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
#define SHAPEML_VERSION_MINOR 1 /**< Incremented when symbols or struct fields are appended. */
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
