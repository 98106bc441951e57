/* mlpkit's own memory resource, in C: aligned host memory with a budget and
 * counters. shapeml calls it from any thread, so the counters are atomic.
 * Ownership: shapeml copies the vtable and calls destroy(user) once, after
 * the last tensor allocated from it has died and the last reference to the
 * shapeml_memory is gone -- which may be after mlpkit_destroy, when the
 * caller still holds an output tensor. */
#include "mlpkit_memory.h"

#include <stdatomic.h>
#include <stdlib.h>

typedef struct state {
  uint64_t budget;
  atomic_uint_fast64_t in_use, peak, allocations, refused;
} state;

static void* allocate(void* user, size_t bytes, size_t alignment, void* stream) {
  (void)stream; /* host memory: no stream */
  state* s = user;
  uint64_t now = atomic_fetch_add(&s->in_use, bytes) + bytes;
  if (s->budget && now > s->budget) {
    atomic_fetch_sub(&s->in_use, bytes);
    atomic_fetch_add(&s->refused, 1);
    return NULL; /* shapeml turns this into RESOURCE_EXHAUSTED */
  }
  /* aligned_alloc needs a size that is a multiple of the alignment. */
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* p = aligned_alloc(alignment, rounded);
  if (!p) {
    atomic_fetch_sub(&s->in_use, bytes);
    return NULL;
  }
  atomic_fetch_add(&s->allocations, 1);
  uint64_t peak = atomic_load(&s->peak);
  while (now > peak && !atomic_compare_exchange_weak(&s->peak, &peak, now)) {
  }
  return p;
}

/* Sized deallocation: shapeml passes back the same bytes and alignment. */
static void deallocate(void* user, void* ptr, size_t bytes, size_t alignment, void* stream) {
  (void)alignment;
  (void)stream;
  state* s = user;
  free(ptr);
  atomic_fetch_sub(&s->in_use, bytes);
}

static int32_t statistics(void* user, shapeml_memory_statistics* out) {
  state* s = user;
  /* Write only the fields the caller's struct has (it may be older). */
  if (out->struct_size >= offsetof(shapeml_memory_statistics, peak_bytes_in_use) + sizeof(uint64_t)) {
    out->bytes_in_use = atomic_load(&s->in_use);
    out->peak_bytes_in_use = atomic_load(&s->peak);
  }
  if (out->struct_size >= offsetof(shapeml_memory_statistics, allocation_count) + sizeof(uint64_t))
    out->allocation_count = atomic_load(&s->allocations);
  return 1;
}

static void destroy(void* user) { free(user); }

shapeml_status* mlpkit_memory_create(uint64_t budget, shapeml_memory** out, const void** state_out) {
  state* s = calloc(1, sizeof *s);
  if (!s) return shapeml_status_create(SHAPEML_STATUS_RESOURCE_EXHAUSTED, "mlpkit: no memory for the allocator");
  s->budget = budget;
  shapeml_memory_resource vtable = {sizeof vtable, s, allocate, deallocate, statistics, destroy};
  shapeml_status* st = shapeml_memory_create_from_resource(&vtable, out);
  if (st) {
    free(s); /* on failure shapeml does not call destroy */
    return st;
  }
  *state_out = s;
  return NULL;
}

void mlpkit_memory_read(const void* user, mlpkit_memory_stats* out) {
  const state* s = user;
  out->bytes_in_use = atomic_load(&((state*)s)->in_use);
  out->peak_bytes_in_use = atomic_load(&((state*)s)->peak);
  out->allocations = atomic_load(&((state*)s)->allocations);
  out->refused = atomic_load(&((state*)s)->refused);
}
