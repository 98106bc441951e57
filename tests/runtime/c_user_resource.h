/* A user's memory resource written in plain C (compiled as C11): it counts
 * calls, records the last sized deallocation, and can be told to fail. */
#ifndef TESTS_RUNTIME_C_USER_RESOURCE_H_
#define TESTS_RUNTIME_C_USER_RESOURCE_H_

#include "runtime/memory_resource.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct c_user_state {
  int allocations;
  int deallocations;
  int destroyed;
  int fail_next;          /* when non-zero, the next allocate returns NULL */
  size_t bytes_in_use;
  size_t last_dealloc_bytes;
  size_t last_dealloc_alignment;
  size_t last_alloc_alignment;
  void* last_stream;
} c_user_state;

/* A vtable over `state` (which must outlive the resource). */
shapeml_memory_resource c_user_resource(c_user_state* state);

/* An adaptor in C over any upstream vtable (here: one obtained from a C++
 * built-in with MemoryResource::to_vtable): counts and forwards. */
typedef struct c_counting_adaptor {
  shapeml_memory_resource upstream;
  int calls;
} c_counting_adaptor;
shapeml_memory_resource c_counting_adaptor_resource(c_counting_adaptor* a);

#ifdef __cplusplus
}
#endif

#endif
