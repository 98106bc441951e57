/* mlpkit: a small C library built on shapeml (the worked example of the
 * library author's guide, docs/guide/README.md).
 *
 * It ships a two-layer MLP compiled ahead of time with `shapemlc build`
 * (mlp.sml) and exposes its own API: create a model from weights, run it on
 * DLPack tensors, destroy it. It links only libshapeml_runtime.so (no LLVM,
 * MLIR or Z3 at run time) and allocates through its own memory resource,
 * written in C (mlpkit_memory.c).
 *
 * Errors: every fallible function returns an mlpkit_code (0 = success) and,
 * when `message` is not NULL, writes a NUL-terminated explanation into it
 * (at most `message_size` bytes). Thread safety: one mlpkit may be run from
 * several threads at once; create and destroy are not concurrent with runs.
 */
#ifndef MLPKIT_H_
#define MLPKIT_H_

#include <stddef.h>
#include <stdint.h>

#include "shapeml_dlpack.h" /* DLTensor, DLManagedTensorVersioned (from libshapeml-dev) */

#ifdef __cplusplus
extern "C" {
#endif

/** mlpkit's error codes (stable numbers). */
typedef enum mlpkit_code {
  MLPKIT_OK = 0,
  MLPKIT_ERR_ARGUMENT = 1,    /**< NULL argument, wrong dtype, rank or device, or shapes that do not fit together. */
  MLPKIT_ERR_SHAPE = 2,       /**< The model was not compiled for this input shape (see mlpkit_shapes). */
  MLPKIT_ERR_MODEL = 3,       /**< The model file is missing, not a shapeml module, or built for another module ABI. */
  MLPKIT_ERR_MEMORY = 4,      /**< Out of memory, or over the memory budget given to mlpkit_create. */
  MLPKIT_ERR_UNAVAILABLE = 5, /**< A device or library is missing (e.g. no GPU for a GPU model). */
  MLPKIT_ERR_VERSION = 6,     /**< The shapeml runtime found at run time is too old or of another major version. */
  MLPKIT_ERR_INTERNAL = 7     /**< A bug in mlpkit or shapeml. */
} mlpkit_code;

/** A loaded model with its weights. */
typedef struct mlpkit mlpkit;

/** Options for mlpkit_create. Initialize with MLPKIT_OPTIONS_INIT. */
typedef struct mlpkit_options {
  size_t struct_size;          /**< sizeof(mlpkit_options). */
  const char* model_path;      /**< The AOT-compiled model (.so); NULL: MLPKIT_DEFAULT_MODEL. */
  uint64_t memory_budget;      /**< Most bytes mlpkit's memory resource hands out at once; 0: unlimited. */
} mlpkit_options;

#define MLPKIT_OPTIONS_INIT {sizeof(mlpkit_options), NULL, 0}

/** Loads the model and copies the weights w1 (D, F), b1 (F), w2 (F, D),
 *  b2 (D) (f32, on the CPU, any strides). D and F must be a pair the model
 *  was compiled for. */
mlpkit_code mlpkit_create(const mlpkit_options* options, const DLTensor* w1, const DLTensor* b1, const DLTensor* w2,
                          const DLTensor* b2, mlpkit** out, char* message, size_t message_size);

/** y = mlp(x) for x of shape (B, S, D), f32 on the CPU (a GPU model copies
 *  it to its device). x is borrowed (read, never
 *  written, not kept). *y receives a new DLPack tensor of shape (B, S, D),
 *  on the model's device, owned by the caller: call (*y)->deleter(*y). */
mlpkit_code mlpkit_run(mlpkit* model, const DLTensor* x, DLManagedTensorVersioned** y, char* message, size_t message_size);

/** Frees the model; NULL is a no-op. Tensors returned by mlpkit_run stay valid. */
void mlpkit_destroy(mlpkit* model);

/** The shape bindings the model was compiled for: writes up to `capacity`
 *  rows of {B, S, D, F} into `bindings` and returns how many there are. */
size_t mlpkit_shapes(const mlpkit* model, int64_t (*bindings)[4], size_t capacity);

/** Statistics of mlpkit's own memory resource (host memory). */
typedef struct mlpkit_memory_stats {
  uint64_t bytes_in_use;
  uint64_t peak_bytes_in_use;
  uint64_t allocations;
  uint64_t refused; /**< Allocations refused because of the budget. */
} mlpkit_memory_stats;

/** Fills `*out`; returns MLPKIT_ERR_ARGUMENT for NULL arguments. */
mlpkit_code mlpkit_get_memory_stats(const mlpkit* model, mlpkit_memory_stats* out);

/** "OK", "ERR_ARGUMENT", ...: a static name for a code. */
const char* mlpkit_code_name(int code);

/** The version of the shapeml runtime mlpkit runs with, e.g. "0.4.0". */
const char* mlpkit_shapeml_version(void);

#ifdef __cplusplus
}
#endif

#endif /* MLPKIT_H_ */
