#include "runtime/temp_memory.h"

#include <csetjmp>
#include <cstddef>
#include <cstdlib>

#include "runtime/memory_resource.h"

namespace shapeml::runtime {
namespace {

// Every temporary starts with a header (the payload stays 64-byte aligned):
// the call's list, its size and where it came from.
struct alignas(64) Header {
  Header* prev;
  Header* next;
  size_t bytes;         // the allocation, header included
  MemoryResource* mr;   // nullptr: malloc
};

// One guarded call on this thread.
struct Guard {
  std::jmp_buf jb;
  Header head;  // the call's live temporaries (a ring)
  MemoryResource* mr;
  int64_t failed;
};

thread_local Guard* t_guard = nullptr;

constexpr size_t kAlign = alignof(Header);

void* temp_alloc(int64_t n) {
  Guard* g = t_guard;
  void* raw = nullptr;
  size_t total = 0;
  if (n >= 0 && static_cast<uint64_t>(n) <= SIZE_MAX - sizeof(Header)) {
    total = static_cast<size_t>(n) + sizeof(Header);
    raw = g && g->mr ? g->mr->allocate(total, kAlign) : std::aligned_alloc(kAlign, (total + kAlign - 1) / kAlign * kAlign);
  }
  if (!raw) {
    if (g) {
      g->failed = n;
      std::longjmp(g->jb, 1);  // to run_with_temp_memory, which frees the rest
    }
    return nullptr;
  }
  Header* h = static_cast<Header*>(raw);
  h->bytes = total;
  h->mr = g ? g->mr : nullptr;
  if (g) {
    h->prev = &g->head, h->next = g->head.next;
    g->head.next->prev = h, g->head.next = h;
  } else {
    h->prev = h->next = h;
  }
  return h + 1;
}

void release(Header* h) {
  if (h->mr) h->mr->deallocate(h, h->bytes, kAlign);
  else std::free(h);
}

void temp_free(void* p) {
  if (!p) return;
  Header* h = static_cast<Header*>(p) - 1;
  h->prev->next = h->next, h->next->prev = h->prev;
  release(h);
}

}  // namespace

void install_temp_hooks(void* table) {
  // Atomic and only when different: a shared object loaded by two modules at
  // once has one table, and one module's calls may be reading it (the
  // generated code's loads see either value the same).
  void** t = static_cast<void**>(table);
  void* want[2] = {reinterpret_cast<void*>(&temp_alloc), reinterpret_cast<void*>(&temp_free)};
  for (int i = 0; i < 2; ++i)
    if (__atomic_load_n(&t[i], __ATOMIC_ACQUIRE) != want[i]) __atomic_store_n(&t[i], want[i], __ATOMIC_RELEASE);
}

bool run_with_temp_memory(common::CompiledEntryFn fn, void** buffers, MemoryResource* mr, int64_t& failed_bytes) {
  Guard g;
  g.head.prev = g.head.next = &g.head;
  g.mr = mr;
  g.failed = 0;
  Guard* const outer = t_guard;
  Guard* volatile gp = &g;  // read after a longjmp: from memory
  t_guard = &g;
  if (setjmp(g.jb) != 0) {
    Guard* r = gp;
    t_guard = outer;
    for (Header* h = r->head.next; h != &r->head;) {
      Header* next = h->next;
      release(h);
      h = next;
    }
    failed_bytes = r->failed;
    return false;
  }
  fn(buffers);
  t_guard = outer;
  return true;
}

}  // namespace shapeml::runtime
