/**
 * @file shapeml_dlpack.h
 * @brief DLPack 1.x declarations used by the shapeml C ABI, self-contained.
 *
 * shapeml declares the DLPack structs itself, from the DLPack 1.0
 * specification (dmlc/dlpack include/dlpack/dlpack.h, v1.0), as IREE and
 * PJRT do, so that building against shapeml needs no DLPack package (Debian
 * ships only DLPack 0.6, which lacks the versioned struct). Part of the
 * stable C ABI; included by shapeml.h.
 *
 * Coexisting with the official header: these declarations sit behind the
 * official header's own include guard, `DLPACK_DLPACK_H_`, and are
 * layout-identical to it (DLPack guarantees the layout within major version 1).
 * - Official dlpack.h (>= 1.0) included first: it defines the guard, this
 *   file adds nothing, and shapeml uses the official declarations.
 * - shapeml.h included first: the official header, included later, sees its
 *   guard defined and adds nothing; these declarations serve both.
 * - An official dlpack.h older than 1.0 included first has no
 *   DLManagedTensorVersioned: that is a compile-time error with a message.
 *   The rule: include shapeml.h before any DLPack 0.x header, or use
 *   DLPack >= 1.0.
 */
#ifndef SHAPEML_DLPACK_H_
#define SHAPEML_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#if defined(DLPACK_DLPACK_H_) && (!defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION < 1)
#error "shapeml_dlpack.h: a DLPack header older than 1.0 was included first; include shapeml.h before it, or use DLPack >= 1.0"
#endif

#ifndef DLPACK_DLPACK_H_
/** The official dlpack.h's include guard: defined here so that it adds nothing later. */
#define DLPACK_DLPACK_H_

/** The DLPack major version these declarations follow. */
#define DLPACK_MAJOR_VERSION 1
/** The DLPack minor version these declarations follow. */
#define DLPACK_MINOR_VERSION 0

#ifdef __cplusplus
/** As in the official header: `extern "C"` in C++. */
#define DLPACK_EXTERN_C extern "C"
#else
/** As in the official header: nothing in C. */
#define DLPACK_EXTERN_C
#endif

#ifndef DLPACK_DLL
/** As in the official header: the export attribute of DLPack functions (none here). */
#define DLPACK_DLL
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** A DLPack ABI version: a change of `major` breaks the ABI of
 *  DLManagedTensorVersioned, a change of `minor` only adds to it. */
typedef struct {
  uint32_t major; /**< DLPack major version. */
  uint32_t minor; /**< DLPack minor version. */
} DLPackVersion;

/** Device types (DLPack 1.0). */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17
} DLDeviceType;

/** A device: its type and ordinal. */
typedef struct {
  DLDeviceType device_type; /**< The device type. */
  int32_t device_id;        /**< The device ordinal (0 for the CPU). */
} DLDevice;

/** Type codes (DLPack 1.0). */
typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U
} DLDataTypeCode;

/** An element type: code, bits per lane, lanes. */
typedef struct {
  uint8_t code;   /**< A DLDataTypeCode. */
  uint8_t bits;   /**< Bits per lane. */
  uint16_t lanes; /**< Lanes (1 for scalars). */
} DLDataType;

/** A tensor descriptor; it owns nothing. */
typedef struct {
  void* data;            /**< The data (aligned to 256 bytes by convention; plus byte_offset). */
  DLDevice device;       /**< Where the data lives. */
  int32_t ndim;          /**< Number of dimensions. */
  DLDataType dtype;      /**< Element type. */
  int64_t* shape;        /**< `ndim` dimensions. */
  int64_t* strides;      /**< `ndim` strides in elements, or NULL for compact row-major. */
  uint64_t byte_offset;  /**< Offset of the first element from `data`, in bytes. */
} DLTensor;

/** The legacy (unversioned) managed tensor. The consumer calls `deleter(self)` once. */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;                           /**< The tensor. */
  void* manager_ctx;                            /**< The producer's context. */
  void (*deleter)(struct DLManagedTensor* self); /**< Frees the tensor; may be NULL. */
} DLManagedTensor;

/** The consumer must not write to the data (the producer may share it). */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
/** The producer copied the data to make this tensor; a consumer may write to it freely. */
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

/**
 * A DLTensor with an owner, a version and flags. The consumer calls
 * `deleter(self)` exactly once when done with it (the deleter may be NULL
 * when there is nothing to free). `version` is the first member so that a
 * consumer can check it before touching anything else.
 */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;                                  /**< The DLPack version of this struct. */
  void* manager_ctx;                                      /**< The producer's context. */
  void (*deleter)(struct DLManagedTensorVersioned* self); /**< Frees the tensor; may be NULL. */
  uint64_t flags;                                         /**< DLPACK_FLAG_BITMASK_*. */
  DLTensor dl_tensor;                                     /**< The tensor. */
} DLManagedTensorVersioned;

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* DLPACK_DLPACK_H_ */

#endif /* SHAPEML_DLPACK_H_ */
