// Package shapeml binds the shapeml C ABI (include/shapeml.h) with cgo. The
// library is opened at run time with dlopen; one symbol, shapeml_get_api,
// gives the versioned function table, checked once in Open. Handles are Go
// values with Close methods (and finalizers as a safety net); every fallible
// call returns an error that is an *Error carrying the stable status code.
//
// Build: the C headers come from the repository's include/ by default; for
// an installed shapeml set CGO_CFLAGS="$(pkg-config --cflags shapeml)".
// Only the Go standard library is used (Go 1.19).
package shapeml

/*
#cgo CFLAGS: -I${SRCDIR}/../../../include
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#define SHAPEML_UNSTABLE_API
#include "shapeml.h"

typedef const shapeml_api* (*get_api_fn)(uint32_t);

static const shapeml_api* open_api(const char* path, void** handle) {
  *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!*handle) return NULL;
  get_api_fn get = (get_api_fn)dlsym(*handle, "shapeml_get_api");
  return get ? get(SHAPEML_VERSION_MAJOR) : NULL;
}
static const char* last_dl_error(void) { const char* e = dlerror(); return e ? e : ""; }
static int has_symbol(void* handle) { return dlsym(handle, "shapeml_get_api") != NULL; }

// Go cannot call C function pointers: one small trampoline per member used.
static const char* s_version(const shapeml_api* a) { return a->version(); }
static int32_t s_status_code(const shapeml_api* a, shapeml_status* s) { return a->status_get_code(s); }
static const char* s_status_message(const shapeml_api* a, shapeml_status* s) { return a->status_get_message(s); }
static void s_status_free(const shapeml_api* a, shapeml_status* s) { a->status_free(s); }
static shapeml_status* s_get_capabilities(const shapeml_api* a, shapeml_capabilities* c) {
  c->struct_size = sizeof *c;
  return a->get_capabilities(c);
}
static shapeml_status* s_context_create(const shapeml_api* a, shapeml_context** c) { return a->context_create(NULL, c); }
static void s_context_release(const shapeml_api* a, shapeml_context* c) { a->context_release(c); }
static shapeml_status* s_check_source(const shapeml_api* a, shapeml_context* c, const char* name, const char* src, size_t n,
                                      shapeml_check_result** out) {
  return a->check_source(c, name, src, n, out);
}
static void s_check_result_release(const shapeml_api* a, shapeml_check_result* r) { a->check_result_release(r); }
static int32_t s_check_result_passed(const shapeml_api* a, shapeml_check_result* r) { return a->check_result_passed(r); }
static size_t s_diagnostic_count(const shapeml_api* a, shapeml_check_result* r) { return a->check_result_diagnostic_count(r); }
static shapeml_status* s_get_diagnostic(const shapeml_api* a, shapeml_check_result* r, size_t i, shapeml_diagnostic* d) {
  d->struct_size = sizeof *d;
  return a->check_result_get_diagnostic(r, i, d);
}
static shapeml_status* s_get_counterexample(const shapeml_api* a, shapeml_check_result* r, size_t i, size_t k, const char** name,
                                            int64_t* value) {
  return a->check_result_get_counterexample(r, i, k, name, value);
}
static shapeml_status* s_render(const shapeml_api* a, shapeml_check_result* r, int32_t format, const char** out) {
  return a->check_result_render(r, format, out);
}
static shapeml_status* s_module_compile(const shapeml_api* a, shapeml_context* c, const char* name, const char* src, size_t n,
                                        shapeml_module** out) {
  return a->module_compile(c, name, src, n, NULL, out);
}
static shapeml_status* s_module_build(const shapeml_api* a, shapeml_context* c, const char* name, const char* src, size_t n,
                                      const char* bindings, int32_t target, const char* out) {
  return a->module_build_shared_object(c, name, src, n, bindings, target, out);
}
static shapeml_status* s_module_load(const shapeml_api* a, const char* path, shapeml_module** out) {
  return a->module_load(path, NULL, out);
}
static void s_module_release(const shapeml_api* a, shapeml_module* m) { a->module_release(m); }
static size_t s_entry_count(const shapeml_api* a, shapeml_module* m) { return a->module_entry_count(m); }
static const char* s_entry_name_at(const shapeml_api* a, shapeml_module* m, size_t i) { return a->module_entry_name(m, i); }
static shapeml_status* s_get_entry(const shapeml_api* a, shapeml_module* m, const char* name, shapeml_entry** out) {
  return a->module_get_entry(m, name, out);
}
static size_t s_param_count(const shapeml_api* a, shapeml_entry* e) { return a->entry_param_count(e); }
static size_t s_result_count(const shapeml_api* a, shapeml_entry* e) { return a->entry_result_count(e); }
static size_t s_var_count(const shapeml_api* a, shapeml_entry* e) { return a->entry_shape_variable_count(e); }
static const char* s_var(const shapeml_api* a, shapeml_entry* e, size_t i) { return a->entry_shape_variable(e, i); }
static int32_t s_var_is_given(const shapeml_api* a, shapeml_entry* e, size_t i) {
  if (!SHAPEML_API_HAS(a, entry_shape_variable_is_given) || !a->entry_shape_variable_is_given) return 0;
  return a->entry_shape_variable_is_given(e, i);
}
static shapeml_status* s_tensor_info(const shapeml_api* a, shapeml_entry* e, int32_t kind, size_t i, shapeml_tensor_info* t) {
  t->struct_size = sizeof *t;
  return a->entry_get_tensor_info(e, kind, i, t);
}
// The unstable tier (generic entries' type variables) is not in the
// versioned table: looked up by name in the opened library; 0 / NULL-status
// "none" when the library predates it.
typedef size_t (*tv_count_fn)(const shapeml_entry*);
typedef shapeml_status* (*tv_get_fn)(const shapeml_entry*, size_t, shapeml_unstable_type_variable*);
static size_t s_tv_count(void* h, shapeml_entry* e) {
  tv_count_fn f = (tv_count_fn)dlsym(h, "shapeml_unstable_entry_type_variable_count");
  return f ? f(e) : 0;
}
static shapeml_status* s_tv_get(void* h, shapeml_entry* e, size_t i, shapeml_unstable_type_variable* v) {
  tv_get_fn f = (tv_get_fn)dlsym(h, "shapeml_unstable_entry_get_type_variable");
  v->struct_size = sizeof *v;
  return f ? f(e, i, v) : NULL;
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// ABIMajor is the ABI major version this package speaks; ABIMinorMin the
// oldest minor it needs (entries as handles arrived in 0.3).
const (
	ABIMajor    = 0
	ABIMinorMin = 3
)

// Target is the CPU a module's code is generated for (shapeml_target). The
// default, as in shapemlc and every binding, is TargetNative: the build
// machine's full instruction set. Artifacts that travel take TargetX86_64
// (any x86-64) or TargetX86_64V3 (AVX2 and FMA) / TargetX86_64V4 (AVX-512); a
// module whose level the CPU lacks is refused when it loads.
type Target int32

const (
	TargetNative   Target = 0
	TargetX86_64   Target = 1
	TargetX86_64V3 Target = 2
	TargetX86_64V4 Target = 3
)

// Code is a stable status code (docs/design/status-codes.md).
type Code int32

// The library's codes, plus two for Open.
const (
	InvalidArgument     Code = 1
	ResourceExhausted   Code = 2
	NotFound            Code = 3
	IOError             Code = 4
	CheckFailed         Code = 5
	Unimplemented       Code = 6
	Unavailable         Code = 7
	Internal            Code = 8
	FailedPrecondition  Code = 9
	IncompatibleModule  Code = 10
	OutOfRange          Code = 11
	LibraryNotLoaded    Code = -1 // dlopen failed or no shapeml_get_api
	IncompatibleLibrary Code = -2 // another ABI major, or a minor too old
)

var codeNames = map[Code]string{InvalidArgument: "INVALID_ARGUMENT", ResourceExhausted: "RESOURCE_EXHAUSTED", NotFound: "NOT_FOUND",
	IOError: "IO_ERROR", CheckFailed: "CHECK_FAILED", Unimplemented: "UNIMPLEMENTED", Unavailable: "UNAVAILABLE", Internal: "INTERNAL",
	FailedPrecondition: "FAILED_PRECONDITION", IncompatibleModule: "INCOMPATIBLE_MODULE", OutOfRange: "OUT_OF_RANGE",
	LibraryNotLoaded: "LIBRARY_NOT_LOADED", IncompatibleLibrary: "INCOMPATIBLE_LIBRARY"}

func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("CODE_%d", int32(c))
}

// Error is every error this package returns; test its Code with errors.As.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return e.Code.String() + ": " + e.Message }

// Library is an opened libshapeml.so (compiler and runtime) or
// libshapeml_runtime.so (load and call only). Safe for concurrent use.
type Library struct {
	api     *C.shapeml_api
	context *C.shapeml_context // nil in libshapeml_runtime.so
	handle  unsafe.Pointer     // dlopen's, for the unstable tier's symbols
}

func (l *Library) status(st *C.shapeml_status) error {
	if st == nil {
		return nil
	}
	e := &Error{Code(C.s_status_code(l.api, st)), C.GoString(C.s_status_message(l.api, st))}
	C.s_status_free(l.api, st)
	return e
}

// Open loads the library at path with dlopen and checks its ABI version.
// The library stays loaded for the life of the process.
func Open(path string) (*Library, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var handle unsafe.Pointer
	api := C.open_api(cpath, &handle)
	if handle == nil {
		return nil, &Error{LibraryNotLoaded, C.GoString(C.last_dl_error())}
	}
	if C.has_symbol(handle) == 0 {
		return nil, &Error{LibraryNotLoaded, path + " has no shapeml_get_api (shapeml older than 0.4?)"}
	}
	if api == nil {
		return nil, &Error{IncompatibleLibrary, fmt.Sprintf("%s does not implement ABI major %d", path, ABIMajor)}
	}
	if api.abi_minor < ABIMinorMin || uintptr(api.struct_size) < unsafe.Sizeof(*api) {
		return nil, &Error{IncompatibleLibrary, fmt.Sprintf("%s is ABI %d.%d; this package needs %d.%d or newer", path, api.abi_major,
			api.abi_minor, ABIMajor, ABIMinorMin)}
	}
	l := &Library{api: api, handle: handle}
	if api.compiler != 0 {
		if err := l.status(C.s_context_create(api, &l.context)); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Version is the library's version, e.g. "0.4.0".
func (l *Library) Version() string { return C.GoString(C.s_version(l.api)) }

// HasCompiler says whether checking, JIT and AOT builds are available.
func (l *Library) HasCompiler() bool { return l.api.compiler != 0 }

// ABI is the library's ABI version (major, minor, patch).
func (l *Library) ABI() (uint32, uint32, uint32) {
	return uint32(l.api.abi_major), uint32(l.api.abi_minor), uint32(l.api.abi_patch)
}

// Capabilities as shapeml_get_capabilities reports them.
type Capabilities struct {
	JIT, AOTBuild, CUDAPlugin bool
	ModuleABIVersion          uint32
}

func (l *Library) Capabilities() (Capabilities, error) {
	var c C.shapeml_capabilities
	if err := l.status(C.s_get_capabilities(l.api, &c)); err != nil {
		return Capabilities{}, err
	}
	return Capabilities{c.jit != 0, c.aot_build != 0, c.cuda_plugin != 0, uint32(c.module_abi_version)}, nil
}

func (l *Library) needCompiler(what string) error {
	if l.context == nil {
		return &Error{Unimplemented, what + ": libshapeml_runtime.so has no compiler"}
	}
	return nil
}

// Diagnostic is one diagnostic of a check.
type Diagnostic struct {
	Code, Message, Expected, Actual string
	Severity                        int32
	Line, Column                    uint32
	Counterexample                  map[string]int64
}

// CheckResult holds a program's diagnostics.
type CheckResult struct {
	lib *Library
	raw *C.shapeml_check_result
}

// Check parses and checks a program. A program with errors is not an error:
// its diagnostics are in the result.
func (l *Library) Check(name, source string) (*CheckResult, error) {
	if err := l.needCompiler("Check"); err != nil {
		return nil, err
	}
	cname, csrc := C.CString(name), C.CString(source)
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(csrc))
	r := &CheckResult{lib: l}
	if err := l.status(C.s_check_source(l.api, l.context, cname, csrc, C.size_t(len(source)), &r.raw)); err != nil {
		return nil, err
	}
	runtime.SetFinalizer(r, (*CheckResult).Close)
	return r, nil
}

// Close releases the result; safe to call twice.
func (r *CheckResult) Close() {
	if r.raw != nil {
		C.s_check_result_release(r.lib.api, r.raw)
		r.raw = nil
	}
}

// Passed says whether the program checked without errors.
func (r *CheckResult) Passed() bool { return C.s_check_result_passed(r.lib.api, r.raw) != 0 }

// Diagnostics copies every diagnostic out of the result.
func (r *CheckResult) Diagnostics() ([]Diagnostic, error) {
	n := int(C.s_diagnostic_count(r.lib.api, r.raw))
	out := make([]Diagnostic, 0, n)
	for i := 0; i < n; i++ {
		var d C.shapeml_diagnostic
		if err := r.lib.status(C.s_get_diagnostic(r.lib.api, r.raw, C.size_t(i), &d)); err != nil {
			return nil, err
		}
		g := Diagnostic{Code: C.GoString(d.code), Message: C.GoString(d.message), Expected: C.GoString(d.expected),
			Actual: C.GoString(d.actual), Severity: int32(d.severity), Line: uint32(d.line), Column: uint32(d.column),
			Counterexample: map[string]int64{}}
		for k := 0; k < int(d.counterexample_count); k++ {
			var name *C.char
			var value C.int64_t
			if err := r.lib.status(C.s_get_counterexample(r.lib.api, r.raw, C.size_t(i), C.size_t(k), &name, &value)); err != nil {
				return nil, err
			}
			g.Counterexample[C.GoString(name)] = int64(value)
		}
		out = append(out, g)
	}
	runtime.KeepAlive(r)
	return out, nil
}

// Render gives every diagnostic as text with carets, or as a JSON array.
func (r *CheckResult) Render(json bool) (string, error) {
	var s *C.char
	format := C.int32_t(0)
	if json {
		format = 1
	}
	if err := r.lib.status(C.s_render(r.lib.api, r.raw, format, &s)); err != nil {
		return "", err
	}
	defer runtime.KeepAlive(r)
	return C.GoString(s), nil
}

// Module is a compiled (JIT) or loaded (AOT) module.
type Module struct {
	lib *Library
	raw *C.shapeml_module
}

func (l *Library) module(raw *C.shapeml_module) *Module {
	m := &Module{l, raw}
	runtime.SetFinalizer(m, (*Module).Close)
	return m
}

// Compile checks and JIT-compiles a program (CheckFailed with the rendered
// diagnostics when it has errors).
func (l *Library) Compile(name, source string) (*Module, error) {
	if err := l.needCompiler("Compile"); err != nil {
		return nil, err
	}
	cname, csrc := C.CString(name), C.CString(source)
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(csrc))
	var raw *C.shapeml_module
	if err := l.status(C.s_module_compile(l.api, l.context, cname, csrc, C.size_t(len(source)), &raw)); err != nil {
		return nil, err
	}
	return l.module(raw), nil
}

// Build compiles ahead of time into a shared object for the default target
// (TargetNative); bindings as `shapemlc build --bind`, e.g.
// "mlp:T=f32,Dv=host,B=2,S=8,D=16,F=32".
func (l *Library) Build(name, source, bindings, out string) error {
	return l.BuildFor(name, source, bindings, out, TargetNative)
}

// BuildFor is Build for target.
func (l *Library) BuildFor(name, source, bindings, out string, target Target) error {
	if err := l.needCompiler("Build"); err != nil {
		return err
	}
	cname, csrc, cb, cout := C.CString(name), C.CString(source), C.CString(bindings), C.CString(out)
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cb))
	defer C.free(unsafe.Pointer(cout))
	return l.status(C.s_module_build(l.api, l.context, cname, csrc, C.size_t(len(source)), cb, C.int32_t(target), cout))
}

// Load loads an ahead-of-time compiled module. Loading runs its code: load
// only trusted paths.
func (l *Library) Load(path string) (*Module, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var raw *C.shapeml_module
	if err := l.status(C.s_module_load(l.api, cpath, &raw)); err != nil {
		return nil, err
	}
	return l.module(raw), nil
}

// Close releases the module; its entries must not be used afterwards.
func (m *Module) Close() {
	if m.raw != nil {
		C.s_module_release(m.lib.api, m.raw)
		m.raw = nil
	}
}

// EntryNames lists the module's entry points.
func (m *Module) EntryNames() []string {
	n := int(C.s_entry_count(m.lib.api, m.raw))
	names := make([]string, n)
	for i := range names {
		names[i] = C.GoString(C.s_entry_name_at(m.lib.api, m.raw, C.size_t(i)))
	}
	runtime.KeepAlive(m)
	return names
}

// Entry is an entry point; it keeps its module alive.
type Entry struct {
	module *Module
	raw    *C.shapeml_entry
}

// Entry resolves an entry once (NotFound lists the entries).
func (m *Module) Entry(name string) (*Entry, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var raw *C.shapeml_entry
	if err := m.lib.status(C.s_get_entry(m.lib.api, m.raw, cname, &raw)); err != nil {
		return nil, err
	}
	return &Entry{m, raw}, nil
}

// TensorInfo describes a parameter or result.
type TensorInfo struct {
	Name       string
	DType      DType
	DeviceType int32
	Rank       int
	Type       string // e.g. "(tensor f32 (B S D) host)"
}

func (e *Entry) infos(kind C.int32_t, n int) ([]TensorInfo, error) {
	out := make([]TensorInfo, n)
	for i := range out {
		var t C.shapeml_tensor_info
		if err := e.module.lib.status(C.s_tensor_info(e.module.lib.api, e.raw, kind, C.size_t(i), &t)); err != nil {
			return nil, err
		}
		out[i] = TensorInfo{C.GoString(t.name), DType(t.dtype), int32(t.device_type), int(t.rank), C.GoString(t._type)}
	}
	runtime.KeepAlive(e.module)
	return out, nil
}

// Params describes the entry's parameters.
func (e *Entry) Params() ([]TensorInfo, error) {
	return e.infos(0, int(C.s_param_count(e.module.lib.api, e.raw)))
}

// Results describes the entry's results.
func (e *Entry) Results() ([]TensorInfo, error) {
	return e.infos(1, int(C.s_result_count(e.module.lib.api, e.raw)))
}

// ShapeVariables lists the entry's shape variables in declaration order.
func (e *Entry) ShapeVariables() []string {
	n := int(C.s_var_count(e.module.lib.api, e.raw))
	out := make([]string, n)
	for i := range out {
		out[i] = C.GoString(C.s_var(e.module.lib.api, e.raw, C.size_t(i)))
	}
	runtime.KeepAlive(e.module)
	return out
}

// GivenShapeVariables lists the shape variables every call gives in
// CallOptions.Dims (declared `(given ...)` in the source): no input shape
// determines them. The others are inferred from the inputs.
func (e *Entry) GivenShapeVariables() []string {
	var out []string
	for i, v := range e.ShapeVariables() {
		if C.s_var_is_given(e.module.lib.api, e.raw, C.size_t(i)) != 0 {
			out = append(out, v)
		}
	}
	runtime.KeepAlive(e.module)
	return out
}

// TypeVariable is a dtype or device variable of a generic entry (spec §3.5;
// the C ABI's unstable shapeml_unstable_entry_get_type_variable).
type TypeVariable struct {
	Name     string
	IsDevice bool
	DTypes   []DType // what a dtype variable ranges over, in dtype order; nil for a device variable
}

// TypeVariables lists a generic entry's dtype variables in declaration
// order, then its device variables; none for an entry that is not generic
// (or a library without the unstable tier). A call binds them from its
// inputs.
func (e *Entry) TypeVariables() ([]TypeVariable, error) {
	l := e.module.lib
	n := int(C.s_tv_count(l.handle, e.raw))
	out := make([]TypeVariable, n)
	for i := range out {
		var v C.shapeml_unstable_type_variable
		if err := l.status(C.s_tv_get(l.handle, e.raw, C.size_t(i), &v)); err != nil {
			return nil, err
		}
		out[i] = TypeVariable{Name: C.GoString(v.name), IsDevice: v.is_device != 0}
		for d := 0; d < 32; d++ {
			if v.dtypes&(1<<uint(d)) != 0 {
				out[i].DTypes = append(out[i].DTypes, DType(d))
			}
		}
	}
	runtime.KeepAlive(e.module)
	return out, nil
}

// DType is a shapeml_dtype.
type DType int32

const (
	F32  DType = 0
	F64  DType = 1
	BF16 DType = 2
	I32  DType = 3
	I64  DType = 4
	// DTypeVariable is a generic entry's dtype variable in its signature
	// (Params, Results), never a tensor's (SHAPEML_DTYPE_VARIABLE).
	DTypeVariable DType = 6
)

// Array is Go's side of a tensor: a flat slice ([]float32, []float64,
// []int32 or []int64) in row-major order and its shape.
type Array struct {
	Data  interface{}
	Shape []int64
}

func first[T any](d []T) unsafe.Pointer {
	if len(d) == 0 {
		return nil // an empty tensor: no data pointer
	}
	return unsafe.Pointer(&d[0])
}

func (a Array) raw() (DType, unsafe.Pointer, int, error) {
	switch d := a.Data.(type) {
	case []float32:
		return F32, first(d), len(d) * 4, nil
	case []float64:
		return F64, first(d), len(d) * 8, nil
	case []int32:
		return I32, first(d), len(d) * 4, nil
	case []int64:
		return I64, first(d), len(d) * 8, nil
	}
	return 0, nil, 0, &Error{InvalidArgument, fmt.Sprintf("unsupported array type %T", a.Data)}
}

// CallOptions are the options of one call (shapeml_call_options).
type CallOptions struct {
	// NumThreads (host entries): the threads this call's parallel loops may
	// use, the calling one included; 0 the default (SHAPEML_NUM_THREADS, else
	// the CPUs the process may run on). Results are the same bits for every
	// count.
	NumThreads int32
	// Dims: the values of the entry's given shape variables
	// (GivenShapeVariables), e.g. {"H": 4}; the others are inferred from the
	// inputs. Exactly the given ones, each >= 1.
	Dims map[string]int64
	// Memory: where the results and the call's temporaries come from (nil:
	// the module's resource), e.g. a Go MemoryResource (MemoryFrom).
	Memory *Memory
	// Outputs (CallTensors): tensors the results are written into, one per
	// result, of its dtype and exact shape; nil: new tensors.
	Outputs []*Tensor
	// Stream (device entries): the cudaStream_t the call is enqueued on; nil:
	// the module's default stream.
	Stream unsafe.Pointer
}

// Call runs the entry on Go arrays (copied in) and returns its results
// (copied out) as arrays.
func (e *Entry) Call(inputs ...Array) ([]Array, error) {
	return e.CallWith(CallOptions{}, inputs...)
}

// CallWith is Call with options (copies in and out; CallTensors avoids them).
func (e *Entry) CallWith(opts CallOptions, inputs ...Array) ([]Array, error) {
	l := e.module.lib
	if opts.Outputs != nil {
		return nil, &Error{InvalidArgument, "CallWith copies its results out: provided Outputs need CallTensors"}
	}
	tensors := make([]*Tensor, 0, len(inputs))
	defer func() {
		for _, t := range tensors {
			t.Close()
		}
	}()
	for _, a := range inputs {
		t, err := l.NewTensor(a, nil)
		if err != nil {
			return nil, err
		}
		tensors = append(tensors, t)
	}
	outs, err := e.CallTensors(opts, tensors...)
	if err != nil {
		return nil, err
	}
	results := make([]Array, len(outs))
	for i, t := range outs {
		results[i] = t.Array()
		t.Close()
	}
	return results, nil
}
