#include "c_user_resource.h"

#include <stdlib.h>

static void* user_allocate(void* user, size_t bytes, size_t alignment, void* stream) {
  c_user_state* s = (c_user_state*)user;
  if (s->fail_next) {
    s->fail_next = 0;
    return NULL;
  }
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* p = aligned_alloc(alignment, rounded);
  if (p) {
    s->allocations++;
    s->bytes_in_use += bytes;
    s->last_alloc_alignment = alignment;
    s->last_stream = stream;
  }
  return p;
}

static void user_deallocate(void* user, void* ptr, size_t bytes, size_t alignment, void* stream) {
  c_user_state* s = (c_user_state*)user;
  s->deallocations++;
  s->bytes_in_use -= bytes;
  s->last_dealloc_bytes = bytes;
  s->last_dealloc_alignment = alignment;
  s->last_stream = stream;
  free(ptr);
}

static int32_t user_statistics(void* user, shapeml_memory_statistics* out) {
  c_user_state* s = (c_user_state*)user;
  if (out->struct_size >= sizeof(shapeml_memory_statistics)) {
    out->bytes_in_use = s->bytes_in_use;
    out->allocation_count = (uint64_t)s->allocations;
    out->deallocation_count = (uint64_t)s->deallocations;
  }
  return 1;
}

static void user_destroy(void* user) { ((c_user_state*)user)->destroyed++; }

shapeml_memory_resource c_user_resource(c_user_state* state) {
  shapeml_memory_resource r;
  r.struct_size = sizeof r;
  r.user = state;
  r.allocate = user_allocate;
  r.deallocate = user_deallocate;
  r.statistics = user_statistics;
  r.destroy = user_destroy;
  return r;
}

static void* counting_allocate(void* user, size_t bytes, size_t alignment, void* stream) {
  c_counting_adaptor* a = (c_counting_adaptor*)user;
  a->calls++;
  return a->upstream.allocate(a->upstream.user, bytes, alignment, stream);
}
static void counting_deallocate(void* user, void* ptr, size_t bytes, size_t alignment, void* stream) {
  c_counting_adaptor* a = (c_counting_adaptor*)user;
  a->calls++;
  a->upstream.deallocate(a->upstream.user, ptr, bytes, alignment, stream);
}
static void counting_destroy(void* user) {
  c_counting_adaptor* a = (c_counting_adaptor*)user;
  if (a->upstream.destroy) a->upstream.destroy(a->upstream.user);
}

shapeml_memory_resource c_counting_adaptor_resource(c_counting_adaptor* a) {
  shapeml_memory_resource r;
  r.struct_size = sizeof r;
  r.user = a;
  r.allocate = counting_allocate;
  r.deallocate = counting_deallocate;
  r.statistics = NULL;
  r.destroy = counting_destroy;
  return r;
}
