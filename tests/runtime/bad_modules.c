/* Broken shapeml modules, one per preprocessor flag (see CMakeLists.txt):
 *   BAD_ABI          reports module ABI version 3 (from the future)
 *   MISSING_SYMBOL   its manifest names a symbol it does not export
 *   BAD_MANIFEST     its manifest does not parse
 *   NO_MANIFEST      exports the ABI version but no manifest
 *   ABI_MISMATCH     its code says ABI 1, its manifest (abi 2)
 *   RANK65           a parameter of rank 65 (the runtime's limit is 64) */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

#if defined(BAD_ABI)
EXPORT uint32_t shapeml_module_abi_version(void) { return 3; }
EXPORT const char* shapeml_module_manifest(void) { return "(shapeml-module (abi 3) (name future))"; }
#elif defined(MISSING_SYMBOL)
EXPORT uint32_t shapeml_module_abi_version(void) { return 1; }
EXPORT const char* shapeml_module_manifest(void) {
  return "(shapeml-module (abi 1) (name missing)\n"
         "  (entry f (dims N) (params (x (tensor f32 (N) host))) (returns (tensor f32 (N) host))\n"
         "    (specialization (bind (N 2)) (symbol shapeml_f_2))))";
}
#elif defined(BAD_MANIFEST)
EXPORT uint32_t shapeml_module_abi_version(void) { return 1; }
EXPORT const char* shapeml_module_manifest(void) {
  return "(shapeml-module (abi 1) (name broken)\n"
         "  (entry f (dims N) (params (x (tensor f32 (M) host))) (returns (tensor f32 (N) host))))";
}
#elif defined(NO_MANIFEST)
EXPORT uint32_t shapeml_module_abi_version(void) { return 1; }
#elif defined(ABI_MISMATCH)
EXPORT uint32_t shapeml_module_abi_version(void) { return 1; }
EXPORT const char* shapeml_module_manifest(void) { return "(shapeml-module (abi 2) (name mismatch))"; }
#elif defined(RANK65)
EXPORT uint32_t shapeml_module_abi_version(void) { return 1; }
EXPORT const char* shapeml_module_manifest(void) {
  return "(shapeml-module (abi 1) (name deep)\n"
         "  (entry f (params (x (tensor f32 (1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 "
         "1 1 1 1 1 1 1 1 1 1 1) host))) (returns (tensor f32 (1) host))))";
}
#else
#error "define one of BAD_ABI MISSING_SYMBOL BAD_MANIFEST NO_MANIFEST ABI_MISMATCH RANK65"
#endif
