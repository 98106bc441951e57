package shapeml

/*
#include <stdint.h>
#include <stdlib.h>
#include "shapeml.h"

// Defined in tensor.go (this file exports Go functions, so its preamble only
// declares).
shapeml_status* shapeml_go_memory_from_resource(const shapeml_api* a, const shapeml_memory_resource* r, shapeml_memory** out);
void shapeml_go_memory_release(const shapeml_api* a, shapeml_memory* m);
void* shapemlGoAllocate(void* user, size_t bytes, size_t alignment, void* stream);
void shapemlGoDeallocate(void* user, void* ptr, size_t bytes, size_t alignment, void* stream);
void shapemlGoDestroy(void* user);
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"unsafe"
)

// MemoryResource is a host allocator written in Go that the runtime calls
// for a call's outputs and temporaries (shapeml_memory_resource). Allocate
// returns bytes aligned to alignment that Go's collector does not own (C
// memory, e.g. from C.aligned_alloc or an arena), or nil when it has none;
// Deallocate gets back exactly what Allocate gave, with the same sizes. Both
// may be called from any thread, concurrently. A panic in either is caught
// and reported to the runtime as a failed allocation (never crossing into C).
type MemoryResource interface {
	Allocate(bytes, alignment uintptr) unsafe.Pointer
	Deallocate(p unsafe.Pointer, bytes, alignment uintptr)
}

// Memory is a shapeml_memory: where tensors and a call's allocations come
// from. nil means the library's default resource everywhere a *Memory is taken.
type Memory struct {
	lib *Library
	raw *C.shapeml_memory
}

func (m *Memory) handle() *C.shapeml_memory {
	if m == nil {
		return nil
	}
	return m.raw
}

// MemoryFrom wraps a Go MemoryResource. The resource stays reachable until
// the last tensor allocated from it is released and the Memory is closed.
func (l *Library) MemoryFrom(r MemoryResource) (*Memory, error) {
	// The user pointer is a C cell holding the handle (no Go pointer in C).
	cell := (*C.uintptr_t)(C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0)))))
	*cell = C.uintptr_t(cgo.NewHandle(r))
	var res C.shapeml_memory_resource
	res.struct_size = C.size_t(unsafe.Sizeof(res))
	res.user = unsafe.Pointer(cell)
	res.allocate = (*[0]byte)(C.shapemlGoAllocate)
	res.deallocate = (*[0]byte)(C.shapemlGoDeallocate)
	res.destroy = (*[0]byte)(C.shapemlGoDestroy)
	var raw *C.shapeml_memory
	if err := l.status(C.shapeml_go_memory_from_resource(l.api, &res, &raw)); err != nil {
		cgo.Handle(*cell).Delete()
		C.free(unsafe.Pointer(cell))
		return nil, err
	}
	m := &Memory{lib: l, raw: raw}
	runtime.SetFinalizer(m, (*Memory).Close)
	return m, nil
}

// Close releases this reference (idempotent); the resource is destroyed
// when tensors made from it are gone too.
func (m *Memory) Close() {
	if m != nil && m.raw != nil {
		C.shapeml_go_memory_release(m.lib.api, m.raw)
		m.raw = nil
	}
}

func resourceOf(user unsafe.Pointer) MemoryResource {
	return cgo.Handle(*(*C.uintptr_t)(user)).Value().(MemoryResource)
}

//export shapemlGoAllocate
func shapemlGoAllocate(user unsafe.Pointer, bytes, alignment C.size_t, stream unsafe.Pointer) (p unsafe.Pointer) {
	defer func() {
		if recover() != nil {
			p = nil
		}
	}()
	return resourceOf(user).Allocate(uintptr(bytes), uintptr(alignment))
}

//export shapemlGoDeallocate
func shapemlGoDeallocate(user unsafe.Pointer, ptr unsafe.Pointer, bytes, alignment C.size_t, stream unsafe.Pointer) {
	defer func() { _ = recover() }()
	resourceOf(user).Deallocate(ptr, uintptr(bytes), uintptr(alignment))
}

//export shapemlGoDestroy
func shapemlGoDestroy(user unsafe.Pointer) {
	cgo.Handle(*(*C.uintptr_t)(user)).Delete()
	C.free(user)
}

// CAlloc returns bytes of C memory aligned to alignment (a power of two), or
// nil: what a MemoryResource written in Go hands out. Free it with CFree.
func CAlloc(bytes, alignment uintptr) unsafe.Pointer {
	if alignment < unsafe.Sizeof(uintptr(0)) {
		alignment = unsafe.Sizeof(uintptr(0))
	}
	rounded := (bytes + alignment - 1) / alignment * alignment // aligned_alloc wants a multiple
	if rounded == 0 {
		rounded = alignment
	}
	return C.aligned_alloc(C.size_t(alignment), C.size_t(rounded))
}

// CFree frees memory from CAlloc.
func CFree(p unsafe.Pointer) { C.free(p) }
