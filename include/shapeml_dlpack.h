/** @file shapeml_dlpack.h
 * @brief DLPack tensors at the shapeml ABI: the 0.6 header and the 1.0 versioned struct. */
/* DLPack 1.0's versioned managed tensor, declared from the DLPack 1.0
 * specification (dmlc/dlpack include/dlpack/dlpack.h, v1.0) because Debian
 * ships the 0.6 header, which has only the legacy DLManagedTensor. Part of the
 * stable C ABI; included by shapeml.h.
 *
 * When a DLPack >= 1.0 header is included first (it defines
 * DLPACK_MAJOR_VERSION), its own declarations are used instead; the layouts
 * are the same by the specification.
 */
#ifndef SHAPEML_DLPACK_H_
#define SHAPEML_DLPACK_H_

#include <dlpack/dlpack.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef DLPACK_MAJOR_VERSION

/** The DLPack ABI version this declaration follows. */
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

/** A DLPack ABI version. A change of `major` breaks the ABI of
 *  DLManagedTensorVersioned; a change of `minor` only adds to it. */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/** The consumer must not write to the data (the producer may share it). */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
/** The producer copied the data to make this tensor (e.g. from a
 *  non-exportable layout); a consumer may then write to it freely. */
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

/**
 * A DLTensor with an owner and a version. The consumer calls
 * `deleter(self)` exactly once when done with it (the deleter may be NULL
 * when there is nothing to free). `version` is the first member so that a
 * consumer can check it before touching anything else.
 */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif /* DLPACK_MAJOR_VERSION */

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* SHAPEML_DLPACK_H_ */
