package shapeml

/*
#include <stdlib.h>
#include "shapeml.h"

static shapeml_status* s_tensor_create_in(const shapeml_api* a, shapeml_memory* m, int32_t dtype, size_t rank, const int64_t* shape,
                                          shapeml_tensor** out) {
  return a->tensor_create_uninitialized(m, dtype, rank, shape, out);
}
static shapeml_status* s_tensor_copy_into(const shapeml_api* a, shapeml_memory* m, int32_t dtype, size_t rank, const int64_t* shape,
                                          const void* data, size_t bytes, shapeml_tensor** out) {
  return a->tensor_create_copy(m, dtype, rank, shape, data, bytes, out);
}
static void s_tensor_free(const shapeml_api* a, shapeml_tensor* t) { a->tensor_release(t); }
static size_t s_n_results(const shapeml_api* a, shapeml_entry* e) { return a->entry_result_count(e); }
static int32_t s_tensor_dt(const shapeml_api* a, shapeml_tensor* t) { return a->tensor_dtype(t); }
static size_t s_tensor_rk(const shapeml_api* a, shapeml_tensor* t) { return a->tensor_rank(t); }
static const int64_t* s_tensor_sh(const shapeml_api* a, shapeml_tensor* t) { return a->tensor_shape(t); }
static void* s_tensor_ptr(const shapeml_api* a, shapeml_tensor* t) { return a->tensor_data(t); }
static size_t s_tensor_nbytes(const shapeml_api* a, shapeml_tensor* t) { return a->tensor_byte_size(t); }
static shapeml_status* s_export_dlpack(const shapeml_api* a, shapeml_tensor* t, DLManagedTensorVersioned** out) {
  return a->tensor_export_dlpack_versioned(t, out);
}
static shapeml_status* s_import_dlpack(const shapeml_api* a, DLManagedTensorVersioned* m, shapeml_tensor** out) {
  return a->tensor_import_dlpack_versioned(m, out);
}
static void s_dlpack_delete(DLManagedTensorVersioned* m) {
  if (m && m->deleter) m->deleter(m);
}
static shapeml_status* s_entry_call_tensors(const shapeml_api* a, shapeml_entry* e, shapeml_tensor** in, size_t n_in, shapeml_tensor** out,
                                            size_t n_out, shapeml_memory* memory, shapeml_tensor** provided, void* stream,
                                            int32_t num_threads, const char* const* dim_names, const int64_t* dim_values, size_t num_dims) {
  shapeml_call_options o = SHAPEML_CALL_OPTIONS_INIT;
  o.memory = memory;
  o.outputs = provided;
  o.stream = stream;
  o.num_threads = num_threads;
  o.dim_names = dim_names;
  o.dim_values = dim_values;
  o.num_dims = num_dims;
  return a->entry_call(e, in, n_in, out, n_out, &o);
}
// For memory.go, whose preamble may only declare (it exports Go functions).
shapeml_status* shapeml_go_memory_from_resource(const shapeml_api* a, const shapeml_memory_resource* r, shapeml_memory** out) {
  return a->memory_create_from_resource(r, out);
}
void shapeml_go_memory_release(const shapeml_api* a, shapeml_memory* m) { a->memory_release(m); }
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Tensor is a shapeml_tensor handle: memory the library owns (or shares
// through DLPack), passed to calls without copies. Close releases this
// reference; a finalizer does it for a Tensor left unreachable.
type Tensor struct {
	lib *Library
	raw *C.shapeml_tensor
}

func (l *Library) tensor(raw *C.shapeml_tensor) *Tensor {
	t := &Tensor{lib: l, raw: raw}
	runtime.SetFinalizer(t, (*Tensor).Close)
	return t
}

// Close releases the tensor (idempotent).
func (t *Tensor) Close() {
	if t.raw != nil {
		C.s_tensor_free(t.lib.api, t.raw)
		t.raw = nil
	}
}

// NewTensor copies a into a new host tensor (from memory, or the default
// resource when memory is nil).
func (l *Library) NewTensor(a Array, memory *Memory) (*Tensor, error) {
	dt, ptr, bytes, err := a.raw()
	if err != nil {
		return nil, err
	}
	var raw *C.shapeml_tensor
	err = l.status(C.s_tensor_copy_into(l.api, memory.handle(), C.int32_t(dt), C.size_t(len(a.Shape)), shapePtr(a.Shape), ptr,
		C.size_t(bytes), &raw))
	runtime.KeepAlive(a.Data)
	runtime.KeepAlive(a.Shape)
	runtime.KeepAlive(memory)
	if err != nil {
		return nil, err
	}
	return l.tensor(raw), nil
}

// EmptyTensor makes a host tensor of dtype and shape whose contents are not
// initialized (e.g. an output a call writes into), from memory or the
// default resource when memory is nil.
func (l *Library) EmptyTensor(dtype DType, shape []int64, memory *Memory) (*Tensor, error) {
	var raw *C.shapeml_tensor
	err := l.status(C.s_tensor_create_in(l.api, memory.handle(), C.int32_t(dtype), C.size_t(len(shape)), shapePtr(shape), &raw))
	runtime.KeepAlive(shape)
	runtime.KeepAlive(memory)
	if err != nil {
		return nil, err
	}
	return l.tensor(raw), nil
}

func shapePtr(shape []int64) *C.int64_t {
	if len(shape) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&shape[0]))
}

// DType is the tensor's element type.
func (t *Tensor) DType() DType { return DType(C.s_tensor_dt(t.lib.api, t.raw)) }

// Shape is the tensor's shape (a copy).
func (t *Tensor) Shape() []int64 {
	n := int(C.s_tensor_rk(t.lib.api, t.raw))
	out := make([]int64, n)
	if n > 0 {
		copy(out, unsafe.Slice((*int64)(unsafe.Pointer(C.s_tensor_sh(t.lib.api, t.raw))), n))
	}
	return out
}

// Data is the address of the tensor's first element (host tensors); valid
// while the tensor is open.
func (t *Tensor) Data() unsafe.Pointer { return C.s_tensor_ptr(t.lib.api, t.raw) }

// Float32s is the tensor's f32 data in place (no copy): valid until Close.
func (t *Tensor) Float32s() ([]float32, error) {
	if t.DType() != F32 {
		return nil, &Error{InvalidArgument, fmt.Sprintf("Float32s of a tensor of dtype %d", t.DType())}
	}
	n := int(C.s_tensor_nbytes(t.lib.api, t.raw)) / 4
	if n == 0 {
		return []float32{}, nil
	}
	return unsafe.Slice((*float32)(t.Data()), n), nil
}

// Array copies the tensor out into a Go array.
func (t *Tensor) Array() Array {
	a := t.lib.toArray(t.raw)
	runtime.KeepAlive(t)
	return a
}

// ToDLPack exports the tensor as a DLPack 1.x DLManagedTensorVersioned*
// (zero copy; the tensor stays valid and the capsule holds its own
// reference). The consumer calls its deleter once, or DeleteDLPack.
func (t *Tensor) ToDLPack() (unsafe.Pointer, error) {
	var m *C.DLManagedTensorVersioned
	if err := t.lib.status(C.s_export_dlpack(t.lib.api, t.raw, &m)); err != nil {
		return nil, err
	}
	runtime.KeepAlive(t)
	return unsafe.Pointer(m), nil
}

// FromDLPack imports a DLManagedTensorVersioned* (zero copy): the returned
// tensor owns it and calls its deleter when the last reference goes. On
// error the capsule is left to the caller.
func (l *Library) FromDLPack(managed unsafe.Pointer) (*Tensor, error) {
	var raw *C.shapeml_tensor
	if err := l.status(C.s_import_dlpack(l.api, (*C.DLManagedTensorVersioned)(managed), &raw)); err != nil {
		return nil, err
	}
	return l.tensor(raw), nil
}

// DeleteDLPack calls a DLManagedTensorVersioned's deleter (for a capsule
// ToDLPack made that no consumer took).
func DeleteDLPack(managed unsafe.Pointer) { C.s_dlpack_delete((*C.DLManagedTensorVersioned)(managed)) }

// CallTensors calls the entry on tensors without copies: inputs are
// borrowed, results are new tensors the caller closes, or, with
// opts.Outputs, the results are written into those tensors (which are
// returned). opts.Memory and opts.Stream are as in shapeml_call_options.
func (e *Entry) CallTensors(opts CallOptions, inputs ...*Tensor) ([]*Tensor, error) {
	l := e.module.lib
	nOut := int(C.s_n_results(l.api, e.raw))
	if opts.Outputs != nil && len(opts.Outputs) != nOut {
		return nil, &Error{InvalidArgument, fmt.Sprintf("CallTensors: %d output(s) given, the entry returns %d", len(opts.Outputs), nOut)}
	}
	word := C.size_t(unsafe.Sizeof(uintptr(0)))
	in := (**C.shapeml_tensor)(C.calloc(C.size_t(len(inputs)+1), word))
	out := (**C.shapeml_tensor)(C.calloc(C.size_t(nOut+1), word))
	defer C.free(unsafe.Pointer(in))
	defer C.free(unsafe.Pointer(out))
	for i, t := range inputs {
		if t == nil || t.raw == nil {
			return nil, &Error{InvalidArgument, fmt.Sprintf("CallTensors: input %d is nil or closed", i)}
		}
		unsafe.Slice(in, len(inputs)+1)[i] = t.raw
	}
	var provided **C.shapeml_tensor
	if opts.Outputs != nil {
		provided = (**C.shapeml_tensor)(C.calloc(C.size_t(nOut+1), word))
		defer C.free(unsafe.Pointer(provided))
		for i, t := range opts.Outputs {
			if t == nil || t.raw == nil {
				return nil, &Error{InvalidArgument, fmt.Sprintf("CallTensors: output %d is nil or closed", i)}
			}
			unsafe.Slice(provided, nOut+1)[i] = t.raw
		}
	}
	names, values, nDims, free := cDims(opts.Dims)
	defer free()
	err := l.status(C.s_entry_call_tensors(l.api, e.raw, in, C.size_t(len(inputs)), out, C.size_t(nOut), opts.Memory.handle(), provided,
		opts.Stream, C.int32_t(opts.NumThreads), names, values, nDims))
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(opts.Outputs)
	runtime.KeepAlive(opts.Memory)
	runtime.KeepAlive(e.module)
	if err != nil {
		return nil, err
	}
	if opts.Outputs != nil {
		// The call gave back a new reference to each provided tensor.
		for _, t := range unsafe.Slice(out, nOut) {
			C.s_tensor_free(l.api, t)
		}
		return opts.Outputs, nil
	}
	results := make([]*Tensor, nOut)
	for i, t := range unsafe.Slice(out, nOut) {
		results[i] = l.tensor(t)
	}
	return results, nil
}

// cDims copies the given shape variables into C memory for one call.
func cDims(dims map[string]int64) (**C.char, *C.int64_t, C.size_t, func()) {
	n := len(dims)
	names := (**C.char)(C.calloc(C.size_t(n+1), C.size_t(unsafe.Sizeof(uintptr(0)))))
	values := (*C.int64_t)(C.calloc(C.size_t(n+1), 8))
	ns, vs := unsafe.Slice(names, n+1), unsafe.Slice(values, n+1)
	k := 0
	for name, v := range dims {
		ns[k], vs[k] = C.CString(name), C.int64_t(v)
		k++
	}
	return names, values, C.size_t(n), func() {
		for _, p := range ns[:n] {
			C.free(unsafe.Pointer(p))
		}
		C.free(unsafe.Pointer(names))
		C.free(unsafe.Pointer(values))
	}
}

// toArray copies a tensor out into a Go array.
func (l *Library) toArray(t *C.shapeml_tensor) Array {
	rank := int(C.s_tensor_rk(l.api, t))
	shape := make([]int64, rank)
	if rank > 0 {
		copy(shape, unsafe.Slice((*int64)(unsafe.Pointer(C.s_tensor_sh(l.api, t))), rank))
	}
	bytes := int(C.s_tensor_nbytes(l.api, t))
	src := C.s_tensor_ptr(l.api, t)
	var data interface{}
	switch DType(C.s_tensor_dt(l.api, t)) {
	case F32:
		v := make([]float32, bytes/4)
		if len(v) > 0 {
			copy(v, unsafe.Slice((*float32)(src), len(v)))
		}
		data = v
	case F64:
		v := make([]float64, bytes/8)
		if len(v) > 0 {
			copy(v, unsafe.Slice((*float64)(src), len(v)))
		}
		data = v
	case I32:
		v := make([]int32, bytes/4)
		if len(v) > 0 {
			copy(v, unsafe.Slice((*int32)(src), len(v)))
		}
		data = v
	default:
		v := make([]int64, bytes/8)
		if len(v) > 0 {
			copy(v, unsafe.Slice((*int64)(src), len(v)))
		}
		data = v
	}
	return Array{data, shape}
}
