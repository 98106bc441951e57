// The heap temporaries of generated CPU code (docs/design/temp-memory.md).
//
// Generated code allocates the intermediates it cannot keep in registers
// (an (N N) product, a reduction's input) on the heap. It calls them through
// a two-entry table each specialization exports as `SYMBOL_temp_hooks`
// ({alloc, free}; common/compiled_entry.h): empty, the code uses malloc/free;
// filled by the runtime when it resolves the symbol, the code allocates from
// the call's memory resource, so a budgeted resource sees (and may refuse)
// them, and a refused temporary ends the call with RESOURCE_EXHAUSTED instead
// of a NULL the code would write through.
//
// How a refusal gets out of generated code that has no error path: the call
// runs under setjmp; the hook that cannot allocate frees what the call still
// holds and longjmps back. Generated code holds no other resources (no locks,
// no C++ objects), so nothing else is left behind.
#pragma once
#include <cstdint>

#include "common/compiled_entry.h"

namespace shapeml::runtime {

class MemoryResource;

/// Writes the runtime's {alloc, free} into a specialization's hook table.
void install_temp_hooks(void* table);

/// Runs `fn(buffers)` with its temporaries taken from `mr`. False when one
/// could not be allocated: `failed_bytes` says how large it was; every
/// temporary of the call has been freed.
bool run_with_temp_memory(common::CompiledEntryFn fn, void** buffers, MemoryResource* mr, int64_t& failed_bytes);

}  // namespace shapeml::runtime
