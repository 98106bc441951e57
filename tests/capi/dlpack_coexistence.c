/* Compile-only: shapeml.h first, then the official DLPack header. The
 * official header's include guard (DLPACK_DLPACK_H_) is already defined, so
 * nothing is declared twice and shapeml's DLPack 1.0 declarations serve both
 * (include/shapeml_dlpack.h documents the rule). */
#include "shapeml.h"
#include <dlpack/dlpack.h>

int shapeml_dlpack_coexistence_probe(void);
int shapeml_dlpack_coexistence_probe(void) {
  DLManagedTensorVersioned m;
  m.version.major = DLPACK_MAJOR_VERSION;
  m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  return (int)m.version.major + (int)m.flags + (int)sizeof(DLManagedTensor);
}
